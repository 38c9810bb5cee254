/**
 * The log counter as it was before it parsed bytes (main at 040a205): decoded text,
 * split on tabs, fields as strings. Frozen here, in the tests only, as the oracle the
 * byte parser is held to (`tally count --json` must answer exactly as this did). Do not
 * change it to make a test pass: change it only if the rules themselves change.
 */
import { StringDecoder } from 'node:string_decoder';
import { createGunzip } from 'node:zlib';
import type { Writable } from 'node:stream';
import { isValidAccountId, UNATTRIBUTED } from '../../src/domain/account-id';
import { accountFromKey, type ResolverSpec } from '../../src/domain/logs/account-resolver';
import { parseCloudFrontKey } from '../../src/domain/logs/cloudfront-key';
import { isValidDay } from '../../src/domain/days';
import { PoisonObjectError } from '../../src/domain/errors';
import { BASE_METRICS, metricNames, type MetricRule } from '../../src/domain/logs/metric-rules';
import { emptyLineCounts, type LineCounts, type MalformedSample, UsageTally } from '../../src/domain/logs/usage-tally';

/** Resolves one split log line to an account id, or `undefined` when it cannot. */
type LineResolver = (fields: readonly string[]) => string | undefined;

/**
 * The column layout of a CloudFront standard log, as its `#Fields:` directive names it.
 * Older files carry fewer fields and newer ones more; every lookup goes by name.
 */
export class FieldLayout {
  private readonly positions: ReadonlyMap<string, number>;
  private readonly looked = new Set<number>();

  constructor(readonly fields: readonly string[]) {
    const positions = new Map<string, number>();
    fields.forEach((name, position) => {
      if (!positions.has(name)) positions.set(name, position);
    });
    this.positions = positions;
  }

  /** Column of `field`, or undefined when this file does not log it. */
  index(field: string): number | undefined {
    const position = this.positions.get(field);
    if (position !== undefined) this.looked.add(position);
    return position;
  }

  /** Whether this file logs `field` (not recorded as a column read). */
  has(field: string): boolean {
    return this.positions.has(field);
  }

  /**
   * Columns some code has asked for with {@link index}, ascending. Everything that
   * reads a line (the counter, resolvers, metric rules) finds its columns through
   * `index` when it is compiled, so these are the only columns a line must have
   * split out; the parser skips the others.
   */
  get columnsRead(): readonly number[] {
    return [...this.looked].sort((a, b) => a - b);
  }

  get width(): number {
    return this.fields.length;
  }
}

/** The fields a layout must have for its lines to be counted at all. */
export const REQUIRED_FIELDS = ['date'] as const;

const FIELDS_DIRECTIVE = /^#Fields:[ \t]*(.*)$/;

/**
 * Parses a `#Fields:` directive (a space or a tab may follow the colon).
 * Returns undefined for any other line.
 *
 * @example parseFieldsDirective('#Fields: date time sc-bytes')?.fields // ['date', 'time', 'sc-bytes']
 */
export function parseFieldsDirective(line: string): FieldLayout | undefined {
  const match = FIELDS_DIRECTIVE.exec(line);
  if (!match) return undefined;
  const fields = (match[1] ?? '').trim().split(/[ \t]+/).filter((name) => name.length > 0);
  return new FieldLayout(fields);
}

/** True when `layout` can attribute lines to a day. */
export function isUsableLayout(layout: FieldLayout): boolean {
  return REQUIRED_FIELDS.every((field) => layout.has(field));
}

/** `HH:MM:SS` with real ranges (a leap second `:60` is accepted). */
export function isValidTime(value: string): boolean {
  return isValidTimeAt(value, 0, value.length);
}

/** {@link isValidTime} of `text.slice(start, end)`, without making that string. */
export function isValidTimeAt(text: string, start: number, end: number): boolean {
  if (end - start !== 8 || text.charCodeAt(start + 2) !== 58 /* : */ || text.charCodeAt(start + 5) !== 58) return false;
  const hours = twoDigits(text, start);
  const minutes = twoDigits(text, start + 3);
  const seconds = twoDigits(text, start + 6);
  return hours >= 0 && hours < 24 && minutes >= 0 && minutes < 60 && seconds >= 0 && seconds <= 60;
}

