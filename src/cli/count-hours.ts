import { addDays } from '../domain/days';
import { ValidationError } from '../domain/errors';
import { HOURS_PER_DAY, hourTotals, type HourSums } from '../domain/hours';
import { hourStartText, parseTimeZone, UTC_ZONE, zonedHours } from '../domain/reading/time-zones';
import type { AccountDayUsage } from '../domain/logs/usage-tally';
import type { ValueReader } from './values';

/**
 * `tally count --granularity hour` and `--tz ZONE`: a count's UTC account-days and their
 * UTC hours (`AccountDayUsage.hours`, src/domain/hours.ts) regrouped into the days, and
 * hours, of a time zone, with the API's rules (docs/api.md): a day in a zone is the sum
 * of the whole UTC hours that fall in it (23 or 25 on daylight-saving days), and a zone
 * whose offset is not a whole number of hours (Asia/Kolkata +05:30) is refused; the zone
 * rules are the API's own module, src/domain/reading/time-zones.ts. Usage of
 * lines with no time of day (a log with a date and no time) belongs to no hour: it is
 * reported apart, never spread over hours or guessed into a local day.
 */

/** What `--granularity` takes. */
export type CountGranularity = 'day' | 'hour';

export { UTC_ZONE };

/** `--granularity day|hour`; anything else exits 2 naming the choices. */
export const countGranularity: ValueReader<CountGranularity> = (text, flag) => {
  if (text === 'day' || text === 'hour') return text;
  throw new ValidationError(`${flag} must be "day" or "hour", got "${printable(text)}"`);
};

/**
 * `--tz ZONE`: an IANA zone, checked by the read API's own rule (`parseTimeZone`,
 * src/domain/reading/time-zones.ts: bounded, the platform's time-zone database decides, case
 * corrected, an alias kept as written), its message naming the flag.
 */
export const timeZone: ValueReader<string> = (text, flag) => {
  if (text === '') throw new ValidationError(`${flag} must be an IANA time zone such as America/New_York or UTC, got ""`);
  try {
    return parseTimeZone(text);
  } catch (error) {
    if (error instanceof ValidationError) throw new ValidationError(error.message.replace('query parameter "tz"', flag));
    throw error;
  }
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
    const slots = zonedHoursOfUtcDay(zone, row.day);
    const rest = remainder(row.metrics, row.hours, names);
    if (rest !== undefined) {
      if (zone === UTC_ZONE) addDay(row.account, row.day, rest);
      timeless.push({ account: row.account, day: row.day, metrics: rest });
    }
    for (let hour = 0; hour < HOURS_PER_DAY; hour++) {
      const sums = row.hours[hour];
      if (sums === undefined) continue;
      const { day, start } = slots.get(hour)!;
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
 * The zone's day and the start (ISO 8601 with the zone's offset then) of each UTC hour of
 * `utcDay`, by hour, as the read API labels its hours (`zonedHours` of
 * src/domain/reading/time-zones.ts over the zone's days `utcDay` - 1 .. `utcDay` + 1, which hold
 * all of them). Throws its ValidationError for a zone whose offset is not a whole number
 * of hours then (Asia/Kolkata +05:30, Asia/Kathmandu +05:45).
 */
export function zonedHoursOfUtcDay(zone: string, utcDay: string): Map<number, { day: string; start: string }> {
  const hours = new Map<number, { day: string; start: string }>();
  for (const hour of zonedHours(zone, addDays(utcDay, -1), addDays(utcDay, 1))) {
    if (hour.utcDay === utcDay) hours.set(hour.utcHour, { day: hour.day, start: hourStartText(hour) });
  }
  return hours;
}

const instant = (start: string): number => Date.parse(start);

function compare<T extends string | number>(a: T, b: T): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function printable(value: string): string {
  const clean = value.replace(/[^\x20-\x7e]/g, '?');
  return clean.length > 40 ? `${clean.slice(0, 40)}...` : clean;
}
