import { randomUUID } from 'node:crypto';
import { addDays, dayOf, eachDay } from '../../domain/days';
import { isClosed, lastClosableDay, type ClosedDay } from '../../domain/billing/day-close';
import { TallyError } from '../../domain/errors';
import {
  billedAtFinalization,
  compareEvents,
  finalizedInvoiceHolding,
  firstDayOfPeriod,
  invoiceItemBlocker,
  invoiceItemFor,
  invoiceItemTallyId,
  itemKeyMayBeForgotten,
  unbilledUnits,
  type InvoiceItemState,
  type LateUsageMode,
  type MeteredPrice,
  lateUsageEvent,
  eventStep,
  isTimestampTooOld,
  latestSendable,
  meterErrorReadSince,
  meterEventTimestamp,
  meterValue,
  oldestSendableDay,
  pendingOutboxRecord,
  runningTotalsDue,
  stripeLeaseName,
  StripeUnavailableError,
  type StripeLink,
  type StripeMeterMap,
  type StripeOutboxRecord,
} from '../../domain/billing/stripe';
import { otherWindowHolding, windowKey, windowOf, windowsOnStripe, type StripeWindow } from '../../domain/billing/stripe-hours';
import { mapWithConcurrency } from '../concurrency';
import type { Log } from '../log';
import type { AdjustmentStore, CloseStore, InvoiceItemOutcome, StripeInvoiceInfo, StripeMeterApi, StripeMeterInfo, StripeSendMessage, StripeSendQueue, StripeStore, StripeSubscriptionItemInfo, UsageReader, WebhookOutbox } from '../ports';
import { ceilHour, planClosedHours, planRunningHours } from './stripe-hours';

/** Something is left to send (Stripe busy or unreachable, or another sender holds the lease): try again later. */
export class StripeRetryLaterError extends TallyError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StripeRetryLaterError';
  }
}

export interface StripeSyncDeps {
  readonly store: StripeStore;
  readonly api: StripeMeterApi;
  readonly closeStore: Pick<CloseStore, 'closedDays' | 'accountDay' | 'revisionRows'>;
  readonly adjustments: Pick<AdjustmentStore, 'list'>;
  /** Metric -> Stripe event name (`TALLY_STRIPE_METERS`). */
  readonly meters: StripeMeterMap;
  /** Where `stripe.late_usage` events go (the webhook queue); absent: only logged and shown by status. */
  readonly outbox?: WebhookOutbox;
  /** Queue of the sender (link queues an account's days here); absent: `tally stripe push` sends them. */
  readonly queue?: StripeSendQueue;
  /** Keeps stages apart in identifiers and event ids (the table name). */
  readonly scope: string;
  readonly graceHours: number;
  /**
   * `TALLY_STRIPE_RUNNING_MINUTES`: how often an open day's running totals are sent (0: never,
   * only closed days). Absent: off (the sync wired without it, as older callers do).
   */
  readonly runningMinutes?: number;
  readonly log: Log;
  readonly clock?: () => Date;
  /** Attempts per event within one run (429, 5xx, no answer), with a doubling backoff from `baseMs` to `maxMs`. */
  readonly retry?: { readonly attempts: number; readonly baseMs: number; readonly maxMs: number };
  /** How long a sender holds a customer and meter (renewed before every attempt). */
  readonly leaseSeconds?: number;
  /** (account, metric) groups worked on at once; one request at a time in each. */
  readonly concurrency?: number;
  readonly sleep?: (ms: number) => Promise<void>;
  /** Customers' subscription periods, kept {@link SUBSCRIPTION_CACHE_SECONDS} (absent: read every time). */
  readonly subscriptions?: SubscriptionCache;
  /**
   * `TALLY_STRIPE_LATE_USAGE`: a difference after finalization is reported (`webhook`, the
   * default) or also billed as an invoice item on the next invoice (`invoice-item`).
   */
  readonly lateUsage?: LateUsageMode;
  /**
   * `TALLY_STRIPE_WINDOW`: one event per UTC day (`day`, the default) or per UTC hour (`hour`,
   * for meters with `event_time_window=hour`; stripe-hours.ts). Hour windows need `usage`.
   */
  readonly window?: StripeWindow;
  /** Reads an account's usage items with their hours (hour windows). */
  readonly usage?: Pick<UsageReader, 'read'>;
}

/** How long a customer's subscription items (its current period) are kept: an hour, and never past the period's end. */
export const SUBSCRIPTION_CACHE_SECONDS = 3_600;

/**
 * Customers' subscription items per customer, each kept an hour and never past the end of
 * the current period it names: enough to know that a day is in the current period (no
 * invoice holds it yet). A day before that period always has its invoices read fresh.
 */
export class SubscriptionCache {
  private readonly held = new Map<string, { items: StripeSubscriptionItemInfo[]; until: number }>();
  private meters: { active: Map<string, StripeMeterInfo>; until: number } | undefined;

  /** The active meter of `eventName` (meters kept as long as subscriptions). */
  async meter(api: StripeMeterApi, eventName: string, nowSeconds: number): Promise<StripeMeterInfo | undefined> {
    if (this.meters === undefined || nowSeconds >= this.meters.until || !this.meters.active.has(eventName)) {
      const active = new Map((await api.meters()).filter((m) => m.status === 'active').map((m) => [m.eventName, m]));
      this.meters = { active, until: nowSeconds + SUBSCRIPTION_CACHE_SECONDS };
    }
    return this.meters.active.get(eventName);
  }

  /** The id of the active meter of `eventName`. */
  async meterId(api: StripeMeterApi, eventName: string, nowSeconds: number): Promise<string | undefined> {
    return (await this.meter(api, eventName, nowSeconds))?.id;
  }

  async items(api: StripeMeterApi, customer: string, nowSeconds: number): Promise<StripeSubscriptionItemInfo[]> {
    const cached = this.held.get(customer);
    if (cached !== undefined && nowSeconds < cached.until) return cached.items;
    const items = (await api.subscriptionItems?.(customer)) ?? [];
    const periodEnd = Math.min(...items.map((item) => item.currentPeriodEnd), Number.POSITIVE_INFINITY);
    // Bounded: one entry per customer the sender sends to.
    this.held.set(customer, { items, until: Math.min(nowSeconds + SUBSCRIPTION_CACHE_SECONDS, periodEnd) });
    return items;
  }
}

/** How far back the sender (and the closer's hand-off) looks for pending records: past Stripe's 35 days, nothing is sent anyway. */
export const PENDING_DAYS = 60;

export const STRIPE_RETRY_DEFAULTS = { attempts: 6, baseMs: 500, maxMs: 8_000 } as const;
const LEASE_SECONDS = 120;

/** What happened to one outbox record in a run. */
export interface SendOutcome {
  readonly account: string;
  readonly metric: string;
  readonly day: string;
  readonly revision: number;
  /** Adjustments of the day's metric the value holds (absent: none). */
  readonly adjusted?: number;
  /** The UTC hour of the event's window (`TALLY_STRIPE_WINDOW=hour`); absent for a day's event. */
  readonly hour?: number;
  readonly value: number;
  readonly outcome: 'delivered' | 'already-existed' | 'failed' | 'too-old' | 'superseded' | 'retry-later' | 'busy' | 'invoice-finalized';
  readonly error?: string;
}

