import { StringDecoder } from 'node:string_decoder';
import { UNATTRIBUTED } from '../account-id';
import { compileResolver, resolverKey, type LineResolver, type ResolverKey, type ResolverSpec } from './account-resolver';
import { dayOfNumber, epochDayNumber, epochMillisBytes, FieldLayout, isValidTimeBytes, parseByteCountBytes, parseFieldsDirective } from './cloudfront-log';
import { isSupportedDay, isValidDay, SUPPORTED_DAY_NUMBERS, SUPPORTED_DAYS_TEXT } from '../days';
import { PoisonObjectError } from '../errors';
import { ColumnCounting, type RowsAsLines } from './columns/column-counting';
import {
  ALL_CHECKS,
  ALL_CHECKS_SECOND_DAY,
  BYTES_OK,
  KEY_IP_LITERAL,
  KEY_NO_HOST,
  KEY_NONE,
  KEY_UNKNOWN,
  LineScanner,
  NO_LAYOUT,
  SAME_DAY,
  SECOND_DAY,
  TIME_OK,
  type DaySlot,
} from './line-scanner';
import type { JsonTemplate } from './json-scanner';
import { LogLine } from './log-line';
import { compileRules, metricNames, type MetricRule, type RuleEvaluator } from './metric-rules';
import { HOURS_PER_DAY } from '../hours';
import { emptyLineCounts, type LineCounts, type MalformedSample, type TallyRow, UsageTally } from './usage-tally';

export interface CountOptions {
  readonly resolver: ResolverSpec;
  readonly metricRules: readonly MetricRule[];
  /** The S3 key (or file path) of the log, for the `key` resolver. */
  readonly objectKey: string;
  /**
   * Longer lines are counted as malformed without being held in memory. Measured in
   * UTF-16 code units of the decoded line (its CR included), as the counter always has:
   * a line of at most this many bytes is never too long.
   */
  readonly maxLineBytes?: number;
  /** What the poison error says the log lacks when no line had a usable layout. */
  readonly headerNeeded?: string;
  /** `js` scans lines without WebAssembly (the tests compare the two). */
  readonly scanner?: 'wasm' | 'js';
}

/** The result of counting one log: usage per account-day and what became of every line. */
export interface LogCount {
  readonly lines: LineCounts;
  readonly tally: UsageTally;
  /** The first few malformed lines with their reason, for the structured log. */
  readonly malformedSamples: readonly MalformedSample[];
  /**
   * The first few distinct keys (hosts) a host resolver could not attribute, when there
   * were any: what the resolver missed, for ingestion health.
   */
  readonly unattributedSamples?: readonly string[];
  /**
   * Why rows of a columnar log (Parquet) were counted as text lines instead of column by
   * column (the first reason; at most one per log): the line-shaped fallback, said once.
   */
  readonly readAsLines?: string;
}

export const DEFAULT_MAX_LINE_BYTES = 64 * 1024;
const MAX_SAMPLES = 5;
/**
 * IP-literal hosts keyed in the scanner's table (of its 4,096 keys): a log hit by many
 * addresses (scanners of IP ranges send Host: <ip>) must leave room for the accounts' labels.
 */
export const MAX_IP_KEYS = 1024;
/** The most bytes copied into the scanner at once (zlib hands over up to 1 MiB; the slice stays in the cache the scan reads from). */
export const SCAN_SLICE_BYTES = 256 * 1024;

/**
 * Counts a CloudFront standard log from its text, given as bytes in chunks of any size
 * ({@link write}, then {@link finish}). The `#Fields` directive decides the columns and
 * may change mid-file; each data line is counted once as counted, unattributed or
 * malformed, and attributed to its own `date`.
 *
 * It works on the bytes: a SIMD scan ({@link LineScanner}) finds each line and the few
 * columns read (date, time, sc-bytes and what the resolver and the metric rules ask
 * for), dates are compared as bytes, numbers parsed from bytes, and a column is decoded
 * as UTF-8 only when a rule needs its text. What it counts is exactly what decoding the
 * whole text, splitting it into lines and the lines on tabs gave
 * (test/unit/log-counter-oracle.property.test.ts holds it to that).
 *
 * Memory stays flat: one slice of text and at most one partial line are held; a line
 * that cannot fit within `maxLineBytes` is skipped to its end and counted as malformed.
 */
export class LogCounter {
  /** Complete once {@link finish} has run: lines the scanner sums or counts are added then. */
  readonly lines = emptyLineCounts();
  readonly tally: UsageTally;
  private readonly samples: MalformedSample[] = [];
  private readonly missed: string[] = [];
  /** IP-literal hosts keyed so far (at most {@link MAX_IP_KEYS}). */
  private ipKeys = 0;
  private readonly scanner: LineScanner;
  private readonly bytes: Uint8Array;
  private readonly words: Int32Array;
  private readonly floats: Float64Array;
  private readonly maxLineBytes: number;
  /** A partial line longer than this many bytes is longer than `maxLineBytes` characters too. */
  private readonly holdLimit: number;
  /** Bytes of a partial line held at the start of the scanner's text. */
  private held = 0;
  private skipping: StringDecoder | undefined;
  private skippedUnits = 0;
  /** The first bytes of the text until it is clear whether they are a byte order mark. */
  private opening: number[] | undefined = [];
  private ended = false;

