import { epochMillisBytes, parseFieldsDirective, type FieldLayout } from './cloudfront-log';
import { parseCloudFrontKey } from './cloudfront-key';
import { dayOf, isValidDay } from '../days';

/** The distribution id in the names `tally put` gives files that have no CloudFront name. */
export const PUT_DISTRIBUTION = 'E2TALLYPUT';

/** Characters of the content hash in a generated name: CloudFront's own unique ids are 8 long. */
const UNIQUE_ID_CHARS = 8;

/** The UTC hour a log's requests start at. */
export interface LogHour {
  readonly day: string;
  readonly hour: number;
}

/**
 * The day and hour of the first request line of a CloudFront log with a `#Fields`
 * directive (tab-separated), or of JSON lines (standard logging v2 JSON: an object per
 * line), or undefined when the text holds no such line; a leading byte order mark is
 * skipped. The hour comes from where the
 * line's day does ({@link FieldLayout.daySource}): `date` and `time`, else
 * `timestamp(ms)` or `timestamp`, read as UTC.
 *
 * @example firstRequestHour('#Version: 1.0\n#Fields: date time\n2026-11-21\t07:12:01\n')
 *          // { day: '2026-11-21', hour: 7 }
 * @example firstRequestHour('#Fields: timestamp(ms) sc-bytes\n1795245121000\t512\n')
 *          // { day: '2026-11-21', hour: 7 }
 */
export function firstRequestHour(text: string): LogHour | undefined {
  let layout: FieldLayout | undefined;
  // A byte order mark before the first line is no part of it, as the counter reads it.
  for (const line of text.replace(/^\uFEFF/, '').split(/\r?\n/)) {
    if (line.startsWith('#')) {
      layout = parseFieldsDirective(line) ?? layout;
      continue;
    }
    if (line.startsWith('{')) {
      const hour = jsonLineHour(line);
      if (hour !== undefined) return hour;
      continue;
    }
    if (line.trim() === '' || layout === undefined) continue;
    const hour = lineHour(line.split('\t'), layout);
    if (hour !== undefined) return hour;
  }
  return undefined;
}

function lineHour(columns: readonly string[], layout: FieldLayout): LogHour | undefined {
  const source = layout.daySource;
  if (source === undefined) return undefined;
  const value = columns[layout.index(source.field)!];
  if (value === undefined) return undefined;
  if (source.unitsPerSecond === 0) {
    const time = columns[layout.index('time') ?? -1] ?? '00';
    const hour = Number(time.slice(0, 2));
    return isValidDay(value) && /^\d{2}$/.test(time.slice(0, 2)) && hour < 24 ? { day: value, hour } : undefined;
  }
  const millis = epochMillisBytes(Buffer.from(value), 0, Buffer.byteLength(value), source.unitsPerSecond);
  if (millis < 0) return undefined;
  const at = new Date(millis);
  return { day: dayOf(at), hour: at.getUTCHours() };
}

/**
 * The hour of one JSON line: its fields named as in a `#Fields` directive (`date` and
 * `time`, `timestamp(ms)`, `timestamp`), read as the counter reads them.
 */
function jsonLineHour(line: string): LogHour | undefined {
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof record !== 'object' || record === null || Array.isArray(record)) return undefined;
  const entries = Object.entries(record as Record<string, unknown>).filter(([, value]) => typeof value === 'string' || typeof value === 'number');
  const layout = parseFieldsDirective(`#Fields: ${entries.map(([name]) => name.replace(/\s/g, '_')).join(' ')}`);
  return layout === undefined ? undefined : lineHour(entries.map(([, value]) => String(value)), layout);
}

/** What `tally put` knows of a file when it names its object. */
export interface LogFileFacts {
  /** The file's own name (its last path segment is used). */
  readonly fileName: string;
  /** Hex content hash of the file's bytes: the same content always gets the same name. */
  readonly contentHash: string;
  /** The hour of its first request (else 00 of the first day it has requests of): from the content, never the clock. */
  readonly firstHour: LogHour;
  readonly gzip: boolean;
}

