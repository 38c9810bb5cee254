import { rankAccounts } from '../../src/domain/reading/account-ranking';
import { ValidationError } from '../../src/domain/errors';
import {
  alertStandsFor,
  crossingInForce,
  effectiveQuotas,
  monthDays,
  parseQuotaDefaults,
  parseQuotaLevels,
  percentOf,
  projectToMonthEnd,
  quotaInForce,
  quotaStatuses,
  reachedLevels,
  withPeriod,
} from '../../src/domain/billing/quota';
import { thresholdKey } from '../../src/domain/counters/keys';
import { monthsToEvaluate } from '../../src/app/billing/thresholds';
import { thresholdEventBody, thresholdEventId } from '../../src/domain/billing/webhook';

describe('quota levels and crossings', () => {
  it('reaches a level exactly at its share of the allowance, never one unit early', () => {
    expect(reachedLevels(799, 1000, [80, 100])).toEqual([]);
    expect(reachedLevels(800, 1000, [80, 100])).toEqual([80]);
    expect(reachedLevels(1000, 1000, [80, 100])).toEqual([80, 100]);
    // 80% of 3 is 2.4: 2 is below it, 3 reaches both.
    expect(reachedLevels(2, 3, [80, 100])).toEqual([]);
    expect(reachedLevels(3, 3, [80, 100])).toEqual([80, 100]);
    expect(reachedLevels(9_007_199_254_740_991, 9_007_199_254_740_991, [100])).toEqual([100]);
  });

  it('reads TALLY_QUOTA_LEVELS and TALLY_QUOTAS strictly', () => {
    expect(parseQuotaLevels('100, 80,80,150')).toEqual([80, 100, 150]);
    expect(() => parseQuotaLevels('80,0')).toThrow(ValidationError);
    expect(() => parseQuotaLevels('80.5')).toThrow(ValidationError);
    expect(parseQuotaDefaults('{"requests": 1000000, "bytes": 5000000000}')).toEqual({ requests: 1_000_000, bytes: 5_000_000_000 });
    expect(parseQuotaDefaults('')).toEqual({});
    expect(() => parseQuotaDefaults('{"requests": 0}')).toThrow(ValidationError);
    expect(() => parseQuotaDefaults('{"Requests": 10}')).toThrow(ValidationError);
    expect(() => parseQuotaDefaults('[1]')).toThrow(ValidationError);
  });

  it("lets an account's own quota win over the default of the same metric", () => {
    const quotas = effectiveQuotas([{ account: 'acme', metric: 'requests', history: [{ from: '2026-11', monthly: 50, levels: [50] }] }], { requests: 1000, bytes: 9 }, [80, 100], '2026-11');

    expect(quotas).toEqual([
      { metric: 'bytes', monthly: 9, levels: [80, 100], source: 'default' },
      { metric: 'requests', monthly: 50, levels: [50], source: 'account', from: '2026-11' },
    ]);
  });

  it('judges each month by the allowance in force in it: none before the first entry, a change never rewrites earlier months', () => {
    const setInNovember = { account: 'acme', metric: 'requests', history: withPeriod([], { from: '2026-11', monthly: 1000 }) };
    const changedInDecember = { ...setInNovember, history: withPeriod(setInNovember.history, { from: '2026-12', monthly: 2000 }) };
    const changedAgainInDecember = { ...setInNovember, history: withPeriod(changedInDecember.history, { from: '2026-12', monthly: 1500 }) };

    expect(effectiveQuotas([setInNovember], {}, [80, 100], '2026-10')).toEqual([]);
    expect(effectiveQuotas([setInNovember], { requests: 7 }, [80, 100], '2026-10')).toEqual([{ metric: 'requests', monthly: 7, levels: [80, 100], source: 'default' }]);
    expect(quotaInForce(changedInDecember, '2026-11')?.monthly).toBe(1000);
    expect(quotaInForce(changedInDecember, '2027-03')?.monthly).toBe(2000);
    expect(changedAgainInDecember.history).toEqual([{ from: '2026-11', monthly: 1000 }, { from: '2026-12', monthly: 1500 }]);
    expect(withPeriod(changedInDecember.history, { from: '2026-09', monthly: 5 })).toEqual([{ from: '2026-09', monthly: 5 }]);
  });

  it('keeps one record and one event id per (account, metric, month, level, allowance), whatever the usage', () => {
    const crossing = { account: 'acme', metric: 'requests', month: '2026-11', level: 80, allowance: 1000, used: 812, crossedAt: '2026-11-20T10:00:00.000Z' };

    expect(thresholdKey('2026-11', 'acme', 'requests', 80, 1000)).toEqual({ PK: 'THRESHOLD#2026-11', SK: 'acme#requests#080#1000' });
    const sameLevelOtherFigures = { ...crossing, used: 1900, crossedAt: '2026-11-21T10:00:00.000Z' };
    expect(thresholdEventId('tally-usage', crossing)).toBe(thresholdEventId('tally-usage', sameLevelOtherFigures));
    expect(thresholdEventId('tally-usage', crossing)).not.toBe(thresholdEventId('tally-usage', { ...crossing, allowance: 1_000_000 }));
    expect(thresholdEventId('tally-usage', crossing)).not.toBe(thresholdEventId('tally-usage', { ...crossing, level: 100 }));
    expect(thresholdEventId('tally-usage', crossing)).not.toBe(thresholdEventId('tally-usage', { ...crossing, month: '2026-12' }));
    expect(JSON.parse(thresholdEventBody('tally-usage', crossing))).toEqual({
      id: thresholdEventId('tally-usage', crossing),
      type: 'usage.threshold',
      createdAt: '2026-11-20T10:00:00.000Z',
      data: { account: 'acme', metric: 'requests', month: '2026-11', level: 80, allowance: 1000, used: 812 },
    });
  });

  it('evaluates the previous month too while its last day is still open', () => {
    expect(monthsToEvaluate(new Date('2026-12-02T23:59:00Z'), 48)).toEqual(['2026-11', '2026-12']);
    expect(monthsToEvaluate(new Date('2026-12-03T00:00:00Z'), 48)).toEqual(['2026-12']);
    expect(monthsToEvaluate(new Date('2027-01-01T05:00:00Z'), 48)).toEqual(['2026-12', '2027-01']);
  });
});