export interface SendReport {
  readonly outcomes: readonly SendOutcome[];
  /** Records still pending after the run (Stripe busy, unreachable, or the lease held elsewhere). */
  readonly left: number;
}

const now = (deps: StripeSyncDeps) => (deps.clock ?? (() => new Date()))();
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The days a linked account's events are planned for: closed, still inside Stripe's window. */
export function sendableWindow(at: Date, graceHours: number): { from: string; to: string } {
  return { from: oldestSendableDay(at), to: lastClosableDay(at, graceHours) };
}

/**
 * Writes the outbox records of one linked account's closed days: for each configured
 * metric, the newest revision that changed it and the number of the day's adjustments of
 * that metric, with the day's billable total after both. An adjustment made after the
 * day's last revision thus becomes a new event of its own. A record is written once
 * (conditional put); an older one not yet written is never written (a newer one replaces
 * it). Returns the records written now.
 */
export async function planAccountDays(deps: StripeSyncDeps, link: StripeLink, days: readonly ClosedDay[]): Promise<StripeOutboxRecord[]> {
  const closed = days.filter(isClosed).filter((d) => link.from === undefined || d.day >= link.from);
  if (closed.length === 0) return [];
  const sorted = [...closed].sort((a, b) => (a.day < b.day ? -1 : 1));
  if (deps.window === 'hour') return planClosedHours(deps, link, sorted);
  // Day records only: hour records left from a switch of windows are another meter's (the sender holds the day if it is on them).
  const existing = (await deps.store.records(link.account, sorted[0]!.day, sorted[sorted.length - 1]!.day)).filter((r) => r.hour === undefined);
  const known = new Set(existing.map((r) => `${r.day}#${r.metric}#${r.revision}#${r.adjusted ?? 0}`));
  const newest = new Map<string, number>();
  for (const r of existing) newest.set(`${r.day}#${r.metric}`, Math.max(newest.get(`${r.day}#${r.metric}`) ?? 0, eventStep(r)));
  const metrics = Object.keys(deps.meters);
  const written: StripeOutboxRecord[] = [];
  const createdAt = now(deps).toISOString();
  for (const record of sorted) {
    const { revisions } = await deps.closeStore.accountDay(link.account, record.day);
    // Only complete revisions: one being written may still gain rows.
    const complete = revisions.filter((r) => r.revision <= record.revision);
    if (complete.length === 0) continue;
    const adjustments: Record<string, number> = {};
    const adjustedBy: Record<string, number> = {};
    for (const adjustment of await deps.adjustments.list(link.account, record.day, record.day)) {
      adjustments[adjustment.metric] = (adjustments[adjustment.metric] ?? 0) + adjustment.delta;
      adjustedBy[adjustment.metric] = (adjustedBy[adjustment.metric] ?? 0) + 1;
    }
    for (const { metric, revision, value } of latestSendable(complete, adjustments, metrics)) {
      const adjusted = adjustedBy[metric] ?? 0;
      const subject = { account: link.account, metric, day: record.day, revision, ...(adjusted === 0 ? {} : { adjusted }) };
      if (known.has(`${record.day}#${metric}#${revision}#${adjusted}`) || (newest.get(`${record.day}#${metric}`) ?? 0) > eventStep(subject)) continue;
      const outbox = pendingOutboxRecord(deps.scope, link, deps.meters[metric]!, subject, { timestamp: meterEventTimestamp(record.day, eventStep(subject)), value: Number(meterValue(value)), createdAt });
      if (await deps.store.addRecord(outbox)) written.push(outbox);
    }
  }
  return written;
}

/** The links a scope names: those given, or one account's (one read, however many accounts are linked), or all. */
async function linksOf(deps: StripeSyncDeps, scope: { account?: string; links?: readonly StripeLink[] }): Promise<readonly StripeLink[]> {
  if (scope.links !== undefined) return scope.links.filter((link) => scope.account === undefined || link.account === scope.account);
  if (scope.account === undefined) return deps.store.links();
  const link = await deps.store.linkOf(scope.account);
  return link === undefined ? [] : [link];
}

/**
 * Plans the closed days `from..to` of every linked account (or of `account`): new
 * revisions, and adjustments made since the last event. Returns how many records it wrote.
 */
export async function planLinked(deps: StripeSyncDeps, scope: { account?: string; from: string; to: string; links?: readonly StripeLink[] }): Promise<number> {
  const links = await linksOf(deps, scope);
  if (links.length === 0 || scope.from > scope.to) return 0;
  const days = await deps.closeStore.closedDays(scope.from, scope.to);
  let planned = 0;
  for (const link of links) planned += (await planAccountDays(deps, link, days)).length;
  return planned;
}

/** Plans revision `revision` of `day` for every linked account it holds (the closer queued it). */
export async function planRevision(deps: StripeSyncDeps, day: string, revision: number): Promise<StripeLink[]> {
  const record = (await deps.closeStore.closedDays(day, day))[0];
  if (!isClosed(record) || record.revision < revision) throw new StripeRetryLaterError(`revision ${revision} of ${day} is not complete yet`);
  const links = new Map((await deps.store.links()).map((link) => [link.account, link]));
  const rows = await deps.closeStore.revisionRows(day, revision);
  const planned: StripeLink[] = [];
  for (const row of rows) {
    const link = links.get(row.account);
    if (link === undefined) continue;
    await planAccountDays(deps, link, [record]);
    planned.push(link);
  }
  return planned;
}

/**
 * The days whose running totals a sweep at `at` looks at: from the oldest that may still be
 * open (the close grace, a day more for the closer) to today, inside Stripe's window. Bounded:
 * at most the grace in days plus two.
 */
export function runningWindow(at: Date, graceHours: number): { from: string; to: string } {
  const today = dayOf(at);
  const oldestOpen = addDays(today, -(Math.ceil(graceHours / 24) + 1));
  const oldestSendable = oldestSendableDay(at);
  return { from: oldestOpen > oldestSendable ? oldestOpen : oldestSendable, to: today };
}

/**
 * Writes the running totals of one linked account's open days: for each day of
 * {@link runningWindow} not closed yet and each configured metric, the billable total
 * counted so far (counters plus adjustments), when it changed since the last running
 * total (see {@link runningTotalsDue}). The records go through the same outbox, lease and
 * order as closed days: a day's closed revision (a later timestamp, sent later) replaces
 * its last running total. Reads: the closed days, the account's records and adjustments
 * of the window, and one account-day per open day. Returns the records written.
 */
