import { fieldKey, parseFieldsDirective } from './cloudfront-log';
import type { ResolverSpec } from './account-resolver';
import { countsEstimates, DEFAULT_DELIMITER, type LogFormatSettings } from './log-fields';
import { estimatedMetric, type MetricRule } from './metric-rules';
import { JsonScanner, RecordBreaks, type JsonLineSink, type JsonTemplate } from './json-scanner';
import { DEFAULT_MAX_LINE_BYTES, LogCounter, type CountOptions, type LogCount } from './log-counter';
import { RecordLines, resumed, type LogContent } from './log-records';
import { UsageTally } from './usage-tally';
import { HOURS_PER_DAY } from '../hours';
import { PoisonObjectError } from '../errors';
import { printable } from '../printable';

/** The formats a log's content can be in (the key never decides). */
export type LogFormat = 'standard' | 'json' | 'headerless' | 'parquet';

/** What counting needs besides the count options: how text logs without a header are read. */
export interface FormatOptions extends CountOptions {
  readonly format?: LogFormatSettings;
}

/** A {@link LogCount} and the format its log was read in. */
export interface FormatCount extends LogCount {
  readonly format: LogFormat;
  /** Real-time logs sampled below 100%: the percent; their metrics are `estimated_<metric>`. */
  readonly samplingRate?: number;
}

/** How the consumer reads logs: what every path that counts an object (ingest, reconcile, the DLQ) must share. */
export interface CountSettings {
  readonly resolver: ResolverSpec;
  readonly metricRules: readonly MetricRule[];
  readonly maxLineBytes?: number;
  readonly logFormat?: LogFormatSettings;
}

/** Counts the content of the stored object `objectKey` as the consumer does. */
export function countObject(content: LogContent, settings: CountSettings, objectKey: string, objectName: string): Promise<FormatCount> {
  return countLogContent(
    content,
    {
      resolver: settings.resolver,
      metricRules: settings.metricRules,
      objectKey,
      ...(settings.maxLineBytes === undefined ? {} : { maxLineBytes: settings.maxLineBytes }),
      ...(settings.logFormat === undefined ? {} : { format: settings.logFormat }),
    },
    objectName,
  );
}

/**
 * Counts a log whatever CloudFront format it is in, told from its content alone:
 * - text whose first character is `#`: a standard log (legacy, or v2 w3c) with `#Fields`;
 * - `{`: JSON lines (v2 JSON, and Firehose deliveries of it), one object per line, or
 *   objects back to back as Firehose joins records by default ({@link RecordBreaks});
 * - other text: a log with no header (v2 plain, real-time records), read with the
 *   configured field list, or poison when none is configured;
 * - records (Parquet): read by the adapter that opened it.
 *
 * Every format is counted by the one {@link LogCounter} (records become its lines), so
 * resolvers, metric rules, checks and the conservation law are the same for all.
 * Counts of sampled real-time logs are scaled to estimates and kept under their own
 * metric names, never added to exact counts.
 */
export async function countLogContent(content: LogContent, options: FormatOptions, objectName: string): Promise<FormatCount> {
  return refuseInexactTotals(await countAnyFormat(content, options, objectName), objectName);
}

/**
 * Refuses, as a poison object (nothing applied; the DLQ and `tally dlq` say why), a count
 * in which an account-day's total passed 2^53 - 1: sc-bytes of up to 15 digits a line
 * make that ten lines away, and the sum would be written rounded. No real log comes near
 * (9 PB in one object's account-day): such an object is damaged or forged.
 */
function refuseInexactTotals(count: FormatCount, objectName: string): FormatCount {
  const inexact = count.tally.firstInexactTotal();
  if (inexact === undefined) return count;
  throw new PoisonObjectError(
    objectName,
    `${inexact.metric} of account ${printable(inexact.account)} on ${inexact.day} adds up past ${Number.MAX_SAFE_INTEGER} (2^53 - 1), where sums stop being exact: no real log holds that much; nothing was counted`,
  );
}

async function countAnyFormat(content: LogContent, options: FormatOptions, objectName: string): Promise<FormatCount> {
  if (content.kind === 'records') {
    const counter = new LogCounter({ ...options, headerNeeded: `no ${content.format} column with a date, timestamp(ms) or timestamp field` });
    const lines = new RecordLines(counter);
    await content.read(lines);
    lines.flush();
    return { ...counter.finish(objectName), format: 'parquet' };
  }
  return countText(content.text, options, objectName);
}

