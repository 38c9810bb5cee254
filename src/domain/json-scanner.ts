import { JSON_SCAN_WASM_BASE64 } from './json-scan-wasm';

/** The few WebAssembly names used here (the project's TypeScript lib has no DOM types). */
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: object) => { readonly exports: { readonly memory: WasmMemory; readonly convert: ConvertFunction } };
};
interface WasmModule {
  readonly kind?: 'wasm-module';
}
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
type ConvertFunction = (pos: number, end: number, out: number, outEnd: number, maxLine: number) => number;

/**
 * The keys of the JSON lines being read, as their bytes, and for each key the slot its
 * value goes to in the tab-separated line (1-based; 0 when the value is not read).
 */
export interface JsonTemplate {
  readonly keyBytes: Uint8Array;
  /** The end of each key in {@link keyBytes}. */
  readonly keyEnds: readonly number[];
  readonly slotOfKey: readonly number[];
  /** The values written per line (the counter's fields). */
  readonly slots: number;
}

/** Where a reader of JSON lines hands over what the scanner could not read, and learns from. */
export interface JsonLineFallback {
  /** A whole line `[start, end)` of `bytes` (its '\n' at `end`, a CR before it kept): read it in full. */
  line(bytes: Buffer, start: number, end: number): void;
  /** The template of the lines read last, if they can have one. */
  template(): JsonTemplate | undefined;
  /** Tab-separated lines of the values read, for the counter. */
  text(bytes: Uint8Array): void;
}

/**
 * JSON lines at the speed of tab-separated ones. CloudFront writes every line of a v2
 * JSON log as the same flat object: the same keys in the same order, every value a
 * string. The scanner learns those keys from a line the general reader took apart
 * ({@link JsonTemplate}) and then reads each line by checking, 16 bytes at a time
 * (json-scan.wat, WebAssembly SIMD), that the bytes between its values are exactly the
 * template's and that no value holds a quote, a backslash or a control byte; the values
 * read are written out as the tab-separated line the general reader would have made,
 * for the counter's own line scanner. Any line that does not fit (other keys, white
 * space, an escape, a line too long) goes to the general reader, in its place, so the
 * lines are counted in order and exactly as before
 * (test/unit/json-scanner.property.test.ts holds it to that).
 */
export class JsonScanner {
  private readonly bytes: Uint8Array;
  private readonly buffer: Buffer;
  private readonly words: Int32Array;
  private readonly convertFn: ConvertFunction;
  private readonly outAt: number;
  private readonly outEnd: number;
  private template: JsonTemplate | undefined;
  private templateOn = false;

  private constructor(
    private readonly fallback: JsonLineFallback,
    private readonly maxLineBytes: number,
    private readonly textCapacity: number,
    module: WasmModule,
  ) {
    this.outAt = align(TEXT_AT + textCapacity + SLACK, 64);
    this.outEnd = this.outAt + textCapacity + OUTPUT_EXTRA;
    const instance = new WebAssembly.Instance(module, {});
    const memory = instance.exports.memory;
    const needed = this.outEnd + SLACK;
    memory.grow(Math.ceil(needed / PAGE) - memory.buffer.byteLength / PAGE);
    this.bytes = new Uint8Array(memory.buffer);
    this.buffer = Buffer.from(memory.buffer);
    this.words = new Int32Array(memory.buffer);
    this.convertFn = instance.exports.convert;
  }

  /** A scanner, or undefined where WebAssembly SIMD is missing (the general reader then reads every line). */
  static create(fallback: JsonLineFallback, maxLineBytes: number, textCapacity = DEFAULT_TEXT_CAPACITY): JsonScanner | undefined {
    const module = jsonScanModule();
    return module === undefined ? undefined : new JsonScanner(fallback, maxLineBytes, textCapacity, module);
  }

  /** Reads the whole lines `[from, end)` of `bytes` (`end` just past a '\n'). */
  lines(bytes: Uint8Array, from: number, end: number): void {
    const capacity = this.textCapacity;
    // The line before may have been read by the general reader alone (one cut by a chunk).
    this.learn();
    let at = from;
    while (at < end) {
      let stop = Math.min(end, at + capacity);
      if (stop < end) {
        // A slice ends with a line.
        stop = bytes.lastIndexOf(10, stop - 1) + 1;
        if (stop <= at) {
          // One line longer than the scanner's text: the general reader has it.
          const newline = bytes.indexOf(10, at);
          this.fallback.line(asBuffer(bytes), at, newline);
          this.learn();
          at = newline + 1;
          continue;
        }
      }
      this.bytes.set(bytes.subarray(at, stop), TEXT_AT);
      this.convert(TEXT_AT, TEXT_AT + stop - at);
      at = stop;
    }
  }

