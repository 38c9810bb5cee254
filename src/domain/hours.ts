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
 * 06M0rbu 44                            a configured metric in hour 06 UTC (its code)
 * ```
 *
 * An hour attribute is the two-digit UTC hour followed by the metric's short name: `R`
 * for requests, `B` for bytes, and for a configured metric its code, `M` and four base-36
 * digits of a digest of its name ({@link metricCode}): `06M1x9z`, 7 bytes whichever the
 * name (DynamoDB bills every byte of every attribute name on every write, and a day of
 * `06authorization_requests` took a busy shard item past 1 KB: 2 WCU per increment). Every
 * writer and reader derives the code the same way, with no registry to read. A reader
 * decodes a code with the names of the item's own day totals (a shard that holds a
 * metric's hours holds its day total, written in the same `ADD`), so the hours of a
 * metric no longer configured still read. Configured metrics whose codes clash are
 * refused at config load (metric-rules.ts); a code the item's names do not decode, or
 * decode twice, stays a code, which no day total matches, so the day's hours read as
 * unknown, never as another metric's. Items written before the codes name the hour
 * with the metric's whole name (`06authorization_requests`) and still read, as do the
 * items `tally backfill --hours` writes, which keep whole names (they hold no day totals
 * to decode with). Metric names are lower case and start with a letter (`METRIC_NAME`),
 * so an hour attribute is never read as a metric, and `R`/`B`/`M…` never clash with one.
 *
 * **Hours sum to the day.** For a day whose every increment carried hours, the hours of
 * each metric add up to its day total. A day counted before hours existed has fewer:
 * readers check the sum ({@link hoursCoverDay}) and say the hours are unknown rather
 * than show a partial split. `tally backfill --hours` recomputes such a day's hours
 * from its log objects into one item ({@link hoursBackfillSortKey}), written whole: the
 * hours of the whole day (every object, also those counted with hours), never a
 * remainder to add to the shards' hours. Beside them it records the shards' own hour
 * sums as it read them with the counters they cover (`atShards`). Shards only grow (an
 * increment `ADD`s, nothing else writes them), so what the shards hold now beyond
 * `atShards` is exactly the hours of the increments counted since the backfill read the
 * counters (a late log): {@link dayHours} shows the backfilled hours plus those, and
 * the write path needs no read to tell a later increment from one already covered.
 */

export const HOURS_PER_DAY = 24;

/** Metric sums by UTC hour (0..23) of one day; an hour with nothing counted is absent. */
export type HourSums = Readonly<Record<number, Readonly<Record<string, number>>>>;

/** Short names of the base metrics (`BASE_METRICS`; test/unit/hours.test.ts checks that each has one). */
const SHORT_NAMES: Readonly<Record<string, string>> = { requests: 'R', bytes: 'B' };
const LONG_NAMES: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(SHORT_NAMES).map(([long, short]) => [short, long]));
const HOUR_ATTRIBUTE = /^([01]\d|2[0-3])([RB]|M[0-9a-z]{4}|[a-z][a-z0-9_]*)$/;
const METRIC_CODE = /^M[0-9a-z]{4}$/;
/** How a configured metric may be named (`METRIC_NAME` in metric-rules.ts); only such names decode a code. */
const METRIC_NAME_FORM = /^[a-z][a-z0-9_]*$/;
const CODE_DIGITS = 4;
const CODES = 36 ** CODE_DIGITS;

/**
 * The code that stands for configured metric `name` in its hour attributes: `M` and four
 * base-36 digits of the name's 32-bit FNV-1a digest (any fixed digest would do; this one
 * needs no library and reads the same in every runtime). 36^4 = 1,679,616 codes: two names
 * share one rarely, and config load refuses configured metrics that do.
 */
export function metricCode(name: string): string {
  let digest = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    digest ^= name.charCodeAt(i);
    digest = Math.imul(digest, 0x01000193) >>> 0;
  }
  return `M${(digest % CODES).toString(36).padStart(CODE_DIGITS, '0')}`;
}

/** The shard attribute that holds `metric`'s sum in UTC hour `hour` (`5, 'requests'` -> `05R`; a configured metric -> `05M0rbu`). */
export function hourAttribute(hour: number, metric: string): string {
  return `${hourPrefix(hour)}${SHORT_NAMES[metric] ?? metricCode(metric)}`;
}

/**
 * The hour attribute with the metric's whole name (`5, 'authorization_requests'` ->
 * `05authorization_requests`): how shards named configured metrics' hours before codes,
 * and how the backfilled-hours item names them (it holds no day totals to decode a code).
 */
export function namedHourAttribute(hour: number, metric: string): string {
  return `${hourPrefix(hour)}${SHORT_NAMES[metric] ?? metric}`;
}

function hourPrefix(hour: number): string {
  if (!Number.isInteger(hour) || hour < 0 || hour >= HOURS_PER_DAY) throw new RangeError(`hour ${hour} is not 0..23`);
  return String(hour).padStart(2, '0');
}

/**
 * The hour and metric an hour attribute names, or undefined for any other attribute.
 * For a coded attribute the metric is the code (`M0rbu`): {@link hourSumsOfAttributes}
 * decodes it with the item's names.
 */
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

/**
 * The metric names that decode codes among `names` (an item's attribute names): each
 * name that could be a configured metric's day total, by its code. A code two of them
 * share decodes to neither.
 */
function decoderOf(names: Iterable<string>): Map<string, string | undefined> {
  const decoder = new Map<string, string | undefined>();
  for (const name of names) {
    if (isHourAttribute(name) || !METRIC_NAME_FORM.test(name)) continue;
    const code = metricCode(name);
    decoder.set(code, decoder.has(code) ? undefined : name);
  }
  return decoder;
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

/**
 * `hours` as attributes with whole names ({@link namedHourAttribute}), as the
 * backfilled-hours item holds them; zero amounts are left out.
 */
export function hourSumsToAttributes(hours: HourSums): Record<string, number> {
  const attributes: Record<string, number> = {};
  for (const [hour, metrics] of Object.entries(hours)) {
    for (const [metric, amount] of Object.entries(metrics)) if (amount !== 0) attributes[namedHourAttribute(Number(hour), metric)] = amount;
  }
  return attributes;
}

/**
 * The hour sums held by an item's hour attributes (any other attribute is ignored),
 * coded or whole-named. A code is decoded with the item's other attribute names (a
 * shard's day totals); one they do not decode stays a code (the hours then cover no day).
 * An item with both names of one metric's hour (possible only across the change) adds them.
 */
export function hourSumsOfAttributes(attributes: Readonly<Record<string, number>>): Record<number, Record<string, number>> {
  const decoder = decoderOf(Object.keys(attributes));
  const hours: Record<number, Record<string, number>> = {};
  for (const [attribute, amount] of Object.entries(attributes)) {
    const parsed = parseHourAttribute(attribute);
    if (parsed === undefined) continue;
    const metric = METRIC_CODE.test(parsed.metric) ? (decoder.get(parsed.metric) ?? parsed.metric) : parsed.metric;
    const sums = (hours[parsed.hour] ??= {});
    sums[metric] = (sums[metric] ?? 0) + amount;
  }
  return hours;
}

/** A day's hours as a reader shows them: known (and where from), or unknown and why. */
export type DayHours =
  | {
      readonly hours: HourSums;
      readonly source: 'shards' | 'backfill';
      /** `backfill` only: the shards gained hours since the backfill (a late log), added to its recomputed ones. */
      readonly countedSince?: true;
    }
  | { readonly hours: null; readonly reason: string };

/** What a reader knows of a day's backfilled-hours item (`DAY#<day>#H#00`). */
export interface BackfillOfDay {
  /** The whole day's hours as the backfill recomputed them. */
  readonly hours: HourSums;
  /**
   * The shards' hour sums (every shard added) when the backfill read the counters its hours
   * cover; absent on items written before it was recorded.
   */
  readonly atShards?: HourSums;
}

