import { isClosed } from '../../domain/billing/day-close';
import { addDays, dayOf, eachDay } from '../../domain/days';
import { TallyError } from '../../domain/errors';
import { compareEvents, firstDayOfPeriod, meterValue, STRIPE_CUSTOMER_KEY, STRIPE_VALUE_KEY, type StripeLink, type StripeOutboxRecord } from '../../domain/billing/stripe';
import { otherWindowHolding, windowKey, windowsOnStripe, type StripeWindow } from '../../domain/billing/stripe-hours';
import { ceilHour, periodHourTotals } from './stripe-hours';
import { mapWithConcurrency } from '../concurrency';
import type { StripeInvoiceInfo, StripeInvoiceItemInfo, StripeMeterApi, StripeMeterInfo } from '../ports';
import type { StripeSyncDeps } from './stripe-sync';

/**
 * What `tally stripe check` finds wrong with the meter of one event name (empty: fine). Its
 * event time window must be the one Tally sends (`TALLY_STRIPE_WINDOW`): a day meter given hour
 * events keeps only each day's last hour, an hour meter given day events bills each day's
 * total in its 00:00 hour (https://docs.stripe.com/billing/subscriptions/usage-based/recording-usage).
 */
export function meterProblems(eventName: string, meters: readonly StripeMeterInfo[], window: StripeWindow = 'day'): string[] {
  const candidates = meters.filter((meter) => meter.eventName === eventName);
  const active = candidates.filter((meter) => meter.status === 'active');
  if (active.length === 0) return [candidates.length === 0 ? `no meter has event_name ${eventName}` : `the meter of ${eventName} is not active`];
  const meter = active[0]!;
  const problems: string[] = [];
  if (meter.eventTimeWindow !== window) problems.push(`${meter.id}: event_time_window is ${meter.eventTimeWindow ?? 'unset'}, needs ${window}${window === 'day' ? '' : ' (TALLY_STRIPE_WINDOW)'}`);
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
  /**
   * Account-day-metric figures not compared: days on the meters of the other window (sent
   * before `TALLY_STRIPE_WINDOW` was switched), whose events the sender holds (docs/stripe.md#hour-windows).
   */
  readonly held: readonly Omit<StripeDrift, 'stripe'>[];
}

/**
 * Compares Stripe's day summaries (`value_grouping_window=day`) of every linked customer
 * and configured meter with Tally's billable totals (the API's `totals`: counters plus
 * adjustments) over the closed days of `from..to`. The figures are compared as they are:
 * a total Stripe cannot bill (below zero) is drift, never rounded or clamped into agreement.
 */
export async function reconcileStripe(deps: StripeSyncDeps, from: string, to: string): Promise<StripeReconcileReport> {
  const meterIds = await activeMeterIds(deps);
  const closedDays = new Set((await deps.closeStore.closedDays(from, to)).filter(isClosed).map((d) => d.day));
  const openDays = eachDay(from, to).filter((day) => !closedDays.has(day));
  const links = await deps.store.links();
  const rows: StripeDrift[] = [];
  const held: Omit<StripeDrift, 'stripe'>[] = [];
  // One read per account-day, whatever the number of metrics.
  const figures = new Map<string, ReturnType<typeof deps.closeStore.accountDay>>();
  const accountDay = (account: string, day: string) => {
    const key = `${account}\n${day}`;
    if (!figures.has(key)) figures.set(key, deps.closeStore.accountDay(account, day));
    return figures.get(key)!;
  };
  await mapWithConcurrency(links, deps.concurrency ?? 4, async (link) => {
    // The link never sends a day before its first one, nor (hour windows) the hours of that day before its first hour.
    const days = [...closedDays].filter((day) => link.from === undefined || day >= link.from);
    const firstHours = await linkFirstDayHours(deps, link);
    // One read of the link's outbox records: which days are on the other window's meters (held, as the sender holds them).
    const records = await deps.store.records(link.account, from, to);
    for (const [metric, meterId] of Object.entries(meterIds)) {
      const billed = await deps.api.daySummaries(meterId, link.customer, from, to);
      const onStripe = windowsOnStripe(records.filter((r) => r.metric === metric));
      for (const day of days) {
        const { counters } = await accountDay(link.account, day);
        const adjustments = (await deps.adjustments.list(link.account, day, day)).filter((a) => a.metric === metric).reduce((sum, a) => sum + a.delta, 0);
        // Tally's own figure, not what the sender could send: meterValue() turns a negative total into 0,
        // and comparing that would call -99,999,912 and 0 equal.
        const tally = day === link.from && firstHours !== undefined ? (firstHours[metric] ?? 0) : (counters[metric] ?? 0) + adjustments;
        if (otherWindowHolding(onStripe, day, deps.window ?? 'day') !== undefined) held.push({ account: link.account, customer: link.customer, metric, day, tally });
        else rows.push({ account: link.account, customer: link.customer, metric, day, tally, stripe: billed[day] ?? 0 });
      }
    }
  });
  rows.sort((a, b) => (a.account + a.metric + a.day < b.account + b.metric + b.day ? -1 : 1));
  held.sort((a, b) => (a.account + a.metric + a.day < b.account + b.metric + b.day ? -1 : 1));
  return { from, to, compared: rows.length, drift: rows.filter((row) => row.tally !== row.stripe), openDays, held };
}

