import fc from 'fast-check';
import { addDays, eachDay, SUPPORTED_DAYS } from '../../src/domain/days';
import { ValidationError } from '../../src/domain/errors';
import { HOURS_PER_DAY } from '../../src/domain/hours';
import { buildZonedUsageReport, utcReadRange } from '../../src/domain/reading/usage-hours';
import type { UsageRecord } from '../../src/domain/reading/usage-records';

/**
 * Days in a customer's time zone over every zone the platform knows (ECMA-402's
 * `Intl.supportedValuesOf('timeZone')`, https://tc39.es/ecma402/#sec-intl.supportedvaluesof):
 * each calendar day of the range has exactly one row, whatever its length (23, 25, or 0
 * hours on a day the zone skipped, as Pacific/Apia's 2011-12-30), and the days' usage adds
 * up to the UTC hours they cover, as a brute-force walk over the hours finds them with a
 * formatter of its own.
 */

const ZONES = Intl.supportedValuesOf('timeZone');
const HOUR_MS = 3_600_000;
const SUPPORTED_FROM = Date.parse(`${SUPPORTED_DAYS.first}T00:00:00Z`);
const SUPPORTED_END = Date.parse(`${addDays(SUPPORTED_DAYS.last, 1)}T00:00:00Z`);
/** Zones and days that test the edges more often than chance would: skipped days and daylight-saving changes. */
const EDGES: readonly [string, string][] = [
  ['Pacific/Apia', '2011-12-28'],
  ['Pacific/Fakaofo', '2011-12-28'],
  ['America/New_York', '2026-03-07'],
  ['America/New_York', '2026-10-31'],
  ['Europe/London', '2026-03-28'],
  ['Australia/Sydney', '2026-04-04'],
];

/** The zone's calendar day of an instant, by a formatter of the test's own (en-CA writes YYYY-MM-DD). */
function localDayOf(zone: string): (ms: number) => string {
  const format = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' });
  return (ms) => format.format(ms);
}

/** A deterministic amount of requests in each UTC hour (0 in some), from the run's seed. */
function amountAt(seed: number, ms: number): number {
  const x = Math.imul((ms / HOUR_MS) ^ seed, 0x9e3779b1) >>> 0;
  return x % 7 === 0 ? 0 : x % 1000;
}

/** Shards holding every UTC hour of the days the report reads, counted with hours. */
function recordsOf(seed: number, from: string, to: string): UsageRecord[] {
  return eachDay(from, to).map((day) => {
    const start = Date.parse(`${day}T00:00:00Z`);
    const hours: Record<number, Record<string, number>> = {};
    let requests = 0;
    for (let hour = 0; hour < HOURS_PER_DAY; hour++) {
      const amount = amountAt(seed, start + hour * HOUR_MS);
      if (amount === 0) continue;
      hours[hour] = { requests: amount };
      requests += amount;
    }
    return { kind: 'usage', day, shard: 0, metrics: { requests }, hours };
  });
}

const range = fc.oneof(
  { weight: 3, arbitrary: fc.record({ zone: fc.constantFrom(...ZONES, 'UTC'), from: fc.integer({ min: 0, max: 36_500 }).map((n) => addDays('2000-01-01', n)) }) },
  { weight: 1, arbitrary: fc.constantFrom(...EDGES).map(([zone, from]) => ({ zone, from })) },
);

describe('days in a time zone, over every zone Intl supports', () => {
  it('give every calendar day of the range one row, hoursInDay its UTC hours when not 24, and add up to the UTC hours they cover', () => {
    fc.assert(
      fc.property(range, fc.integer({ min: 0, max: 40 }), fc.nat(), ({ zone, from: start }, length, seed) => {
        const to = addDays(start, length) > SUPPORTED_DAYS.last ? SUPPORTED_DAYS.last : addDays(start, length);
        const from = start > to ? to : start;
        const read = utcReadRange({ from, to, timeZone: zone });
        const build = () => buildZonedUsageReport({ accountId: 'acme', from, to, granularity: 'day', timeZone: zone, records: recordsOf(seed, read.from, read.to), metricNames: ['requests'] });
        let report;
        try {
          report = build();
        } catch (error) {
          // Only a zone whose offset is not a whole number of hours in the range is refused, and it says so.
          expect(error).toBeInstanceOf(ValidationError);
          expect((error as Error).message).toMatch(/not a whole number of hours/);
          return;
        }
        const dayOf = localDayOf(zone);
        // Every UTC hour from a day before the range to a day after, by the zone's day it starts in.
        const expected = new Map<string, { hours: number; requests: number }>(eachDay(from, to).map((day) => [day, { hours: 0, requests: 0 }]));
        const first = Date.parse(`${addDays(from, -2)}T00:00:00Z`);
        const end = Date.parse(`${addDays(to, 3)}T00:00:00Z`);
        let covered = 0;
        for (let ms = first; ms < end; ms += HOUR_MS) {
          const day = zone === 'UTC' ? new Date(ms).toISOString().slice(0, 10) : dayOf(ms);
          const sums = expected.get(day);
          if (sums === undefined) continue;
          sums.hours++;
          // Nothing is stored outside the supported UTC days: a zone's 2000-01-01 may begin on 1999-12-31 UTC.
          const amount = ms >= SUPPORTED_FROM && ms < SUPPORTED_END ? amountAt(seed, ms) : 0;
          sums.requests += amount;
          covered += amount;
        }

        expect(report.days.map((row) => row.day)).toEqual(eachDay(from, to));
        for (const row of report.days) {
          const want = expected.get(row.day)!;
          expect({ day: row.day, requests: row.metrics?.requests, hoursInDay: row.hoursInDay }).toEqual({
            day: row.day,
            requests: want.requests,
            hoursInDay: want.hours === HOURS_PER_DAY ? undefined : want.hours,
          });
        }
        expect(report.totals).toEqual({ requests: covered });
      }),
      { numRuns: 300 },
    );
  });
});
