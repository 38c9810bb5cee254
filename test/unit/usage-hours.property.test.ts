import fc from 'fast-check';
import { SUPPORTED_DAYS } from '../../src/domain/days';
import { ValidationError } from '../../src/domain/errors';
import { buildZonedUsageReport, type ZonedUsageReport } from '../../src/domain/reading/usage-hours';
import type { UsageRecord } from '../../src/domain/reading/usage-records';

/**
 * Issue 35's laws for the read side, over random usage at random times in random zones:
 * a UTC day's hours sum to the day; a zone's days equal a brute-force recount of the
 * requests by their local date (DST-change days of New York, Berlin and Lord Howe among
 * them); a zone whose offset is not a whole hour somewhere in the range is refused; a day
 * whose hours are unknown is null, never zeros; a zone's day is closed only when every
 * UTC day it touches is. The oracle asks Intl about each instant and never calls Tally's
 * zone code.
 */

const ZONES = [
  'UTC',
  'America/New_York',
  'Europe/Berlin',
  'Australia/Lord_Howe',
  'America/Los_Angeles',
  'Asia/Tokyo',
  'Pacific/Kiritimati',
  'Pacific/Pago_Pago',
  'Asia/Kathmandu',
  'Asia/Kolkata',
  'America/St_Johns',
] as const;

/** Each zone with the days its clock changes in 2026 (Lord Howe's moves 30 minutes), and a plain day of each. */
const CHANGES: ReadonlyArray<readonly [string, string]> = [
  ['America/New_York', '2026-03-08'],
  ['America/New_York', '2026-11-01'],
  ['Europe/Berlin', '2026-03-29'],
  ['Europe/Berlin', '2026-10-25'],
  ['Australia/Lord_Howe', '2026-04-05'],
  ['Australia/Lord_Howe', '2026-10-04'],
  ['Australia/Lord_Howe', '2026-01-15'],
  ['America/Los_Angeles', '2026-11-01'],
  ['Asia/Kathmandu', '2026-06-01'],
  ['Asia/Kolkata', '2026-06-01'],
  ['UTC', '2026-11-01'],
];
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const METRICS = ['requests', 'bytes', 'authorization_requests'] as const;

const dayMs = (day: string) => Date.parse(`${day}T00:00:00Z`);
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** What Intl says about an instant in a zone: its local date, wall time and offset in minutes. */
function oracle(zone: string) {
  const format = new Intl.DateTimeFormat('en-CA', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    timeZoneName: 'longOffset',
  });
  return (ms: number) => {
    const parts = Object.fromEntries(format.formatToParts(new Date(ms)).map((part) => [part.type, part.value]));
    const offset = /^GMT(?:([+-])(\d{2}):(\d{2}))?$/.exec(parts.timeZoneName ?? '')!;
    const minutes = offset[1] === undefined ? 0 : (offset[1] === '-' ? -1 : 1) * (Number(offset[2]) * 60 + Number(offset[3]));
    return { date: `${parts.year}-${parts.month}-${parts.day}`, time: `${parts.hour}:${parts.minute}:${parts.second}`, offsetMinutes: minutes };
  };
}

interface Request {
  readonly at: number;
  readonly shard: number;
  readonly amounts: Readonly<Record<string, number>>;
}

const scenario = fc
  .record({
    place: fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...CHANGES) },
      { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...ZONES), fc.integer({ min: 0, max: 36_500 }).map((n) => isoDay(dayMs('2000-01-04') + n * DAY_MS))) },
    ),
    shift: fc.integer({ min: -3, max: 0 }),
    length: fc.integer({ min: 1, max: 4 }),
    granularity: fc.constantFrom('hour' as const, 'day' as const, 'month' as const),
  })
  .map(({ place: [zone, center], ...rest }) => ({ zone, center, ...rest }))
  .chain((base) => {
    const from = isoDay(dayMs(base.center) + base.shift * DAY_MS);
    const to = isoDay(dayMs(from) + (base.length - 1) * DAY_MS);
    const utcDays = Array.from({ length: base.length + 2 }, (_, i) => isoDay(dayMs(from) + (i - 1) * DAY_MS));
    const request = fc.record({
      at: fc.integer({ min: dayMs(utcDays[0]!), max: dayMs(utcDays[utcDays.length - 1]!) + DAY_MS - 1 }),
      shard: fc.integer({ min: 0, max: 2 }),
      amounts: fc.record({ requests: fc.integer({ min: 0, max: 50 }), bytes: fc.integer({ min: 0, max: 100_000 }), authorization_requests: fc.integer({ min: 0, max: 3 }) }),
    });
    const dayFacts = fc.record({
      /** Counted before hours: only these shards wrote hour attributes. */
      beforeHours: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
      hoursShards: fc.subarray([0, 1, 2]),
      backfilled: fc.boolean(),
      closed: fc.boolean(),
      adjustment: fc.option(fc.integer({ min: -20, max: 20 }), { freq: 3 }),
    });
    return fc
      .tuple(fc.array(request, { maxLength: 60 }), fc.tuple(...utcDays.map(() => dayFacts)))
      .map(([requests, facts]) => ({
        ...base,
        from,
        to,
        utcDays,
        // A UTC day outside the supported days holds nothing Tally stores or reads: the report counts it empty and final.
        requests: (requests as Request[]).filter((r) => supported(isoDay(r.at))),
        facts: facts.map((f, i) => (supported(utcDays[i]!) ? f : { beforeHours: false, hoursShards: [], backfilled: false, closed: true, adjustment: null })),
      }));
  });