  private layout: FieldLayout | undefined;
  private line: LogLine;
  private resolve: LineResolver = () => undefined;
  private evaluate: RuleEvaluator = () => undefined;
  /** The columns the scanner records, in slot order. */
  private columns: readonly number[] = [];
  /** Of those, the slots (0-based) of the columns the metric rules read, and of those the resolver reads. */
  private ruleSlots: readonly number[] = [];
  private resolverSlots: readonly number[] = [];
  /** The host resolvers' key, and the account of each key id the scanner knows. */
  private key: ResolverKey | undefined;
  private readonly keyAccounts: (string | undefined)[] = [];
  /** Per key id, its tally row on {@link keyRowsDay}. */
  private keyRows: (TallyRow | undefined)[] = [];
  private keyRowsDay = '';
  private width = 0;
  /** The column a line's day is read from, and its units per second (0: a `date`). */
  private dateAt = 0;
  private dayUnits = 0;
  /** The UTC day number of {@link lastGoodDay} when days come from timestamps. */
  private lastGoodDayNumber = Number.NaN;
  private timeAt = -1;
  /** The scanner slot (0-based) of the time column, -1 without one. */
  private timeSlot = -1;
  /** The UTC hour of the line {@link check} last passed, -1 when it has no time (a `date` with no `time` column). */
  private checkedHour = -1;
  private bytesAt = -1;
  private lastGoodDay = '';
  private readonly lastGoodDayBytes = new Uint8Array(10);
  /**
   * The two days the scanner compares dates with (its SAME_DAY and SECOND_DAY checks),
   * and the one of the last line it summed, which a third day leaves in place.
   */
  private readonly scanDays: [string, string] = ['', ''];
  private recentSlot: DaySlot = 0;
  private physicalLine = 0;
  private sawUsableLayout = false;
  private unusableLayoutReason = 'no #Fields header before this line';
  /** What a log must have to be counted, in the poison error of a log that lacks it. */
  private readonly headerNeeded: string;
  private readonly values: number[];
  /** The JSON template the scanner reads lines with, the layout it was set for, and whether it is on. */
  private jsonTemplate: JsonTemplate | undefined;
  private jsonLayout: FieldLayout | undefined;
  private jsonOn = false;
  private jsonEnd = 0;
  private readAsLinesReason: string | undefined;
  /** The column countings made for this count (Parquet), flushed when it finishes. */
  private readonly columnCountings: ColumnCounting[] = [];
  /** A key's summed hours as `UsageTally.addSlots` takes them (slot 0, lines of no time, stays zero). */
  private readonly summedSlots: Float64Array;

  constructor(private readonly options: CountOptions) {
    const names = metricNames(options.metricRules);
    this.tally = new UsageTally(names);
    this.summedSlots = new Float64Array((HOURS_PER_DAY + 1) * names.length);
    this.values = new Array<number>(names.length).fill(0);
    this.maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.holdLimit = 3 * this.maxLineBytes;
    this.scanner = LineScanner.acquire(this.holdLimit + SCAN_SLICE_BYTES + 1, options.scanner ?? 'wasm');
    this.bytes = this.scanner.bytes;
    this.words = this.scanner.words;
    this.floats = this.scanner.floats;
    this.line = new LogLine(this.bytes, 0);
    this.headerNeeded = options.headerNeeded ?? `no #Fields header with ${DAY_FIELDS}`;
  }

  /**
   * Sets the columns of the lines that follow, as a `#Fields` line would, for formats
   * whose field names come from elsewhere (a format's own header, configuration): no
   * line of the text is counted for it.
   */
  setFields(fields: readonly string[]): void {
    this.useLayout(new FieldLayout(fields));
  }

  /**
   * Of a log's fields, the ones counting reads (the day, time and sc-bytes, what the
   * resolver and the metric rules look at), in the log's order: a columnar reader reads
   * only these. A list without a day field gives its first field only, so each record
   * still makes a line (counted as malformed).
   */
  fieldsRead(names: readonly string[]): string[] {
    const layout = new FieldLayout(names);
    const daySource = layout.daySource;
    if (daySource === undefined) return names.slice(0, 1);
    layout.index(daySource.field);
    if (daySource.unitsPerSecond === 0) layout.index('time');
    layout.index('sc-bytes');
    compileResolver(this.options.resolver, layout, this.options.objectKey);
    resolverKey(this.options.resolver, layout);
    compileRules(this.options.metricRules, layout);
    return layout.columnsRead.map((column) => names[column]!);
  }

