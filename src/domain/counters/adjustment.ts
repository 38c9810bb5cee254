import { ACCOUNT_ID_RULE, isValidAccountId } from '../account-id';
import { supportedDay } from '../days';
import { ValidationError } from '../errors';
import { printable } from '../printable';
import { isShardMetric } from './keys';
import { METRIC_NAME } from '../logs/metric-rules';

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
  /** Set on a revert (`tally adjustments revert`): the id of the adjustment it takes back. */
  readonly revertOf?: string;
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
 * 9 * 10^15). Ten corrections of it would pass that on one day, so a correction whose
 * day total would is refused too ({@link inexactTotalProblem}).
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
  supportedDay(input.day, 'day');
  if (input.revertOf === undefined) {
    if (!ADJUSTMENT_ID.test(input.adjustmentId)) throw new ValidationError(`invalid id "${printable(input.adjustmentId, 140)}": ${ADJUSTMENT_ID_RULE}`);
    if (input.adjustmentId.startsWith(REVERT_PREFIX)) {
      throw new ValidationError(`ids starting with "${REVERT_PREFIX}" are kept for tally adjustments revert: choose another id`);
    }
  } else if (input.adjustmentId !== revertIdOf(input.revertOf) || !ADJUSTMENT_ID.test(input.revertOf)) {
    throw new ValidationError(`a revert of "${printable(input.revertOf, 140)}" has the id "${printable(revertIdOf(input.revertOf), 140)}"`);
  }
  if (!METRIC_NAME.test(input.metric) || !isShardMetric(input.metric)) {
    throw new ValidationError(`metric "${printable(input.metric)}" is not a metric name (${METRIC_NAME.source})`);
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

/**
 * Why a correction must not be recorded whatever the flags: it would take its day's billable
 * total of its metric (`current`, measured plus earlier corrections) past
 * `Number.MAX_SAFE_INTEGER`, where sums stop being exact (before: ten `tally adjust --delta
 * 1000000000000000` with ten ids were all recorded, 10^16 on one day). A correction toward
 * zero always passes.
 */
export function inexactTotalProblem(adjustment: Adjustment, current: number): string | undefined {
  const after = current + adjustment.delta;
  if (Number.isSafeInteger(after) || Math.abs(after) < Math.abs(current)) return undefined;
  const n = (value: number) => value.toLocaleString('en-US');
  return (
    `this would take the billable ${adjustment.metric} of ${adjustment.account} on ${adjustment.day} to ${n(after)}, ` +
    `past ${n(Number.MAX_SAFE_INTEGER)}, where sums stop being exact: check the delta`
  );
}

/** True when `id` is a well-formed adjustment id (see {@link ADJUSTMENT_ID_RULE}). */
export function isValidAdjustmentId(id: string): boolean {
  return ADJUSTMENT_ID.test(id);
}

/** How the id of a revert starts: `revert:INC-2041` takes back `INC-2041`. */
export const REVERT_PREFIX = 'revert:';

/**
 * The id of the revert of `adjustmentId`: derived, never chosen, so an account holds at
 * most one revert of an adjustment (the id's reservation makes a second one "already
 * recorded", whoever runs it and however often).
 */
export function revertIdOf(adjustmentId: string): string {
  return `${REVERT_PREFIX}${adjustmentId}`;
}

/**
 * The compensating adjustment that takes `original` back: same account, day and metric,
 * the opposite delta, recorded as a revert of it. `why` is added to the reason.
 * A revert cannot itself be reverted (record a new correction instead).
 *
 * @example revertOf({ account: 'acme', day: '2026-11-21', adjustmentId: 'INC-2041', metric: 'requests', delta: -120, reason: 'x' })
 * // { ..., adjustmentId: 'revert:INC-2041', delta: 120, reason: 'revert of INC-2041', revertOf: 'INC-2041' }
 */
export function revertOf(original: Adjustment, why?: string): Adjustment {
  if (original.revertOf !== undefined || original.adjustmentId.startsWith(REVERT_PREFIX)) {
    throw new ValidationError(
      `${original.adjustmentId} is itself a revert${original.revertOf === undefined ? '' : ` of ${original.revertOf}`}: record a new correction with tally adjust instead`,
    );
  }
  const detail = why?.trim() ?? '';
  return validateAdjustment({
    account: original.account,
    day: original.day,
    adjustmentId: revertIdOf(original.adjustmentId),
    metric: original.metric,
    delta: -original.delta,
    reason: `revert of ${original.adjustmentId}${detail === '' ? '' : `: ${detail}`}`,
    revertOf: original.adjustmentId,
  });
}
