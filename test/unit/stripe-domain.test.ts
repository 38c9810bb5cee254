import { readCloserConfig } from '../../src/adapters/wiring/handoff-config';
import { readStripeConfig } from '../../src/adapters/stripe/stripe-config';
import { outcomeOf } from '../../src/adapters/stripe/stripe-meter-api';
import { daysOfPeriod, meterProblems, neededFinalizationDelay } from '../../src/app/billing/stripe-reconcile';
import { ConfigError } from '../../src/domain/errors';
import fc from 'fast-check';
import {
  billedAtFinalization,
  compareEvents,
  finalizedInvoiceHolding,
  firstDayOfPeriod,
  invoiceItemBlocker,
  invoiceItemFor,
  invoiceItemTallyId,
  itemKeyMayBeForgotten,
  lateUsageEvent,
  meterErrorExpiry,
  meterErrorReadSince,
  unbilledUnits,
  type StripeOutboxRecord,
  isTooOldForStripe,
  latestSendable,
  meterEventIdentifier,
  meterEventTimestamp,
  eventStep,
  meterValue,
  oldestSendableDay,
  parseStripeMeters,
  runningTotalsDue,
} from '../../src/domain/billing/stripe';
import { stripeOperationSpecs } from '../support/stripe-server';

describe('meter events of closed-day revisions', () => {
  it('derives one identifier per (scope, account, metric, day, revision), at most 100 characters', () => {
    const subject = { account: 'a'.repeat(64), metric: 'authorization_requests', day: '2026-11-20', revision: 9999 };
    const ids = new Set([
      meterEventIdentifier('usage', subject),
      meterEventIdentifier('usage-prod', subject),
      meterEventIdentifier('usage', { ...subject, account: 'b' }),
      meterEventIdentifier('usage', { ...subject, metric: 'bytes' }),
      meterEventIdentifier('usage', { ...subject, day: '2026-11-21' }),
      meterEventIdentifier('usage', { ...subject, revision: 2 }),
      meterEventIdentifier('usage', { ...subject, adjusted: 1 }),
      meterEventIdentifier('usage', { ...subject, adjusted: 99_999 }),
    ]);
    expect(ids.size).toBe(8);
    expect(meterEventIdentifier('usage', subject)).toBe(meterEventIdentifier('usage', { ...subject }));
    // No adjustment is the identifier of the revision alone.
    expect(meterEventIdentifier('usage', { ...subject, adjusted: 0 })).toBe(meterEventIdentifier('usage', subject));
    for (const id of ids) expect(id.length).toBeLessThanOrEqual(100);
  });

  it('stamps a revision inside its UTC day, a later revision later', () => {
    const start = Date.parse('2026-11-20T00:00:00Z') / 1000;
    const stamps = [1, 2, 3, 50].map((revision) => meterEventTimestamp('2026-11-20', revision));
    expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
    expect(new Set(stamps).size).toBe(4);
    for (const stamp of [...stamps, meterEventTimestamp('2026-11-20', 10 ** 9)]) {
      expect(stamp).toBeGreaterThanOrEqual(start);
      expect(stamp).toBeLessThan(start + 86_400);
    }
  });

  it('orders every later event of a day after the earlier ones: revisions and adjustments only grow', () => {
    // A day's events over time: revision 1, an adjustment, revision 2 (a metric it did not change keeps revision 1), two more adjustments.
    const history = [
      { revision: 1 },
      { revision: 1, adjusted: 1 },
      { revision: 2, adjusted: 1 },
      { revision: 2, adjusted: 3 },
    ];
    const stamps = history.map((subject) => meterEventTimestamp('2026-11-20', eventStep(subject)));
    expect(stamps).toEqual([...new Set(stamps)].sort((a, b) => a - b));
  });

  it('keeps a day of margin inside Stripe\'s 35 days', () => {
    const now = new Date('2026-07-06T00:00:00Z');
    expect(oldestSendableDay(now)).toBe('2026-06-02');
    expect(isTooOldForStripe('2026-06-02', 1, now)).toBe(false);
    expect(isTooOldForStripe('2026-06-01', 1, now)).toBe(true);
    expect(oldestSendableDay(new Date('2026-07-06T00:00:00.500Z'))).toBe('2026-06-03');
  });

  it('sends each metric at the newest revision that changed it, with revisions and adjustments summed', () => {
    const revisions: { revision: number; metrics: Record<string, number> }[] = [
      { revision: 1, metrics: { requests: 10, bytes: 500 } },
      { revision: 3, metrics: { requests: 2 } },
    ];
    expect(latestSendable(revisions, { requests: -1 }, ['requests', 'bytes', 'authorization_requests'])).toEqual([
      { metric: 'requests', revision: 3, value: 11 },
      { metric: 'bytes', revision: 1, value: 500 },
      { metric: 'authorization_requests', revision: 1, value: 0 },
    ]);
    expect(latestSendable([], {}, ['requests'])).toEqual([]);
    expect([meterValue(-4), meterValue(12.4), meterValue(12)]).toEqual(['0', '12', '12']);
  });

  it('maps Stripe answers: already exists is delivered, 429/5xx/no answer retried, other 4xx refused', () => {
    expect(outcomeOf({ statusCode: 400, message: 'An event already exists with identifier tally-x.' }).kind).toBe('already-exists');
    expect(outcomeOf({ statusCode: 429, message: 'busy' }).kind).toBe('retry');
    expect(outcomeOf({ statusCode: 503, message: 'down' }).kind).toBe('retry');
    expect(outcomeOf(new Error('socket hang up')).kind).toBe('retry');
    expect(outcomeOf({ statusCode: 400, message: 'Timestamp must be within the past 35 calendar days.' }).kind).toBe('refused');
    expect(outcomeOf({ statusCode: 401, message: 'Invalid API Key provided.' }).kind).toBe('refused');
  });

  it('finds what is wrong with a meter', () => {
    const good = { id: 'mtr_1', eventName: 'cdn_requests', status: 'active', eventTimeWindow: 'day', formula: 'sum', customerKey: 'stripe_customer_id', valueKey: 'value' };
    expect(meterProblems('cdn_requests', [good])).toEqual([]);
    expect(meterProblems('cdn_requests', [{ ...good, status: 'inactive' }])).toEqual(['the meter of cdn_requests is not active']);
    expect(meterProblems('cdn_requests', [{ ...good, eventTimeWindow: 'hour', formula: 'count', valueKey: 'n' }])).toHaveLength(3);
    expect(meterProblems('cdn_bytes', [good])).toEqual(['no meter has event_name cdn_bytes']);
  });
});

