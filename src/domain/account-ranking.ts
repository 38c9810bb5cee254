import type { MetricValues } from './usage-report';

/** One account's row of the operator ranking. */
export interface RankedAccount {
  readonly accountId: string;
  /** 1 for the largest user of the ranked metric. */
  readonly rank: number;
  /** Measured usage plus adjustments over the range, every metric. */
  readonly totals: MetricValues;
  /** Each metric's share of the total over all accounts, in percent (two decimals); 0 when the total is 0. */
  readonly share: MetricValues;
}

/** The operator view: every account with usage in a range, ranked by one metric. */
export interface AccountRanking {
  readonly from: string;
  readonly to: string;
  readonly metric: string;
  readonly metricNames: readonly string[];
  readonly accounts: readonly RankedAccount[];
  /** Sum over every account. */
  readonly totals: MetricValues;
}

/**
 * Ranks accounts by `metric` (largest first, ties by id) and gives each metric's share
 * of the total, so that the dashboard shows the API's figures without computing any.
 *
 * @example rankAccounts({ from, to, metric: 'requests', metricNames: ['requests'],
 *   rows: [{ accountId: 'a', totals: { requests: 1 } }, { accountId: 'b', totals: { requests: 3 } }] }).accounts
 * // [{ accountId: 'b', rank: 1, share: { requests: 75 }, ... }, { accountId: 'a', rank: 2, share: { requests: 25 }, ... }]
 */
export function rankAccounts(input: {
  from: string;
  to: string;
  metric: string;
  metricNames: readonly string[];
  rows: readonly { accountId: string; totals: MetricValues }[];
}): AccountRanking {
  const names = input.metricNames;
  const totals = Object.fromEntries(names.map((name) => [name, input.rows.reduce((sum, row) => sum + (row.totals[name] ?? 0), 0)]));
  const sorted = [...input.rows].sort(
    (a, b) => (b.totals[input.metric] ?? 0) - (a.totals[input.metric] ?? 0) || (a.accountId < b.accountId ? -1 : a.accountId > b.accountId ? 1 : 0),
  );
  return {
    from: input.from,
    to: input.to,
    metric: input.metric,
    metricNames: names,
    accounts: sorted.map((row, index) => ({
      accountId: row.accountId,
      rank: index + 1,
      totals: Object.fromEntries(names.map((name) => [name, row.totals[name] ?? 0])),
      share: Object.fromEntries(names.map((name) => [name, totals[name] === 0 ? 0 : Math.round(((row.totals[name] ?? 0) * 10_000) / totals[name]!) / 100])),
    })),
    totals,
  };
}
