import { isCloudFrontDefaultDomainBytes, type LineResolver } from '../account-resolver';
import { dayOfNumber, epochDayNumber, epochMillisBytes, isValidTimeBytes, parseByteCountBytes } from '../cloudfront-log';
import { isSupportedDay, isValidDay } from '../../days';
import { ByteKeyCache, NOT_CACHED, type LogLine } from '../log-line';
import { spansOf, type ColumnRun } from './column-run';
import { ColumnSumKernel, SUM_CHUNK_ROWS, SumStop } from './column-sum';
import type { RuleEvaluator } from '../metric-rules';

/** What the counter tells {@link ColumnCounting} of its layout and how it counts (see LogCounter.columnCounting). */
export interface CountingLayout {
  readonly width: number;
  /** The columns of the day (`date`, or a timestamp), time and sc-bytes; -1 when absent. */
  readonly dateAt: number;
  /** Units per second of a timestamp day field; 0 for `date`. */
  readonly dayUnits: number;
  readonly timeAt: number;
  readonly bytesAt: number;
  /** The host resolvers' x-host-header and cs(Host) columns (-1: absent); undefined for the other resolvers. */
  readonly hostAt: readonly [number, number] | undefined;
  /** The host resolvers' key kind: a missed host is sampled as its label (`label`) or whole. */
  readonly hostKey: 'label' | 'host' | undefined;
  /** The columns the other resolvers read (`path`: cs-uri-stem; `distribution`: DistributionId; `key`: none). */
  readonly resolverColumns: readonly number[];
  /** The columns the metric rules read; the rules' evaluator (undefined: no rules). */
  readonly ruleColumns: readonly number[];
  readonly evaluate: RuleEvaluator | undefined;
  /** How many metrics a line feeds (requests, bytes, then one per rule). */
  readonly metrics: number;
  /** The counter's resolver, and a line of `width` columns over `scratch` to run it and the rules on. */
  readonly resolve: LineResolver;
  readonly line: LogLine;
  readonly scratch: Uint8Array;
  readonly maxLineBytes: number;
  /** `rows` more rows were read (and counted with {@link add}): their line numbers pass. */
  readonly advance: (rows: number) => void;
  /** Adds `values` (requests first) of good rows of one account-day (`undefined`: unattributed) and UTC hour (-1: not known). */
  readonly add: (account: string | undefined, day: string, hour: number, values: readonly number[]) => void;
  /** Adds an account-day's 25 slots of sums from `slots[at]` (slot 0: hour not known, h + 1: hour h; requests, bytes), as UsageTally.addSlots. */
  readonly addSlots: (account: string | undefined, day: string, slots: Float64Array, at: number) => void;
  /** A host no account was found for (sampled by the counter, as its lines sample them). */
  readonly missed: (host: string) => void;
}

/** Hands rows `[from, from + count)` of the runs to the counter as lines, at once. */
export type RowsAsLines = (runs: readonly ColumnRun[], from: number, count: number) => void;

const UNKNOWN = -2;
/** What an entry cache holds for an entry not yet looked at (no day id, time verdict or byte count is -2). */
const UNKNOWN_ENTRY = -2;
const INVALID = -1;
const DASH = 45;
const HASH = 35;
/** Days and accounts one log may have before further rows of new ones are counted as lines. */
const MAX_DAYS = 64;
const MAX_ACCOUNTS = 8192;
const MAX_HOST_PAIRS = 1 << 22;
/** Per account-day, its sums by UTC hour 0..23 and of rows whose hour is not known (slot 0: hour + 1). */
const HOUR_SLOTS = 25;
const MS_PER_HOUR = 3_600_000;
/** Distinct hosts (or resolver values) remembered before the memory is cleared. */
const KEY_CACHE_LIMIT = 4096;
/** Epoch milliseconds a number may hold to be read as a day here (years 1970–9999, less a second of margin). */
const MAX_EPOCH_MS = 253_402_300_800_000 - 1000;
const MS_PER_DAY = 86_400_000;

/**
 * Counts runs of Parquet rows column by column, without writing their lines: each row's
 * day, time and sc-bytes are checked and read where the column's text (or number) is,
 * its account found once per distinct host (per dictionary entry pair when both host
 * columns are dictionary-encoded, else per host's bytes) or per distinct value of the
 * other resolvers' column, the metric rules run on a line of only the columns they read,
 * and the rows are summed per account-day. The checks are the counter's own
 * (cloudfront-log.ts); a row they reject, or one whose line would read differently (a
 * line too long, one starting with `#`), is handed to the counter as its line in its
 * place ({@link RowsAsLines}), so that its reason and line number are exactly the
 * text's: the line-shaped fallback is per row, and only for such rows.
 */
export class ColumnCounting {
  private readonly accounts: (string | undefined)[] = [];
  private readonly accountIds = new Map<string | undefined, number>();
  private readonly days: string[] = [];
  private readonly dayIds = new Map<string, number>();
  private readonly dayNumberIds = new Map<number, number>();
  private readonly dayValueIds = new Map<number, number>();
  /** The bytes of the last good `date` text and its day id. */
  private readonly lastDate = new Uint8Array(10);
  private lastDateId = INVALID;
  private lastDayNumber = Number.NaN;
  private lastDayNumberId = INVALID;
  private hostPairs: { x: Uint8Array | undefined; c: Uint8Array | undefined; accounts: Int32Array } | undefined;
  private readonly keyAccounts = new ByteKeyCache<number>(KEY_CACHE_LIMIT);
  private constantAccount = UNKNOWN;
  /**
   * Per slot (an account-day's number here × {@link HOUR_SLOTS} + hour + 1), per metric:
   * the sums of the current run. An account-day (its cell: account × {@link MAX_DAYS} +
   * day) is numbered when first met ({@link dayCells}, {@link cellNumbers}), so that
   * memory is per account-day met, not per account × day possible.
   */
  private sums = new Float64Array(0);
  /** Per cell + 1 (0: none yet): its number here + 1. */
  private cellNumbers: Int32Array = new Int32Array(0);
  private readonly dayCells: number[] = [];
  private touched = new Int32Array(64);
  private touchedCount = 0;
  private readonly values: number[];
  private readonly ruleValues: number[];
  private readonly dash = Uint8Array.of(DASH);

  constructor(
    private readonly layout: CountingLayout,
    private readonly asLines: RowsAsLines,
  ) {
    this.values = new Array<number>(layout.metrics).fill(0);
    this.ruleValues = new Array<number>(layout.metrics).fill(0);
  }

