import { ACCOUNT_ID_RULE, isValidAccountId } from '../domain/account-id';
import { supportedDay } from '../domain/days';
import { ValidationError } from '../domain/errors';
import { printable } from '../domain/printable';

/**
 * Readers of option values, shared by every command. Each takes the text and the
 * flag's name and returns the value or throws a {@link ValidationError} naming the
 * flag, which the CLI turns into exit code 2.
 */
export type ValueReader<T> = (text: string, flag: string) => T;

/** A calendar day, `YYYY-MM-DD`, within the days Tally supports (`SUPPORTED_DAYS`). */
export const day: ValueReader<string> = (text, flag) => supportedDay(text, flag);

/** A whole number from `min` to `max` (no upper bound when absent), e.g. `--concurrency` (1 to 64). */
export function integerFrom(min: number, max = Number.POSITIVE_INFINITY): ValueReader<number> {
  const range = max === Number.POSITIVE_INFINITY ? `of at least ${min}` : `from ${min} to ${max}`;
  return (text, flag) => {
    const value = Number(text);
    if (text.trim() === '' || !Number.isInteger(value) || value < min || value > max) {
      throw new ValidationError(`${flag} must be a whole number ${range}, got "${text}"`);
    }
    return value;
  };
}

/** Objects worked on at once by backfill and reconcile. */
export const concurrency = integerFrom(1, 64);

/** Any finite number (the capacity planner checks its own ranges). */
export const finiteNumber: ValueReader<number> = (text, flag) => {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value)) throw new ValidationError(`${flag} must be a number, got "${text}"`);
  return value;
};

/**
 * A number from `min` to `max`, fractions allowed, such as a rate per second. Bounded both
 * ways: a rate of 1e-300 a second spaced starts by more than setTimeout can wait (2^31 - 1
 * ms, https://nodejs.org/api/timers.html#settimeoutcallback-delay-args), which Node takes
 * as 1 ms, so the slowest pace asked for ran unpaced.
 */
export function numberFrom(min: number, max: number): ValueReader<number> {
  const range = `from ${min.toLocaleString('en-US', { maximumFractionDigits: 6 })} to ${max.toLocaleString('en-US')}`;
  return (text, flag) => {
    const value = Number(text);
    if (text.trim() === '' || !(value >= min && value <= max)) throw new ValidationError(`${flag} must be a number ${range}, got "${text}"`);
    return value;
  };
}

/** `backfill --rate`: objects a second, from one every 1,000 seconds to a million a second. */
export const ratePerSecond = numberFrom(0.001, 1_000_000);

/** A whole number with an optional sign (`-1200`, `+5`); the command bounds it (`tally adjust`: ±10^15). */
export const signedInteger: ValueReader<number> = (text, flag) => {
  if (!/^[+-]?\d+$/.test(text)) throw new ValidationError(`${flag} must be a whole number, got "${text}"`);
  return Number(text);
};

/** An account id, safe in keys and URLs. */
export const accountId: ValueReader<string> = (text, flag) => {
  if (!isValidAccountId(text)) throw new ValidationError(`${flag} "${text}": ${ACCOUNT_ID_RULE}`);
  return text;
};

/**
 * Words an operator writes into a record (`--reason`, `--actor`, `--subject`): trimmed,
 * 1 to `max` characters, with no control character (C0, DEL, C1: a newline or an escape
 * sequence would forge lines or repaint the terminal where records are listed) and no
 * lone surrogate (it has no UTF-8, and DynamoDB strings are UTF-8). Any other text goes.
 */
export function recordText(max: number): ValueReader<string> {
  return (text, flag) => {
    const value = text.trim();
    if (value.length === 0) throw new ValidationError(`${flag} must say something: it is kept in the record`);
    if (value.length > max) throw new ValidationError(`${flag} is ${value.length.toLocaleString('en-US')} characters; at most ${max} are kept`);
    if (CONTROL_OR_LONE_SURROGATE.test(value)) {
      throw new ValidationError(`${flag} "${printable(value)}" has a control character or a broken one (a lone surrogate); write it on one line of plain text`);
    }
    return value;
  };
}

/** A C0 or C1 control character, DEL, or a surrogate half without its other half. */
const CONTROL_OR_LONE_SURROGATE = /[\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** An SQS message id as `tally dlq list` shows it: 1 to 128 letters, digits, `-`, `_`, `.` or `:`. */
export const messageId: ValueReader<string> = (text, flag) => {
  if (!/^[A-Za-z0-9._:-]{1,128}$/.test(text)) throw new ValidationError(`${flag} "${printable(text)}" is not a message id (1 to 128 letters, digits, "-", "_", "." or ":")`);
  return text;
};

/** Refuses a day range that ends before it starts. */
export function checkDayRange(range: { from?: string; to?: string }): void {
  if (range.from !== undefined && range.to !== undefined && range.to < range.from) {
    throw new ValidationError(`--to ${range.to} is before --from ${range.from}`);
  }
}