describe('month-to-date status', () => {
  it('projects usage linearly to the end of the UTC month', () => {
    expect(monthDays('2028-02')).toEqual({ first: '2028-02-01', last: '2028-02-29' });
    expect(projectToMonthEnd(500, '2026-11', new Date('2026-11-16T00:00:00Z'))).toBe(1000);
    expect(projectToMonthEnd(500, '2026-11', new Date('2026-12-05T00:00:00Z'))).toBe(500);
  });

  it('gives percentage and projection against the allowance, null where there is none', () => {
    const statuses = quotaStatuses({
      month: '2026-11',
      now: new Date('2026-11-16T00:00:00Z'),
      used: { requests: 850, bytes: 10 },
      quotas: [{ metric: 'requests', monthly: 1000, levels: [80, 100], source: 'account' }],
      crossings: [{ account: 'acme', metric: 'requests', month: '2026-11', level: 80, allowance: 1000, used: 812, crossedAt: 't' }],
    });

    expect(statuses.requests).toEqual({
      used: 850, allowance: 1000, percent: 85, projected: 1700, projectedPercent: 170, levels: [80, 100], source: 'account',
      crossed: [{ level: 80, crossedAt: 't', used: 812, allowance: 1000 }],
      earlier: [],
    });
    expect(statuses.bytes).toMatchObject({ used: 10, allowance: null, percent: null, projectedPercent: null, crossed: [] });
  });

  it('counts a sent alert under an earlier allowance only while usage at the time reached the level under the allowance now', () => {
    const sent = { account: 'acme', metric: 'requests', month: '2026-11', level: 80, allowance: 6178, used: 5000, crossedAt: 't', notifiedAt: 'n' };

    expect(alertStandsFor(sent, 80, 6178)).toBe(true);
    expect(alertStandsFor(sent, 80, 6000)).toBe(true); // lowered: 5000 is past 80% of 6000 too
    expect(alertStandsFor(sent, 80, 6251)).toBe(false); // raised: 80% of 6251 is 5000.8
    expect(alertStandsFor(sent, 80, 1_000_000)).toBe(false);
    expect(alertStandsFor({ ...sent, notifiedAt: undefined }, 80, 6000)).toBe(false); // unsent: withdrawn, the new allowance alerts
    expect(alertStandsFor({ ...sent, allowance: 6000, notifiedAt: undefined }, 80, 6000)).toBe(true); // pending under this allowance
    expect(alertStandsFor({ ...sent, withdrawnAt: 'w' }, 80, 6178)).toBe(false);
    expect(alertStandsFor(sent, 100, 5000)).toBe(false);
    expect(crossingInForce(sent, { monthly: 6178, levels: [80, 100] })).toBe(true);
    expect(crossingInForce(sent, { monthly: 6178, levels: [50, 100] })).toBe(false);
    expect(crossingInForce(sent, { monthly: 1_000_000, levels: [80, 100] })).toBe(false);
    expect(crossingInForce(sent, undefined)).toBe(false);
  });

  it('rounds the percentage down, so it shows 100% only when the 100% level is reached', () => {
    expect(percentOf(9_999, 10_000)).toBe(99.9);
    expect(reachedLevels(9_999, 10_000, [100])).toEqual([]);
    expect(percentOf(10_000, 10_000)).toBe(100);
    expect(percentOf(799, 1000)).toBe(79.9);
    expect(percentOf(2, 3)).toBe(66.6);
    expect(percentOf(100_000_000_000, 1000)).toBe(10_000_000_000);
  });
});

describe('the operator ranking', () => {
  it('ranks by the chosen metric, ties by id, with each share of the total', () => {
    const ranking = rankAccounts({
      from: '2026-11-01',
      to: '2026-11-30',
      metric: 'bytes',
      metricNames: ['requests', 'bytes'],
      rows: [
        { accountId: 'b', totals: { requests: 1, bytes: 300 } },
        { accountId: 'a', totals: { requests: 2, bytes: 300 } },
        { accountId: 'c', totals: { requests: 0, bytes: 0 } },
      ],
    });

    expect(ranking.accounts.map((row) => [row.accountId, row.rank, row.share.bytes, row.share.requests])).toEqual([
      ['a', 1, 50, 66.67],
      ['b', 2, 50, 33.33],
      ['c', 3, 0, 0],
    ]);
    expect(ranking.totals).toEqual({ requests: 3, bytes: 600 });
  });
});