function twoDigits(value: string, at: number): number {
  const tens = value.charCodeAt(at) - 48;
  const ones = value.charCodeAt(at + 1) - 48;
  if (tens < 0 || tens > 9 || ones < 0 || ones > 9) return -1;
  return tens * 10 + ones;
}

/**
 * `sc-bytes` as a number: `-` counts as 0; anything but a non-negative integer is
 * rejected with -1 so the line is counted as malformed.
 */
export function parseByteCount(value: string): number {
  return parseByteCountAt(value, 0, value.length);
}

/** {@link parseByteCount} of `text.slice(start, end)`, without making that string. */
export function parseByteCountAt(text: string, start: number, end: number): number {
  const length = end - start;
  if (length === 1 && text.charCodeAt(start) === 45 /* - */) return 0;
  if (length === 0 || length > 15) return -1;
  let total = 0;
  for (let i = start; i < end; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    total = total * 10 + digit;
  }
  return total;
}

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}(:\d+)?$/;
/** Added with #31: ASCII letters in either case, nothing else folded (no `u` flag). */
const CLOUDFRONT_DEFAULT_DOMAIN = /\.cloudfront\.net$/i;

/** First DNS label of a host name; IP literals have none and attribute to no account. */
function firstLabel(host: string): string | undefined {
  if (IPV4.test(host) || host.startsWith('[')) return undefined;
  const dot = host.indexOf('.');
  return (dot === -1 ? host : host.slice(0, dot)).toLowerCase();
}

function present(value: string | undefined): value is string {
  return value !== undefined && value !== '' && value !== '-';
}

function validOrUndefined(account: string | undefined): string | undefined {
  return account !== undefined && isValidAccountId(account) ? account : undefined;
}

/** Distinct host labels remembered per resolver before the memory is cleared. */
const HOST_CACHE_LIMIT = 4096;

/**
 * Builds the resolver for one `#Fields` layout. Recompiled whenever the header
 * changes, so the per-line work is an array index and a string operation.
 */
export function compileResolver(spec: ResolverSpec, layout: FieldLayout, objectKey: string): LineResolver {
  // Only the host resolvers look the host columns up, so other resolvers leave them unsplit.
  const byHost = spec.kind === 'host-label' || spec.kind === 'host-map';
  const xHost = byHost ? layout.index('x-host-header') : undefined;
  const host = byHost ? layout.index('cs(Host)') : undefined;
  const viewerHost = (fields: readonly string[]): string | undefined => {
    const forwarded = xHost === undefined ? undefined : fields[xHost];
    if (present(forwarded)) return forwarded;
    const cloudfront = host === undefined ? undefined : fields[host];
    return present(cloudfront) ? cloudfront : undefined;
  };
  switch (spec.kind) {
    case 'host-label': {
      // A log holds few distinct labels: remember each one's account (or none), keyed
      // by the short label rather than the whole host. A host starting with a digit
      // or "[" may be an IP literal and takes the full path.
      const known = new Map<string, string | undefined>();
      return (fields) => {
        const value = viewerHost(fields);
        if (value === undefined) return undefined;
        // A CloudFront default domain (d111111abcdef8.cloudfront.net) names a distribution, not an account.
        if (CLOUDFRONT_DEFAULT_DOMAIN.test(value)) return undefined;
        const first = value.charCodeAt(0);
        if ((first >= 48 && first <= 57) || first === 91) return validOrUndefined(firstLabel(value));
        const dot = value.indexOf('.');
        const label = dot === -1 ? value : value.slice(0, dot);
        const cached = known.get(label);
        if (cached !== undefined || known.has(label)) return cached;
        const account = validOrUndefined(label.toLowerCase());
        if (known.size >= HOST_CACHE_LIMIT) known.clear();
        known.set(label, account);
        return account;
      };
    }
    case 'host-map':
      return (fields) => {
        const value = viewerHost(fields);
        return value === undefined ? undefined : spec.hosts.get(value.toLowerCase());
      };
    case 'path': {
      const stem = layout.index('cs-uri-stem');
      return (fields) => {
        const value = stem === undefined ? undefined : fields[stem];
        if (!present(value)) return undefined;
        return validOrUndefined(spec.pattern.exec(decodeField(value))?.groups?.account);
      };
    }
    case 'key': {
      const account = accountFromKey(spec.pattern, objectKey);
      return () => account;
    }
    case 'distribution': {
      const column = layout.index('DistributionId');
      const ofKey = parseCloudFrontKey(objectKey)?.distribution;
      return (fields) => {
        const value = column === undefined ? undefined : fields[column];
        const id = present(value) ? value : ofKey;
        return id === undefined ? undefined : spec.distributions.get(id.toUpperCase());
      };
    }
  }
}

