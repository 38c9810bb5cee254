import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { UsagePresence, UsageReader } from '../app/ports';
import { isShardMetric, parseAccountSortKey } from '../domain/keys';
import type { UsageRecord } from '../domain/usage-records';
import { FIRST_DAY, LAST_DAY, queryDayRange } from './day-range-query';

/**
 * Reads usage shards and adjustments of one account and day range with a single
 * Query on the sort-key range (`DAY#from#` .. `DAY#to#~`), summing nothing itself:
 * callers never need to know the shard count.
 */
export class DynamoUsageReader implements UsageReader, UsagePresence {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;
  private readonly consistentRead: boolean;

  constructor({ client, tableName, consistentRead = false }: { client: DynamoDBClient; tableName: string; consistentRead?: boolean }) {
    this.client = client;
    this.tableName = tableName;
    this.consistentRead = consistentRead;
  }

  async read(accountId: string, from: string, to: string): Promise<{ records: UsageRecord[]; requests: number }> {
    const records: UsageRecord[] = [];
    let requests = 0;
    for await (const items of queryDayRange({ ...this.table(), accountId, from, to })) {
      requests++;
      for (const item of items) {
        const record = toRecord(item);
        if (record !== undefined) records.push(record);
      }
    }
    return { records, requests };
  }

  /**
   * True when any usage shard of the account exists. Pages through the account's day
   * range fetching keys only; adjustments (which carry a `delta`) are filtered out, so
   * usually the first page answers.
   */
  async hasMeasuredUsage(accountId: string): Promise<boolean> {
    const pages = queryDayRange({
      ...this.table(),
      accountId,
      from: FIRST_DAY,
      to: LAST_DAY,
      filter: { attribute: 'delta', present: false },
      projection: 'PK, SK',
    });
    for await (const items of pages) {
      if (items.some((item) => parseAccountSortKey(item.SK?.S ?? '')?.kind === 'usage')) return true;
    }
    return false;
  }

  private table() {
    return { client: this.client, tableName: this.tableName, consistentRead: this.consistentRead };
  }
}

function toRecord(item: Record<string, AttributeValue>): UsageRecord | undefined {
  const parsed = parseAccountSortKey(item.SK?.S ?? '');
  if (parsed === undefined) return undefined;
  if (parsed.kind === 'adjustment') {
    return {
      kind: 'adjustment',
      day: parsed.day,
      adjustmentId: parsed.adjustmentId,
      metric: item.metric?.S ?? '',
      delta: Number(item.delta?.N ?? 0),
      reason: item.reason?.S ?? '',
      createdAt: item.createdAt?.S ?? '',
    };
  }
  const metrics: Record<string, number> = {};
  for (const [name, value] of Object.entries(item)) {
    if (isShardMetric(name) && value.N !== undefined) metrics[name] = Number(value.N);
  }
  return {
    kind: 'usage',
    day: parsed.day,
    shard: parsed.shard,
    metrics,
    ...(item.updatedAt?.S === undefined ? {} : { updatedAt: item.updatedAt.S }),
  };
}
