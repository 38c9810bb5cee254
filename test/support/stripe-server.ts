import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

/**
 * A Stripe-compatible server for the three billing-meter operations Tally calls, with
 * Stripe's documented behaviour, driven through the official SDK in tests:
 *
 * ```
 * POST /v1/billing/meter_events                 form-encoded; identifier unique for 24 h (400 "An event already
 *                                               exists with identifier ..."); timestamp within the past 35 days,
 *                                               at most 5 minutes ahead; one call at a time per customer and
 *                                               event name (429 to the one that overlaps)
 * GET  /v1/billing/meters                       list, status filter, cursor pagination
 * GET  /v1/billing/meters/{id}/event_summaries  per customer; value_grouping_window=day needs UTC-midnight bounds;
 *                                               a meter with event_time_window=day (hour) counts the latest event
 *                                               of each UTC day (hour) (by receipt, as Stripe documents; or by timestamp)
 * GET  /v1/subscriptions?customer=              subscriptions with periods of a fixed length; each item's
 *                                               current_period_start/end and its metered price
 * GET  /v1/invoices?customer=                   one invoice per ended period: draft until period end + the
 *                                               finalization grace (1 h unless set), then finalized (status open,
 *                                               status_transitions.finalized_at); a line per metered item whose
 *                                               quantity is the meter's value over the period from the events
 *                                               received up to finalization (later ones reach no invoice)
 * POST /v1/invoiceitems                        form-encoded (customer, currency, unit_amount_decimal, quantity, subscription,
 *                                               period, metadata, ...): an item for the subscription's next invoice (the
 *                                               invoice of the period in which it was created); Idempotency-Key: a replay
 *                                               within 24 h answers the saved status and body, other parameters get 400
 *                                               idempotency_error; keys older than 24 h are forgotten (a new item)
 * GET  /v1/invoiceitems?customer=&created[gte]= newest first, cursor pagination (no metadata filter, as Stripe's)
 * GET  /v2/core/events                          thin events of the last 30 days, newest first (types[], object_id,
 *                                               created[gt|gte|lt|lte], limit <= 100, next_page_url): a meter event
 *                                               for a customer Stripe does not know (`forgetCustomer`) is answered
 *                                               200, billed nowhere, and reported by a
 *                                               v1.billing.meter.error_report_triggered event (code
 *                                               meter_event_customer_not_found, the event's identifier as sample)
 * ```
 * Stripe's documents behind the model: a pre-aggregated (day) meter keeps the most recent
 * event of each window ("Record usage for billing",
 * https://docs.stripe.com/billing/subscriptions/usage-based/recording-usage); `sum` adds the
 * kept values over the period, `last` takes the last one; invoices stay draft for the
 * finalization grace period, 1 hour by default, up to 72 hours
 * (https://docs.stripe.com/billing/subscriptions/usage-based/configure-grace-period); values
 * of more than 15 significant digits are refused
 * (https://docs.stripe.com/changelog/dahlia/2026-04-22/billing-meter-event-values-validation).
 * The parameters accepted are exactly those of `fixtures/stripe/billing-meters.openapi.json`
 * (a subset of Stripe's published OpenAPI description): unknown or missing ones get
 * Stripe's 400. Faults are switched on per test: a 5xx or 429 before or after the event
 * is recorded (a lost answer), a dropped connection, a slow answer.
 */
export interface StripeTestServer {
  /** `http://127.0.0.1:<port>`: TALLY_STRIPE_API_BASE. */
  readonly url: string;
  readonly apiKey: string;
  /** Adds a meter (an active, day-windowed sum meter keyed like Tally's unless overridden). */
  addMeter(eventName: string, overrides?: Partial<StripeMeter>): StripeMeter;
  /** Every accepted event Stripe kept (not those dropped later, see `forgetCustomer`), in receipt order. */
  events(): readonly RecordedMeterEvent[];
  /**
   * `customer` is not a customer of this account (never created, or deleted): its meter events
   * are answered 200, then dropped and reported as Stripe's meter error reports do
   * (https://docs.stripe.com/api/v2/core/events/list).
   */
  forgetCustomer(customer: string): void;
  /** The thin events `GET /v2/core/events` lists (every one, oldest first). */
  coreEvents(): readonly TestCoreEvent[];
  /** The value Stripe would bill for `customer`'s `eventName` on each UTC day with events (`YYYY-MM-DD` -> value). */
  billedByDay(eventName: string, customer: string): Record<string, number>;
  /** The next `count` meter-event calls fail this way. */
  fail(fault: StripeFault, count?: number): void;
  /** Drops the faults not yet used (Stripe is back). */
  clearFaults(): void;
  /** Holds every meter-event answer this long (makes overlapping calls visible). */
  setDelay(ms: number): void;
  /** Stripe's clock (unix seconds); the real one unless set. */
  setClock(now: () => number): void;
  /** How `event_time_window=day` picks a day's event: by receipt alone (Stripe's documented rule, the default) or by timestamp (then receipt). */
  setOrder(order: 'timestamp' | 'receipt'): void;
  /**
   * Subscribes `customer` to a metered price on the meter of `eventName` (and of each of `alsoEventNames`): periods of `periodSeconds` from `start` (unix seconds);
   * per unit at `unitAmountDecimal` cents (default "3") unless tiered (`tiersMode`) or a package price (`packageSize`).
   */
  addSubscription(subscription: {
    customer: string;
    eventName: string;
    /** More metered items on the same subscription, one per meter (both meters' lines on each invoice, as while switching meters). */
    alsoEventNames?: readonly string[];
    start: number;
    periodSeconds: number;
    billingScheme?: 'per_unit' | 'tiered';
    tiersMode?: 'graduated' | 'volume';
    packageSize?: number;
    unitAmountDecimal?: string;
  }): TestSubscription;
  /** Every invoice item created (of `customer`, or all), oldest first. */
  invoiceItems(customer?: string): readonly TestInvoiceItem[];
  /** Seconds from a period's end to its invoice's finalization (Stripe's default: 3600; at most 72 h). */
  setFinalizationGrace(seconds: number): void;
  /** The invoices of `customer` at Stripe's clock now (as `GET /v1/invoices` answers), each with all its lines in `lines.data`. */
  invoices(customer: string): TestInvoice[];
  /** Every request (method, path, status, query string), in order; headers and bodies are in `rawRequests`. */
  readonly requests: { method: string; path: string; status: number; query: string }[];
  /** Raw request headers and bodies, to check that nothing else leaks. */
  readonly rawRequests: { headers: IncomingMessage['headers']; body: string }[];
  /** Meter-event calls refused with 429 because another call for the same customer and event name was in flight. */
  concurrencyRefusals(): number;
  close(): Promise<void>;
}

