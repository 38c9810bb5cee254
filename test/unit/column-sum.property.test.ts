import fc from 'fast-check';
import { isValidTimeBytes } from '../../src/domain/logs/cloudfront-log';
import { ColumnSumKernel } from '../../src/domain/logs/columns/column-sum';

/**
 * column-sum.wat finds a time dictionary's verdicts all at once ($timeVerdicts): each
 * entry's must be what the counter's own check says of the same text (cloudfront-log.ts's
 * isValidTimeBytes, the hour its first two digits), and none (entry 0) a line.
 */
describe('column-sum.wat time verdicts', () => {
  const textArb = fc.oneof(
    fc.stringMatching(/^[0-9]{2}:[0-9]{2}:[0-9]{2}$/),
    fc.array(fc.constantFrom('0', '1', '2', '5', '6', '9', ':', '/', 'a', ' ', '\u00e9'), { maxLength: 10 }).map((chars) => chars.join('')),
  );

  it('gives every entry the verdict isValidTimeBytes gives its text', () => {
    fc.assert(
      fc.property(fc.array(textArb, { maxLength: 300 }), fc.integer({ min: 0, max: 7 }), (texts, padding) => {
        // The entries somewhere in their page's bytes, as a dictionary page's text is.
        const encoded = texts.map((text) => Buffer.from(text));
        const bytes = new Uint8Array(padding + encoded.reduce((total, text) => total + text.length + 4, 0));
        const starts = new Int32Array(texts.length);
        const ends = new Int32Array(texts.length);
        let at = padding;
        encoded.forEach((text, entry) => {
          at += 4;
          starts[entry] = at;
          bytes.set(text, at);
          at += text.length;
          ends[entry] = at;
        });
        const cache = new Int32Array(texts.length + 1).fill(-2);
        const kernel = ColumnSumKernel.acquire();
        try {
          kernel.timeTable({ bytes, starts, ends }, cache);
        } finally {
          kernel.release();
        }

        const expected = [0, ...encoded.map((text) => (isValidTimeBytes(text, 0, text.length) ? (text[0]! - 48) * 10 + text[1]! - 48 + 1 : 0))];
        expect(Array.from(cache)).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('keeps an instance for the next count, unless its memory grew past 32 MiB', () => {
    const small = ColumnSumKernel.acquire();
    small.release();
    expect(ColumnSumKernel.acquire()).toBe(small);
    // A host pair table of 10 million entries (40 MB): the memory grows, and is let go.
    small.table('pair', new Int32Array(10_000_000).fill(-2));
    small.release();
    const next = ColumnSumKernel.acquire();
    expect(next).not.toBe(small);
    next.release();
  });
});