/**
 * The S3 key `tally put` gives a log file under `prefix`: its own name when that
 * already names its hour (a CloudFront name, `.parquet` and `.log.gz` ones too, or a
 * Firehose name: see {@link parseCloudFrontKey}), else
 * `<prefix>E2TALLYPUT.<YYYY-MM-DD-HH>.<8 hex of the content hash>[.gz]` with the hour of
 * its first request. The name depends on the content alone, never on the clock, so
 * putting the same file again, whenever, writes the same object with the same ETag, and
 * the ledger counts it once; and `reconcile` and `backfill`, which pick objects by the
 * day in their name, find it under the day of its requests.
 *
 * @example logObjectKey('cloudfront/', { fileName: 'logs/access.log.gz', contentHash: '9f86d081884c7d65', firstHour: { day: '2026-11-21', hour: 7 }, gzip: true })
 *          // 'cloudfront/E2TALLYPUT.2026-11-21-07.9f86d081.gz'
 */
export function logObjectKey(prefix: string, file: LogFileFacts): string {
  const name = file.fileName.slice(Math.max(file.fileName.lastIndexOf('/'), file.fileName.lastIndexOf('\\')) + 1);
  if (parseCloudFrontKey(name) !== undefined) return `${prefix}${name}`;
  const hour = file.firstHour;
  const unique = file.contentHash.slice(0, UNIQUE_ID_CHARS).toLowerCase();
  return `${prefix}${PUT_DISTRIBUTION}.${hour.day}-${String(hour.hour).padStart(2, '0')}.${unique}${file.gzip ? '.gz' : ''}`;
}

/**
 * S3's longest object key: 1,024 bytes of UTF-8, any prefix included
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html).
 */
export const MAX_S3_KEY_BYTES = 1024;

/**
 * Why a log key prefix (`--prefix`, `TALLY_LOG_PREFIX`, `TALLY_EXPORT_PREFIX`) cannot be
 * used, or undefined when it can. It goes to S3 as ListObjectsV2's `Prefix` and in front
 * of every key `tally put` and `tally close` write, so it is held to what a key may be
 * and to what names the same keys everywhere (S3's object key guidelines, the page above):
 * - at most {@link MAX_S3_KEY_BYTES} bytes of UTF-8: a longer one can match no key;
 * - no control characters: XML 1.0, in which S3 answers a listing, cannot carry most of
 *   them, and a newline in a prefix is a mistyped argument far more often than a key;
 * - no half of a surrogate pair: it has no UTF-8, the SDK would send U+FFFD in its place
 *   and list (or write under) another prefix than the one typed;
 * - no `.` or `..` segment: S3 keeps them as text, but consoles, the CLI's sync and
 *   folder-minded tools resolve them, so the same prefix would name other objects there.
 *
 * @example keyPrefixProblem('cloudfront/')   // undefined
 * @example keyPrefixProblem('logs/../other/') // 'it has a ".." segment (S3 keeps it as text; ...)'
 */
export function keyPrefixProblem(prefix: string): string | undefined {
  const bytes = Buffer.byteLength(prefix, 'utf8');
  if (bytes > MAX_S3_KEY_BYTES) return `it is ${bytes} bytes of UTF-8, and an S3 key is at most ${MAX_S3_KEY_BYTES}`;
  if (/[\u0000-\u001f\u007f-\u009f]/.test(prefix)) return 'it holds a control character (a newline, a tab, an escape...)';
  if (/\p{Cs}/u.test(prefix)) return 'it holds half of a surrogate pair, which has no UTF-8';
  const dotted = prefix.split('/').find((segment) => segment === '.' || segment === '..');
  if (dotted !== undefined) return `it has a "${dotted}" segment (S3 keeps it as text; other tools would read it as a folder step)`;
  return undefined;
}
