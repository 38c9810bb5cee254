import { ValidationError } from '../../src/domain/errors';
import { cacheControlFor, parseUsageQuery } from '../../src/domain/reading/usage-query';

describe('parseUsageQuery', () => {
  it('reads a day range with defaults: per day, JSON', () => {
    expect(parseUsageQuery('acme', { from: '2026-11-01', to: '2026-11-30' })).toEqual({
      accountId: 'acme',
      from: '2026-11-01',
      to: '2026-11-30',
      granularity: 'day',
      timeZone: 'UTC',
      format: 'json',
      quota: false,
    });
  });

  it('reads granularity=hour and an IANA zone in its canonical spelling', () => {
    const query = parseUsageQuery('acme', { from: '2026-11-01', to: '2026-11-07', granularity: 'hour', tz: 'america/new_york' });
    expect([query.granularity, query.timeZone]).toEqual(['hour', 'America/New_York']);
    expect(parseUsageQuery('acme', { from: '2026-11-01', to: '2026-11-01', tz: 'Etc/UTC' }).timeZone).toBe('UTC');
    expect(parseUsageQuery('acme', { from: '2026-10-01', to: '2026-10-31', granularity: 'hour' }).to).toBe('2026-10-31');
  });

  it('adds the quota block for month grouping, or when asked with quota=true', () => {
    expect(parseUsageQuery('acme', { from: '2026-11-01', to: '2026-11-30', granularity: 'month' }).quota).toBe(true);
    expect(parseUsageQuery('acme', { from: '2026-11-01', to: '2026-11-30', quota: 'true' }).quota).toBe(true);
    expect(parseUsageQuery('acme', { from: '2026-11-01', to: '2026-11-30', granularity: 'month', quota: 'false' }).quota).toBe(false);
    expect(() => parseUsageQuery('acme', { from: '2026-11-01', to: '2026-11-30', quota: 'yes' })).toThrow(ValidationError);
  });

  it('accepts a single day and a full leap year of 366 days', () => {
    expect(parseUsageQuery('acme', { from: '2026-11-21', to: '2026-11-21' }).to).toBe('2026-11-21');
    expect(parseUsageQuery('acme', { from: '2028-01-01', to: '2028-12-31' }).to).toBe('2028-12-31');
  });

  it.each([
    [{ to: '2026-11-30' }, 'query parameter "from" is required: a UTC day as YYYY-MM-DD'],
    [{ from: '2026-11-01' }, 'query parameter "to" is required: a UTC day as YYYY-MM-DD'],
    [{ from: '2026-02-30', to: '2026-03-01' }, 'query parameter "from" must be a calendar day as YYYY-MM-DD, got "2026-02-30"'],
    [{ from: '2026-11-01', to: '21/11/2026' }, 'query parameter "to" must be a calendar day as YYYY-MM-DD, got "21/11/2026"'],
    [{ from: '2026-11-01,2026-11-02', to: '2026-11-03' }, 'query parameter "from" must be a calendar day as YYYY-MM-DD, got "2026-11-01,2026-11-02"'],
    [{ from: '9999-12-31', to: '9999-12-31' }, 'query parameter "from" must be within the days Tally supports, 2000-01-01..2099-12-31, got "9999-12-31"'],
    [{ from: '2026-11-01', to: '2100-01-01' }, 'query parameter "to" must be within the days Tally supports, 2000-01-01..2099-12-31, got "2100-01-01"'],
    [{ from: '2026-11-30', to: '2026-11-01' }, '"to" (2026-11-01) is before "from" (2026-11-30); give the earlier day as "from"'],
    [
      { from: '2026-01-01', to: '2027-01-02' },
      'the range 2026-01-01..2027-01-02 spans 367 days; ask for at most 366 days per request (e.g. to=2027-01-01)',
    ],
    [{ from: '2026-11-01', to: '2026-11-02', granularity: 'week' }, 'query parameter "granularity" must be "hour", "day" or "month", got "week"'],
    [
      { from: '2026-10-01', to: '2026-11-01', granularity: 'hour' },
      'granularity=hour answers at most 31 days per request; the range 2026-10-01..2026-11-01 spans 32 days (e.g. to=2026-10-31)',
    ],
    [{ from: '2026-11-01', to: '2026-11-02', tz: 'Mars/Olympus_Mons' }, 'query parameter "tz": unknown time zone "Mars/Olympus_Mons"; give an IANA zone such as Europe/Berlin or UTC'],
    [{ from: '2026-11-01', to: '2026-11-02', tz: '+05:00' }, 'query parameter "tz" must be an IANA time zone such as America/New_York or UTC, got "+05:00"'],
    [{ from: '2026-11-01', to: '2026-11-02', tz: '../../etc/passwd' }, 'query parameter "tz" must be an IANA time zone'],
    [{ from: '2026-11-01', to: '2026-11-02', tz: 'Asia/Kolkata' }, 'time zone Asia/Kolkata is +05:30 from UTC on 2026-11-01: Tally keeps usage by whole UTC hours'],
    [{ from: '2026-11-01', to: '2026-11-02', tz: 'Asia/Kathmandu' }, 'time zone Asia/Kathmandu is +05:45 from UTC on 2026-11-01'],
    [{ from: '2026-11-01', to: '2026-11-02', format: 'xml' }, 'query parameter "format" must be "json" or "csv", got "xml"'],
  ])('refuses %j with a message that says what is wrong', (params, message) => {
    expect(() => parseUsageQuery('acme', params)).toThrow(ValidationError);
    expect(() => parseUsageQuery('acme', params)).toThrow(message);
  });

  it.each(['', 'acme#1', '../etc', 'a/b', '=cmd', '-x', 'a'.repeat(65), 'a..b'])('refuses the account id %j', (accountId) => {
    expect(() => parseUsageQuery(accountId, { from: '2026-11-01', to: '2026-11-02' })).toThrow(/invalid account id: an account id is 1-64 characters/);
  });

  it('says a parameter was given twice when its value holds a comma, as API Gateway joins repeated parameters', () => {
    // tryout: from=2026-11-21&from=2026-11-01 answered only 'got "2026-11-21,2026-11-01"'.
    const hint = ' (a parameter given more than once arrives joined by commas: give it once)';
    expect(() => parseUsageQuery('acme', { from: '2026-11-21,2026-11-01', to: '2026-11-22' })).toThrow(
      `query parameter "from" must be a calendar day as YYYY-MM-DD, got "2026-11-21,2026-11-01"${hint}`,
    );
    expect(() => parseUsageQuery('acme', { from: '2026-11-21', to: '2026-11-22', granularity: 'day,hour' })).toThrow(`got "day,hour"${hint}`);
    expect(() => parseUsageQuery('acme', { from: '2026-11-21', to: '2026-11-22', format: 'csv,json' })).toThrow(`got "csv,json"${hint}`);
    expect(() => parseUsageQuery('acme', { from: '2026-11-21', to: '2026-11-22', granularity: 'minute' })).not.toThrow(/given more than once/);
  });

  it('keeps control characters and long input out of messages', () => {
    expect(() => parseUsageQuery('acme', { from: `2026\n${'x'.repeat(100)}`, to: '2026-11-02' })).toThrow(
      `query parameter "from" must be a calendar day as YYYY-MM-DD, got "2026?${'x'.repeat(35)}..."`,
    );
  });

  it('answers CSV for format=csv or when text/csv is the preferred Accept type; an explicit format wins', () => {
    const range = { from: '2026-11-01', to: '2026-11-02' };
    expect(parseUsageQuery('acme', { ...range, format: 'csv' }).format).toBe('csv');
    expect(parseUsageQuery('acme', range, 'text/csv').format).toBe('csv');
    expect(parseUsageQuery('acme', range, 'application/json;q=0.5, text/csv').format).toBe('csv');
    expect(parseUsageQuery('acme', range, 'application/json, text/csv;q=0.9').format).toBe('json');
    expect(parseUsageQuery('acme', range, '*/*').format).toBe('json');
    expect(parseUsageQuery('acme', { ...range, format: 'json' }, 'text/csv').format).toBe('json');
  });
});

describe('cacheControlFor', () => {
  it('lets ranges that reach today or yesterday be reused for a minute, older ranges for five', () => {
    expect(cacheControlFor({ to: '2026-11-22' }, '2026-11-22')).toBe('private, max-age=60');
    expect(cacheControlFor({ to: '2026-11-21' }, '2026-11-22')).toBe('private, max-age=60');
    expect(cacheControlFor({ to: '2026-12-31' }, '2026-11-22')).toBe('private, max-age=60');
    expect(cacheControlFor({ to: '2026-11-20' }, '2026-11-22')).toBe('private, max-age=300');
  });
});
