import { dayOf } from '../../domain/days';
import {
  effectiveQuotas,
  monthDays,
  monthOf,
  quotaStatuses,
  type EffectiveQuota,
  type QuotaDefaults,
  type QuotaStatus,
  type RecordedCrossing,
} from '../../domain/billing/quota';
import { buildUsageReport, type MetricValues } from '../../domain/reading/usage-report';
import type { QuotaStore, ThresholdStore, UsageReader } from '../ports';

/** What the read API needs to answer with allowances. */
export interface QuotaReadDeps {
  readonly quotas: QuotaStore;
  readonly thresholds: ThresholdStore;
  readonly defaults: QuotaDefaults;
  readonly levels: readonly number[];
}

/**
 * Month-to-date usage of an account: every metric, measured plus adjustments, from the
 * first of `month` through `through` (one Query of the account's days; no close records).
 * The evaluator and the read API both sum it here, so their figures are the same.
 */
export async function readMonthToDate(reader: UsageReader, account: string, month: string, through: string): Promise<MetricValues> {
  const { first } = monthDays(month);
  if (through < first) return {};
  const { records } = await reader.read(account, first, through, { closedDays: false });
  return buildUsageReport({ accountId: account, from: first, to: through, granularity: 'day', records }).totals;
}

/** The allowances of one account in force in `month`, and its crossings of that month. */
export async function accountQuotas(deps: QuotaReadDeps, account: string, month: string): Promise<{ quotas: EffectiveQuota[]; crossings: RecordedCrossing[] }> {
  const [own, crossings] = await Promise.all([deps.quotas.list(account), deps.thresholds.crossings(month, account)]);
  return { quotas: effectiveQuotas(own, deps.defaults, deps.levels, month), crossings };
}

/** The `quota` block of a usage report: this UTC month's usage against each allowance, and its projection. */
export interface QuotaBlock {
  readonly month: string;
  /** First day of the month and the last one counted (today). */
  readonly from: string;
  readonly to: string;
  /** The time the projection is made at. */
  readonly asOf: string;
  readonly metrics: Record<string, QuotaStatus>;
}

/** Reads and shapes the `quota` block of `account` at `now`. */
export async function quotaBlock(deps: QuotaReadDeps & { reader: UsageReader; metricNames: readonly string[] }, account: string, now: Date): Promise<QuotaBlock> {
  const month = monthOf(now);
  const today = dayOf(now);
  const [used, { quotas, crossings }] = await Promise.all([readMonthToDate(deps.reader, account, month, today), accountQuotas(deps, account, month)]);
  const every = Object.fromEntries(deps.metricNames.map((name) => [name, used[name] ?? 0]));
  return { month, from: monthDays(month).first, to: today, asOf: now.toISOString(), metrics: quotaStatuses({ month, now, used: { ...every, ...used }, quotas, crossings }) };
}