async function countText(text: AsyncIterable<Uint8Array>, options: FormatOptions, objectName: string): Promise<FormatCount> {
  const settings = options.format ?? {};
  const headerless = settings.headerless;
  const iterator = text[Symbol.asyncIterator]();
  const opening = await openingOf(iterator);
  const format: LogFormat = opening.first === 0x7b /* { */ ? 'json' : opening.first === 0x23 /* # */ || headerless === undefined ? 'standard' : 'headerless';
  // A configured delimiter is that of v2 w3c and plain deliveries: a log whose first data
  // line is tab-separated as its #Fields says (a legacy log, still in flight or backfilled) stays tab-separated.
  const delimiter = format === 'standard' && tabSeparated(opening.text) ? '\t' : (settings.delimiter ?? DEFAULT_DELIMITER);
  const counter = new LogCounter({
    ...options,
    headerNeeded:
      format === 'json'
        ? 'no line with a date, timestamp(ms) or timestamp field'
        : headerless === undefined
          ? 'no #Fields header with a date, timestamp(ms) or timestamp field (a log with no header needs its field list: TALLY_LOG_FIELDS, or tally count --fields)'
          : 'no #Fields header with a date, timestamp(ms) or timestamp field',
  });
  const rest = resumed(opening.chunks, iterator);

  if (format === 'headerless') counter.setFields(headerless!.fields);
  if (format !== 'json' && delimiter === '\t') {
    // Tab-separated lines are what the counter reads itself, at full speed.
    for await (const chunk of rest) counter.write(chunk);
  } else if (format !== 'json' && isSingleByte(delimiter)) {
    // One ASCII byte between fields: made a tab on the fly (a tab in a value becomes %09).
    const swap = new DelimiterSwap(delimiter.charCodeAt(0));
    for await (const chunk of rest) counter.write(swap.tabs(chunk));
  } else {
    const lines = new RecordLines(counter);
    const reader = format === 'json' ? new JsonLines(lines) : new DelimitedLines(lines, delimiter, format === 'headerless' ? headerless!.fields : undefined);
    const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    const splitter = new LineSplitter(maxLineBytes, reader, lines, reader instanceof JsonLines);
    if (format === 'json' && opening.backToBack) splitter.splitRecords();
    if (reader instanceof JsonLines && options.scanner !== 'js') {
      // CloudFront's own JSON lines are read by the counter's SIMD scanner; the others by JsonLines.
      const scanner = new JsonScanner(splitter.jsonSink(reader));
      splitter.useBulk((bytes, from, end) => scanner.lines(bytes, from, end));
    }
    for await (const chunk of rest) splitter.write(chunk);
    splitter.end();
    lines.flush();
  }
  const count = counter.finish(objectName);
  const rate = settings.samplingRate;
  if (format === 'headerless' && countsEstimates(settings)) {
    return { ...count, tally: estimates(count.tally, rate!), format, samplingRate: rate! };
  }
  return { ...count, format };
}

/**
 * The tally of a sampled log as estimates: each metric scaled by 100/rate, under its
 * estimated name. A day's total is its scaled total rounded, as before hours; its hours
 * are rounded cumulatively (each hour is the rounded running sum to its end less the
 * one before it), so they still sum exactly to the day and each is within 1 of its
 * scaled amount. What the day holds in no hour comes last, in the day only.
 */
function estimates(tally: UsageTally, rate: number): UsageTally {
  const names = tally.metricNames;
  const scaled = new UsageTally(names.map(estimatedMetric));
  const scale = (amount: number) => (amount * 100) / rate;
  for (const usage of tally.usage()) {
    const row = scaled.row(usage.account, usage.day);
    const running = new Array<number>(names.length).fill(0);
    const rounded = new Array<number>(names.length).fill(0);
    const step = (amounts: readonly number[]) =>
      amounts.map((amount, i) => {
        running[i]! += amount;
        const next = Math.round(scale(running[i]!));
        const added = next - rounded[i]!;
        rounded[i] = next;
        return added;
      });
    for (let hour = 0; hour < HOURS_PER_DAY; hour++) {
      const metrics = usage.hours[hour];
      if (metrics !== undefined) scaled.addAt(row, hour, step(names.map((name) => metrics[name] ?? 0)));
    }
    scaled.addTo(row, step(names.map((name, i) => (usage.metrics[name] ?? 0) - running[i]!)));
  }
  return scaled;
}

