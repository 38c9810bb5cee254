import { countError, incrementWorkload, usageId } from '../../bench/increment-workload';
import { alternate, median, rotate } from '../../bench/stats';
import { attributeValueBytes, itemBytes, writeUnitsFor } from '../../bench/capacity-meter';
import { keyHex } from '../../src/domain/counters/idempotency-key';

const scheme = { keyBytes: 12, shards: 4 };
const workload = (overrides: Partial<Parameters<typeof incrementWorkload>[0]> = {}) =>
  incrementWorkload({ tag: 'wl', objects: 40, accounts: 3, day: '2026-11-21', duplicateRate: 0.1, seed: 7, keyScheme: scheme, ...overrides });

describe('benchmark increment workload', () => {
  it('delivers every object once and 10% of them a second time, later, with the same keys', () => {
    const { deliveries, distinctIncrements, duplicateIncrements } = workload();

    const firsts = deliveries.filter((d) => !d.duplicate);
    const repeats = deliveries.filter((d) => d.duplicate);
    expect(firsts.map((d) => d.object)).toEqual([...Array(40).keys()]);
    expect(repeats).toHaveLength(4);
    expect(distinctIncrements).toBe(120);
    expect(duplicateIncrements).toBe(12);
    for (const repeat of repeats) {
      const firstAt = deliveries.findIndex((d) => d.object === repeat.object && !d.duplicate);
      const original = deliveries[firstAt]!;
      expect(deliveries.indexOf(repeat)).toBeGreaterThan(firstAt);
      expect(repeat.increments.map((i) => keyHex(i.key))).toEqual(original.increments.map((i) => keyHex(i.key)));
    }
  });

  it('expects the sum of the distinct increments only', () => {
    const { deliveries, expected, accounts, day } = workload();

    const sum = (account: string) =>
      deliveries
        .filter((d) => !d.duplicate)
        .flatMap((d) => d.increments)
        .filter((i) => i.account === account)
        .reduce((total, i) => total + i.metrics.requests!, 0);
    for (const account of accounts) expect(expected.get(usageId(account, day))?.requests).toBe(sum(account));
  });
});

describe('count error', () => {
  const expected = new Map([
    ['a|2026-11-21', { requests: 100, bytes: 1000, authorization_requests: 5 }],
    ['b|2026-11-21', { requests: 300, bytes: 3000, authorization_requests: 0 }],
  ]);

  it('is zero and exact when every counter matches', () => {
    const error = countError(expected, new Map(expected));

    expect(error).toEqual({ expectedRequests: 400, observedRequests: 400, requestsOff: 0, relative: 0, exact: true });
  });

  it('reports over-counting as a positive share of the expected requests', () => {
    const observed = new Map([
      ['a|2026-11-21', { requests: 110, bytes: 1100, authorization_requests: 5 }],
      ['b|2026-11-21', { requests: 330, bytes: 3300, authorization_requests: 0 }],
    ]);

    const error = countError(expected, observed);

    expect(error.requestsOff).toBe(40);
    expect(error.relative).toBeCloseTo(0.1, 10);
    expect(error.exact).toBe(false);
  });

  it('counts a missing account-day and a metric that differs as inexact', () => {
    const observed = new Map([['a|2026-11-21', { requests: 100, bytes: 1000, authorization_requests: 6 }]]);

    const error = countError(expected, observed);

    expect(error.requestsOff).toBe(-300);
    expect(error.exact).toBe(false);
  });
});

describe('benchmark statistics', () => {
  it('takes the median of odd and even counts', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it('alternates which side runs first every round', async () => {
    const order: string[] = [];

    await alternate({
      rounds: 3,
      candidate: async (round) => order.push(`c${round}`),
      baseline: async (round) => order.push(`b${round}`),
    });

    expect(order).toEqual(['c0', 'b0', 'b1', 'c1', 'c2', 'b2']);
  });

  it('rotates the first of several ways every round', async () => {
    const order: string[] = [];

    await rotate({ rounds: 3, ways: ['x', 'y', 'z'], run: async (way, round) => order.push(`${way}${round}`) });

    expect(order).toEqual(['x0', 'y0', 'z0', 'y1', 'z1', 'x1', 'z2', 'x2', 'y2']);
  });
});

describe('DynamoDB item size', () => {
  it('sizes names and values by the DynamoDB rules', () => {
    expect(attributeValueBytes({ S: 'abc' })).toBe(3);
    expect(attributeValueBytes({ N: '12345' })).toBe(4);
    expect(attributeValueBytes({ B: new Uint8Array(12) })).toBe(12);
    expect(attributeValueBytes({ L: [{ B: new Uint8Array(12) }, { B: new Uint8Array(12) }] })).toBe(3 + 2 * 13);
    expect(itemBytes({ PK: { S: 'ACCT#a' }, n: { N: '7' } })).toBe(2 + 6 + 1 + 2);
  });

  it('bills one WCU per started KB, at least one', () => {
    expect([0, 1, 1024, 1025, 3000].map(writeUnitsFor)).toEqual([1, 1, 1, 2, 3]);
  });
});
