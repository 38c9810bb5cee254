import { addDays, eachDay, SUPPORTED_DAYS } from '../days';
import { addHourSums, dayHours, HOURS_PER_DAY, type BackfillOfDay, type HourSums } from '../hours';
import { hourStartText, UTC_ZONE, zonedHours, type ZonedHour } from './time-zones';
import type { Granularity } from './usage-query';
import { buildUsageReport, type AdjustmentEntry, type DayStatus, type DayUsage, type MetricValues, type UsageReport, type UsageReportInput } from './usage-report';
import type { UsageRecord } from './usage-records';

/**
 * The read API's report by hour and in a time zone (`granularity=hour`, `tz=`), built
 * on the UTC report of usage-report.ts.
 *
 * - **Hours.** One row per UTC hour of the range, labelled in the zone
 *   (`2026-11-01T01:00:00-05:00`); 23 or 25 of them on daylight-saving days.
 * - **A day's hours are known** when its shards' hour sums cover the day (`hoursCoverDay`),
 *   or else when the hours `tally backfill --hours` recomputed (`DAY#<day>#H#00`), plus
 *   those the shards gained since (a late log counted with hours), do (`dayHours`). A day
 *   counted (in part) before Tally kept hours has neither: its hour rows and the zone's
 *   days and months that need them carry `null` figures and `hoursReason`, never zeros.
 * - **Adjustments** are dated by UTC day, not hour: a day's adjustments count in its
 *   first UTC hour (00:00 UTC), so a day's hours still sum to its totals, and a zone's
 *   day holds the adjustments of the UTC days whose midnight falls in it.
 * - **Days in a zone** are sums of whole UTC hours, so they touch two UTC days (one for
 *   UTC): a zone's day is `closed` only when every UTC day it touches is. Closing,
 *   revisions, late usage and Stripe stay on UTC days: `late` is given on UTC days only.
 * - **Every calendar day of the range has a row**, whatever its length: a day of 23 or 25
 *   hours (daylight saving) says so (`hoursInDay`), and a day the zone skipped (Pacific/Apia
 *   went from 2011-12-29 23:59:59 -10:00 to 2011-12-31 00:00 +14:00) is a row of zeros with
 *   `hoursInDay: 0`, never left out: the range's totals are the sums of the UTC hours it
 *   covers, day rows and all.
 */

/** One hour row: the UTC hour's sums, labelled by its start in the zone. */
export interface HourUsage {
  /** ISO 8601 with the zone's offset in force: `2026-11-01T01:00:00-05:00`. */
  readonly start: string;
  /** `null` when the hour's UTC day has no known hours (see `hoursReason`). */
  readonly metrics: MetricValues | null;
  /** The UTC day's adjustments in its 00:00 UTC hour, zeros in the others. */
  readonly adjustments: MetricValues | null;
  readonly totals: MetricValues | null;
  /** Why the hour's figures are unknown; absent when known. */
  readonly hoursReason?: string;
}

/** A row of `days` in a zone (UTC: the UTC day row of usage-report.ts, plus the hours marks). */
export interface ZonedDayUsage {
  readonly day: string;
  readonly status: DayStatus;
  readonly closedAt?: string;
  /** UTC days only (late usage is counted per UTC day). */
  readonly late?: MetricValues;
  /** `null` when the zone's day needs hours that are unknown (zones other than UTC). */
  readonly metrics: MetricValues | null;
  readonly adjustments: MetricValues | null;
  readonly totals: MetricValues | null;
  /** `null` when some hour of the day is unknown, with the reason in `hoursReason`; absent otherwise. */
  readonly hours?: null;
  readonly hoursReason?: string;
  /**
   * How many UTC hours the zone's day holds when not 24: 23 or 25 on daylight-saving days,
   * 0 on a day the zone skipped (Pacific/Apia's 2011-12-30). Zones other than UTC only.
   */
  readonly hoursInDay?: number;
}

