import { ACCOUNT_ID_RULE, isValidAccountId } from '../account-id';
import { addDays, dayOf, isSupportedDay } from '../days';
import { ValidationError } from '../errors';
import { printable } from '../printable';
import { METRIC_NAME } from '../logs/metric-rules';

/**
 * Quotas: a monthly allowance per account and metric, and the levels (percentages of
 * the allowance) at which a `usage.threshold` webhook fires once per UTC month.
 *
 * ```
 * allowance of (account, metric) = the account's own quota (tally quota set), else the default (TALLY_QUOTAS), else none
 * levels                         = the quota's own, else TALLY_QUOTA_LEVELS (80,100)
 * level L is crossed in month M  when  100 x month-to-date(M, adjustments included) >= L x allowance
 * ```
 */

/** Levels when neither the quota nor `TALLY_QUOTA_LEVELS` says otherwise. */
export const DEFAULT_QUOTA_LEVELS: readonly number[] = [80, 100];

/** A level is a whole percentage; above 100 alerts on overage (150: half as much again). */
export const MAX_QUOTA_LEVEL = 1000;

/** One allowance of a quota's history: in force from `from` until the next entry's `from`. */
export interface QuotaPeriod {
  /** First UTC month (`YYYY-MM`) the allowance applies to. */
  readonly from: string;
  /** The monthly allowance: at least 1. */
  readonly monthly: number;
  /** Its own levels; absent: the configured default levels. */
  readonly levels?: readonly number[];
}

/**
 * A quota as stored for one account and metric (`tally quota set`): its history of
 * allowances, oldest first, so that a month is always judged by the allowance in force
 * in it (a quota set in November says nothing about October).
 */
export interface Quota {
  readonly account: string;
  readonly metric: string;
  /** Sorted by `from`, one entry per month at most; never empty. */
  readonly history: readonly QuotaPeriod[];
  readonly updatedAt?: string;
  readonly updatedBy?: string;
}

/** A change of a quota (`tally quota set`): `period` applies from its month on. */
export interface QuotaChange {
  readonly account: string;
  readonly metric: string;
  readonly period: QuotaPeriod;
  readonly updatedAt: string;
  readonly updatedBy?: string;
}

/** The entry of `quota` in force in `month`; undefined when its history starts later. */
export function quotaInForce(quota: Pick<Quota, 'history'>, month: string): QuotaPeriod | undefined {
  let found: QuotaPeriod | undefined;
  for (const period of quota.history) if (period.from <= month) found = period;
  return found;
}

/** The quota `change` leaves: `previous`'s history with the change's period applied (see {@link withPeriod}). */
export function quotaAfter(change: QuotaChange, previous: Pick<Quota, 'history'> | undefined): Quota {
  return {
    account: change.account,
    metric: change.metric,
    history: withPeriod(previous?.history ?? [], change.period),
    updatedAt: change.updatedAt,
    ...(change.updatedBy === undefined ? {} : { updatedBy: change.updatedBy }),
  };
}

/**
 * The history after setting `period`: it holds from its month on, so it replaces the
 * entries from that month or later; earlier months keep the allowance they had.
 *
 * @example withPeriod([{ from: '2026-10', monthly: 1000 }], { from: '2026-11', monthly: 2000 }) // both, October keeps 1000
 */
export function withPeriod(history: readonly QuotaPeriod[], period: QuotaPeriod): QuotaPeriod[] {
  return [...history.filter((entry) => entry.from < period.from), period];
}

/** The allowance that applies to an account and metric, and where it comes from. */
export interface EffectiveQuota {
  readonly metric: string;
  readonly monthly: number;
  readonly levels: readonly number[];
  /** `account`: set for this account; `default`: from `TALLY_QUOTAS`. */
  readonly source: 'account' | 'default';
  /** For an account's own quota: the month its allowance has applied from. */
  readonly from?: string;
  readonly updatedAt?: string;
  readonly updatedBy?: string;
}

/** Default allowances for every account, per metric (`TALLY_QUOTAS`, e.g. `{"requests": 1000000}`). */
export type QuotaDefaults = Readonly<Record<string, number>>;

