import { CLOUDFRONT_DEFAULT_DOMAIN, isCloudFrontDefaultDomainBytes, isIpLiteral } from './account-resolver';
import { jsonReaderModule } from './json-reader-wasm';
import { LINE_SCAN_WASM_BASE64 } from './line-scan-wasm';

/** The few WebAssembly names used here (the project's TypeScript lib has no DOM types). */
declare const WebAssembly: {
  compile(bytes: Uint8Array): Promise<WasmModule>;
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: object) => { readonly exports: Record<string, unknown> };
};
interface WasmModule {
  readonly kind?: 'wasm-module';
}
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmTable {
  set(index: number, value: unknown): void;
}
interface LineScanExports {
  readonly memory: WasmMemory;
  readonly scan: ScanFunction;
  readonly keyId: KeyIdFunction;
  readonly scanJson: ScanJsonFunction;
  readonly readers: WasmTable;
  readonly valueEnd: unknown;
}

/**
 * Finds the lines of log text and where the columns a counter reads start and end,
 * and checks the date, time and sc-bytes of each line, without decoding anything: a
 * WebAssembly SIMD loop looks at 64 bytes at a time for tabs and newlines
 * (line-scan.wat). Measured on a 340 MB log, it finds every line and column in about a
 * quarter of the CPU time a JavaScript byte loop takes, which is what lets counting run
 * near the speed of gunzip itself. Where WebAssembly SIMD is missing,
 * {@link scanLinesInJs} does the same in JavaScript.
 *
 * The text lives in the scanner's own memory: the caller copies bytes to
 * {@link LineScanner.textAt}, calls {@link LineScanner.scan} and reads the records
 * (layout in line-scan.wat):
 *
 * ```
 * Int32:   lineStart | lineEnd ('\n') | fields | checks | sc-bytes (float64) | key | key start | key end | - | start, end of slot 1 | slot 2 | ...
 * ```
 *
 * For the host resolvers the scanner also looks up each line's account key (the host
 * label, or the host) in a table of the keys seen before, so that the counter needs
 * no string and no hash of its own for most lines.
 */
export class LineScanner {
  /** The whole memory; the text is at {@link textAt}. */
  readonly bytes: Uint8Array;
  readonly words: Int32Array;
  readonly floats: Float64Array;
  readonly textAt = TEXT_AT;
  /** Bytes of text the memory holds at {@link textAt} (and 16 more that may be read past the end). */
  readonly textCapacity: number;
  private readonly recordsAt: number;
  private readonly recordsEnd: number;
  private readonly keyTableAt: number;
  private readonly columnTableAt: number;
  /** The most columns a layout may have read ones among (a #Fields line within the text). */
  readonly maxColumns: number;
  private readonly scanFn: ScanFunction;
  private readonly keyIdFn: KeyIdFunction;
  private readonly scanJsonFn: ScanJsonFunction | undefined;
  /** The module's exports, for the JSON readers' modules to import and to be put in. */
  private readonly wasm: LineScanExports | undefined;
  /** The JSON template the readers in the table read, by its {@link templateKey}. */
  private readersOf: string | undefined;
  /** Where JSON lines are scanned from (see {@link scanJson}), and how many bytes fit there. */
  readonly jsonTextAt: number;
  readonly jsonTextCapacity = JSON_TEXT_BYTES;
  /** Where scanJson sums the lines of its parts after the first (see line-scan.wat). */
  private readonly partSumsAt: number;
  /** Where the first and the second day's sums are: per key and UTC hour, lines (Int32) then bytes at +{@link SUMMED_BYTES_AT} (float64). */
  private readonly firstSumsAt: number;
  private readonly secondSumsAt: number;
  private lastNeeded = -1;
  private strideBytes = RECORD_HEADER_BYTES;
  private readonly engine: 'wasm' | 'js';

  /**
   * Scanners whose count has finished, kept for the next count: a warm Lambda counts
   * object after object, mostly small ones, and a new scanner costs a module instance
   * and about 5 MB of memory to map, fault in and later collect (0.5-0.7 ms of CPU, more
   * than counting a 500 KB log takes).
   */
  private static readonly idle: LineScanner[] = [];

  /** A scanner for `textCapacity` bytes of text: one a finished count released, cleared, or a new one. */
  static acquire(textCapacity: number, engine: 'wasm' | 'js' = 'wasm'): LineScanner {
    const index = LineScanner.idle.findIndex((scanner) => scanner.textCapacity === textCapacity && scanner.engine === engine);
    if (index === -1) return new LineScanner(textCapacity, engine);
    const scanner = LineScanner.idle.splice(index, 1)[0]!;
    scanner.clear();
    return scanner;
  }

