import type { LineResolver } from './account-resolver';
import { dayOfNumber, epochDayNumber, epochMillisBytes, isValidTimeBytes, parseByteCountBytes } from './cloudfront-log';
import { isValidDay } from './days';
import type { LogLine } from './log-line';
import type { ColumnRun } from './log-records';

/** What the counter tells {@link ColumnCounting} of its layout and how it counts (see LogCounter.columnCounting). */
export interface CountingLayout {
  readonly width: number;
  /** The columns of the day (`date`, or a timestamp), time, sc-bytes and the two host fields; -1 when absent. */
  readonly dateAt: number;
  /** Units per second of a timestamp day field; 0 for `date`. */
  readonly dayUnits: number;
  readonly timeAt: number;
  readonly bytesAt: number;
  readonly hostAt: readonly [number, number];
  /** The counter's resolver, and a line of `width` columns over `scratch` to run it on. */
  readonly resolve: LineResolver;
  readonly line: LogLine;
  readonly scratch: Uint8Array;
  readonly maxLineBytes: number;
  /** Counts `rows` good lines of one account-day (`undefined`: unattributed) with their sc-bytes, as read in order. */
  readonly addCounted: (account: string | undefined, day: string, rows: number, bytes: number) => void;
}

const UNKNOWN = -2;
const INVALID = -1;
const DASH = 45;
/** Days and accounts a run may have before it is counted line by line instead. */
const MAX_DAYS = 64;
const MAX_ACCOUNTS = 8192;
const MAX_HOST_PAIRS = 1 << 22;

/**
 * Counts runs of Parquet rows column by column, without writing their lines: when the
 * only fields read are the day, time, sc-bytes and the host fields, and the day, time
 * and host fields of the run are dictionary-encoded, each dictionary entry's day, time
 * check and account (the counter's own checks and resolver, on the entry's text) is
 * found once, and the rows are summed per account-day over the entry indices. A run
 * in which any row would be malformed is left to the counter's lines (its reasons and
 * line numbers are theirs): {@link count} answers false and counts nothing.
 */
export class ColumnCounting {
  private readonly accounts: (string | undefined)[] = [];
  private readonly accountIds = new Map<string | undefined, number>();
  private readonly days: string[] = [];
  private readonly dayIds = new Map<string, number>();
  /** Per dictionary (by its text bytes): per entry + 1 (0: null), a day id or time verdict. */
  private readonly dayOfEntry = new WeakMap<Uint8Array, Int32Array>();
  private readonly timeOfEntry = new WeakMap<Uint8Array, Int8Array>();
  private hostPairs: { x: Uint8Array | undefined; c: Uint8Array | undefined; accounts: Int32Array } | undefined;
  private requests = new Float64Array(0);
  private sent = new Float64Array(0);

  constructor(private readonly layout: CountingLayout) {}

  /** Counts the `count` rows of `runs` (one per field, in field order); false when they must be counted as lines. */
  count(runs: readonly ColumnRun[], count: number): boolean {
    const { dateAt, timeAt, bytesAt, hostAt, width, maxLineBytes } = this.layout;
    if (runs.length !== width) return false;
    const date = runs[dateAt]!;
    const time = timeAt === -1 ? undefined : runs[timeAt]!;
    const bytes = bytesAt === -1 ? undefined : runs[bytesAt]!;
    const x = hostAt[0] === -1 ? undefined : runs[hostAt[0]]!;
    const c = hostAt[1] === -1 ? undefined : runs[hostAt[1]]!;
    if (date.entries === undefined || (time !== undefined && time.entries === undefined)) return false;
    if ((x !== undefined && x.entries === undefined) || (c !== undefined && c.entries === undefined)) return false;
    let longest = width;
    for (const run of runs) longest += Math.max(run.longest, 1);
    if (longest > maxLineBytes) return false;

    const dayOf = this.entryDays(date);
    const timeOf = time === undefined ? undefined : this.entryTimes(time);
    const pairs = this.pairs(x, c);
    if (dayOf === undefined || pairs === undefined) return false;
    const cWidth = c === undefined ? 1 : c.dictionarySize + 1;

    let requests = this.requests;
    let sent = this.sent;
    requests.fill(0, 0, this.accounts.length * MAX_DAYS);
    sent.fill(0, 0, this.accounts.length * MAX_DAYS);
    const dateEntries = date.entries;
    const dateAt0 = date.at;
    for (let row = 0; row < count; row++) {
      const day = dayOf(dateEntries[dateAt0 + row]! + 1);
      if (day < 0) return false;
      if (timeOf !== undefined && !timeOf(time!.entries![time!.at + row]! + 1)) return false;
      let value = 0;
      if (bytes !== undefined) {
        const start = bytes.starts[bytes.at + row]!;
        const end = bytes.ends[bytes.at + row]!;
        // An empty value is written `-`, which is 0 bytes.
        value = start === end ? 0 : parseByteCountBytes(bytes.bytes, start, end);
        if (value < 0) return false;
      }
      const pair = (x === undefined ? 0 : (x.entries![x.at + row]! + 1) * cWidth) + (c === undefined ? 0 : c.entries![c.at + row]! + 1);
      let account = pairs.accounts[pair]!;
      if (account === UNKNOWN) {
        account = this.accountOfPair(x, c, pair, cWidth);
        if (account < 0) return false;
        pairs.accounts[pair] = account;
        // A new account may have grown the sums (the sums so far copied).
        requests = this.requests;
        sent = this.sent;
      }
      const cell = account * MAX_DAYS + day;
      if (cell >= requests.length) return false;
      requests[cell]! += 1;
      sent[cell]! += value;
    }
    for (let cell = 0, cells = this.accounts.length * MAX_DAYS; cell < cells; cell++) {
      if (requests[cell] === 0) continue;
      this.layout.addCounted(this.accounts[Math.floor(cell / MAX_DAYS)], this.days[cell % MAX_DAYS]!, requests[cell]!, sent[cell]!);
    }
    return true;
  }