export interface StripeMeter {
  id: string;
  object: 'billing.meter';
  created: number;
  updated: number;
  display_name: string;
  event_name: string;
  event_time_window: 'day' | 'hour' | null;
  default_aggregation: { formula: 'sum' | 'count' | 'last' };
  customer_mapping: { event_payload_key: string; type: 'by_id' };
  value_settings: { event_payload_key: string };
  status: 'active' | 'inactive';
  status_transitions: { deactivated_at: number | null };
  livemode: false;
}

export interface TestSubscription {
  readonly id: string;
  readonly customer: string;
  readonly start: number;
  readonly periodSeconds: number;
  /** Its first metered item (`items[0]`). */
  readonly item: TestSubscriptionItem;
  /** Every metered item, each priced on its own meter and billed on a line of each invoice (a switch of meters keeps both a while). */
  readonly items: readonly TestSubscriptionItem[];
}

export interface TestSubscriptionItem {
  readonly id: string;
  readonly price: {
    readonly id: string;
    readonly meter: string;
    readonly billing_scheme: 'per_unit' | 'tiered';
    readonly tiers_mode: 'graduated' | 'volume' | null;
    readonly transform_quantity: { readonly divide_by: number; readonly round: 'up' } | null;
    readonly unit_amount_decimal: string | null;
    readonly currency: string;
  };
}

export interface TestInvoiceItem {
  id: string;
  object: 'invoiceitem';
  customer: string;
  subscription: string | null;
  /** Cents, `unit_amount_decimal` x `quantity` rounded. */
  amount: number;
  currency: string;
  quantity: number;
  description: string | null;
  metadata: Record<string, string>;
  period: { start: number; end: number };
  date: number;
  /** The invoice it went on, once that invoice exists; null while pending. */
  invoice: string | null;
  pricing: { type: 'price_details'; price_details: null; unit_amount_decimal: string };
  discountable: boolean;
  livemode: false;
}

/** An invoice line: a metered price's quantity, or an invoice item (`parent.invoice_item_details`). */
export type TestInvoiceLine =
  | { id: string; object: 'line_item'; quantity: number; period: { start: number; end: number }; pricing: { type: 'price_details'; price_details: { price: string } } }
  | {
      id: string;
      object: 'line_item';
      quantity: number;
      amount: number;
      period: { start: number; end: number };
      pricing: { type: 'price_details'; price_details: null; unit_amount_decimal: string };
      parent: { type: 'invoice_item_details'; invoice_item_details: { invoice_item: string } };
    };

export interface TestInvoice {
  id: string;
  object: 'invoice';
  customer: string;
  subscription: string;
  status: 'draft' | 'open';
  period_start: number;
  period_end: number;
  status_transitions: { finalized_at: number | null };
  /** The first {@link EMBEDDED_LINES} lines; `has_more`: the rest are at `url` (`GET /v1/invoices/{id}/lines`). */
  lines: { object: 'list'; has_more: boolean; url: string; data: TestInvoiceLine[] };
}

export interface TestCoreEvent {
  id: string;
  object: 'v2.core.event';
  type: 'v1.billing.meter.error_report_triggered';
  created: string;
  livemode: false;
  context: null;
  reason: null;
  related_object: { id: string; type: 'billing.meter'; url: string };
  data: {
    developer_message_summary: string;
    reason: { error_count: number; error_types: { code: string; error_count: number; sample_errors: { error_message: string; request: { identifier: string } }[] }[] };
    validation_start: string;
    validation_end: string;
  };
}

export interface RecordedMeterEvent {
  readonly identifier: string;
  readonly event_name: string;
  readonly payload: Readonly<Record<string, string>>;
  readonly timestamp: number;
  /** Receipt order. */
  readonly seq: number;
  /** Stripe's clock at receipt. */
  readonly created: number;
}

/** `status` answered; `afterRecording`: the event is recorded first (the answer is lost); `drop`: the socket is destroyed. */
export type StripeFault = { status: number; afterRecording?: boolean } | { drop: true; afterRecording?: boolean };

interface OperationSpec {
  readonly parameters: ReadonlyMap<string, { required: boolean; maxLength?: number; enum?: readonly string[] }>;
}

const SPEC_FILE = join(__dirname, '../../fixtures/stripe/billing-meters.openapi.json');