  /** Hands the scanner back once its count is done (nothing may use it after). */
  release(): void {
    // The JavaScript engine keeps its keys outside the memory: it is never reused.
    if (this.engine === 'wasm' && LineScanner.idle.length < IDLE_SCANNERS && !LineScanner.idle.includes(this)) LineScanner.idle.push(this);
  }

  constructor(textCapacity: number, engine: 'wasm' | 'js' = 'wasm') {
    this.engine = engine;
    this.textCapacity = textCapacity;
    this.recordsAt = align(TEXT_AT + textCapacity + TEXT_SLACK, 64);
    this.recordsEnd = this.recordsAt + RECORDS_BYTES;
    this.keyTableAt = this.recordsEnd;
    this.columnTableAt = this.keyTableAt + KEY_TABLE_BYTES;
    // A #Fields line that fits in the text names at most one column per two bytes.
    this.maxColumns = Math.floor(textCapacity / 2) + 2;
    this.jsonTextAt = align(this.columnTableAt + 4 * this.maxColumns, 64);
    this.partSumsAt = align(this.jsonTextAt + JSON_TEXT_BYTES + TEXT_SLACK, 64);
    this.firstSumsAt = align(this.partSumsAt + PART_SUMS_BYTES, 64);
    this.secondSumsAt = this.firstSumsAt + DAY_SUMS_BYTES;
    const bytesNeeded = this.secondSumsAt + DAY_SUMS_BYTES;
    const module = engine === 'wasm' ? lineScanModule() : undefined;
    if (module !== undefined) {
      const wasm = new WebAssembly.Instance(module, {}).exports as unknown as LineScanExports;
      const memory = wasm.memory;
      memory.grow(Math.ceil(bytesNeeded / PAGE) - memory.buffer.byteLength / PAGE);
      this.bytes = new Uint8Array(memory.buffer);
      this.wasm = wasm;
      this.scanFn = wasm.scan;
      this.keyIdFn = wasm.keyId;
      this.scanJsonFn = wasm.scanJson;
    } else {
      this.bytes = new Uint8Array(Math.ceil(bytesNeeded / PAGE) * PAGE);
      const bytes = this.bytes;
      const keys = new Map<string, number>();
      this.scanFn = (pos, end, rec, recEnd, lastNeeded, stride) => scanLinesInJs(bytes, keys, pos, end, rec, recEnd, lastNeeded, stride);
      this.keyIdFn = (start, end, id) => keyIdInJs(bytes, keys, start, end, id);
      this.scanJsonFn = undefined;
      this.wasm = undefined;
    }
    this.words = new Int32Array(this.bytes.buffer, 0, this.bytes.length >> 2);
    this.floats = new Float64Array(this.bytes.buffer, 0, this.bytes.length >> 3);
    this.words[KEY_TABLE_AT_AT >> 2] = this.keyTableAt;
    this.words[COLUMN_TABLE_AT_AT >> 2] = this.columnTableAt;
    this.words[PART_SUMS_AT_AT >> 2] = this.partSumsAt;
    this.words[SECOND_SUMS_AT >> 2] = this.secondSumsAt;
    this.words[FIRST_SUMS_AT >> 2] = this.firstSumsAt;
    this.bytes[JSON_DASH_AT] = 45; /* - */
    this.setLayout(NO_LAYOUT);
  }

  /** As new: no keys, sums, days, layout, template or summing (the text and records are overwritten as they are used). */
  private clear(): void {
    const { words } = this;
    this.bytes.fill(0, this.keyTableAt, this.keyTableAt + KEY_SLOTS_BYTES);
    // Only keys of the table were summed (a finished count leaves none): a megabyte of sums per day is not touched.
    const keys = this.engine === 'wasm' ? Math.min(words[KEY_COUNT_AT >> 2]!, MAX_KEYS) : MAX_KEYS;
    words[KEY_COUNT_AT >> 2] = 0;
    this.clearSums(keys, 0);
    this.clearSums(keys, 1);
    for (const at of [RECORDS_WRITTEN_AT, DAY_VALID_AT, SECOND_DAY_VALID_AT, LAST_SUMMED_DAY_AT, STOP_AT_NEW_DAY_AT, COUNTING_MALFORMED_AT, MALFORMED_COUNT_AT, SUMMING_AT, SUMMED_TAIL_AT, SUMMABLE_BYTES_AT, JSON_STATUS_AT]) {
      words[at >> 2] = 0;
    }
    this.setLayout(NO_LAYOUT);
  }