export async function planRunningTotals(deps: StripeSyncDeps, link: StripeLink): Promise<StripeOutboxRecord[]> {
  if ((deps.runningMinutes ?? 0) === 0) return [];
  const at = now(deps);
  const { from, to } = runningWindow(at, deps.graceHours);
  const closed = new Set((await deps.closeStore.closedDays(from, to)).filter(isClosed).map((d) => d.day));
  const open = eachDay(from, to).filter((day) => !closed.has(day) && (link.from === undefined || day >= link.from));
  if (open.length === 0) return [];
  if (deps.window === 'hour') return planRunningHours(deps, link, open, from, to);
  const existing = (await deps.store.records(link.account, from, to)).filter((r) => r.hour === undefined);
  const adjustments = await deps.adjustments.list(link.account, from, to);
  const metrics = Object.keys(deps.meters);
  const createdAt = at.toISOString();
  const written: StripeOutboxRecord[] = [];
  for (const day of open) {
    const { counters } = await deps.closeStore.accountDay(link.account, day);
    const totals: Record<string, number> = {};
    for (const metric of metrics) totals[metric] = counters[metric] ?? 0;
    for (const adjustment of adjustments) if (adjustment.day === day && adjustment.metric in totals) totals[adjustment.metric]! += adjustment.delta;
    for (const { metric, running, value } of runningTotalsDue(existing.filter((r) => r.day === day), totals)) {
      const subject = { account: link.account, metric, day, revision: 0, running };
      const outbox = pendingOutboxRecord(deps.scope, link, deps.meters[metric]!, subject, { timestamp: meterEventTimestamp(day, 0), value, createdAt });
      if (await deps.store.addRecord(outbox)) written.push(outbox);
    }
  }
  return written;
}

/**
 * The first day a new link sends: `from` when given, else the first whole day of the
 * customer's current billing period (read through the SDK), else nothing earlier than
 * Stripe's window; never before that window.
 */
async function linkStartDay(deps: StripeSyncDeps, customer: string, at: Date, from: string | undefined): Promise<{ day: string; fromTime?: number }> {
  const oldest = oldestSendableDay(at);
  let start = from;
  let fromTime: number | undefined;
  if (start === undefined) {
    const items = (await deps.api.subscriptionItems?.(customer)) ?? [];
    if (items.length > 0) {
      const periodStart = Math.min(...items.map((item) => item.currentPeriodStart));
      if (deps.window === 'hour') {
        // Hour windows bill the period's own hours: from its first whole hour, on that hour's day.
        fromTime = ceilHour(periodStart);
        start = dayOf(new Date(fromTime * 1000));
      } else start = firstDayOfPeriod(periodStart);
    }
  }
  if (start === undefined || start < oldest) return { day: oldest };
  return { day: start, ...(fromTime === undefined ? {} : { fromTime }) };
}

/**
 * Links `account` to `customer` and writes the outbox records of its closed days from the
 * customer's current period start (or `from`), inside Stripe's window; with a sender
 * queue, asks the sender to send them. Days of earlier periods, whose invoices may be
 * finalized, are never sent for this link and never reported late.
 */
export async function linkAccount(
  deps: StripeSyncDeps,
  account: string,
  customer: string,
  options: { from?: string } = {},
): Promise<{ previous?: StripeLink; planned: number; window: { from: string; to: string; fromTime?: number } }> {
  const at = now(deps);
  const { day: from, fromTime } = await linkStartDay(deps, customer, at, options.from);
  const link: StripeLink = { account, customer, linkedAt: at.toISOString(), from, ...(fromTime === undefined ? {} : { fromTime }) };
  const previous = await deps.store.link(link);
  const window = { from, to: sendableWindow(at, deps.graceHours).to };
  const days = window.from <= window.to ? await deps.closeStore.closedDays(window.from, window.to) : [];
  const planned = await planAccountDays(deps, link, days);
  if (planned.length > 0) await deps.queue?.enqueue({ account });
  // With hour windows, the first hour sent on `from` (unix seconds), for the operator to read.
  return { ...(previous === undefined ? {} : { previous }), planned: planned.length, window: { ...window, ...(fromTime === undefined ? {} : { fromTime }) } };
}

/**
 * Sends every pending outbox record (of `account`, or of every linked account) for
 * `from..to` (default: the last 60 days), one request at a time per customer and meter:
 *
 * ```
 * per (account, metric): take the lease (customer, event name) or skip (busy)
 *   per day: older pending revisions -> superseded (never sent after a newer one)
 *            newest pending: too old -> too-old + stripe.late_usage webhook (reason too-old)
 *                            its invoice finalized with another total -> stripe.late_usage webhook, then sent; state invoice-finalized
 *                            else POST with its identifier; 200 or "already exists" -> delivered
 *                                 429 / 5xx / no answer -> backoff, same identifier; still failing -> left pending
 *                                 other 4xx -> failed (logged as an error: alarm)
 *            a day already on the meters of the other window (TALLY_STRIPE_WINDOW switched) -> failed, held
 *            (alarm); retryFailed (push --retry-failed, the operator's choice) sends it
 * ```
 */
export async function sendPending(
  deps: StripeSyncDeps,
  scope: { account?: string; from?: string; to?: string; links?: readonly StripeLink[]; retryFailed?: boolean } = {},
): Promise<SendReport> {
  const at = now(deps);
  const from = scope.from ?? addDays(dayOf(at), -PENDING_DAYS);
  const to = scope.to ?? dayOf(at);
  const links = await linksOf(deps, scope);
  const groups: { link: StripeLink; records: StripeOutboxRecord[] }[] = [];
  // Records the operator sends (push --retry-failed): a day held after a window switch goes with them.
  const released = new Set<string>();
  for (const link of links) {
    let records = await deps.store.records(link.account, from, to);
    if (scope.retryFailed === true) {
      // After the cause is fixed (a meter created, a customer restored): the same identifier, value and timestamp again.
      const failed = records.filter((r) => r.state === 'failed');
      for (const record of failed) await deps.store.updateRecord(record, { state: 'pending' });
      records = records.map((r) => (r.state === 'failed' ? { ...r, state: 'pending' } : r));
      // Every record this run sends is the operator's choice, those just planned by the same push too: a day closed under
      // the old window has no record of the new one until the push plans it, and held it would need a second push.
      for (const record of records) if (record.state === 'pending') released.add(record.identifier);
    }
    const byMetric = new Map<string, StripeOutboxRecord[]>();
    for (const record of records) byMetric.set(record.metric, [...(byMetric.get(record.metric) ?? []), record]);
    for (const group of byMetric.values()) if (group.some((r) => r.state === 'pending')) groups.push({ link, records: group });
  }
  const results = await mapWithConcurrency(groups, deps.concurrency ?? 4, ({ link, records }) => sendGroup(deps, link, records, released, { from, to }));
  const outcomes = results.flat();
  return { outcomes, left: outcomes.filter((o) => o.outcome === 'retry-later' || o.outcome === 'busy').length };
}

/**
 * One account's records of one metric (of both windows: their outbox keys share the day's
 * range): under the lease of its customer and meter. `released`: identifiers of records the
 * operator sends again (`--retry-failed`). `read`: the records read before the lease, whose
 * days `range` spans; they are read again once the lease is held (see {@link readUnderLease}).
 */