/** Bytes of a text looked at to tell its format. */
const SNIFF_BYTES = 64 * 1024;
/** Lines of those looked at for a JSON object. */
const SNIFF_LINES = 16;

/**
 * The first chunks of a text (at least {@link SNIFF_BYTES} of it, or all) and what they
 * show: `#` when the first character that is no byte order mark or white space is a
 * `#`; `{` when one of the first lines (or records, when they are back to back: see
 * {@link RecordBreaks}) starts with `{`, so that a JSON log whose first line is damaged
 * is still read as JSON; else that first character.
 */
async function openingOf(iterator: AsyncIterator<Uint8Array>): Promise<{ chunks: Uint8Array[]; backToBack: boolean; first: number | undefined; text: string }> {
  const chunks: Uint8Array[] = [];
  let held = 0;
  while (held < SNIFF_BYTES) {
    const step = await iterator.next();
    if (step.done) break;
    chunks.push(step.value);
    held += step.value.length;
  }
  const bytes = Buffer.concat(chunks).subarray(0, SNIFF_BYTES);
  const text = bytes.toString('latin1').replace(/^\xef\xbb\xbf/, '');
  const first = /\S/.exec(text)?.[0];
  if (first === undefined || first === '#') return { chunks, backToBack: false, first: first?.charCodeAt(0), text };
  // Records back to back are looked at one by one, as they will be read.
  const records = Buffer.from(new RecordBreaks().split(bytes));
  const backToBack = records.length > bytes.length;
  const lines = backToBack ? records.toString('latin1') : text;
  const json = lines.split('\n', SNIFF_LINES).some((line) => line.trimStart().startsWith('{'));
  return { chunks, backToBack, first: json ? 0x7b : first.charCodeAt(0), text };
}

/**
 * Whether the first data line of a `#`-headed text has as many tab-separated fields as
 * the `#Fields` line before it names: a standard log as legacy logging writes it.
 */
function tabSeparated(opening: string): boolean {
  let fields: number | undefined;
  for (const line of opening.split('\n')) {
    if (line.startsWith('#')) {
      const layout = parseFieldsDirective(line.replace(/\r$/, ''));
      if (layout !== undefined) fields = layout.width;
      continue;
    }
    if (line.trim() === '') continue;
    return fields !== undefined && fields > 1 && line.split('\t').length >= fields;
  }
  return false;
}

/** Reads one line of text (no line break) into records. */
interface LineReader {
  /** The line's bytes `[start, end)` (no line break, no trailing CR): not all white space. */
  line(bytes: Buffer, start: number, end: number): void;
}

/**
 * Cuts text into lines for the readers of formats the counter does not read itself.
 * Memory stays flat: a line longer than `maxLineBytes` is passed over to its end and
 * counted as malformed. Blank lines are not data, as in the counter.
 *
 * JSON records written back to back (Firehose's default, see {@link RecordBreaks}) are
 * cut apart wherever they are in the text, so that each is read, and counted, as the
 * same record on its own line would be: a line of JSON that fails to parse is cut by
 * JsonLines, and a line longer than `maxLineBytes` here. Such a line cut across chunks
 * turns the splitter to cutting every chunk into records from that line's start to the
 * end of the text, as it does from the start when the opening shows records back to back
 * ({@link splitRecords}); newline-delimited JSON meets none of this and is read as fast
 * as before.
 */
class LineSplitter {
  /** Cuts the text into records before it is cut into lines, once it is read as records back to back. */
  private breaks: RecordBreaks | undefined;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private skipping = false;
  private skipped = 0;
  private started = false;
  /** Reads whole lines in bulk, when a reader has a faster way than line by line. */
  private bulk: ((bytes: Buffer, from: number, end: number) => void) | undefined;

  constructor(
    private readonly maxLineBytes: number,
    private readonly reader: LineReader,
    private readonly lines: RecordLines,
    /** Whether the lines are JSON, whose records may be back to back. */
    private readonly json: boolean,
  ) {}

  /** The text is JSON records back to back (from its start on): each goes on a line of its own before the text is cut into lines. */
  splitRecords(): void {
    this.breaks = new RecordBreaks();
  }

  /** Whole lines (never a partial or an overlong one held here) go to `bulk` from now on. */
  useBulk(bulk: (bytes: Buffer, from: number, end: number) => void): void {
    this.bulk = bulk;
  }