  /** Whether WebAssembly SIMD does the scanning here. */
  static get simd(): boolean {
    return lineScanModule() !== undefined;
  }

  /**
   * The columns to record, in slot order (slot 1 first): their starts and ends are in
   * every record from now on. `width` is the number of fields a line must have for its
   * date (`date` is its column), time and sc-bytes to be checked; -1 for a column the
   * layout lacks.
   */
  setLayout(layout: ScanLayout): void {
    const words = this.words;
    const table = this.columnTableAt >> 2;
    const slotOf = (column: number) => (column === -1 ? 0 : layout.columns.indexOf(column) + 1);
    const lastNeeded = layout.columns.length === 0 ? -1 : Math.max(...layout.columns);
    if (lastNeeded >= this.maxColumns) throw new RangeError(`column ${lastNeeded} is past the last the scanner records (${this.maxColumns - 1})`);
    if (layout.columns.length > 255) throw new RangeError('the scanner records at most 255 columns');
    // Per column: the next column read at or after it, and its own slot when it is read.
    for (let column = lastNeeded, next = lastNeeded; column >= 0; column--) {
      const slot = slotOf(column);
      if (slot !== 0) next = column;
      words[table + column] = (next << 8) | slot;
    }
    this.lastNeeded = lastNeeded;
    this.strideBytes = RECORD_HEADER_BYTES + 8 * layout.columns.length;
    words[WIDTH_AT >> 2] = layout.width;
    words[DATE_SLOT_AT >> 2] = slotOf(layout.date);
    words[TIME_SLOT_AT >> 2] = slotOf(layout.time);
    // Lines are summed in the hour of their time: with no time column, none is summed.
    if (words[TIME_SLOT_AT >> 2] === 0) words[SUMMING_AT >> 2] = 0;
    words[BYTES_SLOT_AT >> 2] = slotOf(layout.bytes);
    words[KEY_MODE_AT >> 2] = layout.key === undefined ? 0 : layout.key.kind === 'label' ? 1 : 2;
    words[KEY_FIRST_SLOT_AT >> 2] = layout.key === undefined ? 0 : slotOf(layout.key.columns[0]);
    words[KEY_SECOND_SLOT_AT >> 2] = layout.key === undefined ? 0 : slotOf(layout.key.columns[1]);
  }

  /**
   * The id of the account key `bytes[start, end)` in the key table; when it is not
   * there yet, it is added as `id` (the number of keys so far) and `id` is answered.
   * -2 when the key is too long to keep or the table is full.
   */
  keyId(start: number, end: number, id: number): number {
    return this.keyIdFn(start, end, id);
  }

  /**
   * Sets the JSON template {@link scanJson} reads lines with: per key, the exact bytes
   * before its value (`{"key":"` first, then `","key":"`) and the slot its value is
   * recorded in (0: not read). The values are read by a module written for the template
   * (json-reader-wasm.ts), compiled once per process and template. False when the
   * scanner cannot read JSON (no WebAssembly SIMD) or the template is too large.
   */
  setJsonTemplate(glues: readonly Uint8Array[], slots: readonly number[]): boolean {
    const wasm = this.wasm;
    const glueBytes = glues.reduce((sum, glue) => sum + glue.length, 0);
    if (wasm === undefined || glues.length === 0 || glues.length > MAX_JSON_KEYS || glueBytes > MAX_JSON_GLUE_BYTES) return false;
    const key = templateKey(glues, slots);
    if (key === this.readersOf) return true;
    let readers: Record<string, unknown>;
    try {
      readers = new WebAssembly.Instance(jsonReaders(key, glues, slots), { env: { memory: wasm.memory, valueEnd: wasm.valueEnd } }).exports;
    } catch {
      // (None is known to fail; should one, its lines are read by the general reader.)
      return false;
    }
    wasm.readers.set(0, readers.quad);
    wasm.readers.set(1, readers.line);
    this.readersOf = key;
    return true;
  }

  /**
   * Scans JSON lines from `pos` (a line start) to `end` (just past a '\n') with the
   * template of {@link setJsonTemplate}: records as {@link scan} writes them, until a
   * line does not fit or is longer than `maxLine` bytes ({@link jsonStatus} 1: the line
   * at the returned position is not read), or the records are full (status 2).
   */
  scanJson(pos: number, end: number, maxLine: number): number {
    return this.scanJsonFn!(pos, end, this.recordsAt, this.recordsEnd, this.strideBytes, maxLine);
  }

