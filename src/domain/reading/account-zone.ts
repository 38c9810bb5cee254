import { addDays, SUPPORTED_DAYS } from '../days';
import { ValidationError } from '../errors';
import { parseTimeZone, UTC_ZONE, zonedHours } from './time-zones';

/**
 * An account's billing time zone: the zone its customer reads "yesterday" in. An
 * operator stores it (`tally zone set`); the read API names it in the usage report
 * (`accountTimeZone`) so the dashboard can offer it. It changes nothing else: `tz`
 * still defaults to UTC, and closed days, revisions and Stripe stay on UTC days.
 */

/** The account's stored zone, who set it and when. */
export interface AccountZone {
  readonly account: string;
  readonly zone: string;
  readonly updatedAt: string;
  readonly updatedBy?: string;
}

/**
 * Days on each side of today over which a zone to store must keep whole-hour offsets:
 * half a year each way covers a daylight-saving cycle (Lord Howe's +10:30 half, too).
 */
export const ZONE_CHECK_DAYS = 183;

/**
 * The zone `text` names, in the spelling the read API uses (`america/new_york` ->
 * `America/New_York`), when the read API could answer in it around `today`: a known
 * IANA zone whose offset is a whole number of hours every instant from
 * `today - ZONE_CHECK_DAYS` to `today + ZONE_CHECK_DAYS`. Otherwise a
 * {@link ValidationError} with the API's own reason (unknown zone, or the sub-hour
 * offset and the day it applies), naming `flag` for an unknown one. Empty text is
 * refused too: the API reads empty `tz` as UTC, but an operator who stores nothing
 * means `tally zone clear`.
 */
export function parseAccountZone(text: string, flag: string, today: string): string {
  const zone = accountZoneName(text, flag);
  if (zone === UTC_ZONE) return zone;
  const from = maxDay(addDays(today, -ZONE_CHECK_DAYS), SUPPORTED_DAYS.first);
  const to = minDay(addDays(today, ZONE_CHECK_DAYS), SUPPORTED_DAYS.last);
  zonedHours(zone, from, to);
  return zone;
}

/** The zone `text` names (see {@link parseAccountZone}), its offsets not checked: the name alone. */
export function accountZoneName(text: string, flag: string): string {
  if (text === '') throw new ValidationError(`${flag} must name an IANA time zone such as America/New_York; to remove an account's zone use tally zone clear`);
  return parseTimeZone(text, flag);
}

/**
 * The zone a stored item names, when it is still a zone the platform knows (a table
 * written by hand, or a platform whose time-zone database dropped a name, must not
 * fail a usage report): undefined otherwise.
 */
export function storedZone(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  try {
    return parseTimeZone(value);
  } catch {
    return undefined;
  }
}

function maxDay(a: string, b: string): string {
  return a > b ? a : b;
}

function minDay(a: string, b: string): string {
  return a < b ? a : b;
}
