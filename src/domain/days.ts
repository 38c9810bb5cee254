/** UTC calendar days as `YYYY-MM-DD` strings, the unit every counter is kept in. */

import { ValidationError } from './errors';

const DAY_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;
const MS_PER_DAY = 86_400_000;

/**
 * The days Tally supports, both included: every day a user or tenant may name (API
 * query and path, CLI `--day`/`--from`/`--to`, adjustments, quotas) lies in this range.
 * The one source of this fact; docs/api.md and docs/operations.md quote it.
 *
 * Why bounded: a day string sorts as a date only while its year has four digits
 * (`"+010000-01-01" < "9999-12-31"`), and every loop over days must end.
 */
export const SUPPORTED_DAYS = { first: '2000-01-01', last: '2099-12-31' } as const;

/** `2000-01-01..2099-12-31`, as messages quote the range. */
export const SUPPORTED_DAYS_TEXT = `${SUPPORTED_DAYS.first}..${SUPPORTED_DAYS.last}`;

/**
 * {@link SUPPORTED_DAYS} as UTC day numbers (whole days since 1970-01-01, 10957..47481):
 * what a counter compares the day of an epoch timestamp with, without making its string.
 */
export const SUPPORTED_DAY_NUMBERS = {
  first: Date.parse(`${SUPPORTED_DAYS.first}T00:00:00Z`) / MS_PER_DAY,
  last: Date.parse(`${SUPPORTED_DAYS.last}T00:00:00Z`) / MS_PER_DAY,
} as const;

/** The most days any walk over days may take: the whole supported range. */
export const MAX_DAYS_WALKED = daysBetweenInclusive(SUPPORTED_DAYS.first, SUPPORTED_DAYS.last);

/**
 * True when `value` is a real calendar day such as `2024-02-29` (not `2023-02-29`),
 * any year from 0000 to 9999. Use {@link isSupportedDay} for what a user may name.
 */
export function isValidDay(value: string): boolean {
  const match = DAY_PATTERN.exec(value);
  if (!match) return false;
  const year = Number(match[1]);
  const month = Number(match[2]);
  const day = Number(match[3]);
  if (month < 1 || month > 12 || day < 1) return false;
  return day <= daysInMonth(year, month);
}

/** True when `value` is a calendar day within {@link SUPPORTED_DAYS}. */
export function isSupportedDay(value: string): boolean {
  return isValidDay(value) && value >= SUPPORTED_DAYS.first && value <= SUPPORTED_DAYS.last;
}

/**
 * What is wrong with `value` as a day a user names, or undefined when nothing is:
 * "is not a calendar day (YYYY-MM-DD)" or "is outside the days Tally supports, ...".
 * Callers put the name of the value in front (`--day "9999-12-31" is outside ...`).
 */
export function dayProblem(value: string): string | undefined {
  if (!isValidDay(value)) return 'is not a calendar day (YYYY-MM-DD)';
  if (!isSupportedDay(value)) return `is outside the days Tally supports, ${SUPPORTED_DAYS_TEXT}`;
  return undefined;
}

/**
 * `value` when it is a supported day; else a {@link ValidationError} naming it as
 * `what` (e.g. `day "9999-12-31" is outside the days Tally supports, 2000-01-01..2099-12-31`).
 */
export function supportedDay(value: string, what: string): string {
  const problem = dayProblem(value);
  if (problem !== undefined) throw new ValidationError(`${what} "${printableDay(value)}" ${problem}`);
  return value;
}

/** A day as a message may quote it: printable ASCII, at most 40 characters. */
export function printableDay(value: string): string {
  const clean = String(value).replace(/[^\x20-\x7e]/g, '?');
  return clean.length > 40 ? `${clean.slice(0, 40)}...` : clean;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** The UTC day of a timestamp. */
export function dayOf(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/**
 * `day` moved by `delta` days (negative goes back). Throws a RangeError when `day` is
 * not a calendar day or the result leaves years 0000-9999, where day strings stop
 * sorting as dates (`"+010000-01"`): a loop stepping with it cannot run past the end.
 */
export function addDays(day: string, delta: number): string {
  const millis = isValidDay(day) ? Date.parse(`${day}T00:00:00Z`) + delta * MS_PER_DAY : Number.NaN;
  const moved = Number.isFinite(millis) ? new Date(millis) : undefined;
  const result = moved === undefined || Number.isNaN(moved.getTime()) ? '' : dayOf(moved);
  if (!isValidDay(result)) throw new RangeError(`day ${printableDay(day)} moved by ${delta} days is not a day Tally can name`);
  return result;
}

/** Whole days from `from` to `to`, counting both ends (`to < from` gives 0 or less). */
export function daysBetweenInclusive(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / MS_PER_DAY) + 1;
}

/**
 * Every day from `from` to `to`, both included, in order. Both must be supported days
 * (a RangeError otherwise), so the walk takes at most {@link MAX_DAYS_WALKED} steps
 * whatever it is given.
 */
export function eachDay(from: string, to: string): string[] {
  if (!isSupportedDay(from) || !isSupportedDay(to)) {
    throw new RangeError(`days ${printableDay(from)}..${printableDay(to)} are outside the days Tally supports, ${SUPPORTED_DAYS_TEXT}`);
  }
  const count = Math.min(daysBetweenInclusive(from, to), MAX_DAYS_WALKED);
  const days: string[] = [];
  for (let i = 0; i < count; i++) days.push(i === 0 ? from : addDays(days[i - 1]!, 1));
  return days;
}

/**
 * Why a stored record is skipped: it names a day (or month) outside {@link SUPPORTED_DAYS},
 * as an older version could record. Every reader of stored days skips such a record with
 * this message and goes on, so one record can never stop the closer, the threshold
 * evaluator or `npm start`.
 *
 * @example skippedRecord('THRESHOLD#RECHECK month 9999-12', '9999-12')
 *   // 'skipped THRESHOLD#RECHECK month 9999-12: 9999-12 is outside the days Tally supports, 2000-01-01..2099-12-31 (an older version recorded it)'
 */
export function skippedRecord(record: string, day: string): string {
  return `skipped ${record}: ${printableDay(day)} is outside the days Tally supports, ${SUPPORTED_DAYS_TEXT} (an older version recorded it)`;
}