  /** Why the last {@link scanJson} stopped: 0 at the end, 1 at a line that does not fit, 2 with the records full. */
  get jsonStatus(): number {
    return this.words[JSON_STATUS_AT >> 2]!;
  }

  /**
   * The day (10 ASCII bytes) that check 1 (`slot` 0) or check 8 (`slot` 1: the second day)
   * compares dates with. A log written near midnight has lines of two days mixed: both
   * are checked, and summed apart, in the scanner.
   */
  setDay(day: string, slot: DaySlot = 0): void {
    const at = slot === 0 ? DAY_AT : SECOND_DAY_AT;
    for (let i = 0; i < 10; i++) this.bytes[at + i] = day.charCodeAt(i);
    this.words[(slot === 0 ? DAY_VALID_AT : SECOND_DAY_VALID_AT) >> 2] = 1;
  }

  /**
   * Whether lines that pass every check and whose key is known are summed per key by
   * the scanner ({@link summedLines}, {@link summedBytes}, by UTC hour
   * {@link summedHourLines}, {@link summedHourBytes}) instead of recorded: for a counter
   * with no metric rules, such a line is its key's account, one request and its sc-bytes
   * on the day of {@link setDay}, in the hour of its time. Lines longer than
   * `maxLineBytes` are recorded. A layout with no time column sums nothing: its lines
   * have no hour.
   */
  setSumming(on: boolean, maxLineBytes: number): void {
    this.words[SUMMING_AT >> 2] = on && this.words[TIME_SLOT_AT >> 2] !== 0 ? 1 : 0;
    this.words[SUMMABLE_BYTES_AT >> 2] = Math.min(maxLineBytes, 0x7fffffff);
  }

  /**
   * Whether {@link scan} stops after the record of a line whose date is neither of its
   * days, so that the caller can make that date one of them before the lines after it
   * (dates as text only: a timestamp never equals a day, and every line would stop).
   */
  setStopAtNewDay(on: boolean): void {
    this.words[STOP_AT_NEW_DAY_AT >> 2] = on ? 1 : 0;
  }

  /**
   * Whether lines of 1 to `maxLineBytes` bytes (see {@link setSumming}), not ending in a
   * CR, that are malformed whatever their date (too few fields, or a bad time or byte
   * count) are only counted ({@link takeMalformed}), not recorded: for a caller that needs
   * no more of them as samples.
   */
  setCountingMalformed(on: boolean): void {
    this.words[COUNTING_MALFORMED_AT >> 2] = on ? 1 : 0;
  }

  /** The malformed lines counted since the last call (see {@link setCountingMalformed}). */
  takeMalformed(): number {
    const count = this.words[MALFORMED_COUNT_AT >> 2]!;
    this.words[MALFORMED_COUNT_AT >> 2] = 0;
    return count;
  }

  /** Lines on the day of `slot` summed for key `id` since {@link clearSums}, in every hour. */
  summedLines(id: number, slot: DaySlot = 0): number {
    let lines = 0;
    for (let hour = 0; hour < HOURS; hour++) lines += this.summedHourLines(id, hour, slot);
    return lines;
  }

  /** Their sc-bytes. */
  summedBytes(id: number, slot: DaySlot = 0): number {
    let bytes = 0;
    for (let hour = 0; hour < HOURS; hour++) bytes += this.summedHourBytes(id, hour, slot);
    return bytes;
  }

  /** Lines on the day of `slot` summed for key `id` in UTC hour `hour` (0..23) since {@link clearSums}. */
  summedHourLines(id: number, hour: number, slot: DaySlot = 0): number {
    return this.words[(this.sumsBase(slot) >> 2) + hour * MAX_KEYS + id]!;
  }

  /** Their sc-bytes. */
  summedHourBytes(id: number, hour: number, slot: DaySlot = 0): number {
    return this.floats[((this.sumsBase(slot) + SUMMED_BYTES_AT) >> 3) + hour * MAX_KEYS + id]!;
  }

  /**
   * Key `id`'s sums on the day of `slot` into `slots` as `UsageTally.addSlots` reads them
   * (`width` values a slot, slot h + 1 UTC hour h: lines first, sc-bytes second; the rest
   * of `slots` is left as it is), answering its lines in every hour.
   */
  hourSlots(id: number, slot: DaySlot, slots: Float64Array, width: number): number {
    const words = this.words;
    const floats = this.floats;
    const base = this.sumsBase(slot);
    let lines = 0;
    for (let hour = 0, cell = id; hour < HOURS; hour++, cell += MAX_KEYS) {
      const count = words[(base >> 2) + cell]!;
      lines += count;
      slots[(hour + 1) * width] = count;
      slots[(hour + 1) * width + 1] = floats[((base + SUMMED_BYTES_AT) >> 3) + cell]!;
    }
    return lines;
  }

