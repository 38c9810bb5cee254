import fc from 'fast-check';
import { countGranularity, timeZone, zonedHoursOfUtcDay, zoneUsage } from '../../src/cli/count-hours';
import { printCount } from '../../src/cli/commands/ingest/count';
import type { HourSums } from '../../src/domain/hours';
import type { AccountDayUsage } from '../../src/domain/logs/usage-tally';
import { addDays } from '../../src/domain/days';

const NAMES = ['requests', 'bytes'];

/** An account-day whose every hour has `perHour` requests (and 10× bytes), plus `timeless` requests of no hour. */
function everyHour(account: string, day: string, perHour: number, timeless = 0): AccountDayUsage {
  const hours: Record<number, Record<string, number>> = {};
  for (let hour = 0; hour < 24; hour++) hours[hour] = { requests: perHour, bytes: perHour * 10 };
  return { account, day, metrics: { requests: 24 * perHour + timeless, bytes: 240 * perHour }, hours };
}

describe('tally count --granularity / --tz', () => {
  it('reads --granularity and --tz, and refuses anything else naming the flag', () => {
    expect(countGranularity('hour', '--granularity')).toBe('hour');
    expect(() => countGranularity('minute', '--granularity')).toThrow('--granularity must be "day" or "hour", got "minute"');
    expect(timeZone('america/new_york', '--tz')).toBe('America/New_York');
    expect(timeZone('Etc/UTC', '--tz')).toBe('UTC');
    expect(timeZone('Asia/Kolkata', '--tz')).toBe('Asia/Kolkata');
    expect(() => timeZone('Mars/Olympus', '--tz')).toThrow('--tz: unknown time zone "Mars/Olympus"');
    expect(() => timeZone('', '--tz')).toThrow('--tz must be an IANA time zone');
    expect(() => timeZone('../etc/passwd', '--tz')).toThrow('--tz must be an IANA time zone');
    expect(() => timeZone(`Europe/${'x'.repeat(100)}`, '--tz')).toThrow('--tz must be an IANA time zone');
  });

  it('labels UTC hours with the zone offset in force, as the API does', () => {
    const fallBack = zonedHoursOfUtcDay('America/New_York', '2026-11-01');
    expect(fallBack.size).toBe(24);
    expect(fallBack.get(3)).toEqual({ day: '2026-10-31', start: '2026-10-31T23:00:00-04:00' });
    expect(fallBack.get(5)).toEqual({ day: '2026-11-01', start: '2026-11-01T01:00:00-04:00' });
    expect(fallBack.get(6)).toEqual({ day: '2026-11-01', start: '2026-11-01T01:00:00-05:00' });
    expect(zonedHoursOfUtcDay('UTC', '2026-11-01').get(6)).toEqual({ day: '2026-11-01', start: '2026-11-01T06:00:00+00:00' });
    expect(zonedHoursOfUtcDay('Pacific/Kiritimati', '2026-11-01').get(10)).toEqual({ day: '2026-11-02', start: '2026-11-02T00:00:00+14:00' });
    expect(() => zonedHoursOfUtcDay('Asia/Kolkata', '2026-11-01')).toThrow('+05:30 from UTC');
    expect(() => zonedHoursOfUtcDay('Asia/Kathmandu', '2026-11-01')).toThrow('+05:45 from UTC');
  });

  it('makes a fall-back day of 25 hours and a spring-forward day of 23 (America/New_York)', () => {
    const usage = ['2026-10-31', '2026-11-01', '2026-11-02', '2026-03-07', '2026-03-08', '2026-03-09'].map((day) => everyHour('acme', day, 1));
    const { days, hours } = zoneUsage(usage, NAMES, 'America/New_York', true);
    const dayOf = (day: string) => days.find((row) => row.day === day)!.metrics.requests;
    expect(dayOf('2026-11-01')).toBe(25);
    expect(dayOf('2026-03-08')).toBe(23);
    expect(dayOf('2026-10-31')).toBe(24);
    const fallBack = hours.filter((row) => row.day === '2026-11-01').map((row) => row.start.slice(11));
    expect(fallBack).toHaveLength(25);
    expect(fallBack.slice(0, 4)).toEqual(['00:00:00-04:00', '01:00:00-04:00', '01:00:00-05:00', '02:00:00-05:00']);
    expect(hours.filter((row) => row.day === '2026-03-08').map((row) => row.start.slice(11, 13))).not.toContain('02');
  });

  it('keeps the lines with no time of day apart, in no hour and no local day', () => {
    const { days, timeless } = zoneUsage([everyHour('acme', '2026-11-21', 2, 5)], NAMES, 'Europe/Berlin', false);
    expect(timeless).toEqual([{ account: 'acme', day: '2026-11-21', metrics: { requests: 5, bytes: 0 } }]);
    expect(days.reduce((sum, row) => sum + row.metrics.requests!, 0)).toBe(48);
    // In UTC the day is the count's own, those lines included; they are still named apart.
    const utc = zoneUsage([everyHour('acme', '2026-11-21', 2, 5)], NAMES, 'UTC', true);
    expect(utc.days).toEqual([{ account: 'acme', day: '2026-11-21', metrics: { requests: 53, bytes: 480 } }]);
    expect(utc.timeless).toHaveLength(1);
  });

  it('without --tz and hours prints the count exactly as before', () => {
    const usage = [everyHour('acme', '2026-11-21', 1, 3)];
    expect(zoneUsage(usage, NAMES, 'UTC', false)).toEqual({ days: [{ account: 'acme', day: '2026-11-21', metrics: usage[0]!.metrics }], hours: [], timeless: [] });
  });

  it('refuses a zone of sub-hour offsets even on days with no hours', () => {
    const noHours: AccountDayUsage = { account: 'acme', day: '2026-11-21', metrics: { requests: 1, bytes: 1 }, hours: {} };
    expect(() => zoneUsage([noHours], NAMES, 'Asia/Kolkata', false)).toThrow('Asia/Kolkata is +05:30 from UTC');
  });

  it('prints hours per account and day, the repeated hour with its offset', () => {
    const { days, hours, timeless } = zoneUsage([everyHour('acme', '2026-11-01', 1)], NAMES, 'America/New_York', true);
    const text = printCount(days, NAMES, 'America/New_York', hours, timeless);
    expect(text).toMatch(/account\s+day \(America\/New_York\)\s+requests\s+bytes/);
    expect(text).toMatch(/acme\s+2026-10-31\s+4\s+40/);
    expect(text).toMatch(/acme\s+2026-11-01\s+01:00-04:00\s+1\s+10/);
    expect(text).toMatch(/acme\s+2026-11-01\s+01:00-05:00\s+1\s+10/);
  });

  it('loses nothing: local days and the lines of no time add up to the UTC count, in any whole-hour zone', () => {
    const zones = ['UTC', 'America/New_York', 'Europe/Berlin', 'Asia/Tokyo', 'Pacific/Kiritimati', 'Pacific/Pago_Pago', 'America/Santiago'];
    const hourSums = fc.dictionary(fc.integer({ min: 0, max: 23 }).map(String), fc.record({ requests: fc.nat(1000), bytes: fc.nat(100000) }), { maxKeys: 24 });
    const row = fc.record({ account: fc.constantFrom('acme', 'globex'), offset: fc.integer({ min: 0, max: 400 }), hours: hourSums, timeless: fc.nat(50) });
    fc.assert(
      fc.property(fc.array(row, { maxLength: 8 }), fc.constantFrom(...zones), fc.boolean(), (rows, zone, withHours) => {
        const byKey = new Map<string, AccountDayUsage>();
        for (const r of rows) {
          const day = addDays('2026-01-01', r.offset);
          const hours = Object.fromEntries(Object.entries(r.hours).map(([h, m]) => [Number(h), m])) as HourSums;
          const requests = Object.values(r.hours).reduce((s, m) => s + m.requests, 0) + r.timeless;
          const bytes = Object.values(r.hours).reduce((s, m) => s + m.bytes, 0);
          byKey.set(`${r.account} ${day}`, { account: r.account, day, metrics: { requests, bytes }, hours });
        }
        const usage = [...byKey.values()];
        const result = zoneUsage(usage, NAMES, zone, withHours);
        const total = (list: readonly { metrics: Record<string, number> }[], name: string) => list.reduce((s, x) => s + (x.metrics[name] ?? 0), 0);
        for (const name of NAMES) {
          const placed = total(result.days, name) + (zone === 'UTC' ? 0 : total(result.timeless, name));
          expect(placed).toBe(total(usage, name));
          if (withHours) expect(total(result.hours, name) + total(result.timeless, name)).toBe(total(usage, name));
        }
        // Each hour lands on the local day its start names, once, in order.
        for (const h of result.hours) expect(h.start.slice(0, 10)).toBe(h.day);
      }),
      { numRuns: 200 },
    );
  });
});