async function sendGroup(
  deps: StripeSyncDeps,
  link: StripeLink,
  read: StripeOutboxRecord[],
  released: ReadonlySet<string>,
  range: { from: string; to: string },
): Promise<SendOutcome[]> {
  // Per metric, whatever the event names of its records (both windows' after a switch): one sender at a time.
  const metric = read[0]!.metric;
  const lease = stripeLeaseName(metric);
  // The lease of the customer the account is linked to now: every send of this group goes there.
  const customer = link.customer;
  const owner = randomUUID();
  const leaseMs = (deps.leaseSeconds ?? LEASE_SECONDS) * 1000;
  let heldSince = 0;
  const take = async () => {
    const at = now(deps);
    if (!(await deps.store.acquireLease(customer, lease, owner, at, new Date(at.getTime() + leaseMs)))) return false;
    heldSince = Date.now();
    return true;
  };
  // Renewed before an attempt once a third of the lease has passed: a slow run never outlives it.
  const renew = async () => (Date.now() - heldSince < leaseMs / 3 ? true : take());
  if (!(await take())) return read.filter((r) => r.state === 'pending').map((r) => outcome(r, 'busy'));
  const cache = deps.subscriptions ?? new SubscriptionCache();
  const outcomes: SendOutcome[] = [];
  try {
    const records = await readUnderLease(deps, link.account, metric, range);
    // Which windows each day is on at Stripe (from the records read: no read more), kept up to date as this run sends.
    const onStripe = windowsOnStripe(records);
    // A window: the day, or with TALLY_STRIPE_WINDOW=hour the day's hour; each has its own sequence.
    const byWindow = new Map<string, StripeOutboxRecord[]>();
    for (const record of records) byWindow.set(windowKey(record), [...(byWindow.get(windowKey(record)) ?? []), record]);
    // A day's windows lowered first; those raised only once every lowered one is acknowledged.
    const unlowered = new Set<string>();
    for (const [, windowRecords] of [...byWindow].sort(([a, ra], [b, rb]) => windowOrder(a, ra, b, rb))) {
      const sorted = windowRecords.sort(compareEvents);
      const newest = sorted[sorted.length - 1]!;
      if (newest.state === 'pending' && !lowers(sorted) && unlowered.has(newest.day)) {
        const error = `waits for a lower hour of ${newest.day} to be acknowledged first (usage moved between hours is never billed twice)`;
        await deps.store.updateRecord(newest, { error });
        outcomes.push({ ...outcome(newest, 'retry-later'), error });
        continue;
      }
      const sent = await sendWindow(deps, link, sorted, cache, renew, { onStripe, released, records });
      outcomes.push(...sent);
      const last = sent.at(-1);
      if (last !== undefined && newest.value > 0 && (last.outcome === 'delivered' || last.outcome === 'already-existed' || last.outcome === 'invoice-finalized')) {
        onStripe.set(newest.day, new Set([...(onStripe.get(newest.day) ?? []), windowOf(newest)]));
      }
      if (lowers(sorted) && last !== undefined && (last.outcome === 'retry-later' || last.outcome === 'busy' || last.outcome === 'failed')) unlowered.add(newest.day);
    }
  } finally {
    await deps.store.releaseLease(customer, lease, owner);
  }
  return outcomes;
}

/**
 * A group's records read again once its lease is held: the read before the lease may predate
 * what another sender did under it in between (a newer revision sent, its invoice item created,
 * the one read here superseded). Sent from that stale read, a superseded total reached the meter
 * again and its invoice item billed a difference the newer record's item had billed already
 * (two senders at once; stripe-invoice.test.ts "two senders at once"). One query per group and run.
 */
async function readUnderLease(deps: StripeSyncDeps, account: string, metric: string, range: { from: string; to: string }): Promise<StripeOutboxRecord[]> {
  return (await deps.store.records(account, range.from, range.to)).filter((r) => r.metric === metric);
}

/**
 * True when a window's newest pending record lowers what Stripe holds for it (the value of its
 * newest acknowledged record): usage moved out of it (hour 00's share once `tally backfill
 * --hours` split the day), or a negative adjustment.
 */
function lowers(sorted: readonly StripeOutboxRecord[]): boolean {
  const newest = sorted[sorted.length - 1]!;
  const acknowledged = sorted.filter((r) => r.state === 'delivered' || r.state === 'invoice-finalized').at(-1);
  return newest.state === 'pending' && acknowledged !== undefined && newest.value < acknowledged.value;
}

/**
 * The order a group's windows are sent in: by day; within a day the windows whose value goes
 * down first, then by time. Usage moved from one hour to another (a backfill of hours) thus
 * leaves its old hour before it reaches its new one: the day's billed total may dip below its
 * total for a moment, never above it.
 */
function windowOrder(a: string, ra: readonly StripeOutboxRecord[], b: string, rb: readonly StripeOutboxRecord[]): number {
  const dayA = ra[0]!.day;
  const dayB = rb[0]!.day;
  if (dayA !== dayB) return dayA < dayB ? -1 : 1;
  const down = (records: readonly StripeOutboxRecord[]) => (lowers([...records].sort(compareEvents)) ? 0 : 1);
  return down(ra) - down(rb) || (a < b ? -1 : a > b ? 1 : 0);
}

/**
 * Sends one window's newest pending record (a day, or an hour of a day) and supersedes its
 * older pending ones: relinked, wrong-window, switched-window and late records as
 * {@link sendPending} says.
 */
async function sendWindow(
  deps: StripeSyncDeps,
  link: StripeLink,
  sorted: StripeOutboxRecord[],
  cache: SubscriptionCache,
  renew: () => Promise<boolean>,
  switched: { onStripe: ReadonlyMap<string, ReadonlySet<StripeWindow>>; released: ReadonlySet<string>; records: readonly StripeOutboxRecord[] },
): Promise<SendOutcome[]> {
  const outcomes: SendOutcome[] = [];
  const newest = sorted[sorted.length - 1]!;
  for (const older of sorted.slice(0, -1).filter((r) => r.state === 'pending')) {
    await deps.store.updateRecord(older, { state: 'superseded' });
    outcomes.push(outcome(older, 'superseded'));
  }
  if (newest.state !== 'pending') return outcomes;
  let record = newest;
  if (link.customer !== newest.customer) {
    if (newest.attempts > 0) {
      // It may have reached the old customer (a lost answer): sending it elsewhere could bill the day twice.
      const error = `relinked from ${newest.customer} to ${link.customer} after an attempt: check the old customer in Stripe`;
      await deps.store.updateRecord(newest, { state: 'failed', error });
      deps.log.error('stripe meter event failed', { account: newest.account, metric: newest.metric, day: newest.day, revision: newest.revision, error });
      return [...outcomes, { ...outcome(newest, 'failed'), error }];
    }
    // Never sent: it follows the account to its new customer.
    await deps.store.updateRecord(newest, { customer: link.customer });
    record = { ...newest, customer: link.customer };
  }
  const mismatch = await windowMismatch(deps, record, cache);
  if (mismatch !== undefined) {
    await deps.store.updateRecord(record, { state: 'failed', error: mismatch });
    deps.log.error('stripe meter event failed', { account: record.account, metric: record.metric, day: record.day, revision: record.revision, error: mismatch });
    return [...outcomes, { ...outcome(record, 'failed'), error: mismatch }];
  }
  const other = sorted.some((r) => switched.released.has(r.identifier)) ? undefined : otherWindowHolding(switched.onStripe, record.day, windowOf(record));
  if (other !== undefined) {
    const moving = await moveOffOtherWindow(deps, link, record, other, switched.records, cache);
    if (moving !== undefined) {
      await deps.store.updateRecord(record, { error: moving });
      return [...outcomes, { ...outcome(record, 'retry-later'), error: moving }];
    }
    const error = heldAfterSwitch(record, other);
    await deps.store.updateRecord(record, { state: 'failed', error });
    // The alarm's metric filter (stripe-events-refused) matches this message.
    deps.log.error('stripe meter event failed', { account: record.account, metric: record.metric, day: record.day, revision: record.revision, error });
    return [...outcomes, { ...outcome(record, 'failed'), error }];
  }
  const delivered = sorted.filter((r) => r.state === 'delivered' || r.state === 'invoice-finalized');
  return [...outcomes, await deliver(deps, record, delivered.length === 0 ? null : delivered[delivered.length - 1]!.value, renew, sorted)];
}