  private convert(from: number, end: number): void {
    const { bytes, words, fallback } = this;
    let pos = from;
    while (pos < end) {
      if (!this.templateOn) {
        const newline = bytes.indexOf(10, pos);
        fallback.line(this.buffer, pos, newline);
        pos = newline + 1;
        this.learn();
        continue;
      }
      const next = this.convertFn(pos, end, this.outAt, this.outEnd, Math.min(this.maxLineBytes, 0x7fffffff));
      const outEnd = words[0]!;
      if (outEnd > this.outAt) fallback.text(bytes.subarray(this.outAt, outEnd));
      pos = next;
      if (words[1] === 1) {
        const newline = bytes.indexOf(10, pos);
        fallback.line(this.buffer, pos, newline);
        pos = newline + 1;
        this.learn();
      }
    }
  }

  /** Takes the reader's template when it changed. */
  private learn(): void {
    const template = this.fallback.template();
    if (template === this.template) return;
    this.template = template;
    this.templateOn = template !== undefined && this.load(template);
  }

  /** Writes the template into the module's memory; false when it does not fit there. */
  private load(template: JsonTemplate): boolean {
    const { keyBytes, keyEnds, slotOfKey, slots } = template;
    const keys = keyEnds.length;
    const glueBytes = keyBytes.length + 6 * keys + 2;
    if (keys === 0 || slots === 0 || keys + 1 > MAX_KEYS || slots > MAX_KEYS || glueBytes > MAX_GLUE_BYTES) return false;
    const { bytes, words } = this;
    let at = GLUE_AT;
    const entry = (k: number, glue: readonly number[], key: Uint8Array, slot: number) => {
      const start = at;
      for (const byte of glue.slice(0, glue.length - 3)) bytes[at++] = byte;
      bytes.set(key, at);
      at += key.length;
      for (const byte of glue.slice(glue.length - 3)) bytes[at++] = byte;
      const word = (TABLE_AT >> 2) + 4 * k;
      words[word] = start;
      words[word + 1] = at - start;
      words[word + 2] = slot;
    };
    let from = 0;
    for (let k = 0; k < keys; k++) {
      const key = keyBytes.subarray(from, keyEnds[k]);
      from = keyEnds[k]!;
      // `{"key":"` first, then `","key":"`: the quote closing a value belongs to the glue after it.
      entry(k, k === 0 ? [0x7b, 0x22, 0x22, 0x3a, 0x22] : [0x22, 0x2c, 0x22, 0x22, 0x3a, 0x22], key, slotOfKey[k]!);
    }
    const closing = (TABLE_AT >> 2) + 4 * keys;
    words[closing] = at;
    words[closing + 1] = 2;
    words[closing + 2] = 0;
    bytes[at++] = 0x22;
    bytes[at++] = 0x7d;
    words[2] = keys;
    words[3] = slots;
    return true;
  }
}

const PAGE = 65_536;
const TABLE_AT = 1024;
/** Keys of a template (the table's room, 16 bytes each, and the slots' 8 bytes each). */
const MAX_KEYS = 480;
const GLUE_AT = 20_480;
const MAX_GLUE_BYTES = 40_960;
const TEXT_AT = 65_536;
/** The module reads up to 15 bytes past a line and writes up to 15 past a value. */
const SLACK = 64;
/** Room in the output for a line's tabs and dashes beyond its own length. */
const OUTPUT_EXTRA = 64 * 1024;
const DEFAULT_TEXT_CAPACITY = 1024 * 1024;

function align(value: number, to: number): number {
  return Math.ceil(value / to) * to;
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

let compiled: WasmModule | null | undefined;

/** The compiled module, once per process; undefined where WebAssembly SIMD is missing. */
function jsonScanModule(): WasmModule | undefined {
  if (compiled === undefined) {
    try {
      compiled = new WebAssembly.Module(Buffer.from(JSON_SCAN_WASM_BASE64, 'base64'));
    } catch {
      compiled = null;
    }
  }
  return compiled ?? undefined;
}
