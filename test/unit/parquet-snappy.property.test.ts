import fc from 'fast-check';
import { snappyCompress } from 'hysnappy';
import { snappyUncompress } from '../../src/adapters/logs/parquet-snappy';

/**
 * Snappy decoded by src/adapters/logs/parquet-snappy.ts (parquet-snappy.wat): whatever the
 * elements, the bytes they stand for come back, into a new array or the caller's; damaged
 * data is refused with an error, never decoded wrong. Elements are written here as the
 * format says (https://github.com/google/snappy/blob/main/format_description.txt), and
 * read back by the format's plain reading (below), so that every tag form is tried, not
 * only the ones a compressor happens to choose.
 */

type Element = { readonly kind: 'literal'; readonly bytes: Uint8Array } | { readonly kind: 'copy'; readonly offset: number; readonly length: number; readonly tag: 1 | 2 | 3 };

function varint(value: number, out: number[]): void {
  while (value >= 0x80) {
    out.push((value % 0x80) | 0x80);
    value = Math.floor(value / 0x80);
  }
  out.push(value);
}

function littleEndian(value: number, bytes: number, out: number[]): void {
  for (let b = 0; b < bytes; b++) out.push(Math.floor(value / 2 ** (8 * b)) % 256);
}

/** The stream of `elements` (each copy's offset taken modulo what is written before it, +1), and the bytes it stands for. */
function encode(elements: readonly Element[]): { stream: Uint8Array; bytes: Uint8Array } {
  const body: number[] = [];
  const bytes: number[] = [];
  for (const element of elements) {
    if (element.kind === 'literal') {
      const length = element.bytes.length;
      if (length <= 60) body.push((length - 1) << 2);
      else {
        const extra = length - 1 < 2 ** 8 ? 1 : length - 1 < 2 ** 16 ? 2 : length - 1 < 2 ** 24 ? 3 : 4;
        body.push((59 + extra) << 2);
        littleEndian(length - 1, extra, body);
      }
      for (const byte of element.bytes) {
        body.push(byte);
        bytes.push(byte);
      }
      continue;
    }
    if (bytes.length === 0) continue;
    // Each tag's own bounds: 1 holds lengths 4-11 and offsets below 2,048; 2 offsets below 65,536.
    const tag = element.tag === 1 && element.offset >= 2048 ? 2 : element.tag;
    const limit = tag === 1 ? 2048 : tag === 2 ? 65_536 : 2 ** 32;
    const offset = (element.offset % Math.min(bytes.length, limit - 1)) + 1;
    const length = tag === 1 ? 4 + (element.length % 8) : 1 + (element.length % 64);
    body.push(...copyElement(tag, offset, length));
    for (let i = 0; i < length; i++) bytes.push(bytes[bytes.length - offset]!);
  }
  const stream: number[] = [];
  varint(bytes.length, stream);
  stream.push(...body);
  return { stream: Uint8Array.from(stream), bytes: Uint8Array.from(bytes) };
}

/** A copy's tag and offset bytes, in the form `tag` (1, 2 or 3) says. */
function copyElement(tag: 1 | 2 | 3, offset: number, length: number): number[] {
  if (tag === 1) return [1 | ((length - 4) << 2) | ((offset >> 8) << 5), offset & 255];
  const out = [tag | ((length - 1) << 2)];
  littleEndian(offset, tag === 2 ? 2 : 4, out);
  return out;
}

/** How many bytes `value` takes as a varint. */
function varintLength(value: number): number {
  const out: number[] = [];
  varint(value, out);
  return out.length;
}

/** A literal's tag and bytes (at most 60 bytes: the tag holds the length). */
function shortLiteral(bytes: Uint8Array): number[] {
  return [(bytes.length - 1) << 2, ...bytes];
}

/** A stream declaring `declared` bytes, of `body`'s elements. */
function stream(declared: number, body: readonly number[]): Uint8Array {
  const out: number[] = [];
  varint(declared, out);
  return Uint8Array.from([...out, ...body]);
}