  /** Per row of the current run: its day id, or {@link INVALID} when the row is handed over as its line. */
  private rowDays = new Int32Array(0);
  /** Per row of the current run: its sc-bytes. */
  private rowBytes = new Float64Array(0);
  /** Per row of the current run: its host pair (see {@link pairs}). */
  private rowPairs = new Int32Array(0);
  /** Per row of the current run: its UTC hour (-1: not known: a `date` and no `time` column). */
  private rowHours = new Int32Array(0);

  /**
   * Counts the `count` rows of `runs` (one per field, in field order), rows that need
   * their line as lines; false (nothing counted) when the runs are not the layout's.
   *
   * Column at a time, as a vectorized engine does: each row's day, then the time check,
   * then its sc-bytes, each a short loop over the run; then the accounts and sums, row by
   * row in order (accounts found and lines handed over in the order of the rows, as the
   * text is read). Short loops of one kind each are what a fresh process's V8 compiles
   * soonest and cheapest: one loop doing it all was compiled three times, 30–55 ms each
   * (issue 34). Day and account ids are found in row order, so the limits on them
   * ({@link MAX_DAYS}, {@link MAX_ACCOUNTS}) fall where they fell row by row.
   */
  count(runs: readonly ColumnRun[], count: number): boolean {
    const layout = this.layout;
    const { dateAt, timeAt, bytesAt, hostAt, width, maxLineBytes } = layout;
    if (runs.length !== width) return false;
    const date = runs[dateAt]!;
    const time = timeAt === -1 ? undefined : runs[timeAt]!;
    const bytes = bytesAt === -1 ? undefined : runs[bytesAt]!;
    const x = hostAt === undefined || hostAt[0] === -1 ? undefined : runs[hostAt[0]]!;
    const c = hostAt === undefined || hostAt[1] === -1 ? undefined : runs[hostAt[1]]!;
    // Hosts as numbers are no hosts a resolver reads: such a run is counted as lines.
    if (x?.numbers !== undefined || c?.numbers !== undefined) return false;
    let longest = width;
    for (const run of runs) longest += Math.max(run.numbers === undefined ? run.longest : 32, 1);
    const checkLength = longest > maxLineBytes;
    const pairs = hostAt !== undefined && (x === undefined || x.entries !== undefined) && (c === undefined || c.entries !== undefined) ? this.pairs(x, c) : undefined;
    // Where rows' text is read as text (not through a dictionary entry's cache), it must be placed.
    if (checkLength) for (const run of runs) spansOf(run);
    if (hostAt !== undefined && pairs === undefined) for (const run of [x, c]) if (run !== undefined) spansOf(run);
    for (const column of layout.resolverColumns) spansOf(runs[column]!);
    if (layout.evaluate !== undefined) for (const column of layout.ruleColumns) spansOf(runs[column]!);
    if (pairs !== undefined && !checkLength && this.kernelReads(runs[0]!, date, time, bytes)) {
      this.sumInKernel(runs, date, time, bytes, x, c, pairs.accounts, count);
      return true;
    }
    if (this.rowDays.length < count) {
      const size = Math.max(count, 1024);
      this.rowDays = new Int32Array(size);
      this.rowBytes = new Float64Array(size);
      this.rowPairs = new Int32Array(size);
      this.rowHours = new Int32Array(size);
    }
    const days = this.rowDays;
    const sent = this.rowBytes;
    // A row whose line would be too long, or would read as a directive, is its line.
    days.fill(0, 0, count);
    if (checkLength) this.markLongLines(runs, count, maxLineBytes, days);
    markDirectives(runs[0]!, count, days);
    if (date.entries !== undefined) this.entryDays(date, count, days);
    else if (date.numbers !== undefined) this.numberDays(date, count, days);
    else this.textDays(date, count, days);
    // Each row's hour: a timestamp's own, else its time's (found with its check), else none.
    if (time !== undefined) {
      if (time.entries !== undefined) this.entryTimes(time, count, days);
      else this.textTimes(time, count, days);
    } else this.rowHours.fill(-1, 0, count);
    if (layout.dayUnits !== 0) this.instantHours(date, count, days);
    if (bytes === undefined) sent.fill(0, 0, count);
    else if (bytes.entries !== undefined) this.entryBytes(bytes, count, days, sent);
    else if (bytes.numbers !== undefined) numberBytes(bytes, count, days, sent);
    else textBytes(bytes, count, days, sent);
    if (pairs !== undefined && layout.evaluate === undefined) {
      const cWidth = c === undefined ? 1 : c.dictionarySize + 1;
      pairsOf(x, c, cWidth, count, this.rowPairs);
      // Nearly always every row is good and its pair's account known: summed in a loop of
      // nothing else. Else row by row, lines and new pairs in their order.
      if (knownCells(this.rowDays, this.rowPairs, pairs.accounts, count)) {
        this.sumCells(count);
        layout.advance(count);
      } else this.sumPairs(runs, x, c, pairs.accounts, cWidth, count);
    } else this.sumRows(runs, count, pairs);
    return true;
  }

  /**
   * Hands the sums counted so far to the counter, per account-day and hour, and clears
   * them: the counter calls it when its count finishes. Once per count, not per run: with
   * hours an account-day has up to 25 sums, and adding them after every page of a 900,000
   * row file took about a fifth of the count's CPU (issue 34).
   */
  flush(): void {
    this.addTouched();
    const kernel = this.kernel;
    if (kernel !== undefined) {
      const { layout, accounts, days } = this;
      kernel.forEachCell((cell, slots, at) => {
        const day = cell % MAX_DAYS;
        layout.addSlots(accounts[(cell - day) / MAX_DAYS], days[day]!, slots, at);
      });
      kernel.release();
      this.kernel = undefined;
    }
  }

  /** The WebAssembly part of this count (column-sum.ts), once a run took it. */
  private kernel: ColumnSumKernel | undefined;

  /**
   * Whether column-sum.wat reads these runs (host pairs, no rules, lines never too long):
   * days of `date` entries or typed dates, times of entries (or none), sc-bytes of byte
   * counts, integers or entries (or none), and no row's line a directive.
   */
  private kernelReads(first: ColumnRun, date: ColumnRun, time: ColumnRun | undefined, bytes: ColumnRun | undefined): boolean {
    const layout = this.layout;
    if (layout.evaluate !== undefined || layout.metrics !== 2 || layout.dayUnits !== 0) return false;
    if (date.entries === undefined && date.numbers === undefined) return false;
    if (time !== undefined && time.entries === undefined) return false;
    if (bytes !== undefined && bytes.byteCounts === undefined && bytes.entries === undefined && !(bytes.numbers !== undefined && bytes.numberKind === 'integer')) return false;
    return !mayHoldDirectives(first);
  }

