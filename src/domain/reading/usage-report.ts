import { isClosable } from '../billing/day-close';
import { BASE_METRICS, ESTIMATED_PREFIX } from '../logs/metric-rules';
import { daysBetweenInclusive, eachDay } from '../days';
import type { UsageRecord } from './usage-records';
import type { Granularity } from './usage-query';

/** One number per metric, every metric of the report present (zeros included). */
export type MetricValues = Record<string, number>;

/**
 * Measured usage and adjustments of one period. `metrics` is what the logs measured
 * (every shard summed); `adjustments` is the sum of the adjustment deltas dated in
 * the period; `totals` is their sum, the billable figure.
 */
export interface PeriodUsage {
  readonly metrics: MetricValues;
  readonly adjustments: MetricValues;
  readonly totals: MetricValues;
}

/**
 * Whether a day's numbers can still move: `closed` once its snapshot is recorded (see
 * day-close.ts), or, for an account with nothing on the day (no usage, no adjustment),
 * once the day is past its end plus the close grace: nothing is left to close, and its
 * zeros are final (a year-old empty day is not `open`). Such a day has no `closedAt`.
 */
export type DayStatus = 'open' | 'closed';

/** A row of `days`. */
export interface DayUsage extends PeriodUsage {
  readonly day: string;
  readonly status: DayStatus;
  /** Closed days: when the closed snapshot was recorded. */
  readonly closedAt?: string;
  /**
   * Closed days with usage after the close: measured usage minus the closed snapshot,
   * per metric (every metric present). What billing must add for the day; absent when none.
   */
  readonly late?: MetricValues;
}

/** A row of `months`: a calendar month cut to the requested range. */
export interface MonthUsage extends PeriodUsage {
  /** `YYYY-MM`. */
  readonly month: string;
  /** First and last day of the month inside the range. */
  readonly from: string;
  readonly to: string;
  /** Days of the month inside the range; fewer than the month has when the range cuts it. */
  readonly days: number;
}

/** One correction as written by `tally adjust`, shown apart from measured usage. */
export interface AdjustmentEntry {
  readonly id: string;
  readonly day: string;
  readonly metric: string;
  readonly delta: number;
  readonly reason: string;
  readonly createdAt: string;
}

/**
 * The billing history of one account over a day range: the JSON body of the read API,
 * a public contract (fields are added, never renamed).
 */
export interface UsageReport {
  readonly accountId: string;
  readonly from: string;
  readonly to: string;
  readonly granularity: Granularity;
  /** Metric names in display order: `requests`, `bytes`, then the others alphabetically. */
  readonly metricNames: string[];
  /**
   * Of those, the metrics that hold estimates (`estimated_<metric>`): counts of sampled
   * real-time logs scaled up by the sampling rate, kept apart from exact counts.
   */
  readonly estimatedMetrics: string[];
  /** Every day of the range, in order, zeros where nothing was counted. */
  readonly days: DayUsage[];
  /** Only with granularity `month`: every calendar month the range touches, in order. */
  readonly months?: MonthUsage[];
  /** Measured usage plus adjustments over the range. */
  readonly totals: MetricValues;
  readonly measuredTotals: MetricValues;
  readonly adjustmentTotals: MetricValues;
  /** Every adjustment in the range, by day then creation time. */
  readonly adjustments: AdjustmentEntry[];
  /** The newest write among the items read (shard `updatedAt`, adjustment `createdAt`); null when none. */
  readonly updatedAt: string | null;
}

export interface UsageReportInput {
  readonly accountId: string;
  readonly from: string;
  readonly to: string;
  readonly granularity: Granularity;
  /** What the reader returned for the range (any order; records outside the range are ignored). */
  readonly records: readonly UsageRecord[];
  /** Metrics every row carries even when no record has them (the configured ones). */
  readonly metricNames?: readonly string[];
  /**
   * The clock and `TALLY_CLOSE_GRACE_HOURS`: a day past its grace on which the account has
   * nothing is `closed` (see {@link DayStatus}). Absent: only close records close a day.
   */
  readonly closing?: { readonly now: Date; readonly graceHours: number };
}

/**
 * Sums usage shards per day, keeps adjustments apart, and shapes the report: every
 * day of the range present with every metric, totals, months when asked for, and
 * the freshness time. Pure: the same records always give the same report.
 *
 * @example
 * buildUsageReport({ accountId: 'acme', from: '2026-11-20', to: '2026-11-21', granularity: 'day', records: [
 *   { kind: 'usage', day: '2026-11-21', shard: 0, metrics: { requests: 12, bytes: 3456 } },
 * ] }).days
 * // [{ day: '2026-11-20', metrics: { requests: 0, bytes: 0 }, ... },
 * //  { day: '2026-11-21', metrics: { requests: 12, bytes: 3456 }, ... }]
 */