/**
 * Moves a day held after a switch of windows off the old meters, when nothing but that move can
 * bill it: the new meter (`record`'s) is priced on a subscription item of the customer whose
 * current period holds the whole day, so no invoice has taken the day yet. Each old window of the
 * day whose newest event Stripe acknowledged above 0 gets a re-split of that event at 0 (same step
 * and timestamp, the next split number: Stripe keeps a window's most recent event,
 * https://docs.stripe.com/billing/subscriptions/usage-based/recording-usage), and `record` waits
 * until every one is acknowledged; then {@link windowsOnStripe} no longer counts the old window
 * and `record` goes out on a later run (the message comes back; the closer hands the account over
 * while anything is pending). The day is never on both windows' meters at once: the old meter is
 * lowered to 0 before the new one is raised, the lowers-first rule of re-split hours. Answers why
 * it waits, or undefined when the day is not moved (a day of an earlier period, whose invoice
 * billed it on the old meter already: held for the operator, {@link heldAfterSwitch}).
 */
async function moveOffOtherWindow(
  deps: StripeSyncDeps,
  link: StripeLink,
  record: StripeOutboxRecord,
  other: StripeWindow,
  records: readonly StripeOutboxRecord[],
  cache: SubscriptionCache,
): Promise<string | undefined> {
  if (deps.api.subscriptionItems === undefined) return undefined;
  const nowSeconds = Math.floor(now(deps).getTime() / 1000);
  const meterId = await cache.meterId(deps.api, record.eventName, nowSeconds);
  const dayStart = meterEventTimestamp(record.day, 0);
  const items = (await cache.items(deps.api, link.customer, nowSeconds)).filter((item) => meterId !== undefined && item.meterId === meterId);
  if (!items.some((item) => dayStart >= item.currentPeriodStart && dayStart < item.currentPeriodEnd)) return undefined;
  const old = records.filter((r) => r.day === record.day && r.metric === record.metric && windowOf(r) === other);
  if (old.some((r) => r.customer !== link.customer)) return undefined;
  const waits = `${record.day} of ${record.metric} moves from the meters of ${other} windows to ${record.eventName} (TALLY_STRIPE_WINDOW=${windowOf(record)}; the subscription bills ${record.eventName} over the day): its ${other} events go to 0 first, then this one is sent`;
  // An event of the old window on its way (planned before the switch, or a 0 of this move): it is sent first.
  if (old.some((r) => r.state === 'pending')) return waits;
  const byWindow = new Map<string, StripeOutboxRecord[]>();
  for (const r of old) byWindow.set(windowKey(r), [...(byWindow.get(windowKey(r)) ?? []), r]);
  const createdAt = now(deps).toISOString();
  for (const windowRecords of byWindow.values()) {
    const sorted = [...windowRecords].sort(compareEvents);
    const acknowledged = sorted.filter((r) => r.state === 'delivered' || r.state === 'invoice-finalized').at(-1);
    if (acknowledged === undefined || acknowledged.value === 0) continue;
    const sameStep = sorted.filter((r) => eventStep(r) === eventStep(acknowledged) && (r.running ?? 0) === (acknowledged.running ?? 0));
    const split = Math.max(...sameStep.map((r) => r.split ?? 0)) + 1;
    const subject = {
      account: acknowledged.account,
      metric: acknowledged.metric,
      day: acknowledged.day,
      revision: acknowledged.revision,
      ...(acknowledged.adjusted === undefined ? {} : { adjusted: acknowledged.adjusted }),
      ...(acknowledged.running === undefined ? {} : { running: acknowledged.running }),
      ...(acknowledged.hour === undefined ? {} : { hour: acknowledged.hour }),
      split,
    };
    await deps.store.addRecord(pendingOutboxRecord(deps.scope, link, acknowledged.eventName, subject, { timestamp: acknowledged.timestamp, value: 0, createdAt }));
  }
  deps.log.info('stripe window switch: a day moves to the new meters', { account: record.account, metric: record.metric, day: record.day, from: other, to: windowOf(record) });
  return waits;
}

/**
 * Why `record` is held: its day is on the meters of the `other` window already (sent before
 * `TALLY_STRIPE_WINDOW` was switched), and Stripe keeps one event per window of each meter
 * (https://docs.stripe.com/billing/subscriptions/usage-based/recording-usage), so the new meter
 * would bill the day beside the old one's. What the operator can do is in the message.
 */
function heldAfterSwitch(record: StripeOutboxRecord, other: StripeWindow): string {
  const window = windowOf(record);
  return (
    `${record.day} of ${record.metric} is already on the meters of ${other} windows (sent before TALLY_STRIPE_WINDOW=${window}): ` +
    `this ${window} event to ${record.eventName} is held, not sent, so a subscription billing both meters never bills the day twice; ` +
    `once the old meters' price no longer bills the day (or the day should be billed on ${record.eventName} as well), send it with tally stripe push --retry-failed (docs/stripe.md#hour-windows)`
  );
}

/**
 * Why `record` must not go to its meter, or undefined: a day's event on a meter with
 * `event_time_window=hour` would bill the day's total in its 00:00 hour beside the hours already
 * sent (twice), an hour's event on a day meter would keep one hour of the day. The record's own
 * window decides (a day record has no hour), so records planned under another
 * `TALLY_STRIPE_WINDOW` never reach the meter either. Not checked when the meter or its window
 * is unknown or unreadable (Stripe answers for a missing meter).
 */
async function windowMismatch(deps: StripeSyncDeps, record: StripeOutboxRecord, cache: SubscriptionCache): Promise<string | undefined> {
  let meter: StripeMeterInfo | undefined;
  try {
    meter = await cache.meter(deps.api, record.eventName, Math.floor(now(deps).getTime() / 1000));
  } catch {
    // Meters unreadable (Stripe failing, a key without read access): sent unchecked, as before this check.
    return undefined;
  }
  const window = record.hour === undefined ? 'day' : 'hour';
  if (meter === undefined || (meter.eventTimeWindow !== 'day' && meter.eventTimeWindow !== 'hour') || meter.eventTimeWindow === window) return undefined;
  return (
    `the meter of ${record.eventName} (${meter.id}) has event_time_window=${meter.eventTimeWindow} but this event is for a ${window} window ` +
    `(TALLY_STRIPE_WINDOW=${window}): not sent; set TALLY_STRIPE_WINDOW=${meter.eventTimeWindow} for these meters (docs/stripe.md#hour-windows)`
  );
}

/**
 * The finalized invoice that holds `record`'s day, read before its send: a day of the
 * customer's current period (from the cached subscription items) has none; a day before it
 * has the customer's invoices read fresh, never from a cache. Undefined: no invoice was
 * finalized over the day (or the customer has no subscription: no invoice to miss).
 */
