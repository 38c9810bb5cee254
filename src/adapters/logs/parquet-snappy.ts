import { decodingBuffer, decodingInstance } from './decoding-memory';
import { PARQUET_SNAPPY_WASM_BASE64 } from './parquet-snappy-wasm';

/**
 * Snappy (the codec of CloudFront's Parquet logs, and DuckDB's default), decoded in
 * WebAssembly (parquet-snappy.wat) into an array the caller keeps: a page reader decodes
 * every page of a column into the same array. hysnappy, the decoder used before, made a
 * new array of every page, and on a fresh process's count of the typed bench file that
 * new memory (10.7 MB over 72 pages: 6.6 ms to fill it, and the collections it caused)
 * cost as much as the decoding itself (issue 34).
 *
 * Answers `output`'s first `outputLength` bytes, or a new array when `output` is absent
 * or too short. Throws, naming what is wrong, where the input is not Snappy data of
 * `outputLength` bytes.
 */
export function snappyUncompress(input: Uint8Array, outputLength: number, output?: Uint8Array): Uint8Array {
  const at = snappyIntoMemory(input, outputLength);
  const target = output !== undefined && output.length >= outputLength ? output.subarray(0, outputLength) : new Uint8Array(outputLength);
  target.set(new Uint8Array(decodingBuffer(at + outputLength, () => `a Snappy page of ${outputLength} bytes`), at, outputLength));
  return target;
}

/**
 * Decodes `input` into the decoders' memory (decoding-memory.ts) and answers where its
 * `outputLength` bytes are there, for a decoder of that memory to read in place (until
 * any decoder's next call). Throws as {@link snappyUncompress} does.
 */
export function snappyIntoMemory(input: Uint8Array, outputLength: number): number {
  if (!(Number.isInteger(outputLength) && outputLength >= 0)) throw new RangeError(`a Snappy page of ${outputLength} bytes`);
  // No element writes more than 64 bytes for its 3 (parquet-snappy.wat): a page declared
  // larger than that is refused before any memory is taken for it.
  if (outputLength > (input.length * 64) / 3) throw new Error(`not Snappy data of ${outputLength} bytes: ${input.length} bytes of Snappy never hold so many`);
  const inputAt = 0;
  const outputAt = align16(input.length + SPARE_BYTES);
  const needed = outputAt + outputLength + SPARE_BYTES;
  const wasm = snappyModule();
  const heap = new Uint8Array(decodingBuffer(needed, () => `a Snappy page of ${input.length} bytes into ${outputLength}`));
  heap.set(input, inputAt);
  const status = wasm.uncompress(inputAt, input.length, outputAt, outputLength);
  if (status !== 0) throw new Error(`not Snappy data of ${outputLength} bytes: ${FAILURES[status] ?? `status ${status}`}`);
  return outputAt;
}

/** What a parquet-snappy.wat status means. */
const FAILURES: Record<number, string> = {
  1: 'its length is damaged',
  2: 'its length is not the page size',
  3: 'an element runs past the input',
  4: 'an element writes past the output',
  5: 'a copy reaches before the output',
  6: 'the input ends before the output is whole',
};

function align16(value: number): number {
  return (value + 15) & ~15;
}


interface SnappyExports {
  readonly uncompress: (input: number, inputLength: number, output: number, outputLength: number) => number;
}

/** Bytes after the input and after the output that a 16-byte read or write may reach (parquet-snappy.wat). */
const SPARE_BYTES = 16;

let instance: SnappyExports | undefined;

/** The decoder's one instance in this process (decoding is synchronous: the decoders' memory, decoding-memory.ts, is used by one call at a time). */
function snappyModule(): SnappyExports {
  instance ??= decodingInstance<SnappyExports>(PARQUET_SNAPPY_WASM_BASE64);
  return instance;
}