  /** Where a {@link JsonScanner} reads: lines as this splitter would pass them on, the reader's template, the counter. */
  jsonSink(reader: JsonLines): JsonLineSink {
    const lines = this.lines;
    return {
      line: (bytes, start, end) => this.whole(bytes, start, end),
      template: () => reader.template(),
      useTemplate: (template) => lines.useJsonTemplate(template),
      capacity: lines.jsonCapacity,
      load: (bytes, from, end) => lines.loadJson(bytes, from, end),
      count: (offset) => lines.countJson(offset),
    };
  }

  write(text: Uint8Array): void {
    const chunk = this.breaks === undefined ? text : this.breaks.split(text);
    let bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
    if (!this.started) {
      this.started = true;
      if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
    }
    let at = 0;
    if (this.bulk !== undefined) {
      if (this.pendingBytes > 0 || this.skipping) {
        const newline = bytes.indexOf(10);
        if (newline === -1) return this.hold(bytes);
        if (this.skipping) this.complete(bytes.subarray(0, newline));
        else {
          // The line cut by the chunks, whole again: read in bulk as the lines round it are.
          const joined = Buffer.concat([...this.pending, bytes.subarray(0, newline + 1)]);
          this.pending = [];
          this.pendingBytes = 0;
          this.bulk(joined, 0, joined.length);
        }
        at = newline + 1;
      }
      const last = bytes.lastIndexOf(10);
      if (last >= at) {
        this.bulk(bytes, at, last + 1);
        at = last + 1;
      }
    }
    this.cut(bytes, at);
  }

  /** Cuts `bytes` from `at` into lines, one by one: the last, with no line break yet, is held. */
  private cut(bytes: Buffer, from: number): void {
    let at = from;
    for (;;) {
      const newline = bytes.indexOf(10, at);
      if (newline === -1) {
        this.hold(bytes.subarray(at));
        return;
      }
      if (this.pendingBytes === 0 && !this.skipping) this.whole(bytes, at, newline);
      else this.complete(bytes.subarray(at, newline));
      at = newline + 1;
    }
  }

  end(): void {
    if (this.skipping || this.pendingBytes > 0) this.complete(Buffer.alloc(0));
  }

  private hold(part: Buffer): void {
    if (part.length === 0) return;
    if (this.skipping) {
      this.skipped += part.length;
      return;
    }
    this.pending.push(Buffer.from(part));
    this.pendingBytes += part.length;
    if (this.pendingBytes > this.maxLineBytes && this.json && this.breaks === undefined) {
      // Too long for one record: it may be records back to back (Firehose after a switch,
      // or past a long first record). Cut from this line's start on, as from an opening
      // that showed them (the breaker's state starts afresh at every line break).
      const line = Buffer.concat(this.pending);
      this.pending = [];
      this.pendingBytes = 0;
      this.splitRecords();
      const records = this.breaks!.split(line);
      return this.cut(Buffer.from(records.buffer, records.byteOffset, records.length), 0);
    }
    if (this.pendingBytes > this.maxLineBytes) {
      this.skipping = true;
      this.skipped = this.pendingBytes;
      this.pending = [];
      this.pendingBytes = 0;
    }
  }

  private complete(last: Buffer): void {
    if (this.skipping) {
      const length = this.skipped + last.length;
      this.skipping = false;
      this.skipped = 0;
      this.lines.malformed(`line of ${length} bytes is longer than ${this.maxLineBytes}`);
      return;
    }
    const whole = this.pendingBytes === 0 ? last : Buffer.concat([...this.pending, last]);
    this.pending = [];
    this.pendingBytes = 0;
    this.whole(whole, 0, whole.length);
  }

  /** A whole line, `bytes[start, end)` without its line break. */
  private whole(bytes: Buffer, start: number, end: number): void {
    if (end - start > this.maxLineBytes) {
      // Records back to back are each a line (each shorter than this one).
      if (this.json && this.breaks === undefined && eachRecord(bytes, start, end, (b, from, to) => this.whole(b, from, to))) return;
      this.lines.malformed(`line of ${end - start} bytes is longer than ${this.maxLineBytes}`);
      return;
    }
    end = withoutCr(bytes, start, end);
    if (isBlank(bytes, start, end)) return;
    this.reader.line(bytes, start, end);
  }
}

