import {
  ConditionalCheckFailedException,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { TallyError } from '../domain/errors';
import { ledgerKey, usageKey } from '../domain/keys';
import type { LogObjectRef } from '../domain/log-object';
import type { Increment, IncrementOutcome, LedgerEntry, UsageStore } from '../domain/usage-store';
import { growingUpdate, historyState, rollingUpdate, type HistoryUpdateOptions } from './history-update';

export interface DynamoUsageStoreOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Keys kept per shard item; the default keeps an item under 1 KB. */
  readonly historyCap: number;
  /** Ledger items expire this many days after they are written. */
  readonly ledgerTtlDays: number;
  readonly clock?: () => Date;
  /**
   * When given, every write asks DynamoDB for its consumed capacity and reports it
   * here (for metrics, `tally plan` checks and benchmarks).
   */
  readonly onCapacity?: (operation: 'increment' | 'ledger', writeUnits: number) => void;
}

/** Shards known to be full are remembered so their next increment goes straight to the rolling form. */
const FULL_HINTS_LIMIT = 10_000;
/** Form switches allowed per increment; more means the item changes under us faster than we can write. */
const MAX_FORM_SWITCHES = 4;

/**
 * The UsageStore on DynamoDB: one conditional `UpdateItem` per increment (see
 * history-update.ts), one strongly consistent `GetItem` and one `PutItem` per object.
 */
export class DynamoUsageStore implements UsageStore {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;
  private readonly historyCap: number;
  private readonly ledgerTtlDays: number;
  private readonly clock: () => Date;
  private readonly fullShards = new Set<string>();
  private readonly onCapacity: DynamoUsageStoreOptions['onCapacity'];

  constructor(options: DynamoUsageStoreOptions) {
    this.client = options.client;
    this.tableName = options.tableName;
    this.historyCap = options.historyCap;
    this.ledgerTtlDays = options.ledgerTtlDays;
    this.clock = options.clock ?? (() => new Date());
    this.onCapacity = options.onCapacity;
  }

  private get capacityRequest(): { ReturnConsumedCapacity?: 'TOTAL' } {
    return this.onCapacity === undefined ? {} : { ReturnConsumedCapacity: 'TOTAL' };
  }

  async applyIncrement(increment: Increment): Promise<IncrementOutcome> {
    const shardId = `${increment.account}\u0000${increment.day}\u0000${increment.shard}`;
    const options: HistoryUpdateOptions = {
      tableName: this.tableName,
      cap: this.historyCap,
      now: this.clock().toISOString(),
    };
    let rolling = this.fullShards.has(shardId);
    for (let attempt = 0; attempt <= MAX_FORM_SWITCHES; attempt++) {
      const input = rolling ? rollingUpdate(increment, options) : growingUpdate(increment, options);
      try {
        const output = await this.client.send(new UpdateItemCommand({ ...input, ...this.capacityRequest }));
        this.onCapacity?.('increment', output.ConsumedCapacity?.CapacityUnits ?? 0);
        if (!rolling && (output.Attributes?.h?.L?.length ?? 0) >= this.historyCap) this.rememberShape(shardId, true);
        return 'applied';
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        const state = historyState(error.Item, increment.key, this.historyCap);
        if (state === 'duplicate') return 'duplicate';
        rolling = state === 'full';
        this.rememberShape(shardId, rolling);
      }
    }
    const key = usageKey({ accountId: increment.account, day: increment.day, shard: increment.shard });
    throw new TallyError(`increment on ${key.PK} ${key.SK} kept failing its condition; retry later`);
  }

  async findLedger(ref: LogObjectRef): Promise<LedgerEntry | undefined> {
    const key = ledgerKey(ref);
    const result = await this.client.send(
      new GetItemCommand({
        TableName: this.tableName,
        Key: { PK: { S: key.PK }, SK: { S: key.SK } },
        ConsistentRead: true,
      }),
    );
    return result.Item === undefined ? undefined : ledgerFromItem(result.Item, ref);
  }

  async writeLedger(entry: LedgerEntry): Promise<void> {
    const key = ledgerKey(entry.object);
    const expires = Math.floor(this.clock().getTime() / 1000) + this.ledgerTtlDays * 86_400;
    const output = await this.client.send(
      new PutItemCommand({
        ...this.capacityRequest,
        TableName: this.tableName,
        Item: {
          PK: { S: key.PK },
          SK: { S: key.SK },
          bucket: { S: entry.object.bucket },
          key: { S: entry.object.key },
          etag: { S: entry.object.etag },
          lines: {
            M: {
              read: { N: String(entry.lines.read) },
              counted: { N: String(entry.lines.counted) },
              unattributed: { N: String(entry.lines.unattributed) },
              malformed: { N: String(entry.lines.malformed) },
            },
          },
          increments: { N: String(entry.increments) },
          applied: { N: String(entry.applied) },
          duplicates: { N: String(entry.duplicates) },
          processedAt: { S: entry.processedAt },
          ttl: { N: String(expires) },
        },
      }),
    );
    this.onCapacity?.('ledger', output.ConsumedCapacity?.CapacityUnits ?? 0);
  }

  private rememberShape(shardId: string, full: boolean): void {
    if (!full) {
      this.fullShards.delete(shardId);
      return;
    }
    if (this.fullShards.size >= FULL_HINTS_LIMIT) this.fullShards.clear();
    this.fullShards.add(shardId);
  }
}

function numberOf(value: AttributeValue | undefined): number {
  return value?.N === undefined ? 0 : Number(value.N);
}

function ledgerFromItem(item: Record<string, AttributeValue>, ref: LogObjectRef): LedgerEntry {
  const lines = item.lines?.M ?? {};
  return {
    object: ref,
    lines: {
      read: numberOf(lines.read),
      counted: numberOf(lines.counted),
      unattributed: numberOf(lines.unattributed),
      malformed: numberOf(lines.malformed),
    },
    increments: numberOf(item.increments),
    applied: numberOf(item.applied),
    duplicates: numberOf(item.duplicates),
    processedAt: item.processedAt?.S ?? '',
  };
}
