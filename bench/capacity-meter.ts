/**
 * Counts what a DynamoDB client sends and what DynamoDB says it cost, from SDK
 * middleware on a real client: every request is asked for its consumed capacity
 * (`ReturnConsumedCapacity: TOTAL`) and the answer is summed per operation.
 *
 * DynamoDB reports no capacity on a write whose condition failed, yet bills it (the
 * larger of the existing and the new item, at least 1 WCU per started KB). Those
 * writes are counted apart, with the WCU DynamoDB would bill for them computed from
 * the item returned with the failure (`ReturnValuesOnConditionCheckFailure: ALL_OLD`).
 */
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';

const WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'TransactWriteItemsCommand', 'BatchWriteItemCommand']);
const READS = new Set(['GetItemCommand', 'QueryCommand', 'ScanCommand', 'TransactGetItemsCommand', 'BatchGetItemCommand']);

export interface CapacityTotals {
  /** Requests sent, by operation (`UpdateItem`, `TransactWriteItems`, ...). */
  readonly requests: Record<string, number>;
  /** WCU DynamoDB reported (successful writes). */
  writeUnits: number;
  /** RCU DynamoDB reported. */
  readUnits: number;
  /** Writes rejected by their condition (single-item) or cancelled (transactions). */
  failedWrites: number;
  /** WCU DynamoDB bills for the failed single-item conditional writes (computed). */
  failedWriteUnits: number;
}

export function emptyTotals(): CapacityTotals {
  return { requests: {}, writeUnits: 0, readUnits: 0, failedWrites: 0, failedWriteUnits: 0 };
}

export function totalRequests(totals: CapacityTotals): number {
  return Object.values(totals.requests).reduce((sum, n) => sum + n, 0);
}

/** Bytes DynamoDB counts for an attribute value (its item size rules). */
export function attributeValueBytes(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S);
  if (value.N !== undefined) {
    const digits = value.N.replace(/^-/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
    return Math.ceil(Math.max(1, digits.length) / 2) + 1;
  }
  if (value.B !== undefined) return value.B.length;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.L !== undefined) return 3 + value.L.reduce((sum, item) => sum + 1 + attributeValueBytes(item), 0);
  if (value.M !== undefined) {
    return 3 + Object.entries(value.M).reduce((sum, [name, item]) => sum + 1 + Buffer.byteLength(name) + attributeValueBytes(item), 0);
  }
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + Buffer.byteLength(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, n) => sum + attributeValueBytes({ N: n }), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, b) => sum + b.length, 0);
  return 0;
}

/** Bytes of a whole item: attribute names plus values. */
export function itemBytes(item: Record<string, AttributeValue>): number {
  return Object.entries(item).reduce((sum, [name, value]) => sum + Buffer.byteLength(name) + attributeValueBytes(value), 0);
}

/** WCU one write of an item of `bytes` costs: 1 per started KB, at least 1. */
export function writeUnitsFor(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / 1024));
}

interface CapacityLike {
  CapacityUnits?: number;
  ReadCapacityUnits?: number;
  WriteCapacityUnits?: number;
}

function unitsOf(consumed: CapacityLike | CapacityLike[] | undefined): number {
  if (consumed === undefined) return 0;
  const list = Array.isArray(consumed) ? consumed : [consumed];
  return list.reduce((sum, c) => sum + (c.CapacityUnits ?? (c.ReadCapacityUnits ?? 0) + (c.WriteCapacityUnits ?? 0)), 0);
}

/**
 * Adds the meter to `client`. `totals` can be swapped between runs with `reset`,
 * so one client serves several measured runs.
 */
let meters = 0;

export function meterCapacity(client: DynamoDBClient): { totals: () => CapacityTotals; reset: () => CapacityTotals } {
  let totals = emptyTotals();
  meters++;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? 'unknown';
      const input = args.input as Record<string, unknown>;
      if (WRITES.has(command) || READS.has(command)) input.ReturnConsumedCapacity = 'TOTAL';
      const operation = command.replace(/Command$/, '');
      totals.requests[operation] = (totals.requests[operation] ?? 0) + 1;
      try {
        const result = await next(args);
        const units = unitsOf((result.output as { ConsumedCapacity?: CapacityLike | CapacityLike[] }).ConsumedCapacity);
        if (WRITES.has(command)) totals.writeUnits += units;
        else totals.readUnits += units;
        return result;
      } catch (error) {
        const name = (error as Error).name;
        if (name === 'ConditionalCheckFailedException') {
          totals.failedWrites++;
          const old = (error as { Item?: Record<string, AttributeValue> }).Item;
          totals.failedWriteUnits += writeUnitsFor(old === undefined ? 0 : itemBytes(old));
        } else if (name === 'TransactionCanceledException') {
          // What a cancelled transaction bills is not documented: counted as a failed
          // write, with 0 WCU, so the transactional way is never made to look worse.
          totals.failedWrites++;
        }
        throw error;
      }
    },
    { step: 'initialize', name: `tallyBenchCapacityMeter${meters}` },
  );
  return {
    totals: () => totals,
    reset: () => {
      const previous = totals;
      totals = emptyTotals();
      return previous;
    },
  };
}