/** The parameters each operation takes, read from the vendored OpenAPI subset. */
export function stripeOperationSpecs(): {
  createEvent: OperationSpec;
  listMeters: OperationSpec;
  eventSummaries: OperationSpec;
  listSubscriptions: OperationSpec;
  listInvoices: OperationSpec;
  listInvoiceLines: OperationSpec;
  createInvoiceItem: OperationSpec;
  listInvoiceItems: OperationSpec;
} {
  const spec = JSON.parse(readFileSync(SPEC_FILE, 'utf8')) as {
    paths: Record<string, Record<string, { parameters?: SpecParameter[]; requestBody?: { content: Record<string, { schema: { required?: string[]; properties: Record<string, SpecSchema> } }> } }>>;
  };
  const query = (parameters: SpecParameter[] = []): OperationSpec => ({
    parameters: new Map(parameters.filter((p) => p.in === 'query').map((p) => [p.name, { required: p.required === true, ...schemaLimits(p.schema) }])),
  });
  const form = (path: string): OperationSpec => {
    const body = spec.paths[path]!.post!.requestBody!.content['application/x-www-form-urlencoded']!.schema;
    return { parameters: new Map(Object.entries(body.properties).map(([name, schema]) => [name, { required: (body.required ?? []).includes(name), ...schemaLimits(schema) }])) };
  };
  return {
    createEvent: form('/v1/billing/meter_events'),
    createInvoiceItem: form('/v1/invoiceitems'),
    listInvoiceItems: query(spec.paths['/v1/invoiceitems']!.get!.parameters),
    listMeters: query(spec.paths['/v1/billing/meters']!.get!.parameters),
    eventSummaries: query(spec.paths['/v1/billing/meters/{id}/event_summaries']!.get!.parameters),
    listSubscriptions: query(spec.paths['/v1/subscriptions']!.get!.parameters),
    listInvoices: query(spec.paths['/v1/invoices']!.get!.parameters),
    listInvoiceLines: query(spec.paths['/v1/invoices/{invoice}/lines']!.get!.parameters),
  };
}

interface SpecSchema {
  maxLength?: number;
  enum?: string[];
}
interface SpecParameter {
  in: string;
  name: string;
  required?: boolean;
  schema: SpecSchema;
}

function schemaLimits(schema: SpecSchema): { maxLength?: number; enum?: readonly string[] } {
  return { ...(schema.maxLength === undefined ? {} : { maxLength: schema.maxLength }), ...(schema.enum === undefined ? {} : { enum: schema.enum }) };
}

const DAY = 86_400;
const HOUR = 3_600;
const IDENTIFIER_WINDOW = DAY;
const PAST_LIMIT = 35 * DAY;
const FUTURE_LIMIT = 300;
const DEFAULT_FINALIZATION_GRACE = 3600;
/**
 * How many lines an invoice carries itself: "the first handful of those items", the rest at its
 * lines URL (https://docs.stripe.com/api/invoice-line-item/retrieve); 10, a list's default limit.
 */
const EMBEDDED_LINES = 10;
const MAX_FINALIZATION_GRACE = 72 * 3600;
const MAX_SIGNIFICANT_DIGITS = 15;
/** `GET /v2/core/events` lists events of the last 30 days. */
const CORE_EVENTS_DAYS = 30;
const CORE_EVENT_PARAMS = new Set(['types', 'object_id', 'created', 'limit', 'page']);
/** Stripe keeps an Idempotency-Key at least 24 hours (https://docs.stripe.com/api/idempotent_requests); this server forgets it then. */
const IDEMPOTENCY_WINDOW = DAY;

class StripeHttpError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly param?: string,
  ) {
    super(message);
  }
}

