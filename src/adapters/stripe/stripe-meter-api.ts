import Stripe from 'stripe';
import type { InvoiceItemOutcome, InvoiceItemRequest, StripeInvoiceItemInfo, MeterEventOutcome, StripeInvoiceInfo, StripeMeterApi, StripeMeterErrorReport, StripeMeterInfo, StripeSubscriptionItemInfo } from '../../app/ports';
import { addDays } from '../../domain/days';
import { STRIPE_CUSTOMER_KEY, STRIPE_VALUE_KEY, StripeUnavailableError } from '../../domain/billing/stripe';

export { StripeUnavailableError };

/** Stripe's API base; `TALLY_STRIPE_API_BASE` points elsewhere (a test server, a proxy). */
export const STRIPE_API_BASE = 'https://api.stripe.com';

/** One request's time limit: the sender's lease outlasts many of them. */
export const STRIPE_REQUEST_TIMEOUT_MS = 20_000;

/** Stripe's thin events for meter events dropped after their 200 (https://docs.stripe.com/api/v2/core/events/event-types). */
export const METER_ERROR_EVENT_TYPES = ['v1.billing.meter.error_report_triggered', 'v1.billing.meter.no_meter_found'] as const;

/** At most this many meter error reports are read (30 days of them, one per meter and validation window at worst). */
export const METER_ERROR_REPORTS_READ = 1_000;

/**
 * How Tally's reads of Stripe (meters, summaries, subscriptions, invoices and their lines,
 * invoice items) retry a 429, a 5xx, a 409 or no answer: up to `attempts` calls, waiting
 * `baseMs` doubled after each failure up to `maxMs`, each wait between half and all of it
 * (jitter). Stripe asks for exactly this: "a 429 ... retry with an exponential backoff"
 * (https://docs.stripe.com/rate-limits), and a network error or a 5xx may be retried, a read
 * having no side effect (https://docs.stripe.com/error-low-level). The figures are
 * stripe-node's own defaults (0.5 s doubling to 5 s); the SDK's retries stay off because it
 * does not retry a plain 429, and because the sender retries its writes itself.
 */
export const STRIPE_READ_RETRY = { attempts: 4, baseMs: 500, maxMs: 5_000 } as const;

/** The SDK's connection settings for an API base URL (`host`, `port`, `protocol`). */
export function stripeConnection(apiBase: string): { host: string; port: number; protocol: 'http' | 'https' } {
  const url = new URL(apiBase);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  return { host: url.hostname, port: url.port === '' ? (protocol === 'http' ? 80 : 443) : Number(url.port), protocol };
}

/**
 * Stripe Billing's meters through the official SDK. The SDK's own retries are off: the
 * sender retries with its own backoff, the same identifier and the lease held, and
 * records every attempt. The key lives in the SDK client only; nothing here logs.
 */
export class SdkStripeMeterApi implements StripeMeterApi {
  private readonly stripe: Stripe;
  private readonly readRetry: { readonly attempts: number; readonly baseMs: number; readonly maxMs: number };
  private readonly sleep: (ms: number) => Promise<void>;

  constructor({
    apiKey,
    apiBase = STRIPE_API_BASE,
    timeoutMs = STRIPE_REQUEST_TIMEOUT_MS,
    readRetry = STRIPE_READ_RETRY,
    sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
  }: {
    apiKey: string;
    apiBase?: string;
    timeoutMs?: number;
    readRetry?: { readonly attempts: number; readonly baseMs: number; readonly maxMs: number };
    sleep?: (ms: number) => Promise<void>;
  }) {
    this.stripe = new Stripe(apiKey, { ...stripeConnection(apiBase), maxNetworkRetries: 0, timeout: timeoutMs, telemetry: false, appInfo: { name: 'tally' } });
    this.readRetry = readRetry;
    this.sleep = sleep;
  }

