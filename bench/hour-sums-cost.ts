/**
 * Item 7: what hourly sums cost in the write (issue 35). The same deliveries (log
 * objects of one day, one increment per account, 10% delivered twice) are applied two
 * ways, alternating first in every round, each on fresh accounts:
 *
 * ```
 * before  the day's totals only, at the cap before hours (48)
 * hours   the day's totals and the increment's sums by UTC hour, at the default cap (DEFAULTS.historyCap)
 * metric  as hours, with one configured metric (`authorization_requests`, the demo's and the chaos's rule)
 * ```
 * `before` and `hours` count base metrics only (requests, bytes): the default plan;
 * `metric` adds the configured metric, whose hour attributes carry a code of its name
 * (hours.ts). Each object is an hourly log (object n is hour n mod 24) with a tenth of its requests in the hour before, as
 * CloudFront files hold late lines, so a busy shard item ends the day with 48 hour
 * attributes. Costs are per delivered increment: WCU DynamoDB reports (increments and
 * tombstones), WCU billed with the rejected writes (duplicates), requests.
 */
import { GetItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DEFAULTS } from '../src/adapters/config';
import { DynamoUsageStore } from '../src/adapters/dynamodb/dynamodb-usage-store';
import { mapWithConcurrency } from '../src/app/concurrency';
import { addHourSums, hourSumsOfAttributes, hourTotals, hoursCoverDay } from '../src/domain/hours';
import { usageKey } from '../src/domain/counters/keys';
import type { Increment } from '../src/domain/counters/usage-store';
import { itemBytes, meterCapacity, totalRequests } from './capacity-meter';
import { incrementWorkload, type Delivery } from './increment-workload';
import { median } from './stats';

export interface HourSumsCostOptions {
  readonly rounds: number;
  /** Log objects of the day, each with usage for every account. */
  readonly objects: number;
  readonly accounts: number;
}

export const HOUR_WAYS = ['before', 'hours', 'metric'] as const;
export type HourWay = (typeof HOUR_WAYS)[number];

/** The cap shard histories held before hours (`DEFAULTS.historyCap` until issue 35). */
export const CAP_BEFORE_HOURS = 48;
const SHARDS = 4;
const DAY = '2026-11-21';

export interface HourWaySummary {
  readonly historyCap: number;
  /** Medians over rounds, per delivered increment (duplicates included). */
  readonly wcuPerIncrement: number;
  readonly billedWcuPerIncrement: number;
  readonly requestsPerIncrement: number;
  /** The largest shard item at the end of a round (bytes, DynamoDB's size rules). */
  readonly largestItemBytes: number;
  /** Every account-day counted exactly, and (hours) its hours sum to its day, every metric. */
  readonly exact: boolean;
}

export interface HourSumsCostResult {
  readonly options: HourSumsCostOptions;
  readonly deliveredIncrements: number;
  readonly ways: Record<HourWay, HourWaySummary>;
  /** hours / before, WCU per delivered increment (billed). */
  readonly ratio: number;
  /** metric / before, WCU per delivered increment (billed). */
  readonly metricRatio: number;
}

/** The deliveries with base metrics (and for `metric` the configured one), and (but for `before`) each increment's sums by hour. */
function deliveriesFor(tag: string, options: HourSumsCostOptions, seed: number, way: HourWay): readonly Delivery[] {
  const workload = incrementWorkload({ tag, objects: options.objects, accounts: options.accounts, day: DAY, duplicateRate: 0.1, seed, keyScheme: { keyBytes: 12, shards: SHARDS } });
  return workload.deliveries.map((delivery) => ({
    ...delivery,
    increments: delivery.increments.map((increment): Increment => {
      const metrics: Record<string, number> = { requests: increment.metrics.requests ?? 0, bytes: increment.metrics.bytes ?? 0 };
      if (way === 'metric') metrics.authorization_requests = increment.metrics.authorization_requests ?? 0;
      const base = { ...increment, metrics };
      if (way === 'before') return base;
      const hour = delivery.object % 24;
      const late = Object.fromEntries(Object.entries(metrics).map(([name, amount]) => [name, Math.floor(amount / 10)]));
      const own = Object.fromEntries(Object.entries(metrics).map(([name, amount]) => [name, amount - (late[name] ?? 0)]));
      const hours = addHourSums({ [hour]: own }, { [(hour + 23) % 24]: late });
      return { ...base, hours };
    }),
  }));
}

