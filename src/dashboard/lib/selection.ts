/**
 * What the controls ask for, checked with the API's own rules before any request:
 * the account id rule, calendar days and the range limit come from `src/domain`,
 * bundled into `lib/` by the build, so the page and the API cannot disagree.
 */
import { ACCOUNT_ID_RULE, isValidAccountId } from '../../domain/account-id';
import { addDays, dayOf, daysBetweenInclusive, isSupportedDay, isValidDay, SUPPORTED_DAYS_TEXT } from '../../domain/days';
import { MAX_RANGE_DAYS } from '../../domain/reading/usage-query';
import { todayIn } from './time-zone';

export { MAX_RANGE_DAYS };

/** The date-range choices of the range selector. */
export type RangePreset = '7d' | '30d' | '90d' | 'this-month' | 'previous-month' | 'custom';

/** A range of UTC days, both ends included. */
export interface DayRange {
  readonly from: string;
  readonly to: string;
}

/** The controls' values as the page reads them. */
export interface SelectionInput {
  readonly account: string;
  readonly preset: string;
  /** The custom range's inputs (used only for `custom`). */
  readonly from: string;
  readonly to: string;
  readonly granularity: string;
  /** The current UTC day, which the presets end on. */
  readonly today: string;
}

/** A query the usage API will accept. */
export interface UsageSelection extends DayRange {
  readonly account: string;
  readonly granularity: 'day' | 'month';
}

export type SelectionResult = { readonly ok: true; readonly query: UsageSelection } | { readonly ok: false; readonly error: string };

/**
 * The days a preset covers, ending today (UTC); unknown presets mean the last 30 days.
 *
 * @example rangeFor('previous-month', '2026-03-15') // { from: '2026-02-01', to: '2026-02-28' }
 */
export function rangeFor(preset: string, today: string): DayRange {
  switch (preset) {
    case '7d':
      return { from: addDays(today, -6), to: today };
    case '90d':
      return { from: addDays(today, -89), to: today };
    case 'this-month':
      return { from: `${today.slice(0, 8)}01`, to: today };
    case 'previous-month': {
      const lastOfPrevious = addDays(`${today.slice(0, 8)}01`, -1);
      return { from: `${lastOfPrevious.slice(0, 8)}01`, to: lastOfPrevious };
    }
    default:
      return { from: addDays(today, -29), to: today };
  }
}

/** The query the controls describe, or a message saying what to fix. */
export function checkSelection(input: SelectionInput): SelectionResult {
  const account = input.account.trim();
  if (account === '') return { ok: false, error: 'Enter an account id.' };
  if (!isValidAccountId(account)) return { ok: false, error: `"${account}" is not an account id: ${ACCOUNT_ID_RULE}, with no "..".` };
  let range: DayRange;
  if (input.preset === 'custom') {
    if (!isValidDay(input.from) || !isValidDay(input.to)) return { ok: false, error: 'Pick both a start and an end day for the custom range.' };
    if (!isSupportedDay(input.from) || !isSupportedDay(input.to)) return { ok: false, error: `Pick days from ${SUPPORTED_DAYS_TEXT}.` };
    if (input.to < input.from) return { ok: false, error: 'The end day is before the start day.' };
    const days = daysBetweenInclusive(input.from, input.to);
    if (days > MAX_RANGE_DAYS) return { ok: false, error: `Pick at most ${MAX_RANGE_DAYS} days (this range has ${days}).` };
    range = { from: input.from, to: input.to };
  } else {
    range = rangeFor(input.preset, input.today);
  }
  const granularity = input.granularity === 'month' ? 'month' : 'day';
  return { ok: true, query: { account, from: range.from, to: range.to, granularity } };
}

/** The current UTC day. */
export function utcToday(now: Date): string {
  return dayOf(now);
}

/**
 * Counts of the current day still grow: CloudFront delivers its logs through the day and
 * after. The day is `zone`'s (UTC unless told).
 */
export function isDayInProgress(day: string, now: Date, zone = 'UTC'): boolean {
  return day === (zone === 'UTC' ? dayOf(now) : todayIn(now, zone));
}

/** Number of days in a range, both ends included. */
export function rangeLength(range: DayRange): number {
  return daysBetweenInclusive(range.from, range.to);
}

/** True when a month row covers less than its whole calendar month (the range cut it). */
export function isPartialMonth(row: { readonly month: string; readonly from: string; readonly to: string }): boolean {
  return row.from !== `${row.month}-01` || addDays(row.to, 1).slice(0, 7) === row.month;
}
