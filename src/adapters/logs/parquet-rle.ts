/**
 * Parquet's RLE / bit-packed hybrid encoding (definition levels and dictionary indices),
 * decoded on a Uint8Array into an Int32Array. hyparquet's decoder reads byte by byte
 * through a DataView and was the hottest code of a fresh process's Parquet count after the
 * counting loop (issue 34); this one reads a bit-packed group of 8 values from 32-bit
 * windows and, as it goes, answers what the page reader otherwise needed two more passes
 * over the values for: the largest value (a dictionary index out of range) and how many
 * equal a target (the present rows: definition level = the column's maximum).
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
    if (end > bytes.length) throw new Error(`RLE/bit-packed data ends past its page (${end} of ${bytes.length} bytes)`);
    let largest = -1;
    let matches = 0;
    let seen = 0;
    const valueBytes = (width + 7) >> 3;
    while (seen < count) {
      // The run's header, a ULEB128 varint.
      let header = 0;
      let scale = 1;
      for (;;) {
        if (at >= end) throw new Error(`RLE/bit-packed data ends after ${seen} of ${count} values`);
        const byte = bytes[at++]!;
        header += (byte & 0x7f) * scale;
        if (byte < 0x80) break;
        scale *= 128;
        if (scale > 2 ** 35) throw new Error('RLE/bit-packed run header longer than 5 bytes');
      }
      if (header % 2 === 0) {
        if (at + valueBytes > end) throw new Error('RLE run value past the end of its data');
        let value = 0;
        for (let i = 0; i < valueBytes; i++) value += bytes[at + i]! * 2 ** (8 * i);
        at += valueBytes;
        if (value > 0x7fffffff) throw new Error(`RLE value ${value} past 2^31`);
        const stop = Math.min(count, seen + Math.floor(header / 2));
        if (stop > seen) {
          out.fill(value, seen, stop);
          if (value > largest) largest = value;
          if (value === target) matches += stop - seen;
        }
        seen = stop;
      } else {
        const groups = Math.floor(header / 2);
        const wanted = Math.min(count - seen, groups * 8);
        const runBytes = groups * width;
        // Only the bytes of the values wanted need be there (a writer may end the data inside the padding).
        const neededBytes = Math.ceil((wanted * width) / 8);
        if (at + neededBytes > end) throw new Error('bit-packed run past the end of its data');
        const stats = unpack(bytes, at, end, width, out, seen, wanted, target);
        if (stats.largest > largest) largest = stats.largest;
        matches += stats.matches;
        seen += wanted;
        at += Math.min(runBytes, end - at);
      }
    }
    this.largest = largest;
    this.matches = matches;
  }
}

const UNPACKED = { largest: -1, matches: 0 };

/**
 * `wanted` values of `width` bits packed from `bytes[at]` into `out` from `seen`: their
 * largest and how many equal `target`. A value is read from the 32-bit little-endian
 * window at its first byte (widths up to 25 bits always fit one window), bit by bit near
 * `end` and for wider values.
 */
function unpack(bytes: Uint8Array, at: number, end: number, width: number, out: Int32Array, seen: number, wanted: number, target: number): typeof UNPACKED {
  let largest = -1;
  let matches = 0;
  const mask = width === 32 ? -1 : (1 << width) - 1;
  // Values whose 4-byte window lies inside [at, end) (value i's window starts at byte
  // (i * width) >> 3, so i * width < (end - at - 3) * 8): read fast.
  const room = (end - at - 3) * 8;
  const fast = width > 25 || room <= 0 ? 0 : Math.min(wanted, Math.floor((room - 1) / width) + 1);
  for (let i = 0; i < fast; i++) {
    const bit = i * width;
    const byte = at + (bit >> 3);
    const window = bytes[byte]! | (bytes[byte + 1]! << 8) | (bytes[byte + 2]! << 16) | (bytes[byte + 3]! << 24);
    const value = (window >>> (bit & 7)) & mask;
    out[seen + i] = value;
    if (value > largest) largest = value;
    if (value === target) matches++;
  }
  for (let i = fast; i < wanted; i++) {
    let value = 0;
    const first = i * width;
    for (let b = 0; b < width; b++) {
      const bit = first + b;
      if ((bytes[at + (bit >> 3)]! >> (bit & 7)) & 1) value += 2 ** b;
    }
    if (value > 0x7fffffff) throw new Error(`bit-packed value ${value} past 2^31`);
    out[seen + i] = value;
    if (value > largest) largest = value;
    if (value === target) matches++;
  }
  UNPACKED.largest = largest;
  UNPACKED.matches = matches;
  return UNPACKED;
}