export async function finalizedInvoiceOf(deps: StripeSyncDeps, record: StripeOutboxRecord): Promise<StripeInvoiceInfo | undefined> {
  return (await lateInvoiceOf(deps, record))?.invoice;
}

/** {@link finalizedInvoiceOf}, with the subscription item whose metered price the invoice billed the day at. */
async function lateInvoiceOf(deps: StripeSyncDeps, record: StripeOutboxRecord): Promise<{ invoice: StripeInvoiceInfo; item: StripeSubscriptionItemInfo } | undefined> {
  if (deps.api.subscriptionItems === undefined || deps.api.invoices === undefined) return undefined;
  const nowSeconds = Math.floor(now(deps).getTime() / 1000);
  const cache = deps.subscriptions ?? new SubscriptionCache();
  const meterId = await cache.meterId(deps.api, record.eventName, nowSeconds);
  // Only items priced on this metric's meter bill it: without one, no invoice can miss it.
  const items = (await cache.items(deps.api, record.customer, nowSeconds)).filter((item) => meterId !== undefined && item.meterId === meterId);
  if (items.length === 0) return undefined;
  const currentStart = Math.min(...items.map((item) => item.currentPeriodStart));
  if (record.timestamp >= currentStart) return undefined;
  const prices = new Set(items.map((item) => item.priceId));
  const invoices = (await deps.api.invoices(record.customer)).filter((invoice) => invoice.lines.some((line) => line.priceId !== null && prices.has(line.priceId)));
  const invoice = finalizedInvoiceHolding(invoices, record.timestamp);
  if (invoice === undefined) return undefined;
  const item = items.find((i) => invoice.lines.some((line) => line.priceId === i.priceId)) ?? items[0]!;
  return { invoice, item };
}

/**
 * Notes a total that reaches a day after its invoice was finalized with another total:
 * the `stripe.late_usage` webhook first (a failure in between sends it again with the same
 * id, never not at all), then the record's invoice, billed total and notification time, and
 * a warning log line (the `stripe-late-usage` alarm counts what the sender reports).
 */
async function noteLateUsage(
  deps: StripeSyncDeps,
  record: StripeOutboxRecord,
  late: { invoice: StripeInvoiceInfo; item: StripeSubscriptionItemInfo },
  billed: number,
  others: readonly StripeOutboxRecord[],
): Promise<StripeOutboxRecord> {
  const { invoice } = late;
  const at = now(deps).toISOString();
  const item = deps.lateUsage === 'invoice-item' ? invoiceItemPlan(deps, record, late.item, billed, others) : undefined;
  if (deps.outbox !== undefined && record.notifiedAt === undefined) {
    await deps.outbox.enqueue(lateUsageEvent(deps.scope, record, { reason: 'invoice-finalized', invoice: invoice.id, billed, ...(item === undefined ? {} : { item }) }, at));
  }
  // The item's plan is on the record before any call: a retry, days later, sends the same item or finds it.
  const noted = { invoice: invoice.id, billed, ...(item === undefined ? {} : { item }), ...(deps.outbox !== undefined && record.notifiedAt === undefined ? { notifiedAt: at } : {}) };
  await deps.store.updateRecord(record, noted);
  deps.log.warn('stripe late usage: the day\'s invoice was finalized with another total', {
    account: record.account,
    metric: record.metric,
    day: record.day,
    revision: record.revision,
    invoice: invoice.id,
    billed,
    total: record.value,
    difference: record.value - billed,
    ...(item === undefined ? {} : item.state === 'webhook-only' ? { invoiceItem: 'none', reason: item.reason } : { invoiceItem: item.tallyId, units: item.units }),
  });
  return { ...record, ...noted };
}

/**
 * The invoice item a late record needs (`TALLY_STRIPE_LATE_USAGE=invoice-item`): the units its
 * total adds to what the invoice billed and the day's items created already, at the metered
 * price's unit amount (negative: a credit); none when nothing is left; `webhook-only` with the
 * reason for a price whose amount is not units times a unit amount (tiered, volume, package).
 */
function invoiceItemPlan(deps: StripeSyncDeps, record: StripeOutboxRecord, item: StripeSubscriptionItemInfo, billed: number, others: readonly StripeOutboxRecord[]): InvoiceItemState | undefined {
  const price = meteredPrice(item);
  const blocker = invoiceItemBlocker(price);
  if (blocker !== undefined) return { state: 'webhook-only', reason: blocker };
  const units = unbilledUnits(record.value, billed, others);
  if (units === 0) return undefined;
  return { state: 'pending', tallyId: invoiceItemTallyId(deps.scope, record), subscription: item.subscription, units, ...invoiceItemFor(price, units) };
}

/** A subscription item's price as the invoice item needs it. */
function meteredPrice(item: StripeSubscriptionItemInfo): MeteredPrice {
  return { billingScheme: item.billingScheme, tiersMode: item.tiersMode ?? null, packageSize: item.packageSize ?? null, unitAmountDecimal: item.unitAmountDecimal ?? null, currency: item.currency ?? 'usd' };
}

/**
 * Brings a record's pending invoice item to Stripe exactly once: the record says when the first
 * call started; before a retry whose key Stripe may have forgotten (24 h,
 * https://docs.stripe.com/api/idempotent_requests) the customer's items are listed for its
 * `metadata[tally_id]`; then `POST /v1/invoiceitems` with the same Idempotency-Key, which
 * Stripe answers with the first answer while it keeps the key. Created: the record holds
 * Stripe's id. Answers the record as it stands, and what Stripe said.
 */
export async function settleInvoiceItem(deps: StripeSyncDeps, record: StripeOutboxRecord): Promise<{ record: StripeOutboxRecord; outcome: InvoiceItemOutcome }> {
  const item = record.item;
  if (item === undefined || item.state !== 'pending') return { record, outcome: { kind: 'created', id: item?.state === 'created' ? (item.id ?? '') : '' } };
  if (deps.api.createInvoiceItem === undefined || deps.api.findInvoiceItem === undefined) return { record, outcome: { kind: 'refused', error: 'the Stripe client cannot create invoice items' } };
  const log = { account: record.account, metric: record.metric, day: record.day, revision: record.revision, tallyId: item.tallyId };
  const created = async (id: string, found: boolean) => {
    const done: InvoiceItemState = { ...item, state: 'created', id };
    await deps.store.updateRecord(record, { item: done });
    deps.log.info('stripe invoice item created for late usage', { ...log, id, units: item.units, ...(found ? { foundByLookup: true } : {}) });
    return { record: { ...record, item: done }, outcome: { kind: 'created', id } as const };
  };
  const at = now(deps);
  if (itemKeyMayBeForgotten(item.firstAttemptAt, at)) {
    // Five minutes of clock skew between Tally and Stripe.
    const found = await deps.api.findInvoiceItem(record.customer, item.tallyId, Math.floor(Date.parse(item.firstAttemptAt!) / 1000) - 300);
    if (found !== undefined) return created(found, true);
  }
  const attempting: InvoiceItemState = item.firstAttemptAt === undefined ? { ...item, firstAttemptAt: at.toISOString() } : item;
  if (attempting !== item) await deps.store.updateRecord(record, { item: attempting });
  const current = { ...record, item: attempting };
  const outcome = await deps.api.createInvoiceItem({
    customer: record.customer,
    subscription: item.subscription,
    currency: item.currency,
    unitAmountDecimal: item.unitAmountDecimal,
    quantity: item.quantity,
    description: `Late usage: ${record.metric} of ${record.day}${record.hour === undefined ? '' : ` ${String(record.hour).padStart(2, '0')}:00 UTC`} (invoice ${record.invoice ?? '?'} billed ${record.billed ?? 0}, Tally counts ${record.value})`,
    // The day, or the hour of an hour window's record (inclusive bounds).
    period: record.hour === undefined ? { start: meterEventTimestamp(record.day, 0), end: meterEventTimestamp(record.day, 0) + 86_399 } : { start: record.timestamp - (record.timestamp % 3_600), end: record.timestamp - (record.timestamp % 3_600) + 3_599 },
    tallyId: item.tallyId,
  });
  if (outcome.kind === 'created') return { ...(await created(outcome.id, false)) };
  if (outcome.kind === 'refused') deps.log.error('stripe invoice item failed', { ...log, error: outcome.error });
  else deps.log.warn('stripe invoice item not acknowledged; retried with the same key', { ...log, error: outcome.error });
  return { record: current, outcome };
}

