/**
 * A WebAssembly module written for one JSON template: the readers scanJson calls for
 * the values of a line (line-scan.wat, "readers"). CloudFront writes every line of a
 * file with the same keys in the same order, so what a general loop would look up per
 * value (the glue's bytes and length, the slot, whether the glue passes 16 or 32 bytes)
 * is known once the first line is read: here it becomes the code itself, constants in
 * the instructions, one value after the other with no loop over the keys. The reading is
 * the general loop's, value for value (test/unit/json-scanner.property.test.ts holds
 * the count to the general reader's on random templates):
 *
 * - the glue before value k is compared with its bytes, 16 at a time (the bytes past its
 *   end masked off); any difference: the line does not fit (-1);
 * - the value ends at the first byte that is '"', '\' or (signed) below 32; when that
 *   byte is no quote, the main module's exact `valueEnd` decides (UTF-8 passes, '\' and
 *   control bytes: -1);
 * - a value read is recorded at `rec + 32 + 8 * slot` (start) and `+ 36` (end); an empty
 *   one as the '-' kept at [100, 101).
 *
 * The module imports the scanner's memory and `valueEnd` (`env`), and exports `quad` and
 * `line` with the types of line-scan.wat's `$quadReader` and `$lineReader`.
 */

/** Where `quad` leaves the end of each line's values (line-scan.wat's memory layout). */
const LINE_ENDS_AT = 128;
/** The '-' an empty value points at, and the byte after it. */
const DASH_AT = 100;

const I32 = 0x7f;
const V128 = 0x7b;
const EMPTY = 0x40;

const op = {
  block: 0x02,
  loop: 0x03,
  if: 0x04,
  end: 0x0b,
  br: 0x0c,
  brIf: 0x0d,
  return: 0x0f,
  call: 0x10,
  select: 0x1b,
  localGet: 0x20,
  localSet: 0x21,
  localTee: 0x22,
  i32Load8U: 0x2d,
  i32Load16U: 0x2f,
  i32Store: 0x36,
  i32Const: 0x41,
  i32Eqz: 0x45,
  i32Eq: 0x46,
  i32Ne: 0x47,
  i32LtS: 0x48,
  i32Ctz: 0x68,
  i32Add: 0x6a,
  i32And: 0x71,
  simd: 0xfd,
} as const;

/** The bytes a value's end is searched for, 16 of each. */
const QUOTES = new Uint8Array(16).fill(34);
const BACKSLASHES = new Uint8Array(16).fill(92);
const SPACES = new Uint8Array(16).fill(32);

/** The SIMD instructions used, after the 0xfd prefix. */
const simd = { v128Load: 0x00, v128Const: 0x0c, i8x16Eq: 0x23, i8x16LtS: 0x25, v128Or: 0x50, i8x16Bitmask: 0x64 } as const;

/** Pushes `value` as an unsigned LEB128 number. */
function pushUnsigned(out: number[], value: number): void {
  do {
    let byte = value & 0x7f;
    value >>>= 7;
    if (value !== 0) byte |= 0x80;
    out.push(byte);
  } while (value !== 0);
}

/** Pushes `value` as a signed LEB128 number. */
function pushSigned(out: number[], value: number): void {
  for (;;) {
    const byte = value & 0x7f;
    value >>= 7;
    if ((value === 0 && (byte & 0x40) === 0) || (value === -1 && (byte & 0x40) !== 0)) {
      out.push(byte);
      return;
    }
    out.push(byte | 0x80);
  }
}

function unsigned(value: number): number[] {
  const out: number[] = [];
  pushUnsigned(out, value);
  return out;
}

/** A vector of small items (the module's header sections). */
const vector = (items: readonly number[][]): number[] => [...unsigned(items.length), ...items.flat()];
const name = (text: string): number[] => [...unsigned(text.length), ...Array.from(text, (c) => c.charCodeAt(0))];

/** The instructions of one function body, with the local indices it reads values with. */
class Body {
  readonly code: number[] = [];

  emit(...bytes: number[]): this {
    for (const byte of bytes) this.code.push(byte);
    return this;
  }

  private opWith(opcode: number, value: number): this {
    this.code.push(opcode);
    pushUnsigned(this.code, value);
    return this;
  }

  get(local: number): this {
    return this.opWith(op.localGet, local);
  }

  set(local: number): this {
    return this.opWith(op.localSet, local);
  }

  tee(local: number): this {
    return this.opWith(op.localTee, local);
  }

  i32(value: number): this {
    this.code.push(op.i32Const);
    pushSigned(this.code, value | 0);
    return this;
  }

  simd(instruction: number, ...immediates: number[]): this {
    this.code.push(op.simd);
    pushUnsigned(this.code, instruction);
    for (const byte of immediates) this.code.push(byte);
    return this;
  }

  load128(offset: number): this {
    return this.simd(simd.v128Load, 0, ...unsigned(offset));
  }

  const128(bytes: ArrayLike<number>): this {
    const code = this.code;
    code.push(op.simd, simd.v128Const);
    for (let i = 0; i < 16; i++) code.push(i < bytes.length ? bytes[i]! : 0);
    return this;
  }
}

interface Line {
  /** The local holding where the reading is (the line's start, then each value's end). */
  readonly p: number;
  readonly rec: number;
  readonly start: number;
}

/**
 * Value k of one line: the glue compared, the value's end found, the slot written.
 * `fail` is the depth of the block to leave when the line does not fit, from the code
 * this is emitted into.
 */
