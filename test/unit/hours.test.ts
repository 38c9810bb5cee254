import fc from 'fast-check';
import { addHourSums, hourAttribute, hoursCoverDay, hourTotals, isHourAttribute, parseHourAttribute } from '../../src/domain/hours';
import { isShardMetric, SHARD_ATTRIBUTES } from '../../src/domain/keys';
import { BASE_METRICS, METRIC_NAME } from '../../src/domain/metric-rules';

const metricName = fc.stringMatching(METRIC_NAME);

describe('hour attributes', () => {
  it('are short for the base metrics', () => {
    expect(hourAttribute(5, 'requests')).toBe('05R');
    expect(hourAttribute(23, 'bytes')).toBe('23B');
    expect(hourAttribute(0, 'authorization_requests')).toBe('00authorization_requests');
    for (const metric of BASE_METRICS) expect(hourAttribute(1, metric).length).toBe(3);
  });

  it('read back as the hour and metric they were made from, and are never metrics', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 23 }), fc.oneof(fc.constantFrom(...BASE_METRICS), metricName), (hour, metric) => {
        const attribute = hourAttribute(hour, metric);
        expect(parseHourAttribute(attribute)).toEqual({ hour, metric });
        expect(isShardMetric(attribute)).toBe(false);
      }),
    );
  });

  it('are not confused with metrics or the shard attributes', () => {
    fc.assert(fc.property(metricName, (metric) => expect(isHourAttribute(metric)).toBe(false)));
    for (const name of [...Object.values(SHARD_ATTRIBUTES), 'PK', 'SK', '24R', '5R', '05', '05R1']) expect(parseHourAttribute(name)).toBeUndefined();
  });

  it('refuse an hour outside the day', () => {
    for (const hour of [-1, 24, 1.5, Number.NaN]) expect(() => hourAttribute(hour, 'requests')).toThrow(RangeError);
  });
});

describe('hour sums', () => {
  const hourSums = fc.dictionary(
    fc.integer({ min: 0, max: 23 }).map(String),
    fc.dictionary(fc.constantFrom('requests', 'bytes', 'images'), fc.integer({ min: 0, max: 1e9 })),
  );

  it('cover the day exactly when each metric sums to its day total', () => {
    fc.assert(
      fc.property(hourSums, (hours) => {
        const totals = hourTotals(hours);
        expect(hoursCoverDay(totals, hours)).toBe(true);
        expect(hoursCoverDay({ ...totals, requests: (totals.requests ?? 0) + 1 }, hours)).toBe(false);
      }),
    );
  });

  it('add hour by hour, metric by metric', () => {
    fc.assert(
      fc.property(hourSums, hourSums, (a, b) => {
        const sum = addHourSums(addHourSums({}, a), b);
        const expected = hourTotals(a);
        for (const [metric, amount] of Object.entries(hourTotals(b))) expected[metric] = (expected[metric] ?? 0) + amount;
        expect(hourTotals(sum)).toEqual(expected);
      }),
    );
  });
});
