import { parseTimeZone, UTC_ZONE } from '../../src/domain/reading/time-zones';

/**
 * `parseTimeZone('UTC')` (`tally count`'s default `--tz`) answers without building an
 * Intl.DateTimeFormat: the first one with a timeZone loads the platform's zone data, about
 * a tenth of a fresh `tally count` of a small file's CPU (issue 34). The answer is Intl's.
 */
describe('parseTimeZone of UTC', () => {
  afterEach(() => jest.restoreAllMocks());

  it('is UTC, as Intl names it, without asking Intl', () => {
    const intlName = new Intl.DateTimeFormat('en-US', { timeZone: 'UTC' }).resolvedOptions().timeZone;
    const formats = jest.spyOn(Intl, 'DateTimeFormat');
    expect(parseTimeZone('UTC')).toBe(intlName);
    expect(parseTimeZone(UTC_ZONE, '--tz')).toBe(UTC_ZONE);
    expect(formats).not.toHaveBeenCalled();
  });

  it('still asks Intl for every other spelling and zone', () => {
    const formats = jest.spyOn(Intl, 'DateTimeFormat');
    expect(parseTimeZone('utc')).toBe('UTC');
    expect(parseTimeZone('Etc/UTC')).toBe('UTC');
    expect(parseTimeZone('America/New_York')).toBe('America/New_York');
    expect(() => parseTimeZone('Mars/Olympus')).toThrow('unknown time zone "Mars/Olympus"');
    expect(formats).toHaveBeenCalledTimes(4);
  });
});
