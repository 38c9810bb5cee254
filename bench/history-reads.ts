/**
 * Item 4: what the read API's Query costs for 30 and 366 days of one account, at the
 * default 4 shards a day, each shard a realistic full item (48 history keys, three
 * counters, a 64-character account id: the largest item the defaults allow).
 */
import { randomBytes } from 'node:crypto';
import { BatchWriteItemCommand, type AttributeValue, type DynamoDBClient, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { DynamoUsageReader } from '../src/adapters/dynamodb/dynamodb-usage-reader';
import { addDays } from '../src/domain/days';
import { usageKey } from '../src/domain/counters/keys';
import { mapWithConcurrency } from '../src/app/concurrency';
import { itemBytes, meterCapacity } from './capacity-meter';
import { alternate, median, type Comparison } from './stats';

export const DEFAULT_SHARDS = 4;
export const DEFAULT_CAP = 48;
const LAST_DAY = '2026-11-20';

export interface ReadSample {
  readonly ms: number;
  readonly requests: number;
  readonly readUnits: number;
  readonly records: number;
}

export interface HistoryReadResult {
  readonly rounds: number;
  readonly itemBytes: number;
  readonly comparison: Comparison<ReadSample>;
  readonly days30: { readonly requests: number; readonly ms: number; readonly readUnits: number; readonly records: number };
  readonly days366: { readonly requests: number; readonly ms: number; readonly readUnits: number; readonly records: number };
}

/** A full usage shard as ingestion leaves it: `cap` keys of 12 bytes, three counters, `updatedAt`. */
export function fullShardItem(
  account: string,
  day: string,
  shard: number,
  cap: number,
  requests = Math.floor(400_000 + Math.random() * 200_000),
  /** Also the minute each key was added (`t`, all at the day's start) and the drop count (`x`), as items written today carry them. */
  withTimes = false,
): Record<string, AttributeValue> {
  const key = usageKey({ accountId: account, day, shard });
  return {
    PK: { S: key.PK },
    SK: { S: key.SK },
    h: { L: Array.from({ length: cap }, () => ({ B: new Uint8Array(randomBytes(12)) })) },
    ...(withTimes ? { t: { L: Array.from({ length: cap }, () => ({ N: '0' })) }, x: { N: String(requests) } } : {}),
    requests: { N: String(requests) },
    bytes: { N: String(requests * 3_187) },
    authorization_requests: { N: String(Math.floor(requests / 7)) },
    updatedAt: { S: `${day}T23:59:59.123Z` },
  };
}

async function writeAll(client: DynamoDBClient, tableName: string, items: Record<string, AttributeValue>[]): Promise<void> {
  const batches: Record<string, AttributeValue>[][] = [];
  for (let i = 0; i < items.length; i += 25) batches.push(items.slice(i, i + 25));
  await mapWithConcurrency(batches, 4, async (batch) => {
    let requests: WriteRequest[] = batch.map((item) => ({ PutRequest: { Item: item } }));
    while (requests.length > 0) {
      const result = await client.send(new BatchWriteItemCommand({ RequestItems: { [tableName]: requests } }));
      requests = result.UnprocessedItems?.[tableName] ?? [];
    }
  });
}

export async function runHistoryReads(
  client: DynamoDBClient,
  tableName: string,
  rounds: number,
  progress: (line: string) => void,
): Promise<HistoryReadResult> {
  const account = `bench-history-${Date.now().toString(36)}-`.padEnd(64, 'x');
  const items: Record<string, AttributeValue>[] = [];
  for (let back = 365; back >= 0; back--) {
    for (let shard = 0; shard < DEFAULT_SHARDS; shard++) items.push(fullShardItem(account, addDays(LAST_DAY, -back), shard, DEFAULT_CAP));
  }
  await writeAll(client, tableName, items);
  progress(`history reads: wrote ${items.length} full shard items (${itemBytes(items[0]!)} bytes each) for 366 days`);

  const meter = meterCapacity(client);
  const reader = new DynamoUsageReader({ client, tableName });
  const read = async (days: number): Promise<ReadSample> => {
    meter.reset();
    const started = process.hrtime.bigint();
    const { records, requests } = await reader.read(account, addDays(LAST_DAY, -(days - 1)), LAST_DAY);
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    const totals = meter.reset();
    if (records.length !== days * DEFAULT_SHARDS) throw new Error(`read of ${days} days returned ${records.length} records`);
    return { ms, requests, readUnits: totals.readUnits, records: records.length };
  };
  const comparison = await alternate({ rounds, warmup: true, candidate: () => read(366), baseline: () => read(30) });
  const summary = (samples: readonly ReadSample[]) => ({
    requests: median(samples.map((s) => s.requests)),
    ms: median(samples.map((s) => s.ms)),
    readUnits: median(samples.map((s) => s.readUnits)),
    records: samples[0]!.records,
  });
  const days366 = summary(comparison.candidate);
  const days30 = summary(comparison.baseline);
  progress(`history reads: 30 days ${days30.requests} requests ${days30.ms.toFixed(1)} ms, 366 days ${days366.requests} requests ${days366.ms.toFixed(1)} ms`);
  return { rounds, itemBytes: itemBytes(items[0]!), comparison, days30, days366 };
}
