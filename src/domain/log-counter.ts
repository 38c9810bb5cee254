import { StringDecoder } from 'node:string_decoder';
import { createGunzip } from 'node:zlib';
import type { Writable } from 'node:stream';
import { UNATTRIBUTED } from './account-id';
import { compileResolver, type LineResolver, type ResolverSpec } from './account-resolver';
import { FieldLayout, isUsableLayout, isValidTimeAt, parseByteCountAt, parseFieldsDirective } from './cloudfront-log';
import { isValidDay } from './days';
import { PoisonObjectError } from './errors';
import { compileRules, metricNames, type MetricRule, type RuleEvaluator } from './metric-rules';
import { emptyLineCounts, type LineCounts, type MalformedSample, UsageTally } from './usage-tally';

export interface CountOptions {
  readonly resolver: ResolverSpec;
  readonly metricRules: readonly MetricRule[];
  /** The S3 key (or file path) of the log, for the `key` resolver. */
  readonly objectKey: string;
  /** Longer lines are counted as malformed without being held in memory. */
  readonly maxLineBytes?: number;
}

/** The result of counting one log: usage per account-day and what became of every line. */
export interface LogCount {
  readonly lines: LineCounts;
  readonly tally: UsageTally;
  /** The first few malformed lines with their reason, for the structured log. */
  readonly malformedSamples: readonly MalformedSample[];
}

export const DEFAULT_MAX_LINE_BYTES = 64 * 1024;
const MAX_SAMPLES = 5;
const BOM = '\uFEFF';

/**
 * Counts a CloudFront standard log one line at a time. The `#Fields` directive decides
 * the columns and may change mid-file; each data line is counted once as counted,
 * unattributed or malformed, and attributed to its own `date`.
 */
export class LogCounter {
  readonly lines = emptyLineCounts();
  readonly tally: UsageTally;
  private readonly samples: MalformedSample[] = [];
  private layout: FieldLayout | undefined;
  private resolve: LineResolver = () => undefined;
  private evaluate: RuleEvaluator = () => undefined;
  private dateAt = 0;
  private timeAt: number | undefined;
  private bytesAt: number | undefined;
  private lastGoodDay = '';
  private physicalLine = 0;
  private sawUsableLayout = false;
  private unusableLayoutReason = 'no #Fields header before this line';
  private readonly values: number[];
  /**
   * Per column: make it a string for the resolver and the metric rules (the columns
   * they looked up when compiled, see {@link FieldLayout.columnsRead}). The counter
   * reads date, time and sc-bytes in place from their offsets.
   */
  private wanted: boolean[] = [];
  /** Reused for every line: only the wanted columns are filled in. */
  private fields: string[] = [];
  private width = 0;
  /** The columns a line must be walked to, ascending: the wanted ones and the counter's date, time and sc-bytes. */
  private needed: number[] = [];
  /**
   * Tabs a line still owes after the last needed column to have `width` fields, and
   * a sticky regex that passes them in one call when there are many (see {@link tabSkipper}).
   */
  private tailTabs = 0;
  private tail: RegExp | undefined;
  /** Where each needed column of the current line starts and ends. */
  private starts = new Int32Array(0);
  private ends = new Int32Array(0);

  constructor(private readonly options: CountOptions) {
    const names = metricNames(options.metricRules);
    this.tally = new UsageTally(names);
    this.values = new Array<number>(names.length).fill(0);
  }

  /** One line without its line break (a trailing CR is tolerated). */
  accept(rawLine: string): void {
    this.physicalLine++;
    const line = rawLine.endsWith('\r') ? rawLine.slice(0, -1) : rawLine;
    if (line.length === 0) return;
    if (line.charCodeAt(0) === 35 /* # */) {
      this.directive(line);
      return;
    }
    this.dataLine(line);
  }

