import { UNATTRIBUTED } from './account-id';

/**
 * What happened to every data line of a log: each one is counted exactly once as
 * `counted`, `unattributed` or `malformed`, so `read` always equals their sum.
 */
export interface LineCounts {
  read: number;
  counted: number;
  unattributed: number;
  malformed: number;
}

/** Usage of one account on one UTC day; `metrics` maps metric name to its total. */
export interface AccountDayUsage {
  readonly account: string;
  readonly day: string;
  readonly metrics: Record<string, number>;
}

export interface MalformedSample {
  readonly line: number;
  readonly reason: string;
}

export function emptyLineCounts(): LineCounts {
  return { read: 0, counted: 0, unattributed: 0, malformed: 0 };
}

export function addLineCounts(into: LineCounts, from: LineCounts): LineCounts {
  into.read += from.read;
  into.counted += from.counted;
  into.unattributed += from.unattributed;
  into.malformed += from.malformed;
  return into;
}

/** True when every line read is accounted for. */
export function linesBalance(counts: LineCounts): boolean {
  return counts.read === counts.counted + counts.unattributed + counts.malformed;
}

/**
 * Sums metric values per (account, day). Values are kept in arrays in the order of
 * `metricNames` so the per-line work is a few additions.
 */
export class UsageTally {
  private readonly rows = new Map<string, { account: string; day: string; values: number[] }>();

  constructor(readonly metricNames: readonly string[]) {}

  add(account: string, day: string, values: readonly number[]): void {
    const id = `${account}\u0000${day}`;
    let row = this.rows.get(id);
    if (row === undefined) {
      row = { account, day, values: new Array<number>(this.metricNames.length).fill(0) };
      this.rows.set(id, row);
    }
    for (let i = 0; i < values.length; i++) row.values[i] = (row.values[i] ?? 0) + (values[i] ?? 0);
  }

  /** Adds every row of `other` (same metric names) into this tally. */
  merge(other: UsageTally): void {
    for (const row of other.rows.values()) this.add(row.account, row.day, row.values);
  }

  /** Rows sorted by account then day; the `unattributed` account is included. */
  usage(): AccountDayUsage[] {
    return [...this.rows.values()]
      .sort((a, b) => (a.account === b.account ? compare(a.day, b.day) : compare(a.account, b.account)))
      .map((row) => ({
        account: row.account,
        day: row.day,
        metrics: Object.fromEntries(this.metricNames.map((name, i) => [name, row.values[i] ?? 0])),
      }));
  }

  get size(): number {
    return this.rows.size;
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export { UNATTRIBUTED };
