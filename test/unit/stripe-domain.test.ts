import { readCloserConfig } from '../../src/adapters/handoff-config';
import { readStripeConfig } from '../../src/adapters/stripe-config';
import { outcomeOf } from '../../src/adapters/stripe-meter-api';
import { meterProblems } from '../../src/app/stripe-reconcile';
import { ConfigError } from '../../src/domain/errors';
import {
  isTooOldForStripe,
  latestSendable,
  meterEventIdentifier,
  meterEventTimestamp,
  eventStep,
  meterValue,
  oldestSendableDay,
  parseStripeMeters,
} from '../../src/domain/stripe';
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
    expect(readStripeConfig(base)).toEqual({ key: { kind: 'key', apiKey: base.TALLY_STRIPE_API_KEY }, apiBase: 'https://api.stripe.com', meters: { requests: 'cdn_requests' } });
    expect(readStripeConfig({ ...base, TALLY_STRIPE_API_BASE: 'http://127.0.0.1:12111' }).apiBase).toBe('http://127.0.0.1:12111');
  });

  it.each([
    [{ ...base, TALLY_STRIPE_API_KEY: 'pk_test_abcdefgh12345678' }, 'TALLY_STRIPE_API_KEY'],
    [{ ...base, TALLY_STRIPE_API_KEY_PARAMETER: '/tally/stripe' }, 'exactly one'],
    [{ ...base, TALLY_STRIPE_API_BASE: 'ftp://x' }, 'TALLY_STRIPE_API_BASE'],
    [{ ...base, TALLY_STRIPE_METERS: '{"requests":"a","bytes":"a"}' }, 'each metric needs its own meter'],
    [{ ...base, TALLY_STRIPE_METERS: '[]' }, 'TALLY_STRIPE_METERS'],
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
