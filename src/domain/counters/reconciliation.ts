import type { AccountDayUsage } from '../logs/usage-tally';

/** What the read API serves for one account-day: measured usage and adjustments apart. */
export interface ServedDay {
  readonly metrics: Readonly<Record<string, number>>;
  readonly adjustments: Readonly<Record<string, number>>;
}

/** One metric of one account-day: the raw logs' count against what is served. */
export interface ReconcileRow {
  readonly account: string;
  readonly day: string;
  readonly metric: string;
  /** Recounted from the raw logs, independently of the counters. */
  readonly logs: number;
  /** Measured usage the API serves (every shard summed), adjustments excluded. */
  readonly served: number;
  /** Operator adjustments of that metric and day: shown, never drift. */
  readonly adjustments: number;
  /** `served - logs`: positive means counted more than the logs hold. */
  readonly drift: number;
}

export interface Reconciliation {
  readonly rows: ReconcileRow[];
  /** Metrics the counters hold that the recount does not compute (not configured here). */
  readonly unchecked: string[];
}

/** `account|day`, the key of recounted and served maps. */
export function accountDayKey(account: string, day: string): string {
  return `${account}|${day}`;
}

/**
 * Compares a recount of the raw logs with what is served, per account-day and metric,
 * over the days `from..to` only (a recount also reads neighbouring days' objects for
 * their late lines; those days are not complete and are left out). Rows where every
 * figure is zero are dropped; a row drifts when `served !== logs`.
 */
export function reconcile(input: {
  /** Recounted days (their hours are not compared: revisions and drift are per day). */
  readonly recounted: readonly Pick<AccountDayUsage, 'account' | 'day' | 'metrics'>[];
  readonly served: ReadonlyMap<string, ServedDay>;
  readonly metrics: readonly string[];
  readonly from: string;
  readonly to: string;
}): Reconciliation {
  const { from, to } = input;
  const recounted = new Map<string, Pick<AccountDayUsage, 'account' | 'day' | 'metrics'>>();
  for (const row of input.recounted) {
    if (row.day >= from && row.day <= to) recounted.set(accountDayKey(row.account, row.day), row);
  }
  const keys = new Set<string>([...recounted.keys()]);
  for (const key of input.served.keys()) {
    const day = key.slice(key.lastIndexOf('|') + 1);
    if (day >= from && day <= to) keys.add(key);
  }
  const checked = new Set(input.metrics);
  const unchecked = new Set<string>();
  const rows: ReconcileRow[] = [];
  for (const key of [...keys].sort()) {
    const split = key.lastIndexOf('|');
    const account = key.slice(0, split);
    const day = key.slice(split + 1);
    const logs = recounted.get(key)?.metrics ?? {};
    const served = input.served.get(key) ?? { metrics: {}, adjustments: {} };
    for (const [metric, value] of Object.entries(served.metrics)) if (!checked.has(metric) && value !== 0) unchecked.add(metric);
    for (const metric of input.metrics) {
      const row = {
        account,
        day,
        metric,
        logs: logs[metric] ?? 0,
        served: served.metrics[metric] ?? 0,
        adjustments: served.adjustments[metric] ?? 0,
      };
      if (row.logs === 0 && row.served === 0 && row.adjustments === 0) continue;
      rows.push({ ...row, drift: row.served - row.logs });
    }
  }
  return { rows, unchecked: [...unchecked].sort() };
}