  /** Forgets the sums of keys `0..keys - 1` on the day of `slot`. */
  clearSums(keys: number, slot: DaySlot = 0): void {
    const lines = this.sumsBase(slot) >> 2;
    const bytes = (this.sumsBase(slot) + SUMMED_BYTES_AT) >> 3;
    for (let hour = 0; hour < HOURS; hour++) {
      this.words.fill(0, lines + hour * MAX_KEYS, lines + hour * MAX_KEYS + keys);
      this.floats.fill(0, bytes + hour * MAX_KEYS, bytes + hour * MAX_KEYS + keys);
    }
  }

  private sumsBase(slot: DaySlot): number {
    return slot === 0 ? this.firstSumsAt : this.secondSumsAt;
  }

  /** Lines the last {@link scan} summed after its last record. */
  get summedAfterLastRecord(): number {
    return this.words[SUMMED_TAIL_AT >> 2]!;
  }

  /** The day slot of the last line the last scan summed after its last record; -1 when none. */
  get lastSummedSlot(): DaySlot | -1 {
    return (this.words[LAST_SUMMED_DAY_AT >> 2]! - 1) as DaySlot | -1;
  }

  /** Int32 words per record. */
  get stride(): number {
    return this.strideBytes >> 2;
  }

  /** The Int32 index of the first record. */
  get firstRecord(): number {
    return this.recordsAt >> 2;
  }

  /**
   * Scans the lines from `pos` (a line start) to `end` (just past a '\n') until a line
   * starting with '#' or until the records are full. Returns where it stopped; the
   * number of records written is `words[0]`.
   */
  scan(pos: number, end: number): number {
    return this.scanFn(pos, end, this.recordsAt, this.recordsEnd, this.lastNeeded, this.strideBytes);
  }
}

/** What a scanner needs to know of a `#Fields` layout. */
export interface ScanLayout {
  /** The columns to record, in slot order. */
  readonly columns: readonly number[];
  readonly width: number;
  /** Columns of date, time and sc-bytes, -1 when missing. */
  readonly date: number;
  readonly time: number;
  readonly bytes: number;
  /** The account key the scanner looks up, for the host resolvers. */
  readonly key?: ScanKey;
}

/** The bytes that decide a line's account: the host label, or the whole host, of x-host-header else cs(Host). */
export interface ScanKey {
  readonly kind: 'label' | 'host';
  /** x-host-header, cs(Host); -1 when the layout lacks one. */
  readonly columns: readonly [number, number];
}

/** Record key values (see line-scan.wat). */
export const KEY_UNKNOWN = -1;
export const KEY_NONE = -2;
export const KEY_NO_HOST = -3;
/**
 * A host of no account (host label key) not in the key table yet: an IP literal or a
 * CloudFront default domain, whose key is the whole host.
 */
export const KEY_IP_LITERAL = -4;

/** No layout yet: nothing recorded, nothing checked. */
export const NO_LAYOUT: ScanLayout = { columns: [], width: 0x7fffffff, date: -1, time: -1, bytes: -1 };

/** Record checks (see line-scan.wat). */
export const SAME_DAY = 1;
export const TIME_OK = 2;
export const BYTES_OK = 4;
/** The date is the second day's (see {@link LineScanner.setDay}), not the first's. */
export const SECOND_DAY = 8;
export const ALL_CHECKS = SAME_DAY | TIME_OK | BYTES_OK;
/** Every check passed, on the second day. */
export const ALL_CHECKS_SECOND_DAY = SECOND_DAY | TIME_OK | BYTES_OK;

/** The scanner's two days: 0 the first (check 1), 1 the second (check 8). */
export type DaySlot = 0 | 1;

type ScanFunction = (pos: number, end: number, rec: number, recEnd: number, lastNeeded: number, stride: number) => number;
type KeyIdFunction = (start: number, end: number, id: number) => number;
type ScanJsonFunction = (pos: number, end: number, rec: number, recEnd: number, stride: number, maxLine: number) => number;

