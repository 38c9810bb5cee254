import { ValidationError } from '../domain/errors';
import { HOURS_PER_DAY, hourTotals, type HourSums } from '../domain/hours';
import type { AccountDayUsage } from '../domain/usage-tally';
import type { ValueReader } from './values';

/**
 * `tally count --granularity hour` and `--tz ZONE`: a count's UTC account-days and their
 * UTC hours (`AccountDayUsage.hours`, src/domain/hours.ts) regrouped into the days, and
 * hours, of a time zone, with the API's rules (docs/api.md): a day in a zone is the sum
 * of the whole UTC hours that fall in it (23 or 25 on daylight-saving days), and a zone
 * whose offset is not a whole number of hours (Asia/Kolkata +05:30) is refused. Usage of
 * lines with no time of day (a log with a date and no time) belongs to no hour: it is
 * reported apart, never spread over hours or guessed into a local day.
 */

/** What `--granularity` takes. */
export type CountGranularity = 'day' | 'hour';

export const UTC_ZONE = 'UTC';

/** `--granularity day|hour`; anything else exits 2 naming the choices. */
export const countGranularity: ValueReader<CountGranularity> = (text, flag) => {
  if (text === 'day' || text === 'hour') return text;
  throw new ValidationError(`${flag} must be "day" or "hour", got "${printable(text)}"`);
};

/** Longest zone name taken (IANA names are at most 32 characters today). */
const MAX_ZONE_LENGTH = 64;
const ZONE_SYNTAX = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+){0,2}$/;

/**
 * `--tz ZONE`: an IANA zone, bounded and checked before any use; its case is corrected
 * (`america/new_york` -> `America/New_York`) and a UTC alias is `UTC`, but an alias is
 * kept as written (`Asia/Kolkata`, which the platform may call `Asia/Calcutta`). The
 * platform's time-zone database decides, through `Intl.DateTimeFormat` (ECMA-402,
 * https://tc39.es/ecma402/#datetimeformat-objects).
 */
export const timeZone: ValueReader<string> = (text, flag) => {
  if (text.length > MAX_ZONE_LENGTH || !ZONE_SYNTAX.test(text)) {
    throw new ValidationError(`${flag} must be an IANA time zone such as America/New_York or UTC, got "${printable(text)}"`);
  }
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat('en-US', { timeZone: text }).resolvedOptions().timeZone;
  } catch {
    throw new ValidationError(`${flag}: unknown time zone "${printable(text)}"; give an IANA zone such as Europe/Berlin or UTC`);
  }
  return resolved === UTC_ZONE || resolved.toLowerCase() === text.toLowerCase() ? resolved : text;
};

/** One hour of usage: its start in the zone (`2026-11-01T01:00:00-05:00`). */
export interface AccountHourUsage {
  readonly account: string;
  /** The zone's day the hour is in. */
  readonly day: string;
  readonly start: string;
  readonly metrics: Record<string, number>;
}

/** A count regrouped into a zone. */
export interface ZonedUsage {
  /** Per account and day of the zone, in order. */
  readonly days: { account: string; day: string; metrics: Record<string, number> }[];
  /** Per account and hour with usage, in order (only when asked). */
  readonly hours: AccountHourUsage[];
  /** Per UTC account-day, the usage of lines with no time of day: in no hour, so in no day of another zone. */
  readonly timeless: { account: string; day: string; metrics: Record<string, number> }[];
}

/**
 * Regroups `usage` (UTC account-days with their UTC hours) into `zone`'s days and, with
 * `withHours`, hours. In UTC without hours the days are the count's own, lines with no
 * time included (the count as it always was). Throws a {@link ValidationError} for a
 * zone whose offset is not a whole number of hours at an hour with usage.
 */
