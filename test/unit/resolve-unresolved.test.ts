import { uniqueSubset } from '../../src/app/resolve-unresolved';
import type { Increment } from '../../src/domain/usage-store';

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
