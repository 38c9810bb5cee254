import { DynamoUsageStore } from '../../src/adapters/dynamodb/dynamodb-usage-store';
import { planCapacity, shardItemBytes } from '../../src/domain/counters/capacity-plan';
import { testClients, testStackInfo, uniqueId } from '../support/stack';

const info = testStackInfo();
const { dynamodb } = testClients(info);
const METRICS = ['requests', 'bytes', 'authorization_requests'];

/** Distinct keys of `keyBytes` bytes. */
const key = (n: number, keyBytes: number) => new Uint8Array(keyBytes).map((_, i) => (i === 0 ? n & 0xff : i === 1 ? n >> 8 : 0x5a));

/** A value of 7 significant digits: DynamoDB sizes a number by its significant digits. */
const SEVEN_DIGITS = 1_234_567;

/**
 * Applies `count` increments to one shard of a fresh 64-character account and returns
 * the WCU DynamoDB Local reports for each. The first increment fills all 24 hours of
 * every metric (as a full day of hours does) and every counter starts at 7 significant
 * digits; later increments add 1 to the day alone, so the item's numbers keep their
 * sizes: the item is measured at the shape `tally plan` sizes (digits 7), not its sums.
 */
async function measure(historyCap: number, keyBytes: number, count: number, metrics: readonly string[]): Promise<number[]> {
  const account = uniqueId('plan').padEnd(64, 'p');
  const capacity: number[] = [];
  const store = new DynamoUsageStore({
    client: dynamodb,
    tableName: info.table,
    historyCap,
    ledgerTtlDays: 1,
    // The day's last minute: a key's minute in `t` has the 4 digits of a write on its day,
    // as the plan sizes it. On the wall clock the minutes since 2026-11-21 passed 9,999 on
    // 2026-11-27 at 22:40 UTC, and every key then took a byte more (cap 300: 7 WCU, not 6).
    clock: () => new Date('2026-11-21T23:59:00Z'),
    onCapacity: (operation, units) => operation === 'increment' && capacity.push(units),
  });
  const each = (amount: number) => Object.fromEntries(metrics.map((name) => [name, amount]));
  const fullDay = Object.fromEntries(Array.from({ length: 24 }, (_, hour) => [hour, each(SEVEN_DIGITS)]));
  for (let n = 0; n < count; n++) {
    await store.applyIncrement({
      account,
      day: '2026-11-21',
      shard: 0,
      key: key(n, keyBytes),
      metrics: each(n === 0 ? SEVEN_DIGITS : 1),
      ...(n === 0 ? { hours: fullDay } : {}),
    });
  }
  return capacity;
}

describe("tally plan's WCU prediction against DynamoDB Local", () => {
  it.each([
    { historyCap: 15, keyBytes: 12 },
    { historyCap: 48, keyBytes: 12 },
    { historyCap: 100, keyBytes: 12 },
    { historyCap: 160, keyBytes: 16 },
    { historyCap: 300, keyBytes: 12 },
  ])('predicts the WCU of a full shard item (cap $historyCap, $keyBytes-byte keys)', async ({ historyCap, keyBytes }) => {
    const plan = planCapacity({ objectsPerAccountDay: historyCap, shards: 1, historyCap, keyBytes, metricNames: METRICS, counterDigits: 7 });

    const measured = await measure(historyCap, keyBytes, historyCap + 3, METRICS);

    // The last increments roll a full history: the steady state the plan sizes.
    expect(measured.slice(-3)).toEqual([plan.wcuPerIncrement, plan.wcuPerIncrement, plan.wcuPerIncrement]);
  });

  it('predicts the key at which a growing item with a full day of hours crosses 1 KB (2 WCU) to within one key', async () => {
    const keyBytes = 12;
    const base = ['requests', 'bytes'];
    const shape = { keyBytes, accountIdChars: 64, metrics: base.map((name) => ({ name, digits: 7 })), hours: 24 };
    // Increment i leaves i + 1 keys; it is billed for the item after it.
    let predicted = 0;
    while (shardItemBytes({ ...shape, keys: predicted + 1 }) <= 1024) predicted++;

    const measured = await measure(120, keyBytes, 120, base);
    // The first increment creates the item and also writes the day index (1 more unit): skip it.
    const firstOverOneWcu = measured.findIndex((units, i) => i > 0 && units > 1);

    expect(predicted).toBeGreaterThan(15);
    expect(firstOverOneWcu).toBeGreaterThan(0);
    expect(Math.abs(firstOverOneWcu - predicted)).toBeLessThanOrEqual(1);
  });
});