  /**
   * Reads JSON lines that fit `template` in the scanner itself ({@link countJson}): the
   * template's keys are the fields of the current layout (JsonLines set them). False,
   * and nothing read so, when they are not, or the scanner cannot.
   */
  useJsonTemplate(template: JsonTemplate | undefined): boolean {
    if (template === this.jsonTemplate && this.jsonLayout === this.layout) return this.jsonOn;
    this.jsonTemplate = template;
    this.jsonLayout = this.layout;
    this.jsonOn = false;
    if (template === undefined || this.layout === undefined || template.slots !== this.width) return false;
    const glues: Uint8Array[] = [];
    const slots: number[] = [];
    const covered = new Set<number>();
    let from = 0;
    for (let k = 0; k < template.keyEnds.length; k++) {
      const key = template.keyBytes.subarray(from, template.keyEnds[k]);
      from = template.keyEnds[k]!;
      glues.push(Uint8Array.from([...(k === 0 ? [0x7b, 0x22] : [0x22, 0x2c, 0x22]), ...key, 0x22, 0x3a, 0x22]));
      const field = template.slotOfKey[k]!;
      const slot = field === 0 ? 0 : this.columns.indexOf(field - 1) + 1;
      if (field !== 0 && slot === 0) return false;
      if (field !== 0) covered.add(field - 1);
      slots.push(slot);
    }
    // Every field must come from a key: the scanner writes no '-' for a missing one.
    if (covered.size !== this.width) return false;
    this.jsonOn = this.scanner.setJsonTemplate(glues, slots);
    return this.jsonOn;
  }

  /** The most bytes of JSON text {@link loadJson} takes at once. */
  get jsonCapacity(): number {
    return this.scanner.jsonTextCapacity;
  }

  /** Puts the whole JSON lines `bytes[from, end)` (at most {@link jsonCapacity}) where {@link countJson} reads them. */
  loadJson(bytes: Uint8Array, from: number, end: number): void {
    this.bytes.set(bytes.subarray(from, end), this.scanner.jsonTextAt);
    this.jsonEnd = this.scanner.jsonTextAt + end - from;
  }

  /**
   * Counts the loaded JSON lines from `offset` (a line start) that fit the template, as
   * the tab-separated lines of their values would be counted; returns the offset of the
   * first line that does not fit (the caller reads it), or the end.
   */
  countJson(offset: number): number {
    const { scanner, words, bytes } = this;
    const textAt = scanner.jsonTextAt;
    if (!this.jsonOn || this.held !== 0 || this.skipping !== undefined || this.ended) return offset;
    let pos = textAt + offset;
    const end = this.jsonEnd;
    while (pos < end) {
      this.scanOnLastGoodDay();
      const next = scanner.scanJson(pos, end, Math.min(this.maxLineBytes, 0x7fffffff));
      const records = words[0]!;
      const stride = scanner.stride;
      for (let r = 0, record = scanner.firstRecord; r < records; r++, record += stride) {
        this.physicalLine += words[record + 9]! + 1;
        const newline = words[record + 1]!;
        this.dataLine(record, bytes[newline - 1] === 13 /* CR */ ? newline - 1 : newline, newline);
      }
      this.afterScan();
      pos = next;
      if (scanner.jsonStatus === 1) break;
    }
    return pos - textAt;
  }

  /**
   * A way to count rows of the current fields column by column (see ColumnCounting),
   * with the counter's resolver, metric rules and checks; rows it cannot count go to
   * `asLines`, which must write them to this counter as their lines at once. Undefined
   * when the fields have no day field.
   */
  columnCounting(asLines: RowsAsLines): ColumnCounting | undefined {
    const { layout, key } = this;
    if (layout === undefined) return undefined;
    // A record has no byte order mark: nothing written after this is taken for one.
    if (this.opening !== undefined && this.opening.length === 0) this.opening = undefined;
    const { options } = this;
    const probe = (compile: (fields: FieldLayout) => unknown) => {
      const fields = new FieldLayout(layout.fields);
      compile(fields);
      return fields.columnsRead;
    };
    const scratch = new Uint8Array(2 * this.maxLineBytes + 2);
    const values = this.values;
    const counting = new ColumnCounting(
      {
        width: this.width,
        dateAt: this.dateAt,
        dayUnits: this.dayUnits,
        timeAt: this.timeAt,
        bytesAt: this.bytesAt,
        hostAt: key?.columns,
        hostKey: key?.kind,
        resolverColumns: key === undefined ? probe((fields) => compileResolver(options.resolver, fields, options.objectKey)) : [],
        ruleColumns: probe((fields) => compileRules(options.metricRules, fields)),
        evaluate: options.metricRules.length === 0 ? undefined : this.evaluate,
        metrics: values.length,
        resolve: this.resolve,
        line: new LogLine(scratch, this.width),
        scratch,
        maxLineBytes: this.maxLineBytes,
        advance: (rows) => {
          this.physicalLine += rows;
          this.lines.read += rows;
        },
        add: (account, day, hour, counts) => {
          if (account === undefined) this.lines.unattributed += counts[0]!;
          else this.lines.counted += counts[0]!;
          const row = this.tally.row(account ?? UNATTRIBUTED, day);
          // Rows of no known time (a date and no time column) go to the day alone, as their lines do.
          if (hour < 0) this.tally.addTo(row, counts);
          else this.tally.addAt(row, hour, counts);
        },
        addSlots: (account, day, slots, at) => {
          const requests = this.tally.addSlots(this.tally.row(account ?? UNATTRIBUTED, day), slots, at);
          if (account === undefined) this.lines.unattributed += requests;
          else this.lines.counted += requests;
        },
        missed: (host) => {
          if (this.missed.length < MAX_SAMPLES && !this.missed.includes(host)) this.missed.push(host);
        },
      },
      asLines,
    );
    // Its sums reach the tally when the count finishes (ColumnCounting.flush).
    this.columnCountings.push(counting);
    return counting;
  }

