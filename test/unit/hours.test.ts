import fc from 'fast-check';
import {
  addHourSums,
  dayHours,
  hourAttribute,
  hoursCoverDay,
  hourSumsOfAttributes,
  hourSumsToAttributes,
  hoursSinceBackfill,
  hourTotals,
  isHourAttribute,
  type HourSums,
  metricCode,
  namedHourAttribute,
  parseHourAttribute,
} from '../../src/domain/hours';
import { isShardMetric, SHARD_ATTRIBUTES } from '../../src/domain/counters/keys';
import { BASE_METRICS, METRIC_NAME, validateMetricRules } from '../../src/domain/logs/metric-rules';

// The name's form without its lookahead (fast-check draws no lookahead), then METRIC_NAME itself.
const metricName = fc.stringMatching(/^[a-z][a-z0-9_]{0,39}$/).filter((name) => METRIC_NAME.test(name));

describe('hour attributes', () => {
  it('are short for the base metrics', () => {
    expect(hourAttribute(5, 'requests')).toBe('05R');
    expect(hourAttribute(23, 'bytes')).toBe('23B');
    for (const metric of BASE_METRICS) expect(hourAttribute(1, metric).length).toBe(3);
  });

  it('name a configured metric by a 7-byte code of its name, the same every time, whatever its length', () => {
    expect(hourAttribute(0, 'authorization_requests')).toBe(`00${metricCode('authorization_requests')}`);
    expect(metricCode('authorization_requests')).toBe('My6j1');
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 23 }), metricName, (hour, metric) => {
        expect(hourAttribute(hour, metric)).toMatch(/^\d\dM[0-9a-z]{4}$/);
        expect(hourAttribute(hour, metric)).toBe(hourAttribute(hour, metric));
      }),
    );
  });

  it('read back as the hour and metric they were made from (a code, or the whole name of an older item), and are never metrics', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 23 }), fc.oneof(fc.constantFrom(...BASE_METRICS), metricName), (hour, metric) => {
        const coded = hourAttribute(hour, metric);
        const named = namedHourAttribute(hour, metric);
        const code = (BASE_METRICS as readonly string[]).includes(metric) ? metric : metricCode(metric);
        expect(parseHourAttribute(coded)).toEqual({ hour, metric: code });
        expect(parseHourAttribute(named)).toEqual({ hour, metric });
        for (const attribute of [coded, named]) expect(isShardMetric(attribute)).toBe(false);
      }),
    );
  });

  it('are not confused with metrics or the shard attributes', () => {
    fc.assert(fc.property(metricName, (metric) => expect(isHourAttribute(metric)).toBe(false)));
    for (const name of [...Object.values(SHARD_ATTRIBUTES), 'PK', 'SK', '24R', '5R', '05', '05R1', '05M', '05Mab', '05MABCD']) expect(parseHourAttribute(name)).toBeUndefined();
  });

  it('of two configured metrics never share a code: config load refuses names whose codes clash', () => {
    expect(() => validateMetricRules([{ name: 'metric_893', path: '/a' }, { name: 'metric_5410', path: '/b' }])).toThrow(/metric_5410.*code M\w{4} with "metric_893".*rename one/);
    // Estimates (estimated_<metric>, sampled real-time logs) have hours too: m2879 shares a code with estimated_m3776, r115491 with estimated_requests.
    expect(metricCode('m2879')).toBe(metricCode('estimated_m3776'));
    expect(() => validateMetricRules([{ name: 'm2879', path: '/a' }, { name: 'm3776', path: '/b' }])).toThrow(/"estimated_m3776".*with "m2879"/);
    expect(metricCode('r115491')).toBe(metricCode('estimated_requests'));
    expect(() => validateMetricRules([{ name: 'r115491', path: '/a' }])).toThrow(/with "estimated_requests"/);
    expect(validateMetricRules([{ name: 'metric_893', path: '/a' }, { name: 'metric_5411', path: '/b' }])).toHaveLength(2);
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

  /** A shard's attributes as the increments write them: day totals by name, hours by code. */
  function shardAttributes(hours: Record<string, Record<string, number>>): Record<string, number> {
    const attributes: Record<string, number> = { ...hourTotals(hours), objects: 7 };
    for (const [hour, metrics] of Object.entries(hours)) {
      for (const [metric, amount] of Object.entries(metrics)) attributes[hourAttribute(Number(hour), metric)] = amount;
    }
    return attributes;
  }
  const metricNames = fc.uniqueArray(metricName.filter((name) => !(BASE_METRICS as readonly string[]).includes(name)), { minLength: 1, maxLength: 6 });
  const shardHours = metricNames.chain((names) =>
    fc.dictionary(fc.integer({ min: 0, max: 23 }).map(String), fc.dictionary(fc.constantFrom('requests', 'bytes', ...names), fc.integer({ min: 1, max: 1e12 }), { minKeys: 1 })),
  );
  const distinctCodes = (hours: Record<string, Record<string, number>>) => {
    const names = Object.keys(hourTotals(hours)).filter((name) => !(BASE_METRICS as readonly string[]).includes(name));
    return new Set(names.map(metricCode)).size === names.length;
  };

  it('round-trip through coded names: a shard decodes its codes with its own day totals, and its hours cover its day', () => {
    fc.assert(
      fc.property(shardHours, (hours) => {
        fc.pre(distinctCodes(hours));
        const attributes = shardAttributes(hours);
        expect(hourSumsOfAttributes(attributes)).toEqual(hours);
        expect(hoursCoverDay(hourTotals(hours), hourSumsOfAttributes(attributes))).toBe(true);
      }),
    );
  });

  it('read the whole names items held before the codes, and add both where an item holds both (written across the change)', () => {
    const before = { requests: 10, authorization_requests: 4, '05R': 10, '05authorization_requests': 3, '06authorization_requests': 1 };
    expect(hourSumsOfAttributes(before)).toEqual({ 5: { requests: 10, authorization_requests: 3 }, 6: { authorization_requests: 1 } });
    const across = { ...before, authorization_requests: 9, [hourAttribute(5, 'authorization_requests')]: 5 };
    expect(hourSumsOfAttributes(across)).toEqual({ 5: { requests: 10, authorization_requests: 8 }, 6: { authorization_requests: 1 } });
    expect(hoursCoverDay({ requests: 10, authorization_requests: 9 }, hourSumsOfAttributes(across))).toBe(true);
  });

  it('leave a code the item cannot decode (no day total of that name, or two names with that code) as a code, so the hours cover no day', () => {
    const code = metricCode('authorization_requests');
    expect(hourSumsOfAttributes({ '05R': 2, [`05${code}`]: 1 })).toEqual({ 5: { requests: 2, [code]: 1 } });
    // metric_893 and metric_5410 share a code: neither is guessed.
    expect(metricCode('metric_893')).toBe(metricCode('metric_5410'));
    const shared = { metric_893: 1, metric_5410: 1, [hourAttribute(3, 'metric_893')]: 1 };
    const hours = hourSumsOfAttributes(shared);
    expect(hours).toEqual({ 3: { [metricCode('metric_893')]: 1 } });
    expect(hoursCoverDay({ metric_893: 1, metric_5410: 1 }, hours)).toBe(false);
  });

  it("are the shards' when they cover the day, else the backfilled ones when they do, else unknown with a reason", () => {
    const day = { requests: 10, bytes: 100 };
    const whole = { 3: { requests: 4, bytes: 40 }, 4: { requests: 6, bytes: 60 } };
    const part = { 4: { requests: 6, bytes: 60 } };
    expect(dayHours(day, whole, { hours: { 1: day } })).toEqual({ hours: whole, source: 'shards' });
    expect(dayHours(day, part, { hours: whole })).toEqual({ hours: whole, source: 'backfill' });
    expect(dayHours(day, part)).toMatchObject({ hours: null, reason: expect.stringContaining('tally backfill --hours') });
    // Hours are also missing for usage counted today from lines with no time of day (a date alone):
    // the reason must not say only "before hours were kept" to someone who just started counting.
    expect(dayHours(day, part)).toMatchObject({ hours: null, reason: expect.stringContaining('no time of day') });
    expect(dayHours({ ...day, requests: 11 }, part, { hours: whole })).toMatchObject({ hours: null, reason: expect.stringContaining('run it again') });
    expect(dayHours({}, {})).toEqual({ hours: {}, source: 'shards' });
  });
});

