import { decodingBuffer, decodingInstance } from './decoding-memory';
import { PARQUET_PLAIN_WASM_BASE64 } from './parquet-plain-wasm';

/**
 * PLAIN-encoded Parquet values read in WebAssembly (parquet-plain.wat): where a BYTE_ARRAY
 * page's values are, and INT32 / INT64 values as numbers.
 */

/**
 * Where each of `rows` PLAIN BYTE_ARRAY values from `page[at]` is (4-byte little-endian
 * length, then the bytes): into `starts` and `ends`, offsets in `page`. A row whose
 * definition level is not `maxDefinition` (when `definitions` is given) has none: an empty
 * span where the next value would start. With `counts`, each row's value read as a byte
 * count too (cloudfront-log.ts's parseByteCountBytes: none, empty or `-` 0, no byte
 * count -1), found while the value is in hand. Answers the longest value's length;
 * throws where a value runs past the page.
 *
 * In WebAssembly (parquet-plain.wat), which V8 compiles at once, where the JavaScript loop
 * ran unoptimized for much of a fresh process's count (issue 34): the page is copied in,
 * the places copied out.
 */
export function placePlainValues(
  page: Uint8Array,
  at: number,
  rows: number,
  definitions: Int32Array | undefined,
  maxDefinition: number,
  starts: Int32Array,
  ends: Int32Array,
  counts?: Float64Array,
): number {
  if (rows > starts.length || rows > ends.length) throw new RangeError(`${rows} values for ${Math.min(starts.length, ends.length)} places`);
  if (definitions !== undefined && definitions.length < rows) throw new RangeError(`${rows} values for ${definitions.length} definition levels`);
  if (counts !== undefined && counts.length < rows) throw new RangeError(`${rows} values for ${counts.length} byte counts`);
  const length = Math.max(0, page.length - at);
  // The page once, the places a chunk of rows at a time: the module's memory (it never
  // shrinks) holds the largest page and one chunk's places, not a page's worth of places
  // (a row group of a million rows in one page grew the peak RSS by 15 MiB).
  const chunk = Math.min(rows, CHUNK_VALUES);
  // Never at 0: 0 tells the module there are no levels.
  const levelsAt = align8(length) + 8;
  const startsAt = levelsAt + (definitions === undefined ? 0 : 4 * chunk);
  const endsAt = startsAt + 4 * chunk;
  const countsAt = align8(endsAt + 4 * chunk);
  const needed = countsAt + (counts === undefined ? 0 : 8 * chunk);
  const wasm = plainModule();
  const buffer = decodingBuffer(needed, () => `a page of ${length} bytes`);
  new Uint8Array(buffer).set(page.subarray(at, at + length), 0);
  let longest = 0;
  let from = 0;
  for (let row = 0; row < rows; row += chunk) {
    const size = Math.min(chunk, rows - row);
    if (definitions !== undefined) new Int32Array(buffer, levelsAt, size).set(definitions.subarray(row, row + size));
    const chunkLongest = wasm.place(length, size, definitions === undefined ? 0 : levelsAt, maxDefinition, startsAt, endsAt, at, counts === undefined ? 0 : countsAt, from);
    if (chunkLongest < 0) throw new Error('a value runs past its page');
    longest = Math.max(longest, chunkLongest);
    from = wasm.placedTo.value;
    starts.set(new Int32Array(buffer, startsAt, size), row);
    ends.set(new Int32Array(buffer, endsAt, size), row);
    if (counts !== undefined) counts.set(new Float64Array(buffer, countsAt, size), row);
  }
  return longest;
}

/** What the integers of a typed column count (see parquet-columns.ts). */
export type NumberUnit = 'integer' | 'days' | 'millis' | 'micros';
const UNIT_CODES: Record<NumberUnit, number> = { integer: 0, days: 1, millis: 2, micros: 3 };

/**
 * `count` PLAIN INT32 or INT64 values from `page[at]` as numbers into `out`, dates and
 * timestamps as epoch milliseconds (a time no Date holds: NaN, none, as hyparquet's
 * invalid Date is written); false when an INT64 is past 2^53 (no exact double). In
 * WebAssembly (parquet-plain.wat): the JavaScript loop boxed a number per value while a
 * fresh process ran it unoptimized (issue 34).
 */
export function plainNumbers(page: Uint8Array, at: number, count: number, int64: boolean, unit: NumberUnit, out: Float64Array): boolean {
  const width = int64 ? 8 : 4;
  if (at + count * width > page.length) throw new Error('typed values run past their page');
  if (count > out.length) throw new RangeError(`${count} values for ${out.length} places`);
  // A chunk of values at a time (see placePlainValues).
  const chunk = Math.min(count, CHUNK_VALUES);
  const outAt = align8(chunk * width);
  const needed = outAt + 8 * chunk;
  const wasm = plainModule();
  const buffer = decodingBuffer(needed, () => `${count} typed values`);
  const bytes = new Uint8Array(buffer);
  for (let done = 0; done < count; done += chunk) {
    const size = Math.min(chunk, count - done);
    const from = at + done * width;
    bytes.set(page.subarray(from, from + size * width), 0);
    if (wasm.numbers(0, size, int64 ? 1 : 0, UNIT_CODES[unit], outAt) !== 0) return false;
    out.set(new Float64Array(buffer, outAt, size), done);
  }
  return true;
}

/**
 * As {@link plainNumbers}, of values already in the decoders' memory (decoding-memory.ts)
 * at `address`, as a Snappy page decoded there leaves them (parquet-snappy.ts's
 * snappyIntoMemory): read where they are, not copied out and back in (issue 34). The
 * memory past `address + count * width` is used; before it, nothing is written.
 */
export function plainNumbersInMemory(address: number, count: number, int64: boolean, unit: NumberUnit, out: Float64Array): boolean {
  if (count > out.length) throw new RangeError(`${count} values for ${out.length} places`);
  const width = int64 ? 8 : 4;
  const chunk = Math.min(count, CHUNK_VALUES);
  const outAt = align8(address + count * width);
  const wasm = plainModule();
  const buffer = decodingBuffer(outAt + 8 * chunk, () => `${count} typed values`);
  for (let done = 0; done < count; done += chunk) {
    const size = Math.min(chunk, count - done);
    if (wasm.numbers(address + done * width, size, int64 ? 1 : 0, UNIT_CODES[unit], outAt) !== 0) return false;
    out.set(new Float64Array(buffer, outAt, size), done);
  }
  return true;
}

function align8(value: number): number {
  return (value + 7) & ~7;
}


interface PlainExports {
  readonly place: (end: number, rows: number, levels: number, maxLevel: number, starts: number, ends: number, base: number, counts: number, from: number) => number;
  readonly numbers: (input: number, count: number, int64: number, unit: number, out: number) => number;
  readonly placedTo: { readonly value: number };
}

/** Rows placed (values read) per call of the module: 32,768 rows' places are 512 KiB. */
const CHUNK_VALUES = 32_768;

let instance: PlainExports | undefined;

/** The module's one instance in this process (placing is synchronous: the decoders' memory, decoding-memory.ts, is used by one call at a time). */
function plainModule(): PlainExports {
  instance ??= decodingInstance<PlainExports>(PARQUET_PLAIN_WASM_BASE64);
  return instance;
}