/** Starts the server on a free port of 127.0.0.1. */
export async function startStripeServer(apiKey = 'sk_test_tally_integration_key'): Promise<StripeTestServer> {
  const specs = stripeOperationSpecs();
  const meters: StripeMeter[] = [];
  const recorded: RecordedMeterEvent[] = [];
  const identifiers = new Map<string, number>();
  const faults: StripeFault[] = [];
  const inFlight = new Map<string, number>();
  let concurrencyRefusals = 0;
  let delayMs = 0;
  let order: 'timestamp' | 'receipt' = 'receipt';
  const subscriptions: TestSubscription[] = [];
  let finalizationGrace = DEFAULT_FINALIZATION_GRACE;
  let clock = () => Math.floor(Date.now() / 1000);
  let seq = 0;
  const requests: StripeTestServer['requests'] = [];
  const rawRequests: StripeTestServer['rawRequests'] = [];
  const unknownCustomers = new Set<string>();
  const coreEvents: TestCoreEvent[] = [];
  const invoiceItems: TestInvoiceItem[] = [];
  /** Idempotency-Key -> the first request's parameters, when it ran, and its saved answer. */
  const idempotency = new Map<string, { params: string; at: number; status: number; body: unknown }>();

  const createEvent = async (params: URLSearchParams, res: ServerResponse): Promise<void> => {
    const fields = checkParams(params, specs.createEvent, true);
    const eventName = fields.get('event_name')!;
    const payload: Record<string, string> = {};
    for (const [key, value] of params) {
      const match = /^payload\[([^\]]+)\]$/.exec(key);
      if (match) payload[match[1]!] = value;
    }
    const now = clock();
    const timestamp = params.has('timestamp') ? Number(params.get('timestamp')) : now;
    if (!Number.isInteger(timestamp)) throw new StripeHttpError(400, 'invalid_request_error', 'Invalid integer: timestamp', 'timestamp');
    if (timestamp < now - PAST_LIMIT) {
      throw new StripeHttpError(400, 'invalid_request_error', 'Timestamp must be within the past 35 calendar days.', 'timestamp');
    }
    if (timestamp > now + FUTURE_LIMIT) throw new StripeHttpError(400, 'invalid_request_error', 'Timestamp cannot be more than 5 minutes in the future.', 'timestamp');
    const meter = meters.find((m) => m.event_name === eventName && m.status === 'active');
    const customerKey = meter?.customer_mapping.event_payload_key ?? 'stripe_customer_id';
    const customer = payload[customerKey];
    if (customer === undefined) throw new StripeHttpError(400, 'invalid_request_error', `Missing required payload key: ${customerKey}`, 'payload');
    const valueKey = meter?.value_settings.event_payload_key ?? 'value';
    if (payload[valueKey] !== undefined && !/^-?\d+(\.\d+)?$/.test(payload[valueKey]!)) {
      throw new StripeHttpError(400, 'invalid_request_error', `The payload value for ${valueKey} must be a number.`, 'payload');
    }
    if (payload[valueKey] !== undefined && payload[valueKey]!.replace(/^-|\./g, '').replace(/^0+/, '').length > MAX_SIGNIFICANT_DIGITS) {
      throw new StripeHttpError(400, 'invalid_request_error', `The value in the event payload can have at most ${MAX_SIGNIFICANT_DIGITS} digits.`, 'payload');
    }

    const slot = `${customer}\n${eventName}`;
    if ((inFlight.get(slot) ?? 0) > 0) {
      concurrencyRefusals++;
      throw new StripeHttpError(429, 'invalid_request_error', 'There is already an operation in flight for this customer and meter; retry after it completes.');
    }
    inFlight.set(slot, 1);
    try {
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      const fault = faults.shift();
      if (fault !== undefined && fault.afterRecording !== true) throwFault(fault, res);
      const identifier = fields.get('identifier') ?? `tst_${(++seq).toString(36)}_${now}`;
      const seen = identifiers.get(identifier);
      if (seen !== undefined && now - seen < IDENTIFIER_WINDOW) {
        throw new StripeHttpError(400, 'invalid_request_error', `An event already exists with identifier ${identifier}.`, 'identifier');
      }
      identifiers.set(identifier, now);
      const event: RecordedMeterEvent = { identifier, event_name: eventName, payload, timestamp, seq: ++seq, created: now };
      // Stripe checks the customer after answering: an unknown one's event is dropped and reported.
      if (unknownCustomers.has(customer) && meter !== undefined) reportDropped(meter, identifier, customer, now);
      else recorded.push(event);
      if (fault !== undefined) throwFault(fault, res);
      send(res, 200, { object: 'billing.meter_event', created: now, event_name: eventName, identifier, livemode: false, payload, timestamp });
    } finally {
      inFlight.set(slot, 0);
    }
  };

  const listMeters = (params: URLSearchParams, res: ServerResponse, path: string): void => {
    const fields = checkParams(params, specs.listMeters, false);
    const status = fields.get('status');
    const all = meters.filter((meter) => status === undefined || meter.status === status);
    send(res, 200, page(all, fields, path));
  };

  const eventSummaries = (id: string, params: URLSearchParams, res: ServerResponse, path: string): void => {
    const fields = checkParams(params, specs.eventSummaries, false);
    const meter = meters.find((m) => m.id === id);
    if (meter === undefined) throw new StripeHttpError(404, 'invalid_request_error', `No such billing meter: '${id}'`, 'id');
    const start = Number(fields.get('start_time'));
    const end = Number(fields.get('end_time'));
    const customer = fields.get('customer')!;
    const window = fields.get('value_grouping_window');
    if (!Number.isInteger(start) || !Number.isInteger(end) || start % 60 !== 0 || end % 60 !== 0) {
      throw new StripeHttpError(400, 'invalid_request_error', 'start_time and end_time must be aligned with minute boundaries.');
    }
    if (window === 'day' && (start % DAY !== 0 || end % DAY !== 0)) {
      throw new StripeHttpError(400, 'invalid_request_error', 'For daily granularity, start_time and end_time must align with UTC day boundaries (00:00 UTC).');
    }
    const step = window === 'day' ? DAY : window === 'hour' ? 3600 : end - start;
    const summaries = [];
    for (let from = start; from < end; from += step) {
      const to = Math.min(end, from + step);
      const value = aggregate(meter, customer, from, to);
      if (value === undefined) continue;
      summaries.push({ id: `mrs_${meter.id}_${customer}_${from}`, object: 'billing.meter_event_summary', aggregated_value: value, start_time: from, end_time: to, livemode: false, meter: meter.id });
    }
    send(res, 200, page(summaries, fields, path));
  };

  /**
   * What the meter bills for `customer` over [from, to) from the events received by
   * `receivedBy` (default: all): undefined when no event falls in it. `sum` adds the values
   * kept, `count` counts them, `last` takes the last one (by the same order a window uses).
   */
  const aggregate = (meter: StripeMeter, customer: string, from: number, to: number, receivedBy = Number.POSITIVE_INFINITY): number | undefined => {
    const events = recorded.filter(
      (event) =>
        event.event_name === meter.event_name &&
        event.payload[meter.customer_mapping.event_payload_key] === customer &&
        event.timestamp >= from &&
        event.timestamp < to &&
        event.created <= receivedBy,
    );
    if (events.length === 0) return undefined;
    const valueOf = (event: RecordedMeterEvent) => Number(event.payload[meter.value_settings.event_payload_key] ?? 0);
    // Pre-aggregated meters keep the latest event of each window, a UTC day or a UTC hour; raw meters keep all.
    const counted = meter.event_time_window === null ? events : latestPerWindow(events, meter.event_time_window === 'day' ? DAY : HOUR);
    if (meter.default_aggregation.formula === 'count') return counted.length;
    if (meter.default_aggregation.formula === 'last') return valueOf([...counted].sort(laterLast).at(-1)!);
    return counted.reduce((sum, event) => sum + valueOf(event), 0);
  };

  /** Sorts events so that the one a window keeps comes last. */
  const laterLast = (a: RecordedMeterEvent, b: RecordedMeterEvent): number => (order === 'receipt' ? a.seq - b.seq : a.timestamp - b.timestamp || a.seq - b.seq);

  /** The periods of `subscription` ended at `now`, each as its invoice (draft within the grace, then finalized). */
  const invoicesOf = (subscription: TestSubscription, now: number): (TestInvoice & { allLines: TestInvoiceLine[] })[] => {
    const out: (TestInvoice & { allLines: TestInvoiceLine[] })[] = [];
    for (let start = subscription.start, k = 1; start + subscription.periodSeconds <= now; start += subscription.periodSeconds, k++) {
      const end = start + subscription.periodSeconds;
      const finalizedAt = end + finalizationGrace <= now ? end + finalizationGrace : null;
      // A line per metered item: its meter's value over the period from the events received by finalization.
      const metered = subscription.items.map((item, i): TestInvoiceLine => {
        const meter = meters.find((m) => m.id === item.price.meter)!;
        const quantity = aggregate(meter, subscription.customer, start, end, finalizedAt ?? now) ?? 0;
        return { id: `il_${subscription.id.slice(4)}_${k}${i === 0 ? '' : `_${i}`}`, object: 'line_item', quantity, period: { start, end }, pricing: { type: 'price_details', price_details: { price: item.price.id } } };
      });
      // Stripe's order: pending invoice items first, newest first, then the subscription's lines (https://docs.stripe.com/api/invoices/object#invoice_object-lines).
      const lines = [...itemsOn(subscription, start, end).reverse().map((item) => itemLine(item)), ...metered];
      const id = `in_${subscription.id.slice(4)}_${k}`;
      out.push({
        id,
        object: 'invoice',
        customer: subscription.customer,
        subscription: subscription.id,
        status: finalizedAt === null ? 'draft' : 'open',
        period_start: start,
        period_end: end,
        status_transitions: { finalized_at: finalizedAt },
        lines: { object: 'list', has_more: lines.length > EMBEDDED_LINES, url: `/v1/invoices/${id}/lines`, data: lines.slice(0, EMBEDDED_LINES) },
        allLines: lines,
      });
    }
    return out;
  };

  /**
   * The pending invoice items a period's invoice takes: created while the period ran (the
   * invoice is created at its end and takes the items pending then; a later item waits for the
   * next one), of its customer, and of its subscription or of none.
   */
  const itemsOn = (subscription: TestSubscription, start: number, end: number): TestInvoiceItem[] =>
    invoiceItems.filter((item) => item.customer === subscription.customer && (item.subscription === null || item.subscription === subscription.id) && item.date >= start && item.date < end);

  const itemLine = (item: TestInvoiceItem): TestInvoiceLine => ({
    id: `il_${item.id}`,
    object: 'line_item',
    quantity: item.quantity,
    amount: item.amount,
    period: item.period,
    pricing: item.pricing,
    parent: { type: 'invoice_item_details', invoice_item_details: { invoice_item: item.id } },
  });

  /** The invoice an item went on, once it exists (its period ended). */
  const invoiceOfItem = (item: TestInvoiceItem, now: number): string | null => {
    for (const subscription of subscriptions) {
      if (subscription.customer !== item.customer || (item.subscription !== null && item.subscription !== subscription.id)) continue;
      for (let start = subscription.start, k = 1; start + subscription.periodSeconds <= now; start += subscription.periodSeconds, k++) {
        if (item.date >= start && item.date < start + subscription.periodSeconds) return `in_${subscription.id.slice(4)}_${k}`;
      }
    }
    return null;
  };

  /** `POST /v1/invoiceitems`, with Stripe's Idempotency-Key rules. */
  const createInvoiceItem = (params: URLSearchParams, key: string | undefined, res: ServerResponse): void => {
    const now = clock();
    for (const [saved, entry] of idempotency) if (now - entry.at >= IDEMPOTENCY_WINDOW) idempotency.delete(saved);
    const canonical = [...params].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${k}=${v}`).join('&');
    if (key !== undefined) {
      const saved = idempotency.get(key);
      if (saved !== undefined) {
        if (saved.params !== canonical) {
          throw new StripeHttpError(400, 'idempotency_error', `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`);
        }
        res.setHeader('idempotent-replayed', 'true');
        send(res, saved.status, saved.body);
        return;
      }
    }
    const fields = checkParams(params, specs.createInvoiceItem, true);
    const customer = fields.get('customer');
    if (customer === undefined) throw new StripeHttpError(400, 'invalid_request_error', 'Missing required param: customer.', 'customer');
    const quantity = Number(fields.get('quantity') ?? 1);
    if (!Number.isInteger(quantity) || quantity < 0) throw new StripeHttpError(400, 'invalid_request_error', 'Invalid non-negative integer: quantity', 'quantity');
    const unit = fields.get('unit_amount_decimal');
    // Tally sends unit_amount_decimal (a price's pricing[price] is not modelled: Tally never names one).
    if (unit === undefined || !/^-?\d+(\.\d{1,12})?$/.test(unit)) throw new StripeHttpError(400, 'invalid_request_error', 'Invalid decimal: unit_amount_decimal', 'unit_amount_decimal');
    const currency = fields.get('currency');
    if (currency === undefined) throw new StripeHttpError(400, 'invalid_request_error', 'Missing required param: currency.', 'currency');
    const subscription = fields.get('subscription') ?? null;
    if (subscription !== null && !subscriptions.some((s) => s.id === subscription && s.customer === customer)) {
      throw new StripeHttpError(400, 'invalid_request_error', `No such subscription: '${subscription}'`, 'subscription');
    }
    const metadata: Record<string, string> = {};
    for (const [k, v] of params) {
      const match = /^metadata\[([^\]]+)\]$/.exec(k);
      if (match) metadata[match[1]!] = v;
    }
    const amount = Math.round(Number(unit) * quantity);
    const item: TestInvoiceItem = {
      id: `ii_test${String(invoiceItems.length + 1).padStart(6, '0')}`,
      object: 'invoiceitem',
      customer,
      subscription,
      amount,
      currency,
      quantity,
      description: fields.get('description') ?? null,
      metadata,
      period: { start: Number(params.get('period[start]') ?? now), end: Number(params.get('period[end]') ?? now) },
      date: now,
      invoice: null,
      pricing: { type: 'price_details', price_details: null, unit_amount_decimal: unit },
      discountable: params.has('discountable') ? params.get('discountable') === 'true' : amount >= 0,
      livemode: false,
    };
    invoiceItems.push(item);
    if (key !== undefined) idempotency.set(key, { params: canonical, at: now, status: 200, body: item });
    send(res, 200, item);
  };

  /** `GET /v1/invoiceitems`: newest first; `created[gte]` and the like, `customer`, `pending`. */
  const listInvoiceItems = (params: URLSearchParams, res: ServerResponse, path: string): void => {
    const fields = checkParams(params, specs.listInvoiceItems, false);
    const customer = fields.get('customer');
    const pending = fields.get('pending');
    const now = clock();
    const created = (op: string) => (params.has(`created[${op}]`) ? Number(params.get(`created[${op}]`)) : undefined);
    const all = invoiceItems
      .map((item) => ({ ...item, invoice: invoiceOfItem(item, now) }))
      .filter((item) => customer === undefined || item.customer === customer)
      .filter((item) => pending === undefined || (pending === 'true') === (item.invoice === null))
      .filter((item) => (created('gte') ?? -Infinity) <= item.date && (created('gt') ?? -Infinity) < item.date && item.date <= (created('lte') ?? Infinity) && item.date < (created('lt') ?? Infinity))
      .reverse();
    send(res, 200, page(all, fields, path));
  };

  const subscriptionObject = (subscription: TestSubscription, now: number) => {
    const elapsed = Math.max(0, now - subscription.start);
    const currentStart = subscription.start + Math.floor(elapsed / subscription.periodSeconds) * subscription.periodSeconds;
    return {
      id: subscription.id,
      object: 'subscription',
      customer: subscription.customer,
      status: 'active',
      start_date: subscription.start,
      items: {
        object: 'list',
        has_more: false,
        data: subscription.items.map((item) => ({
          id: item.id,
          object: 'subscription_item',
          current_period_start: currentStart,
          current_period_end: currentStart + subscription.periodSeconds,
          price: {
            id: item.price.id,
            object: 'price',
            billing_scheme: item.price.billing_scheme,
            tiers_mode: item.price.tiers_mode,
            transform_quantity: item.price.transform_quantity,
            unit_amount_decimal: item.price.unit_amount_decimal,
            unit_amount: item.price.unit_amount_decimal === null ? null : Math.floor(Number(item.price.unit_amount_decimal)),
            currency: item.price.currency,
            type: 'recurring',
            recurring: { interval: 'day', interval_count: subscription.periodSeconds / DAY, meter: item.price.meter, usage_type: 'metered' },
          },
        })),
      },
    };
  };

  const listSubscriptions = (params: URLSearchParams, res: ServerResponse, path: string): void => {
    const fields = checkParams(params, specs.listSubscriptions, false);
    const customer = fields.get('customer');
    const now = clock();
    const all = subscriptions.filter((s) => customer === undefined || s.customer === customer).map((s) => subscriptionObject(s, now));
    send(res, 200, page(all, fields, path));
  };

  /** `GET /v1/invoices/{id}/lines`: every line of the invoice, cursor pagination. */
  const listInvoiceLines = (id: string, params: URLSearchParams, res: ServerResponse, path: string): void => {
    const fields = checkParams(params, specs.listInvoiceLines, false);
    const invoice = subscriptions.flatMap((s) => invoicesOf(s, clock())).find((i) => i.id === id);
    if (invoice === undefined) throw new StripeHttpError(404, 'invalid_request_error', `No such invoice: '${id}'`, 'invoice');
    send(res, 200, page(invoice.allLines, fields, path));
  };

  const listInvoices = (params: URLSearchParams, res: ServerResponse, path: string): void => {
    const fields = checkParams(params, specs.listInvoices, false);
    const customer = fields.get('customer');
    const status = fields.get('status');
    const now = clock();
    // Newest first, as Stripe lists them.
    const all = subscriptions
      .filter((s) => customer === undefined || s.customer === customer)
      .flatMap((s) => invoicesOf(s, now))
      .filter((invoice) => status === undefined || invoice.status === status)
      .sort((a, b) => b.period_start - a.period_start)
      .map(({ allLines: _all, ...invoice }) => invoice);
    send(res, 200, page(all, fields, path));
  };

  /** One meter error report per dropped event: its validation window is the second it was received. */
  const reportDropped = (meter: StripeMeter, identifier: string, customer: string, now: number): void => {
    const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
    coreEvents.push({
      id: `evt_test_${String(coreEvents.length + 1).padStart(6, '0')}`,
      object: 'v2.core.event',
      type: 'v1.billing.meter.error_report_triggered',
      created: iso(now + 1),
      livemode: false,
      context: null,
      reason: null,
      related_object: { id: meter.id, type: 'billing.meter', url: `/v1/billing/meters/${meter.id}` },
      data: {
        developer_message_summary: 'There is 1 invalid event',
        reason: {
          error_count: 1,
          error_types: [{ code: 'meter_event_customer_not_found', error_count: 1, sample_errors: [{ error_message: `No customer found with id ${customer}.`, request: { identifier } }] }],
        },
        validation_start: iso(now),
        validation_end: iso(now + 1),
      },
    });
  };

  /** `GET /v2/core/events`: newest first, `page` is the offset of the next page (opaque to the SDK, which follows next_page_url). */
  const listCoreEvents = (params: URLSearchParams, res: ServerResponse, path: string): void => {
    for (const key of params.keys()) {
      const name = key.replace(/\[.*$/, '');
      if (!CORE_EVENT_PARAMS.has(name)) throw new StripeHttpError(400, 'invalid_request_error', `Received unknown parameter: ${name}`, name);
    }
    const types = [...params].filter(([key]) => /^types(\[\d*\])?$/.test(key)).map(([, value]) => value);
    if (types.length > 20) throw new StripeHttpError(400, 'invalid_request_error', 'types: at most 20 event names', 'types');
    const limit = Math.min(100, Math.max(1, Number(params.get('limit') ?? 20)));
    const offset = Number(params.get('page') ?? 0);
    const objectId = params.get('object_id');
    const created = (op: string) => params.get(`created[${op}]`);
    const oldest = new Date((clock() - CORE_EVENTS_DAYS * DAY) * 1000).toISOString();
    const all = coreEvents
      .filter((e) => e.created >= oldest)
      .filter((e) => types.length === 0 || types.includes(e.type))
      .filter((e) => objectId === null || e.related_object.id === objectId)
      .filter((e) => (created('gt') ?? '') < e.created && (created('gte') ?? '') <= e.created)
      .filter((e) => (created('lt') === null || e.created < created('lt')!) && (created('lte') === null || e.created <= created('lte')!))
      .reverse();
    const data = all.slice(offset, offset + limit);
    const next = new URLSearchParams(params);
    next.set('page', String(offset + limit));
    send(res, 200, { data, next_page_url: offset + limit < all.length ? `${path}?${next.toString()}` : null, previous_page_url: null });
  };

  const latestPerWindow = (events: RecordedMeterEvent[], size: number): RecordedMeterEvent[] => {
    const byDay = new Map<number, RecordedMeterEvent>();
    for (const event of events) {
      const day = Math.floor(event.timestamp / size);
      const held = byDay.get(day);
      const later = held === undefined || (order === 'receipt' ? event.seq > held.seq : event.timestamp > held.timestamp || (event.timestamp === held.timestamp && event.seq > held.seq));
      if (later) byDay.set(day, event);
    }
    return [...byDay.values()];
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      rawRequests.push({ headers: req.headers, body });
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const record = (status: number) => requests.push({ method: req.method ?? '', path: url.pathname, status, query: url.search });
      res.on('finish', () => record(res.statusCode));
      res.on('close', () => {
        if (!res.writableFinished) record(0);
      });
      (async () => {
        if (req.headers.authorization !== `Bearer ${apiKey}`) {
          throw new StripeHttpError(401, 'invalid_request_error', 'Invalid API Key provided.');
        }
        const summaries = /^\/v1\/billing\/meters\/([^/]+)\/event_summaries$/.exec(url.pathname);
        const invoiceLines = /^\/v1\/invoices\/([^/]+)\/lines$/.exec(url.pathname);
        if (req.method === 'POST' && url.pathname === '/v1/billing/meter_events') {
          if (!(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
            throw new StripeHttpError(400, 'invalid_request_error', 'Invalid request: the body must be application/x-www-form-urlencoded.');
          }
          await createEvent(new URLSearchParams(body), res);
        } else if (req.method === 'GET' && url.pathname === '/v1/billing/meters') {
          listMeters(url.searchParams, res, url.pathname);
        } else if (req.method === 'GET' && url.pathname === '/v1/subscriptions') {
          listSubscriptions(url.searchParams, res, url.pathname);
        } else if (req.method === 'GET' && url.pathname === '/v1/invoices') {
          listInvoices(url.searchParams, res, url.pathname);
        } else if (req.method === 'GET' && invoiceLines) {
          listInvoiceLines(decodeURIComponent(invoiceLines[1]!), url.searchParams, res, url.pathname);
        } else if (req.method === 'POST' && url.pathname === '/v1/invoiceitems') {
          const key = req.headers['idempotency-key'];
          createInvoiceItem(new URLSearchParams(body), typeof key === 'string' ? key : undefined, res);
        } else if (req.method === 'GET' && url.pathname === '/v1/invoiceitems') {
          listInvoiceItems(url.searchParams, res, url.pathname);
        } else if (req.method === 'GET' && url.pathname === '/v2/core/events') {
          listCoreEvents(url.searchParams, res, url.pathname);
        } else if (req.method === 'GET' && summaries) {
          eventSummaries(decodeURIComponent(summaries[1]!), url.searchParams, res, url.pathname);
        } else {
          throw new StripeHttpError(404, 'invalid_request_error', `Unrecognized request URL (${req.method}: ${url.pathname}).`);
        }
      })().catch((error: unknown) => {
        if (res.destroyed || res.headersSent) return;
        if (error instanceof StripeHttpError) {
          send(res, error.status, { error: { type: error.type, message: error.message, ...(error.param === undefined ? {} : { param: error.param }) } });
        } else if (error instanceof DroppedConnection) {
          res.destroy();
        } else {
          send(res, 500, { error: { type: 'api_error', message: (error as Error).message } });
        }
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  let meterSeq = 0;

  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    addMeter(eventName, overrides = {}) {
      const now = clock();
      const meter: StripeMeter = {
        id: `mtr_test_${(++meterSeq).toString().padStart(4, '0')}`,
        object: 'billing.meter',
        created: now,
        updated: now,
        display_name: eventName,
        event_name: eventName,
        event_time_window: 'day',
        default_aggregation: { formula: 'sum' },
        customer_mapping: { event_payload_key: 'stripe_customer_id', type: 'by_id' },
        value_settings: { event_payload_key: 'value' },
        status: 'active',
        status_transitions: { deactivated_at: null },
        livemode: false,
        ...overrides,
      };
      meters.push(meter);
      return meter;
    },
    events: () => [...recorded],
    forgetCustomer(customer) {
      unknownCustomers.add(customer);
    },
    coreEvents: () => [...coreEvents],
    billedByDay(eventName, customer) {
      const meter = meters.find((m) => m.event_name === eventName);
      if (meter === undefined) return {};
      const days = new Set(recorded.filter((e) => e.event_name === eventName).map((e) => Math.floor(e.timestamp / DAY)));
      const out: Record<string, number> = {};
      for (const day of [...days].sort()) {
        const value = aggregate(meter, customer, day * DAY, (day + 1) * DAY);
        if (value !== undefined) out[new Date(day * DAY * 1000).toISOString().slice(0, 10)] = value;
      }
      return out;
    },
    fail(fault, count = 1) {
      for (let i = 0; i < count; i++) faults.push(fault);
    },
    clearFaults() {
      faults.length = 0;
    },
    setDelay(ms) {
      delayMs = ms;
    },
    setClock(now) {
      clock = now;
    },
    setOrder(next) {
      order = next;
    },
    addSubscription({ customer, eventName, alsoEventNames = [], start, periodSeconds, billingScheme, tiersMode, packageSize, unitAmountDecimal = '3' }) {
      const n = String(subscriptions.length + 1).padStart(4, '0');
      const tiered = billingScheme === 'tiered' || tiersMode !== undefined;
      const itemOn = (name: string, i: number): TestSubscriptionItem => {
        const meter = meters.find((m) => m.event_name === name);
        if (meter === undefined) throw new Error(`no meter has event_name ${name}`);
        const suffix = i === 0 ? '' : `_${i}`;
        const price: TestSubscriptionItem['price'] = {
          id: `price_test${n}${suffix}`,
          meter: meter.id,
          billing_scheme: tiered ? 'tiered' : 'per_unit',
          tiers_mode: tiered ? (tiersMode ?? 'graduated') : null,
          transform_quantity: packageSize === undefined ? null : { divide_by: packageSize, round: 'up' },
          unit_amount_decimal: tiered ? null : unitAmountDecimal,
          currency: 'usd',
        };
        return { id: `si_test${n}${suffix}`, price };
      };
      const items = [eventName, ...alsoEventNames].map(itemOn);
      const subscription: TestSubscription = { id: `sub_test${n}`, customer, start, periodSeconds, item: items[0]!, items };
      subscriptions.push(subscription);
      return subscription;
    },
    setFinalizationGrace(seconds) {
      if (seconds < 0 || seconds > MAX_FINALIZATION_GRACE) throw new Error('Stripe allows a finalization grace period of 0 to 72 hours');
      finalizationGrace = seconds;
    },
    invoices: (customer) =>
      subscriptions
        .filter((s) => s.customer === customer)
        .flatMap((s) => invoicesOf(s, clock()))
        .map(({ allLines, ...invoice }) => ({ ...invoice, lines: { ...invoice.lines, has_more: false, data: allLines } })),
    invoiceItems: (customer) => invoiceItems.filter((item) => customer === undefined || item.customer === customer).map((item) => ({ ...item, invoice: invoiceOfItem(item, clock()) })),
    requests,
    rawRequests,
    concurrencyRefusals: () => concurrencyRefusals,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

class DroppedConnection extends Error {}

function throwFault(fault: StripeFault, _res: ServerResponse): never {
  if ('drop' in fault) throw new DroppedConnection('connection dropped');
  throw new StripeHttpError(fault.status, fault.status === 429 ? 'invalid_request_error' : 'api_error', fault.status === 429 ? 'Too many requests.' : 'An unknown error occurred.');
}

/** Checks `params` against an operation's parameters (unknown, missing, too long, not in the enum): Stripe's 400s. */
function checkParams(params: URLSearchParams, spec: OperationSpec, form: boolean): Map<string, string> {
  const fields = new Map<string, string>();
  for (const [key, value] of params) {
    const name = key.replace(/\[.*$/, '');
    const rule = spec.parameters.get(name);
    if (rule === undefined) throw new StripeHttpError(400, 'invalid_request_error', `Received unknown parameter: ${name}`, name);
    if (rule.maxLength !== undefined && value.length > rule.maxLength) {
      throw new StripeHttpError(400, 'invalid_request_error', `Invalid string: ${value.slice(0, 20)}...; must be at most ${rule.maxLength} characters`, name);
    }
    if (rule.enum !== undefined && !rule.enum.includes(value)) throw new StripeHttpError(400, 'invalid_request_error', `Invalid ${name}: must be one of ${rule.enum.join(', ')}`, name);
    if (name === key) fields.set(name, value);
    else if (!form && !key.startsWith(`${name}[`)) fields.set(name, value);
  }
  for (const [name, rule] of spec.parameters) {
    const present = fields.has(name) || [...params.keys()].some((key) => key.startsWith(`${name}[`));
    if (rule.required && !present) throw new StripeHttpError(400, 'invalid_request_error', `Missing required param: ${name}.`, name);
  }
  return fields;
}

function page<T extends { id: string }>(items: readonly T[], fields: Map<string, string>, url: string): { object: 'list'; data: T[]; has_more: boolean; url: string } {
  const limit = Math.min(100, Math.max(1, Number(fields.get('limit') ?? 10)));
  const after = fields.get('starting_after');
  const start = after === undefined ? 0 : items.findIndex((item) => item.id === after) + 1;
  const data = items.slice(start, start + limit);
  return { object: 'list', data, has_more: start + limit < items.length, url };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_test_${Date.now().toString(36)}` });
  res.end(JSON.stringify(body));
}
