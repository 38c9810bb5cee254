/**
 * Item 2: cost of an idempotent increment, four ways, on DynamoDB Local. Every round
 * runs every way on its own fresh copy of the same workload (fresh account ids), in a
 * rotating order, and reads the counters back to see what the duplicates did.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { mapWithConcurrency } from '../src/app/concurrency';
import type { IncrementOutcome } from '../src/domain/counters/usage-store';
import { meterCapacity, totalRequests, type CapacityTotals } from './capacity-meter';
import { countError, incrementWorkload, type CountError } from './increment-workload';
import {
  createStrategy,
  ensureIdempotencyTable,
  readCounters,
  STRATEGIES,
  type StrategyName,
  type StrategyTables,
} from './increment-strategies';
import { median, rotate } from './stats';

export interface IncrementCostOptions {
  readonly rounds: number;
  readonly objects: number;
  readonly accounts: number;
  readonly duplicateRate: number;
  /** Objects in flight at once (as the ingest handler works on messages). */
  readonly objectConcurrency: number;
  /** Increments of one object in flight at once. */
  readonly incrementConcurrency: number;
}

/** One way, one round. */
export interface StrategyRun {
  readonly deliveredIncrements: number;
  readonly distinctIncrements: number;
  readonly duplicatesSeen: number;
  readonly seconds: number;
  readonly totals: CapacityTotals;
  readonly error: CountError;
}

export interface StrategySummary {
  readonly name: StrategyName;
  readonly runs: readonly StrategyRun[];
  /** Medians over rounds, per delivered increment (duplicates included). */
  readonly requestsPerIncrement: number;
  readonly requestsByOperation: Record<string, number>;
  readonly wcuPerIncrement: number;
  readonly billedWcuPerIncrement: number;
  readonly rcuPerIncrement: number;
  readonly incrementsPerSecond: number;
  /** The error of the last round (every round runs the same workload shape). */
  readonly error: CountError;
  readonly duplicatesSeen: number;
  /** Writes rejected by their condition that were not duplicates (Tally: growing form sent to a full history; others: conflicts). */
  readonly otherRejectedWrites: number;
}

export interface IncrementCostResult {
  readonly options: IncrementCostOptions;
  readonly deliveredIncrements: number;
  readonly distinctIncrements: number;
  readonly ways: Record<StrategyName, StrategySummary>;
}

const DAY = '2026-11-21';

export async function runIncrementCost(
  client: DynamoDBClient,
  tables: StrategyTables,
  options: IncrementCostOptions,
  progress: (line: string) => void,
): Promise<IncrementCostResult> {
  await ensureIdempotencyTable(client, tables.idempotency);
  const meter = meterCapacity(client);
  const runTag = `ic${Date.now().toString(36)}`;
  const workloadFor = (way: StrategyName, round: number) =>
    incrementWorkload({
      tag: `${runTag}-${round < 0 ? 'w' : round}-${way}`,
      objects: round < 0 ? Math.min(20, options.objects) : options.objects,
      accounts: options.accounts,
      day: DAY,
      duplicateRate: options.duplicateRate,
      seed: 42 + Math.max(0, round),
      keyScheme: { keyBytes: 12, shards: 4 },
    });

  const runOnce = async (way: StrategyName, round: number): Promise<StrategyRun> => {
    const workload = workloadFor(way, round);
    const strategy = createStrategy(way, client, tables);
    meter.reset();
    const started = process.hrtime.bigint();
    const outcomes = await mapWithConcurrency(workload.deliveries, options.objectConcurrency, (delivery) =>
      mapWithConcurrency(delivery.increments, options.incrementConcurrency, (increment): Promise<IncrementOutcome> => strategy.apply(increment)),
    );
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const totals = meter.reset();
    const error = countError(workload.expected, await readCounters(client, tables.usage, workload.accounts, workload.day));
    return {
      deliveredIncrements: workload.distinctIncrements + workload.duplicateIncrements,
      distinctIncrements: workload.distinctIncrements,
      duplicatesSeen: outcomes.flat().filter((outcome) => outcome === 'duplicate').length,
      seconds,
      totals,
      error,
    };
  };

  // One short unrecorded run per way warms the JIT, the SDK and DynamoDB Local.
  for (const way of STRATEGIES) await runOnce(way, -1);
  const runs = await rotate({
    rounds: options.rounds,
    ways: STRATEGIES,
    run: runOnce,
    onRound: (round, results) =>
      progress(
        `increments round ${round + 1}/${options.rounds}: ` +
          STRATEGIES.map((way) => `${way} ${(results[way].deliveredIncrements / results[way].seconds).toFixed(0)}/s`).join(', '),
      ),
  });
  const ways = Object.fromEntries(STRATEGIES.map((way) => [way, summarise(way, runs[way])])) as Record<StrategyName, StrategySummary>;
  const first = runs.tally[0]!;
  return { options, deliveredIncrements: first.deliveredIncrements, distinctIncrements: first.distinctIncrements, ways };
}

function summarise(name: StrategyName, runs: readonly StrategyRun[]): StrategySummary {
  const per = (value: (run: StrategyRun) => number) => median(runs.map((run) => value(run) / run.deliveredIncrements));
  const operations = new Set(runs.flatMap((run) => Object.keys(run.totals.requests)));
  return {
    name,
    runs,
    requestsPerIncrement: per((run) => totalRequests(run.totals)),
    requestsByOperation: Object.fromEntries([...operations].map((op) => [op, per((run) => run.totals.requests[op] ?? 0)])),
    wcuPerIncrement: per((run) => run.totals.writeUnits),
    billedWcuPerIncrement: per((run) => run.totals.writeUnits + run.totals.failedWriteUnits),
    rcuPerIncrement: per((run) => run.totals.readUnits),
    incrementsPerSecond: median(runs.map((run) => run.deliveredIncrements / run.seconds)),
    error: runs[runs.length - 1]!.error,
    duplicatesSeen: runs[runs.length - 1]!.duplicatesSeen,
    otherRejectedWrites: median(runs.map((run) => run.totals.failedWrites - (name === 'read-modify-write' ? 0 : run.duplicatesSeen))),
  };
}
