/**
 * The workload every increment strategy is measured on: log objects that each carry
 * usage for several accounts on one day (one increment per account), with a share
 * of the objects delivered a second time a little later, as SQS does.
 */
import { incrementKey, type KeyScheme } from '../src/domain/counters/idempotency-key';
import type { Increment } from '../src/domain/counters/usage-store';
import { seededRandom } from '../src/local/demo/log-generator';

export const BENCH_METRICS = ['requests', 'bytes', 'authorization_requests'] as const;
export type BenchMetric = (typeof BENCH_METRICS)[number];

/** One delivery of one object: its increments, applied together. */
export interface Delivery {
  readonly object: number;
  readonly duplicate: boolean;
  readonly increments: readonly Increment[];
}

export interface IncrementWorkload {
  readonly deliveries: readonly Delivery[];
  readonly accounts: readonly string[];
  readonly day: string;
  /** What the counters must read once every distinct increment is applied once, by `account|day`. */
  readonly expected: ReadonlyMap<string, Readonly<Record<BenchMetric, number>>>;
  readonly distinctIncrements: number;
  readonly duplicateIncrements: number;
}

export interface WorkloadOptions {
  /** Makes account ids and object keys unique to one run. */
  readonly tag: string;
  readonly objects: number;
  readonly accounts: number;
  readonly day: string;
  /** Share of objects delivered twice. */
  readonly duplicateRate: number;
  readonly seed: number;
  readonly keyScheme: KeyScheme;
}

export function usageId(account: string, day: string): string {
  return `${account}|${day}`;
}

/**
 * Builds the deliveries: every object in order, and `round(objects × duplicateRate)`
 * of them again 8 to 24 objects after the first delivery (within the dedup horizon,
 * as SQS redelivers within minutes).
 */
export function incrementWorkload(options: WorkloadOptions): IncrementWorkload {
  const random = seededRandom(options.seed);
  const accounts = Array.from({ length: options.accounts }, (_, i) => `${options.tag}-acct${i}`);
  const expected = new Map<string, Record<BenchMetric, number>>();
  const originals: { order: number; delivery: Delivery }[] = [];
  for (let object = 0; object < options.objects; object++) {
    const ref = {
      bucket: 'tally-bench-logs',
      key: `cloudfront/E2BENCH.${options.day}-${String(object % 24).padStart(2, '0')}.${options.tag}-${object}.gz`,
      etag: `${options.tag}-${object}-etag`,
    };
    const increments = accounts.map((account): Increment => {
      const requests = 50 + Math.floor(random() * 2_000);
      const metrics: Record<BenchMetric, number> = {
        requests,
        bytes: requests * (500 + Math.floor(random() * 4_500)),
        authorization_requests: Math.floor(requests * random() * 0.3),
      };
      const total = expected.get(usageId(account, options.day)) ?? { requests: 0, bytes: 0, authorization_requests: 0 };
      for (const metric of BENCH_METRICS) total[metric] += metrics[metric];
      expected.set(usageId(account, options.day), total);
      const { key, shard } = incrementKey(ref, account, options.day, options.keyScheme);
      return { account, day: options.day, shard, key, metrics };
    });
    originals.push({ order: object, delivery: { object, duplicate: false, increments } });
  }
  const duplicates = Math.round(options.objects * options.duplicateRate);
  const chosen = shuffled(originals.map((o) => o.delivery), random).slice(0, duplicates);
  const redeliveries = chosen.map((delivery) => ({
    order: delivery.object + 8 + Math.floor(random() * 17) + 0.5,
    delivery: { ...delivery, duplicate: true },
  }));
  const deliveries = [...originals, ...redeliveries].sort((a, b) => a.order - b.order).map((entry) => entry.delivery);
  return {
    deliveries,
    accounts,
    day: options.day,
    expected,
    distinctIncrements: options.objects * accounts.length,
    duplicateIncrements: duplicates * accounts.length,
  };
}

function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

/** How far counters read back are from what the distinct increments add up to. */
export interface CountError {
  readonly expectedRequests: number;
  readonly observedRequests: number;
  /** observed − expected `requests`: positive is over-counting. */
  readonly requestsOff: number;
  /** `requestsOff / expectedRequests`. */
  readonly relative: number;
  /** Every metric of every account-day matches. */
  readonly exact: boolean;
}

/**
 * Compares the counters read back (`observed`, by `account|day`) with `expected`.
 *
 * @example countError(expected, observed).relative // 0.1 when every request was counted 1.1 times
 */
export function countError(
  expected: ReadonlyMap<string, Readonly<Record<BenchMetric, number>>>,
  observed: ReadonlyMap<string, Readonly<Partial<Record<string, number>>>>,
): CountError {
  let expectedRequests = 0;
  let observedRequests = 0;
  let exact = true;
  for (const id of new Set([...expected.keys(), ...observed.keys()])) {
    const want = expected.get(id);
    const got = observed.get(id);
    expectedRequests += want?.requests ?? 0;
    observedRequests += got?.requests ?? 0;
    for (const metric of BENCH_METRICS) {
      if ((want?.[metric] ?? 0) !== (got?.[metric] ?? 0)) exact = false;
    }
  }
  const requestsOff = observedRequests - expectedRequests;
  return { expectedRequests, observedRequests, requestsOff, relative: expectedRequests === 0 ? 0 : requestsOff / expectedRequests, exact };
}
