import type { ColumnCounting } from './columns/column-counting';
import { spansOf, type ColumnRun } from './columns/column-run';
import type { JsonTemplate } from './json-scanner';
import type { LogCounter } from './log-counter';

/**
 * Where a reader of a log that is not line text (Parquet) puts what it reads: the
 * counter, through {@link RecordLines}.
 */
export interface RecordSink {
  /**
   * The log's fields, every one (as the file names them). Returns the ones to read, in
   * the order the following {@link rows} give them: the others are never needed.
   */
  fields(names: readonly string[]): readonly string[];
  /**
   * `count` rows of the fields {@link fields} returned, column by column: `columns[i][r]`
   * is field i of row r, as the reader decoded it (text, a number, a bigint, a Date, or
   * null/undefined for none).
   */
  rows(columns: readonly (ArrayLike<unknown> | undefined)[], count: number): void;
  /**
   * `count` rows of the fields {@link fields} returned, as the text of their values:
   * field i of row r is `runs[i].bytes[starts[at + r], ends[at + r])`, already escaped as
   * {@link RecordLines} escapes values (an empty span: no value). Read column by column
   * (see src/adapters/logs/parquet-columns.ts).
   */
  columnRows(runs: readonly ColumnRun[], count: number): void;
  /** A row (or a run of rows) that could not be read, counted as malformed. */
  malformed(reason: string, rows?: number): void;
}

/**
 * The content of a stored log: line text (already gunzipped), or a reader of records
 * that puts them into a {@link RecordSink} (Parquet, read by row groups and only the
 * columns needed).
 */
export type LogContent =
  | { readonly kind: 'text'; readonly text: AsyncIterable<Uint8Array> }
  | { readonly kind: 'records'; readonly format: string; read(sink: RecordSink): Promise<void> };

/** Bytes of record text gathered before the counter takes them. */
const FLUSH_BYTES = 256 * 1024;
const TAB = 9;
const NEWLINE = 10;
const ESCAPES: Readonly<Record<string, string>> = { '\t': '%09', '\n': '%0A', '\r': '%0D' };

/**
 * Feeds records to a {@link LogCounter} as the tab-separated lines of a standard log,
 * so that every format is counted by the one counter (its resolvers, metric rules,
 * checks and conservation law): each record becomes one line, its values as text, a
 * tab, CR or LF inside a value percent-encoded as CloudFront encodes them in its own
 * logs, and a missing value (`null`, `undefined`, an empty string) the standard `-`.
 */
export class RecordLines implements RecordSink {
  private buffer = Buffer.allocUnsafe(FLUSH_BYTES * 2);
  private used = 0;
  private width = 0;
  /** Counts runs of rows without their lines, when the fields allow (see ColumnCounting). */
  private columnar: ColumnCounting | undefined;

  constructor(private readonly counter: LogCounter) {}

  fields(names: readonly string[]): readonly string[] {
    const needed = this.fieldsRead(names);
    this.setFields(needed);
    return needed;
  }

  /** Of `names`, the fields counting reads (see LogCounter.fieldsRead); sets nothing. */
  fieldsRead(names: readonly string[]): readonly string[] {
    return this.counter.fieldsRead(names);
  }

  /** Sets the fields of the records that follow (all of them are read). */
  setFields(names: readonly string[]): void {
    this.flush();
    this.width = names.length;
    this.counter.setFields(names);
    // Rows the columns cannot count go to the counter as their lines, in their place.
    this.columnar = this.counter.columnCounting((runs, from, count) => {
      this.linesOf(runs, from, count);
      this.flush();
    });
  }

  rows(columns: readonly (ArrayLike<unknown> | undefined)[], count: number): void {
    this.counter.readAsLines('columns that are not flat (a list, map or group): rows read whole');
    for (let row = 0; row < count; row++) {
      // A record of no fields is still a line to count (as malformed): never an empty one.
      if (this.width === 0) this.byte(45 /* - */);
      for (let field = 0; field < this.width; field++) {
        if (field > 0) this.byte(TAB);
        this.value(columns[field]?.[row]);
      }
      this.byte(NEWLINE);
      if (this.used >= FLUSH_BYTES) this.flush();
    }
  }

