import fc from 'fast-check';
import { compareEvents, meterEventIdentifier } from '../../src/domain/billing/stripe';
import { dayHourTotals, hourEventTimestamp, hoursDue, otherWindowHolding, parseStripeWindow, windowKey, windowsOnStripe } from '../../src/domain/billing/stripe-hours';
import { meterProblems } from '../../src/app/billing/stripe-reconcile';
import { readStripeConfig } from '../../src/adapters/stripe/stripe-config';
import { stripeOutboxKey } from '../../src/domain/counters/keys';

const METRICS = ['requests', 'bytes'] as const;
const hourSums = fc.dictionary(
  fc.integer({ min: 0, max: 23 }).map(String),
  fc.record({ requests: fc.nat({ max: 1_000 }), bytes: fc.nat({ max: 1_000_000 }) }),
  { maxKeys: 24 },
);

describe('hour windows (TALLY_STRIPE_WINDOW=hour)', () => {
  it('a day split into hours sums to its billable total and bills no more, whatever hours are known (none, some, all, backfilled), and known hours stay where they were counted unless a credit reaches them', () => {
    fc.assert(
      fc.property(
        hourSums,
        fc.option(hourSums, { nil: undefined }),
        fc.record({ requests: fc.nat({ max: 5_000 }), bytes: fc.nat({ max: 5_000_000 }) }),
        fc.record({ requests: fc.integer({ min: -500, max: 500 }), bytes: fc.integer({ min: -500, max: 500 }) }),
        fc.boolean(),
        (shards, backfilled, extra, adjustments, covered) => {
          // counted: the shards' hours plus (unless covered) usage counted without an hour.
          const counted: Record<string, number> = {};
          for (const metric of METRICS) counted[metric] = Object.values(shards).reduce((sum, h) => sum + h[metric], 0) + (covered ? 0 : extra[metric]);
          const { hours, unplaced } = dayHourTotals({ counted, shards, ...(backfilled === undefined ? {} : { backfilled: { hours: backfilled } }), adjustments }, METRICS);
          for (const metric of METRICS) {
            const row = hours[metric]!;
            expect(row).toHaveLength(24);
            const total = counted[metric]! + adjustments[metric];
            expect(row.reduce((a, b) => a + b, 0)).toBe(total);
            // What the meter bills (each hour sent as at least 0) is the day's billable total, never above it (a credit larger than hour 00).
            expect(row.reduce((a, b) => a + Math.max(0, b), 0)).toBe(Math.max(0, total));
            if (covered) {
              // The shards cover the day: each hour is its shards' sum (adjustments in hour 00, a larger credit taken from the first hours on), nothing unplaced.
              const own = (hour: number) => (shards[String(hour)]?.[metric] ?? 0) + (hour === 0 ? adjustments[metric] : 0);
              let credit = 0;
              for (let hour = 0; hour < 24; hour++) {
                const expected = own(hour) + credit;
                credit = hour < 23 && expected < 0 ? expected : 0;
                expect(row[hour]).toBe(hour < 23 && expected < 0 ? 0 : expected);
              }
              expect(unplaced[metric]).toBeUndefined();
            }
          }
        },
      ),
    );
  });

  it('sending only the hours due keeps the meter (last value per hour) equal to every hour\'s total, with one event per hour that changed', () => {
    // Successive hour totals of a day, each a running total as a sweep reads it.
    const sweeps = fc.array(fc.array(fc.integer({ min: -5, max: 60 }), { minLength: 24, maxLength: 24 }), { minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(sweeps, (totals) => {
        const records: { hour: number; revision: number; running: number; value: number }[] = [];
        const meter = new Map<number, number>();
        for (const sweep of totals) {
          const before = new Map(meter);
          const due = hoursDue(records, sweep);
          for (const { hour, value, newest } of due) {
            records.push({ hour, revision: 0, running: (newest?.running ?? 0) + 1, value });
            meter.set(hour, value);
          }
          for (let hour = 0; hour < 24; hour++) expect(meter.get(hour) ?? 0).toBe(Math.max(0, sweep[hour]!));
          // Only hours whose (clamped) total changed cost an event.
          const changed = sweep.filter((value, hour) => Math.max(0, value) !== (before.get(hour) ?? 0)).length;
          expect(due).toHaveLength(changed);
        }
      }),
    );
  });

  it('stamps each hour\'s events inside that UTC hour, one second later per step, and names each hour apart', () => {
    expect(hourEventTimestamp('2026-11-01', 15, 0)).toBe(Date.parse('2026-11-01T15:00:00Z') / 1000);
    expect(hourEventTimestamp('2026-11-01', 15, 2)).toBe(Date.parse('2026-11-01T15:00:02Z') / 1000);
    expect(hourEventTimestamp('2026-11-01', 23, 99_999)).toBe(Date.parse('2026-11-01T23:59:59Z') / 1000);
    expect(() => hourEventTimestamp('2026-11-01', 24, 0)).toThrow(RangeError);
    const subject = { account: 'acme', metric: 'requests', day: '2026-11-01', revision: 2 };
    const day = meterEventIdentifier('t', subject);
    const h5 = meterEventIdentifier('t', { ...subject, hour: 5 });
    const h6 = meterEventIdentifier('t', { ...subject, hour: 6 });
    expect(new Set([day, h5, h6]).size).toBe(3);
    expect(h5).toMatch(/^tally-2026-11-01-h05-r2-[0-9a-f]{20}$/);
    expect(day).toMatch(/^tally-2026-11-01-r2-[0-9a-f]{20}$/);
    expect(stripeOutboxKey({ accountId: 'acme', ...subject, hour: 5 }).SK).toBe('2026-11-01#requests#H#05#R#0002');
    expect(stripeOutboxKey({ accountId: 'acme', ...subject }).SK).toBe('2026-11-01#requests#R#0002');
    expect([windowKey({ day: '2026-11-01', hour: 10 }), windowKey({ day: '2026-11-01', hour: 9 }), windowKey({ day: '2026-10-31' })].sort()).toEqual(['2026-10-31', '2026-11-01T09', '2026-11-01T10']);
  });

  it("names, keys and orders an hour's re-splits (its day's hours backfilled after they were sent) apart from the step's first event", () => {
    const subject = { account: 'acme', metric: 'requests', day: '2026-11-01', revision: 2, hour: 0 };
    const first = meterEventIdentifier('t', subject);
    const split1 = meterEventIdentifier('t', { ...subject, split: 1 });
    const split2 = meterEventIdentifier('t', { ...subject, split: 2 });
    expect(new Set([first, split1, split2]).size).toBe(3);
    expect(split1).toMatch(/^tally-2026-11-01-h00-r2s1-[0-9a-f]{20}$/);
    expect(meterEventIdentifier('t', { ...subject, split: 0 })).toBe(first);
    const keys = [0, 1, 2].map((split) => stripeOutboxKey({ accountId: 'acme', ...subject, split }).SK);
    expect(keys).toEqual(['2026-11-01#requests#H#00#R#0002', '2026-11-01#requests#H#00#R#0002#S#000001', '2026-11-01#requests#H#00#R#0002#S#000002']);
    expect([{ ...subject, split: 2 }, { ...subject, revision: 3 }, subject, { ...subject, split: 1 }].sort(compareEvents)).toEqual([subject, { ...subject, split: 1 }, { ...subject, split: 2 }, { ...subject, revision: 3 }]);
  });

  it('TALLY_STRIPE_WINDOW is day unless set to hour; anything else is refused; check wants the meter\'s window to match', () => {
    const env = { TALLY_STRIPE_API_KEY: 'sk_test_0123456789abcdef', TALLY_STRIPE_METERS: '{"requests":"cdn_requests"}' };
    expect(readStripeConfig(env).window).toBe('day');
    expect(readStripeConfig({ ...env, TALLY_STRIPE_WINDOW: 'hour' }).window).toBe('hour');
    expect(() => readStripeConfig({ ...env, TALLY_STRIPE_WINDOW: 'minute' })).toThrow(/TALLY_STRIPE_WINDOW must be day .* or hour/);
    expect(() => parseStripeWindow('Hour')).toThrow();
    const meter = { id: 'mtr_1', eventName: 'cdn_requests', status: 'active', eventTimeWindow: 'hour', formula: 'sum', customerKey: 'stripe_customer_id', valueKey: 'value' };
    expect(meterProblems('cdn_requests', [meter], 'hour')).toEqual([]);
    expect(meterProblems('cdn_requests', [meter])).toEqual(['mtr_1: event_time_window is hour, needs day']);
    expect(meterProblems('cdn_requests', [{ ...meter, eventTimeWindow: 'day' }], 'hour')).toEqual(['mtr_1: event_time_window is day, needs hour (TALLY_STRIPE_WINDOW)']);
  });
});

describe('a day on the meters of the other window (TALLY_STRIPE_WINDOW switched)', () => {
  const states = ['pending', 'delivered', 'failed', 'too-old', 'superseded', 'invoice-finalized'] as const;
  const record = fc.record({
    day: fc.constantFrom('2026-11-01', '2026-11-02'),
    hour: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }),
    state: fc.constantFrom(...states),
    attempts: fc.nat({ max: 2 }),
    revision: fc.integer({ min: 1, max: 3 }),
    split: fc.option(fc.integer({ min: 1, max: 2 }), { nil: undefined }),
    value: fc.constantFrom(0, 0, 7),
  });

  it('holds a window exactly when the newest record of a window of the other kind that may have reached Stripe (acknowledged, or attempted with no answer) bills something (above 0, or not answered) and none of its own kind does', () => {
    fc.assert(
      fc.property(fc.array(record, { maxLength: 8 }), fc.constantFrom('2026-11-01', '2026-11-02'), fc.constantFrom('day', 'hour') as fc.Arbitrary<'day' | 'hour'>, (records, day, window) => {
        const reached = (hourly: boolean) => {
          const newest = new Map<string, (typeof records)[number]>();
          for (const r of records) {
            if (r.day !== day || (r.hour !== undefined) !== hourly) continue;
            if (!(r.state === 'delivered' || r.state === 'invoice-finalized' || (r.state === 'pending' && r.attempts > 0))) continue;
            const held = newest.get(String(r.hour));
            const order = (x: typeof r) => x.revision * 10 + (x.split ?? 0);
            if (held === undefined || order(held) <= order(r)) newest.set(String(r.hour), r);
          }
          return [...newest.values()].some((r) => r.value > 0 || r.state === 'pending');
        };
        const own = reached(window === 'hour');
        const other = reached(window === 'day');
        expect(otherWindowHolding(windowsOnStripe(records), day, window)).toBe(other && !own ? (window === 'day' ? 'hour' : 'day') : undefined);
      }),
    );
  });

  it('a refused, superseded or never-attempted record of the other window holds nothing', () => {
    const records = [
      { day: '2026-11-01', state: 'failed' as const, attempts: 1, revision: 1, value: 5 },
      { day: '2026-11-01', state: 'superseded' as const, attempts: 0, revision: 1, value: 5 },
      { day: '2026-11-01', state: 'pending' as const, attempts: 0, revision: 1, value: 5 },
    ];
    expect(otherWindowHolding(windowsOnStripe(records), '2026-11-01', 'hour')).toBeUndefined();
    expect(otherWindowHolding(windowsOnStripe([...records, { day: '2026-11-01', state: 'pending', attempts: 1, revision: 1, value: 5 }]), '2026-11-01', 'hour')).toBe('day');
  });

  it('a day moved off the old meters (its newest event there acknowledged at 0) holds nothing; one whose 0 got no answer yet still holds', () => {
    const sent = { day: '2026-11-01', state: 'delivered' as const, attempts: 1, revision: 1, value: 40 };
    expect(otherWindowHolding(windowsOnStripe([sent, { ...sent, split: 1, value: 0 }]), '2026-11-01', 'hour')).toBeUndefined();
    expect(otherWindowHolding(windowsOnStripe([sent, { ...sent, split: 1, value: 0, state: 'pending' as const }]), '2026-11-01', 'hour')).toBe('day');
  });
});
