import { addDays } from '../days';
import { ValidationError } from '../errors';
import { HOURS_PER_DAY } from '../hours';

/**
 * Days in a customer's time zone, made of Tally's UTC hours. Tally keeps each day's
 * sums by UTC hour (hours.ts), so a day in a zone is the sum of the whole UTC hours
 * that fall in it: 24 of them, 23 on the day clocks spring forward, 25 on the day they
 * fall back. That holds only while the zone's offset from UTC is a whole number of
 * hours: an hour of Asia/Kolkata (+05:30) straddles two UTC hours, and Tally has no
 * sub-hour buckets, so such a range is refused with a message saying so (see
 * {@link zonedHours}).
 *
 * Offsets come from the platform's time-zone database through `Intl.DateTimeFormat`
 * (ECMA-402, https://tc39.es/ecma402/#datetimeformat-objects): no dependency of ours.
 */

/** The default zone of the read API: days are UTC days. */
export const UTC_ZONE = 'UTC';

/** Longest zone name accepted (IANA names are at most 32 characters today). */
const MAX_ZONE_LENGTH = 64;
/** The spelling of an IANA zone name (`Area/Location[/Sub]`, `UTC`, `Etc/GMT+5`); the platform then decides. */
const ZONE_SYNTAX = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+){0,2}$/;

const SECONDS_PER_HOUR = 3600;
const MS_PER_HOUR = SECONDS_PER_HOUR * 1000;
const MS_PER_DAY = HOURS_PER_DAY * MS_PER_HOUR;

/** One formatter per zone (zones are validated first, so the map is bounded by the platform's zones). */
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(zone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(zone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(zone, formatter);
  }
  return formatter;
}

/**
 * The zone a `tz` query parameter names, in the platform's spelling when it differs
 * only in case (`america/new_york` -> `America/New_York`; any name of UTC, such as
 * `Etc/UTC`, -> `UTC`), else as given (`Asia/Kolkata`, which ICU calls by its older
 * alias `Asia/Calcutta`); absent or empty is UTC. An unknown zone, or text that is no zone name, is a {@link ValidationError}
 * naming `name` (the query parameter; `tally zone set` names its flag).
 */
export function parseTimeZone(value: string | undefined, name = 'query parameter "tz"'): string {
  // UTC itself (`tally count`'s default --tz) without asking Intl: the first DateTimeFormat
  // with a timeZone loads the platform's zone data, about a tenth of a fresh `tally count`
  // of a small file's CPU (issue 34). Intl answers "UTC" for it too.
  if (value === undefined || value === '' || value === UTC_ZONE) return UTC_ZONE;
  if (value.length > MAX_ZONE_LENGTH || !ZONE_SYNTAX.test(value)) {
    throw new ValidationError(`${name} must be an IANA time zone such as America/New_York or UTC, got "${printable(value)}"`);
  }
  try {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone: value }).resolvedOptions().timeZone;
    // The platform may name a zone by an older alias (ICU: Asia/Kolkata -> Asia/Calcutta); the caller's name is kept then.
    return resolved === UTC_ZONE || resolved.toLowerCase() === value.toLowerCase() ? resolved : value;
  } catch (error) {
    throw new ValidationError(`${name}: unknown time zone "${printable(value)}"; give an IANA zone such as Europe/Berlin or UTC`, { cause: error });
  }
}

/** The zone's offset from UTC at `epochMs`, in seconds (New York in winter: -18000). */
export function offsetSeconds(zone: string, epochMs: number): number {
  if (zone === UTC_ZONE) return 0;
  const at = Math.floor(epochMs / 1000) * 1000;
  const parts: Record<string, number> = {};
  for (const part of formatterOf(zone).formatToParts(new Date(at))) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  const local = Date.UTC(parts.year ?? 0, (parts.month ?? 1) - 1, parts.day ?? 1, parts.hour ?? 0, parts.minute ?? 0, parts.second ?? 0);
  return Math.round((local - at) / 1000);
}

/** One UTC hour of a zoned day range. */
export interface ZonedHour {
  /** The UTC day and hour (0..23) whose sums it holds. */
  readonly utcDay: string;
  readonly utcHour: number;
  /** The zone's day the hour falls in, `YYYY-MM-DD`. */
  readonly day: string;
  /** Its start (epoch milliseconds) and the zone's offset then, in seconds: see {@link hourStartText}. */
  readonly startMs: number;
  readonly offset: number;
}

