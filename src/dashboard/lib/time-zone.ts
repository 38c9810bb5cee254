/**
 * The dashboard's time zone: which zones the selector offers (the account's when the API
 * names one, this browser's, UTC), which one a stored choice means, today's day in it,
 * and how an hour row of the API (`{"start": "2026-11-01T01:00:00-05:00", ...}`) is
 * labelled. The zone arithmetic itself is the API's: an hour's `start` already carries
 * its local day, hour and offset, so the page reads them off the text and never converts
 * an instant itself (a daylight-saving day simply has 23 or 25 rows).
 */

/** What the selector stores: the kind of zone, so "this browser" follows the browser. */
export type ZoneChoice = 'account' | 'browser' | 'utc';

/** One option of the time-zone selector. */
export interface ZoneOption {
  readonly choice: ZoneChoice;
  /** The IANA zone it stands for. */
  readonly zone: string;
  readonly label: string;
}

/** The longest range whose hours the range chart draws (7 × 25 bars at most). */
export const MAX_HOURLY_CHART_DAYS = 7;

/** True when this browser's Intl knows `zone` as an IANA time zone. */
export function isKnownZone(zone: string): boolean {
  if (zone === '' || zone.length > 64) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * The selector's options: the account's zone first when the API names one, this
 * browser's, then UTC; a zone already offered is not offered twice.
 */
export function zoneOptions(accountZone: string | null | undefined, browserZone: string | null | undefined): ZoneOption[] {
  const options: ZoneOption[] = [];
  const offered = (zone: string) => options.some((o) => o.zone === zone);
  if (accountZone && isKnownZone(accountZone) && accountZone !== 'UTC') options.push({ choice: 'account', zone: accountZone, label: `${accountZone} (the account's)` });
  if (browserZone && isKnownZone(browserZone) && browserZone !== 'UTC' && !offered(browserZone)) {
    options.push({ choice: 'browser', zone: browserZone, label: `${browserZone} (this browser)` });
  }
  options.push({ choice: 'utc', zone: 'UTC', label: 'UTC' });
  return options;
}

/**
 * The option a stored choice means among `options`: the stored one when offered (the
 * browser's zone may equal the account's: then the account's option stands for it),
 * else the account's zone, else UTC.
 */
export function pickZone(options: readonly ZoneOption[], stored: string | null | undefined, browserZone?: string | null): ZoneOption {
  const utc = options[options.length - 1] as ZoneOption;
  const found = options.find((o) => o.choice === stored);
  if (found) return found;
  if (stored === 'browser' && browserZone) {
    const same = options.find((o) => o.zone === browserZone);
    if (same) return same;
  }
  if (stored === 'utc') return utc;
  return options.find((o) => o.choice === 'account') ?? utc;
}

/** The calendar day (`YYYY-MM-DD`) it is in `zone` at `now`. */
export function todayIn(now: Date, zone: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(now);
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  return `${part('year')}-${part('month')}-${part('day')}`;
}

const START = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2}):\d{2}(?:\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** The local day, hour and UTC offset an hour's `start` names. */
export interface HourStart {
  readonly day: string;
  /** `01:00` */
  readonly time: string;
  /** `-05:00`; `+00:00` for `Z`. */
  readonly offset: string;
  /** Seconds since the epoch: where the bar goes. */
  readonly epochSeconds: number;
}

/** Reads an hour's `start` (ISO 8601 with the zone's offset), or throws for any other text. */
export function parseHourStart(start: string): HourStart {
  const match = START.exec(start);
  const epoch = Date.parse(start);
  if (match === null || Number.isNaN(epoch)) throw new Error(`not an hour start: ${JSON.stringify(start).slice(0, 60)}`);
  const [, day = '', hour = '', minute = '', offset = ''] = match;
  return { day, time: `${hour}:${minute}`, offset: offset === 'Z' ? '+00:00' : offset, epochSeconds: epoch / 1000 };
}

/** An hour row of the API: its start and metrics (null metrics: hours unknown). */
export interface HourRow {
  readonly start: string;
  readonly metrics: Readonly<Record<string, number>> | null;
}

/**
 * Each hour's label: its local time, with the offset added where the same time occurs
 * twice (the hour the clocks go back: `01:00 −04:00`, `01:00 −05:00`).
 */
export function hourLabels(rows: readonly HourRow[]): string[] {
  const starts = rows.map((row) => parseHourStart(row.start));
  const seen = new Map<string, number>();
  for (const s of starts) seen.set(`${s.day} ${s.time}`, (seen.get(`${s.day} ${s.time}`) ?? 0) + 1);
  return starts.map((s) => ((seen.get(`${s.day} ${s.time}`) ?? 0) > 1 ? `${s.time} ${s.offset.replace('-', '\u2212')}` : s.time));
}

/** The hour rows of one local day, in order. */
export function hoursOfDay<T extends HourRow>(rows: readonly T[], day: string): T[] {
  return rows.filter((row) => parseHourStart(row.start).day === day);
}

/**
 * What to say about a day's number of hours: a daylight-saving day has 23 or 25, a day
 * the zone skipped none (Pacific/Apia's 2011-12-30: the API's `hoursInDay: 0`); a whole
 * day has 24 and needs no words.
 */
export function hoursNote(count: number): string {
  if (count === 0) return 'No hours: this time zone skipped this day (its clocks jumped past it), so it holds no usage.';
  if (count === 23) return '23 hours: the clocks went forward an hour this day.';
  if (count === 25) return '25 hours: the clocks went back an hour this day, so one hour appears twice.';
  return '';
}

/**
 * Every how many hours an axis label goes when `count` bars share `room` labels: 1, 2,
 * 3, 6, 12 or 24 hours, so that labels fall on the same local times each day.
 */
export function hourLabelEvery(count: number, room: number): number {
  const fits = Math.max(1, room);
  return [1, 2, 3, 6, 12].find((step) => Math.ceil(count / step) <= fits) ?? 24;
}

/** A day row of an hourly report, as far as its hours go. */
export interface DayHours {
  readonly day: string;
  /** Null: this day was counted before hours existed; the reason says so. */
  readonly hours?: unknown;
  readonly reason?: string;
  readonly hoursReason?: string;
}

/** Why a day of an hourly report has no hours (`hours: null`), or null when it has them. */
export function missingHoursReason(day: DayHours): string | null {
  if (day.hours !== null) return null;
  return day.hoursReason ?? day.reason ?? 'its hours were not recorded (counted before hours existed)';
}

/** The account's own time zone, when the report names one. */
export function accountZoneOf(report: { readonly accountTimeZone?: string | null }): string | null {
  const zone = report.accountTimeZone;
  return typeof zone === 'string' && isKnownZone(zone) ? zone : null;
}

/** This browser's time zone (`America/New_York`), or UTC when it does not say. */
export function browserZone(): string {
  const zone = new Intl.DateTimeFormat().resolvedOptions().timeZone;
  return zone && isKnownZone(zone) ? zone : 'UTC';
}