async function deliver(
  deps: StripeSyncDeps,
  record: StripeOutboxRecord,
  sentValue: number | null,
  renewLease: () => Promise<boolean>,
  dayRecords: readonly StripeOutboxRecord[] = [],
): Promise<SendOutcome> {
  const log = { account: record.account, metric: record.metric, day: record.day, revision: record.revision, identifier: record.identifier, eventName: record.eventName };
  // The record's own timestamp: its day's (day windows) or its hour's.
  if (isTimestampTooOld(record.timestamp, now(deps))) {
    const at = now(deps).toISOString();
    // The event before the state: a failure in between sends it again (same id), never not at all.
    if (deps.outbox !== undefined && record.notifiedAt === undefined) {
      await deps.outbox.enqueue(lateUsageEvent(deps.scope, record, { reason: 'too-old', invoice: null, billed: sentValue }, at));
      await deps.store.updateRecord(record, { state: 'too-old', notifiedAt: at });
    } else {
      await deps.store.updateRecord(record, { state: 'too-old' });
    }
    deps.log.warn('stripe adjustment required: the day is past Stripe\'s window', { ...log, sentValue, currentValue: record.value });
    return outcome(record, 'too-old');
  }
  // Sent all the same (the meter keeps Tally's total), but never silently.
  let late = false;
  let invoice: { invoice: StripeInvoiceInfo; item: StripeSubscriptionItemInfo } | undefined;
  try {
    invoice = record.invoice === undefined ? await lateInvoiceOf(deps, record) : undefined;
  } catch (error) {
    if (error instanceof StripeUnavailableError) {
      // Stripe not answering (429, 5xx, no answer, after the reads' backoff): sent unchecked, a total of a finalized
      // period would reach the meter and no invoice, never reported. It waits, pending, for Stripe to answer.
      deps.log.warn('stripe invoice state not read: the event waits for Stripe to answer', { ...log, error: error.message });
      return { ...outcome(record, 'retry-later'), error: error.message };
    }
    // A key without read access to subscriptions and invoices: the total still goes to the meter.
    deps.log.error('stripe invoice state unknown: sent without checking the invoice', { ...log, error: (error as Error).message });
  }
  if (record.invoice !== undefined) late = true;
  else if (invoice !== undefined) {
    let others = dayRecords.filter((r) => r !== record);
    // The record itself too: its own first attempt may have reached Stripe before finalization (its answer lost, its
    // sender dead or out of the lease), so the invoice billed its total; left out, an item billed it again (chaos seed 12:
    // 127 invoiced + 15 in items for 138).
    const billed = billedAtFinalization([...others, record], invoice.invoice.finalizedAt!);
    // A total already reported late (a running total, then the same closed total) is not reported again.
    const reported = others.filter((r) => r.invoice !== undefined).sort(compareEvents).at(-1);
    if (deps.lateUsage === 'invoice-item') {
      // The day's earlier items first (one whose answer was lost, now superseded): a new item bills what they leave.
      const settled: StripeOutboxRecord[] = [];
      for (const other of others) {
        const earlier = await settleInvoiceItem(deps, other);
        if (earlier.outcome.kind === 'retry') return { ...outcome(record, 'retry-later'), error: `an earlier invoice item of the day: ${earlier.outcome.error}` };
        if (earlier.outcome.kind === 'refused' && earlier.record.item?.state === 'pending') {
          // Refused: never created, never tried again; the reason stays on its record (status shows it).
          const refused: InvoiceItemState = { state: 'webhook-only', reason: `refused by Stripe: ${earlier.outcome.error}` };
          await deps.store.updateRecord(earlier.record, { item: refused });
          settled.push({ ...earlier.record, item: refused });
        } else settled.push(earlier.record);
      }
      others = settled;
    }
    // With invoice items, also a total back at the billed one after an item was created: a credit for that item.
    const itemized = deps.lateUsage === 'invoice-item' && invoiceItemBlocker(meteredPrice(invoice.item)) === undefined && unbilledUnits(record.value, billed, others) !== 0;
    // A total back at the billed one after a reported difference is reported too (difference 0): else the last
    // webhook's difference stands, and reconcile --invoices counts a late usage the meter no longer holds.
    const differs = billed !== record.value || reported !== undefined;
    if ((differs && reported?.value !== record.value) || itemized) {
      record = await noteLateUsage(deps, record, invoice, billed, others);
      late = true;
    }
  }
  if (late && record.item?.state === 'pending') {
    // The invoice item before the meter event: while it is not acknowledged the record stays pending (retried later).
    const settled = await settleInvoiceItem(deps, record);
    record = settled.record;
    if (settled.outcome.kind === 'retry') {
      await deps.store.updateRecord(record, { error: `invoice item: ${settled.outcome.error}` });
      return { ...outcome(record, 'retry-later'), error: settled.outcome.error };
    }
    if (settled.outcome.kind === 'refused') {
      const error = `invoice item: ${settled.outcome.error}`;
      await deps.store.updateRecord(record, { state: 'failed', error });
      return { ...outcome(record, 'failed'), error };
    }
  }
  const retry = deps.retry ?? STRIPE_RETRY_DEFAULTS;
  let attempts = record.attempts;
  let lastError = '';
  for (let attempt = 1; attempt <= retry.attempts; attempt++) {
    if (attempt > 1) await (deps.sleep ?? sleep)(Math.min(retry.maxMs, retry.baseMs * 2 ** (attempt - 2)) * (0.75 + Math.random() * 0.5));
    if (!(await renewLease())) return outcome(record, 'busy');
    attempts++;
    // Recorded before the call: status shows an attempt whose answer never came, and the first one says since when the event may be at Stripe.
    const at = now(deps).toISOString();
    const first = record.firstSentAt === undefined && record.attempts === 0 && attempts === 1 ? { firstSentAt: at } : {};
    await deps.store.updateRecord(record, { attempts, sentAt: at, ...first });
    const answer = await deps.api.sendMeterEvent({
      eventName: record.eventName,
      customer: record.customer,
      value: meterValue(record.value),
      identifier: record.identifier,
      timestamp: record.timestamp,
    });
    if (answer.kind === 'accepted' || answer.kind === 'already-exists') {
      await deps.store.updateRecord(record, { state: late ? 'invoice-finalized' : 'delivered', deliveredAt: now(deps).toISOString() });
      deps.log.info('stripe meter event delivered', { ...log, value: record.value, attempts, ...(answer.kind === 'already-exists' ? { alreadyExisted: true } : {}) });
      if (late) return outcome(record, 'invoice-finalized');
      return outcome(record, answer.kind === 'accepted' ? 'delivered' : 'already-existed');
    }
    if (answer.kind === 'refused') {
      await deps.store.updateRecord(record, { state: 'failed', error: answer.error });
      // The alarm's metric filter matches this message.
      deps.log.error('stripe meter event failed', { ...log, value: record.value, error: answer.error });
      return { ...outcome(record, 'failed'), error: answer.error };
    }
    lastError = answer.error;
    deps.log.warn('stripe meter event not acknowledged; retrying with the same identifier', { ...log, attempt, error: answer.error });
  }
  await deps.store.updateRecord(record, { error: lastError });
  return { ...outcome(record, 'retry-later'), error: lastError };
}