  /** Rows of a columnar log are being counted as lines, because of `reason` (the first reason is kept). */
  readAsLines(reason: string): void {
    this.readAsLinesReason ??= reason;
  }

  /**
   * Counts one record that could not be made a line (a JSON line that is no object, a
   * Parquet row of the wrong shape) as read and malformed, in the place of a line.
   */
  malformedRecord(reason: string): void {
    this.physicalLine++;
    this.lines.read++;
    this.malformed(reason);
  }

  /** The next bytes of the log's text. */
  write(chunk: Uint8Array): void {
    if (this.ended) throw new Error('the log was finished');
    let at = 0;
    if (this.opening !== undefined) {
      at = this.openingBytes(chunk);
      if (this.opening !== undefined) return;
    }
    this.take(chunk, at);
  }

  /**
   * Ends the log. A log with data lines but no usable `#Fields` header anywhere is
   * not a CloudFront log: that is a poison object, not a pile of malformed lines.
   */
  finish(objectName: string): LogCount {
    if (!this.ended) this.end();
    for (const counting of this.columnCountings) counting.flush();
    this.addSums(0);
    this.addSums(1);
    const malformed = this.scanner.takeMalformed();
    this.lines.read += malformed;
    this.lines.malformed += malformed;
    // Everything the scanner holds is read: the next count may have it.
    this.scanner.release();
    if (this.lines.read > 0 && !this.sawUsableLayout) {
      throw new PoisonObjectError(
        objectName,
        `not a CloudFront log: ${plural(this.lines.read, 'data line')} and ${this.headerNeeded}`,
      );
    }
    return {
      lines: this.lines,
      tally: this.tally,
      malformedSamples: this.samples,
      ...(this.missed.length === 0 ? {} : { unattributedSamples: this.missed }),
      ...(this.readAsLinesReason === undefined ? {} : { readAsLines: this.readAsLinesReason }),
    };
  }

  /** The text ended: its last line needs no line break. */
  private end(): void {
    if (this.opening !== undefined) {
      const opening = Uint8Array.from(this.opening);
      this.opening = undefined;
      this.take(opening, 0);
    }
    this.ended = true;
    if (this.skipping !== undefined) {
      this.physicalLine++;
      this.overlong(this.skippedUnits + this.skipping.end().length);
      this.skipping = undefined;
    } else if (this.held > 0) {
      const end = this.scanner.textAt + this.held;
      this.bytes[end] = 10;
      this.held = 0;
      this.lineEndsAt(this.scanner.textAt, end + 1, end);
    }
  }

  /**
   * Holds back the first bytes until they show whether the text opens with a UTF-8
   * byte order mark (EF BB BF), which is dropped. Returns where the rest of `chunk` starts.
   */
  private openingBytes(chunk: Uint8Array): number {
    const opening = this.opening!;
    let at = 0;
    while (opening.length < 3 && at < chunk.length) opening.push(chunk[at++]!);
    const bom = [0xef, 0xbb, 0xbf];
    if (opening.length < 3 && opening.every((byte, i) => byte === bom[i])) return at;
    this.opening = undefined;
    if (opening.length === 3 && opening.every((byte, i) => byte === bom[i])) return at;
    this.take(Uint8Array.from(opening), 0);
    return at;
  }

  /** Copies `chunk[at..]` behind the partial line and counts every line it completes. */
  private take(chunk: Uint8Array, at: number): void {
    const bytes = this.bytes;
    const textAt = this.scanner.textAt;
    while (at < chunk.length) {
      if (this.skipping !== undefined) {
        at = this.skip(chunk, at);
        continue;
      }
      const from = textAt + this.held;
      const count = Math.min(SCAN_SLICE_BYTES, chunk.length - at);
      // A view made here, not chunk.subarray: a Buffer's subarray is a Buffer (more work per call).
      bytes.set(at === 0 && count === chunk.length ? chunk : new Uint8Array(chunk.buffer, chunk.byteOffset + at, count), from);
      at += count;
      const filled = from + count;
      const last = bytes.lastIndexOf(10, filled - 1);
      if (last >= from) {
        this.countLines(textAt, last + 1);
        bytes.copyWithin(textAt, last + 1, filled);
        this.held = filled - last - 1;
      } else {
        this.held = filled - textAt;
      }
      if (this.held > this.holdLimit) {
        // Too long for any reading of the limit: count its characters, keep none of it.
        this.skipping = new StringDecoder('utf8');
        this.skippedUnits = this.skipping.write(Buffer.from(bytes.buffer, bytes.byteOffset + textAt, this.held)).length;
        this.held = 0;
      }
    }
  }