/** The record that a level was crossed: written once per (account, metric, month, level, allowance). */
export interface ThresholdCrossing {
  readonly account: string;
  readonly metric: string;
  /** `YYYY-MM` (UTC). */
  readonly month: string;
  readonly level: number;
  /** The allowance when the crossing was seen. */
  readonly allowance: number;
  /** Month-to-date usage when the crossing was seen. */
  readonly used: number;
  readonly crossedAt: string;
}

/** A crossing as stored, with how far its webhook event got. */
export interface RecordedCrossing extends ThresholdCrossing {
  /** When the event was handed to the webhook queue; absent while it is pending. */
  readonly notifiedAt?: string;
  /** When a run last took it on to enqueue it (a lease, so that two runs do not both send). */
  readonly sendingAt?: string;
  /**
   * When a run withdrew it unsent: its allowance or level was no longer in force (the
   * quota changed mid-month), so its event is never sent. A withdrawn record may be
   * written again if its allowance comes back in force and the level is reached.
   */
  readonly withdrawnAt?: string;
  /** True for a record stored before crossings were keyed by allowance (`...#080`, no `#<allowance>`): claimed and withdrawn under that key. */
  readonly levelKeyed?: true;
}

/** True when `crossing`'s allowance and level are those of `quota` (the quota in force in its month). */
export function crossingInForce(crossing: Pick<ThresholdCrossing, 'allowance' | 'level'>, quota: Pick<EffectiveQuota, 'monthly' | 'levels'> | undefined): boolean {
  return quota !== undefined && quota.monthly === crossing.allowance && quota.levels.includes(crossing.level);
}

/**
 * True when an alert already sent for `crossing` still stands for `level` under
 * `allowance`: its own allowance, or another one (changed mid-month) of which the usage
 * at that crossing had already reached `level`, so the level stayed reached throughout
 * (a lowered allowance does not alert 80% twice). An alert of 80% of 6,178 does not stand
 * for 80% of 1,000,000: that level alerts again when reached.
 */
export function alertStandsFor(crossing: RecordedCrossing, level: number, allowance: number): boolean {
  if (crossing.withdrawnAt !== undefined || crossing.level !== level) return false;
  if (crossing.allowance === allowance) return true;
  return crossing.notifiedAt !== undefined && reachedLevels(crossing.used, allowance, [level]).length === 1;
}

/** Checks a monthly allowance: a whole number of at least 1. */
export function validateAllowance(value: number, what = 'the monthly allowance'): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new ValidationError(`${what} must be a whole number of at least 1, got ${value}`);
  return value;
}

/** Checks a metric name (as `TALLY_METRICS` names them). */
export function validateMetricName(metric: string): string {
  if (!METRIC_NAME.test(metric)) throw new ValidationError(`metric "${printable(metric)}" must match ${METRIC_NAME.source}`);
  return metric;
}

/** Checks an account id. */
export function validateQuotaAccount(account: string): string {
  if (!isValidAccountId(account)) throw new ValidationError(`invalid account id "${account}": ${ACCOUNT_ID_RULE}`);
  return account;
}

/**
 * Parses a list of levels such as `80,100` or `50, 80, 100, 120`: whole percentages
 * from 1 to {@link MAX_QUOTA_LEVEL}, returned sorted and without repeats.
 */
export function parseQuotaLevels(text: string): number[] {
  const parts = text.split(',').map((part) => part.trim());
  const levels = parts.map((part) => {
    const level = Number(part);
    if (!/^\d+$/.test(part) || level < 1 || level > MAX_QUOTA_LEVEL) {
      throw new ValidationError(`a level is a whole percentage from 1 to ${MAX_QUOTA_LEVEL}, got "${part}" in "${text}"`);
    }
    return level;
  });
  return [...new Set(levels)].sort((a, b) => a - b);
}

/**
 * Parses `TALLY_QUOTAS`: a JSON object of default monthly allowances per metric, for
 * every account without its own quota of that metric.
 *
 * @example parseQuotaDefaults('{"requests": 1000000, "bytes": 50000000000}')
 */