describe('Stripe settings', () => {
  const base = { TALLY_STRIPE_API_KEY: 'sk_test_abcdefgh12345678', TALLY_STRIPE_METERS: '{"requests":"cdn_requests"}' };

  it('reads the key, the base and the meters; defaults to Stripe\'s API', () => {
    expect(readStripeConfig(base)).toEqual({ key: { kind: 'key', apiKey: base.TALLY_STRIPE_API_KEY }, apiBase: 'https://api.stripe.com', meters: { requests: 'cdn_requests' }, runningMinutes: 60, lateUsage: 'webhook', window: 'day' });
    expect(readStripeConfig({ ...base, TALLY_STRIPE_RUNNING_MINUTES: '0' }).runningMinutes).toBe(0);
    expect(readStripeConfig({ ...base, TALLY_STRIPE_LATE_USAGE: 'invoice-item' }).lateUsage).toBe('invoice-item');
    expect(() => readStripeConfig({ ...base, TALLY_STRIPE_LATE_USAGE: 'credit-note' })).toThrow(/TALLY_STRIPE_LATE_USAGE must be webhook .* or invoice-item/);
    expect(readStripeConfig({ ...base, TALLY_STRIPE_API_BASE: 'http://127.0.0.1:12111' }).apiBase).toBe('http://127.0.0.1:12111');
  });

  it.each([
    [{ ...base, TALLY_STRIPE_API_KEY: 'pk_test_abcdefgh12345678' }, 'TALLY_STRIPE_API_KEY'],
    [{ ...base, TALLY_STRIPE_API_KEY_PARAMETER: '/tally/stripe' }, 'exactly one'],
    [{ ...base, TALLY_STRIPE_API_BASE: 'ftp://x' }, 'TALLY_STRIPE_API_BASE'],
    [{ ...base, TALLY_STRIPE_METERS: '{"requests":"a","bytes":"a"}' }, 'each metric needs its own meter'],
    [{ ...base, TALLY_STRIPE_METERS: '[]' }, 'TALLY_STRIPE_METERS'],
    [{ ...base, TALLY_STRIPE_RUNNING_MINUTES: '1441' }, 'TALLY_STRIPE_RUNNING_MINUTES'],
    [{ ...base, TALLY_STRIPE_RUNNING_MINUTES: '-1' }, 'TALLY_STRIPE_RUNNING_MINUTES'],
    [{ ...base, TALLY_STRIPE_RUNNING_MINUTES: '1.5' }, 'TALLY_STRIPE_RUNNING_MINUTES'],
  ])('refuses a bad setting, naming it and never the key (%#)', (env, message) => {
    expect(() => readStripeConfig(env)).toThrow(ConfigError);
    expect(() => readStripeConfig(env)).toThrow(message);
    try {
      readStripeConfig(env);
    } catch (error) {
      expect((error as Error).message).not.toContain('abcdefgh12345678');
    }
  });

  it('parses the meter map', () => {
    expect(parseStripeMeters('{"requests":"cdn_requests","bytes":"cdn_bytes"}')).toEqual({ requests: 'cdn_requests', bytes: 'cdn_bytes' });
    expect(() => parseStripeMeters('{"Requests":"x"}')).toThrow('not a metric name');
  });
});