  /**
   * Runs a read (a whole list, every page) again after a 429, a 5xx, a 409 or no answer, with
   * {@link STRIPE_READ_RETRY}'s backoff; any other error at once. A list read again starts over,
   * so no page of two different answers is ever joined. Out of attempts: {@link StripeUnavailableError}.
   */
  private async read<T>(what: string, call: () => Promise<T>): Promise<T> {
    let wait = this.readRetry.baseMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (error) {
        const outcome = outcomeOf(error);
        const conflict = (error as { statusCode?: number }).statusCode === 409;
        if (outcome.kind !== 'retry' && !conflict) throw error;
        const reason = outcome.kind === 'retry' ? outcome.error : `409: ${(error as Error).message}`;
        if (attempt >= this.readRetry.attempts) throw new StripeUnavailableError(what, attempt, reason);
        await this.sleep(wait * (0.5 + Math.random() / 2));
        wait = Math.min(wait * 2, this.readRetry.maxMs);
      }
    }
  }

  async sendMeterEvent(event: { eventName: string; customer: string; value: string; identifier: string; timestamp: number }): Promise<MeterEventOutcome> {
    try {
      await this.stripe.billing.meterEvents.create({
        event_name: event.eventName,
        payload: { [STRIPE_CUSTOMER_KEY]: event.customer, [STRIPE_VALUE_KEY]: event.value },
        identifier: event.identifier,
        timestamp: event.timestamp,
      });
      return { kind: 'accepted' };
    } catch (error) {
      return outcomeOf(error);
    }
  }

  async meters(): Promise<StripeMeterInfo[]> {
    const meters = await this.read('GET /v1/billing/meters', () => this.stripe.billing.meters.list({ limit: 100 }).autoPagingToArray({ limit: 10_000 }));
    return meters.map((meter) => ({
      id: meter.id,
      eventName: meter.event_name,
      status: meter.status,
      eventTimeWindow: meter.event_time_window ?? null,
      formula: meter.default_aggregation.formula,
      customerKey: meter.customer_mapping.event_payload_key,
      valueKey: meter.value_settings.event_payload_key,
    }));
  }

  async daySummaries(meterId: string, customer: string, from: string, to: string): Promise<Record<string, number>> {
    const seconds = (day: string) => Date.parse(`${day}T00:00:00Z`) / 1000;
    const summaries = await this.read(`GET /v1/billing/meters/${meterId}/event_summaries`, () =>
      this.stripe.billing.meters
        .listEventSummaries(meterId, { customer, start_time: seconds(from), end_time: seconds(addDays(to, 1)), value_grouping_window: 'day', limit: 100 })
        .autoPagingToArray({ limit: 10_000 }),
    );
    const byDay: Record<string, number> = {};
    for (const summary of summaries) byDay[new Date(summary.start_time * 1000).toISOString().slice(0, 10)] = summary.aggregated_value;
    return byDay;
  }

  /**
   * The meter's value over [start, end) as one summary (no `value_grouping_window`; bounds on
   * whole minutes, https://docs.stripe.com/api/billing/meter-event-summary/list).
   */
  async summaryOver(meterId: string, customer: string, start: number, end: number): Promise<number> {
    const summaries = await this.read(`GET /v1/billing/meters/${meterId}/event_summaries`, () =>
      this.stripe.billing.meters.listEventSummaries(meterId, { customer, start_time: start, end_time: end, limit: 100 }).autoPagingToArray({ limit: 10_000 }),
    );
    return summaries.reduce((sum, summary) => sum + summary.aggregated_value, 0);
  }

  /**
   * Stripe's meter error reports created at or after `since` (`created[gte]`), else of the last
   * 30 days (as far back as `GET /v2/core/events` lists, https://docs.stripe.com/api/v2/core/events/list),
   * newest first, at most {@link METER_ERROR_REPORTS_READ}: the events Stripe accepted and dropped later.
   */
  async meterErrorReports(since?: string): Promise<StripeMeterErrorReport[]> {
    // The v2 list's created[gte] is an RFC 3339 date-time (Stripe's OpenAPI: format date-time); stripe-node 23.1.0 types it as v1's unix seconds.
    const created = since === undefined ? {} : { created: { gte: since } as unknown as Stripe.RangeQueryParam };
    const events = await this.read('GET /v2/core/events', () =>
      this.stripe.v2.core.events.list({ types: [...METER_ERROR_EVENT_TYPES], limit: 100, ...created }).autoPagingToArray({ limit: METER_ERROR_REPORTS_READ }),
    );
    const reports: StripeMeterErrorReport[] = [];
    for (const event of events) {
      if (event.type !== 'v1.billing.meter.error_report_triggered' && event.type !== 'v1.billing.meter.no_meter_found') continue;
      const meter = event.type === 'v1.billing.meter.error_report_triggered' ? event.related_object.id : null;
      reports.push({
        id: event.id,
        type: event.type,
        created: event.created,
        meter,
        summary: event.data.developer_message_summary,
        errors: event.data.reason.error_types.map((type) => ({
          code: type.code,
          count: type.error_count,
          samples: type.sample_errors.map((sample) => ({ identifier: sample.request.identifier, message: sample.error_message })),
        })),
      });
    }
    return reports.sort((a, b) => (a.created < b.created ? 1 : a.created > b.created ? -1 : 0));
  }

  /**
   * Each item of the customer's subscriptions with its current period (on the item since API
   * version 2025-03-31.basil) and price: https://docs.stripe.com/api/subscriptions/list.
   */
  async subscriptionItems(customer: string): Promise<StripeSubscriptionItemInfo[]> {
    const subscriptions = await this.read('GET /v1/subscriptions', () => this.stripe.subscriptions.list({ customer, limit: 100 }).autoPagingToArray({ limit: 1_000 }));
    return subscriptions.flatMap((subscription) =>
      subscription.items.data.map((item) => ({
        subscription: subscription.id,
        priceId: item.price.id,
        meterId: item.price.recurring?.meter ?? null,
        billingScheme: item.price.billing_scheme,
        tiersMode: item.price.tiers_mode ?? null,
        packageSize: item.price.transform_quantity?.divide_by ?? null,
        unitAmountDecimal: item.price.unit_amount_decimal === null || item.price.unit_amount_decimal === undefined ? null : String(item.price.unit_amount_decimal),
        currency: item.price.currency,
        currentPeriodStart: item.current_period_start,
        currentPeriodEnd: item.current_period_end,
      })),
    );
  }

  /**
   * The customer's latest 100 invoices: period, status and `status_transitions.finalized_at`
   * (https://docs.stripe.com/api/invoices/list; a draft becomes `open` when finalized,
   * https://docs.stripe.com/invoicing/overview#invoice-lifecycle), each with **all** its lines.
   * An invoice carries "the first handful" of its lines (`lines.has_more`: there are more,
   * https://docs.stripe.com/api/invoice-line-item/retrieve), and pending invoice items come
   * before the subscription's lines: an invoice after a dozen late-usage items had its metered
   * line past the handful, so reconcile compared nothing and the sender took a finalized day for
   * one no invoice held. The rest are read from `GET /v1/invoices/{id}/lines`.
   */
  async invoices(customer: string): Promise<StripeInvoiceInfo[]> {
    const page = await this.read('GET /v1/invoices', () => this.stripe.invoices.list({ customer, limit: 100 }));
    const out: StripeInvoiceInfo[] = [];
    for (const invoice of page.data) {
      const id = invoice.id ?? '';
      const lines = invoice.lines.has_more ? await this.read(`GET /v1/invoices/${id}/lines`, () => this.stripe.invoices.listLineItems(id, { limit: 100 }).autoPagingToArray({ limit: 10_000 })) : invoice.lines.data;
      out.push({
        id,
        periodStart: invoice.period_start,
        periodEnd: invoice.period_end,
        status: invoice.status ?? 'draft',
        finalizedAt: invoice.status_transitions.finalized_at ?? null,
        lines: lines.map((line) => ({
          priceId: idOf(line.pricing?.price_details?.price),
          quantity: line.quantity ?? 0,
          invoiceItem: line.parent?.type === 'invoice_item_details' ? (line.parent.invoice_item_details?.invoice_item ?? null) : null,
        })),
      });
    }
    return out;
  }

  /**
   * The customer's invoice items created at or after `since` (unix seconds), with the
   * `metadata[tally_id]` Tally gave them and their units signed as billed (a credit's unit
   * amount is negative, its quantity not: https://docs.stripe.com/api/invoiceitems/create):
   * what reconcile --invoices adds to an invoice's metered line.
   */
  async invoiceItems(customer: string, since: number): Promise<StripeInvoiceItemInfo[]> {
    const items = await this.read('GET /v1/invoiceitems', () => this.stripe.invoiceItems.list({ customer, created: { gte: since }, limit: 100 }).autoPagingToArray({ limit: 10_000 }));
    return items.map((item) => {
      const unit = item.pricing?.unit_amount_decimal ?? null;
      const quantity = item.quantity ?? 0;
      return { id: item.id, tallyId: item.metadata?.tally_id ?? null, invoice: idOf(item.invoice), units: unit !== null && String(unit).startsWith('-') ? -quantity : quantity };
    });
  }

  /**
   * `POST /v1/invoiceitems` (https://docs.stripe.com/api/invoiceitems/create) with our own
   * `Idempotency-Key` (https://docs.stripe.com/api/idempotent_requests): a retry within 24 hours
   * gets the first answer back, never a second item. The SDK's own retries stay off.
   */
  async createInvoiceItem(item: InvoiceItemRequest): Promise<InvoiceItemOutcome> {
    try {
      const created = await this.stripe.invoiceItems.create(
        {
          customer: item.customer,
          subscription: item.subscription,
          currency: item.currency,
          unit_amount_decimal: Stripe.Decimal.from(item.unitAmountDecimal),
          quantity: item.quantity,
          description: item.description,
          period: item.period,
          metadata: { tally_id: item.tallyId },
        },
        { idempotencyKey: item.tallyId },
      );
      return { kind: 'created', id: created.id };
    } catch (error) {
      const outcome = outcomeOf(error);
      // 409: a request with this key is still in flight (https://docs.stripe.com/error-low-level#idempotency).
      if ((error as { statusCode?: number }).statusCode === 409) return { kind: 'retry', error: `409: ${(error as Error).message}` };
      if (outcome.kind === 'retry' || outcome.kind === 'refused') return outcome;
      return { kind: 'refused', error: (error as Error).message };
    }
  }

  /**
   * The customer's invoice item whose `metadata[tally_id]` is `tallyId`: `GET /v1/invoiceitems`
   * (https://docs.stripe.com/api/invoiceitems/list) for the customer, created since `since`,
   * filtered here. Invoice items have no search, and a list is read-after-write consistent
   * where search lags (https://docs.stripe.com/search#data-freshness).
   */
  async findInvoiceItem(customer: string, tallyId: string, since: number): Promise<string | undefined> {
    const items = await this.read('GET /v1/invoiceitems', () => this.stripe.invoiceItems.list({ customer, created: { gte: since }, limit: 100 }).autoPagingToArray({ limit: 10_000 }));
    return items.find((item) => item.metadata?.tally_id === tallyId)?.id;
  }
}

/** The id of an expandable field (an id or the object). */
function idOf(field: string | { id: string } | null | undefined): string | null {
  return field === null || field === undefined ? null : typeof field === 'string' ? field : field.id;
}

/** What an SDK error means for the sender. */
export function outcomeOf(error: unknown): MeterEventOutcome {
  const stripeError = error as { statusCode?: number; message?: string; type?: string };
  const status = stripeError.statusCode;
  const message = stripeError.message ?? String(error);
  if (status === undefined) return { kind: 'retry', error: `no answer: ${message}` };
  if (status === 400 && /already exists with identifier/i.test(message)) return { kind: 'already-exists' };
  if (status === 429 || status >= 500) return { kind: 'retry', error: `${status}: ${message}` };
  return { kind: 'refused', error: `${status}: ${message}` };
}