  columnRows(runs: readonly ColumnRun[], count: number): void {
    if (this.columnar !== undefined) {
      // Lines gathered before are counted first: line numbers stay in order.
      this.flush();
      if (this.columnar.count(runs, count)) return;
      this.counter.readAsLines('a host column that is not text');
    } else {
      this.counter.readAsLines('no date, timestamp(ms) or timestamp column: every row is malformed');
    }
    this.linesOf(runs, 0, count);
  }

  /** Rows `[from, from + count)` of the runs as lines (see {@link columnRows}). */
  private linesOf(runs: readonly ColumnRun[], from: number, count: number): void {
    const width = this.width;
    if (width === 0) {
      for (let row = 0; row < count; row++) this.record([]);
      return;
    }
    // The longest a row of these runs can be: each longest value, a tab or '-' each, a newline.
    let longest = 2 * width + 1;
    for (let field = 0; field < width; field++) longest += runs[field]!.numbers === undefined ? runs[field]!.longest : 32;
    if (longest > this.buffer.length - FLUSH_BYTES) this.buffer = Buffer.allocUnsafe(longest + 2 * FLUSH_BYTES);
    for (const run of runs) spansOf(run);
    const values = runs.map((run) => run.bytes);
    const starts = runs.map((run) => run.starts);
    const ends = runs.map((run) => run.ends);
    const firsts = runs.map((run) => run.at + from);
    const numbers = runs.map((run) => run.numbers);
    let buffer = this.buffer;
    let used = this.used;
    const limit = buffer.length - longest;
    for (let row = 0; row < count; row++) {
      if (used > limit) {
        this.used = used;
        this.flush();
        used = 0;
        buffer = this.buffer;
      }
      for (let field = 0; field < width; field++) {
        const at = firsts[field]! + row;
        const numeric = numbers[field];
        if (numeric !== undefined) {
          const value = numeric[at]!;
          if (Number.isNaN(value)) buffer[used++] = 45; /* - */
          else used += buffer.write(runs[field]!.numberText!(value), used, 'latin1');
          buffer[used++] = TAB;
          continue;
        }
        const start = starts[field]![at]!;
        const end = ends[field]![at]!;
        if (start === end) buffer[used++] = 45; /* - */
        else if (end - start < 32) {
          const bytes = values[field]!;
          for (let i = start; i < end; i++) buffer[used++] = bytes[i]!;
        } else {
          buffer.set(values[field]!.subarray(start, end), used);
          used += end - start;
        }
        buffer[used++] = TAB;
      }
      // The last field's tab is the line's end.
      buffer[used - 1] = NEWLINE;
    }
    this.used = used;
    if (used >= FLUSH_BYTES) this.flush();
  }

  /** One record of the current fields, its values in field order. */
  record(values: ArrayLike<unknown>): void {
    if (this.width === 0) this.byte(45 /* - */);
    for (let field = 0; field < this.width; field++) {
      if (field > 0) this.byte(TAB);
      this.value(values[field]);
    }
    this.byte(NEWLINE);
    if (this.used >= FLUSH_BYTES) this.flush();
  }

  /**
   * One record of the current fields whose values are the bytes `[starts[i], ends[i])`
   * of `bytes`, UTF-8 with no tab, CR or LF in them (an empty range: no value).
   */
  recordBytes(bytes: Uint8Array, starts: readonly number[], ends: readonly number[]): void {
    if (this.width === 0) this.byte(45 /* - */);
    for (let field = 0; field < this.width; field++) {
      if (field > 0) this.byte(TAB);
      const start = starts[field]!;
      const length = ends[field]! - start;
      if (length === 0) {
        this.byte(45 /* - */);
        continue;
      }
      if (this.used + length > this.buffer.length) {
        this.flush();
        if (length > this.buffer.length) this.buffer = Buffer.allocUnsafe(length + FLUSH_BYTES);
      }
      const buffer = this.buffer;
      let used = this.used;
      // Values are short (a date, a host): a loop copies them without making a view of each.
      if (length < 64) for (let i = start, end = start + length; i < end; i++) buffer[used++] = bytes[i]!;
      else {
        buffer.set(bytes.subarray(start, start + length), used);
        used += length;
      }
      this.used = used;
    }
    this.byte(NEWLINE);
    if (this.used >= FLUSH_BYTES) this.flush();
  }

