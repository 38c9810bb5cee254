import fc from 'fast-check';
import { readRleBitPackedHybrid } from 'hyparquet/src/encoding.js';
import { HybridDecoder } from '../../src/adapters/logs/parquet-rle';

/**
 * Parquet's RLE / bit-packed hybrid (definition levels, dictionary indices), decoded by
 * src/adapters/logs/parquet-rle.ts: whatever the runs and bit width, the values written come
 * back, with their largest and how many equal the target. The runs are written here as
 * the format says (https://parquet.apache.org/docs/file-format/data-pages/encodings/).
 */

type Run = { readonly kind: 'rle'; readonly value: number; readonly count: number } | { readonly kind: 'packed'; readonly values: readonly number[] };

function varint(value: number, out: number[]): void {
  while (value >= 0x80) {
    out.push((value % 0x80) | 0x80);
    value = Math.floor(value / 0x80);
  }
  out.push(value);
}

/** The runs as bytes; a bit-packed run's last group padded with zeros. Answers the bytes and the values in order. */
function encode(runs: readonly Run[], width: number): { bytes: Uint8Array; values: number[] } {
  const out: number[] = [];
  const values: number[] = [];
  for (const run of runs) {
    if (run.kind === 'rle') {
      varint(run.count * 2, out);
      for (let b = 0; b < (width + 7) >> 3; b++) out.push(Math.floor(run.value / 2 ** (8 * b)) % 256);
      for (let i = 0; i < run.count; i++) values.push(run.value);
      continue;
    }
    const groups = Math.ceil(run.values.length / 8);
    varint(groups * 2 + 1, out);
    const bits: number[] = [];
    for (let i = 0; i < groups * 8; i++) {
      const value = run.values[i] ?? 0;
      for (let b = 0; b < width; b++) bits.push(Math.floor(value / 2 ** b) % 2);
    }
    for (let i = 0; i < bits.length; i += 8) {
      let byte = 0;
      for (let b = 0; b < 8; b++) byte |= bits[i + b]! << b;
      out.push(byte);
    }
    // Padding values are decoded too: the values a reader sees are all of them.
    for (let i = 0; i < groups * 8; i++) values.push(run.values[i] ?? 0);
  }
  return { bytes: Uint8Array.from(out), values };
}

const runsArb = (width: number) => {
  const value = fc.oneof(fc.integer({ min: 0, max: Math.min(2 ** width - 1, 3) }), fc.integer({ min: 0, max: 2 ** Math.min(width, 31) - 1 }));
  return fc.array(
    fc.oneof(
      fc.record({ kind: fc.constant('rle' as const), value, count: fc.integer({ min: 1, max: 300 }) }),
      fc.record({ kind: fc.constant('packed' as const), values: fc.array(value, { minLength: 1, maxLength: 40 }) }),
    ),
    { minLength: 1, maxLength: 8 },
  );
};

/**
 * Leaves the decoders' memory past where the next data goes full of set bits: a decode's
 * own bytes are copied in at the memory's start, so what follows them is what the last
 * decode left there. A value must never take bits from past its data.
 */
function dirtyMemory(): void {
  const { bytes, values } = encode([{ kind: 'packed', values: new Array(600).fill(2 ** 31 - 1) }], 31);
  new HybridDecoder().decode(bytes, 0, bytes.length, 31, new Int32Array(values.length), values.length, -1);
}