export function buildUsageReport(input: UsageReportInput): UsageReport {
  const { from, to } = input;
  const records = input.records.filter((record) => record.day >= from && record.day <= to);
  const names = orderMetricNames([
    ...(input.metricNames ?? BASE_METRICS),
    ...records.flatMap((record) =>
      record.kind === 'usage' || record.kind === 'revision' ? Object.keys(record.metrics) : record.kind === 'adjustment' ? [record.metric] : [],
    ),
  ]);

  const measured = new Map<string, Map<string, number>>();
  const adjusted = new Map<string, Map<string, number>>();
  const snapshots = new Map<string, Map<string, number>>();
  const closedAt = new Map<string, string>();
  const adjustments: AdjustmentEntry[] = [];
  let newest: { at: number; text: string } | undefined;
  const seen = (text: string | undefined) => {
    if (text === undefined || text === '') return;
    const at = Date.parse(text);
    if (Number.isFinite(at) && (newest === undefined || at > newest.at)) newest = { at, text };
  };

  for (const record of records) {
    if (record.kind === 'usage') {
      addInto(measured, record.day, Object.entries(record.metrics));
      seen(record.updatedAt);
    } else if (record.kind === 'revision') {
      if (record.revision === 1) addInto(snapshots, record.day, Object.entries(record.metrics));
    } else if (record.kind === 'closed-day') {
      closedAt.set(record.day, record.closedAt);
    } else if (record.kind === 'hours') {
      continue; // a day's hours: read by usage-hours.ts, never figures of the day
    } else {
      addInto(adjusted, record.day, [[record.metric, record.delta]]);
      adjustments.push({
        id: record.adjustmentId,
        day: record.day,
        metric: record.metric,
        delta: record.delta,
        reason: record.reason,
        createdAt: record.createdAt,
      });
      seen(record.createdAt);
    }
  }
  adjustments.sort((a, b) => compare(a.day, b.day) || compare(a.createdAt, b.createdAt) || compare(a.id, b.id));

  const days: DayUsage[] = eachDay(from, to).map((day) => {
    const row = period({ day }, names, measured.get(day), adjusted.get(day));
    const closed = closedAt.get(day);
    if (closed === undefined) {
      const settled = input.closing !== undefined && !measured.has(day) && !adjusted.has(day) && isClosable(day, input.closing.now, input.closing.graceHours);
      return { day, status: settled ? ('closed' as const) : ('open' as const), metrics: row.metrics, adjustments: row.adjustments, totals: row.totals };
    }
    const snapshot = valuesOf(names, snapshots.get(day));
    const late = Object.fromEntries(names.map((name) => [name, (row.metrics[name] ?? 0) - (snapshot[name] ?? 0)]));
    return {
      day,
      status: 'closed' as const,
      closedAt: closed,
      ...(Object.values(late).some((value) => value !== 0) ? { late } : {}),
      metrics: row.metrics,
      adjustments: row.adjustments,
      totals: row.totals,
    };
  });
  const measuredTotals = sumRows(names, days.map((row) => row.metrics));
  const adjustmentTotals = sumRows(names, days.map((row) => row.adjustments));
  return {
    accountId: input.accountId,
    from,
    to,
    granularity: input.granularity,
    metricNames: names,
    estimatedMetrics: names.filter((name) => name.startsWith(ESTIMATED_PREFIX)),
    days,
    ...(input.granularity === 'month' ? { months: groupByMonth(days, names) } : {}),
    totals: addValues(names, measuredTotals, adjustmentTotals),
    measuredTotals,
    adjustmentTotals,
    adjustments,
    updatedAt: newest?.text ?? null,
  };
}

/** `requests` and `bytes` first, then the other metrics alphabetically, each once. */
export function orderMetricNames(names: Iterable<string>): string[] {
  const unique = new Set(names);
  const base = BASE_METRICS.filter((name) => unique.has(name));
  const rest = [...unique].filter((name) => !(BASE_METRICS as readonly string[]).includes(name)).sort();
  return [...base, ...rest];
}

/** Sums days into calendar months (`YYYY-MM`), each cut to the days present. */
export function groupByMonth(days: readonly DayUsage[], names: readonly string[]): MonthUsage[] {
  const months: MonthUsage[] = [];
  let start = 0;
  while (start < days.length) {
    const month = days[start]!.day.slice(0, 7);
    let end = start;
    while (end + 1 < days.length && days[end + 1]!.day.slice(0, 7) === month) end++;
    const slice = days.slice(start, end + 1);
    const first = slice[0]!.day;
    const last = slice[slice.length - 1]!.day;
    months.push({
      month,
      from: first,
      to: last,
      days: daysBetweenInclusive(first, last),
      metrics: sumRows(names, slice.map((row) => row.metrics)),
      adjustments: sumRows(names, slice.map((row) => row.adjustments)),
      totals: sumRows(names, slice.map((row) => row.totals)),
    });
    start = end + 1;
  }
  return months;
}

function addInto(byDay: Map<string, Map<string, number>>, day: string, values: Iterable<[string, number]>): void {
  let target = byDay.get(day);
  if (target === undefined) byDay.set(day, (target = new Map()));
  for (const [name, value] of values) {
    if (Number.isFinite(value)) target.set(name, (target.get(name) ?? 0) + value);
  }
}

function period<T extends object>(
  head: T,
  names: readonly string[],
  measured: ReadonlyMap<string, number> | undefined,
  adjusted: ReadonlyMap<string, number> | undefined,
): T & PeriodUsage {
  const metrics = valuesOf(names, measured);
  const adjustments = valuesOf(names, adjusted);
  return { ...head, metrics, adjustments, totals: addValues(names, metrics, adjustments) };
}

function valuesOf(names: readonly string[], source: ReadonlyMap<string, number> | undefined): MetricValues {
  return Object.fromEntries(names.map((name) => [name, source?.get(name) ?? 0]));
}

function addValues(names: readonly string[], a: MetricValues, b: MetricValues): MetricValues {
  return Object.fromEntries(names.map((name) => [name, (a[name] ?? 0) + (b[name] ?? 0)]));
}

function sumRows(names: readonly string[], rows: readonly MetricValues[]): MetricValues {
  return Object.fromEntries(names.map((name) => [name, rows.reduce((sum, row) => sum + (row[name] ?? 0), 0)]));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