export function parseQuotaDefaults(text: string | undefined): QuotaDefaults {
  if (text === undefined || text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ValidationError(`must be a JSON object such as {"requests": 1000000}: ${(error as Error).message}`, { cause: error });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ValidationError('must be a JSON object of monthly allowances per metric, such as {"requests": 1000000}');
  }
  const defaults: Record<string, number> = {};
  for (const [metric, value] of Object.entries(parsed)) {
    validateMetricName(metric);
    defaults[metric] = validateAllowance(value as number, `the allowance of "${metric}"`);
  }
  return defaults;
}

/**
 * The quotas that apply to one account in `month`: its own (stored) ones in force that
 * month, then the defaults for metrics it has none of. `TALLY_QUOTAS` has no history: a
 * default applies to every month, as configured now. Sorted by metric.
 */
export function effectiveQuotas(own: readonly Quota[], defaults: QuotaDefaults, levels: readonly number[], month: string): EffectiveQuota[] {
  const byMetric = new Map<string, EffectiveQuota>();
  for (const [metric, monthly] of Object.entries(defaults)) byMetric.set(metric, { metric, monthly, levels, source: 'default' });
  for (const quota of own) {
    const period = quotaInForce(quota, month);
    if (period === undefined) continue;
    byMetric.set(quota.metric, {
      metric: quota.metric,
      monthly: period.monthly,
      levels: period.levels ?? levels,
      source: 'account',
      from: period.from,
      ...(quota.updatedAt === undefined ? {} : { updatedAt: quota.updatedAt }),
      ...(quota.updatedBy === undefined ? {} : { updatedBy: quota.updatedBy }),
    });
  }
  return [...byMetric.values()].sort((a, b) => (a.metric < b.metric ? -1 : a.metric > b.metric ? 1 : 0));
}

/**
 * The levels `used` has reached against `allowance`, in integer arithmetic (no float
 * can put a crossing one unit early or late): level L is reached when
 * `100 x used >= L x allowance`.
 *
 * @example reachedLevels(800, 1000, [80, 100]) // [80]
 */
export function reachedLevels(used: number, allowance: number, levels: readonly number[]): number[] {
  if (allowance < 1) return [];
  return levels.filter((level) => BigInt(Math.trunc(used)) * 100n >= BigInt(level) * BigInt(allowance));
}

/** The UTC month (`YYYY-MM`) of a day or a time. */
export function monthOf(when: string | Date): string {
  return (typeof when === 'string' ? when : dayOf(when)).slice(0, 7);
}

/** First and last day of a month (`YYYY-MM`). */
export function monthDays(month: string): { first: string; last: string } {
  const first = `${month}-01`;
  const [year, number] = month.split('-').map(Number) as [number, number];
  const next = number === 12 ? `${year + 1}-01-01` : `${year}-${String(number + 1).padStart(2, '0')}-01`;
  return { first, last: addDays(next, -1) };
}

/** True for a `YYYY-MM` month. */
export function isValidMonth(value: string): boolean {
  return /^\d{4}-(0[1-9]|1[0-2])$/.test(value);
}

/** True for a `YYYY-MM` month whose days Tally supports (`SUPPORTED_DAYS`). */
export function isSupportedMonth(value: string): boolean {
  return isValidMonth(value) && isSupportedDay(`${value}-01`);
}

/**
 * Month-to-date usage of one metric against its allowance, and the linear projection
 * to the month's end (usage so far scaled by the whole month over the time elapsed).
 */