/**
 * Which hours of a day to show, given its counted totals (every shard summed), the
 * shards' hour sums and the day's backfilled-hours item (when `tally backfill --hours`
 * wrote one):
 *
 * 1. the shards' hours when they cover the day (every increment carried hours);
 * 2. else the backfilled hours plus the hours the shards gained since the backfill read
 *    them ({@link hoursSinceBackfill}: a late log counted with hours), when that covers
 *    the day;
 * 3. else none: usage counted since the backfill without hours (a consumer of a version
 *    that kept none, lines with no time of day), or an item written before `atShards`
 *    was recorded whose hours no longer cover the day. Never the shards' hours with the
 *    rest guessed: a reader says unknown rather than put usage in the wrong hour.
 *
 * @example
 * // Backfill read the day at requests 10 (no hours in the shards), recomputed 4 in 09 and 6 in 13;
 * // then a late log added 5 requests in hour 20 (counted with hours):
 * dayHours({ requests: 15 }, { 20: { requests: 5 } }, { hours: { 9: { requests: 4 }, 13: { requests: 6 } }, atShards: {} })
 * // { hours: { 9: { requests: 4 }, 13: { requests: 6 }, 20: { requests: 5 } }, source: 'backfill', countedSince: true }
 */
export function dayHours(totals: Readonly<Record<string, number>>, shards: HourSums, backfilled?: BackfillOfDay): DayHours {
  if (hoursCoverDay(totals, shards)) return { hours: shards, source: 'shards' };
  if (backfilled !== undefined) {
    const since = backfilled.atShards === undefined ? {} : hoursSinceBackfill(shards, backfilled.atShards);
    if (since !== undefined) {
      const hours = addHourSums(addHourSums({}, backfilled.hours), since);
      if (hoursCoverDay(totals, hours)) return { hours, source: 'backfill', ...(Object.keys(since).length > 0 ? { countedSince: true as const } : {}) };
    }
  }
  return {
    hours: null,
    reason:
      backfilled === undefined
        ? 'counted (in part) before hours were kept (tally backfill --hours recomputes them) or from log lines with a date and no time of day (which have none)'
        : backfilled.atShards === undefined
          ? "usage counted since tally backfill --hours recomputed them; run it again (that run kept no record of the shards' hours)"
          : 'usage counted without hours since tally backfill --hours recomputed them (lines with no time of day, or a consumer that kept no hours); run it again',
  };
}

/**
 * The hours the shards gained since the backfill read them: `shards` minus `atShards`,
 * hour by hour (zeros left out); undefined when some hour holds less than it did, which
 * increments never cause (the shards were rewritten some other way: nothing to trust).
 */
export function hoursSinceBackfill(shards: HourSums, atShards: HourSums): HourSums | undefined {
  const since: Record<number, Record<string, number>> = {};
  for (let hour = 0; hour < HOURS_PER_DAY; hour++) {
    const now = shards[hour] ?? {};
    const then = atShards[hour] ?? {};
    for (const metric of new Set([...Object.keys(now), ...Object.keys(then)])) {
      const gained = (now[metric] ?? 0) - (then[metric] ?? 0);
      if (gained < 0) return undefined;
      if (gained > 0) (since[hour] ??= {})[metric] = gained;
    }
  }
  return since;
}