  /**
   * Counts the run in column-sum.wat, a chunk of rows at a time: each stop answered in
   * row order (an entry's day, time or byte count, a pair's account found as the loops in
   * JavaScript find them; a row handed over as its line), then on from that row.
   */
  private sumInKernel(runs: readonly ColumnRun[], date: ColumnRun, time: ColumnRun | undefined, bytes: ColumnRun | undefined, x: ColumnRun | undefined, c: ColumnRun | undefined, accounts: Int32Array, count: number): void {
    const kernel = (this.kernel ??= ColumnSumKernel.acquire());
    const layout = this.layout;
    const cWidth = c === undefined ? 1 : c.dictionarySize + 1;
    const dayCache = date.entries === undefined ? undefined : this.entryCache(this.entryDayIds, date, Int32Array);
    const timeCache = time === undefined ? undefined : this.entryCache(this.entryTimeVerdicts, time, Int32Array);
    const byteCache = bytes?.entries === undefined ? undefined : this.entryCache(this.entryByteCounts, bytes, Float64Array);
    kernel.configure({
      day: dayCache === undefined ? 1 : 0,
      time: timeCache === undefined ? 0 : 1,
      bytes: bytes === undefined ? 0 : bytes.byteCounts !== undefined ? 1 : byteCache === undefined ? 2 : 3,
      hosts: (x === undefined ? 0 : 1) | (c === undefined ? 0 : 2),
      cWidth,
    });
    if (dayCache !== undefined) kernel.table('day', dayCache);
    if (timeCache !== undefined) kernel.timeTable(time!.dictionary!, timeCache);
    if (byteCache !== undefined) kernel.bytesTable(byteCache);
    // A new row group's pairs: those whose host is known already are filled in at once.
    if (kernel.table('pair', accounts)) kernel.prefillPairs(this.keyAccounts.generation, x?.dictionary, c?.dictionary, cWidth, this.accountIds.get(undefined) ?? UNKNOWN);
    for (let chunk = 0; chunk < count; chunk += SUM_CHUNK_ROWS) {
      const size = Math.min(SUM_CHUNK_ROWS, count - chunk);
      kernel.input('date', date.entries ?? date.numbers!, date.at + chunk, size);
      if (time !== undefined) kernel.input('time', time.entries!, time.at + chunk, size);
      if (bytes !== undefined) kernel.input('bytes', bytes.byteCounts ?? bytes.entries ?? bytes.numbers!, bytes.at + chunk, size);
      if (x !== undefined) kernel.input('x', x.entries!, x.at + chunk, size);
      if (c !== undefined) kernel.input('c', c.entries!, c.at + chunk, size);
      let pending = 0;
      let lastStop = -1;
      let lastReason = 0;
      for (let row = 0; row < size; ) {
        const stop = kernel.sum(row, size);
        pending += stop - row;
        row = stop;
        if (stop === size) break;
        const at = chunk + stop;
        // Each stop is answered before the next call: a row stopped at twice for one reason
        // would be stopped at for ever (the kernel and this loop disagree on a table).
        if (stop === lastStop && kernel.reason === lastReason) throw new Error(`column-sum.wat stopped twice at row ${at} for reason ${lastReason}`);
        lastStop = stop;
        lastReason = kernel.reason;
        switch (kernel.reason) {
          case SumStop.Day:
            if (dayCache !== undefined) {
              const entry = date.entries![date.at + at]! + 1;
              let day = dayCache[entry]!;
              if (day === UNKNOWN_ENTRY) day = this.dayOfEntry(dayCache, date, entry);
              kernel.setEntry('day', entry, day);
            } else {
              const value = date.numbers![date.at + at]!;
              // A row of no date is its line (NaN stops the loop every time).
              if (Number.isNaN(value)) {
                row = this.rowAsLine(runs, at, pending, row);
                pending = 0;
              } else kernel.setDayValue(value, this.dayOfNumberValue(date, value));
            }
            break;
          case SumStop.Bytes: {
            const entry = bytes!.entries![bytes!.at + at]! + 1;
            let value = byteCache![entry]!;
            if (value === UNKNOWN_ENTRY) value = byteCountOfEntry(byteCache!, bytes!, entry);
            kernel.setByteCount(entry, value);
            break;
          }
          case SumStop.Pair: {
            const pair = pairOfRow(x, c, cWidth, at);
            let account = accounts[pair]!;
            if (account === UNKNOWN) account = this.pairAccount(accounts, x, c, pair, cWidth);
            kernel.setEntry('pair', pair, account);
            this.rememberViewer(kernel, x, c, pair, cWidth, account);
            break;
          }
          case SumStop.Line:
            row = this.rowAsLine(runs, at, pending, row);
            pending = 0;
            break;
          case SumStop.Room:
            kernel.grow();
            break;
          default:
            throw new Error(`column-sum.wat stopped for reason ${kernel.reason}`);
        }
      }
      if (pending > 0) layout.advance(pending);
    }
  }

  /** Hands row `at` of the run over as its line, after the `pending` rows counted before it; answers the chunk's next row. */
  private rowAsLine(runs: readonly ColumnRun[], at: number, pending: number, row: number): number {
    if (pending > 0) this.layout.advance(pending);
    this.asLines(runs, at, 1);
    return row + 1;
  }

  /** Marks the rows whose line would be longer than `maxLineBytes`. */
  private markLongLines(runs: readonly ColumnRun[], count: number, maxLineBytes: number, days: Int32Array): void {
    for (let row = 0; row < count; row++) if (this.lineBytes(runs, row) > maxLineBytes) days[row] = INVALID;
  }

  /** Each unmarked row's day id from its `date` (or timestamp) dictionary entry; found once per entry. */
  private entryDays(date: ColumnRun, count: number, days: Int32Array): void {
    const cache = this.entryCache(this.entryDayIds, date, Int32Array);
    const entries = date.entries!;
    const at = date.at;
    for (let row = 0; row < count; row++) {
      if (days[row]! < 0) continue;
      const entry = entries[at + row]! + 1;
      let day = cache[entry]!;
      if (day === UNKNOWN_ENTRY) day = this.dayOfEntry(cache, date, entry);
      days[row] = day;
    }
  }

  /** Each unmarked row's day id from its day field's number (a typed column). */
  private numberDays(date: ColumnRun, count: number, days: Int32Array): void {
    const numbers = date.numbers!;
    const at = date.at;
    // Rows of one day come together: the last value's id is asked first.
    let lastValue = Number.NaN;
    let lastDay = INVALID;
    for (let row = 0; row < count; row++) {
      if (days[row]! < 0) continue;
      const value = numbers[at + row]!;
      if (value !== lastValue) {
        lastDay = this.dayOfNumberValue(date, value);
        lastValue = value;
      }
      days[row] = lastDay;
    }
  }

  /** Each unmarked row's day id from its day field's text. */
  private textDays(date: ColumnRun, count: number, days: Int32Array): void {
    for (let row = 0; row < count; row++) if (days[row]! >= 0) days[row] = this.dayOf(date, row);
  }

