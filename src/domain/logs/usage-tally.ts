import { HOURS_PER_DAY, type HourSums } from '../hours';

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

/**
 * Usage of one account on one UTC day; `metrics` maps metric name to its total, and
 * `hours` holds the same metrics by UTC hour (src/domain/hours.ts). The hours sum to
 * `metrics` (`hoursCoverDay`) when every line counted had a time; lines of a log with
 * a date and no time (or a counter that adds without an hour) are in `metrics` only.
 */
export interface AccountDayUsage {
  readonly account: string;
  readonly day: string;
  readonly metrics: Record<string, number>;
  readonly hours: HourSums;
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
 * Sums metric values per (account, day), and per UTC hour of that day. Values are kept
 * in arrays in the order of `metricNames` so the per-line work is a few additions: a
 * row's day totals in `values`, its hours in `hours` (hour `h`, metric `i` at
 * `h * metricNames.length + i`).
 */
export class UsageTally {
  /** Rows by day, then by account: no key string is built per line. */
  private readonly days = new Map<string, Map<string, TallyRow>>();
  private readonly rows: TallyRow[] = [];
  /** The day of the previous line: consecutive lines nearly always share it. */
  private lastDay: string | undefined;
  private lastAccounts: Map<string, TallyRow> | undefined;

  constructor(readonly metricNames: readonly string[]) {}

  /** Adds `values` to (account, day) and its UTC `hour` (0..23). */
  add(account: string, day: string, hour: number, values: readonly number[]): void {
    this.addAt(this.row(account, day), hour, values);
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
      const width = this.metricNames.length;
      row = { account, day, values: new Array<number>(width).fill(0), hours: new Array<number>(HOURS_PER_DAY * width).fill(0) };
      accounts.set(account, row);
      this.rows.push(row);
    }
    return row;
  }

  /**
   * Adds `values` (in the order of the metric names) to a row of this tally and to its
   * UTC `hour` (an integer 0..23): what every counter that knows a line's time calls.
   */
  addAt(row: TallyRow, hour: number, values: readonly number[]): void {
    if (hour >>> 0 !== hour || hour >= HOURS_PER_DAY) throw new RangeError(`hour ${hour} is not 0..23`);
    const sums = row.values;
    const hours = row.hours;
    const at = hour * sums.length;
    for (let i = 0; i < values.length; i++) {
      const value = values[i] ?? 0;
      sums[i] = (sums[i] ?? 0) + value;
      hours[at + i] = (hours[at + i] ?? 0) + value;
    }
  }

  /**
   * Adds 25 slots of sums to a row, each `metricNames.length` values in name order, from
   * `slots[at]`: slot 0 the lines of no known time (the day's totals alone), slot h + 1
   * UTC hour h. Answers the first metric's total (requests). What ColumnCounting's
   * WebAssembly sums hand over, an account-day at a time: one call per slot was about a
   * tenth of a fresh process's count of a 900,000-row Parquet file (issue 34).
   */
  addSlots(row: TallyRow, slots: Float64Array, at: number): number {
    const width = this.metricNames.length;
    const sums = row.values;
    const hours = row.hours;
    let first = 0;
    for (let i = 0; i < width; i++) {
      let total = 0;
      for (let slot = 0; slot <= HOURS_PER_DAY; slot++) total += slots[at + slot * width + i]!;
      sums[i]! += total;
      if (i === 0) first = total;
    }
    for (let k = 0; k < HOURS_PER_DAY * width; k++) hours[k]! += slots[at + width + k]!;
    return first;
  }

  /**
   * Adds `values` to a row's day totals only, in no hour: for lines whose time is not
   * known (a log with a `date` and no `time` field, a counter that does not read times
   * yet). That day's hours then no longer cover it, and readers say its hours are unknown.
   */
  addTo(row: TallyRow, values: readonly number[]): void {
    const sums = row.values;
    for (let i = 0; i < values.length; i++) sums[i] = (sums[i] ?? 0) + (values[i] ?? 0);
  }

  /** Adds a row another count made (its metrics by name, and its hours) into this tally. */
  addUsage(usage: AccountDayUsage): void {
    const row = this.row(usage.account, usage.day);
    const names = this.metricNames;
    for (let i = 0; i < names.length; i++) row.values[i]! += usage.metrics[names[i]!] ?? 0;
    for (const [hour, metrics] of Object.entries(usage.hours)) {
      const at = Number(hour) * names.length;
      for (let i = 0; i < names.length; i++) row.hours[at + i]! += metrics[names[i]!] ?? 0;
    }
  }

  /** Adds every row of `other` (same metric names) into this tally, hours included. */
  merge(other: UsageTally): void {
    for (const from of other.rows) {
      const row = this.row(from.account, from.day);
      for (let i = 0; i < from.values.length; i++) row.values[i]! += from.values[i]!;
      for (let i = 0; i < from.hours.length; i++) row.hours[i]! += from.hours[i]!;
    }
  }

  /** Rows sorted by account then day; the `unattributed` account is included. */
  usage(): AccountDayUsage[] {
    return [...this.rows]
      .sort((a, b) => (a.account === b.account ? compare(a.day, b.day) : compare(a.account, b.account)))
      .map((row) => ({
        account: row.account,
        day: row.day,
        metrics: Object.fromEntries(this.metricNames.map((name, i) => [name, row.values[i] ?? 0])),
        hours: this.hourSums(row),
      }));
  }

  /**
   * Rows sorted as {@link usage} sorts them, without their hours: for readers of whole UTC
   * days (`tally count` by default), which building every row's hours took a fresh
   * process several milliseconds for (issue 34).
   */
  dayUsage(): { account: string; day: string; metrics: Record<string, number> }[] {
    return [...this.rows]
      .sort((a, b) => (a.account === b.account ? compare(a.day, b.day) : compare(a.account, b.account)))
      .map((row) => ({ account: row.account, day: row.day, metrics: Object.fromEntries(this.metricNames.map((name, i) => [name, row.values[i] ?? 0])) }));
  }

  /** A row's hours as `HourSums`: an hour, and a metric in it, only when not zero. */
  private hourSums(row: TallyRow): HourSums {
    const names = this.metricNames;
    const hours: Record<number, Record<string, number>> = {};
    for (let hour = 0; hour < HOURS_PER_DAY; hour++) {
      for (let i = 0; i < names.length; i++) {
        const amount = row.hours[hour * names.length + i]!;
        if (amount !== 0) (hours[hour] ??= {})[names[i]!] = amount;
      }
    }
    return hours;
  }

  /**
   * The first row and metric whose day total is past `Number.MAX_SAFE_INTEGER` (2^53 - 1),
   * or undefined. Past it a sum of whole numbers is rounded (2^53 + 1 is 2^53), so the
   * total is no longer the count; an hour's sum is part of its day's and needs no look.
   */
  firstInexactTotal(): { account: string; day: string; metric: string; amount: number } | undefined {
    for (const row of this.rows) {
      for (let i = 0; i < row.values.length; i++) {
        const amount = row.values[i]!;
        if (!(amount <= Number.MAX_SAFE_INTEGER)) return { account: row.account, day: row.day, metric: this.metricNames[i]!, amount };
      }
    }
    return undefined;
  }

  get size(): number {
    return this.rows.length;
  }
}

/** One (account, day) of a tally and its sums: the day's, and by UTC hour (see {@link UsageTally}). */
export interface TallyRow {
  readonly account: string;
  readonly day: string;
  readonly values: number[];
  readonly hours: number[];
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