  /** Passes over the bytes of an overlong line up to its end; returns where the next line starts. */
  private skip(chunk: Uint8Array, at: number): number {
    const decoder = this.skipping!;
    const newline = chunk.indexOf(10, at);
    const view = (end: number) => Buffer.from(chunk.buffer, chunk.byteOffset + at, end - at);
    if (newline === -1) {
      this.skippedUnits += decoder.write(view(chunk.length)).length;
      return chunk.length;
    }
    const units = this.skippedUnits + decoder.write(view(newline)).length + decoder.end().length;
    this.skipping = undefined;
    this.skippedUnits = 0;
    this.physicalLine++;
    this.overlong(units);
    return newline + 1;
  }

  /**
   * Before a scan: the day of the latest good line is one of the scanner's two days. A
   * new one takes the place of the day the scanner summed a line on least recently: a
   * log near midnight mixes two days, and a log of many hours moves on to the next.
   */
  private scanOnLastGoodDay(): void {
    const day = this.lastGoodDay;
    const days = this.scanDays;
    if (day === days[0] || day === days[1]) return;
    const slot: DaySlot = days[0] === '' ? 0 : days[1] === '' ? 1 : this.recentSlot === 0 ? 1 : 0;
    // The scanner's sums are of lines on the day it compared with.
    this.addSums(slot);
    this.scanner.setDay(day, slot);
    days[slot] = day;
    this.recentSlot = slot;
  }

  /**
   * After a scan's records: the lines it summed after its last record were good lines,
   * the last on the day the scanner says, so that is the day of the latest good line.
   * Without this, a stray line of another day would stay the latest good line's day and
   * take the place of a day the lines after it are on.
   */
  private afterScan(): void {
    const { scanner } = this;
    const tail = scanner.summedAfterLastRecord;
    this.physicalLine += tail;
    const slot = scanner.lastSummedSlot;
    if (slot === -1) return;
    this.recentSlot = slot;
    const day = this.scanDays[slot];
    if (tail === 0 || this.lastGoodDay === day) return;
    this.lastGoodDay = day;
    this.lastGoodDayNumber = Number.NaN;
    for (let i = 0; i < 10; i++) this.lastGoodDayBytes[i] = day.charCodeAt(i);
  }

  /** Counts the whole lines in `[from, end)` of the scanner's text (`end` just past a '\n'). */
  private countLines(from: number, end: number): void {
    const { scanner, words, bytes, maxLineBytes } = this;
    let pos = from;
    while (pos < end) {
      this.scanOnLastGoodDay();
      const next = scanner.scan(pos, end);
      const records = words[0]!;
      const stride = scanner.stride;
      for (let r = 0, record = scanner.firstRecord; r < records; r++, record += stride) {
        // The lines the scanner summed before this one, and this one.
        this.physicalLine += words[record + 9]! + 1;
        const start = words[record]!;
        const newline = words[record + 1]!;
        if (newline - start > maxLineBytes && this.tooLong(start, newline)) continue;
        const contentEnd = newline > start && bytes[newline - 1] === 13 /* CR */ ? newline - 1 : newline;
        if (contentEnd !== start) this.dataLine(record, contentEnd, newline);
      }
      this.afterScan();
      pos = next;
      if (pos < end && bytes[pos] === 35 /* # */) {
        const newline = bytes.indexOf(10, pos);
        this.lineEndsAt(pos, newline + 1, newline);
        pos = newline + 1;
      }
    }
  }

  /** A line the scanner did not record (a directive, the last line): scan it alone. */
  private lineEndsAt(start: number, end: number, newline: number): void {
    if (this.bytes[start] === 35 /* # */) {
      this.physicalLine++;
      if (this.tooLong(start, newline)) return;
      const contentEnd = newline > start && this.bytes[newline - 1] === 13 ? newline - 1 : newline;
      this.directive(this.line.decode(start, contentEnd));
      return;
    }
    this.countLines(start, end);
  }

  /** Whether the line is over the limit (in UTF-16 units); counts it as malformed if so. */
  private tooLong(start: number, newline: number): boolean {
    if (newline - start <= this.maxLineBytes) return false;
    const units = this.line.decode(start, newline).length;
    if (units <= this.maxLineBytes) return false;
    this.overlong(units);
    return true;
  }

  /** A line that was too long to keep (`units` UTF-16 code units): counted as read and malformed. */
  private overlong(units: number): void {
    this.lines.read++;
    this.malformed(`line of ${units} bytes is longer than ${this.maxLineBytes}`);
  }

