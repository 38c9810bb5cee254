/**
 * The one WebAssembly memory Tally's Parquet page decoders work in: Snappy
 * (parquet-snappy.wat), the RLE / bit-packed hybrid (parquet-rle.wat) and PLAIN values
 * (parquet-plain.wat) each import it. Each call of theirs copies its input in, works and
 * copies its output out before any other runs (decoding is synchronous), so one memory
 * serves the three: a fresh process pays the page faults of the largest one's use, not of
 * all three (new memory costs a fault per 4 KiB, about 2 µs on these machines; the three
 * memories were some 3.4 MB of a typed count's first row group, issue 34).
 */
export function decodingInstance<T>(base64: string): T {
  memory ??= new WebAssembly.Memory({ initial: 1 });
  const module = compiled.get(base64) ?? new WebAssembly.Module(Buffer.from(base64, 'base64'));
  return new WebAssembly.Instance(module, { decoding: { memory } }).exports as unknown as T;
}

/** Modules compiled ahead ({@link prepareDecoding}), by their bytes as base64. */
const compiled = new Map<string, object>();

/**
 * Compiles modules (given as base64) on V8's other threads, for a reader to start before
 * it decodes (a Parquet file's footer is read meanwhile): compiled on first use, each was
 * the count's main thread's work (issue 34).
 */
export async function prepareDecoding(modules: readonly string[]): Promise<void> {
  await Promise.all(
    modules.map(async (base64) => {
      if (!compiled.has(base64)) compiled.set(base64, await WebAssembly.compile(Buffer.from(base64, 'base64')));
    }),
  );
}

/**
 * The memory's bytes, grown to hold `needed` first (a module's memory never shrinks: a
 * decoder works on a page at a time, about a megabyte). Past {@link MAX_MEMORY_BYTES} the
 * work is refused: a RangeError of `refusal`, before any memory is taken.
 */
export function decodingBuffer(needed: number, refusal: () => string): ArrayBuffer {
  if (needed > MAX_MEMORY_BYTES) throw new RangeError(`${refusal()}: more than this reader holds`);
  memory ??= new WebAssembly.Memory({ initial: 1 });
  if (needed > memory.buffer.byteLength) memory.grow(Math.ceil((needed - memory.buffer.byteLength) / WASM_PAGE_BYTES));
  return memory.buffer;
}

const WASM_PAGE_BYTES = 65_536;
/** The most memory the decoders grow to (a page and what it decodes to are far less: pages are about a megabyte). */
const MAX_MEMORY_BYTES = 1024 * 1024 * 1024;

interface Memory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

let memory: Memory | undefined;

/** The few WebAssembly names used here (the project's TypeScript lib has no DOM types). */
declare const WebAssembly: {
  compile(bytes: Uint8Array): Promise<object>;
  Memory: new (descriptor: { initial: number }) => Memory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { readonly exports: Record<string, unknown> };
};