  /** Marks the rows whose `time` dictionary entry is no time (a verdict found once per entry); the others' hours. */
  private entryTimes(time: ColumnRun, count: number, days: Int32Array): void {
    const cache = this.entryCache(this.entryTimeVerdicts, time, Int32Array);
    const hours = this.rowHours;
    const entries = time.entries!;
    const at = time.at;
    for (let row = 0; row < count; row++) {
      if (days[row]! < 0) continue;
      const entry = entries[at + row]! + 1;
      let verdict = cache[entry]!;
      if (verdict === UNKNOWN_ENTRY) verdict = cache[entry] = entry === 0 ? 0 : timeVerdict(time.dictionary!, entry - 1);
      if (verdict === 0) days[row] = INVALID;
      else hours[row] = verdict - 1;
    }
  }

  /** Marks the rows whose `time` text (or number) is no time; the others' hours. */
  private textTimes(time: ColumnRun, count: number, days: Int32Array): void {
    const hours = this.rowHours;
    for (let row = 0; row < count; row++) {
      if (days[row]! < 0) continue;
      const hour = this.hourOfTime(time, row);
      if (hour < 0) days[row] = INVALID;
      else hours[row] = hour;
    }
  }

  /** The hours of rows whose day field is a timestamp (epoch time): its own UTC hour. */
  private instantHours(date: ColumnRun, count: number, days: Int32Array): void {
    const hours = this.rowHours;
    const units = this.layout.dayUnits;
    for (let row = 0; row < count; row++) {
      if (days[row]! < 0) continue;
      const at = date.at + row;
      let millis: number;
      if (date.numbers !== undefined) {
        const value = date.numbers[at]!;
        millis = date.numberKind === 'instant' ? value : (value * 1000) / units;
      } else if (date.entries !== undefined) {
        const dictionary = date.dictionary!;
        const entry = date.entries[at]!;
        millis = epochMillisBytes(dictionary.bytes, dictionary.starts[entry]!, dictionary.ends[entry]!, units);
      } else millis = epochMillisBytes(date.bytes, date.starts[at]!, date.ends[at]!, units);
      hours[row] = Math.floor((millis % MS_PER_DAY) / MS_PER_HOUR);
    }
  }

  /** Each unmarked row's sc-bytes from its dictionary entry (found once per entry); a row of no byte count is marked. */
  private entryBytes(bytes: ColumnRun, count: number, days: Int32Array, sent: Float64Array): void {
    const cache = this.entryCache(this.entryByteCounts, bytes, Float64Array);
    const entries = bytes.entries!;
    const at = bytes.at;
    for (let row = 0; row < count; row++) {
      if (days[row]! < 0) continue;
      const entry = entries[at + row]! + 1;
      let value = cache[entry]!;
      if (value === UNKNOWN_ENTRY) value = byteCountOfEntry(cache, bytes, entry);
      if (value < 0) days[row] = INVALID;
      else sent[row] = value;
    }
  }

  /** Sums the rows' requests and sc-bytes into their cells (in {@link rowPairs}: see {@link knownCells}). */
  private sumCells(count: number): void {
    const metrics = this.layout.metrics;
    const cells = this.rowPairs;
    const sent = this.rowBytes;
    const hours = this.rowHours;
    for (let row = 0; row < count; row++) {
      const cell = cells[row]!;
      const numbers = this.cellNumbers;
      let at = cell + 1 < numbers.length ? ((numbers[cell + 1]! - 1) * HOUR_SLOTS + hours[row]! + 1) * metrics : -1;
      // A new account-day or hour of this count: numbered, touched, the sums grown (slotOf).
      if (at < 0 || at + metrics > this.sums.length || this.sums[at] === 0) at = this.slotOf(cell, hours[row]!) * metrics;
      const sums = this.sums;
      sums[at]! += 1;
      sums[at + 1]! += sent[row]!;
    }
  }

  /**
   * The slot of an account-day cell's hour (-1: not known), touched (and the sums made
   * long enough for it) when first met in this run.
   */
  private slotOf(cell: number, hour: number): number {
    let numbers = this.cellNumbers;
    if (cell + 1 >= numbers.length) numbers = this.growCellNumbers(cell + 2);
    let number = numbers[cell + 1]! - 1;
    if (number < 0) {
      number = this.dayCells.length;
      this.dayCells.push(cell);
      numbers[cell + 1] = number + 1;
    }
    const slot = number * HOUR_SLOTS + hour + 1;
    const metrics = this.layout.metrics;
    if ((slot + 1) * metrics > this.sums.length) this.grow((slot + 1) * metrics);
    if (this.sums[slot * metrics] === 0) this.touch(slot);
    return slot;
  }

  private growCellNumbers(size: number): Int32Array {
    const grown = new Int32Array(Math.max(size, this.cellNumbers.length * 2, 1024));
    grown.set(this.cellNumbers);
    this.cellNumbers = grown;
    return grown;
  }

  /**
   * The accounts and sums of rows whose hosts are dictionary entry pairs, no rules: row by
   * row, each row's account its pair's (found once per pair), marked rows handed over as lines.
   */
  private sumPairs(runs: readonly ColumnRun[], x: ColumnRun | undefined, c: ColumnRun | undefined, accounts: Int32Array, cWidth: number, count: number): void {
    const layout = this.layout;
    const metrics = layout.metrics;
    const days = this.rowDays;
    const sent = this.rowBytes;
    const pairs = this.rowPairs;
    const hours = this.rowHours;
    let pending = 0;
    for (let row = 0; row < count; row++) {
      const day = days[row]!;
      let account = INVALID;
      if (day >= 0) {
        const pair = pairs[row]!;
        account = accounts[pair]!;
        if (account === UNKNOWN) account = this.pairAccount(accounts, x, c, pair, cWidth);
      }
      if (account < 0) {
        if (pending > 0) layout.advance(pending);
        pending = 0;
        this.asLines(runs, row, 1);
        continue;
      }
      pending++;
      const at = this.slotOf(account * MAX_DAYS + day, hours[row]!) * metrics;
      const sums = this.sums;
      sums[at]! += 1;
      sums[at + 1]! += sent[row]!;
    }
    if (pending > 0) layout.advance(pending);
  }

