import { DynamoUsageStore } from '../../src/adapters/dynamodb-usage-store';
import { planCapacity, shardItemBytes } from '../../src/domain/capacity-plan';
import { testClients, testStackInfo, uniqueId } from '../support/stack';

const info = testStackInfo();
const { dynamodb } = testClients(info);
const METRICS = ['requests', 'bytes', 'authorization_requests'];

/** Distinct keys of `keyBytes` bytes. */
const key = (n: number, keyBytes: number) => new Uint8Array(keyBytes).map((_, i) => (i === 0 ? n & 0xff : i === 1 ? n >> 8 : 0x5a));

/**
 * Applies `count` increments to one shard of a fresh 64-character account and returns
 * the WCU DynamoDB Local reports for each. Every increment adds the same amounts, so
 * the counters' digits are known: requests and authorization_requests stay under 4
 * digits, bytes under 7.
 */
async function measure(historyCap: number, keyBytes: number, count: number): Promise<number[]> {
  const account = uniqueId('plan').padEnd(64, 'p');
  const capacity: number[] = [];
  const store = new DynamoUsageStore({
    client: dynamodb,
    tableName: info.table,
    historyCap,
    ledgerTtlDays: 1,
    onCapacity: (operation, units) => operation === 'increment' && capacity.push(units),
  });
  for (let n = 0; n < count; n++) {
    await store.applyIncrement({
      account,
      day: '2026-11-21',
      shard: 0,
      key: key(n, keyBytes),
      metrics: { requests: 1, bytes: 1000, authorization_requests: 1 },
    });
  }
  return capacity;
}

describe("tally plan's WCU prediction against DynamoDB Local", () => {
  it.each([
    { historyCap: 48, keyBytes: 12 },
    { historyCap: 100, keyBytes: 12 },
    { historyCap: 160, keyBytes: 16 },
    { historyCap: 300, keyBytes: 12 },
  ])('predicts the WCU of a full shard item (cap $historyCap, $keyBytes-byte keys)', async ({ historyCap, keyBytes }) => {
    const plan = planCapacity({ objectsPerAccountDay: historyCap, shards: 1, historyCap, keyBytes, metricNames: METRICS, counterDigits: 7 });

    const measured = await measure(historyCap, keyBytes, historyCap + 3);

    // The last increments roll a full history: the steady state the plan sizes.
    expect(measured.slice(-3)).toEqual([plan.wcuPerIncrement, plan.wcuPerIncrement, plan.wcuPerIncrement]);
  });

  it('predicts the key at which a growing item crosses 1 KB (2 WCU) to within one key', async () => {
    const keyBytes = 12;
    const shape = { keyBytes, accountIdChars: 64, metrics: METRICS.map((name) => ({ name, digits: name === 'bytes' ? 6 : 3 })) };
    // Increment i leaves i + 1 keys; it is billed for the item after it.
    let predicted = 0;
    while (shardItemBytes({ ...shape, keys: predicted + 1 }) <= 1024) predicted++;

    const measured = await measure(120, keyBytes, 120);
    // The first increment creates the item and also writes the day index (1 more unit): skip it.
    const firstOverOneWcu = measured.findIndex((units, i) => i > 0 && units > 1);

    expect(firstOverOneWcu).toBeGreaterThan(0);
    expect(Math.abs(firstOverOneWcu - predicted)).toBeLessThanOrEqual(1);
  });
});
