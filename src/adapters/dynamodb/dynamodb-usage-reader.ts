import { QueryCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { ReadOptions, UsagePresence, UsageReader } from '../../app/ports';
import { closedDayRange, isShardMetric, parseAccountSortKey, parseClosedDaySortKey } from '../../domain/counters/keys';
import { hourSumsOfAttributes, type HourSums } from '../../domain/hours';
import type { UsageRecord } from '../../domain/reading/usage-records';
import { FIRST_DAY, LAST_DAY, queryDayRange } from './day-range-query';
import { backfilledHoursOf } from './dynamodb-hours-backfill';

/**
 * Reads usage shards, adjustments and recorded revisions of one account and day range
 * with a single Query on the sort-key range (`DAY#from#` .. `DAY#to#~`), summing
 * nothing itself (callers never need to know the shard count), and the close records
 * of the range with a second Query on the `CLOSED` partition (one item per day).
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

  async read(accountId: string, from: string, to: string, options: ReadOptions = {}): Promise<{ records: UsageRecord[]; requests: number }> {
    const records: UsageRecord[] = [];
    let requests = 0;
    for await (const items of queryDayRange({ ...this.table(), accountId, from, to })) {
      requests++;
      for (const item of items) {
        const record = toRecord(item);
        if (record !== undefined) records.push(record);
      }
    }
    if (options.closedDays === false) return { records, requests };
    const closed = await this.closedDays(from, to);
    return { records: [...records, ...closed.records], requests: requests + closed.requests };
  }

  /** The closed days of the range (their snapshot complete), from the close records. */
  private async closedDays(from: string, to: string): Promise<{ records: UsageRecord[]; requests: number }> {
    const range = closedDayRange(from, to);
    const records: UsageRecord[] = [];
    let requests = 0;
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'PK = :pk AND SK BETWEEN :from AND :to',
          ExpressionAttributeValues: { ':pk': { S: range.PK }, ':from': { S: range.from }, ':to': { S: range.to } },
          ProjectionExpression: 'SK, closedAt, revision',
          ConsistentRead: this.consistentRead,
          ...(start === undefined ? {} : { ExclusiveStartKey: start }),
        }),
      );
      requests++;
      for (const item of page.Items ?? []) {
        const day = parseClosedDaySortKey(item.SK?.S ?? '');
        if (day !== undefined && Number(item.revision?.N ?? 0) >= 1) records.push({ kind: 'closed-day', day, closedAt: item.closedAt?.S ?? '' });
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
  if (parsed.kind === 'revision') {
    return {
      kind: 'revision',
      day: parsed.day,
      revision: parsed.revision,
      metrics: figuresOf(item.m),
      ...(item.createdAt?.S === undefined ? {} : { createdAt: item.createdAt.S }),
    };
  }
  if (parsed.kind === 'hours') {
    const { hours, atShards } = backfilledHoursOf(item);
    return { kind: 'hours', day: parsed.day, hours, ...(atShards === undefined ? {} : { atShards }) };
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
    hours: hoursOf(item),
    ...(item.updatedAt?.S === undefined ? {} : { updatedAt: item.updatedAt.S }),
  };
}

/**
 * The sums by UTC hour of a usage shard or a backfilled-hours item: its hour
 * attributes (`05R`, `05B`, `06My6j1` on shards, whose codes the shard's day totals decode,
 * `06authorization_requests` on shards written before the codes and backfilled hours; hours.ts).
 */
export function hoursOf(item: Record<string, AttributeValue>): HourSums {
  const numbers = Object.entries(item).flatMap(([name, value]) => (value.N === undefined ? [] : [[name, Number(value.N)] as const]));
  return hourSumsOfAttributes(Object.fromEntries(numbers));
}

/** The metric map (`m`) of a revision item. */
export function figuresOf(value: AttributeValue | undefined): Record<string, number> {
  return Object.fromEntries(Object.entries(value?.M ?? {}).flatMap(([name, entry]) => (entry.N === undefined ? [] : [[name, Number(entry.N)]])));
}
