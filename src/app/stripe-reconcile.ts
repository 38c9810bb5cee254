import { isClosed } from '../domain/day-close';
import { eachDay } from '../domain/days';
import { TallyError } from '../domain/errors';
import { STRIPE_CUSTOMER_KEY, STRIPE_VALUE_KEY } from '../domain/stripe';
import { mapWithConcurrency } from './concurrency';
import type { StripeMeterInfo } from './ports';
import type { StripeSyncDeps } from './stripe-sync';

/** What `tally stripe check` finds wrong with the meter of one event name (empty: fine). */
export function meterProblems(eventName: string, meters: readonly StripeMeterInfo[]): string[] {
  const candidates = meters.filter((meter) => meter.eventName === eventName);
  const active = candidates.filter((meter) => meter.status === 'active');
  if (active.length === 0) return [candidates.length === 0 ? `no meter has event_name ${eventName}` : `the meter of ${eventName} is not active`];
  const meter = active[0]!;
  const problems: string[] = [];
  if (meter.eventTimeWindow !== 'day') problems.push(`${meter.id}: event_time_window is ${meter.eventTimeWindow ?? 'unset'}, needs day`);
  if (meter.formula !== 'sum') problems.push(`${meter.id}: default_aggregation.formula is ${meter.formula}, needs sum`);
  if (meter.customerKey !== STRIPE_CUSTOMER_KEY) problems.push(`${meter.id}: customer_mapping.event_payload_key is ${meter.customerKey}, needs ${STRIPE_CUSTOMER_KEY}`);
  if (meter.valueKey !== STRIPE_VALUE_KEY) problems.push(`${meter.id}: value_settings.event_payload_key is ${meter.valueKey}, needs ${STRIPE_VALUE_KEY}`);
  return problems;
}

/** One row of the reconciliation: Tally's billable total and Stripe's billed value of an account-day and metric. */
export interface StripeDrift {
  readonly account: string;
  readonly customer: string;
  readonly metric: string;
  readonly day: string;
  readonly tally: number;
  readonly stripe: number;
}

export interface StripeReconcileReport {
  readonly from: string;
  readonly to: string;
  /** Account-day-metric figures compared (closed days of linked accounts). */
  readonly compared: number;
  readonly drift: readonly StripeDrift[];
  /** Days of the range not closed yet (not compared: nothing is sent for them). */
  readonly openDays: readonly string[];
}

/**
 * Compares Stripe's day summaries (`value_grouping_window=day`) of every linked customer
 * and configured meter with Tally's billable totals (the API's `totals`: counters plus
 * adjustments) over the closed days of `from..to`. The figures are compared as they are:
 * a total Stripe cannot bill (below zero) is drift, never rounded or clamped into agreement.
 */
export async function reconcileStripe(deps: StripeSyncDeps, from: string, to: string): Promise<StripeReconcileReport> {
  const meters = await deps.api.meters();
  const meterIds: Record<string, string> = {};
  for (const [metric, eventName] of Object.entries(deps.meters)) {
    const meter = meters.find((m) => m.eventName === eventName && m.status === 'active');
    if (meter === undefined) throw new TallyError(`no active Stripe meter has event_name ${eventName}: run tally stripe check`);
    meterIds[metric] = meter.id;
  }
  const closedDays = new Set((await deps.closeStore.closedDays(from, to)).filter(isClosed).map((d) => d.day));
  const openDays = eachDay(from, to).filter((day) => !closedDays.has(day));
  const links = await deps.store.links();
  const rows: StripeDrift[] = [];
  // One read per account-day, whatever the number of metrics.
  const figures = new Map<string, ReturnType<typeof deps.closeStore.accountDay>>();
  const accountDay = (account: string, day: string) => {
    const key = `${account}\n${day}`;
    if (!figures.has(key)) figures.set(key, deps.closeStore.accountDay(account, day));
    return figures.get(key)!;
  };
  await mapWithConcurrency(links, deps.concurrency ?? 4, async (link) => {
    for (const [metric, meterId] of Object.entries(meterIds)) {
      const billed = await deps.api.daySummaries(meterId, link.customer, from, to);
      for (const day of closedDays) {
        const { counters } = await accountDay(link.account, day);
        const adjustments = (await deps.adjustments.list(link.account, day, day)).filter((a) => a.metric === metric).reduce((sum, a) => sum + a.delta, 0);
        // Tally's own figure, not what the sender could send: meterValue() turns a negative total into 0,
        // and comparing that would call -99,999,912 and 0 equal.
        rows.push({ account: link.account, customer: link.customer, metric, day, tally: (counters[metric] ?? 0) + adjustments, stripe: billed[day] ?? 0 });
      }
    }
  });
  rows.sort((a, b) => (a.account + a.metric + a.day < b.account + b.metric + b.day ? -1 : 1));
  return { from, to, compared: rows.length, drift: rows.filter((row) => row.tally !== row.stripe), openDays };
}
