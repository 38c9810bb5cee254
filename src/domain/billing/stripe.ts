import { hash } from 'fast-sha256';
import { addDays, dayOf } from '../days';
import { TallyError, ValidationError } from '../errors';
import { METRIC_NAME } from '../logs/metric-rules';

/**
 * Closed days on the invoice: for each linked account, configured metric and closed-day
 * revision, Tally sends one Stripe meter event carrying the day's billable total after
 * that revision. A meter with `event_time_window=day` bills the latest event of each UTC
 * day per customer, so a later revision replaces the earlier one: no deltas, no
 * cancellations.
 *
 * ```
 * revision n of (acme, requests, 2026-11-20)
 *   identifier  tally-2026-11-20-r2-<hash of scope, account, metric, day, revision>   (<= 100 chars)
 *   timestamp   2026-11-20T00:00:00Z + n seconds        later revision = later timestamp (and sent later)
 *   payload     { stripe_customer_id: cus_..., value: "<totals.requests after revision n>" }
 * ```
 */

/** Stripe refuses meter events whose timestamp is more than this many days in the past. */
export const STRIPE_PAST_LIMIT_DAYS = 35;

/** Tally sends nothing closer than this to Stripe's limit (a retry, a slow queue, clock skew). */
export const STRIPE_SAFETY_MARGIN_HOURS = 24;

/** Stripe keeps an identifier unique for at least this long. */
export const STRIPE_IDENTIFIER_WINDOW_HOURS = 24;

/** The meter keys Tally's events carry; `tally stripe check` requires meters to read them. */
export const STRIPE_CUSTOMER_KEY = 'stripe_customer_id';
export const STRIPE_VALUE_KEY = 'value';

/** Metric -> Stripe event name, from `TALLY_STRIPE_METERS`. */
export type StripeMeterMap = Readonly<Record<string, string>>;

const EVENT_NAME = /^[A-Za-z0-9_.:-]{1,100}$/;

/**
 * Parses `TALLY_STRIPE_METERS`, a JSON object from metric to Stripe event name.
 *
 * @example parseStripeMeters('{"requests":"cdn_requests","bytes":"cdn_bytes"}')
 */
export function parseStripeMeters(text: string): StripeMeterMap {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ValidationError('must be a JSON object from metric to Stripe event name, e.g. {"requests":"cdn_requests"}');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || Object.keys(parsed).length === 0) {
    throw new ValidationError('must be a non-empty JSON object from metric to Stripe event name, e.g. {"requests":"cdn_requests"}');
  }
  const map: Record<string, string> = {};
  const seen = new Set<string>();
  for (const [metric, eventName] of Object.entries(parsed as Record<string, unknown>)) {
    if (!METRIC_NAME.test(metric)) throw new ValidationError(`"${metric}" is not a metric name`);
    if (typeof eventName !== 'string' || !EVENT_NAME.test(eventName)) {
      throw new ValidationError(`the event name of ${metric} must be 1-100 letters, digits, "_", ".", ":" or "-"`);
    }
    if (seen.has(eventName)) throw new ValidationError(`two metrics send to ${eventName}: each metric needs its own meter`);
    seen.add(eventName);
    map[metric] = eventName;
  }
  return map;
}

/**
 * The name of the lease a sender holds while it sends one metric of a customer (`STRIPE#LOCK /
 * <customer>#metric#<metric>`): per metric, not per event name, so after `TALLY_STRIPE_WINDOW`
 * or the meters changed, the records of both windows (two event names) are still sent by one
 * sender at a time, oldest first; one metric has one meter at a time, so it also keeps Stripe's
 * one call at a time per customer and meter. `#` is in no event name: never an older lease's key.
 */
export function stripeLeaseName(metric: string): string {
  return `metric#${metric}`;
}

/** Stripe customer ids look like `cus_...`. */
export function validateCustomerId(customer: string): string {
  if (!/^cus_[A-Za-z0-9]{1,250}$/.test(customer)) throw new ValidationError(`"${customer}" is not a Stripe customer id (cus_...)`);
  return customer;
}

