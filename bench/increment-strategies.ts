/**
 * Four ways to apply one usage increment to DynamoDB "exactly once", measured side by
 * side on the same workload:
 *
 * ```
 * tally              1 conditional UpdateItem: ADD + rolling key history on the counter item
 * powertools         makeIdempotent(plain ADD): PutItem INPROGRESS, ADD, UpdateItem COMPLETED
 * transaction        TransactWriteItems: Put marker (attribute_not_exists) + ADD
 * read-modify-write  GetItem, then UpdateItem SET with a version condition (no idempotency)
 * ```
 * All four move the same counter item (`usageKey` of the increment's shard), so the
 * counts they leave can be read back and compared one to one.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  GetItemCommand,
  TransactWriteItemsCommand,
  TransactionCanceledException,
  UpdateItemCommand,
  ConditionalCheckFailedException,
  waitUntilTableExists,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { Context } from 'aws-lambda';
import { DynamoUsageReader } from '../src/adapters/dynamodb/dynamodb-usage-reader';
import { DynamoUsageStore } from '../src/adapters/dynamodb/dynamodb-usage-store';
import { keyHex } from '../src/domain/counters/idempotency-key';
import type { Increment, IncrementOutcome } from '../src/domain/counters/usage-store';
import { BENCH_METRICS, usageId } from './increment-workload';
import { counterKey, plainAddUpdate } from './plain-add';

export const STRATEGIES = ['tally', 'powertools', 'transaction', 'read-modify-write'] as const;
export type StrategyName = (typeof STRATEGIES)[number];

export const STRATEGY_LABELS: Record<StrategyName, string> = {
  tally: 'Tally rolling history',
  powertools: 'Powertools idempotency + ADD',
  transaction: 'TransactWriteItems marker + ADD',
  'read-modify-write': 'read-modify-write + version',
};

export interface IncrementStrategy {
  readonly name: StrategyName;
  apply(increment: Increment): Promise<IncrementOutcome>;
}

export interface StrategyTables {
  /** The usage table: counter items (and the transaction markers). */
  readonly usage: string;
  /** Powertools' own table, partition key `id`. */
  readonly idempotency: string;
}

const MAX_CONFLICT_RETRIES = 50;

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Creates Powertools' idempotency table (partition key `id`, as its docs ask) unless it exists. */
export async function ensureIdempotencyTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
    return;
  } catch (error) {
    if ((error as Error).name !== 'ResourceNotFoundException') throw error;
  }
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  await waitUntilTableExists({ client, maxWaitTime: 30 }, { TableName: tableName });
}

/** Tally: `DynamoUsageStore.applyIncrement`, a fresh store (no "shard is full" hints yet). */
export function tallyStrategy(client: DynamoDBClient, tables: StrategyTables, historyCap = 48): IncrementStrategy {
  const store = new DynamoUsageStore({ client, tableName: tables.usage, historyCap, ledgerTtlDays: 400 });
  return { name: 'tally', apply: (increment) => store.applyIncrement(increment) };
}

interface PowertoolsPayload {
  readonly idempotencyKey: string;
  readonly increment: Increment;
  /** Set by the wrapped function: false means Powertools answered from its record. */
  readonly call: { ran: boolean };
}

/**
 * Powertools for AWS Lambda (TypeScript) idempotency around a plain ADD, keyed by the
 * same idempotency key Tally uses. A duplicate is answered from the stored record.
 */
export function powertoolsStrategy(client: DynamoDBClient, tables: StrategyTables): IncrementStrategy {
  const persistenceStore = new DynamoDBPersistenceLayer({ tableName: tables.idempotency, awsSdkV3Client: client });
  const config = new IdempotencyConfig({ eventKeyJmesPath: 'idempotencyKey' });
  // As in a Lambda handler: the record then carries its in-progress expiry.
  config.registerLambdaContext(lambdaContext());
  const addOnce = makeIdempotent(
    async (payload: PowertoolsPayload): Promise<IncrementOutcome> => {
      payload.call.ran = true;
      await client.send(new UpdateItemCommand(plainAddUpdate(tables.usage, payload.increment)));
      return 'applied';
    },
    { persistenceStore, config },
  );
  return {
    name: 'powertools',
    async apply(increment) {
      for (let attempt = 0; ; attempt++) {
        const call = { ran: false };
        try {
          await addOnce({ idempotencyKey: keyHex(increment.key), increment, call });
          return call.ran ? 'applied' : 'duplicate';
        } catch (error) {
          // A redelivery racing its first delivery: Powertools refuses it; SQS would retry later.
          if ((error as Error).name !== 'IdempotencyAlreadyInProgressError' || attempt >= MAX_CONFLICT_RETRIES) throw error;
          await pause(20);
        }
      }
    },
  };
}