/** The end of the line `bytes[start, end)` without its trailing CR, if it has one (a CRLF line break). */
function withoutCr(bytes: Buffer, start: number, end: number): number {
  return end > start && bytes[end - 1] === 13 /* CR */ ? end - 1 : end;
}

/**
 * Reads each record of the line `bytes[start, end)` with `read`, as the line it would be
 * with line breaks between them, when records are back to back on it (see
 * {@link RecordBreaks}); false, and nothing read, when there is one record.
 */
function eachRecord(bytes: Buffer, start: number, end: number, read: (bytes: Buffer, start: number, end: number) => void): boolean {
  const breaks = new RecordBreaks().breaksIn(bytes.subarray(start, end));
  if (breaks.length === 0) return false;
  let from = start;
  for (const at of breaks) {
    read(bytes, from, start + at);
    from = start + at;
  }
  read(bytes, from, end);
  return true;
}

/**
 * JSON lines: each line one object of field -> value (v2 JSON: every value a string,
 * `-` for none). The object's keys are its fields. Lines whose keys differ from the line
 * before set new fields, as a new `#Fields` line would, unless they name the same fields
 * read (`DistributionId` on one line and `distributionid` on the next): then only where
 * the values are looked up changes.
 */
class JsonLines implements LineReader {
  private keys: readonly string[] = [];
  /** The fields the counter reads, as the current lines spell them, and as field keys. */
  private names: readonly string[] = [];
  private fieldKeys = '';
  private values: unknown[] = [];
  /** The fields read for each set of keys seen, so that alternating key sets cost a lookup. */
  private readonly chosen = new Map<string, readonly string[]>();
  /** Per pair of the line {@link fast} took apart: key start, key end, value start, value end. */
  private readonly pairs: number[] = [];
  /** The key sets of the last lines read fast (most recent first): their bytes, ends, names and where each field read comes from. */
  private keySets: KeySet[] = [];
  private current: KeySet | undefined;
  /** The template of {@link current}, made once per key set (see JsonScanner). */
  private readonly templates = new WeakMap<KeySet, JsonTemplate>();
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];

  constructor(private readonly lines: RecordLines) {}

  /**
   * The template of the key set of the last line read, for the {@link JsonScanner}: its
   * lines are the ones {@link fast} reads with that key set and no white space.
   */
  template(): JsonTemplate | undefined {
    const current = this.current;
    if (current === undefined) return undefined;
    let template = this.templates.get(current);
    if (template === undefined) {
      const slotOfKey = current.keys.map(() => 0);
      current.pairOf.forEach((pair, field) => {
        if (pair >= 0) slotOfKey[pair] = field + 1;
      });
      template = { keyBytes: current.keyBytes, keyEnds: current.keyEnds, slotOfKey, slots: current.pairOf.length };
      this.templates.set(current, template);
    }
    return template;
  }

  line(bytes: Buffer, start: number, end: number): void {
    if (this.fast(bytes, start, end)) return;
    const text = bytes.toString('utf8', start, end);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      // Records back to back (never a line JSON.parse reads): each read as its own line.
      if (eachRecord(bytes, start, end, (b, from, to) => this.line(b, from, withoutCr(b, from, to)))) return;
      return this.lines.malformed(`line is not JSON: ${preview(text)}`);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return this.lines.malformed(`line is not a JSON object: ${preview(text)}`);
    }
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    if (!sameKeys(keys, this.keys)) this.use(keys);
    this.current = undefined;
    const { names, values } = this;
    for (let i = 0; i < names.length; i++) values[i] = record[names[i]!];
    this.lines.record(values);
  }

  /**
   * Reads the common line from its bytes, without JSON.parse: a flat object whose keys
   * and values are strings with no escape and no control character, which is what
   * CloudFront writes. Its keys are compared as bytes with the line before; the values
   * read are copied as they are (valid UTF-8, with no tab or line break in them). Returns
   * false for any other line, which JSON.parse then reads, or refuses.
   */
  private fast(bytes: Buffer, start: number, end: number): boolean {
    const pairs = this.pairs;
    let i = skipSpace(bytes, start, end);
    if (bytes[i] !== 0x7b /* { */) return false;
    i = skipSpace(bytes, i + 1, end);
    let count = 0;
    for (;;) {
      if (bytes[i] !== 0x22 /* " */) return false;
      const keyEnd = stringEnd(bytes, i + 1, end);
      if (keyEnd < 0) return false;
      const keyStart = i + 1;
      i = skipSpace(bytes, keyEnd + 1, end);
      if (bytes[i] !== 0x3a /* : */) return false;
      i = skipSpace(bytes, i + 1, end);
      if (bytes[i] !== 0x22) return false;
      const valueEnd = stringEnd(bytes, i + 1, end);
      if (valueEnd < 0) return false;
      const at = count * 4;
      pairs[at] = keyStart;
      pairs[at + 1] = keyEnd;
      pairs[at + 2] = i + 1;
      pairs[at + 3] = valueEnd;
      count++;
      i = skipSpace(bytes, valueEnd + 1, end);
      if (bytes[i] === 0x2c /* , */) {
        i = skipSpace(bytes, i + 1, end);
        continue;
      }
      if (bytes[i] !== 0x7d /* } */ || skipSpace(bytes, i + 1, end) !== end) return false;
      break;
    }
    const keySet = this.keySetOf(bytes, count);
    if (keySet === undefined) return false;
    const pairOf = keySet.pairOf;
    const { starts, ends } = this;
    for (let f = 0; f < pairOf.length; f++) {
      const pair = pairOf[f]!;
      starts[f] = pair < 0 ? 0 : pairs[pair * 4 + 2]!;
      ends[f] = pair < 0 ? 0 : pairs[pair * 4 + 3]!;
    }
    this.lines.recordBytes(bytes, starts, ends);
    return true;
  }

  /**
   * The key set of the line whose `count` keys {@link fast} found, made current: one of
   * the last few (compared as bytes), or a new one. Undefined when a key repeats (JSON.parse
   * keeps the last of repeated keys: such lines are left to it).
   */
  private keySetOf(bytes: Buffer, count: number): KeySet | undefined {
    const current = this.current;
    if (current !== undefined && sameKeyBytes(current, bytes, this.pairs, count)) return current;
    let found = this.keySets.find((set) => sameKeyBytes(set, bytes, this.pairs, count));
    if (found === undefined) {
      const keys: string[] = [];
      for (let k = 0; k < count; k++) keys.push(bytes.toString('utf8', this.pairs[k * 4]!, this.pairs[k * 4 + 1]!));
      if (new Set(keys).size !== keys.length) return undefined;
      this.use(keys);
      let at = 0;
      found = {
        keyBytes: Buffer.concat(keys.map((key) => Buffer.from(key, 'utf8'))),
        keyEnds: keys.map((key) => (at += Buffer.byteLength(key, 'utf8'))),
        keys,
        names: this.names,
        fieldKeys: this.fieldKeys,
        pairOf: this.names.map((name) => keys.indexOf(name)),
      };
      this.keySets = [found, ...this.keySets.slice(0, KEY_SETS_KEPT - 1)];
    } else if (found.fieldKeys !== this.fieldKeys) {
      this.use(found.keys);
    } else {
      // The same fields read, spelt otherwise (DistributionId, distributionid): no new layout.
      this.keys = found.keys;
      this.names = found.names;
    }
    this.current = found;
    return found;
  }

  private use(keys: readonly string[]): void {
    this.keys = keys;
    const signature = keys.join('\n');
    let names = this.chosen.get(signature);
    if (names === undefined) {
      if (this.chosen.size >= 64) this.chosen.clear();
      names = this.lines.fieldsRead(keys);
      this.chosen.set(signature, names);
    }
    const fieldKeys = names.map(fieldKey).join(' ');
    if (fieldKeys !== this.fieldKeys) {
      this.lines.setFields(names);
      this.fieldKeys = fieldKeys;
      this.values = new Array<unknown>(names.length);
    }
    this.names = names;
  }
}

