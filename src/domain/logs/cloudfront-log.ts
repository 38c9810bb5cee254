/**
 * The name a field is known by whatever log format carries it: lowercase letters and
 * digits only. CloudFront spells one field `cs(Host)` in standard logs (legacy and v2
 * JSON, w3c and plain), `cs_Host` in v2 Parquet and `cs-host` in real-time logs;
 * `DistributionId` appears as `distributionid` too. All are `cshost` and
 * `distributionid` here.
 *
 * @example fieldKey('cs(User-Agent)') // 'csuseragent', as are 'cs_User_Agent' and 'cs-user-agent'
 */
export function fieldKey(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/**
 * The column layout of a CloudFront log, as its `#Fields:` directive (or the format's
 * own header, or configuration) names it. Older files carry fewer fields and newer ones
 * more, in any order; every lookup goes by name, matched by {@link fieldKey} so that
 * code written with the standard-log names reads every format.
 */
export class FieldLayout {
  private readonly positions: ReadonlyMap<string, number>;
  private readonly looked = new Set<number>();

  constructor(readonly fields: readonly string[]) {
    const positions = new Map<string, number>();
    fields.forEach((name, position) => {
      const key = fieldKey(name);
      if (!positions.has(key)) positions.set(key, position);
    });
    this.positions = positions;
  }

  /** Column of `field`, or undefined when this file does not log it. */
  index(field: string): number | undefined {
    const position = this.positions.get(fieldKey(field));
    if (position !== undefined) this.looked.add(position);
    return position;
  }

  /** Whether this file logs `field` (not recorded as a column read). */
  has(field: string): boolean {
    return this.positions.has(fieldKey(field));
  }

  /**
   * Where a line's day comes from: its `date`, else `timestamp(ms)` (epoch
   * milliseconds), else `timestamp` (epoch seconds, a fraction allowed), read as UTC.
   * Undefined when the layout has none of them: its lines cannot be attributed to a day.
   */
  get daySource(): DaySource | undefined {
    for (const source of DAY_SOURCES) if (this.has(source.field)) return source;
    return undefined;
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

/** A field a line's day can be read from, and how. */
export interface DaySource {
  readonly field: 'date' | 'timestamp(ms)' | 'timestamp';
  /** `date`: YYYY-MM-DD. Otherwise how many of the field's units make a second. */
  readonly unitsPerSecond: 0 | 1 | 1000;
}

/** The fields a day is read from, by preference. */
export const DAY_SOURCES: readonly DaySource[] = [
  { field: 'date', unitsPerSecond: 0 },
  { field: 'timestamp(ms)', unitsPerSecond: 1000 },
  { field: 'timestamp', unitsPerSecond: 1 },
];

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
  return layout.daySource !== undefined;
}

const MS_PER_DAY = 86_400_000;
/** Epoch milliseconds from 1970-01-01 up to 9999-12-31: what a timestamp may say. */
const MAX_EPOCH_MS = 253_402_300_800_000;

/**
 * The epoch time in `bytes[start, end)` (digits, optionally a `.` and more digits) in
 * milliseconds, given how many units make a second; -1 when it is no such number or
 * lies outside years 1970-9999.
 *
 * @example epochMillisBytes(Buffer.from('1732345678.123'), 0, 14, 1) // 1732345678123
 */
export function epochMillisBytes(bytes: Uint8Array, start: number, end: number, unitsPerSecond: number): number {
  let whole = 0;
  let i = start;
  while (i < end && bytes[i] !== 46 /* . */) {
    const digit = bytes[i]! - 48;
    if (digit < 0 || digit > 9 || i - start >= 16) return -1;
    whole = whole * 10 + digit;
    i++;
  }
  if (i === start) return -1;
  let fraction = 0;
  let scale = 1;
  if (i < end) {
    if (++i === end) return -1;
    for (; i < end; i++) {
      const digit = bytes[i]! - 48;
      if (digit < 0 || digit > 9) return -1;
      if (scale < 1e9) {
        fraction = fraction * 10 + digit;
        scale *= 10;
      }
    }
  }
  const millis = Math.floor(((whole + fraction / scale) * 1000) / unitsPerSecond);
  return millis <= MAX_EPOCH_MS ? millis : -1;
}

/** The UTC day number (days since 1970-01-01) of epoch milliseconds. */
export function epochDayNumber(millis: number): number {
  return Math.floor(millis / MS_PER_DAY);
}

/** The UTC day (YYYY-MM-DD) of a day number. */
export function dayOfNumber(dayNumber: number): string {
  return new Date(dayNumber * MS_PER_DAY).toISOString().slice(0, 10);
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
