import { decodingBuffer, decodingInstance } from './decoding-memory';
import { PARQUET_RLE_WASM_BASE64 } from './parquet-rle-wasm';

/**
 * Parquet's RLE / bit-packed hybrid encoding (definition levels and dictionary indices),
 * decoded on a Uint8Array into an Int32Array. hyparquet's decoder reads byte by byte
 * through a DataView and was the hottest code of a fresh process's Parquet count after the
 * counting loop (issue 34); this one runs in WebAssembly (parquet-rle.wat), which V8
 * compiles at once, where a JavaScript loop ran unoptimized for much of a file in a fresh
 * process: 38 ms of a 0.24 s count of the typed bench file. As it goes it answers what
 * the page reader otherwise needed two more passes over the values for: the largest value
 * (a dictionary index out of range) and how many equal a target (the present rows:
 * definition level = the column's maximum).
 *
 * The format (https://parquet.apache.org/docs/file-format/data-pages/encodings/#run-length-encoding--bit-packing-hybrid-rle--3):
 * runs, each a ULEB128 header; `header & 1` = 0: `header >> 1` repeats of one value
 * stored in ceil(width / 8) little-endian bytes; 1: `header >> 1` groups of 8 values,
 * each `width` bits, packed from the least significant bit. The last group may hold
 * padding values past the ones wanted: they are read and dropped, as hyparquet does.
 */
export class HybridDecoder {
  /** Of the last {@link decode}: the largest value written (-1: none). */
  largest = -1;
  /** Of the last {@link decode}: how many values written equal its `target`. */
  matches = 0;

  /**
   * Decodes `count` values of width `width` (1–32 bits) from `bytes[at, end)` into
   * `out[0, count)`. Throws where the runs end before `count` values or a run reads past `end`.
   */
  decode(bytes: Uint8Array, at: number, end: number, width: number, out: Int32Array, count: number, target: number): void {
    if (count > out.length) throw new RangeError(`${count} RLE/bit-packed values for ${out.length} places`);
    this.decodeInPlace(bytes, at, end, width, count, target);
    this.copyLast(out);
  }

  /**
   * Decodes as {@link decode} does, the values left in the decoder's memory: answers how
   * many equal `target`. Definition levels: when every row is present (nearly always),
   * the page reader needs no levels and copies none out (issue 34: copying them was most
   * of the decoder's time).
   */
  matchesOf(bytes: Uint8Array, at: number, end: number, width: number, count: number, target: number): number {
    this.decodeInPlace(bytes, at, end, width, count, target);
    return this.matches;
  }

  /**
   * Decodes `count` dictionary indices as {@link decode} does and writes each one's entry
   * of `dictionary` into `out[0, count)`: a typed column's dictionary-encoded rows as
   * numbers, in WebAssembly (a fresh process ran the JavaScript loop over the first row
   * group's rows unoptimized: most of the 6–7 ms its date column took, issue 34).
   * Answers the largest index; when it is past the dictionary nothing is written.
   */
  decodeEntries(bytes: Uint8Array, at: number, end: number, width: number, count: number, dictionary: Float64Array, out: Float64Array): number {
    if (count > out.length) throw new RangeError(`${count} dictionary entries for ${out.length} places`);
    this.decodeInPlace(bytes, at, end, width, count, -1);
    if (this.largest >= dictionary.length) return this.largest;
    const wasm = rleModule();
    const dictionaryAt = (lastOutAt + 4 * count + 7) & ~7;
    const outAt = dictionaryAt + 8 * dictionary.length;
    const needed = outAt + 8 * count;
    const buffer = decodingBuffer(needed, () => `${count} dictionary entries of ${dictionary.length}`);
    new Float64Array(buffer, dictionaryAt, dictionary.length).set(dictionary);
    wasm.gather(lastOutAt, count, dictionaryAt, outAt);
    out.set(new Float64Array(buffer, outAt, count));
    return this.largest;
  }

  /** The values of the last decode (of any decoder: call it right after that one's, before any other decoder of decoding-memory.ts runs), into `out`; answers `out`. */
  copyLast(out: Int32Array): Int32Array {
    out.set(new Int32Array(decodingBuffer(lastOutAt + 4 * lastCount, () => `${lastCount} values`), lastOutAt, lastCount));
    return out;
  }

  private decodeInPlace(bytes: Uint8Array, at: number, end: number, width: number, count: number, target: number): void {
    if (end > bytes.length) throw new Error(`RLE/bit-packed data ends past its page (${end} of ${bytes.length} bytes)`);
    if (!(width >= 1 && width <= 32)) throw new Error(`RLE/bit-packed values of ${width} bits`);
    const wasm = rleModule();
    const length = Math.max(0, end - at);
    // The data at 0, the bytes a read may reach past it, the values (aligned), the bytes a run's stores may reach past them.
    const outAt = (length + SLACK_BYTES + 7) & ~7;
    const needed = outAt + 4 * count + OUTPUT_SLACK_BYTES;
    const heap = new Uint8Array(decodingBuffer(needed, () => `RLE/bit-packed data of ${length} bytes and ${count} values`));
    heap.set(bytes.subarray(at, at + length), 0);
    const status = wasm.decode(0, length, width, outAt, count, target);
    if (status !== 0) throw new Error(failure(status, wasm.seen.value, count));
    lastOutAt = outAt;
    lastCount = count;
    this.largest = wasm.largest.value;
    this.matches = wasm.matches.value;
  }
}

/** The error of a parquet-rle.wat status. */
function failure(status: number, seen: number, count: number): string {
  switch (status) {
    case 1:
      return `RLE/bit-packed data ends after ${seen} of ${count} values`;
    case 2:
      return 'RLE/bit-packed run header longer than 6 bytes';
    case 3:
      return 'RLE run value past the end of its data';
    case 4:
      return 'RLE value past 2^31';
    case 5:
      return 'bit-packed run past the end of its data';
    default:
      return 'bit-packed value past 2^31';
  }
}


interface RleExports {
  readonly decode: (at: number, end: number, width: number, out: number, count: number, target: number) => number;
  readonly gather: (values: number, count: number, dictionary: number, out: number) => void;
  readonly largest: { readonly value: number };
  readonly matches: { readonly value: number };
  readonly seen: { readonly value: number };
}

/** Bytes after the data a read may reach (a group of 8 values is read 16 bytes at a time; masked off: they never reach a value). */
const SLACK_BYTES = 16;
/** Bytes after the values an RLE run's wide stores may reach (parquet-rle.wat writes a run 16 or 64 bytes at a time). */
const OUTPUT_SLACK_BYTES = 64;

let instance: RleExports | undefined;
/** Where the last decode left its values in the memory, and how many. */
let lastOutAt = 0;
let lastCount = 0;

/** The decoder's one instance in this process (decoding is synchronous: the decoders' memory, decoding-memory.ts, is used by one call at a time). */
function rleModule(): RleExports {
  instance ??= decodingInstance<RleExports>(PARQUET_RLE_WASM_BASE64);
  return instance;
}
