/**
 * Item 5: how the cost of an increment grows with the objects one account-day gets,
 * at the default history (4 shards × 48 keys) and at what `tally plan` recommends.
 *
 * Measured on DynamoDB Local: a shard item filled to its cap is written, then a
 * sample of increments goes through `DynamoUsageStore` and each reports its WCU.
 * Computed from that: writes/s an item can take (a partition gives 1,000 WCU/s), the
 * writes/s an item gets on average, WCU per account-day (tombstones included), and the
 * horizon past which increments pay a tombstone.
 */
import { GetItemCommand, PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoUsageStore } from '../src/adapters/dynamodb/dynamodb-usage-store';
import { DYNAMODB_LIMITS, planCapacity, type CapacityPlan } from '../src/domain/counters/capacity-plan';
import { incrementKey } from '../src/domain/counters/idempotency-key';
import { itemBytes, meterCapacity, totalRequests } from './capacity-meter';
import { DEFAULT_CAP, DEFAULT_SHARDS, fullShardItem } from './history-reads';
import { BENCH_METRICS } from './increment-workload';
import { median } from './stats';

export const OBJECTS_PER_ACCOUNT_DAY = [100, 1_000, 10_000, 100_000] as const;
/** Lines per log object for one account: sizes the counters realistically. */
const LINES_PER_OBJECT = 2_000;

export interface GrowthRow {
  readonly objectsPerAccountDay: number;
  readonly setting: 'default' | 'plan';
  readonly shards: number;
  readonly historyCap: number;
  /** Measured: bytes of the full item after the sample (DynamoDB's size rules). */
  readonly measuredItemBytes: number;
  /** Computed by `tally plan` for the same shape. */
  readonly plannedItemBytes: number;
  readonly plannedWcu: number;
  /** Measured: WCU DynamoDB Local reported, median and max over the sample. */
  readonly wcuPerIncrement: number;
  readonly wcuMax: number;
  /** Measured: requests of the first increment (it meets a full history and switches to the rolling form). */
  readonly firstRequests: number;
  /** Measured: requests per increment after the first. */
  readonly requestsPerIncrement: number;
  /** Measured: one item written back to back on DynamoDB Local. */
  readonly localWritesPerSecond: number;
  /** Computed: 1,000 WCU/s per partition / measured WCU. */
  readonly maxWritesPerSecondPerItem: number;
  /** Computed: objects / shards / 86,400 s. */
  readonly averageWritesPerSecondPerItem: number;
  /** Computed: objects × measured WCU. */
  readonly wcuPerAccountDay: number;
  readonly horizonObjects: number;
  readonly horizonHours: number;
  readonly coversDay: boolean;
  readonly sample: number;
}

/** The cost-growth bench's result, as bench/report.ts prints it. */
export interface CostGrowthResult {
  readonly rows: readonly GrowthRow[];
}

function planFor(objects: number, setting: 'default' | 'plan'): CapacityPlan {
  return planCapacity({
    objectsPerAccountDay: objects,
    metricNames: [...BENCH_METRICS],
    ...(setting === 'default' ? { shards: DEFAULT_SHARDS, historyCap: DEFAULT_CAP } : {}),
  });
}

export async function runCostGrowth(
  client: DynamoDBClient,
  tableName: string,
  sample: number,
  progress: (line: string) => void,
): Promise<GrowthRow[]> {
  const meter = meterCapacity(client);
  const runTag = `cg${Date.now().toString(36)}`;
  const rows: GrowthRow[] = [];
  for (const objects of OBJECTS_PER_ACCOUNT_DAY) {
    for (const setting of ['default', 'plan'] as const) {
      const plan = planFor(objects, setting);
      const account = `${runTag}-${objects}-${setting}-`.padEnd(64, 'x');
      const day = '2026-11-21';
      const requestsSoFar = Math.floor((objects / plan.shards) * LINES_PER_OBJECT);
      // With `t`, as items written today have it: an item without it is adopted first, one key longer.
      const item = fullShardItem(account, day, 0, plan.historyCap, requestsSoFar, true);
      await client.send(new PutItemCommand({ TableName: tableName, Item: item }));

      const units: number[] = [];
      // Past its cap a history tombstones the keys it drops, 16 to a 1 WCU item.
      let tombstoneUnits = 0;
      const store = new DynamoUsageStore({
        client,
        tableName,
        historyCap: plan.historyCap,
        ledgerTtlDays: 400,
        onCapacity: (operation, writeUnits) => (operation === 'increment' ? units.push(writeUnits) : operation === 'tombstone' && (tombstoneUnits += writeUnits)),
      });
      meter.reset();
      let firstRequests = 0;
      const millis: number[] = [];
      for (let n = 0; n < sample; n++) {
        if (n === 1) firstRequests = totalRequests(meter.reset());
        const ref = { bucket: 'tally-bench-logs', key: `${runTag}/${objects}/${setting}/${n}.gz`, etag: `e${n}` };
        const { key } = incrementKey(ref, account, day, { keyBytes: 12, shards: plan.shards });
        const requests = LINES_PER_OBJECT;
        const started = process.hrtime.bigint();
        const outcome = await store.applyIncrement({
          account,
          day,
          shard: 0,
          key,
          metrics: { requests, bytes: requests * 3_187, authorization_requests: Math.floor(requests / 7) },
        });
        millis.push(Number(process.hrtime.bigint() - started) / 1e6);
        if (outcome !== 'applied') throw new Error(`cost growth: increment ${n} came back ${outcome}`);
      }
      const totals = meter.reset();
      const after = await client.send(
        new GetItemCommand({ TableName: tableName, Key: { PK: item.PK!, SK: item.SK! }, ConsistentRead: true }),
      );
      const history = after.Item?.h?.L?.length ?? 0;
      if (history !== plan.historyCap) throw new Error(`cost growth: history holds ${history} keys, expected ${plan.historyCap}`);
      const wcu = median(units) + Math.round((100 * tombstoneUnits) / sample) / 100;
      // The first increment pays the switch to the rolling form; the rest show the steady state.
      const steadyMillis = median(millis.slice(1));
      rows.push({
        objectsPerAccountDay: objects,
        setting,
        shards: plan.shards,
        historyCap: plan.historyCap,
        measuredItemBytes: itemBytes(after.Item!),
        plannedItemBytes: plan.itemBytes,
        plannedWcu: plan.wcuPerIncrement,
        wcuPerIncrement: wcu,
        wcuMax: Math.max(...units),
        firstRequests,
        requestsPerIncrement: totalRequests(totals) / (sample - 1),
        localWritesPerSecond: 1000 / steadyMillis,
        maxWritesPerSecondPerItem: Math.floor(DYNAMODB_LIMITS.partitionWcuPerSecond / wcu),
        averageWritesPerSecondPerItem: objects / plan.shards / 86_400,
        wcuPerAccountDay: objects * wcu,
        horizonObjects: plan.horizonObjects,
        horizonHours: plan.horizonHours,
        coversDay: plan.coversWindow,
        sample,
      });
      progress(
        `cost growth: ${objects} objects/account-day, ${setting} (${plan.shards} shards × ${plan.historyCap} keys): ` +
          `${wcu} WCU per increment, item ${itemBytes(after.Item!)} bytes`,
      );
    }
  }
  return rows;
}
