import { ValidationError } from '../../src/domain/errors';
import { buildZonedUsageReport, utcReadRange } from '../../src/domain/reading/usage-hours';
import { buildUsageReport } from '../../src/domain/reading/usage-report';
import type { UsageRecord } from '../../src/domain/reading/usage-records';
import { hourStartText, zonedHours } from '../../src/domain/reading/time-zones';
import { usageReportCsv } from '../../src/domain/reading/usage-csv';

function report(timeZone: string, from: string, to: string, records: UsageRecord[], granularity: 'hour' | 'day' | 'month' = 'hour') {
  return buildZonedUsageReport({ accountId: 'acme', from, to, granularity, timeZone, records });
}

describe('zonedHours', () => {
  it.each([
    ['America/New_York', '2026-03-08', 23, '2026-03-08T00:00:00-05:00', '2026-03-08T03:00:00-04:00'],
    ['America/New_York', '2026-11-01', 25, '2026-11-01T00:00:00-04:00', '2026-11-01T01:00:00-05:00'],
    ['Europe/Berlin', '2026-03-29', 23, '2026-03-29T00:00:00+01:00', '2026-03-29T03:00:00+02:00'],
    ['Europe/Berlin', '2026-10-25', 25, '2026-10-25T00:00:00+02:00', '2026-10-25T02:00:00+01:00'],
    ['Australia/Lord_Howe', '2026-01-15', 24, '2026-01-15T00:00:00+11:00', '2026-01-15T01:00:00+11:00'],
    ['UTC', '2026-11-01', 24, '2026-11-01T00:00:00+00:00', '2026-11-01T01:00:00+00:00'],
  ])('%s on %s has %i hours, labelled with the offset in force', (zone, day, count, first, changed) => {
    const hours = zonedHours(zone, day, day);
    const starts = hours.map(hourStartText);
    expect(hours).toHaveLength(count);
    expect(starts[0]).toBe(first);
    expect(starts).toContain(changed);
    expect(new Set(hours.map((hour) => hour.day))).toEqual(new Set([day]));
    for (let i = 1; i < hours.length; i++) expect(Date.parse(starts[i]!) - Date.parse(starts[i - 1]!)).toBe(3_600_000);
  });

  it.each([
    ['Asia/Kolkata', '2026-11-01', '+05:30'],
    ['Asia/Kathmandu', '2026-11-01', '+05:45'],
    ['Australia/Lord_Howe', '2026-07-01', '+10:30'],
    ['Australia/Lord_Howe', '2026-04-05', '+10:30'],
    ['Australia/Lord_Howe', '2026-10-04', '+10:30'],
  ])('refuses %s on %s (%s): not a sum of whole UTC hours', (zone, day, offset) => {
    expect(() => zonedHours(zone, day, day)).toThrow(ValidationError);
    expect(() => zonedHours(zone, day, day)).toThrow(`is ${offset} from UTC`);
  });
});