  private directive(text: string): void {
    const layout = parseFieldsDirective(text);
    if (layout !== undefined) this.useLayout(layout);
  }

  private useLayout(layout: FieldLayout): void {
    // Lines already written were counted with the layout before.
    const daySource = layout.daySource;
    if (daySource === undefined) {
      this.layout = undefined;
      this.unusableLayoutReason = `the field list has no ${DAY_FIELDS.replace(/^an? /, '')}`;
      this.columns = [];
      this.scanner.setLayout(NO_LAYOUT);
      this.scanner.setCountingMalformed(false);
      return;
    }
    this.layout = layout;
    this.sawUsableLayout = true;
    this.resolve = compileResolver(this.options.resolver, layout, this.options.objectKey);
    this.evaluate = compileRules(this.options.metricRules, layout);
    this.width = layout.width;
    this.dateAt = layout.index(daySource.field)!;
    this.dayUnits = daySource.unitsPerSecond;
    // A timestamp holds the time too.
    this.timeAt = this.dayUnits === 0 ? (layout.index('time') ?? -1) : -1;
    this.bytesAt = layout.index('sc-bytes') ?? -1;
    const key = resolverKey(this.options.resolver, layout);
    this.key = key;
    const columns = layout.columnsRead;
    this.columns = columns;
    // Rules read the method, the stem and the status; the host resolvers only the hosts.
    const own = new Set([this.dateAt, this.timeAt, this.bytesAt]);
    const hosts = new Set<number>(key?.columns ?? []);
    this.ruleSlots = columns.flatMap((column, slot) => (own.has(column) || hosts.has(column) ? [] : [slot]));
    this.resolverSlots = columns.flatMap((column, slot) => (hosts.has(column) ? [slot] : []));
    this.timeSlot = this.timeAt === -1 ? -1 : columns.indexOf(this.timeAt);
    this.line = new LogLine(this.bytes, layout.width);
    this.scanner.setLayout({
      columns,
      width: layout.width,
      date: this.dateAt,
      time: this.timeAt,
      bytes: this.bytesAt,
      ...(key === undefined ? {} : { key: { kind: key.kind, columns: key.columns } }),
    });
    // With no metric rules to run, a line of a known host on the day needs no JavaScript
    // (the scanner sums it in its hour; with no time column, lines are not summed).
    this.scanner.setSumming(key !== undefined && this.options.metricRules.length === 0, this.maxLineBytes);
    // A line of a new day makes it one of the scanner's days before the lines after it
    // (dates only: the scanner compares text, and a timestamp is never a day).
    this.scanner.setStopAtNewDay(this.dayUnits === 0);
    // Malformed lines need JavaScript only while they are sampled.
    this.scanner.setCountingMalformed(this.samples.length >= MAX_SAMPLES);
  }

  /** A data line: `record` is its scanner record, `end` its end without a CR. */
  private dataLine(record: number, end: number, newline: number): void {
    this.lines.read++;
    if (this.layout === undefined) return this.malformed(this.unusableLayoutReason);
    const { words, line } = this;
    const fields = words[record + 2]!;
    if (fields < this.width) return this.malformed(`${fields} fields where #Fields names ${this.width}`);
    line.next();
    const checks = words[record + 3]!;
    let day: string;
    let sent: number;
    let hour: number;
    if (checks === ALL_CHECKS || checks === ALL_CHECKS_SECOND_DAY) {
      // The scanner found one of its days, a time and a byte count.
      this.place(record, newline, end, this.ruleSlots);
      day = this.scanDays[checks === ALL_CHECKS ? 0 : 1];
      sent = this.floats[(record >> 1) + 2]!;
      hour = this.timeSlot === -1 ? -1 : hourOfTime(this.bytes, words[record + 10 + 2 * this.timeSlot]!);
    } else {
      this.place(record, newline, end, undefined);
      const checked = this.check(checks);
      if (checked === undefined) return;
      day = checked;
      hour = this.checkedHour;
      sent = (checks & BYTES_OK) !== 0 ? this.floats[(record >> 1) + 2]! : parseByteCountBytes(this.bytes, line.starts[this.bytesAt]!, line.ends[this.bytesAt]!);
    }

    const values = this.values;
    for (let i = 2; i < values.length; i++) values[i] = 0;
    values[0] = 1;
    values[1] = sent;
    this.evaluate(line, sent, values);
    const id = this.key === undefined ? KEY_NONE : this.words[record + 6]!;
    const account = id >= 0 ? this.keyAccounts[id] : this.key === undefined ? this.resolve(line) : this.keyed(record, newline, end);
    if (account === undefined) this.lines.unattributed++;
    else this.lines.counted++;
    let row: TallyRow;
    if (id < 0) row = this.tally.row(account ?? UNATTRIBUTED, day);
    else {
      // Lines of a key on one day go to one row: found once, not per line.
      if (day !== this.keyRowsDay) {
        this.keyRows = [];
        this.keyRowsDay = day;
      }
      row = this.keyRows[id] ?? (this.keyRows[id] = this.tally.row(account ?? UNATTRIBUTED, day));
    }
    // A line of no time (a `date` layout with no `time` column) is in its day only.
    if (hour === -1) this.tally.addTo(row, values);
    else this.tally.addAt(row, hour, values);
  }

