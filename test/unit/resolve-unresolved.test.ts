import { resolveUnresolved, uniqueSubset, type ResolveOptions } from '../../src/app/ingest/resolve-unresolved';
import type { Increment } from '../../src/domain/counters/usage-store';

const increment = (requests: number, bytes: number): Increment => ({ account: 'acme', day: '2026-11-21', shard: 0, key: new Uint8Array(12), metrics: { requests, bytes } });

describe('settling unresolved increments from a recount', () => {
  it('finds the one set of increments that makes up the shortfall, metric by metric', () => {
    const unresolved = [increment(2, 200), increment(1, 100), increment(5, 50)];

    expect(uniqueSubset(unresolved, { requests: 2, bytes: 200 })).toEqual(new Set([0]));
    expect(uniqueSubset(unresolved, { requests: 7, bytes: 250 })).toEqual(new Set([0, 2]));
    expect(uniqueSubset(unresolved, { requests: 0, bytes: 0 })).toEqual(new Set());
    expect(uniqueSubset(unresolved, {})).toEqual(new Set());
  });

  it('refuses to choose when no set, or more than one, adds up', () => {
    expect(uniqueSubset([increment(2, 200), increment(1, 100)], { requests: 2, bytes: 150 })).toBeUndefined();
    // Two identical increments: either one could be the missing one.
    expect(uniqueSubset([increment(1, 100), increment(1, 100)], { requests: 1, bytes: 100 })).toBeUndefined();
    // A shortfall in a metric no increment has is other drift.
    expect(uniqueSubset([increment(1, 100)], { requests: 1, bytes: 100, authorization_requests: 1 })).toBeUndefined();
  });

  it('past sixteen increments of one account-day, settles only all or none', () => {
    const many = Array.from({ length: 20 }, (_, i) => increment(1, i));
    const all = { requests: 20, bytes: many.reduce((sum, inc) => sum + inc.metrics.bytes!, 0) };

    expect(uniqueSubset(many, all)?.size).toBe(20);
    expect(uniqueSubset(many, { requests: 0, bytes: 0 })?.size).toBe(0);
    expect(uniqueSubset(many, { requests: 1, bytes: 0 })).toBeUndefined();
  });
});

describe('an unresolved increment of a day outside the supported days (an older version could record one)', () => {
  it('is left with a reason that names it; nothing is recounted, applied or settled', async () => {
    const far: Increment = { ...increment(1, 100), day: '9999-12-31' };
    const object = { bucket: 'logs', key: 'cloudfront/E2X.9999-12-31-00.a.gz', etag: 'e1' };
    const calls: string[] = [];
    const options = {
      unresolved: {
        listUnresolved: async () => [{ object, increments: [far], recordedAt: '2026-11-21T00:00:00.000Z' }],
        settleUnresolved: async () => void calls.push('settle'),
      },
      store: { applyIncrement: async () => void calls.push('apply') },
      // A recount would read these: the far day must never get that far.
      source: new Proxy({}, { get: () => () => Promise.reject(new Error('recounted')) }),
    } as unknown as ResolveOptions;

    const settlements = await resolveUnresolved(options);

    expect(settlements).toEqual([
      {
        object: 's3://logs/cloudfront/E2X.9999-12-31-00.a.gz',
        account: 'acme',
        day: '9999-12-31',
        metrics: { requests: 1, bytes: 100 },
        outcome: 'left',
        reason:
          'skipped the unresolved increment of acme on 9999-12-31 (s3://logs/cloudfront/E2X.9999-12-31-00.a.gz): 9999-12-31 is outside the days Tally supports, 2000-01-01..2099-12-31 (an older version recorded it)',
      },
    ]);
    expect(calls).toEqual([]);
  });
});