  /** See LogCounter.useJsonTemplate, loadJson and countJson (the JSON scanner's way into the counter). */
  useJsonTemplate(template: JsonTemplate | undefined): boolean {
    this.flush();
    return this.counter.useJsonTemplate(template);
  }

  get jsonCapacity(): number {
    return this.counter.jsonCapacity;
  }

  loadJson(bytes: Uint8Array, from: number, end: number): void {
    this.counter.loadJson(bytes, from, end);
  }

  countJson(offset: number): number {
    // Lines gathered before are counted first: line numbers stay in order.
    this.flush();
    return this.counter.countJson(offset);
  }

  malformed(reason: string, rows = 1): void {
    this.flush();
    for (let i = 0; i < rows; i++) this.counter.malformedRecord(reason);
  }

  /** Hands what is gathered to the counter. Call before the counter is finished. */
  flush(): void {
    if (this.used === 0) return;
    this.counter.write(this.buffer.subarray(0, this.used));
    this.used = 0;
  }

  private value(value: unknown): void {
    if (value === null || value === undefined || value === '') return this.byte(45 /* - */);
    if (value instanceof Uint8Array) return this.utf8(value);
    let text: string;
    if (typeof value === 'string') text = value;
    else if (value instanceof Date) text = String(value.getTime());
    else if (typeof value === 'object') text = JSON.stringify(value, (_, inner: unknown) => (typeof inner === 'bigint' ? inner.toString() : inner));
    else text = String(value);
    if (/[\t\n\r]/.test(text)) text = text.replace(/[\t\n\r]/g, (character) => ESCAPES[character]!);
    this.text(text);
  }

  /** UTF-8 bytes of a value (a Parquet string column), copied with tab, CR and LF percent-encoded. */
  private utf8(bytes: Uint8Array): void {
    const length = bytes.length;
    if (length === 0) return this.byte(45 /* - */);
    if (this.used + length * 3 > this.buffer.length) {
      this.flush();
      if (length * 3 > this.buffer.length) this.buffer = Buffer.allocUnsafe(length * 3 + FLUSH_BYTES);
    }
    const buffer = this.buffer;
    let used = this.used;
    for (let i = 0; i < length; i++) {
      const byte = bytes[i]!;
      if (byte === 9 || byte === 10 || byte === 13) {
        buffer[used++] = 37; /* % */
        buffer[used++] = 48; /* 0 */
        buffer[used++] = byte === 9 ? 57 : byte === 10 ? 65 : 68; /* 9, A, D */
      } else {
        buffer[used++] = byte;
      }
    }
    this.used = used;
  }

  private text(text: string): void {
    // A UTF-16 code unit is at most 3 bytes of UTF-8.
    if (this.used + text.length * 3 > this.buffer.length) {
      this.flush();
      if (text.length * 3 > this.buffer.length) this.buffer = Buffer.allocUnsafe(text.length * 3 + FLUSH_BYTES);
    }
    this.used += this.buffer.write(text, this.used, 'utf8');
  }

  private byte(value: number): void {
    if (this.used === this.buffer.length) this.flush();
    this.buffer[this.used++] = value;
  }
}

/**
 * `first`, then the rest of `iterator`. A function of the module, not a closure made per
 * count: each closure's generators have a hidden class of their own, so a new one per
 * object threw the counting loop's optimized code away on every count (V8 deoptimized
 * `countText` with "wrong map" once per object and compiled it again, measured).
 */
export async function* resumed(first: readonly Uint8Array[], iterator: AsyncIterator<Uint8Array>): AsyncGenerator<Uint8Array, void, undefined> {
  yield* first;
  for (let step = await iterator.next(); !step.done; step = await iterator.next()) yield step.value;
}