describe('the Stripe test server follows the vendored OpenAPI subset', () => {
  const specs = stripeOperationSpecs();

  it('accepts exactly the documented parameters of each operation, with their required ones', () => {
    expect(Object.fromEntries([...specs.createEvent.parameters].map(([name, rule]) => [name, rule.required]))).toEqual({
      event_name: true,
      expand: false,
      identifier: false,
      payload: true,
      timestamp: false,
    });
    expect(specs.createEvent.parameters.get('identifier')?.maxLength).toBe(100);
    expect([...specs.listMeters.parameters.keys()].sort()).toEqual(['ending_before', 'expand', 'limit', 'starting_after', 'status']);
    expect(Object.fromEntries([...specs.eventSummaries.parameters].map(([name, rule]) => [name, rule.required]))).toEqual({
      customer: true,
      end_time: true,
      ending_before: false,
      expand: false,
      limit: false,
      start_time: true,
      starting_after: false,
      value_grouping_window: false,
    });
    expect(specs.eventSummaries.parameters.get('value_grouping_window')?.enum).toEqual(['day', 'hour']);
  });
});

describe('exports stay outside the ingested log prefix', () => {
  const env = { TALLY_TABLE: 'usage', TALLY_EXPORT_BUCKET: 'tally-logs', TALLY_LOG_BUCKET: 'tally-logs' };

  it.each([
    ['cloudfront/', 'cloudfront/exports/'],
    ['', 'exports/'],
    ['exports/cdn/', 'exports/'],
  ])('refuses log prefix "%s" with export prefix "%s" in the same bucket', (logPrefix, exportPrefix) => {
    expect(() => readCloserConfig({ ...env, TALLY_LOG_PREFIX: logPrefix, TALLY_EXPORT_PREFIX: exportPrefix })).toThrow('exports would be ingested as logs');
  });

  it('accepts prefixes apart, or another bucket', () => {
    expect(readCloserConfig({ ...env, TALLY_LOG_PREFIX: 'cloudfront/', TALLY_EXPORT_PREFIX: 'exports/' }).exportPrefix).toBe('exports/');
    expect(readCloserConfig({ ...env, TALLY_EXPORT_BUCKET: 'tally-exports', TALLY_LOG_PREFIX: '', TALLY_EXPORT_PREFIX: 'exports/' }).exportBucket).toBe('tally-exports');
  });
});

