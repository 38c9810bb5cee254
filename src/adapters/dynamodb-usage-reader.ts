import { QueryCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { dayRangeKeys, parseAccountSortKey } from '../domain/keys';
import type { UsageReader, UsageRecord } from '../domain/usage-records';

/** Attributes of a usage shard that are not metrics. */
const NOT_METRICS = new Set(['PK', 'SK', 'h', 'updatedAt', 'ttl']);

/**
 * Reads usage shards and adjustments of one account and day range with a single
 * Query on the sort-key range (`DAY#from#` .. `DAY#to#~`), summing nothing itself:
 * callers never need to know the shard count.
 */
export class DynamoUsageReader implements UsageReader {
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