const PAGE = 65_536;
const DAY_VALID_AT = 4;
const DAY_AT = 8;
const WIDTH_AT = 24;
const DATE_SLOT_AT = 28;
const TIME_SLOT_AT = 32;
const BYTES_SLOT_AT = 36;
const KEY_MODE_AT = 40;
const KEY_FIRST_SLOT_AT = 44;
const KEY_SECOND_SLOT_AT = 48;
const KEY_TABLE_AT_AT = 52;
/** The scanner's key table (line-scan.wat, $find): 8,192 slots of 32 bytes, then 64 bytes per key. */
const KEY_SLOTS_BYTES = 8192 * 32;
const KEY_TABLE_BYTES = KEY_SLOTS_BYTES + 4096 * 64;
/** How many keys the table holds ($find writes it). */
const KEY_COUNT_AT = 56;
/** How many records the last scan wrote. */
const RECORDS_WRITTEN_AT = 0;
/** Finished scanners kept for reuse: counts in flight at once in one process are few. */
const IDLE_SCANNERS = 2;
const MAX_KEYS = 4096;
const MAX_KEY_BYTES = 64;
const COLUMN_TABLE_AT_AT = 60;
/** A '-', what an empty JSON value is recorded as. */
const JSON_DASH_AT = 100;
const JSON_STATUS_AT = 104;
const PART_SUMS_AT_AT = 108;
/** UTC hours of a day: the scanner sums each key's lines per hour (a cell per hour and key, hour-major: hour * MAX_KEYS + key). */
const HOURS = 24;
/** A day's sums: per hour and key, lines (Int32), then at {@link SUMMED_BYTES_AT} their bytes (float64). */
const SUMMED_BYTES_AT = MAX_KEYS * HOURS * 4;
const DAY_SUMS_BYTES = MAX_KEYS * HOURS * (4 + 8);
/** For each of scanJson's parts but the first and each day, a day's sums. */
const PART_SUMS_BYTES = 6 * DAY_SUMS_BYTES;
const MAX_JSON_KEYS = 480;
const MAX_JSON_GLUE_BYTES = 40_960;
const JSON_TEXT_BYTES = 1024 * 1024;
const SUMMING_AT = 64;
const SUMMED_TAIL_AT = 80;
const SUMMABLE_BYTES_AT = 84;
const STOP_AT_NEW_DAY_AT = 68;
const COUNTING_MALFORMED_AT = 72;
const MALFORMED_COUNT_AT = 76;
const SECOND_DAY_VALID_AT = 88;
const SECOND_SUMS_AT = 92;
/** Where the first day's sums are (the second day's at {@link SECOND_SUMS_AT}). */
const FIRST_SUMS_AT = 124;
const LAST_SUMMED_DAY_AT = 96;
const SECOND_DAY_AT = 112;
const TEXT_AT = PAGE;
/** The SIMD loop reads up to 63 bytes past the end of the text. */
const TEXT_SLACK = 64;
const RECORD_HEADER_BYTES = 40;
const RECORDS_BYTES = 256 * 1024;

function align(value: number, to: number): number {
  return Math.ceil(value / to) * to;
}

let compiled: WasmModule | null | undefined;

/** The JSON readers' modules compiled in this process, by template (a few: CloudFront writes one per format). */
const readerModules = new Map<string, WasmModule>();
const MAX_READER_MODULES = 16;

/** A JSON template as a string: the glues' bytes and the slots. */
function templateKey(glues: readonly Uint8Array[], slots: readonly number[]): string {
  return `${slots.join(',')}|${glues.map((glue) => glue.length).join(',')}|${glues.map((glue) => Buffer.from(glue).toString('latin1')).join('')}`;
}

function jsonReaders(key: string, glues: readonly Uint8Array[], slots: readonly number[]): WasmModule {
  let module = readerModules.get(key);
  if (module === undefined) {
    module = new WebAssembly.Module(jsonReaderModule(glues, slots));
    if (readerModules.size >= MAX_READER_MODULES) readerModules.delete(readerModules.keys().next().value!);
    readerModules.set(key, module);
  }
  return module;
}

/**
 * Compiles the scanner on V8's other threads, for a caller to start while it waits for a
 * log's first bytes (a file opened, an object's GetObject): compiled when the first count
 * begins, it was that count's main thread's work, about half a millisecond (issue 34).
 */
export async function prepareLineScan(): Promise<void> {
  if (compiled !== undefined) return;
  try {
    const module = await WebAssembly.compile(Buffer.from(LINE_SCAN_WASM_BASE64, 'base64'));
    compiled ??= module;
  } catch {
    // Compiled again, and found missing, on first use.
  }
}