function supported(day: string): boolean {
  return day >= SUPPORTED_DAYS.first && day <= SUPPORTED_DAYS.last;
}

type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

/** The table's items for the scenario: shards (with hour attributes unless counted before hours), backfilled hours, adjustments, closes. */
function recordsOf(s: Scenario): UsageRecord[] {
  const records: UsageRecord[] = [];
  s.utcDays.forEach((day, index) => {
    if (!supported(day)) return;
    const facts = s.facts[index]!;
    const onDay = s.requests.filter((r) => isoDay(r.at) === day);
    for (const shard of [0, 1, 2]) {
      const mine = onDay.filter((r) => r.shard === shard);
      if (mine.length === 0) continue;
      const metrics: Record<string, number> = {};
      const hours: Record<number, Record<string, number>> = {};
      const withHours = !facts.beforeHours || facts.hoursShards.includes(shard);
      for (const r of mine) {
        const hour = new Date(r.at).getUTCHours();
        for (const [name, amount] of Object.entries(r.amounts)) {
          metrics[name] = (metrics[name] ?? 0) + amount;
          if (withHours) (hours[hour] ??= {})[name] = (hours[hour]![name] ?? 0) + amount;
        }
      }
      records.push({ kind: 'usage', day, shard, metrics, hours });
    }
    if (facts.beforeHours && facts.backfilled) {
      const hours: Record<number, Record<string, number>> = {};
      for (const r of onDay) for (const [name, amount] of Object.entries(r.amounts)) (hours[new Date(r.at).getUTCHours()] ??= {})[name] = (hours[new Date(r.at).getUTCHours()]![name] ?? 0) + amount;
      records.push({ kind: 'hours', day, hours });
    }
    if (facts.adjustment !== null) {
      records.push({ kind: 'adjustment', day, adjustmentId: `adj-${day}`, metric: 'requests', delta: facts.adjustment, reason: 'test', createdAt: `${day}T12:00:00.000Z` });
    }
    if (facts.closed) records.push({ kind: 'closed-day', day, closedAt: `${isoDay(dayMs(day) + DAY_MS)}T01:00:00.000Z` });
  });
  return records;
}

/** A UTC day's hours are unknown when it was counted before hours, not backfilled, and the shards' hours miss some of it. */
function unknownDay(s: Scenario, day: string): boolean {
  const facts = s.facts[s.utcDays.indexOf(day)]!;
  if (!facts.beforeHours || facts.backfilled) return false;
  const missed = s.requests.filter((r) => isoDay(r.at) === day && !facts.hoursShards.includes(r.shard));
  return missed.some((r) => Object.values(r.amounts).some((amount) => amount !== 0));
}

const zero = () => Object.fromEntries(METRICS.map((m) => [m, 0]));

function build(s: Scenario): ZonedUsageReport {
  return buildZonedUsageReport({
    accountId: 'acme',
    from: s.from,
    to: s.to,
    granularity: s.granularity,
    timeZone: s.zone,
    records: recordsOf(s),
    metricNames: [...METRICS],
  });
}