/** The Lambda context of an ingest function with a minute left. */
function lambdaContext(): Context {
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: 'tally-ingest',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:tally-ingest',
    memoryLimitInMB: '1024',
    awsRequestId: 'bench',
    logGroupName: '/aws/lambda/tally-ingest',
    logStreamName: 'bench',
    getRemainingTimeInMillis: () => 60_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** A marker item per idempotency key next to the counters, written in the same transaction as the ADD. */
export function transactionStrategy(client: DynamoDBClient, tables: StrategyTables): IncrementStrategy {
  return {
    name: 'transaction',
    async apply(increment) {
      const add = plainAddUpdate(tables.usage, increment);
      for (let attempt = 0; ; attempt++) {
        try {
          await client.send(
            new TransactWriteItemsCommand({
              TransactItems: [
                {
                  Put: {
                    TableName: tables.usage,
                    Item: {
                      PK: { S: `IDEMPOTENCY#${keyHex(increment.key)}` },
                      SK: { S: '#MARK' },
                      ttl: { N: String(Math.floor(Date.now() / 1000) + 400 * 86_400) },
                    },
                    ConditionExpression: 'attribute_not_exists(PK)',
                  },
                },
                {
                  Update: {
                    TableName: add.TableName,
                    Key: add.Key,
                    UpdateExpression: add.UpdateExpression,
                    ExpressionAttributeNames: add.ExpressionAttributeNames,
                    ExpressionAttributeValues: add.ExpressionAttributeValues,
                  },
                },
              ],
            }),
          );
          return 'applied';
        } catch (error) {
          if (!(error instanceof TransactionCanceledException)) throw error;
          const codes = (error.CancellationReasons ?? []).map((reason) => reason.Code);
          if (codes[0] === 'ConditionalCheckFailed') return 'duplicate';
          if (!codes.includes('TransactionConflict') || attempt >= MAX_CONFLICT_RETRIES) throw error;
          await pause(5 + Math.random() * 20);
        }
      }
    },
  };
}

/**
 * Read the counter item, add in memory, write it back if nobody wrote in between
 * (optimistic version check), else read again. Safe against lost updates, blind to
 * duplicates: a redelivery is counted again.
 */
export function readModifyWriteStrategy(client: DynamoDBClient, tables: StrategyTables): IncrementStrategy {
  return {
    name: 'read-modify-write',
    async apply(increment) {
      const Key = counterKey(increment);
      for (let attempt = 0; ; attempt++) {
        const { Item } = await client.send(new GetItemCommand({ TableName: tables.usage, Key, ConsistentRead: true }));
        const version = Number(Item?.version?.N ?? 0);
        const names: Record<string, string> = { '#v': 'version' };
        const values: Record<string, AttributeValue> = { ':next': { N: String(version + 1) } };
        const sets = Object.entries(increment.metrics).map(([metric, amount], i) => {
          names[`#m${i}`] = metric;
          values[`:m${i}`] = { N: String(Number(Item?.[metric]?.N ?? 0) + amount) };
          return `#m${i} = :m${i}`;
        });
        if (version > 0) values[':v'] = { N: String(version) };
        try {
          await client.send(
            new UpdateItemCommand({
              TableName: tables.usage,
              Key,
              UpdateExpression: `SET ${sets.join(', ')}, #v = :next`,
              ConditionExpression: version > 0 ? '#v = :v' : 'attribute_not_exists(#v)',
              ExpressionAttributeNames: names,
              ExpressionAttributeValues: values,
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            }),
          );
          return 'applied';
        } catch (error) {
          if (!(error instanceof ConditionalCheckFailedException) || attempt >= MAX_CONFLICT_RETRIES) throw error;
        }
      }
    },
  };
}

export function createStrategy(name: StrategyName, client: DynamoDBClient, tables: StrategyTables): IncrementStrategy {
  switch (name) {
    case 'tally':
      return tallyStrategy(client, tables);
    case 'powertools':
      return powertoolsStrategy(client, tables);
    case 'transaction':
      return transactionStrategy(client, tables);
    case 'read-modify-write':
      return readModifyWriteStrategy(client, tables);
  }
}

/**
 * The counters of `accounts` on `day` as the usage reader sees them (every shard
 * summed), by `account|day`, for {@link countError}. Strongly consistent.
 */
export async function readCounters(
  client: DynamoDBClient,
  tableName: string,
  accounts: readonly string[],
  day: string,
): Promise<Map<string, Record<string, number>>> {
  const reader = new DynamoUsageReader({ client, tableName, consistentRead: true });
  const counters = new Map<string, Record<string, number>>();
  for (const account of accounts) {
    const { records } = await reader.read(account, day, day);
    const total: Record<string, number> = {};
    for (const record of records) {
      if (record.kind !== 'usage') continue;
      for (const metric of BENCH_METRICS) total[metric] = (total[metric] ?? 0) + (record.metrics[metric] ?? 0);
    }
    counters.set(usageId(account, day), total);
  }
  return counters;
}