/**
 * Lines of fields separated by a delimiter that is not a tab (v2 w3c or plain output
 * with a chosen delimiter): `#Fields` lines set the fields as in a standard log (its
 * names separated by spaces), other `#` lines are directives; without a header the
 * configured fields apply.
 */
class DelimitedLines implements LineReader {
  private fields: readonly string[] | undefined;
  private columns: number[] = [];
  private values: string[] = [];

  constructor(
    private readonly lines: RecordLines,
    private readonly delimiter: string,
    fields: readonly string[] | undefined,
  ) {
    if (fields !== undefined) this.use(fields);
  }

  line(bytes: Buffer, start: number, end: number): void {
    const text = bytes.toString('utf8', start, end);
    if (text.startsWith('#')) {
      const layout = parseFieldsDirective(text);
      if (layout !== undefined) this.use(layout.fields);
      return;
    }
    const fields = this.fields;
    if (fields === undefined) return this.lines.malformed('no #Fields header before this line');
    const parts = text.split(this.delimiter);
    if (parts.length < fields.length) return this.lines.malformed(`${parts.length} fields where the field list names ${fields.length}`);
    const { columns, values } = this;
    for (let i = 0; i < columns.length; i++) values[i] = parts[columns[i]!]!;
    this.lines.record(values);
  }

