import { ACCOUNT_ID_RULE, isValidAccountId } from '../domain/account-id';
import { supportedDay } from '../domain/days';
import { ValidationError } from '../domain/errors';

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

/** A number above zero, such as a rate per second. */
export const positiveNumber: ValueReader<number> = (text, flag) => {
  const value = finiteNumber(text, flag);
  if (!(value > 0)) throw new ValidationError(`${flag} must be a positive number, got "${text}"`);
  return value;
};

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

/** Refuses a day range that ends before it starts. */
export function checkDayRange(range: { from?: string; to?: string }): void {
  if (range.from !== undefined && range.to !== undefined && range.to < range.from) {
    throw new ValidationError(`--to ${range.to} is before --from ${range.from}`);
  }
}