/** The compiled scanner, once per process; undefined where WebAssembly SIMD is missing. */
function lineScanModule(): WasmModule | undefined {
  if (compiled === undefined) {
    try {
      compiled = new WebAssembly.Module(Buffer.from(LINE_SCAN_WASM_BASE64, 'base64'));
    } catch {
      compiled = null;
    }
  }
  return compiled ?? undefined;
}

/**
 * line-scan.wat in JavaScript, the same records from the same arguments: the fallback
 * where WebAssembly SIMD is missing, and the plain statement of what the SIMD loop does.
 */
export function scanLinesInJs(
  bytes: Uint8Array,
  keys: Map<string, number>,
  pos: number,
  end: number,
  rec: number,
  recEnd: number,
  lastNeeded: number,
  stride: number,
): number {
  const words = new Int32Array(bytes.buffer, bytes.byteOffset, bytes.length >> 2);
  const floats = new Float64Array(bytes.buffer, bytes.byteOffset, bytes.length >> 3);
  const width = words[WIDTH_AT >> 2]!;
  let written = 0;
  let summed = 0;
  let lastDay = 0;
  let lineStart = pos;
  words[0] = 0;
  words[SUMMED_TAIL_AT >> 2] = 0;
  words[LAST_SUMMED_DAY_AT >> 2] = 0;
  while (lineStart < end && bytes[lineStart] !== 35 && rec + stride <= recEnd) {
    const at = rec >> 2;
    let column = 0;
    let fieldStart = lineStart;
    let p = lineStart;
    for (;; p++) {
      const byte = bytes[p];
      if (byte !== 9 && byte !== 10) continue;
      if (column <= lastNeeded) {
        const slot = words[(words[COLUMN_TABLE_AT_AT >> 2]! >> 2) + column]! & 255;
        if (slot !== 0) {
          words[at + 2 * slot + 8] = fieldStart;
          words[at + 2 * slot + 9] = p;
        }
      }
      if (byte === 10) break;
      column++;
      fieldStart = p + 1;
    }
    const checks = column + 1 >= width ? checksInJs(bytes, words, floats, at) : 0;
    if (column + 1 >= width) keyInJs(bytes, words, keys, at, p);
    const key = words[at + 6]!;
    const second = checks === ALL_CHECKS_SECOND_DAY;
    const length = p - lineStart;
    const summable = length <= words[SUMMABLE_BYTES_AT >> 2]!;
    let newDay = column + 1 >= width && (checks & (SAME_DAY | SECOND_DAY)) === 0;
    if (words[SUMMING_AT >> 2] === 1 && (checks === ALL_CHECKS || second) && key >= 0 && summable) {
      const base = words[(second ? SECOND_SUMS_AT : FIRST_SUMS_AT) >> 2]!;
      // The hour: the time's first two digits (summing needs a time column; TIME_OK checked them).
      const time = words[at + 2 * words[TIME_SLOT_AT >> 2]! + 8]!;
      const cell = ((bytes[time]! - 48) * 10 + (bytes[time + 1]! - 48)) * MAX_KEYS + key;
      words[(base >> 2) + cell]!++;
      floats[((base + SUMMED_BYTES_AT) >> 3) + cell] = floats[((base + SUMMED_BYTES_AT) >> 3) + cell]! + floats[(at >> 1) + 2]!;
      lastDay = second ? 2 : 1;
      summed++;
    } else if (words[COUNTING_MALFORMED_AT >> 2] === 1 && (checks & (TIME_OK | BYTES_OK)) !== (TIME_OK | BYTES_OK) && length > 0 && summable && bytes[p - 1] !== 13) {
      words[MALFORMED_COUNT_AT >> 2]!++;
      newDay = false;
      summed++;
    } else {
      words[at] = lineStart;
      words[at + 1] = p;
      words[at + 2] = column + 1;
      words[at + 3] = checks;
      words[at + 9] = summed;
      summed = 0;
      lastDay = 0;
      rec += stride;
      written++;
    }
    lineStart = p + 1;
    // A line of a new day ends the scan when asked (a line summed is on one of the days).
    if (words[STOP_AT_NEW_DAY_AT >> 2] === 1 && newDay) break;
  }
  words[0] = written;
  words[SUMMED_TAIL_AT >> 2] = summed;
  words[LAST_SUMMED_DAY_AT >> 2] = lastDay;
  return lineStart;
}