  /** A line that was too long to keep: counted as read and malformed. */
  acceptOverlong(bytes: number): void {
    this.physicalLine++;
    this.lines.read++;
    this.malformed(`line of ${bytes} bytes is longer than ${this.options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES}`);
  }

  /**
   * Ends the log. A log with data lines but no usable `#Fields` header anywhere is
   * not a CloudFront log: that is a poison object, not a pile of malformed lines.
   */
  finish(objectName: string): LogCount {
    if (this.lines.read > 0 && !this.sawUsableLayout) {
      throw new PoisonObjectError(
        objectName,
        `not a CloudFront standard log: ${this.lines.read} data lines and no #Fields header with a date field`,
      );
    }
    return { lines: this.lines, tally: this.tally, malformedSamples: this.samples };
  }

  private directive(line: string): void {
    const layout = parseFieldsDirective(line);
    if (layout === undefined) return;
    if (!isUsableLayout(layout)) {
      this.layout = undefined;
      this.unusableLayoutReason = 'the #Fields header has no date field';
      return;
    }
    this.layout = layout;
    this.sawUsableLayout = true;
    this.resolve = compileResolver(this.options.resolver, layout, this.options.objectKey);
    this.evaluate = compileRules(this.options.metricRules, layout);
    this.wanted = new Array<boolean>(layout.width).fill(false);
    for (const column of layout.columnsRead) this.wanted[column] = true;
    this.fields = new Array<string>(layout.width).fill('');
    this.width = layout.width;
    this.starts = new Int32Array(layout.width);
    this.ends = new Int32Array(layout.width);
    this.dateAt = layout.index('date')!;
    this.timeAt = layout.index('time');
    this.bytesAt = layout.index('sc-bytes');
    this.needed = [...layout.columnsRead];
    const last = this.needed[this.needed.length - 1]!;
    this.tailTabs = last === layout.width - 1 ? 0 : layout.width - 2 - last;
    this.tail = tabSkipper(this.tailTabs);
  }

  private dataLine(line: string): void {
    this.lines.read++;
    const layout = this.layout;
    if (layout === undefined) return this.malformed(this.unusableLayoutReason);
    const width = this.width;
    const found = this.splitWanted(line, width);
    if (found < width) return this.malformed(`${found} fields where #Fields names ${width}`);
    const fields = this.fields;
    const { starts, ends } = this;
    let day = this.lastGoodDay;
    const dateStart = starts[this.dateAt]!;
    const dateEnd = ends[this.dateAt]!;
    // Consecutive lines nearly always share a day: compare in place, slice only when it changes.
    if (day.length === 0 || dateEnd - dateStart !== day.length || !line.startsWith(day, dateStart)) {
      day = line.slice(dateStart, dateEnd);
      if (!isValidDay(day)) return this.malformed(`date "${preview(day)}" is not a calendar day`);
      this.lastGoodDay = day;
    }
    const timeAt = this.timeAt;
    if (timeAt !== undefined && !isValidTimeAt(line, starts[timeAt]!, ends[timeAt]!)) {
      return this.malformed(`time "${preview(line.slice(starts[timeAt], ends[timeAt]))}" is not HH:MM:SS`);
    }
    const bytesAt = this.bytesAt;
    const bytes = bytesAt === undefined ? 0 : parseByteCountAt(line, starts[bytesAt]!, ends[bytesAt]!);
    if (bytes < 0) {
      return this.malformed(`sc-bytes "${preview(line.slice(starts[bytesAt!], ends[bytesAt!]))}" is not a non-negative integer`);
    }

    const values = this.values;
    for (let i = 2; i < values.length; i++) values[i] = 0;
    values[0] = 1;
    values[1] = bytes;
    this.evaluate(fields, bytes, values);
    const account = this.resolve(fields);
    if (account === undefined) {
      this.lines.unattributed++;
      this.tally.add(UNATTRIBUTED, day, values);
    } else {
      this.lines.counted++;
      this.tally.add(account, day, values);
    }
  }

