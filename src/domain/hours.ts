/**
 * Usage by the hour. Every increment also adds its metrics to the UTC hours its
 * requests fall in, in the same conditional `UpdateItem` that adds them to the day, so
 * hours are exactly once whenever the day is. A usage shard keeps them as flat
 * attributes beside its day totals (`ADD` reaches only top-level attributes):
 *
 * ```
 * requests 1520   bytes 88143211        the shard's day totals (unchanged)
 * 05R 311   05B 17733020                hour 05 UTC: requests and bytes
 * 06R 1209  06B 70410191
 * 06authorization_requests 44           a configured metric in hour 06 UTC
 * ```
 *
 * An hour attribute is the two-digit UTC hour followed by the metric's short name: `R`
 * for requests, `B` for bytes, the metric's own name for configured metrics. Metric
 * names are lower case and start with a letter (`METRIC_NAME`), so an hour attribute
 * is never read as a metric, and `R`/`B` never clash with a configured metric.
 *
 * **Hours sum to the day.** For a day whose every increment carried hours, the hours of
 * each metric add up to its day total. A day counted before hours existed has fewer:
 * readers check the sum ({@link hoursCoverDay}) and say the hours are unknown rather
 * than show a partial split. `tally backfill --hours` recomputes such a day's hours
 * from its log objects into one item ({@link hoursBackfillSortKey}), written whole: the
 * hours of the whole day (every object, also those counted with hours), never a
 * remainder to add to the shards' hours. {@link dayHours} chooses which to show.
 */

export const HOURS_PER_DAY = 24;

/** Metric sums by UTC hour (0..23) of one day; an hour with nothing counted is absent. */
export type HourSums = Readonly<Record<number, Readonly<Record<string, number>>>>;

/** Short names of the base metrics (`BASE_METRICS`; test/unit/hours.test.ts checks that each has one). */
const SHORT_NAMES: Readonly<Record<string, string>> = { requests: 'R', bytes: 'B' };
const LONG_NAMES: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(SHORT_NAMES).map(([long, short]) => [short, long]));
const HOUR_ATTRIBUTE = /^([01]\d|2[0-3])([RB]|[a-z][a-z0-9_]*)$/;

/** The shard attribute that holds `metric`'s sum in UTC hour `hour` (`5, 'requests'` -> `05R`). */
export function hourAttribute(hour: number, metric: string): string {
  if (!Number.isInteger(hour) || hour < 0 || hour >= HOURS_PER_DAY) throw new RangeError(`hour ${hour} is not 0..23`);
  return `${String(hour).padStart(2, '0')}${SHORT_NAMES[metric] ?? metric}`;
}

/** The hour and metric an hour attribute names, or undefined for any other attribute. */
export function parseHourAttribute(attribute: string): { hour: number; metric: string } | undefined {
  const match = HOUR_ATTRIBUTE.exec(attribute);
  if (match === null) return undefined;
  const [, hour = '', name = ''] = match;
  return { hour: Number(hour), metric: LONG_NAMES[name] ?? name };
}

/** True when `attribute` is an hour attribute (never a metric, never a key). */
export function isHourAttribute(attribute: string): boolean {
  return HOUR_ATTRIBUTE.test(attribute);
}

/** Adds `from` into `into` (both by hour, then metric), returning `into`. */
export function addHourSums(into: Record<number, Record<string, number>>, from: HourSums): Record<number, Record<string, number>> {
  for (const [hour, metrics] of Object.entries(from)) {
    const sums = (into[Number(hour)] ??= {});
    for (const [metric, amount] of Object.entries(metrics)) sums[metric] = (sums[metric] ?? 0) + amount;
  }
  return into;
}

/** Each metric's total over all hours. */
export function hourTotals(hours: HourSums): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const metrics of Object.values(hours)) {
    for (const [metric, amount] of Object.entries(metrics)) totals[metric] = (totals[metric] ?? 0) + amount;
  }
  return totals;
}

/**
 * True when the hours account for the whole day: every metric of `day` (a counted
 * total) equals the sum of its hours, and no hour holds a metric the day lacks. False
 * for a day counted (in part) before hours existed.
 */
export function hoursCoverDay(day: Readonly<Record<string, number>>, hours: HourSums): boolean {
  const totals = hourTotals(hours);
  const names = new Set([...Object.keys(day), ...Object.keys(totals)]);
  for (const name of names) if ((day[name] ?? 0) !== (totals[name] ?? 0)) return false;
  return true;
}

/** The sort key, in the account's day range, of the hours `tally backfill --hours` recomputed for `day`. */
export function hoursBackfillSortKey(day: string): string {
  return `DAY#${day}#H#00`;
}

/** `hours` as attributes named like a shard's ({@link hourAttribute}); zero amounts are left out. */
export function hourSumsToAttributes(hours: HourSums): Record<string, number> {
  const attributes: Record<string, number> = {};
  for (const [hour, metrics] of Object.entries(hours)) {
    for (const [metric, amount] of Object.entries(metrics)) if (amount !== 0) attributes[hourAttribute(Number(hour), metric)] = amount;
  }
  return attributes;
}

/** The hour sums held by an item's hour attributes (any other attribute is ignored). */
export function hourSumsOfAttributes(attributes: Readonly<Record<string, number>>): Record<number, Record<string, number>> {
  const hours: Record<number, Record<string, number>> = {};
  for (const [attribute, amount] of Object.entries(attributes)) {
    const parsed = parseHourAttribute(attribute);
    if (parsed !== undefined) (hours[parsed.hour] ??= {})[parsed.metric] = amount;
  }
  return hours;
}

/** A day's hours as a reader shows them: known (and where from), or unknown and why. */
export type DayHours =
  | { readonly hours: HourSums; readonly source: 'shards' | 'backfill' }
  | { readonly hours: null; readonly reason: string };

/**
 * Which hours of a day to show, given its counted totals (every shard summed), the
 * shards' hour sums and the hours `tally backfill --hours` recomputed (when it ran):
 * the shards' when they cover the day (every increment carried hours); else the
 * recomputed ones when they cover it (they are the whole day's, never added to the
 * shards'); else none. Recomputed hours stop covering when usage reaches the day after
 * they were computed: they are then unknown until the backfill runs again.
 */
export function dayHours(totals: Readonly<Record<string, number>>, shards: HourSums, backfilled?: HourSums): DayHours {
  if (hoursCoverDay(totals, shards)) return { hours: shards, source: 'shards' };
  if (backfilled !== undefined && hoursCoverDay(totals, backfilled)) return { hours: backfilled, source: 'backfill' };
  return {
    hours: null,
    reason:
      backfilled === undefined
        ? 'counted (in part) before hours were kept (tally backfill --hours recomputes them) or from log lines with a date and no time of day (which have none)'
        : 'usage counted since tally backfill --hours recomputed them; run it again',
  };
}