/** A row of `months` in a zone. */
export interface ZonedMonthUsage {
  readonly month: string;
  readonly from: string;
  readonly to: string;
  readonly days: number;
  readonly metrics: MetricValues | null;
  readonly adjustments: MetricValues | null;
  readonly totals: MetricValues | null;
  readonly hoursReason?: string;
}

/** The JSON body of the read API: the UTC report's fields, in the zone, plus `timeZone` and `hours`. */
export interface ZonedUsageReport {
  readonly accountId: string;
  readonly from: string;
  readonly to: string;
  readonly granularity: Granularity;
  readonly timeZone: string;
  readonly metricNames: string[];
  readonly estimatedMetrics: string[];
  readonly days: ZonedDayUsage[];
  readonly hours?: HourUsage[];
  readonly months?: ZonedMonthUsage[];
  readonly totals: MetricValues | null;
  readonly measuredTotals: MetricValues | null;
  readonly adjustmentTotals: MetricValues | null;
  readonly adjustments: AdjustmentEntry[];
  readonly updatedAt: string | null;
}

/**
 * The UTC days to read for the zone's days `from`..`to`: the same days for UTC, one
 * more on each side otherwise (a zone's day lies within UTC days D-1..D+1).
 */
export function utcReadRange(query: { from: string; to: string; timeZone: string }): { from: string; to: string } {
  if (query.timeZone === UTC_ZONE) return { from: query.from, to: query.to };
  // Never past the supported days: nothing is stored on them (a zone's 2000-01-01 may begin on 1999-12-31 UTC).
  const from = addDays(query.from, -1);
  const to = addDays(query.to, 1);
  return { from: from < SUPPORTED_DAYS.first ? SUPPORTED_DAYS.first : from, to: to > SUPPORTED_DAYS.last ? SUPPORTED_DAYS.last : to };
}

/** A UTC day outside the supported days: nothing can be counted on it, so it is empty and final. */
function unsupportedDay(day: string, names: readonly string[]): DayUsage {
  const zeros = Object.fromEntries(names.map((name) => [name, 0]));
  return { day, status: 'closed', metrics: zeros, adjustments: { ...zeros }, totals: { ...zeros } };
}

/**
 * The report of the zone's days `from`..`to` at `granularity`, from the records of
 * {@link utcReadRange}. With `tz=UTC` and granularity `day` or `month` it is the UTC
 * report (plus `timeZone`), so existing answers keep their figures.
 */
export function buildZonedUsageReport(input: UsageReportInput & { readonly timeZone: string }): ZonedUsageReport {
  const zoned = input.timeZone !== UTC_ZONE;
  if (!zoned && input.granularity !== 'hour') return withZone(buildUsageReport(input), input.timeZone);
  const utc = buildUsageReport({ ...input, ...utcReadRange(input), granularity: 'day' });
  const names = utc.metricNames;
  const slots = zonedHours(input.timeZone, input.from, input.to);
  const edges = slots.flatMap((slot) => (slot.utcDay < SUPPORTED_DAYS.first || slot.utcDay > SUPPORTED_DAYS.last ? [unsupportedDay(slot.utcDay, names)] : []));
  const allDays = [...utc.days, ...new Map(edges.map((day) => [day.day, day])).values()];
  const known = hoursOfDays(input.records, allDays);
  const utcDays = new Map(allDays.map((day) => [day.day, day]));
  const days = zoned ? zonedDays(names, eachDay(input.from, input.to), slots, known, utcDays) : utc.days.map((day) => markHours(day, known.get(day.day)!));
  const measuredTotals = sumOrNull(names, days.map((row) => row.metrics));
  const adjustmentTotals = sumOrNull(names, days.map((row) => row.adjustments));
  const midnights = new Set(slots.flatMap((slot) => (slot.utcHour === 0 ? [slot.utcDay] : [])));
  return {
    accountId: input.accountId,
    from: input.from,
    to: input.to,
    granularity: input.granularity,
    timeZone: input.timeZone,
    metricNames: names,
    estimatedMetrics: utc.estimatedMetrics,
    days,
    ...(input.granularity === 'hour' ? { hours: slots.map((slot) => hourRow(names, utcDays.get(slot.utcDay)!, known.get(slot.utcDay)!, slot)) } : {}),
    ...(input.granularity === 'month' ? { months: zonedMonths(names, days) } : {}),
    totals: measuredTotals === null || adjustmentTotals === null ? null : add(names, measuredTotals, adjustmentTotals),
    measuredTotals,
    adjustmentTotals,
    adjustments: utc.adjustments.filter((entry) => midnights.has(entry.day)),
    updatedAt: utc.updatedAt,
  };
}