/** URL-decodes a log field; a broken escape leaves the raw text rather than failing the line. */
export function decodeField(value: string): string {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** Adds one line's values for the configured rules into `values` (offset past the base metrics). */
export type RuleEvaluator = (fields: readonly string[], bytes: number, values: number[]) => void;

function globToRegExp(glob: string): RegExp {
  const source = glob
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}$`);
}

/** Compiles the rules against one `#Fields` layout. */
export function compileRules(rules: readonly MetricRule[], layout: FieldLayout): RuleEvaluator {
  // A column no rule tests is not looked up, so the parser need not split it out.
  const column = (field: string, used: boolean) => (used ? layout.index(field) : undefined);
  const method = column('cs-method', rules.some((rule) => rule.method !== undefined));
  const stem = column('cs-uri-stem', rules.some((rule) => rule.path !== undefined));
  const status = column('sc-status', rules.some((rule) => rule.status !== undefined));
  const tests = rules.map((rule) => {
    const path = rule.path === undefined ? undefined : globToRegExp(rule.path);
    const statusPrefix = rule.status?.endsWith('xx') ? rule.status[0] : undefined;
    return (fields: readonly string[]): boolean => {
      if (rule.method !== undefined && (method === undefined || fields[method] !== rule.method)) return false;
      if (path !== undefined) {
        const value = stem === undefined ? undefined : fields[stem];
        if (value === undefined || !path.test(decodeField(value))) return false;
      }
      if (rule.status !== undefined) {
        const value = status === undefined ? undefined : fields[status];
        if (value === undefined) return false;
        if (statusPrefix !== undefined ? value[0] !== statusPrefix || value.length !== 3 : value !== rule.status) {
          return false;
        }
      }
      return true;
    };
  });
  const byBytes = rules.map((rule) => rule.value === 'bytes');
  const base = BASE_METRICS.length;
  return (fields, bytes, values) => {
    for (let i = 0; i < tests.length; i++) {
      if (tests[i]!(fields)) values[base + i] = (values[base + i] ?? 0) + (byBytes[i] ? bytes : 1);
    }
  };
}

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
        `not a CloudFront log: ${this.lines.read} data lines and no #Fields header with a date, timestamp(ms) or timestamp field`,
      );
    }
    return { lines: this.lines, tally: this.tally, malformedSamples: this.samples };
  }

  private directive(line: string): void {
    const layout = parseFieldsDirective(line);
    if (layout === undefined) return;
    if (!isUsableLayout(layout)) {
      this.layout = undefined;
      this.unusableLayoutReason = 'the field list has no date, timestamp(ms) or timestamp field';
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
      // A rule changed since 040a205: a real day no one can read or bill (outside the supported
      // days) is malformed, not counted. Stated here on its own, not by the counter's check.
      if (day < '2000-01-01' || day > '2099-12-31') return this.malformed(`date "${day}" is outside the days Tally supports, 2000-01-01..2099-12-31`);
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
    if (account === undefined) this.lines.unattributed++;
    else this.lines.counted++;
    // The hour is the time's first two digits; a layout with no time column has none (the day only).
    const row = this.tally.row(account ?? UNATTRIBUTED, day);
    if (timeAt === undefined) this.tally.addTo(row, values);
    else this.tally.addAt(row, Number(line.slice(starts[timeAt]!, starts[timeAt]! + 2)), values);
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