  /** The day id of each entry of the run's dictionary (+1; 0 is null), found when first asked. */
  private entryDays(run: ColumnRun): ((entry: number) => number) | undefined {
    const dictionary = run.dictionary!;
    let ids = this.dayOfEntry.get(dictionary.bytes);
    if (ids === undefined) {
      ids = new Int32Array(dictionary.starts.length + 1).fill(UNKNOWN);
      this.dayOfEntry.set(dictionary.bytes, ids);
    }
    const known = ids;
    return (entry) => {
      const id = known[entry]!;
      if (id !== UNKNOWN) return id;
      const day = this.dayOfText(...this.text(dictionary, entry));
      return (known[entry] = day === undefined ? INVALID : this.dayId(day));
    };
  }

  private entryTimes(run: ColumnRun): (entry: number) => boolean {
    const dictionary = run.dictionary!;
    let verdicts = this.timeOfEntry.get(dictionary.bytes);
    if (verdicts === undefined) {
      verdicts = new Int8Array(dictionary.starts.length + 1).fill(UNKNOWN);
      this.timeOfEntry.set(dictionary.bytes, verdicts);
    }
    const known = verdicts;
    return (entry) => {
      const verdict = known[entry]!;
      if (verdict !== UNKNOWN) return verdict === 1;
      const [bytes, start, end] = this.text(dictionary, entry);
      const ok = isValidTimeBytes(bytes, start, end);
      known[entry] = ok ? 1 : 0;
      return ok;
    };
  }

  /** The text the counter's line has for entry `entry` (+1; 0: null) of a dictionary: `-` for none. */
  private text(dictionary: NonNullable<ColumnRun['dictionary']>, entry: number): [Uint8Array, number, number] {
    const start = entry === 0 ? 0 : dictionary.starts[entry - 1]!;
    const end = entry === 0 ? 0 : dictionary.ends[entry - 1]!;
    return start === end ? [DASH_TEXT, 0, 1] : [dictionary.bytes, start, end];
  }

  /** The day of a day field's text, as the counter's checks find it; undefined when it is none. */
  private dayOfText(bytes: Uint8Array, start: number, end: number): string | undefined {
    const units = this.layout.dayUnits;
    if (units !== 0) {
      const millis = epochMillisBytes(bytes, start, end, units);
      return millis < 0 ? undefined : dayOfNumber(epochDayNumber(millis));
    }
    const day = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8', start, end);
    return isValidDay(day) ? day : undefined;
  }

  private dayId(day: string): number {
    let id = this.dayIds.get(day);
    if (id === undefined) {
      id = this.days.length;
      if (id >= MAX_DAYS) return INVALID;
      this.days.push(day);
      this.dayIds.set(day, id);
    }
    return id;
  }

  /** The account ids of the host pairs of these runs' dictionaries (made anew when a dictionary changes). */
  private pairs(x: ColumnRun | undefined, c: ColumnRun | undefined): { accounts: Int32Array } | undefined {
    const xBytes = x?.dictionary!.bytes;
    const cBytes = c?.dictionary!.bytes;
    const current = this.hostPairs;
    if (current !== undefined && current.x === xBytes && current.c === cBytes) return current;
    const size = (x === undefined ? 1 : x.dictionarySize + 1) * (c === undefined ? 1 : c.dictionarySize + 1);
    if (size > MAX_HOST_PAIRS) return undefined;
    this.hostPairs = { x: xBytes, c: cBytes, accounts: new Int32Array(size).fill(UNKNOWN) };
    return this.hostPairs;
  }

  /** The account of a pair of host entries: the counter's resolver on a line of their texts. */
  private accountOfPair(x: ColumnRun | undefined, c: ColumnRun | undefined, pair: number, cWidth: number): number {
    const { line, scratch, hostAt, resolve } = this.layout;
    let used = 0;
    const place = (run: ColumnRun | undefined, column: number, entry: number) => {
      if (run === undefined) return;
      const [bytes, start, end] = this.text(run.dictionary!, entry);
      if (used + end - start > scratch.length) throw new RangeError('host text longer than the scratch line');
      line.starts[column] = used;
      scratch.set(bytes.subarray(start, end), used);
      used += end - start;
      line.ends[column] = used;
    };
    place(x, hostAt[0], Math.floor(pair / cWidth));
    place(c, hostAt[1], pair % cWidth);
    line.next();
    const account = resolve(line);
    let id = this.accountIds.get(account);
    if (id === undefined) {
      id = this.accounts.length;
      if (id >= MAX_ACCOUNTS) return INVALID;
      this.accounts.push(account);
      this.accountIds.set(account, id);
      if ((id + 1) * MAX_DAYS > this.requests.length) {
        const size = Math.min(MAX_ACCOUNTS, Math.max(64, 2 * (id + 1))) * MAX_DAYS;
        const requests = new Float64Array(size);
        const sent = new Float64Array(size);
        requests.set(this.requests);
        sent.set(this.sent);
        this.requests = requests;
        this.sent = sent;
      }
    }
    return id;
  }
}

const DASH_TEXT = Uint8Array.of(DASH);
