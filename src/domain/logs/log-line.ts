/**
 * One data line of a log as the counter holds it: the bytes it came in, and where each
 * column it reads starts and ends. Resolvers and metric rules compare bytes where they
 * can and ask for a column's text (UTF-8 decoded, as the log was always read) only when
 * they must, so most lines are counted without making a string.
 *
 * Decoding one column alone gives exactly the text that decoding the whole line and
 * splitting it on tabs gave: a tab is ASCII, never part of a multi-byte character, so an
 * invalid or cut-off sequence before it becomes the same U+FFFD either way.
 */
export class LogLine {
  /** Per column: where it starts and ends in {@link bytes} (only the columns read are set). */
  readonly starts: Int32Array;
  readonly ends: Int32Array;
  private readonly text: Buffer;
  private readonly texts: (string | undefined)[];
  private readonly textLine: Int32Array;
  private serial = 0;

  constructor(
    readonly bytes: Uint8Array,
    width: number,
  ) {
    this.starts = new Int32Array(width);
    this.ends = new Int32Array(width);
    this.text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
    this.texts = new Array<string | undefined>(width).fill(undefined);
    this.textLine = new Int32Array(width).fill(-1);
  }

  /** Moves on to the next line: texts decoded for the previous one are forgotten. */
  next(): void {
    this.serial = (this.serial + 1) | 0;
  }

  /** The column's value as text (decoded once per line). */
  field(column: number): string {
    if (this.textLine[column] === this.serial) return this.texts[column]!;
    const value = this.decode(this.starts[column]!, this.ends[column]!);
    this.texts[column] = value;
    this.textLine[column] = this.serial;
    return value;
  }

  /** The UTF-8 text of `bytes[start, end)`. */
  decode(start: number, end: number): string {
    return this.text.toString('utf8', start, end);
  }

  /** False for an empty column and for `-`, CloudFront's empty value. */
  present(column: number): boolean {
    const start = this.starts[column]!;
    const length = this.ends[column]! - start;
    return length > 1 || (length === 1 && this.bytes[start] !== 45 /* - */);
  }

  /** True when every byte of the column is ASCII, so bytes and characters are one to one. */
  ascii(column: number): boolean {
    const bytes = this.bytes;
    for (let i = this.starts[column]!, end = this.ends[column]!; i < end; i++) if (bytes[i]! >= 0x80) return false;
    return true;
  }

  /** Whether the column's bytes are exactly `expected`. */
  equals(column: number, expected: Uint8Array): boolean {
    const start = this.starts[column]!;
    if (this.ends[column]! - start !== expected.length) return false;
    const bytes = this.bytes;
    for (let i = 0; i < expected.length; i++) if (bytes[start + i] !== expected[i]) return false;
    return true;
  }
}

/** What {@link ByteKeyCache.find} answers for a key it does not hold. */
export const NOT_CACHED = -1;

/**
 * Remembers a value per short byte string (a host label, a host) without making a
 * string of it on every line: a hash of the bytes finds the slot of an open-addressing
 * table, the bytes confirm it. Cleared when it reaches `limit` entries, so a log of
 * ever-new keys cannot grow it.
 */
export class ByteKeyCache<V> {
  /** Per table slot: the entry's index + 1, or 0 when free. */
  private readonly slots: Int32Array;
  private readonly mask: number;
  private keyBytes = new Uint8Array(4096);
  private keyStarts: number[] = [];
  private keyEnds: number[] = [];
  private values: V[] = [];
  private used = 0;

  constructor(private readonly limit: number) {
    let size = 16;
    while (size < limit * 2) size *= 2;
    this.slots = new Int32Array(size);
    this.mask = size - 1;
  }

  /** The entry holding `bytes[start, end)`, or {@link NOT_CACHED}; its value is {@link value}. */
  find(bytes: Uint8Array, start: number, end: number): number {
    const slots = this.slots;
    const mask = this.mask;
    const keyBytes = this.keyBytes;
    const length = end - start;
    for (let slot = hashOf(bytes, start, end) & mask; ; slot = (slot + 1) & mask) {
      const entry = slots[slot]! - 1;
      if (entry < 0) return NOT_CACHED;
      const keyStart = this.keyStarts[entry]!;
      if (this.keyEnds[entry]! - keyStart !== length) continue;
      let i = 0;
      while (i < length && keyBytes[keyStart + i] === bytes[start + i]) i++;
      if (i === length) return entry;
    }
  }

  value(entry: number): V {
    return this.values[entry]!;
  }

  /** Remembers `value` for `bytes[start, end)` (which {@link find} did not hold). */
  add(bytes: Uint8Array, start: number, end: number, value: V): void {
    if (this.values.length >= this.limit) this.clear();
    const length = end - start;
    if (this.used + length > this.keyBytes.length) {
      const grown = new Uint8Array(Math.max(this.keyBytes.length * 2, this.used + length));
      grown.set(this.keyBytes.subarray(0, this.used));
      this.keyBytes = grown;
    }
    this.keyBytes.set(bytes.subarray(start, end), this.used);
    this.keyStarts.push(this.used);
    this.keyEnds.push(this.used + length);
    this.used += length;
    this.values.push(value);
    let slot = hashOf(bytes, start, end) & this.mask;
    while (this.slots[slot] !== 0) slot = (slot + 1) & this.mask;
    this.slots[slot] = this.values.length;
  }

  /** How many times the cache was cleared (full): a copy of its entries kept elsewhere is of one generation. */
  generation = 0;

  private clear(): void {
    this.generation++;
    this.slots.fill(0);
    this.keyStarts = [];
    this.keyEnds = [];
    this.values = [];
    this.used = 0;
  }
}

/** FNV-1a of `bytes[start, end)`. */
function hashOf(bytes: Uint8Array, start: number, end: number): number {
  let hash = 0x811c9dc5;
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ bytes[i]!, 0x01000193);
  return hash ^ (hash >>> 15);
}