  /**
   * Does what `line.split('\t')` did for the columns anyone reads, without making a
   * string of every other column (most of a 33-field line): walks to each needed
   * column, records where it starts and ends, fills `this.fields` for the wanted ones,
   * and checks that the line has at least `width` fields. Returns `width` then, else
   * the line's exact field count. Extra trailing fields are ignored, as before.
   */
  private splitWanted(line: string, width: number): number {
    const { needed, wanted, fields, starts, ends } = this;
    let position = 0;
    let column = 0;
    for (let i = 0; i < needed.length; i++) {
      const target = needed[i]!;
      // indexOf is a V8 builtin that scans far faster than a charCodeAt loop, and
      // long fields (user agent, referer, query) sit between the columns read.
      for (; column < target; column++) {
        const tab = line.indexOf('\t', position);
        if (tab === -1) return fieldCount(line);
        position = tab + 1;
      }
      const tab = line.indexOf('\t', position);
      if (tab === -1 && target < width - 1) return fieldCount(line);
      const end = tab === -1 ? line.length : tab;
      starts[target] = position;
      ends[target] = end;
      if (wanted[target]) fields[target] = line.slice(position, end);
      position = end + 1;
      column = target + 1;
    }
    if (this.tailTabs === 0) return width;
    const tail = this.tail;
    if (tail !== undefined) {
      tail.lastIndex = position;
      return tail.test(line) ? width : fieldCount(line);
    }
    for (let owed = this.tailTabs; owed > 0; owed--) {
      const tab = line.indexOf('\t', position);
      if (tab === -1) return fieldCount(line);
      position = tab + 1;
    }
    return width;
  }

  private malformed(reason: string): void {
    this.lines.malformed++;
    if (this.samples.length < MAX_SAMPLES) this.samples.push({ line: this.physicalLine, reason });
  }
}

/**
 * From this many tabs on, one sticky regex call passes them faster than indexOf per
 * tab: the trailing CloudFront fields nobody reads are short (protocol, bytes, timings).
 */
const SKIP_BY_REGEX_FROM = 6;
const skippers = new Map<number, RegExp>();

/** A sticky regex that passes `columns` tab-ended columns in one call, or undefined for few. */
function tabSkipper(columns: number): RegExp | undefined {
  if (columns < SKIP_BY_REGEX_FROM) return undefined;
  let regex = skippers.get(columns);
  if (regex === undefined) {
    regex = new RegExp(`(?:[^\\t]*\\t){${columns}}`, 'y');
    skippers.set(columns, regex);
  }
  return regex;
}

/** Fields of a line as `split('\t')` counts them. */
function fieldCount(line: string): number {
  let count = 1;
  for (let tab = line.indexOf('\t'); tab !== -1; tab = line.indexOf('\t', tab + 1)) count++;
  return count;
}

function preview(value: string): string {
  return value.length > 40 ? `${value.slice(0, 40)}...` : value;
}

/**
 * Splits decoded text into lines across chunk boundaries. A line longer than
 * `maxLineBytes` is not kept: its bytes are skipped up to the next line break and it
 * is reported as overlong, so one bad line cannot exhaust memory.
 */
