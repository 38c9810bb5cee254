import fc from 'fast-check';
import { readPlain } from 'hyparquet/src/plain.js';
import { placePlainValues, plainNumbers, type NumberUnit } from '../../src/adapters/logs/parquet-plain';
import { parseByteCountBytes } from '../../src/domain/logs/cloudfront-log';

/**
 * Where the values of a PLAIN BYTE_ARRAY page are (src/adapters/logs/parquet-plain.ts, in
 * WebAssembly): for any values, any absent rows and any bytes before the values, the
 * spans hold exactly the values hyparquet's own PLAIN reader reads, an absent row an empty
 * span, and the longest is the longest value. The page is written as the format says
 * (https://parquet.apache.org/docs/file-format/data-pages/encodings/#plain-plain--0).
 */

const MAX_LEVEL = 1;

/** The present values as a PLAIN page after `before` bytes of other data. */
function plainPage(values: readonly Uint8Array[], before: number): Uint8Array {
  const parts: number[] = new Array<number>(before).fill(0xee);
  for (const value of values) {
    const length = value.length;
    parts.push(length & 0xff, (length >> 8) & 0xff, (length >> 16) & 0xff, (length >>> 24) & 0xff, ...value);
  }
  return Uint8Array.from(parts);
}

const rowsArb = fc.array(fc.option(fc.uint8Array({ maxLength: 40 }), { nil: undefined, freq: 4 }), { maxLength: 300 });

describe('placePlainValues', () => {
  it("places exactly the values hyparquet's PLAIN reader reads, absent rows empty", () => {
    fc.assert(
      fc.property(rowsArb, fc.nat(9), fc.boolean(), (rows, before, withLevels) => {
        const present = rows.filter((row) => row !== undefined);
        const page = plainPage(present, before);
        // Without levels, every row is present (a required column or a page of no absent row).
        const shown = withLevels ? rows : present;
        const definitions = withLevels ? Int32Array.from(rows, (row) => (row === undefined ? 0 : MAX_LEVEL)) : undefined;
        const starts = new Int32Array(shown.length);
        const ends = new Int32Array(shown.length);
        const longest = placePlainValues(page, before, shown.length, definitions, MAX_LEVEL, starts, ends);
        const reference = readPlain({ view: new DataView(page.buffer, page.byteOffset, page.byteLength), offset: before }, 'BYTE_ARRAY', present.length, undefined) as ArrayLike<Uint8Array>;
        let next = 0;
        shown.forEach((row, i) => {
          if (row === undefined) {
            expect(ends[i]).toBe(starts[i]);
            return;
          }
          expect(Array.from(page.subarray(starts[i], ends[i]))).toEqual(Array.from(reference[next++]!));
        });
        expect(next).toBe(present.length);
        expect(longest).toBe(Math.max(0, ...present.map((value) => value.length)));
      }),
      { numRuns: 300 },
    );
  });

  it("reads each value as a byte count as the counter's parseByteCountBytes does (none 0)", () => {
    const ascii = (text: string) => new TextEncoder().encode(text);
    const value = fc.oneof(
      fc.stringMatching(/^[0-9]{1,17}$/).map(ascii),
      fc.constantFrom('-', '', '0', '007', '999999999999999', '1000000000000000', '12a', ' 1', '1\t', '+1', '-1').map(ascii),
      fc.uint8Array({ maxLength: 8 }),
    );
    fc.assert(
      fc.property(fc.array(fc.option(value, { nil: undefined, freq: 5 }), { maxLength: 200 }), fc.nat(5), (rows, before) => {
        const present = rows.filter((row) => row !== undefined);
        const page = plainPage(present, before);
        const definitions = Int32Array.from(rows, (row) => (row === undefined ? 0 : MAX_LEVEL));
        const starts = new Int32Array(rows.length);
        const ends = new Int32Array(rows.length);
        const counts = new Float64Array(rows.length).fill(-7);
        placePlainValues(page, before, rows.length, definitions, MAX_LEVEL, starts, ends, counts);
        rows.forEach((_, i) => {
          const expected = starts[i] === ends[i] ? 0 : parseByteCountBytes(page, starts[i]!, ends[i]!);
          expect(counts[i]).toBe(expected);
        });
      }),
      { numRuns: 300 },
    );
  });

  it('places a page of more rows than one call of the module takes (chunks), absent rows and byte counts included', () => {
    const rows = Array.from({ length: 70_001 }, (_, i) => (i % 3 === 2 ? undefined : new TextEncoder().encode(i % 11 === 0 ? `x${i}` : String(i * 13))));
    const present = rows.filter((row) => row !== undefined);
    const page = plainPage(present, 5);
    const definitions = Int32Array.from(rows, (row) => (row === undefined ? 0 : MAX_LEVEL));
    const starts = new Int32Array(rows.length);
    const ends = new Int32Array(rows.length);
    const counts = new Float64Array(rows.length);
    const longest = placePlainValues(page, 5, rows.length, definitions, MAX_LEVEL, starts, ends, counts);
    rows.forEach((row, i) => {
      if (row === undefined) {
        expect(ends[i]).toBe(starts[i]);
        expect(counts[i]).toBe(0);
        return;
      }
      expect(Buffer.from(page.subarray(starts[i], ends[i])).equals(Buffer.from(row))).toBe(true);
      expect(counts[i]).toBe(i % 11 === 0 ? -1 : i * 13);
    });
    expect(longest).toBe(Math.max(...present.map((value) => value.length)));
  });

  it('refuses a page whose values run past its end, whatever the cut', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ minLength: 1, maxLength: 30 }), { minLength: 1, maxLength: 20 }), fc.nat(), (values, cutSeed) => {
        const page = plainPage(values, 0);
        const cut = 1 + (cutSeed % page.length);
        const short = page.subarray(0, page.length - cut);
        expect(() => placePlainValues(short, 0, values.length, undefined, MAX_LEVEL, new Int32Array(values.length), new Int32Array(values.length))).toThrow(/runs past its page/);
      }),
      { numRuns: 200 },
    );
  });

  it('places a page larger than the module\'s first memory, then a small one', () => {
    const values = Array.from({ length: 20_000 }, (_, i) => new TextEncoder().encode(String(i * 37)));
    const page = plainPage(values, 3);
    const starts = new Int32Array(values.length);
    const ends = new Int32Array(values.length);
    placePlainValues(page, 3, values.length, undefined, MAX_LEVEL, starts, ends);
    expect(Buffer.from(page.subarray(starts[19_999], ends[19_999])).toString()).toBe(String(19_999 * 37));
    const small = plainPage([Uint8Array.of(65)], 0);
    const one = [new Int32Array(1), new Int32Array(1)] as const;
    expect(placePlainValues(small, 0, 1, undefined, MAX_LEVEL, one[0], one[1])).toBe(1);
    expect([one[0][0], one[1][0]]).toEqual([4, 5]);
  });
});