/** The bytes `body` (a literal of `prefix`, then a copy) stands for, by the format's plain reading. */
function afterCopy(prefix: Uint8Array, offset: number, length: number): Uint8Array {
  const bytes = [...prefix];
  for (let i = 0; i < length; i++) bytes.push(bytes[bytes.length - offset]!);
  return Uint8Array.from(bytes);
}

const element: fc.Arbitrary<Element> = fc.oneof(
  fc.record({ kind: fc.constant('literal' as const), bytes: fc.uint8Array({ minLength: 1, maxLength: 80 }) }),
  fc.record({ kind: fc.constant('literal' as const), bytes: fc.integer({ min: 1, max: 600 }).map(pattern) }),
  fc.record({ kind: fc.constant('copy' as const), offset: fc.nat({ max: 100_000 }), length: fc.nat({ max: 200 }), tag: fc.constantFrom(1 as const, 2 as const, 3 as const) }),
  // Offsets below 16: the bytes the copy repeats are the ones it writes.
  fc.record({ kind: fc.constant('copy' as const), offset: fc.nat({ max: 15 }), length: fc.nat({ max: 200 }), tag: fc.constantFrom(1 as const, 2 as const, 3 as const) }),
  // The common elements of a page (issue 34): 1-byte literals, short copies from 16 or more back.
  fc.record({ kind: fc.constant('literal' as const), bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }) }),
  fc.record({ kind: fc.constant('copy' as const), offset: fc.integer({ min: 15, max: 40 }), length: fc.nat({ max: 15 }), tag: fc.constantFrom(1 as const, 2 as const) }),
);

/** `length` bytes of a pattern that does not repeat soon. */
function pattern(length: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (i * 31 + length) % 251);
}

/** Whether two arrays hold the same bytes (jest's deep equality is slow on large arrays). */
/**
 * The format read plainly, element by element (format_description.txt): the `length` bytes
 * `stream` stands for, or undefined where it is not such a stream. The damaged-data test's
 * reference. hyparquet's reader, the reference before, loops for ever on a literal whose
 * 4-byte length has its top bit set (its length goes negative and its position back): CI
 * met one such damaged stream on 2026-11-27 and the test ran until it was killed.
 */
function plainRead(stream: Uint8Array, length: number): Uint8Array | undefined {
  let at = 0;
  let declared = 0;
  for (let shift = 0; ; shift += 7) {
    if (at >= stream.length || shift > 28) return undefined;
    const byte = stream[at++]!;
    // The decoder keeps 32 bits of it, as a 32-bit integer does.
    declared = (declared + (byte & 0x7f) * 2 ** shift) % 2 ** 32;
    if (byte < 0x80) break;
  }
  if (declared !== length) return undefined;
  const out = new Uint8Array(length);
  let op = 0;
  while (at < stream.length) {
    const tag = stream[at++]!;
    let size: number;
    let offset: number;
    if ((tag & 3) === 0) {
      size = (tag >>> 2) + 1;
      if (size > 60) {
        const extra = size - 60;
        if (at + extra > stream.length) return undefined;
        size = 1;
        for (let k = 0; k < extra; k++) size += stream[at + k]! * 2 ** (8 * k);
        at += extra;
      }
      if (at + size > stream.length || op + size > length) return undefined;
      out.set(stream.subarray(at, at + size), op);
      at += size;
      op += size;
      continue;
    }
    if ((tag & 3) === 1) {
      if (at + 1 > stream.length) return undefined;
      size = ((tag >>> 2) & 7) + 4;
      offset = ((tag >>> 5) << 8) + stream[at]!;
      at += 1;
    } else if ((tag & 3) === 2) {
      if (at + 2 > stream.length) return undefined;
      size = (tag >>> 2) + 1;
      offset = stream[at]! + stream[at + 1]! * 256;
      at += 2;
    } else {
      if (at + 4 > stream.length) return undefined;
      size = (tag >>> 2) + 1;
      offset = stream[at]! + stream[at + 1]! * 2 ** 8 + stream[at + 2]! * 2 ** 16 + stream[at + 3]! * 2 ** 24;
      at += 4;
    }
    if (offset === 0 || offset > op || op + size > length) return undefined;
    for (let i = 0; i < size; i++, op++) out[op] = out[op - offset]!;
  }
  return op === length ? out : undefined;
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(a, b) === 0;
}