describe('running totals of open days', () => {
  const subject = { account: 'acme', metric: 'requests', day: '2026-11-20' };

  it('gives every running total its own identifier, before revision 1 in time and in order', () => {
    const ids = new Set([1, 2, 3].map((running) => meterEventIdentifier('usage', { ...subject, revision: 0, running })));
    ids.add(meterEventIdentifier('usage', { ...subject, revision: 1 }));
    expect(ids.size).toBe(4);
    expect(meterEventIdentifier('usage', { ...subject, revision: 0, running: 7 })).toMatch(/^tally-2026-11-20-p7-[0-9a-f]{20}$/);
    expect(meterEventTimestamp('2026-11-20', 0)).toBe(Date.parse('2026-11-20T00:00:00Z') / 1000);
    expect(meterEventTimestamp('2026-11-20', 0)).toBeLessThan(meterEventTimestamp('2026-11-20', eventStep({ revision: 1 })));
    const shuffled = [{ revision: 1 }, { revision: 0, running: 3 }, { revision: 0, running: 1 }, { revision: 1, adjusted: 1 }, { revision: 0, running: 2 }];
    expect([...shuffled].sort(compareEvents)).toEqual([{ revision: 0, running: 1 }, { revision: 0, running: 2 }, { revision: 0, running: 3 }, { revision: 1 }, { revision: 1, adjusted: 1 }]);
  });

  it('is due only when the total changed, never a first 0, never once the day has a closed record', () => {
    expect(runningTotalsDue([], { requests: 0, bytes: 5 })).toEqual([{ metric: 'bytes', running: 1, value: 5 }]);
    const sent = [
      { metric: 'requests', revision: 0, running: 1, value: 10 },
      { metric: 'requests', revision: 0, running: 2, value: 12 },
      { metric: 'bytes', revision: 0, running: 1, value: 900 },
    ];
    expect(runningTotalsDue(sent, { requests: 12, bytes: 900 })).toEqual([]);
    expect(runningTotalsDue(sent, { requests: 13, bytes: 900 })).toEqual([{ metric: 'requests', running: 3, value: 13 }]);
    // A total that fell (a negative adjustment) is a change too; negative totals are sent as 0.
    expect(runningTotalsDue(sent, { requests: -4, bytes: 900 })).toEqual([{ metric: 'requests', running: 3, value: 0 }]);
    expect(runningTotalsDue([...sent, { metric: 'requests', revision: 1, value: 12 }], { requests: 99, bytes: 900 })).toEqual([]);
  });

  it('never sends the same total twice in a row, whatever the sequence of counts (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -5, max: 5 }), { maxLength: 40 }), (counts) => {
        const records: { metric: string; revision: number; running: number; value: number }[] = [];
        for (const count of counts) for (const due of runningTotalsDue(records, { requests: count })) records.push({ ...due, revision: 0 });
        const values = records.map((r) => r.value);
        expect(records.map((r) => r.running)).toEqual(values.map((_, i) => i + 1));
        for (let i = 1; i < values.length; i++) expect(values[i]).not.toBe(values[i - 1]);
        // The last total sent is the last count (as a meter value), unless nothing but zeros came.
        const last = counts.length === 0 ? 0 : Math.max(0, counts[counts.length - 1]!);
        expect(values.length === 0 ? 0 : values[values.length - 1]).toBe(last);
      }),
    );
  });
});