/** The UTC report with its zone named after the granularity (fields are added, never renamed). */
function withZone(report: UsageReport, timeZone: string): ZonedUsageReport {
  const { accountId, from, to, granularity, ...rest } = report;
  return { accountId, from, to, granularity, timeZone, ...rest };
}

/** What a UTC day's hours are: sums by UTC hour, or unknown and why. */
export type KnownHours = { readonly hours: HourSums } | { readonly unknown: string };

/**
 * Each UTC day's hours, as `dayHours` (hours.ts) chooses them: its shards' sums when
 * they cover the day, else the backfilled hours plus what the shards gained since the
 * backfill (a late log) when those do, else unknown, with the
 * reason, the day and the command that fills them.
 */
export function hoursOfDays(records: readonly UsageRecord[], days: readonly DayUsage[]): Map<string, KnownHours> {
  const shards = new Map<string, Record<number, Record<string, number>>>();
  const backfilled = new Map<string, BackfillOfDay>();
  for (const record of records) {
    if (record.kind === 'usage' && record.hours !== undefined) {
      let sums = shards.get(record.day);
      if (sums === undefined) shards.set(record.day, (sums = {}));
      addHourSums(sums, record.hours);
    } else if (record.kind === 'hours') {
      backfilled.set(record.day, record);
    }
  }
  const known = new Map<string, KnownHours>();
  for (const { day, metrics } of days) {
    const chosen = dayHours(metrics, shards.get(day) ?? {}, backfilled.get(day));
    known.set(
      day,
      chosen.hours !== null ? { hours: chosen.hours } : { unknown: `${day} (UTC): ${chosen.reason} (\`tally backfill --hours --from ${day} --to ${day}\`)` },
    );
  }
  return known;
}

function hourRow(names: readonly string[], day: DayUsage, hours: KnownHours, slot: ZonedHour): HourUsage {
  const start = hourStartText(slot);
  if ('unknown' in hours) return { start, metrics: null, adjustments: null, totals: null, hoursReason: hours.unknown };
  const metrics = values(names, hours.hours[slot.utcHour]);
  const adjustments = slot.utcHour === 0 ? { ...day.adjustments } : values(names, undefined);
  return { start, metrics, adjustments, totals: add(names, metrics, adjustments) };
}

/** A UTC day row, marked `hours: null` when its hours are unknown. */
function markHours(day: DayUsage, hours: KnownHours): ZonedDayUsage {
  return 'unknown' in hours ? { ...day, hours: null, hoursReason: hours.unknown } : day;
}

/**
 * The zone's days `calendar` (every day of the range, in order): each the sum of its UTC
 * hours in `slots` (a day's adjustments in its 00:00 UTC hour); closed when every UTC day
 * it touches is; unknown when one of them is. A day of other than 24 hours says how many
 * it has; a day with none (the zone skipped it) is zeros, closed (nothing can ever be
 * counted in it), never dropped.
 */
function zonedDays(
  names: readonly string[],
  calendar: readonly string[],
  slots: readonly ZonedHour[],
  known: ReadonlyMap<string, KnownHours>,
  utcDays: ReadonlyMap<string, DayUsage>,
): ZonedDayUsage[] {
  const slotsOf = new Map<string, ZonedHour[]>();
  for (const slot of slots) {
    const group = slotsOf.get(slot.day);
    if (group === undefined) slotsOf.set(slot.day, [slot]);
    else group.push(slot);
  }
  return calendar.map((day) => zonedDay(names, day, slotsOf.get(day) ?? [], known, utcDays));
}