describe('buildZonedUsageReport', () => {
  const shard = (day: string, hours: Record<number, Record<string, number>>, extra: Record<string, number> = {}): UsageRecord => {
    const metrics: Record<string, number> = { ...extra };
    for (const sums of Object.values(hours)) for (const [name, amount] of Object.entries(sums)) metrics[name] = (metrics[name] ?? 0) + amount;
    return { kind: 'usage', day, shard: 0, metrics, hours };
  };

  it('keeps the UTC day report as it was, naming the zone', () => {
    const records = [shard('2026-11-20', { 3: { requests: 5, bytes: 50 } })];
    const utc = buildUsageReport({ accountId: 'acme', from: '2026-11-20', to: '2026-11-21', granularity: 'day', records });
    const zoned = report('UTC', '2026-11-20', '2026-11-21', records, 'day');
    expect(zoned).toEqual({ ...utc, timeZone: 'UTC' });
    expect(Object.keys(zoned).slice(0, 5)).toEqual(['accountId', 'from', 'to', 'granularity', 'timeZone']);
  });

  it('puts a day in a zone together from the UTC hours that fall in it', () => {
    const records = [
      shard('2026-11-20', { 4: { requests: 1 }, 5: { requests: 2 } }),
      shard('2026-11-21', { 4: { requests: 10 }, 5: { requests: 20 } }),
    ];
    const got = report('America/New_York', '2026-11-20', '2026-11-20', records, 'day');
    // 05:00 UTC on the 20th is midnight in New York (-05:00): 2 + 10 (04:00 UTC on the 21st is 23:00 on the 20th).
    expect(got.days.map((day) => [day.day, day.metrics?.requests])).toEqual([['2026-11-20', 12]]);
    expect(utcReadRange({ from: '2026-11-20', to: '2026-11-20', timeZone: 'America/New_York' })).toEqual({ from: '2026-11-19', to: '2026-11-21' });
  });

  it('says a day counted before hours existed has unknown hours (null and why), never zeros', () => {
    const before: UsageRecord = { kind: 'usage', day: '2026-11-20', shard: 0, metrics: { requests: 7, bytes: 70 }, hours: {} };
    const got = report('UTC', '2026-11-20', '2026-11-21', [before]);
    expect(got.days[0]).toMatchObject({ day: '2026-11-20', metrics: { requests: 7, bytes: 70 }, hours: null });
    expect(got.days[0]!.hoursReason).toBe(
      '2026-11-20 (UTC): counted (in part) before hours were kept (tally backfill --hours recomputes them) or from log lines with a date and no time of day (which have none) (`tally backfill --hours --from 2026-11-20 --to 2026-11-20`)',
    );
    expect(got.days[1]).not.toHaveProperty('hours');
    expect(got.hours!.slice(0, 24).every((hour) => hour.metrics === null && hour.totals === null && hour.hoursReason !== undefined)).toBe(true);
    expect(got.hours!.slice(24).every((hour) => hour.metrics !== null && hour.metrics.requests === 0)).toBe(true);

    // Berlin's 21st begins at 23:00 UTC on the 20th, so it needs the unknown hours too.
    const inZone = report('Europe/Berlin', '2026-11-20', '2026-11-22', [before], 'month');
    expect(inZone.days.map((day) => day.metrics)).toEqual([null, null, { requests: 0, bytes: 0 }]);
    expect([inZone.totals, inZone.months![0]!.metrics]).toEqual([null, null]);
  });

  it('takes the hours tally backfill --hours recomputed when the shards lack them, while they still sum to the day', () => {
    const before: UsageRecord = { kind: 'usage', day: '2026-11-20', shard: 0, metrics: { requests: 7 }, hours: { 9: { requests: 2 } } };
    const backfilled: UsageRecord = { kind: 'hours', day: '2026-11-20', hours: { 8: { requests: 5 }, 9: { requests: 2 } } };
    const got = report('UTC', '2026-11-20', '2026-11-20', [before, backfilled]);
    expect(got.days[0]).not.toHaveProperty('hours');
    expect(got.hours!.map((hour) => hour.metrics!.requests)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 5, 2, ...Array(14).fill(0)]);

    const late: UsageRecord = { kind: 'usage', day: '2026-11-20', shard: 1, metrics: { requests: 1 }, hours: { 23: { requests: 1 } } };
    const stale = report('UTC', '2026-11-20', '2026-11-20', [before, backfilled, late]);
    expect(stale.days[0]!.hoursReason).toMatch(/usage counted since tally backfill --hours recomputed them; run it again/);
  });

  it('keeps the backfilled hours and puts a late log in its own hour when the backfill recorded the shards it saw', () => {
    const before: UsageRecord = { kind: 'usage', day: '2026-11-20', shard: 0, metrics: { requests: 7 }, hours: { 9: { requests: 2 } } };
    const backfilled: UsageRecord = { kind: 'hours', day: '2026-11-20', hours: { 8: { requests: 5 }, 9: { requests: 2 } }, atShards: { 9: { requests: 2 } } };
    const late: UsageRecord = { kind: 'usage', day: '2026-11-20', shard: 1, metrics: { requests: 1 }, hours: { 23: { requests: 1 } } };

    const got = report('America/New_York', '2026-11-20', '2026-11-20', [before, backfilled, late]);

    // New York's 2026-11-20 is 05:00 UTC on the 20th .. 05:00 on the 21st: hours 08, 09 and 23 UTC are in it.
    expect(got.days[0]).toMatchObject({ metrics: { requests: 8 } });
    expect(got.days[0]).not.toHaveProperty('hoursReason');
    expect(got.hours!.filter((hour) => hour.metrics!.requests !== 0).map((hour) => [hour.start, hour.metrics!.requests])).toEqual([
      ['2026-11-20T03:00:00-05:00', 5],
      ['2026-11-20T04:00:00-05:00', 2],
      ['2026-11-20T18:00:00-05:00', 1],
    ]);
  });

  it("counts a day's adjustments in its first UTC hour, so hours sum to the day", () => {
    const records: UsageRecord[] = [
      shard('2026-11-20', { 12: { requests: 9 } }),
      { kind: 'adjustment', day: '2026-11-20', adjustmentId: 'fix', metric: 'requests', delta: -4, reason: 'r', createdAt: '2026-11-22T00:00:00.000Z' },
    ];
    const got = report('UTC', '2026-11-20', '2026-11-20', records);
    expect(got.hours![0]).toMatchObject({ start: '2026-11-20T00:00:00+00:00', adjustments: { requests: -4 }, totals: { requests: -4 } });
    expect(got.hours!.reduce((sum, hour) => sum + hour.totals!.requests!, 0)).toBe(got.days[0]!.totals!.requests);
    // In Tokyo (+09:00) 00:00 UTC on the 20th is 09:00 on the 20th; in Los Angeles it is 16:00 on the 19th.
    expect(report('Asia/Tokyo', '2026-11-20', '2026-11-20', records, 'day').days[0]!.adjustments!.requests).toBe(-4);
    const la = report('America/Los_Angeles', '2026-11-19', '2026-11-20', records, 'day');
    expect(la.days.map((day) => day.adjustments!.requests)).toEqual([-4, 0]);
    expect(la.adjustments.map((entry) => entry.day)).toEqual(['2026-11-20']);
  });

  it.each([
    ['Asia/Tokyo', '2000-01-01', '2000-01-01T00:00:00+09:00'],
    ['America/Los_Angeles', '2099-12-31', '2099-12-31T00:00:00-08:00'],
  ])('answers %s on %s, whose hours reach past the supported days (nothing is counted there)', (zone, day, first) => {
    const got = report(zone, day, day, [shard(day, { 12: { requests: 3 } })]);
    expect(got.hours![0]!.start).toBe(first);
    expect(got.days[0]!.metrics!.requests).toBe(3);
  });

  it('closes a day in a zone only when every UTC day it touches is closed', () => {
    const closed = (day: string): UsageRecord => ({ kind: 'closed-day', day, closedAt: `${day}T23:59:00.000Z` });
    const oneSide = report('Europe/Berlin', '2026-11-20', '2026-11-21', [closed('2026-11-19'), closed('2026-11-20')], 'day');
    expect(oneSide.days.map((day) => [day.day, day.status, day.closedAt])).toEqual([
      ['2026-11-20', 'closed', '2026-11-20T23:59:00.000Z'],
      ['2026-11-21', 'open', undefined],
    ]);
  });

  it('gives Pacific/Apia\'s skipped 2011-12-30 a row of zeros with hoursInDay 0, and the range the UTC hours it covers', () => {
    // Apia went from 2011-12-29 23:59:59 -10:00 (2011-12-30 09:59:59 UTC) to 2011-12-31 00:00 +14:00.
    const records = [
      shard('2011-12-29', { 12: { requests: 1 } }),
      shard('2011-12-30', { 9: { requests: 10 }, 10: { requests: 100 } }),
      shard('2011-12-31', { 9: { requests: 1000 }, 10: { requests: 10000 } }),
    ];

    const got = report('Pacific/Apia', '2011-12-29', '2011-12-31', records, 'day');

    // 12:00 UTC on the 29th is 02:00 on the 29th in Apia; 09:00 UTC on the 30th is 23:00 on the 29th;
    // 10:00 UTC on the 30th is 00:00 on the 31st, and 09:00 UTC on the 31st is 23:00 on the 31st.
    expect(got.days.map((day) => [day.day, day.metrics?.requests, day.hoursInDay])).toEqual([
      ['2011-12-29', 11, undefined],
      ['2011-12-30', 0, 0],
      ['2011-12-31', 1100, undefined],
    ]);
    expect(got.days[1]).toMatchObject({ status: 'closed', adjustments: { requests: 0 }, totals: { requests: 0 } });
    expect(got.days[1]).not.toHaveProperty('closedAt');
    expect(got.totals).toEqual({ requests: 1111, bytes: 0 });
    const csv = usageReportCsv(got).split('\r\n');
    expect(csv[0]).toMatch(/,hours_reason,hours_in_day$/);
    expect(csv.slice(1, 4).map((line) => line.split(',').at(-1))).toEqual(['24', '0', '24']);
    expect(report('Pacific/Apia', '2011-12-01', '2011-12-31', records, 'month').months).toEqual([
      expect.objectContaining({ month: '2011-12', days: 31, metrics: { requests: 1111, bytes: 0 } }),
    ]);
  });

  it('says how many hours a daylight-saving day holds', () => {
    const got = report('America/New_York', '2026-03-07', '2026-03-08', [], 'day');
    const fall = report('America/New_York', '2026-11-01', '2026-11-01', [], 'day');

    expect(got.days.map((day) => [day.day, day.hoursInDay])).toEqual([
      ['2026-03-07', undefined],
      ['2026-03-08', 23],
    ]);
    expect(fall.days[0]!.hoursInDay).toBe(25);
  });
});

