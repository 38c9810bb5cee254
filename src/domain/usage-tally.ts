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
  /** Rows by day, then by account: no key string is built per line. */
  private readonly days = new Map<string, Map<string, TallyRow>>();
  private readonly rows: TallyRow[] = [];
  /** The day of the previous line: consecutive lines nearly always share it. */
  private lastDay: string | undefined;
  private lastAccounts: Map<string, TallyRow> | undefined;

  constructor(readonly metricNames: readonly string[]) {}

  add(account: string, day: string, values: readonly number[]): void {
    this.addTo(this.row(account, day), values);
  }

  /**
   * The row of (account, day), made when missing: a counter that meets the same
   * account-day on many lines keeps it and adds to it with {@link addTo}.
   */
  row(account: string, day: string): TallyRow {
    let accounts = this.lastAccounts;
    if (day !== this.lastDay || accounts === undefined) {
      accounts = this.days.get(day);
      if (accounts === undefined) {
        accounts = new Map();
        this.days.set(day, accounts);
      }
      this.lastDay = day;
      this.lastAccounts = accounts;
    }
    let row = accounts.get(account);
    if (row === undefined) {
      row = { account, day, values: new Array<number>(this.metricNames.length).fill(0) };
      accounts.set(account, row);
      this.rows.push(row);
    }
    return row;
  }

  /** Adds `values` (in the order of the metric names) to a row of this tally. */
  addTo(row: TallyRow, values: readonly number[]): void {
    const sums = row.values;
    for (let i = 0; i < values.length; i++) sums[i] = (sums[i] ?? 0) + (values[i] ?? 0);
  }

  /** Adds every row of `other` (same metric names) into this tally. */
  merge(other: UsageTally): void {
    for (const row of other.rows) this.add(row.account, row.day, row.values);
  }

  /** Rows sorted by account then day; the `unattributed` account is included. */
  usage(): AccountDayUsage[] {
    return [...this.rows]
      .sort((a, b) => (a.account === b.account ? compare(a.day, b.day) : compare(a.account, b.account)))
      .map((row) => ({
        account: row.account,
        day: row.day,
        metrics: Object.fromEntries(this.metricNames.map((name, i) => [name, row.values[i] ?? 0])),
      }));
  }

  get size(): number {
    return this.rows.length;
  }
}

/** One (account, day) of a tally and its sums. */
export interface TallyRow {
  readonly account: string;
  readonly day: string;
  readonly values: number[];
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