  /**
   * Adds what the scanner summed on the day of `slot` (lines of known keys, see
   * `LineScanner.setSumming`) to the tally and the line counts: a key's 24 hours in one
   * `UsageTally.addSlots` call. A loop over every key and hour here, with the tally's row
   * and `addAt` inlined, had V8 spend 13-18 ms optimizing it on a helper thread in every
   * fresh process, CPU time for about 27,000 cells of the 340 MB bench log (bench item 1).
   */
  private addSums(slot: DaySlot): void {
    const { scanner, keyAccounts, lines, tally } = this;
    const day = this.scanDays[slot];
    const slots = this.summedSlots;
    for (let id = 0; id < keyAccounts.length; id++) {
      const count = scanner.hourSlots(id, slot, slots, tally.metricNames.length);
      if (count === 0) continue;
      const account = keyAccounts[id];
      lines.read += count;
      if (account === undefined) lines.unattributed += count;
      else lines.counted += count;
      tally.addSlots(tally.row(account ?? UNATTRIBUTED, day), slots, 0);
    }
    scanner.clearSums(keyAccounts.length, slot);
  }

  /** The account of a line whose key the scanner did not know (the host resolvers). */
  private keyed(record: number, newline: number, end: number): string | undefined {
    const id = this.words[record + 6]!;
    if (id === KEY_NO_HOST) return undefined;
    if (id === KEY_UNKNOWN) {
      const start = this.words[record + 7]!;
      const stop = this.words[record + 8]!;
      const known = this.scanner.keyId(start, stop, this.keyAccounts.length);
      if (known >= 0 && known < this.keyAccounts.length) return this.keyAccounts[known];
      const text = this.line.decode(start, stop);
      const account = this.key!.accountOf(text);
      if (known === this.keyAccounts.length) this.keyAccounts.push(account);
      // A key is new here once (the scanner knows it afterwards): each missed host is sampled once.
      if (account === undefined && this.missed.length < MAX_SAMPLES && !this.missed.includes(text)) this.missed.push(text);
      return account;
    }
    if (id === KEY_IP_LITERAL) {
      // An IP literal or a CloudFront default domain, of no account: keyed by the whole host
      // from now on (the scanner sums its lines), sampled once like any host missed.
      const start = this.words[record + 7]!;
      const stop = this.words[record + 8]!;
      if (this.ipKeys < MAX_IP_KEYS) {
        const known = this.scanner.keyId(start, stop, this.keyAccounts.length);
        if (known >= 0 && known < this.keyAccounts.length) return undefined;
        if (known === this.keyAccounts.length) {
          this.keyAccounts.push(undefined);
          this.ipKeys++;
        }
      }
      if (this.missed.length < MAX_SAMPLES) {
        const text = this.line.decode(start, stop);
        if (!this.missed.includes(text)) this.missed.push(text);
      }
      return undefined;
    }
    this.place(record, newline, end, this.resolverSlots);
    const account = this.resolve(this.line);
    // A host the scanner does not key (one in the last column of a CRLF line): sampled from the resolver's column.
    if (account === undefined && this.missed.length < MAX_SAMPLES) {
      // The column the resolver read: x-host-header when present, else cs(Host).
      const column = this.key!.columns.find((candidate) => candidate >= 0 && this.line.present(candidate));
      const text = column === undefined ? undefined : this.line.field(column);
      if (text !== undefined && !this.missed.includes(text)) this.missed.push(text);
    }
    return account;
  }

  /** Sets where the columns of `slots` (every recorded column when undefined) start and end. */
  private place(record: number, newline: number, end: number, slots: readonly number[] | undefined): void {
    const { words, columns } = this;
    const { starts, ends } = this.line;
    const count = slots === undefined ? columns.length : slots.length;
    for (let i = 0; i < count; i++) {
      const slot = slots === undefined ? i : slots[i]!;
      const column = columns[slot]!;
      starts[column] = words[record + 10 + 2 * slot]!;
      const columnEnd = words[record + 11 + 2 * slot]!;
      // The last column of a CRLF line ends before its CR.
      ends[column] = columnEnd === newline ? end : columnEnd;
    }
  }