const encoder = new TextEncoder();

/**
 * One meter event's place: which account, metric, day and revision it stands for, and
 * how many of the day's adjustments of that metric its value holds (absent: none). An
 * adjustment made after a day's last revision is a new event of that revision.
 */
export interface MeterEventSubject {
  readonly account: string;
  readonly metric: string;
  readonly day: string;
  readonly revision: number;
  readonly adjusted?: number;
  /**
   * The running total's number (1, 2, ...) while the day is open (revision 0); absent on a
   * closed day's events. Running totals of a day are sent in this order, all before revision 1.
   */
  readonly running?: number;
  /**
   * The UTC hour (0-23) of the event's window with `TALLY_STRIPE_WINDOW=hour` (stripe-hours.ts);
   * absent with day windows. Each hour of a day is a window of its own, with its own sequence.
   */
  readonly hour?: number;
  /**
   * The re-split's number (1, 2, ...) of a closed day's hour event sent again at the same step
   * because the day's split into hours changed with no revision (`tally backfill --hours` of a
   * day sent in hour 00); absent otherwise. Later re-splits replace earlier ones (stripe-hours.ts).
   */
  readonly split?: number;
}

/**
 * Where an event stands in its day's sequence: revision plus adjustments. Both only grow,
 * and every new event has one of them larger, so a later event has a larger step.
 */
export function eventStep(subject: Pick<MeterEventSubject, 'revision' | 'adjusted'>): number {
  return subject.revision + (subject.adjusted ?? 0);
}

/**
 * The order of a day's events: by step, then (running totals, all at step 0) by running
 * number, then (an hour's re-splits at one step) by re-split number. The sender sends a day's
 * newest event by this order and supersedes the others.
 */
export function compareEvents(a: Pick<MeterEventSubject, 'revision' | 'adjusted' | 'running' | 'split'>, b: Pick<MeterEventSubject, 'revision' | 'adjusted' | 'running' | 'split'>): number {
  return eventStep(a) - eventStep(b) || (a.running ?? 0) - (b.running ?? 0) || (a.split ?? 0) - (b.split ?? 0);
}

/**
 * The identifier of a meter event: the same for every retry and every rerun, different
 * for every (account, metric, day, revision) and stage (`scope`, the table name).
 * Readable where it helps (day, revision), hashed where lengths vary: 45 characters at most.
 */
export function meterEventIdentifier(scope: string, subject: MeterEventSubject): string {
  const adjusted = subject.adjusted ?? 0;
  const running = subject.running ?? 0;
  const hour = subject.hour === undefined ? '' : String(subject.hour).padStart(2, '0');
  const split = subject.split ?? 0;
  const name = `${scope}\n${subject.account}\n${subject.metric}\n${subject.day}\n${subject.revision}${adjusted > 0 ? `\n${adjusted}` : ''}${running > 0 ? `\nP${running}` : ''}${hour === '' ? '' : `\nH${hour}`}${split > 0 ? `\nS${split}` : ''}`;
  const digest = Buffer.from(hash(encoder.encode(name))).toString('hex').slice(0, 20);
  const place = running > 0 ? `p${running}` : `r${subject.revision}`;
  return `tally-${subject.day}-${hour === '' ? '' : `h${hour}-`}${place}${adjusted > 0 ? `a${adjusted}` : ''}${split > 0 ? `s${split}` : ''}-${digest}`;
}

/**
 * The outbox record of one meter event, pending: written before it is sent, for `subject`
 * of `link`'s customer, on the meter named `eventName`, identified by its subject alone.
 */
export function pendingOutboxRecord(
  scope: string,
  link: Pick<StripeLink, 'customer'>,
  eventName: string,
  subject: MeterEventSubject,
  event: { timestamp: number; value: number; createdAt: string },
): StripeOutboxRecord {
  return { ...subject, customer: link.customer, eventName, identifier: meterEventIdentifier(scope, subject), ...event, state: 'pending', attempts: 0 };
}

const SECONDS_PER_DAY = 86_400;

