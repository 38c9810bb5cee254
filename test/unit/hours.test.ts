import fc from 'fast-check';
import {
  addHourSums,
  dayHours,
  hourAttribute,
  hoursCoverDay,
  hourSumsOfAttributes,
  hourSumsToAttributes,
  hourTotals,
  isHourAttribute,
  parseHourAttribute,
} from '../../src/domain/hours';
import { isShardMetric, SHARD_ATTRIBUTES } from '../../src/domain/counters/keys';
import { BASE_METRICS, METRIC_NAME } from '../../src/domain/logs/metric-rules';

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

describe('hours as item attributes, and which hours a day shows', () => {
  const hourSums = fc.dictionary(
    fc.integer({ min: 0, max: 23 }).map(String),
    fc.dictionary(fc.constantFrom('requests', 'bytes', 'images'), fc.integer({ min: 1, max: 1e9 })),
  );
  const nonEmpty = (hours: Record<string, Record<string, number>>) => Object.fromEntries(Object.entries(hours).filter(([, metrics]) => Object.keys(metrics).length > 0));

  it('read back from the attributes they were written to, other attributes ignored', () => {
    fc.assert(
      fc.property(hourSums, (hours) => {
        const attributes = hourSumsToAttributes(hours);
        expect(hourSumsOfAttributes({ ...attributes, objects: 7, requests: 5 })).toEqual(nonEmpty(hours));
      }),
    );
    expect(hourSumsToAttributes({ 5: { requests: 3, bytes: 0 } })).toEqual({ '05R': 3 });
  });

  it("are the shards' when they cover the day, else the backfilled ones when they do, else unknown with a reason", () => {
    const day = { requests: 10, bytes: 100 };
    const whole = { 3: { requests: 4, bytes: 40 }, 4: { requests: 6, bytes: 60 } };
    const part = { 4: { requests: 6, bytes: 60 } };
    expect(dayHours(day, whole, { 1: day })).toEqual({ hours: whole, source: 'shards' });
    expect(dayHours(day, part, whole)).toEqual({ hours: whole, source: 'backfill' });
    expect(dayHours(day, part)).toMatchObject({ hours: null, reason: expect.stringContaining('tally backfill --hours') });
    // Hours are also missing for usage counted today from lines with no time of day (a date alone):
    // the reason must not say only "before hours were kept" to someone who just started counting.
    expect(dayHours(day, part)).toMatchObject({ hours: null, reason: expect.stringContaining('no time of day') });
    expect(dayHours({ ...day, requests: 11 }, part, whole)).toMatchObject({ hours: null, reason: expect.stringContaining('run it again') });
    expect(dayHours({}, {})).toEqual({ hours: {}, source: 'shards' });
  });
});