/**
 * With hour windows, Tally's total of each metric over the hours of the link's first day that
 * the link sends (from `fromTime`, the current period's first whole hour at the link); undefined
 * when the link sends its first day whole.
 */
async function linkFirstDayHours(deps: StripeSyncDeps, link: StripeLink): Promise<Record<string, number> | undefined> {
  if (deps.window !== 'hour' || link.from === undefined || link.fromTime === undefined) return undefined;
  const dayStart = Date.parse(`${link.from}T00:00:00Z`) / 1000;
  if (link.fromTime <= dayStart) return undefined;
  return (await periodHourTotals(deps, link.account, link.fromTime, dayStart + 86_400)).totals;
}

/** The first second a link sends (its first hour, else its first day's midnight; 0: Stripe's window alone). */
function linkStart(link: StripeLink): number {
  return link.fromTime ?? (link.from === undefined ? 0 : Date.parse(`${link.from}T00:00:00Z`) / 1000);
}

/**
 * How late CloudFront usually delivers a period's standard log file: within an hour of the
 * requests it holds (https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/standard-logs-reference.html#access-logs-timing).
 * A running total thus lags counting by up to the interval plus this.
 */
export const LOG_DELIVERY_LAG_MINUTES = 60;

/**
 * The finalization delay (seconds after a period's end) that leaves no counted usage off its
 * invoice: with running totals, the interval plus the log delivery lag; without them, the
 * close grace plus the closer's hour.
 */
export function neededFinalizationDelay(runningMinutes: number, graceHours: number): number {
  return runningMinutes > 0 ? (runningMinutes + LOG_DELIVERY_LAG_MINUTES) * 60 : (graceHours + 1) * 3600;
}

/**
 * A finalization delay in whole hours and minutes, rounded down (`1 h`, `1 h 1 min`, `45 min`): a
 * delay a minute short of the one needed must not read as the same figure (tryout: `1.0 h` and `1.0 h`).
 */