  /** The accounts and sums of the rows, any resolver, rules or not: row by row, marked rows handed over as lines. */
  private sumRows(runs: readonly ColumnRun[], count: number, pairs: { accounts: Int32Array } | undefined): void {
    const layout = this.layout;
    const { hostAt, metrics } = layout;
    const x = hostAt === undefined || hostAt[0] === -1 ? undefined : runs[hostAt[0]]!;
    const c = hostAt === undefined || hostAt[1] === -1 ? undefined : runs[hostAt[1]]!;
    const cWidth = c === undefined ? 1 : c.dictionarySize + 1;
    const rules = layout.evaluate !== undefined;
    const days = this.rowDays;
    const sentOf = this.rowBytes;
    let pending = 0;
    for (let row = 0; row < count; row++) {
      const day = days[row]!;
      let account = INVALID;
      if (day >= 0) {
        if (pairs !== undefined) {
          const pair = pairOfRow(x, c, cWidth, row);
          account = pairs.accounts[pair]!;
          if (account === UNKNOWN) account = this.pairAccount(pairs.accounts, x, c, pair, cWidth);
        } else if (hostAt !== undefined) account = this.accountOfHost(x, c, row);
        else account = this.accountOfRow(runs, row);
      }
      if (account < 0) {
        if (pending > 0) layout.advance(pending);
        pending = 0;
        this.asLines(runs, row, 1);
        continue;
      }
      pending++;
      const sent = sentOf[row]!;
      let at = this.slotOf(account * MAX_DAYS + day, this.rowHours[row]!) * metrics;
      const sums = this.sums;
      sums[at]! += 1;
      sums[at + 1]! += sent;
      if (rules) {
        const ruleValues = this.ruleValues;
        for (let m = 2; m < metrics; m++) ruleValues[m] = 0;
        this.placeAll(runs, layout.ruleColumns, row);
        layout.evaluate!(layout.line, sent, ruleValues);
        at += 2;
        for (let m = 2; m < metrics; m++, at++) sums[at]! += ruleValues[m]!;
      }
    }
    if (pending > 0) layout.advance(pending);
  }

  /** Hands the run's sums, per account-day touched, to the counter, and clears them. */
  private addTouched(): void {
    const { sums, values, layout } = this;
    const metrics = layout.metrics;
    for (let t = 0; t < this.touchedCount; t++) {
      const slot = this.touched[t]!;
      const hourSlot = slot % HOUR_SLOTS;
      const cell = this.dayCells[(slot - hourSlot) / HOUR_SLOTS]!;
      const day = cell % MAX_DAYS;
      const at = slot * metrics;
      for (let m = 0; m < metrics; m++) {
        values[m] = sums[at + m]!;
        sums[at + m] = 0;
      }
      // Exact quotients: V8 keeps them integers (Math.floor of a fraction made it throw the counting code away, issue 34).
      layout.add(this.accounts[(cell - day) / MAX_DAYS], this.days[day]!, hourSlot - 1, values);
    }
    this.touchedCount = 0;
  }

  /** Per dictionary (by its text bytes), per entry + 1 (0: none): the day id, time verdict or byte count, found when first asked. */
  // Day ids and verdicts are small integers: an Int32Array keeps them so (no number is boxed
  // while the reader's code is not yet optimized); byte counts may pass 2^31.
  private readonly entryDayIds = new WeakMap<Uint8Array, Int32Array>();
  private readonly entryTimeVerdicts = new WeakMap<Uint8Array, Int32Array>();
  private readonly entryByteCounts = new WeakMap<Uint8Array, Float64Array>();

  private entryCache<T extends Int32Array | Float64Array>(caches: WeakMap<Uint8Array, T>, run: ColumnRun, kind: new (length: number) => T): T {
    const dictionary = run.dictionary!;
    let cache = caches.get(dictionary.bytes);
    if (cache === undefined) {
      cache = new kind(dictionary.starts.length + 1);
      cache.fill(UNKNOWN_ENTRY);
      caches.set(dictionary.bytes, cache);
    }
    return cache;
  }

  /** The day id of a `date` dictionary entry + 1 (0: none, no day), kept in `cache` (see {@link entryCache}). */
  private dayOfEntry(cache: Int32Array, date: ColumnRun, entry: number): number {
    return (cache[entry] = entry === 0 ? INVALID : this.dayOfText(date.dictionary!, entry - 1));
  }

  /** The account of a host pair, kept in `accounts` (see {@link pairs}). */
  private pairAccount(accounts: Int32Array, x: ColumnRun | undefined, c: ColumnRun | undefined, pair: number, cWidth: number): number {
    return (accounts[pair] = this.accountOfPair(x, c, pair, cWidth));
  }

  /** The day id of a `date` (or timestamp) dictionary entry's text. */
  private dayOfText(dictionary: NonNullable<ColumnRun['dictionary']>, entry: number): number {
    const bytes = dictionary.bytes;
    const start = dictionary.starts[entry]!;
    const end = dictionary.ends[entry]!;
    if (start === end) return INVALID;
    if (this.layout.dayUnits !== 0) {
      const millis = epochMillisBytes(bytes, start, end, this.layout.dayUnits);
      return millis < 0 ? INVALID : this.dayOfDayNumber(epochDayNumber(millis));
    }
    const day = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8', start, end);
    return isValidDay(day) ? this.dayId(day) : INVALID;
  }

  private grow(size: number): void {
    const grown = new Float64Array(Math.max(size, this.sums.length * 2, 64 * HOUR_SLOTS * this.layout.metrics));
    grown.set(this.sums);
    this.sums = grown;
  }

  private touch(cell: number): void {
    if (this.touchedCount === this.touched.length) {
      const grown = new Int32Array(this.touched.length * 2);
      grown.set(this.touched);
      this.touched = grown;
    }
    this.touched[this.touchedCount++] = cell;
  }

  /** The bytes of the row's line (its values, `-` for none, and the tabs between them). */
  private lineBytes(runs: readonly ColumnRun[], row: number): number {
    let total = runs.length - 1;
    for (const run of runs) {
      if (run.numbers !== undefined) {
        const value = run.numbers[run.at + row]!;
        total += Number.isNaN(value) ? 1 : run.numberText!(value).length;
        continue;
      }
      const length = run.ends[run.at + row]! - run.starts[run.at + row]!;
      total += length === 0 ? 1 : length;
    }
    return total;
  }

  /** The day id of the row's day field; -1 when the counter would find no day in it. */
  private dayOf(run: ColumnRun, row: number): number {
    const at = run.at + row;
    if (run.numbers !== undefined) return this.dayOfNumberValue(run, run.numbers[at]!);
    const bytes = run.bytes;
    const start = run.starts[at]!;
    const end = run.ends[at]!;
    if (this.layout.dayUnits !== 0) {
      if (start === end) return INVALID;
      const millis = epochMillisBytes(bytes, start, end, this.layout.dayUnits);
      return millis < 0 ? INVALID : this.dayOfDayNumber(epochDayNumber(millis));
    }
    if (end - start === 10 && this.lastDateId >= 0) {
      const last = this.lastDate;
      let same = true;
      for (let i = 0; i < 10; i++) {
        if (bytes[start + i] !== last[i]) {
          same = false;
          break;
        }
      }
      if (same) return this.lastDateId;
    }
    if (start === end) return INVALID;
    const day = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8', start, end);
    if (!isValidDay(day)) return INVALID;
    const id = this.dayId(day);
    if (id >= 0 && end - start === 10) {
      this.lastDate.set(bytes.subarray(start, end));
      this.lastDateId = id;
    }
    return id;
  }