describe('the report in a zone, against a brute-force recount', () => {
  it('refuses exactly the ranges where the offset is not a whole hour; otherwise recounts each local day and hour', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const at = oracle(s.zone);
        const windowStart = dayMs(s.utcDays[0]!);
        const windowEnd = dayMs(s.utcDays[s.utcDays.length - 1]!) + DAY_MS;
        // Every quarter hour of the window, and what it is in the zone.
        const samples = [];
        for (let ms = windowStart; ms < windowEnd; ms += HOUR_MS / 4) samples.push({ ms, ...at(ms) });
        const inRange = samples.filter((q) => q.date >= s.from && q.date <= s.to);
        if (inRange.some((q) => q.offsetMinutes % 60 !== 0)) {
          expect(() => build(s)).toThrow(ValidationError);
          expect(() => build(s)).toThrow(/not a whole number of hours/);
          return;
        }
        const report = build(s);
        const localDays = [...new Set(inRange.map((q) => q.date))];
        expect(report.days.map((d) => d.day)).toEqual(localDays);
        expect(report.timeZone).toBe(s.zone);

        for (const row of report.days) {
          const touched = new Set(inRange.filter((q) => q.date === row.day).map((q) => isoDay(q.ms)));
          const closed = [...touched].every((day) => s.facts[s.utcDays.indexOf(day)]!.closed);
          expect(row.status).toBe(closed ? 'closed' : 'open');
          const unknown = [...touched].some((day) => unknownDay(s, day));
          if (s.zone === 'UTC') {
            // UTC days are known whatever their hours; the hourly report marks those without hours.
            expect(row.hours === null).toBe(s.granularity === 'hour' && unknown);
          } else if (unknown) {
            expect([row.metrics, row.totals, row.hours, typeof row.hoursReason]).toEqual([null, null, null, 'string']);
            continue;
          }
          const expected: Record<string, number> = zero();
          for (const r of s.requests) if (at(r.at).date === row.day) for (const m of METRICS) expected[m]! += r.amounts[m] ?? 0;
          const adjustments: Record<string, number> = zero();
          s.utcDays.forEach((day, i) => {
            const delta = s.facts[i]!.adjustment;
            if (delta !== null && (s.zone === 'UTC' ? day === row.day : at(dayMs(day)).date === row.day)) adjustments.requests! += delta;
          });
          expect(row.metrics).toEqual(expected);
          expect(row.adjustments).toEqual(adjustments);
          expect(row.totals).toEqual(Object.fromEntries(METRICS.map((m) => [m, expected[m]! + adjustments[m]!])));
        }

        if (s.granularity !== 'hour') return;
        const hourStarts = samples.filter((q) => q.ms % HOUR_MS === 0 && q.date >= s.from && q.date <= s.to);
        expect(report.hours!.map((h) => Date.parse(h.start))).toEqual(hourStarts.map((q) => q.ms));
        report.hours!.forEach((h, i) => {
          const q = hourStarts[i]!;
          const sign = q.offsetMinutes < 0 ? '-' : '+';
          const offset = `${sign}${String(Math.floor(Math.abs(q.offsetMinutes) / 60)).padStart(2, '0')}:00`;
          expect(h.start).toBe(`${q.date}T${q.time}${offset}`);
          if (unknownDay(s, isoDay(q.ms))) {
            expect([h.metrics, h.adjustments, h.totals, typeof h.hoursReason]).toEqual([null, null, null, 'string']);
            return;
          }
          const expected: Record<string, number> = zero();
          for (const r of s.requests) if (r.at >= q.ms && r.at < q.ms + HOUR_MS) for (const m of METRICS) expected[m]! += r.amounts[m] ?? 0;
          expect(h.metrics).toEqual(expected);
          // A UTC day's adjustments are in its 00:00 UTC hour.
          const delta = q.ms % DAY_MS === 0 ? (s.facts[s.utcDays.indexOf(isoDay(q.ms))]!.adjustment ?? 0) : 0;
          expect(h.adjustments).toEqual({ ...zero(), requests: delta });
        });
        // The local days' hour counts: 23 and 25 on the change days.
        for (const row of report.days) {
          expect(report.hours!.filter((h) => h.start.startsWith(row.day)).length).toBe(hourStarts.filter((q) => q.date === row.day).length);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('in UTC, the hours of every day with known hours sum to the day, adjustments included', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const report = build({ ...s, zone: 'UTC', granularity: 'hour' });
        report.days.forEach((day, index) => {
          const hours = report.hours!.slice(index * 24, index * 24 + 24);
          expect(hours.every((h) => h.start.startsWith(`${day.day}T`))).toBe(true);
          if (day.hours === null) {
            expect(hours.every((h) => h.totals === null)).toBe(true);
            expect(day.metrics).not.toBeNull();
            return;
          }
          for (const m of METRICS) {
            expect(hours.reduce((sum, h) => sum + h.metrics![m]!, 0)).toBe(day.metrics![m]);
            expect(hours.reduce((sum, h) => sum + h.totals![m]!, 0)).toBe(day.totals![m]);
          }
        });
      }),
      { numRuns: 100 },
    );
  });
});