function hours(seconds: number): string {
  const minutes = Math.floor(seconds / 60);
  if (minutes % 60 === 0) return `${minutes / 60} h`;
  return minutes < 60 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** What `tally stripe check` finds about one linked customer. */
export interface CustomerCheck {
  readonly account: string;
  readonly customer: string;
  readonly problems: readonly string[];
  /** The latest finalized invoice and how long after its period's end it was finalized. */
  readonly finalization?: { readonly invoice: string; readonly delaySeconds: number; readonly neededSeconds: number };
}

/**
 * Checks a linked customer against what Tally needs: a subscription item priced on each
 * configured meter (else the metric reaches no invoice), and a finalization delay of its
 * latest finalized invoice at least {@link neededFinalizationDelay}.
 */
export async function checkCustomer(api: StripeMeterApi, link: StripeLink, meterIds: Readonly<Record<string, string>>, runningMinutes: number, graceHours: number): Promise<CustomerCheck> {
  const problems: string[] = [];
  const items = (await api.subscriptionItems?.(link.customer)) ?? [];
  for (const [metric, meterId] of Object.entries(meterIds)) {
    if (!items.some((item) => item.meterId === meterId)) problems.push(`no subscription item on a price of meter ${meterId} (${metric}): its usage reaches no invoice`);
  }
  const latest = ((await api.invoices?.(link.customer)) ?? []).find((invoice) => invoice.finalizedAt !== null);
  if (latest === undefined) return { account: link.account, customer: link.customer, problems };
  const delaySeconds = latest.finalizedAt! - latest.periodEnd;
  const neededSeconds = neededFinalizationDelay(runningMinutes, graceHours);
  if (delaySeconds < neededSeconds) {
    problems.push(
      `invoice ${latest.id} was finalized ${hours(delaySeconds)} after its period ended; ` +
        (runningMinutes > 0 ? `running totals need ${hours(neededSeconds)} (every ${runningMinutes} min + ${LOG_DELIVERY_LAG_MINUTES} min of log delivery)` : `closed days need ${hours(neededSeconds)} (TALLY_STRIPE_RUNNING_MINUTES=0)`) +
        `: set Stripe's invoice finalization grace period to at least ${hours(neededSeconds)} (at most 72 h)`,
    );
  }
  return { account: link.account, customer: link.customer, problems, finalization: { invoice: latest.id, delaySeconds, neededSeconds } };
}

/**
 * The days a period [start, end) (unix seconds) bills: those whose midnight (where their
 * events are stamped) falls in it. A period starting at 10:00 UTC bills its first calendar
 * day's events in the period before, and its last calendar day (up to 10:00) here.
 */
export function daysOfPeriod(start: number, end: number): string[] {
  const first = firstDayOfPeriod(start);
  const lastMidnightBefore = dayOf(new Date((end - 1) * 1000));
  return first <= lastMidnightBefore ? eachDay(first, lastMidnightBefore) : [];
}

/** One row of `tally stripe reconcile --invoices`: a finalized invoice's line for a metric against Tally. */
export interface InvoiceComparison {
  readonly account: string;
  readonly customer: string;
  readonly invoice: string;
  readonly metric: string;
  /** The period's first and last day (see {@link daysOfPeriod}). */
  readonly from: string;
  readonly to: string;
  readonly tally: number;
  readonly meter: number;
  readonly invoiced: number;
  /** Tally's total less the invoice's quantity. */
  readonly difference: number;
  /** The part of the difference recorded as late usage (`stripe.late_usage` sent). */
  readonly recordedLate: number;
  /**
   * What Stripe's invoice items bill of the period's late usage (their units, a credit negative):
   * the items whose `metadata[tally_id]` is that of a late record of this invoice, metric and
   * meter, read from Stripe (`GET /v1/invoiceitems`), wherever they went (the next invoice).
   */
  readonly items: number;
  /** The units Tally's late records planned as invoice items (pending or created): what {@link items} should be. */
  readonly itemsPlanned: number;
  /** Why a row does not match although its figures might: an item twice at Stripe, one Tally created that Stripe lacks, one still pending. */
  readonly problems: readonly string[];
  /**
   * Tally's total of the period's days left out of `tally`: days on the meters of the other
   * window (sent before `TALLY_STRIPE_WINDOW` was switched), whose events of this window the
   * sender holds (docs/stripe.md#hour-windows).
   */
  readonly held: number;
}

/**
 * For each finalized invoice of a linked customer whose period meets `from..to`, compares
 * the quantity of its line for each configured metric's price, plus the invoice items Stripe
 * holds for the period's late usage, with Tally's billable total over the period's days (and the
 * meter's) that the link sends (from its first day or hour). What the line and the items leave
 * unbilled must be exactly the late usage recorded and not itemized (reported by webhook alone);
 * any other difference, an item twice at Stripe, or an item Tally planned that Stripe lacks, is
 * unexplained. Every figure is read from Stripe, each read retried with backoff
 * (SdkStripeMeterApi); a read that never succeeds stops the whole comparison with its error,
 * never a row compared against a figure not read.
 */
export async function reconcileInvoices(deps: StripeSyncDeps, from: string, to: string): Promise<{ compared: number; rows: InvoiceComparison[]; unexplained: InvoiceComparison[] }> {
  const meterIds = await activeMeterIds(deps);
  const rangeStart = Date.parse(`${from}T00:00:00Z`) / 1000;
  const rangeEnd = Date.parse(`${addDays(to, 1)}T00:00:00Z`) / 1000;
  const rows: InvoiceComparison[] = [];
  for (const link of await deps.store.links()) {
    const items = (await deps.api.subscriptionItems?.(link.customer)) ?? [];
    // An invoice of a period that ended before the link's first sent second billed nothing the link sends.
    const invoices = ((await deps.api.invoices?.(link.customer)) ?? []).filter(
      (i) => i.finalizedAt !== null && i.periodEnd > rangeStart && i.periodStart < rangeEnd && i.periodEnd > linkStart(link),
    );
    if (invoices.length === 0) continue;
    // A late item is created after its invoice was finalized, so after the period's end (5 minutes for clocks apart).
    const since = Math.min(...invoices.map((i) => i.periodEnd)) - 300;
    const stripeItems = (await deps.api.invoiceItems?.(link.customer, since)) ?? [];
    for (const invoice of invoices) rows.push(...(await compareInvoice(deps, link, invoice, items, meterIds, stripeItems)));
  }
  return { compared: rows.length, rows, unexplained: rows.filter((row) => !invoiceRowExplained(row)) };
}

/**
 * A row is explained when the invoice line and Stripe's invoice items bill Tally's total but for
 * the late usage recorded and not planned as an item (reported by webhook alone), and no item is
 * amiss. In webhook mode that is "the difference is the recorded late usage"; with invoice items
 * it is "line plus items bill Tally's total".
 */
export function invoiceRowExplained(row: Pick<InvoiceComparison, 'tally' | 'invoiced' | 'items' | 'recordedLate' | 'itemsPlanned' | 'problems'>): boolean {
  return row.problems.length === 0 && row.tally - row.invoiced - row.items === row.recordedLate - row.itemsPlanned;
}

async function compareInvoice(
  deps: StripeSyncDeps,
  link: StripeLink,
  invoice: StripeInvoiceInfo,
  items: readonly { priceId: string; meterId: string | null }[],
  meterIds: Readonly<Record<string, string>>,
  stripeItems: readonly StripeInvoiceItemInfo[],
): Promise<InvoiceComparison[]> {
  if (deps.window === 'hour') return compareInvoiceByHour(deps, link, invoice, items, meterIds, stripeItems);
  // The link never sends a day before its first one (tally stripe link --from inside a period).
  const days = daysOfPeriod(invoice.periodStart, invoice.periodEnd).filter((day) => link.from === undefined || day >= link.from);
  if (days.length === 0) return [];
  const first = days[0]!;
  const last = days[days.length - 1]!;
  const adjustments = await deps.adjustments.list(link.account, first, last);
  const records = await deps.store.records(link.account, first, last);
  const counters = new Map<string, Record<string, number>>();
  for (const day of days) counters.set(day, (await deps.closeStore.accountDay(link.account, day)).counters);
  const rows: InvoiceComparison[] = [];
  for (const [metric, meterId] of Object.entries(meterIds)) {
    const prices = new Set(items.filter((item) => item.meterId === meterId).map((item) => item.priceId));
    const line = invoice.lines.find((l) => l.priceId !== null && prices.has(l.priceId));
    if (line === undefined) continue;
    let tally = 0;
    let held = 0;
    const onStripe = windowsOnStripe(records.filter((r) => r.metric === metric));
    for (const day of days) {
      const adjusted = adjustments.filter((a) => a.day === day && a.metric === metric).reduce((sum, a) => sum + a.delta, 0);
      const value = Number(meterValue((counters.get(day)![metric] ?? 0) + adjusted));
      // As the sender: a day on the hour meters already is held, never sent to this one.
      if (otherWindowHolding(onStripe, day, 'day') === undefined) tally += value;
      else held += value;
    }
    const meter = Object.values(await deps.api.daySummaries(meterId, link.customer, first, last)).reduce((sum, v) => sum + v, 0);
    rows.push({ account: link.account, customer: link.customer, invoice: invoice.id, metric, from: first, to: last, tally, meter, invoiced: line.quantity, difference: tally - line.quantity, ...lateUsageOf(records, metric, invoice.id, deps.meters[metric]!, deps.window ?? 'day', stripeItems), held });
  }
  return rows;
}

/**
 * {@link compareInvoice} with hour windows: Tally's total over the hours the period holds
 * (`periodHourTotals`) against the meter's value over those hours and the invoice's line.
 */
async function compareInvoiceByHour(
  deps: StripeSyncDeps,
  link: StripeLink,
  invoice: StripeInvoiceInfo,
  items: readonly { priceId: string; meterId: string | null }[],
  meterIds: Readonly<Record<string, string>>,
  stripeItems: readonly StripeInvoiceItemInfo[],
): Promise<InvoiceComparison[]> {
  // Nor an hour before its first one.
  const start = Math.max(invoice.periodStart, linkStart(link));
  if (ceilHour(start) >= ceilHour(invoice.periodEnd)) return [];
  const first = dayOf(new Date(ceilHour(start) * 1000));
  const last = dayOf(new Date((ceilHour(invoice.periodEnd) - 1) * 1000));
  const records = await deps.store.records(link.account, first, last);
  // As the sender: the hours of a day on the day meters already are held, never sent to this one.
  const onStripe = new Map(Object.keys(meterIds).map((metric) => [metric, windowsOnStripe(records.filter((r) => r.metric === metric))]));
  const { from, to, totals, held } = await periodHourTotals(deps, link.account, start, invoice.periodEnd, (day, metric) => otherWindowHolding(onStripe.get(metric)!, day, 'hour') !== undefined);
  const rows: InvoiceComparison[] = [];
  for (const [metric, meterId] of Object.entries(meterIds)) {
    const prices = new Set(items.filter((item) => item.meterId === meterId).map((item) => item.priceId));
    const line = invoice.lines.find((l) => l.priceId !== null && prices.has(l.priceId));
    if (line === undefined) continue;
    const tally = totals[metric] ?? 0;
    const meter = deps.api.summaryOver === undefined ? 0 : await deps.api.summaryOver(meterId, link.customer, from, to);
    rows.push({ account: link.account, customer: link.customer, invoice: invoice.id, metric, from: first, to: last, tally, meter, invoiced: line.quantity, difference: tally - line.quantity, ...lateUsageOf(records, metric, invoice.id, deps.meters[metric]!, deps.window ?? 'day', stripeItems), held: held[metric] ?? 0 });
  }
  return rows;
}

/**
 * The late usage recorded against `invoice` for `metric`: per window (day or hour), the newest
 * reported total less what was billed. Only records of the meter compared (its event name) and of
 * the window Tally sends it (`TALLY_STRIPE_WINDOW`): after a switch of windows an invoice may bill
 * both the old meters and the new ones, and the other window's records were sent to the old
 * meters (their own invoice line) or refused, never to this one.
 */
function lateUsageOf(
  records: readonly StripeOutboxRecord[],
  metric: string,
  invoice: string,
  eventName: string,
  window: StripeWindow,
  stripeItems: readonly StripeInvoiceItemInfo[],
): Pick<InvoiceComparison, 'recordedLate' | 'items' | 'itemsPlanned' | 'problems'> {
  const newest = new Map<string, StripeOutboxRecord>();
  const ofThisMeter = records.filter((r) => r.metric === metric && r.invoice === invoice && r.eventName === eventName && (r.hour === undefined) === (window === 'day'));
  for (const record of [...ofThisMeter].sort(compareEvents)) newest.set(windowKey(record), record);
  const recordedLate = [...newest.values()].reduce((sum, r) => sum + (r.value - (r.billed ?? 0)), 0);
  // Every item a late record of this invoice planned (a superseded record's too: its item may be at Stripe), and what Stripe holds of each.
  let items = 0;
  let itemsPlanned = 0;
  const problems: string[] = [];
  for (const record of ofThisMeter) {
    const planned = record.item;
    if (planned === undefined || planned.state === 'webhook-only') continue;
    itemsPlanned += planned.units;
    const atStripe = stripeItems.filter((item) => item.tallyId === planned.tallyId);
    items += atStripe.reduce((sum, item) => sum + item.units, 0);
    if (atStripe.length > 1) problems.push(`invoice item ${planned.tallyId} is at Stripe ${atStripe.length} times (${atStripe.map((i) => i.id).join(', ')})`);
    else if (atStripe.length === 0) problems.push(planned.state === 'created' ? `invoice item ${planned.tallyId} (${planned.id ?? '?'}) is not at Stripe` : `invoice item ${planned.tallyId} is pending: not at Stripe yet (the sender retries it)`);
    else if (atStripe[0]!.units !== planned.units) problems.push(`invoice item ${atStripe[0]!.id} bills ${atStripe[0]!.units} unit(s), Tally planned ${planned.units}`);
  }
  return { recordedLate, items, itemsPlanned, problems };
}

/** The id of the active Stripe meter of each configured metric; a clear error naming the first one missing. */
async function activeMeterIds(deps: StripeSyncDeps): Promise<Record<string, string>> {
  const meters = await deps.api.meters();
  const meterIds: Record<string, string> = {};
  for (const [metric, eventName] of Object.entries(deps.meters)) {
    const meter = meters.find((m) => m.eventName === eventName && m.status === 'active');
    if (meter === undefined) throw new TallyError(`no active Stripe meter has event_name ${eventName}: run tally stripe check`);
    meterIds[metric] = meter.id;
  }
  return meterIds;
}