  /** The day id of a day field's number (a typed column): as its text reads, found once per value or day. */
  private dayOfNumberValue(run: ColumnRun, value: number): number {
    if (Number.isNaN(value)) return INVALID;
    const units = this.layout.dayUnits;
    if (units !== 0) {
      // The text is the epoch time (ms, or seconds with three decimals): its day is the number's.
      const millis = run.numberKind === 'instant' ? value : (value * 1000) / units;
      if (!(millis >= 0 && millis <= MAX_EPOCH_MS && Number.isInteger(value) && value < 1e15)) return INVALID;
      return this.dayOfDayNumber(Math.floor(millis / MS_PER_DAY));
    }
    let id = this.dayValueIds.get(value);
    if (id === undefined) {
      const day = run.numberText!(value);
      id = isValidDay(day) ? this.dayId(day) : INVALID;
      if (this.dayValueIds.size < 4096) this.dayValueIds.set(value, id);
    }
    return id;
  }

  private dayOfDayNumber(number: number): number {
    if (number === this.lastDayNumber) return this.lastDayNumberId;
    let id = this.dayNumberIds.get(number);
    if (id === undefined) {
      id = this.dayId(dayOfNumber(number));
      this.dayNumberIds.set(number, id);
    }
    this.lastDayNumber = number;
    this.lastDayNumberId = id;
    return id;
  }

  /**
   * The id of a calendar day; INVALID for a day outside SUPPORTED_DAYS (its row goes to
   * the counter as its line, which counts it malformed and says why), or past MAX_DAYS.
   */
  private dayId(day: string): number {
    let id = this.dayIds.get(day);
    if (id === undefined) {
      if (!isSupportedDay(day)) return INVALID;
      id = this.days.length;
      if (id >= MAX_DAYS) return INVALID;
      this.days.push(day);
      this.dayIds.set(day, id);
    }
    return id;
  }

  /** The hour (0..23) of the row's time, read as the counter reads it (its first two digits); -1 when it is no time. */
  private hourOfTime(run: ColumnRun, row: number): number {
    const at = run.at + row;
    if (run.numbers !== undefined) {
      const value = run.numbers[at]!;
      if (Number.isNaN(value)) return INVALID;
      const text = Buffer.from(run.numberText!(value));
      return isValidTimeBytes(text, 0, text.length) ? hourOfTimeText(text, 0) : INVALID;
    }
    const start = run.starts[at]!;
    return isValidTimeBytes(run.bytes, start, run.ends[at]!) ? hourOfTimeText(run.bytes, start) : INVALID;
  }

  /** The row's sc-bytes (`-` or none: 0); -1 when it is no byte count. */
  private bytesOf(run: ColumnRun, row: number): number {
    const at = run.at + row;
    if (run.numbers !== undefined) {
      const value = run.numbers[at]!;
      if (Number.isNaN(value)) return 0;
      if (run.numberKind === 'integer') return value >= 0 && value < 1e15 ? value : INVALID;
      const text = Buffer.from(run.numberText!(value));
      return parseByteCountBytes(text, 0, text.length);
    }
    const start = run.starts[at]!;
    const end = run.ends[at]!;
    return start === end ? 0 : parseByteCountBytes(run.bytes, start, end);
  }

  /** The account of the row's viewer host (x-host-header, else cs(Host)), found once per distinct host. */
  private accountOfHost(x: ColumnRun | undefined, c: ColumnRun | undefined, row: number): number {
    let run = x;
    if (run === undefined || !present(run, row)) run = c !== undefined && present(c, row) ? c : undefined;
    if (run === undefined) return this.accountOfText(undefined);
    const at = run.at + row;
    const bytes = run.bytes;
    const start = run.starts[at]!;
    const end = run.ends[at]!;
    const cache = this.keyAccounts;
    const entry = cache.find(bytes, start, end);
    if (entry !== NOT_CACHED) return cache.value(entry);
    const { hostAt } = this.layout;
    const line = this.layout.line;
    line.next();
    let used = 0;
    for (let side = 0; side < 2; side++) {
      const column = hostAt![side]!;
      if (column === -1) continue;
      used = this.place(side === 0 ? x! : c!, column, row, used);
    }
    const account = this.layout.resolve(line);
    const id = this.accountIdOf(account);
    if (account === undefined) this.missedHost(bytes, start, end);
    if (id >= 0) cache.add(bytes, start, end, id);
    return id;
  }

