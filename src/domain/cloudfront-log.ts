/**
 * The column layout of a CloudFront standard log, as its `#Fields:` directive names it.
 * Older files carry fewer fields and newer ones more; every lookup goes by name.
 */
export class FieldLayout {
  private readonly positions: ReadonlyMap<string, number>;
  private readonly looked = new Set<number>();

  constructor(readonly fields: readonly string[]) {
    const positions = new Map<string, number>();
    fields.forEach((name, position) => {
      if (!positions.has(name)) positions.set(name, position);
    });
    this.positions = positions;
  }

  /** Column of `field`, or undefined when this file does not log it. */
  index(field: string): number | undefined {
    const position = this.positions.get(field);
    if (position !== undefined) this.looked.add(position);
    return position;
  }

  /** Whether this file logs `field` (not recorded as a column read). */
  has(field: string): boolean {
    return this.positions.has(field);
  }

  /**
   * Columns some code has asked for with {@link index}, ascending. Everything that
   * reads a line (the counter, resolvers, metric rules) finds its columns through
   * `index` when it is compiled, so these are the only columns a line must have
   * split out; the parser skips the others.
   */
  get columnsRead(): readonly number[] {
    return [...this.looked].sort((a, b) => a - b);
  }

  get width(): number {
    return this.fields.length;
  }
}

/** The fields a layout must have for its lines to be counted at all. */
export const REQUIRED_FIELDS = ['date'] as const;

const FIELDS_DIRECTIVE = /^#Fields:[ \t]*(.*)$/;

/**
 * Parses a `#Fields:` directive (a space or a tab may follow the colon).
 * Returns undefined for any other line.
 *
 * @example parseFieldsDirective('#Fields: date time sc-bytes')?.fields // ['date', 'time', 'sc-bytes']
 */
export function parseFieldsDirective(line: string): FieldLayout | undefined {
  const match = FIELDS_DIRECTIVE.exec(line);
  if (!match) return undefined;
  const fields = (match[1] ?? '').trim().split(/[ \t]+/).filter((name) => name.length > 0);
  return new FieldLayout(fields);
}

/** True when `layout` can attribute lines to a day. */
export function isUsableLayout(layout: FieldLayout): boolean {
  return REQUIRED_FIELDS.every((field) => layout.has(field));
}

/**
 * `HH:MM:SS` with real ranges (a leap second `:60` is accepted), read from the bytes
 * `[start, end)` of a line: eight ASCII characters or it is no time.
 */
export function isValidTimeBytes(bytes: Uint8Array, start: number, end: number): boolean {
  if (end - start !== 8 || bytes[start + 2] !== 58 /* : */ || bytes[start + 5] !== 58) return false;
  const hours = twoDigits(bytes, start);
  const minutes = twoDigits(bytes, start + 3);
  const seconds = twoDigits(bytes, start + 6);
  return hours >= 0 && hours < 24 && minutes >= 0 && minutes < 60 && seconds >= 0 && seconds <= 60;
}

function twoDigits(bytes: Uint8Array, at: number): number {
  const tens = bytes[at]! - 48;
  const ones = bytes[at + 1]! - 48;
  if (tens < 0 || tens > 9 || ones < 0 || ones > 9) return -1;
  return tens * 10 + ones;
}

/**
 * `sc-bytes` as a number, read from the bytes `[start, end)` of a line: `-` counts as
 * 0; anything but a non-negative integer of at most 15 digits is rejected with -1 so
 * the line is counted as malformed.
 */
export function parseByteCountBytes(bytes: Uint8Array, start: number, end: number): number {
  const length = end - start;
  if (length === 1 && bytes[start] === 45 /* - */) return 0;
  if (length === 0 || length > 15) return -1;
  let total = 0;
  for (let i = start; i < end; i++) {
    const digit = bytes[i]! - 48;
    if (digit < 0 || digit > 9) return -1;
    total = total * 10 + digit;
  }
  return total;
}
