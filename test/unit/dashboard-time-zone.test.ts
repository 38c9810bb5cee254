import fc from 'fast-check';
import {
  hourLabelEvery,
  hourLabels,
  hoursNote,
  hoursOfDay,
  isKnownZone,
  missingHoursReason,
  parseHourStart,
  pickZone,
  todayIn,
  zoneOptions,
} from '../../src/dashboard/lib/time-zone';

/** Hour rows as the API writes them: `start` with the zone's offset then. */
const row = (start: string, requests = 1) => ({ start, metrics: { requests } });

describe('dashboard time zone', () => {
  it('offers the account zone, this browser zone and UTC, each once', () => {
    expect(zoneOptions('Asia/Tokyo', 'America/New_York').map((o) => [o.choice, o.zone])).toEqual([
      ['account', 'Asia/Tokyo'],
      ['browser', 'America/New_York'],
      ['utc', 'UTC'],
    ]);
    expect(zoneOptions(null, 'America/New_York').map((o) => o.choice)).toEqual(['browser', 'utc']);
    expect(zoneOptions('Europe/Berlin', 'Europe/Berlin').map((o) => o.choice)).toEqual(['account', 'utc']);
    expect(zoneOptions('Not/AZone', 'UTC').map((o) => o.choice)).toEqual(['utc']);
  });

  it('picks the stored choice, else the account zone, else UTC', () => {
    const all = zoneOptions('Asia/Tokyo', 'America/New_York');
    expect(pickZone(all, 'browser').zone).toBe('America/New_York');
    expect(pickZone(all, 'utc').zone).toBe('UTC');
    expect(pickZone(all, null).zone).toBe('Asia/Tokyo');
    expect(pickZone(zoneOptions(null, 'America/New_York'), null).zone).toBe('UTC');
    // The browser's zone is the account's: the account's option stands for it.
    expect(pickZone(zoneOptions('Europe/Berlin', 'Europe/Berlin'), 'browser', 'Europe/Berlin').choice).toBe('account');
    // A stored choice no longer offered (no account zone now) falls back to UTC.
    expect(pickZone(zoneOptions(null, 'UTC'), 'account').zone).toBe('UTC');
  });

  it('knows zones through Intl, and refuses other text', () => {
    expect(isKnownZone('America/New_York')).toBe(true);
    expect(isKnownZone('UTC')).toBe(true);
    expect(isKnownZone('Mars/Olympus')).toBe(false);
    expect(isKnownZone('')).toBe(false);
    expect(isKnownZone('x'.repeat(100))).toBe(false);
  });

  it("says today's day in a zone", () => {
    const instant = new Date('2026-11-01T03:30:00Z');
    expect(todayIn(instant, 'UTC')).toBe('2026-11-01');
    expect(todayIn(instant, 'America/New_York')).toBe('2026-10-31');
    expect(todayIn(instant, 'Asia/Tokyo')).toBe('2026-11-01');
  });

  it('reads the local day, time and offset off an hour start', () => {
    expect(parseHourStart('2026-11-01T01:00:00-05:00')).toEqual({ day: '2026-11-01', time: '01:00', offset: '-05:00', epochSeconds: Date.parse('2026-11-01T06:00:00Z') / 1000 });
    expect(parseHourStart('2026-11-01T01:00:00Z').offset).toBe('+00:00');
    expect(() => parseHourStart('2026-11-01 01:00')).toThrow('not an hour start');
  });

  it('labels the hour that occurs twice with its offset, and no other', () => {
    // America/New_York falls back on 2026-11-01: 01:00 EDT then 01:00 EST.
    const rows = [row('2026-11-01T00:00:00-04:00'), row('2026-11-01T01:00:00-04:00'), row('2026-11-01T01:00:00-05:00'), row('2026-11-01T02:00:00-05:00')];
    expect(hourLabels(rows)).toEqual(['00:00', '01:00 \u221204:00', '01:00 \u221205:00', '02:00']);
  });

  it('keeps the hours of one local day, in order', () => {
    const rows = [row('2026-03-07T23:00:00-05:00'), row('2026-03-08T00:00:00-05:00'), row('2026-03-08T03:00:00-04:00'), row('2026-03-09T00:00:00-04:00')];
    expect(hoursOfDay(rows, '2026-03-08').map((r) => r.start)).toEqual(['2026-03-08T00:00:00-05:00', '2026-03-08T03:00:00-04:00']);
  });

  it('names the daylight-saving days by their hours', () => {
    expect(hoursNote(23)).toMatch(/forward/);
    expect(hoursNote(25)).toMatch(/back/);
    expect(hoursNote(24)).toBe('');
    expect(hoursNote(0)).toMatch(/skipped this day/);
  });

  it('gives the reason of a day without hours, and none for a day with them', () => {
    expect(missingHoursReason({ day: '2026-11-01', hours: null, reason: 'counted before hours were kept' })).toBe('counted before hours were kept');
    expect(missingHoursReason({ day: '2026-11-01', hours: null })).toMatch(/not recorded/);
    expect(missingHoursReason({ day: '2026-11-01', hours: { 0: { requests: 1 } } })).toBeNull();
    expect(missingHoursReason({ day: '2026-11-01' })).toBeNull();
  });

  it('spaces axis labels so that they fit, on the same local hours each day', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 7 * 25 }), fc.integer({ min: 0, max: 60 }), (count, room) => {
        const step = hourLabelEvery(count, room);
        expect([1, 2, 3, 6, 12, 24]).toContain(step);
        if (step < 24) expect(Math.ceil(count / step)).toBeLessThanOrEqual(Math.max(1, room));
      }),
    );
    expect(hourLabelEvery(25, 30)).toBe(1);
    expect(hourLabelEvery(25, 8)).toBe(6);
  });
});