function outcome(record: StripeOutboxRecord, kind: SendOutcome['outcome']): SendOutcome {
  return { account: record.account, metric: record.metric, day: record.day, revision: record.revision, ...(record.adjusted === undefined ? {} : { adjusted: record.adjusted }), ...(record.hour === undefined ? {} : { hour: record.hour }), value: record.value, outcome: kind };
}

/**
 * The sender's work for one queue message: plan what it names, then send what is
 * pending for the accounts concerned. The report's `left` counts what is left (Stripe
 * busy, unreachable, the lease held elsewhere): the message should come back.
 */
export async function handleStripeMessage(deps: StripeSyncDeps, message: StripeSendMessage): Promise<SendReport> {
  let report: SendReport;
  if ('running' in message) {
    // The running sweep: the account's open days' totals that changed, then what is pending.
    const link = await deps.store.linkOf(message.account);
    if (link !== undefined) await planRunningTotals(deps, link);
    report = await sendPending(deps, { account: message.account, ...(link === undefined ? {} : { links: [link] }) });
  } else if ('account' in message) {
    // A link or an adjustment: plan the account's closed days still inside the window (written once), then send.
    if (!('sendOnly' in message && message.sendOnly === true)) await planLinked(deps, { account: message.account, ...sendableWindow(now(deps), deps.graceHours) });
    report = await sendPending(deps, { account: message.account });
  } else {
    const links = await planRevision(deps, message.day, message.revision);
    const outcomes: SendOutcome[] = [];
    let left = 0;
    for (const link of links) {
      const one = await sendPending(deps, { account: link.account, from: message.day, to: message.day, links: [link] });
      outcomes.push(...one.outcomes);
      left += one.left;
    }
    report = { outcomes, left };
  }
  return report;
}

/**
 * Hands the Stripe sender every linked account with a record still pending, as the
 * closer does each hourly run on AWS (`{account, sendOnly}`: the sender sends what is
 * pending, nothing is planned). So what a message left pending when its receives ran out
 * (Stripe down longer than the queue retries; the message in the DLQ) reaches Stripe
 * within the hour of Stripe answering again, with no one running `tally stripe push`.
 * Costs one read of the links and one of each linked account's records of the last
 * {@link PENDING_DAYS} days; an account with nothing pending costs the queue nothing.
 */
export async function handPendingAccounts(
  deps: { readonly store: Pick<StripeStore, 'links' | 'records'>; readonly queue: StripeSendQueue; readonly clock?: () => Date },
  concurrency = 8,
): Promise<{ linked: number; handed: number }> {
  const today = dayOf((deps.clock ?? (() => new Date()))());
  const links = await deps.store.links();
  let handed = 0;
  await mapWithConcurrency(links, concurrency, async (link) => {
    const records = await deps.store.records(link.account, addDays(today, -PENDING_DAYS), today);
    if (!records.some((record) => record.state === 'pending')) return;
    await deps.queue.enqueue({ account: link.account, sendOnly: true });
    handed++;
  });
  return { linked: links.length, handed };
}

/**
 * The running sweep (every `TALLY_STRIPE_RUNNING_MINUTES` on AWS): hands the sender every
 * linked account as `{account, running}`, so each account's open-day totals are read and
 * sent by one message of its own (one read of the links here, then the messages ten to a
 * call). It throws if any account could not be queued, so a lost one is never silent.
 */
export async function handRunningAccounts(deps: {
  readonly store: Pick<StripeStore, 'links'>;
  readonly queue: StripeSendQueue;
  readonly runningMinutes?: number;
}): Promise<{ linked: number; handed: number }> {
  if ((deps.runningMinutes ?? 0) === 0) return { linked: 0, handed: 0 };
  const links = await deps.store.links();
  await deps.queue.enqueueAll(links.map((link) => ({ account: link.account, running: true as const })));
  return { linked: links.length, handed: links.length };
}

/**
 * Reads Stripe's meter error reports (the meter events it answered 200 and dropped later: an
 * unknown customer, an invalid value, a timestamp too old) and records each once. Answers how
 * many reports and dropped events are new: the sender publishes the events as the
 * `StripeMeterErrors` metric, on which the `stripe-meter-errors` alarm fires. Run by the
 * sender's hourly schedule, running totals on or off (npm start: every minute). Only reports since the newest seen
 * are asked for (the cursor in the table, less an overlap). Without the reader or the store: nothing read.
 */
export async function pullMeterErrors(deps: Pick<StripeSyncDeps, 'api' | 'store'>): Promise<{ read: number; reports: number; dropped: number }> {
  if (deps.api.meterErrorReports === undefined || deps.store.recordMeterErrors === undefined) return { read: 0, reports: 0, dropped: 0 };
  // Only the reports since the newest seen (less an overlap for Stripe's listing lag): a read costs what is new.
  const since = meterErrorReadSince(await deps.store.meterErrorCursor?.());
  const reports = await deps.api.meterErrorReports(since);
  const fresh = await deps.store.recordMeterErrors(reports);
  const dropped = fresh.reduce((sum, report) => sum + report.errors.reduce((n, error) => n + error.count, 0), 0);
  return { read: reports.length, reports: fresh.length, dropped };
}

/** Parses a send-queue message body. */
export function parseStripeMessage(body: string): StripeSendMessage {
  const parsed = JSON.parse(body) as { day?: unknown; revision?: unknown; account?: unknown; sendOnly?: unknown; running?: unknown };
  if (typeof parsed.account === 'string' && parsed.running === true) return { account: parsed.account, running: true };
  if (typeof parsed.account === 'string') return parsed.sendOnly === true ? { account: parsed.account, sendOnly: true } : { account: parsed.account };
  if (typeof parsed.day === 'string' && typeof parsed.revision === 'number') return { day: parsed.day, revision: parsed.revision };
  throw new Error('not a Stripe send message: expected {"day","revision"} or {"account"}');
}