describe('a backfilled day that receives a late log', () => {
  // The day: 10 requests counted before hours existed (the shards hold no hours), recomputed by the backfill
  // as 4 in hour 09 and 6 in hour 13; then a late log of 5 requests in hour 20, counted with hours.
  const backfill = { hours: { 9: { requests: 4 }, 13: { requests: 6 } }, atShards: {} };
  const afterLate = { totals: { requests: 15 }, shards: { 20: { requests: 5 } } };

  it('keeps the backfilled hours and adds the late log in its own hour, never in hour 00', () => {
    const got = dayHours(afterLate.totals, afterLate.shards, backfill);

    expect(got).toEqual({ hours: { 9: { requests: 4 }, 13: { requests: 6 }, 20: { requests: 5 } }, source: 'backfill', countedSince: true });
  });

  it('adds only what the shards gained since the backfill when some of the day was counted with hours before it', () => {
    // Hour 13 was counted with hours before the backfill (the shards held it then): it is not added twice.
    const got = dayHours({ requests: 17 }, { 13: { requests: 6 }, 20: { requests: 7 } }, { hours: backfill.hours, atShards: { 13: { requests: 6 } } });

    expect(got).toEqual({ hours: { 9: { requests: 4 }, 13: { requests: 6 }, 20: { requests: 7 } }, source: 'backfill', countedSince: true });
  });

  it('says unknown (run it again) when usage since the backfill came without hours, or the shards hold less than it saw', () => {
    expect(dayHours({ requests: 16 }, afterLate.shards, backfill)).toMatchObject({ hours: null, reason: expect.stringContaining('without hours since tally backfill --hours') });
    expect(dayHours({ requests: 10 }, {}, { hours: backfill.hours, atShards: { 9: { requests: 1 } } })).toMatchObject({ hours: null, reason: expect.stringContaining('run it again') });
    expect(hoursSinceBackfill({ 9: { requests: 1 } }, { 9: { requests: 2 } })).toBeUndefined();
  });

  it('reads an item written before atShards was recorded as its hours alone', () => {
    expect(dayHours({ requests: 10 }, {}, { hours: backfill.hours })).toEqual({ hours: backfill.hours, source: 'backfill' });
    expect(dayHours(afterLate.totals, afterLate.shards, { hours: backfill.hours })).toMatchObject({ hours: null, reason: expect.stringContaining('run it again') });
  });

  /** One increment of a day: its amounts by UTC hour; `withHours` false when counted by a consumer that kept no hours. */
  const increment = fc.record({
    hours: fc.dictionary(fc.integer({ min: 0, max: 23 }).map(String), fc.record({ requests: fc.nat({ max: 50 }), bytes: fc.nat({ max: 5_000 }) }), { maxKeys: 4 }),
    withHours: fc.boolean(),
  });

  it('are, for any history of increments and any moment of the backfill, the true hours of the day or unknown, and unknown only when an increment after it had no hours', () => {
    fc.assert(
      fc.property(fc.array(increment, { maxLength: 12 }), fc.nat(), fc.array(increment, { maxLength: 6 }), (before, cut, after) => {
        const counted = (increments: readonly (typeof before)[number][]) => {
          const totals: Record<string, number> = {};
          const shards: Record<number, Record<string, number>> = {};
          const truth: Record<number, Record<string, number>> = {};
          for (const { hours, withHours } of increments) {
            const sums = Object.fromEntries(Object.entries(hours).map(([hour, metrics]) => [Number(hour), metrics]));
            addHourSums(truth, sums);
            if (withHours) addHourSums(shards, sums);
            for (const [metric, amount] of Object.entries(hourTotals(sums))) totals[metric] = (totals[metric] ?? 0) + amount;
          }
          return { totals, shards, truth };
        };
        // The backfill ran after the first `cut` increments: it recomputed their true hours and saw the shards then.
        const at = cut % (before.length + 1);
        const seen = counted(before.slice(0, at));
        const now = counted([...before, ...after]);
        const laterWithoutHours = [...before.slice(at), ...after].some((step) => !step.withHours && Object.values(hourTotals(step.hours)).some((amount) => amount > 0));

        const got = dayHours(now.totals, now.shards, { hours: seen.truth, atShards: seen.shards });

        if (got.hours === null) expect(laterWithoutHours).toBe(true);
        else expect(sameNonZero(got.hours, now.truth)).toBe(true);
        if (!laterWithoutHours) expect(got.hours).not.toBeNull();
      }),
    );
  });
});

/** True when two hour sums hold the same amounts, zeros and absences alike. */
function sameNonZero(a: HourSums, b: HourSums): boolean {
  for (let hour = 0; hour < 24; hour++) {
    for (const metric of new Set([...Object.keys(a[hour] ?? {}), ...Object.keys(b[hour] ?? {})])) if ((a[hour]?.[metric] ?? 0) !== (b[hour]?.[metric] ?? 0)) return false;
  }
  return true;
}