export function zoneUsage(usage: readonly AccountDayUsage[], names: readonly string[], zone: string, withHours: boolean): ZonedUsage {
  const byDay = zone === UTC_ZONE && !withHours;
  const days = new Map<string, { account: string; day: string; metrics: Record<string, number> }>();
  const hours: AccountHourUsage[] = [];
  const timeless: ZonedUsage['timeless'] = [];
  const addDay = (account: string, day: string, metrics: Readonly<Record<string, number>>) => {
    const key = `${account}\u0000${day}`;
    const row = days.get(key) ?? { account, day, metrics: Object.fromEntries(names.map((name) => [name, 0])) };
    for (const name of names) row.metrics[name]! += metrics[name] ?? 0;
    days.set(key, row);
  };
  for (const row of usage) {
    if (byDay) {
      addDay(row.account, row.day, row.metrics);
      continue;
    }
    // A zone of sub-hour offsets is refused on any day counted, with hours or not.
    if (zone !== UTC_ZONE) for (const hour of [0, HOURS_PER_DAY - 1]) zonedStart(zone, row.day, hour);
    const rest = remainder(row.metrics, row.hours, names);
    if (rest !== undefined) {
      if (zone === UTC_ZONE) addDay(row.account, row.day, rest);
      timeless.push({ account: row.account, day: row.day, metrics: rest });
    }
    for (let hour = 0; hour < HOURS_PER_DAY; hour++) {
      const sums = row.hours[hour];
      if (sums === undefined) continue;
      const start = zonedStart(zone, row.day, hour);
      const day = start.slice(0, 10);
      const metrics = Object.fromEntries(names.map((name) => [name, sums[name] ?? 0]));
      addDay(row.account, day, metrics);
      if (withHours) hours.push({ account: row.account, day, start, metrics });
    }
  }
  const order = (a: { account: string; day: string }, b: { account: string; day: string }) => (a.account === b.account ? compare(a.day, b.day) : compare(a.account, b.account));
  hours.sort((a, b) => (a.account === b.account ? compare(instant(a.start), instant(b.start)) : compare(a.account, b.account)));
  return { days: [...days.values()].sort(order), hours, timeless };
}

/** The day's usage its hours do not hold (lines with no time), or undefined when they hold it all. */
function remainder(metrics: Readonly<Record<string, number>>, hours: HourSums, names: readonly string[]): Record<string, number> | undefined {
  const inHours = hourTotals(hours);
  const rest = Object.fromEntries(names.map((name) => [name, (metrics[name] ?? 0) - (inHours[name] ?? 0)]));
  return names.some((name) => rest[name] !== 0) ? rest : undefined;
}

/**
 * The start of UTC hour `hour` of `utcDay` in `zone`, ISO 8601 with the zone's offset
 * then (`2026-11-01T01:00:00-05:00`), as the API writes an hour's `start`.
 */
export function zonedStart(zone: string, utcDay: string, hour: number): string {
  const at = Date.parse(`${utcDay}T${String(hour).padStart(2, '0')}:00:00Z`);
  const offset = offsetSeconds(zone, at);
  if (offset % 3600 !== 0 || offsetSeconds(zone, at + 3599_000) !== offset) {
    throw new ValidationError(
      `time zone ${zone} is ${offsetText(offset)} from UTC at ${utcDay} ${String(hour).padStart(2, '0')}:00 UTC: Tally keeps usage by whole UTC hours, ` +
        `so days in a zone whose offset is not a whole number of hours (e.g. Asia/Kolkata +05:30, Asia/Kathmandu +05:45) cannot be made of them; use --tz UTC or a zone with whole-hour offsets`,
    );
  }
  return `${new Date(at + offset * 1000).toISOString().slice(0, 19)}${offsetText(offset)}`;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The zone's offset from UTC at `epochMs`, in seconds (New York in winter: -18000). */
function offsetSeconds(zone: string, epochMs: number): number {
  if (zone === UTC_ZONE) return 0;
  let formatter = formatters.get(zone);
  if (formatter === undefined) {
    const fields = { year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' } as const;
    formatter = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', ...fields });
    formatters.set(zone, formatter);
  }
  const part: Record<string, number> = {};
  for (const p of formatter.formatToParts(new Date(epochMs))) if (p.type !== 'literal') part[p.type] = Number(p.value);
  const local = Date.UTC(part.year ?? 0, (part.month ?? 1) - 1, part.day ?? 1, part.hour ?? 0, part.minute ?? 0, part.second ?? 0);
  return Math.round((local - Math.floor(epochMs / 1000) * 1000) / 1000);
}

function offsetText(offset: number): string {
  const magnitude = Math.abs(offset);
  return `${offset < 0 ? '-' : '+'}${String(Math.floor(magnitude / 3600)).padStart(2, '0')}:${String(Math.floor((magnitude % 3600) / 60)).padStart(2, '0')}`;
}

const instant = (start: string): number => Date.parse(start);

function compare<T extends string | number>(a: T, b: T): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function printable(value: string): string {
  const clean = value.replace(/[^\x20-\x7e]/g, '?');
  return clean.length > 40 ? `${clean.slice(0, 40)}...` : clean;
}
