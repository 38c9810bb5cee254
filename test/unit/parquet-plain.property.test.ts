import fc from 'fast-check';
import { readPlain } from 'hyparquet/src/plain.js';
import { placePlainValues } from '../../src/adapters/logs/parquet-plain';

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
