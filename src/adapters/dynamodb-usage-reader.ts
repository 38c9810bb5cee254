import { QueryCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { dayRangeKeys, parseAccountSortKey } from '../domain/keys';
import type { UsagePresence, UsageReader } from '../app/ports';
import type { UsageRecord } from '../domain/usage-records';

/** Bounds of every day an account can hold, for "any day" ranges. */
const FIRST_DAY = '0000-01-01';
const LAST_DAY = '9999-12-31';

/** Attributes of a usage shard that are not metrics. */
const NOT_METRICS = new Set(['PK', 'SK', 'h', 'updatedAt', 'ttl']);

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
    const range = dayRangeKeys(accountId, from, to);
    const records: UsageRecord[] = [];
    let requests = 0;
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'PK = :pk AND SK BETWEEN :from AND :to',
          ExpressionAttributeValues: { ':pk': { S: range.PK }, ':from': { S: range.from }, ':to': { S: range.to } },
          ConsistentRead: this.consistentRead,
          ...(start === undefined ? {} : { ExclusiveStartKey: start }),
        }),
      );
      requests++;
      for (const item of page.Items ?? []) {
        const record = toRecord(item);
        if (record !== undefined) records.push(record);
      }
      start = page.LastEvaluatedKey;
    } while (start !== undefined);
    return { records, requests };
  }

  /**
   * True when any usage shard of the account exists. Pages through the account's day
   * range fetching keys only; adjustments (which carry a `delta`) are filtered out, so
   * usually the first page answers.
   */
  async hasMeasuredUsage(accountId: string): Promise<boolean> {
    const range = dayRangeKeys(accountId, FIRST_DAY, LAST_DAY);
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'PK = :pk AND SK BETWEEN :from AND :to',
          FilterExpression: 'attribute_not_exists(#delta)',
          ProjectionExpression: 'PK, SK',
          ExpressionAttributeNames: { '#delta': 'delta' },
          ExpressionAttributeValues: { ':pk': { S: range.PK }, ':from': { S: range.from }, ':to': { S: range.to } },
          ConsistentRead: this.consistentRead,
          ...(start === undefined ? {} : { ExclusiveStartKey: start }),
        }),
      );
      if ((page.Items ?? []).some((item) => parseAccountSortKey(item.SK?.S ?? '')?.kind === 'usage')) return true;
      start = page.LastEvaluatedKey;
    } while (start !== undefined);
    return false;
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
    if (!NOT_METRICS.has(name) && value.N !== undefined) metrics[name] = Number(value.N);
  }
  return {
    kind: 'usage',
    day: parsed.day,
    shard: parsed.shard,
    metrics,
    ...(item.updatedAt?.S === undefined ? {} : { updatedAt: item.updatedAt.S }),
  };
}