/**
 * The timestamp (unix seconds) of the event at `step` ({@link eventStep}) of `day`: inside
 * that UTC day, so the day-windowed meter counts it for that day, and one second later per
 * step, so a later revision or adjustment wins when Stripe orders a day's events by timestamp.
 * Running totals of an open day are step 0 (midnight itself): every closed revision is later. Tally also sends
 * revisions in order (one request at a time per customer and meter, an older revision
 * never after a newer one), so it wins when Stripe orders them by receipt too.
 */
export function meterEventTimestamp(day: string, step: number): number {
  const start = Date.parse(`${day}T00:00:00Z`) / 1000;
  return start + Math.min(Math.max(step, 0), SECONDS_PER_DAY - 1);
}

/**
 * The oldest day whose events may still be sent at `now`: Stripe's 35 days less the
 * safety margin, counted from the event's timestamp.
 */
export function oldestSendableDay(now: Date): string {
  const limit = now.getTime() - (STRIPE_PAST_LIMIT_DAYS * 24 - STRIPE_SAFETY_MARGIN_HOURS) * 3_600_000;
  const day = dayOf(new Date(limit));
  // The whole day must be inside: its timestamps start at midnight.
  return Date.parse(`${day}T00:00:00Z`) >= limit ? day : addDays(day, 1);
}

/** True when the event at `step` of `day` may no longer be sent at `now`. */
export function isTooOldForStripe(day: string, step: number, now: Date): boolean {
  return isTimestampTooOld(meterEventTimestamp(day, step), now);
}

/** True when an event stamped `timestamp` (unix seconds: a day's or an hour's) may no longer be sent at `now`. */
export function isTimestampTooOld(timestamp: number, now: Date): boolean {
  const limitSeconds = (now.getTime() - (STRIPE_PAST_LIMIT_DAYS * 24 - STRIPE_SAFETY_MARGIN_HOURS) * 3_600_000) / 1000;
  return timestamp < limitSeconds;
}

/** A billable total as Stripe's payload value: a whole number, never negative (Stripe meters sum, Tally sends totals). */
export function meterValue(total: number): string {
  return String(Math.max(0, Math.round(total)));
}

/**
 * The running totals an open day's metrics need now: each metric whose billable total
 * differs from the last running total recorded (a first total only when it is not 0),
 * numbered one after that one. A metric with a closed-day record (revision 1 or later)
 * needs none: the closed total replaces the running ones.
 *
 * @example runningTotalsDue([{ metric: 'requests', revision: 0, running: 2, value: 10 }], { requests: 12, bytes: 0 })
 * // [{ metric: 'requests', running: 3, value: 12 }]
 */
export function runningTotalsDue(
  records: readonly Pick<StripeOutboxRecord, 'metric' | 'revision' | 'running' | 'value'>[],
  totals: Readonly<Record<string, number>>,
): { metric: string; running: number; value: number }[] {
  const due: { metric: string; running: number; value: number }[] = [];
  for (const [metric, total] of Object.entries(totals)) {
    const own = records.filter((r) => r.metric === metric);
    if (own.some((r) => r.revision > 0)) continue;
    const last = own.reduce<(typeof own)[number] | undefined>((held, r) => ((r.running ?? 0) > (held?.running ?? 0) ? r : held), undefined);
    const value = Number(meterValue(total));
    if (last === undefined ? value === 0 : last.value === value) continue;
    due.push({ metric, running: (last?.running ?? 0) + 1, value });
  }
  return due;
}

/** Where an outbox record stands. */
export type OutboxState =
  /** Written, not yet acknowledged: the sender (or `tally stripe push`) sends it. */
  | 'pending'
  /** Stripe took it (a 200, or a 400 saying the identifier exists). */
  | 'delivered'
  /** Stripe refused it (a 4xx other than "already exists"); an operator looks (alarm). */
  | 'failed'
  /** Past Stripe's window: not sent; a `stripe.late_usage` webhook (reason `too-old`) says so. */
  | 'too-old'
  /** A later revision of the same account, metric and day was written first: this one is never sent. */
  | 'superseded'
  /**
   * Sent, but the day's invoice was finalized before and billed another total: a signed
   * `stripe.late_usage` webhook and the `stripe-late-usage` alarm say so (`invoice`, `billed`).
   */
  | 'invoice-finalized';