async function readShards(client: DynamoDBClient, table: string, accounts: readonly string[]): Promise<Record<string, import('@aws-sdk/client-dynamodb').AttributeValue>[]> {
  const items = [];
  for (const account of accounts) {
    for (let shard = 0; shard < SHARDS; shard++) {
      const key = usageKey({ accountId: account, day: DAY, shard });
      const { Item } = await client.send(new GetItemCommand({ TableName: table, Key: { PK: { S: key.PK }, SK: { S: key.SK } }, ConsistentRead: true }));
      if (Item !== undefined) items.push(Item);
    }
  }
  return items;
}

export async function runHourSumsCost(client: DynamoDBClient, table: string, options: HourSumsCostOptions, progress: (line: string) => void): Promise<HourSumsCostResult> {
  const meter = meterCapacity(client);
  const runTag = `hs${Date.now().toString(36)}`;
  const runOnce = async (way: HourWay, round: number) => {
    const tag = `${runTag}-${round}-${way}`;
    const deliveries = deliveriesFor(tag, options, 42 + Math.max(0, round), way);
    const historyCap = way === 'before' ? CAP_BEFORE_HOURS : DEFAULTS.historyCap;
    const store = new DynamoUsageStore({ client, tableName: table, historyCap, ledgerTtlDays: 400 });
    meter.reset();
    await mapWithConcurrency(deliveries, 4, (delivery) => mapWithConcurrency(delivery.increments, 8, (increment) => store.applyIncrement(increment)));
    const totals = meter.reset();
    const delivered = deliveries.reduce((sum, delivery) => sum + delivery.increments.length, 0);
    // What the distinct increments add up to, per account.
    const expected = new Map<string, Record<string, number>>();
    for (const delivery of deliveries.filter((d) => !d.duplicate)) {
      for (const increment of delivery.increments) {
        const sum = expected.get(increment.account) ?? {};
        for (const [name, amount] of Object.entries(increment.metrics)) sum[name] = (sum[name] ?? 0) + amount;
        expected.set(increment.account, sum);
      }
    }
    const items = await readShards(client, table, [...expected.keys()]);
    meter.reset();
    let exact = true;
    for (const [account, want] of expected) {
      const mine = items.filter((item) => item.PK?.S === `ACCT#${account}`);
      const day: Record<string, number> = {};
      const hours: Record<number, Record<string, number>> = {};
      for (const item of mine) {
        for (const name of Object.keys(want)) day[name] = (day[name] ?? 0) + Number(item[name]?.N ?? 0);
        addHourSums(hours, hourSumsOfAttributes(Object.fromEntries(Object.entries(item).flatMap(([name, value]) => (value.N === undefined ? [] : [[name, Number(value.N)]])))));
      }
      if (Object.keys(want).some((name) => day[name] !== want[name])) exact = false;
      if (way !== 'before' && !hoursCoverDay(day, hours)) exact = false;
      if (way === 'before' && Object.keys(hourTotals(hours)).length > 0) exact = false;
    }
    return {
      delivered,
      wcu: (totals.writeUnits) / delivered,
      billed: (totals.writeUnits + totals.failedWriteUnits) / delivered,
      requests: totalRequests(totals) / delivered,
      largest: Math.max(0, ...items.map(itemBytes)),
      exact,
      historyCap,
    };
  };

  // One unrecorded round warms the SDK and DynamoDB Local.
  for (const way of HOUR_WAYS) await runOnce(way, -1);
  const runs: Record<HourWay, Awaited<ReturnType<typeof runOnce>>[]> = { before: [], hours: [], metric: [] };
  for (let round = 0; round < options.rounds; round++) {
    const order = round % 2 === 0 ? HOUR_WAYS : ([...HOUR_WAYS].reverse() as HourWay[]);
    for (const way of order) runs[way].push(await runOnce(way, round));
    progress(`hours round ${round + 1}/${options.rounds}: before ${runs.before.at(-1)!.billed.toFixed(3)} WCU, hours ${runs.hours.at(-1)!.billed.toFixed(3)} WCU, with a configured metric ${runs.metric.at(-1)!.billed.toFixed(3)} WCU per delivered increment`);
  }
  const summary = (way: HourWay): HourWaySummary => ({
    historyCap: runs[way][0]!.historyCap,
    wcuPerIncrement: median(runs[way].map((run) => run.wcu)),
    billedWcuPerIncrement: median(runs[way].map((run) => run.billed)),
    requestsPerIncrement: median(runs[way].map((run) => run.requests)),
    largestItemBytes: Math.max(...runs[way].map((run) => run.largest)),
    exact: runs[way].every((run) => run.exact),
  });
  const ways = { before: summary('before'), hours: summary('hours'), metric: summary('metric') };
  const billedRatio = (way: HourWay) => ways[way].billedWcuPerIncrement / ways.before.billedWcuPerIncrement;
  return { options, deliveredIncrements: runs.hours[0]!.delivered, ways, ratio: billedRatio('hours'), metricRatio: billedRatio('metric') };
}
