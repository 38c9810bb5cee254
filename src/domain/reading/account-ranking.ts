import { UNATTRIBUTED } from '../account-id';
import { csvNumberCell, csvTextCell } from './usage-csv';
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
  /** Sum over every ranked account (lines no resolver attributed are not in it). */
  readonly totals: MetricValues;
  /**
   * Usage of lines no resolver attributed to an account (`unattributed`): shown apart,
   * never ranked as a customer nor counted in the shares; null when there was none.
   */
  readonly unattributed: MetricValues | null;
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
  const customers = input.rows.filter((row) => row.accountId !== UNATTRIBUTED);
  const unattributed = input.rows.find((row) => row.accountId === UNATTRIBUTED);
  const totals = Object.fromEntries(names.map((name) => [name, customers.reduce((sum, row) => sum + (row.totals[name] ?? 0), 0)]));
  const sorted = [...customers].sort(
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
    unattributed: unattributed === undefined ? null : Object.fromEntries(names.map((name) => [name, unattributed.totals[name] ?? 0])),
  };
}

/**
 * The ranking as CSV (`format=csv`): one row per ranked account, its totals and its share
 * of the ranked metric, then the unattributed usage (no rank, no share) when there is some.
 *
 * ```
 * rank,account,requests,bytes,share_requests
 * 1,acme,1200,5000,75
 * ,unattributed,10,300,
 * ```
 */
export function rankingCsv(ranking: AccountRanking): string {
  const names = ranking.metricNames;
  const lines = [['rank', 'account', ...names, `share_${ranking.metric}`].map(csvTextCell).join(',')];
  for (const row of ranking.accounts) {
    lines.push([csvNumberCell(row.rank), csvTextCell(row.accountId), ...names.map((name) => csvNumberCell(row.totals[name] ?? 0)), csvNumberCell(row.share[ranking.metric] ?? 0)].join(','));
  }
  if (ranking.unattributed !== null) {
    const unattributed = ranking.unattributed;
    lines.push(['', csvTextCell(UNATTRIBUTED), ...names.map((name) => csvNumberCell(unattributed[name] ?? 0)), ''].join(','));
  }
  return `${lines.join('\r\n')}\r\n`;
}

/** File name of a ranking download: `tally-ranking-<from>-<to>-<metric>.csv`. */
export function rankingCsvFileName(ranking: Pick<AccountRanking, 'from' | 'to' | 'metric'>): string {
  return `tally-ranking-${ranking.from}-${ranking.to}-${ranking.metric}.csv`;
}