/** The outbox record of one meter event, written before it is sent. */
export interface StripeOutboxRecord extends MeterEventSubject {
  readonly customer: string;
  readonly eventName: string;
  readonly identifier: string;
  /** Unix seconds. */
  readonly timestamp: number;
  /** The day's billable total after this revision. */
  readonly value: number;
  readonly state: OutboxState;
  readonly attempts: number;
  readonly createdAt: string;
  /** When the last attempt started. */
  readonly sentAt?: string;
  /** When the first attempt started: from then on the event may be at Stripe, whatever answer came (or none). */
  readonly firstSentAt?: string;
  readonly deliveredAt?: string;
  /** The last error (status and Stripe's message). */
  readonly error?: string;
  /** When the `stripe.late_usage` webhook event was queued (too-old and invoice-finalized records). */
  readonly notifiedAt?: string;
  /** The finalized invoice that holds the day (invoice-finalized records). */
  readonly invoice?: string;
  /** What that invoice billed for the day: the total delivered before it was finalized. */
  readonly billed?: number;
  /**
   * With `TALLY_STRIPE_LATE_USAGE=invoice-item`, an invoice-finalized record's invoice item for
   * the difference: written on the record before the first call ({@link InvoiceItemPlan}).
   */
  readonly item?: InvoiceItemState;
}

/**
 * How long a recorded meter error report is kept (its `ttl`, from its `created`): Stripe lists
 * events for 30 days (https://docs.stripe.com/api/v2/core/events/list), so a read that starts
 * over (a lost cursor) finds each report still recorded and counts none twice; 5 days more
 * for clock skew and a late read. The alarm has counted a report long before.
 */
export const METER_ERROR_TTL_DAYS = 35;

/**
 * A read of the meter error reports asks for those created since the cursor (the newest seen)
 * less this margin: a report Stripe lists a little after its `created` time is still read; those
 * read twice are recorded once (by event id).
 */
export const METER_ERROR_READ_OVERLAP_MINUTES = 60;

/** Where the next read of meter error reports starts: the cursor less the overlap; undefined (Stripe's 30 days) without one. */
export function meterErrorReadSince(cursor: string | undefined): string | undefined {
  if (cursor === undefined || Number.isNaN(Date.parse(cursor))) return undefined;
  return new Date(Date.parse(cursor) - METER_ERROR_READ_OVERLAP_MINUTES * 60_000).toISOString();
}

/** The `ttl` (epoch seconds) of a meter error report created at `created` (RFC 3339). */
export function meterErrorExpiry(created: string): number {
  return Math.floor(Date.parse(created) / 1000) + METER_ERROR_TTL_DAYS * 86_400;
}

/** How a late difference is billed (`TALLY_STRIPE_LATE_USAGE`): reported only, or also as an invoice item. */
export type LateUsageMode = 'webhook' | 'invoice-item';

/**
 * A late difference's invoice item as the outbox record holds it:
 *
 * ```
 * pending       written before the first POST /v1/invoiceitems: tallyId (metadata[tally_id] and Idempotency-Key),
 *               the subscription, currency, signed unit amount and quantity; firstAttemptAt once a call started
 * created       Stripe answered (or the lookup found it): its id ii_...
 * webhook-only  no item (a tiered, volume or package price; no unit amount): the reason, shown by status
 * ```
 */
export type InvoiceItemState =
  | {
      readonly state: 'pending' | 'created';
      readonly tallyId: string;
      readonly subscription: string;
      readonly currency: string;
      /** Signed decimal string (cents): negative for a credit. */
      readonly unitAmountDecimal: string;
      /** Whole units, never negative (Stripe's quantity); the sign is in the unit amount. */
      readonly quantity: number;
      /** The difference in the metric's units this item bills (quantity with the credit's sign). */
      readonly units: number;
      /** When the first POST started: an Idempotency-Key older than 24 h may be forgotten by Stripe. */
      readonly firstAttemptAt?: string;
      /** Stripe's id once created. */
      readonly id?: string;
    }
  | { readonly state: 'webhook-only'; readonly reason: string };