/** One day of the zone from its UTC hours `group` (none: a day the zone skipped). */
function zonedDay(
  names: readonly string[],
  day: string,
  group: readonly ZonedHour[],
  known: ReadonlyMap<string, KnownHours>,
  utcDays: ReadonlyMap<string, DayUsage>,
): ZonedDayUsage {
  const touched = [...new Set(group.map((slot) => slot.utcDay))];
  const rows = touched.map((utcDay) => utcDays.get(utcDay)!);
  const closed = rows.every((row) => row.status === 'closed');
  const closedAts = rows.flatMap((row) => (row.closedAt === undefined ? [] : [row.closedAt]));
  const head = {
    day,
    status: closed ? ('closed' as const) : ('open' as const),
    ...(closed && rows.length > 0 && closedAts.length === rows.length ? { closedAt: closedAts.sort()[closedAts.length - 1]! } : {}),
    ...(group.length === HOURS_PER_DAY ? {} : { hoursInDay: group.length }),
  };
  const unknown = touched.map((utcDay) => known.get(utcDay)!).find((hours): hours is { unknown: string } => 'unknown' in hours);
  if (unknown !== undefined) return { ...head, metrics: null, adjustments: null, totals: null, hours: null, hoursReason: unknown.unknown };
  const metrics = values(names, undefined);
  const adjustments = values(names, undefined);
  for (const slot of group) {
    const sums = (known.get(slot.utcDay) as { hours: HourSums }).hours[slot.utcHour];
    if (sums !== undefined) for (const name of names) metrics[name]! += sums[name] ?? 0;
    if (slot.utcHour === 0) for (const name of names) adjustments[name]! += utcDays.get(slot.utcDay)!.adjustments[name] ?? 0;
  }
  return { ...head, metrics, adjustments, totals: add(names, metrics, adjustments) };
}

/** The zone's calendar months, each cut to the range; `null` figures when a day of it is unknown. */
function zonedMonths(names: readonly string[], days: readonly ZonedDayUsage[]): ZonedMonthUsage[] {
  const months: ZonedMonthUsage[] = [];
  let start = 0;
  while (start < days.length) {
    const month = days[start]!.day.slice(0, 7);
    let end = start;
    while (end + 1 < days.length && days[end + 1]!.day.slice(0, 7) === month) end++;
    const slice = days.slice(start, end + 1);
    const unknown = slice.find((row) => row.metrics === null)?.hoursReason;
    const head = { month, from: slice[0]!.day, to: slice[slice.length - 1]!.day, days: slice.length };
    months.push(
      unknown !== undefined
        ? { ...head, metrics: null, adjustments: null, totals: null, hoursReason: unknown }
        : {
            ...head,
            metrics: sumOrNull(names, slice.map((row) => row.metrics)),
            adjustments: sumOrNull(names, slice.map((row) => row.adjustments)),
            totals: sumOrNull(names, slice.map((row) => row.totals)),
          },
    );
    start = end + 1;
  }
  return months;
}

function values(names: readonly string[], source: Readonly<Record<string, number>> | undefined): MetricValues {
  return Object.fromEntries(names.map((name) => [name, source?.[name] ?? 0]));
}

function add(names: readonly string[], a: MetricValues, b: MetricValues): MetricValues {
  return Object.fromEntries(names.map((name) => [name, (a[name] ?? 0) + (b[name] ?? 0)]));
}

/** Each metric summed over the rows; `null` when any row is unknown. */
function sumOrNull(names: readonly string[], rows: readonly (MetricValues | null)[]): MetricValues | null {
  if (rows.some((row) => row === null)) return null;
  return Object.fromEntries(names.map((name) => [name, rows.reduce((sum, row) => sum + (row![name] ?? 0), 0)]));
}