describe('invoices and late usage', () => {
  const midnight = (day: string) => Date.parse(`${day}T00:00:00Z`) / 1000;
  const record = (over: Partial<StripeOutboxRecord>): StripeOutboxRecord => ({
    account: 'acme',
    metric: 'requests',
    day: '2026-06-01',
    revision: 1,
    customer: 'cus_1',
    eventName: 'cdn_requests',
    identifier: 'tally-2026-06-01-r1-x',
    timestamp: midnight('2026-06-01') + 1,
    value: 10,
    state: 'delivered',
    attempts: 1,
    createdAt: '2026-06-03T00:00:00Z',
    ...over,
  });

  it('finds the finalized invoice whose period holds a timestamp, never a draft', () => {
    const invoices = [
      { id: 'in_2', periodStart: midnight('2026-06-04'), periodEnd: midnight('2026-06-07'), finalizedAt: null },
      { id: 'in_1', periodStart: midnight('2026-06-01'), periodEnd: midnight('2026-06-04'), finalizedAt: midnight('2026-06-04') + 3600 },
    ];
    expect(finalizedInvoiceHolding(invoices, midnight('2026-06-03') + 2)?.id).toBe('in_1');
    expect(finalizedInvoiceHolding(invoices, midnight('2026-06-04'))).toBeUndefined();
    expect(finalizedInvoiceHolding(invoices, midnight('2026-05-31'))).toBeUndefined();
  });

  it('takes what the invoice billed from what Stripe acknowledged by finalization', () => {
    const finalizedAt = Date.parse('2026-06-04T01:00:00Z') / 1000;
    const records = [
      record({ revision: 0, running: 1, value: 4, deliveredAt: '2026-06-01T12:00:00Z' }),
      record({ revision: 0, running: 2, value: 9, deliveredAt: '2026-06-02T00:00:00Z' }),
      record({ revision: 1, value: 10, deliveredAt: '2026-06-04T02:00:00Z' }),
    ];
    expect(billedAtFinalization(records, finalizedAt)).toBe(9);
    expect(billedAtFinalization([], finalizedAt)).toBe(0);
  });

  it('takes as billed an event first attempted before finalization and acknowledged after (a lost answer, then "already exists"), never one refused', () => {
    const finalizedAt = Date.parse('2026-06-04T01:00:00Z') / 1000;
    const running = record({ revision: 0, running: 1, value: 4, deliveredAt: '2026-06-01T12:00:00Z' });
    const lostAnswer = record({ revision: 1, value: 10, attempts: 2, firstSentAt: '2026-06-04T00:59:00Z', sentAt: '2026-06-04T02:00:00Z', deliveredAt: '2026-06-04T02:00:00Z' });
    // Before, only acknowledgements counted: 4, and an invoice item billed the 6 the invoice had billed already.
    expect(billedAtFinalization([running, lostAnswer], finalizedAt)).toBe(10);
    expect(billedAtFinalization([running, { ...lostAnswer, firstSentAt: '2026-06-04T01:30:00Z' }], finalizedAt)).toBe(4);
    expect(billedAtFinalization([running, { ...lostAnswer, state: 'failed', deliveredAt: undefined }], finalizedAt)).toBe(4);
  });

  it('starts a link on the first day whose midnight is in the period', () => {
    expect(firstDayOfPeriod(midnight('2026-06-05'))).toBe('2026-06-05');
    expect(firstDayOfPeriod(midnight('2026-06-05') + 10 * 3600)).toBe('2026-06-06');
  });

  it('gives a late-usage event one id per record, whatever its time; the too-old case keeps its former id', () => {
    const late = { reason: 'invoice-finalized' as const, invoice: 'in_1', billed: 9 };
    const a = JSON.parse(lateUsageEvent('usage', record({}), late, '2026-06-05T00:00:00Z').body);
    const b = JSON.parse(lateUsageEvent('usage', record({}), late, '2026-06-06T00:00:00Z').body);
    expect(a.id).toBe(b.id);
    expect(a).toMatchObject({ type: 'stripe.late_usage', data: { invoice: 'in_1', billed: 9, total: 10, difference: 1 } });
    expect(lateUsageEvent('usage', record({ revision: 2, identifier: 'tally-2026-06-01-r2-y' }), late, 'x').id).not.toBe(a.id);
    expect(lateUsageEvent('usage', record({}), { reason: 'too-old', invoice: null, billed: null }, 'x').id).not.toBe(a.id);
  });
});