/** A metered price as far as an invoice item for it needs (`GET /v1/subscriptions`, item.price). */
export interface MeteredPrice {
  readonly billingScheme: string;
  /** `graduated` or `volume` for tiered prices, else null. */
  readonly tiersMode: string | null;
  /** `transform_quantity.divide_by` of a package price, else null. */
  readonly packageSize: number | null;
  /** Cents per unit as Stripe's decimal string; null when the price has none. */
  readonly unitAmountDecimal: string | null;
  readonly currency: string;
}

/** How many hours Stripe keeps an Idempotency-Key at least (https://docs.stripe.com/api/idempotent_requests). */
export const STRIPE_IDEMPOTENCY_HOURS = 24;

/**
 * Whether a late difference can be an invoice item at this price, and why not: only a
 * per-unit price bills `units x unit amount`. A tiered (graduated or volume) price bills a
 * period's whole quantity by its tiers, so the difference's price depends on the rest of the
 * period; a package price (per-unit with `transform_quantity`) rounds the period's quantity
 * into packages. Those get the webhook alone, with the reason.
 */
export function invoiceItemBlocker(price: MeteredPrice): string | undefined {
  if (price.billingScheme === 'tiered') {
    return `${price.tiersMode === 'volume' ? 'volume' : 'graduated tiered'} price: the difference's amount depends on the period's whole quantity; bill it by hand`;
  }
  if (price.packageSize !== null) return `package price (${price.packageSize} units a package): the difference's amount depends on the period's rounding; bill it by hand`;
  if (price.billingScheme !== 'per_unit') return `price billing scheme ${price.billingScheme}: not a per-unit price`;
  if (price.unitAmountDecimal === null || !/^\d+(\.\d+)?$/.test(price.unitAmountDecimal)) return 'the price has no unit amount';
  return undefined;
}

/**
 * The invoice item for a late difference of `units` at a per-unit `price`: the price's
 * currency and `unit_amount_decimal` times `quantity`. Stripe's `quantity` is a non-negative
 * integer and a negative `unit_amount_decimal` reduces the invoice's amount due
 * (https://docs.stripe.com/api/invoiceitems/create), so a credit is the unit amount negated
 * times the units. Naming the price (`pricing[price]`) instead would bill a charge but could
 * not credit (no negative quantity): one form serves both signs.
 */
export function invoiceItemFor(price: MeteredPrice, units: number): { currency: string; unitAmountDecimal: string; quantity: number } {
  const unit = price.unitAmountDecimal ?? '0';
  const zero = /^0+(\.0+)?$/.test(unit);
  return { currency: price.currency, unitAmountDecimal: units < 0 && !zero ? `-${unit}` : unit, quantity: Math.abs(units) };
}

/**
 * The id of a record's invoice item: `metadata[tally_id]` and the Idempotency-Key. Derived
 * from the record (stage, account, metric, day, revision, adjustments, running number), so a
 * retry days later names the same item and a lookup finds it.
 */
export function invoiceItemTallyId(scope: string, record: MeterEventSubject): string {
  return `tally-ii-${meterEventIdentifier(scope, record).slice('tally-'.length)}`;
}

/**
 * True when a retry of an invoice item must look it up first: its first call started more
 * than Stripe's 24 hours ago, so Stripe may have forgotten the Idempotency-Key and would
 * create a second item.
 */
export function itemKeyMayBeForgotten(firstAttemptAt: string | undefined, now: Date): boolean {
  return firstAttemptAt !== undefined && now.getTime() - Date.parse(firstAttemptAt) >= STRIPE_IDEMPOTENCY_HOURS * 3_600_000;
}

/**
 * The units a new late record still has to bill as an invoice item: its total less what the
 * invoice billed and less the items the day's other records created already (each item
 * bills its own difference; items add up on the next invoices).
 */