  /**
   * The date, time and sc-bytes checks the scanner did not pass, in full: returns the
   * line's day, or undefined when the line is malformed (and counted so).
   */
  private check(checks: number): string | undefined {
    const { bytes, line } = this;
    const { starts, ends } = line;
    let day = this.lastGoodDay;
    if ((checks & SAME_DAY) === 0 && this.dayUnits !== 0) {
      const millis = epochMillisBytes(bytes, starts[this.dateAt]!, ends[this.dateAt]!, this.dayUnits);
      if (millis < 0) return this.malformedAs(`timestamp "${preview(line.field(this.dateAt))}" is not an epoch time`);
      this.checkedHour = hourOfEpochMillis(millis);
      const number = epochDayNumber(millis);
      if (number !== this.lastGoodDayNumber) {
        // A new day is checked once; a day outside stays new, so each of its lines is checked.
        if (number < SUPPORTED_DAY_NUMBERS.first || number > SUPPORTED_DAY_NUMBERS.last) {
          return this.malformedAs(`timestamp "${preview(line.field(this.dateAt))}" is on ${dayOfNumber(number)}, ${OUTSIDE_DAYS}`);
        }
        // The scanner compares dates as text, never timestamps: the day is told here.
        this.lastGoodDayNumber = number;
        this.lastGoodDay = dayOfNumber(number);
        this.lastGoodDayBytes.fill(0);
      }
      day = this.lastGoodDay;
    } else if ((checks & SECOND_DAY) !== 0) {
      day = this.scanDays[1];
    } else if ((checks & SAME_DAY) === 0) {
      const dateStart = starts[this.dateAt]!;
      const dateEnd = ends[this.dateAt]!;
      // Consecutive lines nearly always share a day: compare bytes, decode only when it changes.
      if (day.length === 0 || dateEnd - dateStart !== 10 || !sameBytes(bytes, dateStart, this.lastGoodDayBytes)) {
        day = line.decode(dateStart, dateEnd);
        if (!isValidDay(day)) return this.malformedAs(`date "${preview(day)}" is not a calendar day`);
        // Only a supported day becomes the scanner's (scanOnLastGoodDay): lines outside never reach the tally.
        if (!isSupportedDay(day)) return this.malformedAs(`date "${day}" is ${OUTSIDE_DAYS}`);
        this.lastGoodDay = day;
        this.lastGoodDayBytes.set(bytes.subarray(dateStart, dateEnd));
      }
    } else {
      day = this.scanDays[0];
    }
    const timeAt = this.timeAt;
    if ((checks & TIME_OK) === 0 && timeAt !== -1 && !isValidTimeBytes(bytes, starts[timeAt]!, ends[timeAt]!)) {
      return this.malformedAs(`time "${preview(line.field(timeAt))}" is not HH:MM:SS`);
    }
    // A timestamp's hour was taken above; a date's is its time's, or none without a time column.
    if (this.dayUnits === 0) this.checkedHour = timeAt === -1 ? -1 : hourOfTime(bytes, starts[timeAt]!);
    const bytesAt = this.bytesAt;
    if ((checks & BYTES_OK) === 0 && bytesAt !== -1 && parseByteCountBytes(bytes, starts[bytesAt]!, ends[bytesAt]!) < 0) {
      return this.malformedAs(`sc-bytes "${preview(line.field(bytesAt))}" is not a non-negative integer`);
    }
    return day;
  }

  private malformedAs(reason: string): undefined {
    this.malformed(reason);
    return undefined;
  }

  private malformed(reason: string): void {
    this.lines.malformed++;
    if (this.samples.length >= MAX_SAMPLES) return;
    this.samples.push({ line: this.physicalLine, reason });
    if (this.samples.length === MAX_SAMPLES && this.layout !== undefined) this.scanner.setCountingMalformed(true);
  }
}

/**
 * Counts a log from its text (already decompressed: see `logText` in
 * src/adapters/logs/log-text.ts), chunk by chunk as it arrives.
 */
export async function countLog(text: AsyncIterable<Uint8Array>, options: CountOptions, objectName: string): Promise<LogCount> {
  const counter = new LogCounter(options);
  for await (const chunk of text) counter.write(chunk);
  return counter.finish(objectName);
}

/**
 * Why a line of a real day outside SUPPORTED_DAYS is malformed: no read, close or bill
 * can name that day (they refuse it), so counting it would lose it unseen.
 */
const OUTSIDE_DAYS = `outside the days Tally supports, ${SUPPORTED_DAYS_TEXT}`;

/** The fields a day can come from, for errors. */
const DAY_FIELDS = 'a date, timestamp(ms) or timestamp field';

/** The hour of a checked `HH:MM:SS` time starting at `at`: its first two digits. */
function hourOfTime(bytes: Uint8Array, at: number): number {
  return (bytes[at]! - 48) * 10 + (bytes[at + 1]! - 48);
}

/** The UTC hour (0..23) of a time in epoch milliseconds (not negative). */
function hourOfEpochMillis(millis: number): number {
  return Math.floor((millis % MS_PER_DAY) / MS_PER_HOUR);
}

const MS_PER_HOUR = 3_600_000;
const MS_PER_DAY = 24 * MS_PER_HOUR;

function sameBytes(bytes: Uint8Array, at: number, expected: Uint8Array): boolean {
  for (let i = 0; i < expected.length; i++) if (bytes[at + i] !== expected[i]) return false;
  return true;
}

function preview(value: string): string {
  return value.length > 40 ? `${value.slice(0, 40)}...` : value;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