function checksInJs(bytes: Uint8Array, words: Int32Array, floats: Float64Array, at: number): number {
  const column = (slotAt: number): [number, number] => {
    const slot = words[slotAt >> 2]!;
    return [words[at + 2 * slot + 8]!, words[at + 2 * slot + 9]!];
  };
  let checks = 0;
  const [dateStart, dateEnd] = column(DATE_SLOT_AT);
  const isDay = (validAt: number, dayAt: number) =>
    words[validAt >> 2] === 1 && dateEnd - dateStart === 10 && bytes.subarray(dateStart, dateEnd).every((b, i) => b === bytes[dayAt + i]);
  if (isDay(DAY_VALID_AT, DAY_AT)) checks |= SAME_DAY;
  else if (isDay(SECOND_DAY_VALID_AT, SECOND_DAY_AT)) checks |= SECOND_DAY;
  if (words[TIME_SLOT_AT >> 2] === 0) checks |= TIME_OK;
  else {
    const [start, end] = column(TIME_SLOT_AT);
    const two = (i: number) => {
      const tens = bytes[start + i]! - 48;
      const ones = bytes[start + i + 1]! - 48;
      return tens < 0 || tens > 9 || ones < 0 || ones > 9 ? 100 : tens * 10 + ones;
    };
    if (end - start === 8 && bytes[start + 2] === 58 && bytes[start + 5] === 58 && two(0) < 24 && two(3) < 60 && two(6) <= 60) checks |= TIME_OK;
  }
  floats[(at >> 1) + 2] = 0;
  if (words[BYTES_SLOT_AT >> 2] === 0) return checks | BYTES_OK;
  const [start, end] = column(BYTES_SLOT_AT);
  if (end - start === 1 && bytes[start] === 45) return checks | BYTES_OK;
  if (end === start || end - start > 15) return checks;
  let value = 0;
  for (let i = start; i < end; i++) {
    const digit = bytes[i]! - 48;
    if (digit < 0 || digit > 9) return checks;
    value = value * 10 + digit;
  }
  floats[(at >> 1) + 2] = value;
  return checks | BYTES_OK;
}

function keyInJs(bytes: Uint8Array, words: Int32Array, keys: Map<string, number>, at: number, newline: number): void {
  const mode = words[KEY_MODE_AT >> 2]!;
  if (mode === 0) {
    words[at + 6] = KEY_NONE;
    return;
  }
  const present = (start: number, end: number) => end - start > 1 || (end - start === 1 && bytes[start] !== 45);
  let chosen: [number, number] | undefined;
  for (const slotAt of [KEY_FIRST_SLOT_AT, KEY_SECOND_SLOT_AT]) {
    const slot = words[slotAt >> 2]!;
    if (slot === 0) continue;
    const start = words[at + 2 * slot + 8]!;
    const end = words[at + 2 * slot + 9]!;
    if (end === newline && bytes[end - 1] === 13) {
      words[at + 6] = KEY_NONE;
      return;
    }
    if (present(start, end)) {
      chosen = [start, end];
      break;
    }
  }
  if (chosen === undefined) {
    words[at + 6] = KEY_NO_HOST;
    return;
  }
  const [start, end] = chosen;
  let stop = end;
  if (mode === 1) {
    if (isIpLiteral(Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString('latin1'))) {
      words[at + 7] = start;
      words[at + 8] = end;
      const id = keyIdInJs(bytes, keys, start, end, -1);
      words[at + 6] = id === KEY_UNKNOWN ? KEY_IP_LITERAL : id;
      return;
    }
    stop = start;
    while (stop < end && bytes[stop] !== 46) stop++;
    // A CloudFront default domain is keyed by the whole host too: its label is no account's.
    if (end - stop === CLOUDFRONT_DEFAULT_DOMAIN.length && isCloudFrontDefaultDomainBytes(bytes, start, end)) {
      words[at + 7] = start;
      words[at + 8] = end;
      const id = keyIdInJs(bytes, keys, start, end, -1);
      words[at + 6] = id === KEY_UNKNOWN ? KEY_IP_LITERAL : id;
      return;
    }
  }
  words[at + 7] = start;
  words[at + 8] = stop;
  words[at + 6] = keyIdInJs(bytes, keys, start, stop, -1);
}

function keyIdInJs(bytes: Uint8Array, keys: Map<string, number>, start: number, end: number, id: number): number {
  if (end - start > MAX_KEY_BYTES) return KEY_NONE;
  const key = Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString('latin1');
  const known = keys.get(key);
  if (known !== undefined) return known;
  if (id < 0) return KEY_UNKNOWN;
  if (id >= MAX_KEYS) return KEY_NONE;
  keys.set(key, id);
  return id;
}
