import fc from 'fast-check';
import { isValidAccountId } from '../../src/domain/account-id';
import { parseUsageQuery } from '../../src/domain/reading/usage-query';
import {
  checkSelection,
  isDayInProgress,
  isPartialMonth,
  MAX_RANGE_DAYS,
  rangeFor,
  rangeLength,
  type SelectionInput,
} from '../../src/dashboard/lib/selection';

const TODAY = '2026-03-15';
const input = (patch: Partial<SelectionInput>): SelectionInput => ({
  account: 'acme',
  preset: '30d',
  from: '',
  to: '',
  granularity: 'day',
  today: TODAY,
  ...patch,
});

describe('dashboard selection', () => {
  it('turns the presets into ranges ending today (UTC)', () => {
    expect(rangeFor('7d', TODAY)).toEqual({ from: '2026-03-09', to: TODAY });
    expect(rangeFor('30d', TODAY)).toEqual({ from: '2026-02-14', to: TODAY });
    expect(rangeFor('90d', TODAY)).toEqual({ from: '2025-12-16', to: TODAY });
    expect(rangeFor('this-month', TODAY)).toEqual({ from: '2026-03-01', to: TODAY });
    expect(rangeFor('previous-month', TODAY)).toEqual({ from: '2026-02-01', to: '2026-02-28' });
    expect(rangeFor('previous-month', '2026-01-01')).toEqual({ from: '2025-12-01', to: '2025-12-31' });
    expect(rangeFor('something-else', TODAY)).toEqual(rangeFor('30d', TODAY));
  });

  it('builds the query of a valid selection', () => {
    expect(checkSelection(input({ account: ' acme ', granularity: 'month' }))).toEqual({
      ok: true,
      query: { account: 'acme', from: '2026-02-14', to: TODAY, granularity: 'month' },
    });
    expect(checkSelection(input({ preset: 'custom', from: '2024-02-29', to: '2024-03-01' }))).toEqual({
      ok: true,
      query: { account: 'acme', from: '2024-02-29', to: '2024-03-01', granularity: 'day' },
    });
  });

  it('refuses an account id the API refuses, including one with ".."', () => {
    expect(checkSelection(input({ account: '' }))).toEqual({ ok: false, error: 'Enter an account id.' });
    for (const account of ['a..b', '../etc', 'acme#1', '-acme', 'x'.repeat(65)]) {
      const result = checkSelection(input({ account }));
      expect(result.ok).toBe(false);
      expect(result.ok ? '' : result.error).toContain('is not an account id');
    }
  });

  it('agrees with the domain on every account id', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9._#/-]{1,70}$/), (account) => {
        expect(checkSelection(input({ account })).ok).toBe(isValidAccountId(account));
      }),
    );
  });

  it('refuses custom ranges that are not calendar days, reversed or too long', () => {
    const error = (patch: Partial<SelectionInput>) => {
      const result = checkSelection(input({ preset: 'custom', ...patch }));
      return result.ok ? undefined : result.error;
    };
    expect(error({ from: '2023-02-29', to: '2023-03-01' })).toBe('Pick both a start and an end day for the custom range.');
    expect(error({ from: '2026-01-01', to: '' })).toBe('Pick both a start and an end day for the custom range.');
    expect(error({ from: '9999-12-31', to: '9999-12-31' })).toBe('Pick days from 2000-01-01..2099-12-31.');
    expect(error({ from: '2026-02-01', to: '2026-01-31' })).toBe('The end day is before the start day.');
    expect(error({ from: '2024-01-01', to: '2024-12-31' })).toBeUndefined(); // 366 days
    expect(error({ from: '2025-01-01', to: '2026-01-02' })).toBe(`Pick at most ${MAX_RANGE_DAYS} days (this range has 367).`);
  });

  it('accepts exactly the custom ranges the usage API accepts', () => {
    const day = fc.date({ min: new Date('2023-01-01T00:00:00Z'), max: new Date('2026-12-31T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));
    fc.assert(
      fc.property(day, day, (from, to) => {
        const api = (() => {
          try {
            parseUsageQuery('acme', { from, to });
            return true;
          } catch {
            return false;
          }
        })();
        expect(checkSelection(input({ preset: 'custom', from, to })).ok).toBe(api);
      }),
    );
  });

  it('knows which day is still in progress and which month rows are cut', () => {
    const now = new Date('2026-03-15T23:59:59Z');
    expect(isDayInProgress('2026-03-15', now)).toBe(true);
    expect(isDayInProgress('2026-03-14', now)).toBe(false);
    expect(isDayInProgress('2026-03-16', now)).toBe(false);
    expect(isPartialMonth({ month: '2026-02', from: '2026-02-01', to: '2026-02-28' })).toBe(false);
    expect(isPartialMonth({ month: '2026-02', from: '2026-02-01', to: '2026-02-27' })).toBe(true);
    expect(isPartialMonth({ month: '2026-02', from: '2026-02-02', to: '2026-02-28' })).toBe(true);
    expect(rangeLength({ from: '2024-01-01', to: '2024-12-31' })).toBe(366);
  });
});
