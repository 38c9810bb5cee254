import { parseFieldsDirective } from './cloudfront-log';
import type { ResolverSpec } from './account-resolver';
import { DEFAULT_DELIMITER, type LogFormatSettings } from './log-fields';
import type { MetricRule } from './metric-rules';
import { DEFAULT_MAX_LINE_BYTES, LogCounter, type CountOptions, type LogCount } from './log-counter';
import { RecordLines, type LogContent } from './log-records';
import { UsageTally } from './usage-tally';

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

/** The name under which an estimate of `metric` (from sampled logs) is kept. */
export function estimatedMetric(metric: string): string {
  return `estimated_${metric}`;
}

/** Whether a metric holds estimates (see {@link estimatedMetric}). */
export function isEstimatedMetric(metric: string): boolean {
  return metric.startsWith('estimated_');
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
 * - `{`: JSON lines (v2 JSON, and Firehose deliveries of it), one object per line;
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
  if (content.kind === 'records') {
    const counter = new LogCounter(options);
    const lines = new RecordLines(counter);
    await content.read(lines);
    lines.flush();
    return { ...counter.finish(objectName), format: 'parquet' };
  }
  return countText(content.text, options, objectName);
}

async function countText(text: AsyncIterable<Uint8Array>, options: FormatOptions, objectName: string): Promise<FormatCount> {
  const settings = options.format ?? {};
  const delimiter = settings.delimiter ?? DEFAULT_DELIMITER;
  const headerless = settings.headerless;
  const iterator = text[Symbol.asyncIterator]();
  const opening = await openingOf(iterator);
  const format: LogFormat = opening.first === 0x7b /* { */ ? 'json' : opening.first === 0x23 /* # */ || headerless === undefined ? 'standard' : 'headerless';
  const counter = new LogCounter({
    ...options,
    headerNeeded:
      headerless === undefined
        ? 'no #Fields header with a date, timestamp(ms) or timestamp field (a log with no header needs its field list: TALLY_LOG_FIELDS, or tally count --fields)'
        : 'no #Fields header with a date, timestamp(ms) or timestamp field',
  });
  const rest = (async function* () {
    yield* opening.chunks;
    for (let step = await iterator.next(); !step.done; step = await iterator.next()) yield step.value;
  })();

  if (format === 'headerless') counter.setFields(headerless!.fields);
  if (format !== 'json' && delimiter === '\t') {
    // Tab-separated lines are what the counter reads itself, at full speed.
    for await (const chunk of rest) counter.write(chunk);
  } else {
    const lines = new RecordLines(counter);
    const reader = format === 'json' ? new JsonLines(lines) : new DelimitedLines(lines, delimiter, format === 'headerless' ? headerless!.fields : undefined);
    const splitter = new LineSplitter(options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES, reader, lines);
    for await (const chunk of rest) splitter.write(chunk);
    splitter.end();
    lines.flush();
  }
  const count = counter.finish(objectName);
  const rate = settings.samplingRate;
  if (format === 'headerless' && headerless!.preset === 'realtime' && rate !== undefined && rate < 100) {
    return { ...count, tally: estimates(count.tally, rate), format, samplingRate: rate };
  }
  return { ...count, format };
}

/** The tally of a sampled log as estimates: each metric scaled by 100/rate, under its estimated name. */
function estimates(tally: UsageTally, rate: number): UsageTally {
  const scaled = new UsageTally(tally.metricNames.map(estimatedMetric));
  for (const row of tally.usage()) {
    scaled.add(
      row.account,
      row.day,
      tally.metricNames.map((name) => Math.round(((row.metrics[name] ?? 0) * 100) / rate)),
    );
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
 * `#`; `{` when one of the first lines starts with `{`, so that a JSON log whose first
 * line is damaged is still read as JSON; else that first character.
 */
async function openingOf(iterator: AsyncIterator<Uint8Array>): Promise<{ chunks: Uint8Array[]; first: number | undefined }> {
  const chunks: Uint8Array[] = [];
  let held = 0;
  while (held < SNIFF_BYTES) {
    const step = await iterator.next();
    if (step.done) break;
    chunks.push(step.value);
    held += step.value.length;
  }
  const text = Buffer.concat(chunks).subarray(0, SNIFF_BYTES).toString('latin1').replace(/^\xef\xbb\xbf/, '');
  const first = /\S/.exec(text)?.[0];
  if (first === undefined || first === '#') return { chunks, first: first?.charCodeAt(0) };
  const json = text.split('\n', SNIFF_LINES).some((line) => line.trimStart().startsWith('{'));
  return { chunks, first: json ? 0x7b : first.charCodeAt(0) };
}

/** Reads one line of text (no line break) into records. */
interface LineReader {
  line(text: string, lineNumber: number): void;
}

/**
 * Cuts text into lines for the readers of formats the counter does not read itself.
 * Memory stays flat: a line longer than `maxLineBytes` is passed over to its end and
 * counted as malformed. Blank lines are not data, as in the counter.
 */
class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private skipping = false;
  private skipped = 0;
  private lineNumber = 0;
  private started = false;

  constructor(
    private readonly maxLineBytes: number,
    private readonly reader: LineReader,
    private readonly lines: RecordLines,
  ) {}

  write(chunk: Uint8Array): void {
    let bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
    if (!this.started) {
      this.started = true;
      if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
    }
    let at = 0;
    for (;;) {
      const newline = bytes.indexOf(10, at);
      if (newline === -1) {
        this.hold(bytes.subarray(at));
        return;
      }
      this.complete(bytes.subarray(at, newline));
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
    if (this.pendingBytes > this.maxLineBytes) {
      this.skipping = true;
      this.skipped = this.pendingBytes;
      this.pending = [];
      this.pendingBytes = 0;
    }
  }

  private complete(last: Buffer): void {
    this.lineNumber++;
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
    if (whole.length > this.maxLineBytes) {
      this.lines.malformed(`line of ${whole.length} bytes is longer than ${this.maxLineBytes}`);
      return;
    }
    let text = whole.toString('utf8');
    if (text.endsWith('\r')) text = text.slice(0, -1);
    if (text.trim() === '') return;
    this.reader.line(text, this.lineNumber);
  }
}

/**
 * JSON lines: each line one object of field -> value (v2 JSON: every value a string,
 * `-` for none). The object's keys are its fields; lines whose keys differ from the
 * line before set new fields, as a new `#Fields` line would.
 */
class JsonLines implements LineReader {
  private keys: readonly string[] = [];
  private needed: readonly string[] = [];
  private values: unknown[] = [];

  constructor(private readonly lines: RecordLines) {}

  line(text: string): void {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return this.lines.malformed(`line is not JSON: ${preview(text)}`);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return this.lines.malformed(`line is not a JSON object: ${preview(text)}`);
    }
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    if (!sameKeys(keys, this.keys)) {
      this.keys = keys;
      this.needed = this.lines.fields(keys);
      this.values = new Array<unknown>(this.needed.length);
    }
    const { needed, values } = this;
    for (let i = 0; i < needed.length; i++) values[i] = record[needed[i]!];
    this.lines.record(values);
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

  line(text: string): void {
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

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function preview(value: string): string {
  return value.length > 40 ? `${value.slice(0, 40)}...` : value;
}