export function unbilledUnits(total: number, billed: number, others: readonly Pick<StripeOutboxRecord, 'item'>[]): number {
  const itemized = others.reduce((sum, r) => sum + (r.item?.state === 'created' ? r.item.units : 0), 0);
  return total - billed - itemized;
}

/** A link from a Tally account to a Stripe customer. */
export interface StripeLink {
  readonly account: string;
  readonly customer: string;
  readonly linkedAt: string;
  /**
   * The first day sent (the customer's current period's first whole day at the link, or
   * `--from`): earlier days belong to invoices that may be finalized already, so they are
   * never sent and never reported late. Absent (links made before): Stripe's window alone.
   */
  readonly from?: string;
  /**
   * With hour windows (`TALLY_STRIPE_WINDOW=hour`), the first hour sent (unix seconds): the
   * current period's start rounded up to a whole hour, on day `from`. The hours of `from`
   * before it belong to the period before and are never sent. Absent: all of `from`.
   */
  readonly fromTime?: number;
}

/**
 * The first day whose events fall in a period starting at `periodStart` (unix seconds): a
 * day's events are stamped at its UTC midnight (plus a few seconds), so a period starting
 * after midnight holds its first day's events in the period before.
 */
export function firstDayOfPeriod(periodStart: number): string {
  const day = dayOf(new Date(periodStart * 1000));
  return Date.parse(`${day}T00:00:00Z`) / 1000 >= periodStart ? day : addDays(day, 1);
}

/** Why a day's new total reaches no invoice. */
export type LateUsageReason = 'invoice-finalized' | 'too-old';

/**
 * The `stripe.late_usage` webhook event: a day's total changed after the invoice that holds
 * it was finalized (or after Stripe's 35-day window), so the customer was billed `billed`
 * and Tally counts `total`. Its id is stable per outbox record, so it is sent once per
 * (account, metric, day, revision) however often the record is retried. It replaces
 * `stripe.adjustment_required` (the too-old case's former type, now an alias): `sentValue`
 * and `currentValue` are still in its data.
 */
export function lateUsageEvent(
  scope: string,
  record: StripeOutboxRecord,
  late: { reason: LateUsageReason; invoice: string | null; billed: number | null; item?: InvoiceItemState },
  createdAt: string,
): { id: string; body: string } {
  // The too-old case keeps the id its stripe.adjustment_required event had: a resend is recognised.
  const kind = late.reason === 'too-old' ? 'stripe.adjustment_required' : 'stripe.late_usage';
  const id = `evt_${Buffer.from(hash(encoder.encode(`${scope}\n${kind}\n${record.identifier}`))).toString('hex').slice(0, 32)}`;
  const billed = late.billed ?? 0;
  const body = JSON.stringify({
    id,
    type: 'stripe.late_usage',
    createdAt,
    data: {
      account: record.account,
      customer: record.customer,
      metric: record.metric,
      eventName: record.eventName,
      day: record.day,
      // TALLY_STRIPE_WINDOW=hour: the UTC hour of the day whose total this is.
      ...(record.hour === undefined ? {} : { hour: record.hour }),
      revision: record.revision,
      reason: late.reason,
      invoice: late.invoice,
      billed,
      total: record.value,
      difference: record.value - billed,
      sentValue: late.billed,
      currentValue: record.value,
      // TALLY_STRIPE_LATE_USAGE=invoice-item: the item for the units not billed yet, or why there is none.
      ...(late.item === undefined
        ? {}
        : { invoiceItem: late.item.state === 'webhook-only' ? { created: false, reason: late.item.reason } : { tallyId: late.item.tallyId, units: late.item.units, currency: late.item.currency, unitAmountDecimal: late.item.unitAmountDecimal } }),
      explanation:
        late.reason === 'too-old'
          ? `Stripe accepts meter events at most ${STRIPE_PAST_LIMIT_DAYS} days old; Tally stops ${STRIPE_SAFETY_MARGIN_HOURS} h earlier`
          : `invoice ${late.invoice} was finalized before this total reached Stripe`,
    },
  });
  return { id, body };
}