/**
 * The reference for plainNumbers, as hyparquet converts the same values (INT64 a bigint,
 * DATE days × 86,400,000 ms, TIMESTAMP_MICROS divided toward zero, an instant no Date
 * holds none): stated with BigInt, exact, value by value.
 */
function referenceNumber(raw: bigint, unit: NumberUnit): number | 'past 2^53' {
  if (raw > 9007199254740991n || raw < -9007199254740992n) return 'past 2^53';
  const value = Number(raw);
  if (unit === 'integer') return value;
  const millis = unit === 'days' ? value * 86_400_000 : unit === 'micros' ? Number(raw / 1000n) : value;
  return Math.abs(millis) <= 8.64e15 ? millis : Number.NaN;
}

describe('plainNumbers', () => {
  const units: NumberUnit[] = ['integer', 'days', 'millis', 'micros'];
  const int64 = fc.oneof(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.bigInt({ min: -(2n ** 54n), max: 2n ** 54n }), fc.bigInt({ min: -100_000n, max: 100_000n }));
  const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).map((value) => BigInt(value));

  it('reads INT32 and INT64 values as the reference does, every unit, false past 2^53', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.constantFrom(...units), fc.nat(9), (wide, unit, before) =>
        fc.assert(
          fc.property(fc.array(wide ? int64 : int32, { maxLength: 200 }), (values) => {
            const size = wide ? 8 : 4;
            const page = new Uint8Array(before + values.length * size + 3).fill(0xab);
            const view = new DataView(page.buffer);
            values.forEach((value, i) => (wide ? view.setBigInt64(before + i * size, value, true) : view.setInt32(before + i * size, Number(value), true)));
            const out = new Float64Array(values.length + 2).fill(7);
            const expected = values.map((value) => referenceNumber(value, unit));
            const read = plainNumbers(page, before, values.length, wide, unit, out);
            if (expected.includes('past 2^53')) {
              expect(read).toBe(false);
              return;
            }
            expect(read).toBe(true);
            // -0 (a negative microsecond divided toward zero) is the instant 0.
            expect(Array.from(out.subarray(0, values.length), (value) => (value === 0 ? 0 : value))).toEqual(expected);
            expect(Array.from(out.subarray(values.length))).toEqual([7, 7]);
          }),
          { numRuns: 20 },
        ),
      ),
      { numRuns: 40 },
    );
  });

  it('reads a page of more values than one call of the module takes (chunks), and refuses one past 2^53 in a later chunk', () => {
    const count = 70_001;
    const page = new Uint8Array(3 + count * 8);
    const view = new DataView(page.buffer);
    for (let i = 0; i < count; i++) view.setBigInt64(3 + i * 8, BigInt(i) * 1_000_003n - 5n, true);
    const out = new Float64Array(count);
    expect(plainNumbers(page, 3, count, true, 'integer', out)).toBe(true);
    expect(out[0]).toBe(-5);
    expect(out[count - 1]).toBe((count - 1) * 1_000_003 - 5);
    expect(out[40_000]).toBe(40_000 * 1_000_003 - 5);
    view.setBigInt64(3 + 69_000 * 8, 2n ** 60n, true);
    expect(plainNumbers(page, 3, count, true, 'integer', out)).toBe(false);
  });

  it('refuses values that run past their page', () => {
    expect(() => plainNumbers(new Uint8Array(15), 0, 2, true, 'integer', new Float64Array(2))).toThrow(/run past their page/);
    expect(() => plainNumbers(new Uint8Array(8), 1, 2, false, 'days', new Float64Array(2))).toThrow(/run past their page/);
  });
});