describe('late usage as invoice items', () => {
  const perUnit = { billingScheme: 'per_unit', tiersMode: null, packageSize: null, unitAmountDecimal: '2.5', currency: 'eur' };

  it('bills a per-unit price only: tiered, volume and package prices get the webhook alone, with the reason', () => {
    expect(invoiceItemBlocker(perUnit)).toBeUndefined();
    expect(invoiceItemBlocker({ ...perUnit, billingScheme: 'tiered', tiersMode: 'graduated', unitAmountDecimal: null })).toMatch(/^graduated tiered price/);
    expect(invoiceItemBlocker({ ...perUnit, billingScheme: 'tiered', tiersMode: 'volume', unitAmountDecimal: null })).toMatch(/^volume price/);
    expect(invoiceItemBlocker({ ...perUnit, packageSize: 100 })).toMatch(/^package price \(100 units a package\)/);
    expect(invoiceItemBlocker({ ...perUnit, unitAmountDecimal: null })).toBe('the price has no unit amount');
  });

  it('is units x the unit amount, a credit (negative unit amount, quantity never negative) when the difference is', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1_000_000, max: 1_000_000 }), fc.constantFrom('2.5', '0', '3', '0.001', '120'), (units, unit) => {
        const item = invoiceItemFor({ ...perUnit, unitAmountDecimal: unit }, units);
        expect(item.quantity).toBe(Math.abs(units));
        expect(item.currency).toBe('eur');
        expect(Number(item.unitAmountDecimal) * item.quantity).toBeCloseTo(units * Number(unit), 6);
        expect(item.unitAmountDecimal.startsWith('-')).toBe(units < 0 && Number(unit) !== 0);
      }),
    );
  });

  it('bills what the invoice and the day\'s items created before left: billed + items + the new units = the total', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 0, max: 10_000 }), fc.array(fc.record({ units: fc.integer({ min: -500, max: 500 }), created: fc.boolean() }), { maxLength: 5 }), (total, billed, items) => {
        const others = items.map(({ units, created }) => ({
          item: { state: created ? ('created' as const) : ('pending' as const), tallyId: 't', subscription: 's', currency: 'usd', unitAmountDecimal: '1', quantity: Math.abs(units), units },
        }));
        const created = items.filter((i) => i.created).reduce((sum, i) => sum + i.units, 0);
        expect(billed + created + unbilledUnits(total, billed, others)).toBe(total);
      }),
    );
  });

  it('names a record\'s item the same on every retry and differently per revision; a key older than Stripe\'s 24 hours is looked up first', () => {
    const subject = { account: 'acme', metric: 'requests', day: '2026-06-01', revision: 2 };
    expect(invoiceItemTallyId('usage', subject)).toBe(invoiceItemTallyId('usage', { ...subject }));
    expect(invoiceItemTallyId('usage', subject)).toMatch(/^tally-ii-2026-06-01-r2-[0-9a-f]{20}$/);
    expect(invoiceItemTallyId('usage', { ...subject, revision: 3 })).not.toBe(invoiceItemTallyId('usage', subject));
    expect(invoiceItemTallyId('usage', { ...subject, adjusted: 1 })).not.toBe(invoiceItemTallyId('usage', subject));
    const first = '2026-06-05T10:00:00.000Z';
    expect(itemKeyMayBeForgotten(undefined, new Date('2026-06-09T00:00:00Z'))).toBe(false);
    expect(itemKeyMayBeForgotten(first, new Date('2026-06-06T09:59:59Z'))).toBe(false);
    expect(itemKeyMayBeForgotten(first, new Date('2026-06-06T10:00:00Z'))).toBe(true);
  });
});

describe("reads of Stripe's meter error reports", () => {
  it('ask from the newest report seen less an hour (none: Stripe\'s 30 days) and keep a report 35 days after Stripe created it', () => {
    expect(meterErrorReadSince(undefined)).toBeUndefined();
    expect(meterErrorReadSince('not a time')).toBeUndefined();
    expect(meterErrorReadSince('2026-06-01T10:30:01.000Z')).toBe('2026-06-01T09:30:01.000Z');
    expect(meterErrorExpiry('2026-06-01T10:30:01.000Z')).toBe(Date.parse('2026-07-06T10:30:01.000Z') / 1000);
  });
});

describe('the days of a billing period', () => {
  const at = (iso: string) => Date.parse(iso) / 1000;

  it('holds the days whose midnight is in [start, end): a period from 10:00 UTC leaves its first calendar day to the period before', () => {
    expect(daysOfPeriod(at('2026-06-01T00:00:00Z'), at('2026-07-01T00:00:00Z'))).toHaveLength(30);
    expect(daysOfPeriod(at('2026-06-01T10:00:00Z'), at('2026-06-04T10:00:00Z'))).toEqual(['2026-06-02', '2026-06-03', '2026-06-04']);
    expect(daysOfPeriod(at('2026-06-01T10:00:00Z'), at('2026-06-01T20:00:00Z'))).toEqual([]);
  });

  it('partitions time: consecutive periods share no day and miss none (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: at('2026-01-01T00:00:00Z'), max: at('2027-01-01T00:00:00Z') }), fc.array(fc.integer({ min: 3600, max: 40 * 86_400 }), { minLength: 1, maxLength: 6 }), (start, lengths) => {
        const days: string[] = [];
        let from = start;
        for (const length of lengths) {
          days.push(...daysOfPeriod(from, from + length));
          from += length;
        }
        expect(new Set(days).size).toBe(days.length);
        expect(days).toEqual([...days].sort());
        if (days.length > 1) expect(Date.parse(`${days.at(-1)}T00:00:00Z`) - Date.parse(`${days[0]}T00:00:00Z`)).toBe((days.length - 1) * 86_400_000);
      }),
    );
  });

  it('needs the interval plus an hour of log delivery with running totals, the close grace and an hour without', () => {
    expect(neededFinalizationDelay(60, 48)).toBe(2 * 3600);
    expect(neededFinalizationDelay(0, 48)).toBe(49 * 3600);
  });
});
