/**
 * The non-idempotent baseline: a counter moved by a bare `ADD`, as a pipeline without
 * any duplicate protection would do it. Used inside the Powertools and transaction
 * strategies and, as a whole `UsageStore`, as the end-to-end baseline.
 */
import { UpdateItemCommand, type AttributeValue, type DynamoDBClient, type UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { usageKey } from '../src/domain/counters/keys';
import type { LogObjectRef } from '../src/domain/counters/log-object';
import type { AttemptRecord, Increment, IncrementOutcome, LedgerEntry, ObjectState, UsageStore } from '../src/domain/counters/usage-store';

/** Key of the counter item an increment moves: the same shard item Tally writes. */
export function counterKey(increment: Pick<Increment, 'account' | 'day' | 'shard'>): Record<string, AttributeValue> {
  const key = usageKey({ accountId: increment.account, day: increment.day, shard: increment.shard });
  return { PK: { S: key.PK }, SK: { S: key.SK } };
}

/** `ADD requests :m0, bytes :m1, ...` on the counter item, no condition. */
export function plainAddUpdate(tableName: string, increment: Pick<Increment, 'account' | 'day' | 'shard' | 'metrics'>): UpdateItemCommandInput {
  const names: Record<string, string> = {};
  const values: Record<string, AttributeValue> = {};
  const parts = Object.entries(increment.metrics).map(([metric, amount], i) => {
    names[`#m${i}`] = metric;
    values[`:m${i}`] = { N: String(amount) };
    return `#m${i} :m${i}`;
  });
  return {
    TableName: tableName,
    Key: counterKey(increment),
    UpdateExpression: `ADD ${parts.join(', ')}`,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

/**
 * A `UsageStore` that only adds: no rolling history and, unless `ledger` is given, no
 * ledger read or write either. Without a ledger it is what the ingest pipeline would
 * cost if it did not care about duplicates; with Tally's ledger it isolates what the
 * rolling history itself costs.
 */
export class PlainAddStore implements UsageStore {
  constructor(
    private readonly options: {
      client: DynamoDBClient;
      tableName: string;
      ledger?: Pick<UsageStore, 'findLedger' | 'writeLedger' | 'findObject' | 'recordAttempt' | 'recordContributions'>;
    },
  ) {}

  async applyIncrement(increment: Increment): Promise<IncrementOutcome> {
    await this.options.client.send(new UpdateItemCommand(plainAddUpdate(this.options.tableName, increment)));
    return 'applied';
  }

  async findLedger(ref: LogObjectRef): Promise<LedgerEntry | undefined> {
    return this.options.ledger?.findLedger(ref);
  }

  async findObject(ref: LogObjectRef): Promise<ObjectState> {
    return (await this.options.ledger?.findObject(ref)) ?? { attempts: [] };
  }

  async recordAttempt(ref: LogObjectRef, attempt: AttemptRecord): Promise<void> {
    await this.options.ledger?.recordAttempt(ref, attempt);
  }

  async writeLedger(entry: LedgerEntry): Promise<void> {
    await this.options.ledger?.writeLedger(entry);
  }

  async recordContributions(entry: LedgerEntry): Promise<void> {
    await this.options.ledger?.recordContributions(entry);
  }
}