  private use(fields: readonly string[]): void {
    this.fields = fields;
    const needed = this.lines.fields(fields);
    this.columns = needed.map((name) => fields.indexOf(name));
    this.values = new Array<string>(needed.length);
  }
}

function isSingleByte(delimiter: string): boolean {
  return delimiter.length === 1 && delimiter.charCodeAt(0) < 0x80;
}

/**
 * Rewrites lines whose fields are separated by one ASCII byte as tab-separated lines,
 * byte for byte: the delimiter becomes a tab, a tab inside a value `%09` (as CloudFront
 * encodes one), everything else is kept, so the counter reads them at its own speed.
 * `#Fields` lines come through whole (their names are separated by spaces or tabs).
 */
class DelimiterSwap {
  private out = new Uint8Array(0);
  /** Whether the bytes being passed are of a `#` line (the chunk may have cut it). */
  private directive = false;
  private lineStart = true;

  constructor(private readonly delimiter: number) {}

  tabs(chunk: Uint8Array): Uint8Array {
    if (this.out.length < chunk.length * 3) this.out = new Uint8Array(chunk.length * 3);
    const { out, delimiter } = this;
    let used = 0;
    let directive = this.directive;
    let lineStart = this.lineStart;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      if (lineStart) directive = byte === 35 /* # */;
      lineStart = byte === 10;
      if (directive || (byte !== delimiter && byte !== 9)) out[used++] = byte;
      else if (byte === delimiter) out[used++] = 9;
      else {
        out[used++] = 37; /* % */
        out[used++] = 48; /* 0 */
        out[used++] = 57; /* 9 */
      }
    }
    this.directive = directive;
    this.lineStart = lineStart;
    return out.subarray(0, used);
  }
}

/** Key sets of JSON lines remembered by their bytes. */
const KEY_SETS_KEPT = 4;

/** A set of JSON keys as a line spells them, and for the fields read, the pair each comes from (-1: none). */
interface KeySet {
  readonly keyBytes: Buffer;
  readonly keyEnds: readonly number[];
  readonly keys: readonly string[];
  /** The fields read, as these keys spell them, and as field keys (see JsonLines.use). */
  readonly names: readonly string[];
  readonly fieldKeys: string;
  readonly pairOf: readonly number[];
}

/** Whether the `count` keys found on a line (`pairs`: key start, key end, ...) are byte for byte those of `set`. */
function sameKeyBytes(set: KeySet, bytes: Buffer, pairs: readonly number[], count: number): boolean {
  const { keyEnds, keyBytes } = set;
  if (keyEnds.length !== count) return false;
  let from = 0;
  for (let k = 0; k < count; k++) {
    const start = pairs[k * 4]!;
    const length = pairs[k * 4 + 1]! - start;
    if (keyEnds[k]! - from !== length) return false;
    for (let i = 0; i < length; i++) if (bytes[start + i] !== keyBytes[from + i]) return false;
    from = keyEnds[k]!;
  }
  return true;
}

/** Where the JSON string starting at `from` (past its quote) ends (its closing quote), or -1 if it has an escape or a control character. */
function stringEnd(bytes: Buffer, from: number, end: number): number {
  const quote = bytes.indexOf(0x22, from);
  if (quote < 0 || quote >= end) return -1;
  for (let i = from; i < quote; i++) {
    const byte = bytes[i]!;
    if (byte === 0x5c /* \\ */ || byte < 0x20) return -1;
  }
  return quote;
}

function skipSpace(bytes: Buffer, from: number, end: number): number {
  let i = from;
  while (i < end) {
    const byte = bytes[i]!;
    if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d && byte !== 0x0a) break;
    i++;
  }
  return i;
}

function isBlank(bytes: Buffer, start: number, end: number): boolean {
  return skipSpace(bytes, start, end) === end;
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function preview(value: string): string {
  return value.length > 40 ? `${value.slice(0, 40)}...` : value;
}