export interface QuotaStatus {
  readonly used: number;
  /** Null when the metric has no allowance. */
  readonly allowance: number | null;
  /** `used` as a percentage of the allowance, one decimal rounded down; null without an allowance. */
  readonly percent: number | null;
  /** `used` x (month length / time elapsed), rounded; equals `used` once the month is over. */
  readonly projected: number;
  /** Projected usage as a percentage of the allowance, one decimal rounded down; null without an allowance. */
  readonly projectedPercent: number | null;
  readonly levels: readonly number[];
  readonly source: EffectiveQuota['source'] | null;
  /**
   * Levels reached this month that count under the allowance in force (see
   * {@link alertStandsFor}), with when, and when their alert was handed to the webhook
   * queue (absent: pending).
   */
  readonly crossed: readonly CrossedLevel[];
  /**
   * The month's other crossings, kept as history: alerts sent under an earlier allowance
   * that no longer stand (raised since), and alerts withdrawn unsent (`withdrawnAt`) or
   * about to be (no `notifiedAt`) because their allowance is no longer in force.
   */
  readonly earlier: readonly CrossedLevel[];
}

/** A crossing as the API shows it. */
export interface CrossedLevel {
  readonly level: number;
  readonly crossedAt: string;
  readonly used: number;
  readonly allowance: number;
  readonly notifiedAt?: string;
  readonly withdrawnAt?: string;
}

/** The share of `month` elapsed at `now` (0 before it begins, 1 after it ends). */
export function monthElapsed(month: string, now: Date): number {
  const { first, last } = monthDays(month);
  const start = Date.parse(`${first}T00:00:00Z`);
  const end = Date.parse(`${addDays(last, 1)}T00:00:00Z`);
  return Math.min(1, Math.max(0, (now.getTime() - start) / (end - start)));
}

/** Linear projection of `used` to the end of `month`. */
export function projectToMonthEnd(used: number, month: string, now: Date): number {
  const elapsed = monthElapsed(month, now);
  return elapsed <= 0 ? used : Math.round(used / elapsed);
}

/**
 * `value` as a percentage of `allowance`, one decimal, rounded down: 9,999 of 10,000 is
 * 99.9%, never 100% while the 100% level (exact integer arithmetic) is not reached.
 */
export function percentOf(value: number, allowance: number): number {
  // Integer division, as for the levels: no float can round 99.99% up.
  return Number((BigInt(Math.trunc(value)) * 1000n) / BigInt(allowance)) / 10;
}

/**
 * The month-to-date status of every metric of `used` (and every metric with a quota),
 * for the read API and the dashboard: one source of the percentages and projection.
 */
export function quotaStatuses(input: {
  month: string;
  now: Date;
  used: Readonly<Record<string, number>>;
  quotas: readonly EffectiveQuota[];
  crossings: readonly RecordedCrossing[];
}): Record<string, QuotaStatus> {
  const metrics = new Set([...Object.keys(input.used), ...input.quotas.map((quota) => quota.metric)]);
  const statuses: Record<string, QuotaStatus> = {};
  for (const metric of metrics) {
    const used = input.used[metric] ?? 0;
    const quota = input.quotas.find((candidate) => candidate.metric === metric);
    const projected = projectToMonthEnd(used, input.month, input.now);
    const ofMetric = input.crossings.filter((crossing) => crossing.metric === metric && crossing.month === input.month).sort((a, b) => a.level - b.level || a.crossedAt.localeCompare(b.crossedAt));
    const stands = (crossing: RecordedCrossing) => quota !== undefined && quota.levels.includes(crossing.level) && alertStandsFor(crossing, crossing.level, quota.monthly);
    statuses[metric] = {
      used,
      allowance: quota?.monthly ?? null,
      percent: quota === undefined ? null : percentOf(used, quota.monthly),
      projected,
      projectedPercent: quota === undefined ? null : percentOf(projected, quota.monthly),
      levels: quota?.levels ?? [],
      source: quota?.source ?? null,
      crossed: ofMetric.filter(stands).map(crossedLevel),
      earlier: ofMetric.filter((crossing) => !stands(crossing)).map(crossedLevel),
    };
  }
  return statuses;
}

function crossedLevel({ level, crossedAt, used, allowance, notifiedAt, withdrawnAt }: RecordedCrossing): CrossedLevel {
  return {
    level,
    crossedAt,
    used,
    allowance,
    ...(notifiedAt === undefined ? {} : { notifiedAt }),
    ...(withdrawnAt === undefined ? {} : { withdrawnAt }),
  };
}