describe('HybridDecoder', () => {
  it('gives back the values written, their largest and how many equal the target, for every width', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 32 }).chain((width) => fc.tuple(fc.constant(width), runsArb(width), fc.nat(5), fc.nat(3), fc.integer({ min: -1, max: 3 }), fc.boolean())),
        ([width, runs, before, after, target, dirty]) => {
          const { bytes, values } = encode(runs, width);
          if (dirty) dirtyMemory();
          // The data inside a larger page, bytes before and after it.
          const page = new Uint8Array(before + bytes.length + after).fill(0xff);
          page.set(bytes, before);
          // Fewer values may be asked for than the runs hold (a page's rows).
          const count = Math.max(0, values.length - (values.length % 5));
          const out = new Int32Array(count + 3).fill(-7);
          const decoder = new HybridDecoder();
          decoder.decode(page, before, before + bytes.length, width, out, count, target);
          const wanted = values.slice(0, count);
          expect(Array.from(out.subarray(0, count))).toEqual(wanted);
          expect(Array.from(out.subarray(count))).toEqual([-7, -7, -7]);
          expect(decoder.largest).toBe(count === 0 ? -1 : Math.max(...wanted));
          expect(decoder.matches).toBe(wanted.filter((v) => v === target).length);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('gives each decoded index its dictionary entry, or writes nothing when an index is past the dictionary', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }).chain((width) => fc.tuple(fc.constant(width), runsArb(width), fc.array(fc.double(), { maxLength: 5000 }))),
        ([width, runs, dictionary]) => {
          const { bytes, values } = encode(runs, width);
          const entries = Float64Array.from(dictionary);
          const out = new Float64Array(values.length + 2).fill(-7);
          const largest = new HybridDecoder().decodeEntries(bytes, 0, bytes.length, width, values.length, entries, out);
          expect(largest).toBe(Math.max(...values));
          if (largest >= entries.length) expect(Array.from(out)).toEqual(new Array(values.length + 2).fill(-7));
          else expect(Array.from(out)).toEqual([...values.map((v) => entries[v]!), -7, -7]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("decodes what hyparquet's own decoder decodes, values, largest and matches, from any runs", () => {
    // hyparquet's decoder (the straightforward reference: byte by byte through a DataView)
    // keeps its bits in a 32-bit integer, which holds values of up to 24 bits exactly.
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 24 }).chain((width) => fc.tuple(fc.constant(width), runsArb(width), fc.nat(7), fc.integer({ min: -1, max: 3 }))),
        ([width, runs, cut, target]) => {
          const { bytes, values } = encode(runs, width);
          const count = Math.max(0, values.length - cut);
          const reference = new Int32Array(count);
          readRleBitPackedHybrid({ view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset: 0 }, width, reference, bytes.length);
          const out = new Int32Array(count);
          const decoder = new HybridDecoder();
          decoder.decode(bytes, 0, bytes.length, width, out, count, target);
          expect(Array.from(out)).toEqual(Array.from(reference));
          expect(decoder.largest).toBe(count === 0 ? -1 : Math.max(...reference));
          expect(decoder.matches).toBe(reference.filter((v) => v === target).length);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('decodes pages of many values in one call, and one decoder after another shares nothing', () => {
    // Larger than the module's first memory page: the memory grows; a second decoder's call does not disturb the first's values.
    const values = Array.from({ length: 70_000 }, (_, i) => (i * 7919) % 1000);
    const { bytes } = encode([{ kind: 'packed', values }], 10);
    const first = new Int32Array(values.length);
    new HybridDecoder().decode(bytes, 0, bytes.length, 10, first, values.length, 999);
    const small = encode([{ kind: 'rle', value: 5, count: 3 }], 3).bytes;
    const second = new Int32Array(3);
    const other = new HybridDecoder();
    other.decode(small, 0, small.length, 3, second, 3, 5);
    expect(Array.from(first)).toEqual(values);
    expect(Array.from(second)).toEqual([5, 5, 5]);
    expect(other.matches).toBe(3);
  });

  it('reads values of 25 bits and more exactly (they cross four bytes)', () => {
    const values = [0x1ffffff, 1, 0x1234567, 0, 0x1000000, 0x0abcdef, 0x1fffffe, 7];
    for (const width of [25, 27, 31, 32]) {
      const { bytes } = encode([{ kind: 'packed', values }], width);
      const out = new Int32Array(8);
      new HybridDecoder().decode(bytes, 0, bytes.length, width, out, 8, -1);
      expect(Array.from(out)).toEqual(values);
    }
  });

  it('refuses runs that end before the values asked for, or read past their data', () => {
    const { bytes } = encode([{ kind: 'rle', value: 3, count: 10 }], 2);
    expect(() => new HybridDecoder().decode(bytes, 0, bytes.length, 2, new Int32Array(11), 11, -1)).toThrow(/ends after 10 of 11 values/);
    const packed = encode([{ kind: 'packed', values: [1, 2, 3, 4, 5, 6, 7, 0] }], 3).bytes;
    expect(() => new HybridDecoder().decode(packed, 0, packed.length - 1, 3, new Int32Array(8), 8, -1)).toThrow(/past the end of its data/);
    expect(() => new HybridDecoder().decode(packed, 0, packed.length + 1, 3, new Int32Array(8), 8, -1)).toThrow(/ends past its page/);
    // A header that never ends.
    expect(() => new HybridDecoder().decode(Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x80, 0x80), 0, 6, 3, new Int32Array(8), 8, -1)).toThrow(/header/);
  });

  it("refuses an RLE run whose value is cut off by the data's end, even with bytes after it in the page", () => {
    // 4 repeats of a 2-byte value (width 9), of which one byte is inside the data.
    const page = Uint8Array.of(0x08, 0x05, 0x01, 0x00);
    expect(() => new HybridDecoder().decode(page, 0, 2, 9, new Int32Array(4), 4, -1)).toThrow(/RLE run value past the end of its data/);
    const out = new Int32Array(4);
    new HybridDecoder().decode(page, 0, 3, 9, out, 4, -1);
    expect(Array.from(out)).toEqual([261, 261, 261, 261]);
  });

  it('refuses values past 2^31, in an RLE run or a bit-packed one, and takes 2^31 - 1', () => {
    dirtyMemory();
    expect(() => new HybridDecoder().decode(Uint8Array.of(0x04, 0x00, 0x00, 0x00, 0x80), 0, 5, 32, new Int32Array(2), 2, -1)).toThrow(/RLE value past 2\^31/);
    const packed = [1, 2, 3, 4, 5, 6, 7, 2 ** 31 - 1];
    const { bytes } = encode([{ kind: 'packed', values: packed }], 32);
    const out = new Int32Array(8);
    const decoder = new HybridDecoder();
    decoder.decode(bytes, 0, bytes.length, 32, out, 8, 2 ** 31 - 1);
    expect(Array.from(out)).toEqual(packed);
    expect([decoder.largest, decoder.matches]).toEqual([2 ** 31 - 1, 1]);
    const damaged = bytes.slice();
    damaged[damaged.length - 1] = 0x80; // the last value's top bit (its last byte: 0x7f) set: past 2^31
    expect(() => new HybridDecoder().decode(damaged, 0, damaged.length, 32, new Int32Array(8), 8, -1)).toThrow(/bit-packed value past 2\^31/);
  });

  it('reads a run of many groups of every width up to 25 (8 values at a time) and its last values short of a group', () => {
    for (let width = 1; width <= 25; width++) {
      const values = Array.from({ length: 8 * 37 + 5 }, (_, i) => (i === 100 ? 2 ** width - 1 : (i * 2654435761) >>> (32 - width)));
      const { bytes } = encode([{ kind: 'packed', values }], width);
      dirtyMemory();
      const out = new Int32Array(values.length);
      const decoder = new HybridDecoder();
      decoder.decode(bytes, 0, bytes.length, width, out, values.length, values[7]!);
      expect(Array.from(out)).toEqual(values);
      expect(decoder.largest).toBe(2 ** width - 1);
      expect(decoder.matches).toBe(values.filter((v) => v === values[7]).length);
    }
  });
});
