import { ACCOUNT_ID_RULE, isValidAccountId } from './account-id';
import { isValidDay } from './days';
import { ValidationError } from './errors';
import { isShardMetric } from './keys';
import { METRIC_NAME } from './metric-rules';

/**
 * An operator's correction to one metric of one account-day. It never touches the
 * measured counters: it is its own item, read next to them and added in totals, so
 * the history shows what was measured and what was corrected, by whom and why.
 * The id makes it idempotent: recording the same id again changes nothing.
 */
export interface Adjustment {
  readonly account: string;
  readonly day: string;
  readonly adjustmentId: string;
  readonly metric: string;
  /** Added to the metric's total; negative to take away. */
  readonly delta: number;
  readonly reason: string;
}

/** An adjustment as stored: who recorded it and when. */
export interface RecordedAdjustment extends Adjustment {
  readonly createdAt: string;
  readonly actor: string;
}

const ADJUSTMENT_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
export const MAX_REASON_LENGTH = 500;

/**
 * The largest correction, either way: 10^15 (a petabyte in bytes). Far above any real
 * account-day, far below where sums stop being exact (`Number.MAX_SAFE_INTEGER`, about
 * 9 * 10^15), so a day's totals stay exact however many corrections it has.
 */
export const MAX_ADJUSTMENT_DELTA = 1_000_000_000_000_000;

export const ADJUSTMENT_ID_RULE =
  'an adjustment id is 1-128 characters of letters, digits, ".", "_", ":" or "-", starting with a letter or digit (e.g. INC-2041 or 2026-11-credit-1)';

/**
 * Checks an adjustment before anything is written, naming the first problem.
 *
 * @example validateAdjustment({ account: 'acme', day: '2026-11-21', adjustmentId: 'INC-2041',
 *          metric: 'requests', delta: -1200, reason: 'synthetic load test' })
 */
export function validateAdjustment(input: Adjustment): Adjustment {
  if (!isValidAccountId(input.account)) throw new ValidationError(`invalid account id: ${ACCOUNT_ID_RULE}`);
  if (!isValidDay(input.day)) throw new ValidationError(`day "${input.day}" is not a calendar day (YYYY-MM-DD)`);
  if (!ADJUSTMENT_ID.test(input.adjustmentId)) throw new ValidationError(`invalid id "${input.adjustmentId}": ${ADJUSTMENT_ID_RULE}`);
  if (!METRIC_NAME.test(input.metric) || !isShardMetric(input.metric)) {
    throw new ValidationError(`metric "${input.metric}" is not a metric name (${METRIC_NAME.source})`);
  }
  if (!Number.isSafeInteger(input.delta) || input.delta === 0 || Math.abs(input.delta) > MAX_ADJUSTMENT_DELTA) {
    throw new ValidationError(
      `delta must be a non-zero whole number from -${MAX_ADJUSTMENT_DELTA.toLocaleString('en-US')} to ${MAX_ADJUSTMENT_DELTA.toLocaleString('en-US')}, got ${String(input.delta)}`,
    );
  }
  const reason = input.reason.trim();
  if (reason.length === 0) throw new ValidationError('a reason is required: say why the count is corrected');
  if (reason.length > MAX_REASON_LENGTH) throw new ValidationError(`reason is longer than ${MAX_REASON_LENGTH} characters`);
  return { ...input, reason };
}

/**
 * Fields in which `stored` and `wanted` differ (day, metric, delta, reason); empty
 * when recording `wanted` again is the same correction.
 */
export function adjustmentDifferences(stored: Adjustment, wanted: Adjustment): string[] {
  const differences: string[] = [];
  if (stored.day !== wanted.day) differences.push(`day ${stored.day} vs ${wanted.day}`);
  if (stored.metric !== wanted.metric) differences.push(`metric ${stored.metric} vs ${wanted.metric}`);
  if (stored.delta !== wanted.delta) differences.push(`delta ${stored.delta} vs ${wanted.delta}`);
  if (stored.reason !== wanted.reason) differences.push(`reason "${stored.reason}" vs "${wanted.reason}"`);
  return differences;
}

/**
 * Why an adjustment may not be recorded as it stands: it would take the day's billable
 * total of its metric (measured usage plus earlier adjustments, `current`) below zero.
 * Undefined when it may (a positive delta, or a total that stays at zero or above).
 * A negative bill is almost always a typo in the delta (a digit too many, a sign).
 */
export function negativeTotalProblem(adjustment: Adjustment, current: number): string | undefined {
  const after = current + adjustment.delta;
  if (adjustment.delta > 0 || after >= 0) return undefined;
  const n = (value: number) => value.toLocaleString('en-US');
  return (
    `this would take the billable ${adjustment.metric} of ${adjustment.account} on ${adjustment.day} below zero: ` +
    `${n(current)} ${adjustment.delta < 0 ? '-' : '+'} ${n(Math.abs(adjustment.delta))} = ${n(after)}; ` +
    'check the delta, or pass --allow-negative to record it anyway'
  );
}
