import fc from 'fast-check';
import { addDays, dayProblem, eachDay, isSupportedDay, MAX_DAYS_WALKED, SUPPORTED_DAYS, supportedDay } from '../../src/domain/days';
import { ValidationError } from '../../src/domain/errors';

describe('the supported days', () => {
  it('are 2000-01-01..2099-12-31, leap days included', () => {
    expect(SUPPORTED_DAYS).toEqual({ first: '2000-01-01', last: '2099-12-31' });
    expect(MAX_DAYS_WALKED).toBe(36_525);
    for (const day of ['2000-01-01', '2000-02-29', '2024-02-29', '2099-12-31']) expect(isSupportedDay(day)).toBe(true);
    for (const day of ['1999-12-31', '2100-01-01', '2100-02-29', '2023-02-29', '0000-01-01', '9999-12-31', '+275760-09-13', '']) {
      expect(isSupportedDay(day)).toBe(false);
    }
  });

  it('refuse a day outside them with a message that states the range', () => {
    expect(dayProblem('9999-12-31')).toBe('is outside the days Tally supports, 2000-01-01..2099-12-31');
    expect(dayProblem('2023-02-29')).toBe('is not a calendar day (YYYY-MM-DD)');
    expect(() => supportedDay('9999-12-31', '--day')).toThrow(new ValidationError('--day "9999-12-31" is outside the days Tally supports, 2000-01-01..2099-12-31'));
  });
});

describe('addDays', () => {
  it('refuses to leave four-digit years, where day strings stop sorting as dates', () => {
    expect(addDays('2099-12-31', 1)).toBe('2100-01-01');
    expect(() => addDays('9999-12-31', 1)).toThrow(RangeError);
    expect(() => addDays('0000-01-01', -1)).toThrow(RangeError);
    expect(() => addDays('+275760-09-13', 1)).toThrow(RangeError);
    expect(() => addDays('2026-11-21', Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });
});

describe('eachDay', () => {
  it('ends for the far-future day that froze the service, with an error', () => {
    expect(() => eachDay('9999-12-31', '9999-12-31')).toThrow(RangeError);
    expect(() => eachDay('2026-11-21', '9999-12-31')).toThrow(RangeError);
  });

  it('walks the whole supported range at most, in order, for any two days', () => {
    const anyDay = fc.date({ min: new Date(Date.UTC(-1000, 0, 1)), max: new Date(Date.UTC(12000, 0, 1)), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));
    fc.assert(
      fc.property(anyDay, anyDay, (from, to) => {
        let days: string[];
        try {
          days = eachDay(from, to);
        } catch (error) {
          expect(error).toBeInstanceOf(RangeError);
          expect(isSupportedDay(from) && isSupportedDay(to)).toBe(false);
          return;
        }
        expect(days.length).toBeLessThanOrEqual(MAX_DAYS_WALKED);
        if (to >= from) expect([days[0], days.at(-1)]).toEqual([from, to]);
        else expect(days).toEqual([]);
      }),
    );
  });
});