export class LineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  private skipping = false;
  private skippedBytes = 0;
  private started = false;

  constructor(
    private readonly counter: Pick<LogCounter, 'accept' | 'acceptOverlong'>,
    private readonly maxLineBytes = DEFAULT_MAX_LINE_BYTES,
  ) {}

  write(chunk: Uint8Array): void {
    let text = this.decoder.write(chunk as Buffer);
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.startsWith(BOM)) text = text.slice(1);
    }
    this.consume(text);
  }

  end(): void {
    this.consume(this.decoder.end());
    if (this.skipping) this.counter.acceptOverlong(this.skippedBytes);
    else if (this.pending.length > 0) this.counter.accept(this.pending);
    this.pending = '';
    this.skipping = false;
  }

  private consume(text: string): void {
    let start = 0;
    for (;;) {
      const newline = text.indexOf('\n', start);
      if (newline === -1) break;
      if (this.skipping) {
        this.counter.acceptOverlong(this.skippedBytes + newline - start);
        this.skipping = false;
        this.skippedBytes = 0;
      } else if (this.pending.length > 0) {
        const line = this.pending + text.slice(start, newline);
        this.pending = '';
        this.emit(line);
      } else {
        this.emit(text.slice(start, newline));
      }
      start = newline + 1;
    }
    const rest = text.length - start;
    if (this.skipping) {
      this.skippedBytes += rest;
    } else if (rest > 0) {
      this.pending += start === 0 ? text : text.slice(start);
      if (this.pending.length > this.maxLineBytes) {
        this.skipping = true;
        this.skippedBytes = this.pending.length;
        this.pending = '';
      }
    }
  }

  private emit(line: string): void {
    if (line.length > this.maxLineBytes) this.counter.acceptOverlong(line.length);
    else this.counter.accept(line);
  }
}

const GZIP_MAGIC_0 = 0x1f;
const GZIP_MAGIC_1 = 0x8b;

/**
 * Counts a log from a byte stream, gzip or plain text (told apart by the gzip magic
 * bytes). Streaming throughout: only one chunk and one partial line are held.
 * A broken gzip stream is a poison object; errors of the source itself (a dropped
 * connection) are rethrown as they are so the caller can retry them.
 */
export async function countLogStream(
  source: AsyncIterable<Uint8Array>,
  options: CountOptions,
  objectName: string,
): Promise<LogCount> {
  const counter = new LogCounter(options);
  const splitter = new LineSplitter(counter, options.maxLineBytes);
  const iterator = source[Symbol.asyncIterator]();
  const first = await nextNonEmpty(iterator);
  if (first === undefined) return counter.finish(objectName);

  const isGzip = first.length >= 2 && first[0] === GZIP_MAGIC_0 && first[1] === GZIP_MAGIC_1;
  if (!isGzip) {
    splitter.write(first);
    for (let step = await iterator.next(); !step.done; step = await iterator.next()) splitter.write(step.value);
    splitter.end();
    return counter.finish(objectName);
  }

  // The compressed bytes are written into gunzip by hand (with back-pressure) while
  // the parser reads its output: zlib inflates on the libuv threadpool as the parser
  // works, with none of the per-chunk cost of wrapping the source in another stream.
  const gunzip = createGunzip();
  let sourceError: unknown;
  const feeding = (async () => {
    try {
      let chunk: Uint8Array | undefined = first;
      while (chunk !== undefined && !gunzip.destroyed) {
        if (!gunzip.write(chunk)) await drainedOrClosed(gunzip);
        const step: IteratorResult<Uint8Array> = await iterator.next();
        chunk = step.done ? undefined : step.value;
      }
      if (!gunzip.destroyed) gunzip.end();
    } catch (error) {
      sourceError = error;
      gunzip.destroy(error instanceof Error ? error : new Error(String(error)));
    }
  })();
  try {
    for await (const chunk of gunzip) splitter.write(chunk as Buffer);
  } catch (error) {
    await feeding;
    if (sourceError !== undefined) throw sourceError;
    throw new PoisonObjectError(objectName, `cannot gunzip: ${(error as Error).message}`, { cause: error });
  }
  await feeding;
  splitter.end();
  return counter.finish(objectName);
}

/** Resolves when `stream` can take more input, or can take none ever again. */
function drainedOrClosed(stream: Writable): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}

async function nextNonEmpty(iterator: AsyncIterator<Uint8Array>): Promise<Uint8Array | undefined> {
  for (;;) {
    const step = await iterator.next();
    if (step.done) return undefined;
    if (step.value.length > 0) return step.value;
  }
}