/** Bytes a compressor finds much to copy in: pieces of a few words, repeated. */
const repetitive = fc.array(fc.oneof(fc.uint8Array({ maxLength: 40 }), fc.constantFrom('GET', '/index.html', '200', '2026-11-27', 'Mozilla/5.0').map((text) => new TextEncoder().encode(text))), { maxLength: 400 }).map((parts) => {
  const bytes = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
  }
  return bytes;
});

describe('Snappy decoding', () => {
  it('gives back the bytes of any elements, every tag form and overlapping copies included', () => {
    fc.assert(
      fc.property(fc.array(element, { maxLength: 60 }), (elements) => {
        const { stream, bytes } = encode(elements);
        expect(same(snappyUncompress(stream, bytes.length), bytes)).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('repeats the bytes an overlapping copy writes, for offsets 1-16 and lengths 1-64, in every tag form, far from the ends and near them', () => {
    // The prefix puts the copy where the fast path takes short copies (16 or more bytes of
    // input and output left after it) or, with no tail, where only the checked path may.
    // Each copy's bytes differ from the last one's, so that what a wrong copy would read
    // from the memory's last use is never right by chance.
    for (const tail of [0, 3, 17, 60]) {
      const tailBytes = pattern(tail).map((byte) => byte ^ 0x55);
      for (const tag of [1, 2, 3] as const) {
        for (let offset = 1; offset <= 16; offset++) {
          for (let length = tag === 1 ? 4 : 1; length <= (tag === 1 ? 11 : 64); length++) {
            const prefix = pattern(40).map((byte) => (byte + 7 * offset + 13 * length + tag) % 256);
            const expected = Uint8Array.from([...afterCopy(prefix, offset, length), ...tailBytes]);
            const body = [...shortLiteral(prefix), ...copyElement(tag, offset, length), ...(tail > 0 ? shortLiteral(tailBytes) : [])];
            expect(same(snappyUncompress(stream(expected.length, body), expected.length), expected)).toBe(true);
          }
        }
      }
    }
  });

  it('decodes a page\'s common elements up to its last bytes, and refuses every cut of it and every length short of it', () => {
    // Short literals and short copies from 16 or more back are what a page is made of;
    // the last few fall within the last 64 bytes of the output and 17 of the input.
    const common = fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 16 }).map((bytes): Element => ({ kind: 'literal', bytes })),
      fc.record({ offset: fc.integer({ min: 15, max: 60 }), length: fc.nat({ max: 15 }), tag: fc.constantFrom(1 as const, 2 as const) }).map((copy): Element => ({ kind: 'copy', ...copy })),
    );
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 80 }), fc.array(common, { minLength: 1, maxLength: 12 }), (head, tail) => {
        const elements: Element[] = head.length > 0 ? [{ kind: 'literal', bytes: head }, ...tail] : tail;
        const { stream: whole, bytes } = encode(elements);
        expect(same(snappyUncompress(whole, bytes.length), bytes)).toBe(true);
        // Every cut, mid-element or between elements, leaves the output short.
        for (let cut = 1; cut < whole.length; cut++) {
          expect(() => snappyUncompress(whole.subarray(0, whole.length - cut), bytes.length)).toThrow(/^not Snappy data of \d+ bytes: /);
        }
        // Every shorter declared length: some element writes past it.
        for (let short = 1; short <= Math.min(bytes.length, 20); short++) {
          const body = whole.subarray(varintLength(bytes.length));
          expect(() => snappyUncompress(stream(bytes.length - short, [...body]), bytes.length - short)).toThrow(/an element writes past the output/);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('refuses a cut literal or copy at the input\'s end, which a 16-byte read past the cut would take', () => {
    // A literal of 1-16 bytes or a copy with its offset cut short, after 40 bytes of
    // literal: the input's 16 spare bytes are read by a short literal, and must not count.
    const prefix = pattern(40);
    for (let length = 1; length <= 16; length++) {
      const literal = pattern(length).map((byte) => byte ^ 0xaa);
      const body = [...shortLiteral(prefix), ...shortLiteral(literal)];
      for (let cut = 1; cut <= length; cut++) {
        expect(() => snappyUncompress(stream(40 + length, body.slice(0, body.length - cut)), 40 + length)).toThrow(/an element runs past the input/);
      }
    }
    for (const tag of [1, 2, 3] as const) {
      const body = [...shortLiteral(prefix), ...copyElement(tag, 20, 8)];
      for (let cut = 1; cut < body.length - 41; cut++) {
        expect(() => snappyUncompress(stream(48, body.slice(0, body.length - cut)), 48)).toThrow(/an element runs past the input/);
      }
    }
  });

  it('refuses a literal or copy of 1-16 bytes that writes 1-16 bytes past the output\'s end', () => {
    const prefix = pattern(40);
    const lasts: Array<{ body: number[]; length: number }> = [];
    for (let length = 1; length <= 16; length++) {
      lasts.push({ body: shortLiteral(pattern(length)), length });
      lasts.push({ body: copyElement(2, 20, length), length });
      lasts.push({ body: copyElement(3, 20, length), length });
      if (length >= 4 && length <= 11) lasts.push({ body: copyElement(1, 20, length), length });
    }
    for (const last of lasts) {
      for (let short = 1; short <= last.length; short++) {
        const declared = 40 + last.length - short;
        expect(() => snappyUncompress(stream(declared, [...shortLiteral(prefix), ...last.body]), declared)).toThrow(/an element writes past the output/);
      }
    }
  });

  it('takes a copy from exactly the output\'s start, and refuses one a byte before it, far from the ends and near them', () => {
    for (const prefixLength of [16, 20, 40]) {
      const prefix = pattern(prefixLength);
      for (const tail of [0, 40]) {
        const tailBytes = pattern(tail);
        for (const tag of [1, 2, 3] as const) {
          const length = 8;
          const declared = prefixLength + length + tail;
          const body = (offset: number) => [...shortLiteral(prefix), ...copyElement(tag, offset, length), ...(tail > 0 ? shortLiteral(tailBytes) : [])];
          const expected = Uint8Array.from([...afterCopy(prefix, prefixLength, length), ...tailBytes]);
          expect(same(snappyUncompress(stream(declared, body(prefixLength)), declared), expected)).toBe(true);
          expect(() => snappyUncompress(stream(declared, body(prefixLength + 1)), declared)).toThrow(/a copy reaches before the output/);
          expect(() => snappyUncompress(stream(declared, body(0)), declared)).toThrow(/a copy reaches before the output/);
        }
      }
    }
  });

  it('reads a literal\'s length from 1, 2, 3 and 4 bytes after its tag', () => {
    // A length may be written in more bytes than it needs (the format asks no less).
    for (const extra of [1, 2, 3, 4]) {
      for (const length of [1, 61, 200, 256, 257].filter((n) => n <= 2 ** (8 * extra))) {
        const literal = pattern(length);
        const body: number[] = [];
        varint(length, body);
        body.push((59 + extra) << 2);
        littleEndian(length - 1, extra, body);
        body.push(...literal);
        expect(same(snappyUncompress(Uint8Array.from(body), length), literal)).toBe(true);
      }
    }
    const { stream, bytes } = encode([{ kind: 'literal', bytes: pattern(65_537) }, { kind: 'copy', offset: 5, length: 63, tag: 2 }]);
    expect(same(snappyUncompress(stream, bytes.length), bytes)).toBe(true);
  });

  it('gives back what a compressor wrote, into the caller\'s array when it is long enough', () => {
    fc.assert(
      fc.property(repetitive, fc.nat({ max: 64 }), (bytes, spare) => {
        const stream = snappyCompress(bytes);
        const output = new Uint8Array(bytes.length + spare).fill(0xee);
        const decoded = snappyUncompress(stream, bytes.length, output);
        expect(same(decoded, bytes)).toBe(true);
        expect(decoded.buffer).toBe(output.buffer);
        // Nothing past the bytes asked for is written.
        expect([...output.subarray(bytes.length)].every((byte) => byte === 0xee)).toBe(true);
        // Too short an array: a new one.
        if (bytes.length > 0) expect(same(snappyUncompress(stream, bytes.length, new Uint8Array(bytes.length - 1)), bytes)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('refuses damaged data with an error, and decodes it as the format reads it when it is not damaged', () => {
    fc.assert(
      fc.property(fc.array(element, { minLength: 1, maxLength: 20 }), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }), fc.integer({ min: -3, max: 3 }), fc.nat({ max: 30 }), (elements, changes, lengthChange, cut) => {
        const { stream, bytes } = encode(elements);
        const damaged = stream.slice(0, Math.max(0, stream.length - (cut % 4 === 0 ? cut : 0)));
        for (const [at, value] of changes) if (damaged.length > 0) damaged[at % damaged.length] = value;
        const length = Math.max(0, bytes.length + lengthChange);
        const expected = plainRead(damaged, length);
        let decoded: Uint8Array | Error;
        try {
          decoded = snappyUncompress(damaged, length);
        } catch (error) {
          decoded = error as Error;
        }
        if (decoded instanceof Error) {
          expect(decoded.message).toMatch(/^not Snappy data of \d+ bytes: /);
          expect(expected).toBeUndefined();
          return;
        }
        // Decoded: what the format's reading gives.
        expect(expected).toBeDefined();
        expect(same(decoded, expected!)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses a literal or a copy that would write past the output, and a copy from before it', () => {
    // 5 bytes declared: "abcd", then 2 bytes more than are left.
    expect(() => snappyUncompress(Uint8Array.of(5, 3 << 2, 97, 98, 99, 100, 2 | (2 << 2), 1, 0), 5)).toThrow(/an element writes past the output/);
    expect(() => snappyUncompress(Uint8Array.of(5, 3 << 2, 97, 98, 99, 100, 1 << 2, 101, 102), 5)).toThrow(/an element writes past the output/);
    expect(() => snappyUncompress(Uint8Array.of(8, 3 << 2, 97, 98, 99, 100, 2 | (3 << 2), 5, 0), 8)).toThrow(/a copy reaches before the output/);
    expect(() => snappyUncompress(Uint8Array.of(8, 3 << 2, 97, 98, 99, 100, 2 | (3 << 2), 0, 0), 8)).toThrow(/a copy reaches before the output/);
  });

  it('refuses an output length past what it holds, or past what its input can hold, before any work', () => {
    // 64 bytes a 3-byte copy: the most a Snappy stream expands.
    expect(() => snappyUncompress(new Uint8Array(52_000_000), 2 ** 30 + 1)).toThrow(/more than this reader holds/);
    expect(() => snappyUncompress(Uint8Array.of(0), 2 ** 31)).toThrow(/1 bytes of Snappy never hold so many/);
    const { stream, bytes } = encode([{ kind: 'literal', bytes: pattern(1) }, ...Array.from({ length: 50 }, () => ({ kind: 'copy' as const, offset: 0, length: 63, tag: 2 as const }))]);
    expect(bytes.length / stream.length).toBeGreaterThan(20);
    expect(same(snappyUncompress(stream, bytes.length), bytes)).toBe(true);
    expect(() => snappyUncompress(stream, Math.floor((stream.length * 64) / 3) + 1)).toThrow(/never hold so many/);
    expect(() => snappyUncompress(Uint8Array.of(0), -1)).toThrow(RangeError);
    expect(() => snappyUncompress(Uint8Array.of(0), 0.5)).toThrow(RangeError);
    expect(snappyUncompress(Uint8Array.of(0), 0)).toEqual(new Uint8Array(0));
  });
});