  /**
   * An unattributed host, sampled as the counter's lines sample it: its first label, or
   * the whole host when it may be an IP literal or is a CloudFront default domain.
   */
  private missedHost(bytes: Uint8Array, start: number, end: number): void {
    let stop = end;
    const first = bytes[start]!;
    if (this.layout.hostKey === 'label' && !((first >= 48 && first <= 57) || first === 91) && !isCloudFrontDefaultDomainBytes(bytes, start, end)) {
      stop = start;
      while (stop < end && bytes[stop] !== 46 /* . */) stop++;
    }
    this.layout.missed(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8', start, stop));
  }

  private accountOfText(account: string | undefined): number {
    return this.accountIdOf(account);
  }

  /** The account of a row for the other resolvers: none read (constant), one column (once per value), or the row's line. */
  private accountOfRow(runs: readonly ColumnRun[], row: number): number {
    const columns = this.layout.resolverColumns;
    if (columns.length === 0) {
      if (this.constantAccount === UNKNOWN) {
        this.layout.line.next();
        this.constantAccount = this.accountIdOf(this.layout.resolve(this.layout.line));
      }
      return this.constantAccount;
    }
    const run = runs[columns[0]!]!;
    if (columns.length === 1 && run.numbers === undefined) {
      const at = run.at + row;
      let bytes = run.bytes;
      let start = run.starts[at]!;
      let end = run.ends[at]!;
      if (start === end) {
        bytes = this.dash;
        start = 0;
        end = 1;
      }
      const entry = this.keyAccounts.find(bytes, start, end);
      if (entry !== NOT_CACHED) return this.keyAccounts.value(entry);
      this.placeAll(runs, columns, row);
      const id = this.accountIdOf(this.layout.resolve(this.layout.line));
      if (id >= 0) this.keyAccounts.add(bytes, start, end, id);
      return id;
    }
    this.placeAll(runs, columns, row);
    return this.accountIdOf(this.layout.resolve(this.layout.line));
  }

  /** The row's values of `columns` on the scratch line (a new line). */
  private placeAll(runs: readonly ColumnRun[], columns: readonly number[], row: number): void {
    this.layout.line.next();
    let used = 0;
    for (const column of columns) used = this.place(runs[column]!, column, row, used);
  }

  /** Writes the row's value of `run` (its text; `-` for none) as column `column` of the scratch line at `used`. */
  private place(run: ColumnRun, column: number, row: number, used: number): number {
    const at = run.at + row;
    if (run.numbers === undefined) return this.placeBytes(column, run.bytes, run.starts[at]!, run.ends[at]!, used);
    const value = run.numbers[at]!;
    const text = Number.isNaN(value) ? this.dash : Buffer.from(run.numberText!(value));
    return this.placeBytes(column, text, 0, text.length, used);
  }

  /** Writes `bytes[start, end)` (none: `-`) as column `column` of the scratch line at `used`; answers where it ends. */
  private placeBytes(column: number, bytes: Uint8Array, start: number, end: number, used: number): number {
    const { line, scratch } = this.layout;
    if (start === end) return this.placeBytes(column, this.dash, 0, 1, used);
    if (used + end - start > scratch.length) throw new RangeError('a value longer than the scratch line');
    line.starts[column] = used;
    // Byte by byte: a subarray per value would be an object per row where rules read a row's line.
    for (let i = start; i < end; i++) scratch[used++] = bytes[i]!;
    line.ends[column] = used;
    return used;
  }

  private accountIdOf(account: string | undefined): number {
    let id = this.accountIds.get(account);
    if (id === undefined) {
      id = this.accounts.length;
      if (id >= MAX_ACCOUNTS) return INVALID;
      this.accounts.push(account);
      this.accountIds.set(account, id);
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

  /** Tells the kernel a pair's viewer host's account (as {@link accountOfPair} caches it), for the next row groups' pairs (ColumnSumKernel.prefillPairs). */
  private rememberViewer(kernel: ColumnSumKernel, x: ColumnRun | undefined, c: ColumnRun | undefined, pair: number, cWidth: number, account: number): void {
    const viewer = account < 0 ? undefined : viewerOf(x, c, pair, cWidth);
    if (viewer === undefined) return;
    const { bytes, starts, ends } = viewer.run.dictionary!;
    kernel.addHost(this.keyAccounts.generation, bytes, starts[viewer.entry]!, ends[viewer.entry]!, account);
  }

  /**
   * The account of a pair of host entries (+1; 0: none): the counter's resolver on a line
   * of their texts, found once per viewer host (x-host-header, else cs(Host)) as
   * {@link accountOfHost} finds it: each row group's dictionaries are new, their hosts mostly not.
   */
  private accountOfPair(x: ColumnRun | undefined, c: ColumnRun | undefined, pair: number, cWidth: number): number {
    const viewer = viewerOf(x, c, pair, cWidth);
    if (viewer === undefined) return this.accountOfText(undefined);
    const entry = viewer.entry;
    const { bytes, starts, ends } = viewer.run.dictionary!;
    const cache = this.keyAccounts;
    const cached = cache.find(bytes, starts[entry]!, ends[entry]!);
    if (cached !== NOT_CACHED) return cache.value(cached);
    const id = this.resolvePair(x, c, pair, cWidth);
    if (id >= 0) cache.add(bytes, starts[entry]!, ends[entry]!, id);
    return id;
  }

  /** The account of a pair of host entries: the counter's resolver on a line of their texts. */
  private resolvePair(x: ColumnRun | undefined, c: ColumnRun | undefined, pair: number, cWidth: number): number {
    const { line, hostAt, resolve } = this.layout;
    let used = 0;
    line.next();
    const texts: [Uint8Array, number, number][] = [];
    const place = (run: ColumnRun | undefined, column: number, entry: number) => {
      if (run === undefined) return;
      const { bytes, starts, ends } = run.dictionary!;
      const start = entry === 0 ? 0 : starts[entry - 1]!;
      const end = entry === 0 ? 0 : ends[entry - 1]!;
      used = this.placeBytes(column, bytes, start, end, used);
      if (start !== end) texts.push([bytes, start, end]);
    };
    place(x, hostAt![0], Math.floor(pair / cWidth));
    place(c, hostAt![1], pair % cWidth);
    const account = resolve(line);
    if (account === undefined) {
      // The viewer host: x-host-header when present, else cs(Host).
      const host = texts.find(([bytes, start, end]) => end - start > 1 || bytes[start] !== DASH);
      if (host !== undefined) this.missedHost(...host);
    }
    return this.accountIdOf(account);
  }
}

/** Whether the row's value is there and not `-` (as LogLine.present reads the line). */
function present(run: ColumnRun, row: number): boolean {
  const at = run.at + row;
  const start = run.starts[at]!;
  const length = run.ends[at]! - start;
  return length > 1 || (length === 1 && run.bytes[start] !== DASH);
}

/** Whether a dictionary entry's text is there and not `-` (as {@link present} reads a row's). */
/** A host pair's viewer host: x-host-header's entry when it has a value, else cs(Host)'s; undefined when neither has. */
function viewerOf(x: ColumnRun | undefined, c: ColumnRun | undefined, pair: number, cWidth: number): { run: ColumnRun; entry: number } | undefined {
  const xEntry = Math.floor(pair / cWidth) - 1;
  if (x !== undefined && xEntry >= 0 && presentEntry(x, xEntry)) return { run: x, entry: xEntry };
  const cEntry = (pair % cWidth) - 1;
  if (c !== undefined && cEntry >= 0 && presentEntry(c, cEntry)) return { run: c, entry: cEntry };
  return undefined;
}

function presentEntry(run: ColumnRun, entry: number): boolean {
  const dictionary = run.dictionary!;
  const start = dictionary.starts[entry]!;
  const length = dictionary.ends[entry]! - start;
  return length > 1 || (length === 1 && dictionary.bytes[start] !== DASH);
}

/** The row's host pair (see ColumnCounting.pairs): (x-host-header entry + 1) × `cWidth` + cs(Host) entry + 1. */
function pairOfRow(x: ColumnRun | undefined, c: ColumnRun | undefined, cWidth: number, row: number): number {
  return (x === undefined ? 0 : (x.entries![x.at + row]! + 1) * cWidth) + (c === undefined ? 0 : c.entries![c.at + row]! + 1);
}

/** The byte count of an sc-bytes dictionary entry + 1, kept in `cache` (see entryByteCount). */
function byteCountOfEntry(cache: Float64Array, run: ColumnRun, entry: number): number {
  return (cache[entry] = entryByteCount(run.dictionary!, entry));
}

/** The sc-bytes of a dictionary entry + 1 (0: none, read as 0); -1 when it is no byte count. */
function entryByteCount(dictionary: NonNullable<ColumnRun['dictionary']>, entry: number): number {
  if (entry === 0) return 0;
  const start = dictionary.starts[entry - 1]!;
  const end = dictionary.ends[entry - 1]!;
  return start === end ? 0 : parseByteCountBytes(dictionary.bytes, start, end);
}

/** A `time` dictionary entry's hour + 1 when its text is a time, else 0. */
function timeVerdict(dictionary: NonNullable<ColumnRun['dictionary']>, entry: number): number {
  const start = dictionary.starts[entry]!;
  return isValidTimeBytes(dictionary.bytes, start, dictionary.ends[entry]!) ? hourOfTimeText(dictionary.bytes, start) + 1 : 0;
}

/** The hour of a checked `HH:MM:SS` time starting at `at`: its first two digits (as the counter reads a line's). */
function hourOfTimeText(bytes: Uint8Array, at: number): number {
  return (bytes[at]! - 48) * 10 + (bytes[at + 1]! - 48);
}

/** Each unmarked row's sc-bytes from a typed column (none: 0); a row of no byte count is marked. */
function numberBytes(run: ColumnRun, count: number, days: Int32Array, sent: Float64Array): void {
  const numbers = run.numbers!;
  const at = run.at;
  if (run.numberKind !== 'integer') {
    // Instants: read as their text reads (never in CloudFront's files).
    for (let row = 0; row < count; row++) {
      if (days[row]! < 0) continue;
      const value = numbers[at + row]!;
      let bytes = 0;
      if (!Number.isNaN(value)) {
        const text = Buffer.from(run.numberText!(value));
        bytes = parseByteCountBytes(text, 0, text.length);
      }
      if (bytes < 0) days[row] = INVALID;
      else sent[row] = bytes;
    }
    return;
  }
  for (let row = 0; row < count; row++) {
    if (days[row]! < 0) continue;
    const value = numbers[at + row]!;
    if (Number.isNaN(value)) sent[row] = 0;
    else if (value >= 0 && value < 1e15) sent[row] = value;
    else days[row] = INVALID;
  }
}

/** Each unmarked row's sc-bytes from its text (`-` or none: 0); a row of no byte count is marked. */
function textBytes(run: ColumnRun, count: number, days: Int32Array, sent: Float64Array): void {
  const { bytes, starts, ends, at, byteCounts } = run;
  if (byteCounts !== undefined) {
    // Read by the reader as it placed the values (ColumnRun.byteCounts).
    for (let row = 0; row < count; row++) {
      if (days[row]! < 0) continue;
      const value = byteCounts[at + row]!;
      if (value < 0) days[row] = INVALID;
      else sent[row] = value;
    }
    return;
  }
  for (let row = 0; row < count; row++) {
    if (days[row]! < 0) continue;
    const start = starts[at + row]!;
    const end = ends[at + row]!;
    const value = start === end ? 0 : parseByteCountBytes(bytes, start, end);
    if (value < 0) days[row] = INVALID;
    else sent[row] = value;
  }
}

/** Each row's host pair: (x-host-header entry + 1) × `cWidth` + cs(Host) entry + 1 (see ColumnCounting.pairs). */
function pairsOf(x: ColumnRun | undefined, c: ColumnRun | undefined, cWidth: number, count: number, pairs: Int32Array): void {
  if (x !== undefined && c !== undefined) {
    const xEntries = x.entries!;
    const cEntries = c.entries!;
    const xAt = x.at;
    const cAt = c.at;
    for (let row = 0; row < count; row++) pairs[row] = (xEntries[xAt + row]! + 1) * cWidth + cEntries[cAt + row]! + 1;
  } else if (x !== undefined) {
    const xEntries = x.entries!;
    const xAt = x.at;
    for (let row = 0; row < count; row++) pairs[row] = (xEntries[xAt + row]! + 1) * cWidth;
  } else if (c !== undefined) {
    const cEntries = c.entries!;
    const cAt = c.at;
    for (let row = 0; row < count; row++) pairs[row] = cEntries[cAt + row]! + 1;
  } else pairs.fill(0, 0, count);
}

/** Per dictionary (by its text bytes): whether one of its entries starts with `#`. */
const HASH_DICTIONARIES = new WeakMap<Uint8Array, boolean>();

/**
 * Whether every row has a day and its host pair a known account (nothing to hand over as
 * lines, nothing to resolve); if so each row's pair in `pairs` is replaced by its cell
 * (account × {@link MAX_DAYS} + day). Nothing else is changed when not.
 */
function knownCells(days: Int32Array, pairs: Int32Array, accounts: Int32Array, count: number): boolean {
  for (let row = 0; row < count; row++) if (days[row]! < 0 || accounts[pairs[row]!]! < 0) return false;
  for (let row = 0; row < count; row++) pairs[row] = accounts[pairs[row]!]! * MAX_DAYS + days[row]!;
  return true;
}

/** Whether a row of this first column may start with `#` (its line a directive): not typed values, nor a dictionary of no such entry. */
function mayHoldDirectives(first: ColumnRun): boolean {
  if (first.numbers !== undefined) return false;
  if (first.entries === undefined) return true;
  const dictionary = first.dictionary!;
  let any = HASH_DICTIONARIES.get(dictionary.bytes);
  if (any === undefined) {
    any = false;
    for (let entry = 0; entry < dictionary.starts.length && !any; entry++) any = dictionary.starts[entry]! !== dictionary.ends[entry]! && dictionary.bytes[dictionary.starts[entry]!] === HASH;
    HASH_DICTIONARIES.set(dictionary.bytes, any);
  }
  return any;
}

/** Marks the rows whose first value starts with `#`: their lines would be directives. */
function markDirectives(first: ColumnRun, count: number, days: Int32Array): void {
  // A dictionary run: only when one of its entries starts with `#`.
  if (!mayHoldDirectives(first)) return;
  for (let row = 0; row < count; row++) if (startsWithHash(first, row)) days[row] = INVALID;
}

/** Whether the row's first value starts with `#`: its line would be a directive. */
function startsWithHash(run: ColumnRun, row: number): boolean {
  if (run.numbers !== undefined) return false;
  const at = run.at + row;
  if (run.entries !== undefined && run.starts.length === 0) {
    const entry = run.entries[at]!;
    const dictionary = run.dictionary!;
    return entry >= 0 && dictionary.starts[entry]! !== dictionary.ends[entry]! && dictionary.bytes[dictionary.starts[entry]!] === HASH;
  }
  const start = run.starts[at]!;
  return start !== run.ends[at]! && run.bytes[start] === HASH;
}