/**
 * Every UTC hour of the zone's days `from`..`to`, in order: 24 a day, 23 or 25 on
 * daylight-saving days, each with the offset in force at its start. Throws a
 * {@link ValidationError} when the zone's offset is not a whole number of hours at some
 * instant of the range (Asia/Kolkata, Asia/Kathmandu; Australia/Lord_Howe in its
 * +10:30 winter and on its two change days), or changes within a UTC hour: such days are
 * not sums of UTC hours. The offset is read from the platform twice a UTC day, and each
 * hour of the days it changes on (a year is about 800 reads, not 8,800).
 */
export function zonedHours(zone: string, from: string, to: string): ZonedHour[] {
  const hours: ZonedHour[] = [];
  const days = new DayNames();
  // A zone's day D lies within UTC days D-1..D+1 (offsets are within -12..+14 hours).
  const first = Date.parse(`${addDays(from, -1)}T00:00:00Z`);
  const end = Date.parse(`${addDays(to, 2)}T00:00:00Z`);
  let atStart = offsetSeconds(zone, first);
  for (let dayStart = first; dayStart < end; dayStart += MS_PER_DAY) {
    const atNext = offsetSeconds(zone, dayStart + MS_PER_DAY);
    const steady = atStart === atNext;
    const utcDay = days.of(dayStart);
    for (let hour = 0; hour < HOURS_PER_DAY; hour++) {
      const start = dayStart + hour * MS_PER_HOUR;
      const offset = steady ? atStart : offsetSeconds(zone, start);
      const offsetAtEnd = steady ? atStart : offsetSeconds(zone, start + MS_PER_HOUR - 1000);
      const day = days.of(start + offset * 1000);
      const lastDay = offset % SECONDS_PER_HOUR === 0 && offsetAtEnd === offset ? day : days.of(start + MS_PER_HOUR - 1000 + offsetAtEnd * 1000);
      if ((day < from || day > to) && (lastDay < from || lastDay > to)) continue;
      if (offset % SECONDS_PER_HOUR !== 0 || offsetAtEnd !== offset) refuse(zone, day < from ? lastDay : day, offset % SECONDS_PER_HOUR !== 0 ? offset : offsetAtEnd);
      hours.push({ utcDay, utcHour: hour, day, startMs: start, offset });
    }
    atStart = atNext;
  }
  return hours;
}

/** `2026-11-01T01:00:00-05:00`: an hour's start as the zone's wall time and the offset in force. */
export function hourStartText(hour: Pick<ZonedHour, 'startMs' | 'offset'>): string {
  return `${new Date(hour.startMs + hour.offset * 1000).toISOString().slice(0, 19)}${offsetText(hour.offset)}`;
}

/** `YYYY-MM-DD` of instants, remembered per day (a range's hours name few days). */
class DayNames {
  private readonly names = new Map<number, string>();

  of(epochMs: number): string {
    const index = Math.floor(epochMs / MS_PER_DAY);
    let name = this.names.get(index);
    if (name === undefined) this.names.set(index, (name = new Date(index * MS_PER_DAY).toISOString().slice(0, 10)));
    return name;
  }
}

function refuse(zone: string, day: string, offset: number): never {
  throw new ValidationError(
    `time zone ${zone} is ${offsetText(offset)} from UTC on ${day}: Tally keeps usage by whole UTC hours, so days in a zone ` +
      `whose offset is not a whole number of hours (e.g. Asia/Kolkata +05:30, Asia/Kathmandu +05:45) cannot be made of them; ` +
      `ask with tz=UTC or a zone with whole-hour offsets`,
  );
}

/** `+05:30`, `-05:00`, `+00:00` (seconds, as some historical offsets have, are shown as `:ss`). */
export function offsetText(offset: number): string {
  const sign = offset < 0 ? '-' : '+';
  const magnitude = Math.abs(offset);
  const hh = String(Math.floor(magnitude / 3600)).padStart(2, '0');
  const mm = String(Math.floor((magnitude % 3600) / 60)).padStart(2, '0');
  const ss = magnitude % 60;
  return `${sign}${hh}:${mm}${ss === 0 ? '' : `:${String(ss).padStart(2, '0')}`}`;
}

function printable(value: string): string {
  const clean = value.replace(/[^\x20-\x7e]/g, '?');
  return clean.length > 40 ? `${clean.slice(0, 40)}...` : clean;
}
