import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { meterCapacity, totalRequests } from '../../bench/capacity-meter';
import { countError, incrementWorkload, type IncrementWorkload } from '../../bench/increment-workload';
import { createStrategy, ensureIdempotencyTable, readCounters, type StrategyName } from '../../bench/increment-strategies';
import { testClients, testStackInfo, uniqueId } from '../support/stack';

const info = testStackInfo();
const tables = { usage: info.table, idempotency: 'tally-bench-idempotency-test' };

/** A fresh client per test, so the meter counts only that test's requests. */
function meteredClient(): { client: DynamoDBClient; meter: ReturnType<typeof meterCapacity> } {
  const { dynamodb } = testClients(info);
  return { client: dynamodb, meter: meterCapacity(dynamodb) };
}

function tinyWorkload(): IncrementWorkload {
  return incrementWorkload({
    tag: uniqueId('bs'),
    objects: 6,
    accounts: 2,
    day: '2026-11-21',
    duplicateRate: 0.5,
    seed: 11,
    keyScheme: { keyBytes: 12, shards: 4 },
  });
}

async function run(name: StrategyName, workload: IncrementWorkload) {
  const { client, meter } = meteredClient();
  const strategy = createStrategy(name, client, tables);
  const outcomes: string[] = [];
  for (const delivery of workload.deliveries) {
    for (const increment of delivery.increments) outcomes.push(await strategy.apply(increment));
  }
  const totals = meter.reset();
  const error = countError(workload.expected, await readCounters(client, tables.usage, workload.accounts, workload.day));
  return { outcomes, totals, error };
}

beforeAll(async () => {
  await ensureIdempotencyTable(testClients(info).dynamodb, tables.idempotency);
});

describe('the increment strategies the benchmark compares', () => {
  it.each(['tally', 'powertools', 'transaction'] as const)('%s counts each increment once through duplicate deliveries', async (name) => {
    const workload = tinyWorkload();

    const { outcomes, error } = await run(name, workload);

    expect(workload.duplicateIncrements).toBe(6);
    expect(outcomes.filter((o) => o === 'duplicate')).toHaveLength(workload.duplicateIncrements);
    expect(error).toMatchObject({ requestsOff: 0, relative: 0, exact: true });
  });

  it('read-modify-write over-counts by exactly the duplicated increments', async () => {
    const workload = tinyWorkload();
    const duplicatedRequests = workload.deliveries
      .filter((d) => d.duplicate)
      .flatMap((d) => d.increments)
      .reduce((sum, i) => sum + i.metrics.requests!, 0);

    const { outcomes, error } = await run('read-modify-write', workload);

    expect(outcomes.every((o) => o === 'applied')).toBe(true);
    expect(error.requestsOff).toBe(duplicatedRequests);
    expect(error.relative).toBeCloseTo(duplicatedRequests / error.expectedRequests, 10);
    expect(error.exact).toBe(false);
  });

  it('meters what each strategy sends: requests per applied increment and per duplicate', async () => {
    const workload = tinyWorkload();
    const applied = workload.distinctIncrements;
    const duplicates = workload.duplicateIncrements;

    const tally = (await run('tally', workload)).totals;
    const powertools = (await run('powertools', tinyWorkload())).totals;
    const transaction = (await run('transaction', tinyWorkload())).totals;
    const rmw = (await run('read-modify-write', tinyWorkload())).totals;

    // A shard item's first increment also puts it in the day index (the closer's): one more write unit, once per shard.
    const shardItems = new Set(workload.deliveries.flatMap((d) => d.increments).map((i) => `${i.account}|${i.day}|${i.shard}`)).size;
    expect(tally.requests).toEqual({ UpdateItem: applied + duplicates });
    expect(tally.writeUnits).toBe(applied + shardItems);
    expect(tally.failedWrites).toBe(duplicates);
    expect(powertools.requests).toEqual({ PutItem: applied + duplicates, UpdateItem: 2 * applied });
    expect(powertools.writeUnits).toBe(3 * applied);
    expect(transaction.requests).toEqual({ TransactWriteItems: applied + duplicates });
    expect(transaction.writeUnits).toBe(4 * applied);
    expect(totalRequests(rmw)).toBe(2 * (applied + duplicates));
    expect(rmw.writeUnits).toBe(applied + duplicates);
  });
});