/**
 * The finalized invoice whose period holds `timestamp` (unix seconds), if any: a
 * subscription invoice bills the usage of [period_start, period_end) and takes none once
 * finalized (https://docs.stripe.com/billing/subscriptions/usage-based/configure-grace-period).
 */
export function finalizedInvoiceHolding<T extends { periodStart: number; periodEnd: number; finalizedAt: number | null }>(invoices: readonly T[], timestamp: number): T | undefined {
  return invoices.find((invoice) => invoice.finalizedAt !== null && invoice.periodStart <= timestamp && timestamp < invoice.periodEnd);
}

/**
 * What a finalized invoice billed for one window (a day, or an hour) and metric: the value of the
 * newest of the window's records (by {@link compareEvents}) that may have reached Stripe at or
 * before `finalizedAt` (unix seconds): acknowledged by then, or attempted by then (its first
 * attempt) and not refused, whenever its answer came; 0 when none was.
 *
 * An attempt before finalization whose answer was lost (or whose sender died before noting it)
 * and that was acknowledged after, as "already exists", reached Stripe at that first attempt or a
 * later one: Tally cannot tell which. Taking it as billed never bills the day twice (an invoice
 * item for a difference the invoice had billed already; chaos seeds 7 and 12 billed 6 and 4 units
 * twice when only acknowledgements counted); the other way, an item too small, is what
 * `tally stripe reconcile --invoices` reports.
 */
export function billedAtFinalization(records: readonly StripeOutboxRecord[], finalizedAt: number): number {
  const by = (time: string | undefined) => time !== undefined && Date.parse(time) / 1000 <= finalizedAt;
  const reached = (r: StripeOutboxRecord) => by(r.deliveredAt) || (r.attempts > 0 && r.state !== 'failed' && by(r.firstSentAt ?? r.sentAt));
  const before = records.filter(reached).sort(compareEvents);
  return before.length === 0 ? 0 : before[before.length - 1]!.value;
}

/**
 * Which revision of an account-day each metric should be sent at: the newest revision
 * that changed the metric (revision 1 always counts), with the day's billable total after
 * it (the revisions up to it plus the day's adjustments).
 *
 * @example latestSendable([{ revision: 1, metrics: { requests: 10 } }, { revision: 3, metrics: { requests: 2 } }], { requests: -1 }, ['requests', 'bytes'])
 * // [{ metric: 'requests', revision: 3, value: 11 }, { metric: 'bytes', revision: 1, value: 0 }]
 */
export function latestSendable(
  revisions: readonly { readonly revision: number; readonly metrics: Readonly<Record<string, number>> }[],
  adjustments: Readonly<Record<string, number>>,
  metrics: readonly string[],
): { metric: string; revision: number; value: number }[] {
  const sorted = [...revisions].sort((a, b) => a.revision - b.revision);
  if (sorted.length === 0) return [];
  return metrics.map((metric) => {
    let revision = sorted[0]!.revision;
    let total = 0;
    for (const row of sorted) {
      const change = row.metrics[metric] ?? 0;
      total += change;
      if (change !== 0) revision = Math.max(revision, row.revision);
    }
    return { metric, revision, value: total + (adjustments[metric] ?? 0) };
  });
}

/**
 * A read Stripe did not answer after every retry (429, 5xx, 409 or no answer each time; the
 * adapter's backoff, `STRIPE_READ_RETRY`). Nothing is concluded from it: a reconcile stops
 * rather than compare against a figure it never read, and the sender leaves the event pending
 * rather than send it without knowing its invoice.
 */
export class StripeUnavailableError extends TallyError {
  constructor(
    readonly what: string,
    readonly attempts: number,
    readonly lastError: string,
  ) {
    super(`Stripe did not answer ${what} after ${attempts} attempt(s) with backoff (last: ${lastError}); nothing was compared or concluded from it: run the command again later`);
    this.name = 'StripeUnavailableError';
  }
}