function readValue(body: Body, line: Line, glue: Uint8Array, slot: number, locals: { v: number; bits: number }, fail: number): void {
  const { p, rec, start } = line;
  for (let offset = 0; offset < glue.length; offset += 16) {
    const length = Math.min(16, glue.length - offset);
    const mask = length === 16 ? 0xffff : (1 << length) - 1;
    body.get(p).load128(offset).const128(glue.subarray(offset, offset + length)).simd(simd.i8x16Eq).simd(simd.i8x16Bitmask);
    if (length < 16) body.i32(mask).emit(op.i32And);
    body.i32(mask).emit(op.i32Ne, op.brIf, ...unsigned(fail));
  }
  body.get(p).i32(glue.length).emit(op.i32Add).tee(start).set(p);
  // The first '"', '\' or byte below 32 (signed: UTF-8 too), 16 bytes at a time.
  body.emit(op.loop, EMPTY);
  body.get(p).load128(0).tee(locals.v).const128(QUOTES).simd(simd.i8x16Eq);
  body.get(locals.v).const128(BACKSLASHES).simd(simd.i8x16Eq).simd(simd.v128Or);
  body.get(locals.v).const128(SPACES).simd(simd.i8x16LtS).simd(simd.v128Or);
  body.simd(simd.i8x16Bitmask).tee(locals.bits).emit(op.i32Eqz, op.if, EMPTY);
  body.get(p).i32(16).emit(op.i32Add).set(p).emit(op.br, 1, op.end, op.end);
  body.get(p).get(locals.bits).emit(op.i32Ctz, op.i32Add).tee(p).emit(op.i32Load8U, 0, 0).i32(34).emit(op.i32Ne, op.if, EMPTY);
  // (in the `if`: one block deeper)
  body.get(p).emit(op.call, 0).tee(p).i32(0).emit(op.i32LtS, op.brIf, ...unsigned(fail + 1), op.end);
  if (slot === 0) return;
  const at = 32 + 8 * slot;
  body.get(rec).i32(DASH_AT).get(start).get(p).get(start).emit(op.i32Eq, op.select, op.i32Store, 2, ...unsigned(at));
  body.get(rec).i32(DASH_AT + 1).get(p).get(p).get(start).emit(op.i32Eq, op.select, op.i32Store, 2, ...unsigned(at + 4));
}

/** The readers' module for `glues` (key k's `{"key":"` or `","key":"`) and `slots` (0: not read). */
export function jsonReaderModule(glues: readonly Uint8Array[], slots: readonly number[]): Uint8Array {
  // line(p, rec): locals v (2), bits (3), start (4).
  const line = new Body();
  line.emit(op.block, EMPTY);
  glues.forEach((glue, k) => readValue(line, { p: 0, rec: 1, start: 4 }, glue, slots[k]!, { v: 2, bits: 3 }, 0));
  line.get(0).emit(op.return, op.end).i32(-1).emit(op.end);
  // quad(p0, rec0, ..., p3, rec3): locals v (8), bits (9), starts (10-13); value by
  // value, each line's in turn, so that the processor follows the four chains at once.
  const quad = new Body();
  quad.emit(op.block, EMPTY);
  glues.forEach((glue, k) => {
    for (let i = 0; i < 4; i++) readValue(quad, { p: 2 * i, rec: 2 * i + 1, start: 10 + i }, glue, slots[k]!, { v: 8, bits: 9 }, 0);
  });
  // Each line closed: `"}`, a CR or not, its '\n', where it is left.
  for (let i = 0; i < 4; i++) {
    const p = 2 * i;
    quad.get(p).emit(op.i32Load16U, 0, 0).i32(0x7d22).emit(op.i32Ne, op.brIf, 0);
    quad.get(p).i32(2).emit(op.i32Add).tee(p).get(p).emit(op.i32Load8U, 0, 0).i32(13).emit(op.i32Eq, op.i32Add).tee(p);
    quad.emit(op.i32Load8U, 0, 0).i32(10).emit(op.i32Ne, op.brIf, 0);
    quad.i32(LINE_ENDS_AT + 4 * i).get(p).emit(op.i32Store, 2, 0);
  }
  quad.i32(0).emit(op.return, op.end).i32(-1).emit(op.end);

  const types = vector([
    [0x60, ...vector([[I32]]), ...vector([[I32]])],
    [0x60, ...vector([[I32], [I32]]), ...vector([[I32]])],
    [0x60, ...vector(new Array<number[]>(8).fill([I32])), ...vector([[I32]])],
  ]);
  const imports = vector([
    [...name('env'), ...name('memory'), 0x02, 0x00, 0x01],
    [...name('env'), ...name('valueEnd'), 0x00, 0x00],
  ]);
  const functions = vector([[1], [2]]);
  const exports = vector([
    [...name('line'), 0x00, 1],
    [...name('quad'), 0x00, 2],
  ]);
  // The code section: each body (its locals, then its code) after its size; the
  // bodies are large, so they are copied into the module once, not spread.
  const bodies = [
    { locals: [[1, V128], [2, I32]], code: line.code },
    { locals: [[1, V128], [5, I32]], code: quad.code },
  ].map(({ locals, code }) => ({ head: vector(locals.map(([count, type]) => [...unsigned(count!), type!])), code }));
  const bodyBytes = bodies.reduce((sum, { head, code }) => sum + unsigned(head.length + code.length).length + head.length + code.length, 0);
  const count = unsigned(bodies.length);
  const header = [
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...[types, imports, functions, exports].flatMap((content, i) => [[1, 2, 3, 7][i]!, ...unsigned(content.length), ...content]),
    10, ...unsigned(count.length + bodyBytes), ...count,
  ];
  const module = new Uint8Array(header.length + bodyBytes);
  module.set(header);
  let at = header.length;
  for (const { head, code } of bodies) {
    const size = unsigned(head.length + code.length);
    module.set(size, at);
    module.set(head, at + size.length);
    module.set(code, at + size.length + head.length);
    at += size.length + head.length + code.length;
  }
  return module;
}
