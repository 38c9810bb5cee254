import { parseFieldsDirective } from './cloudfront-log';
import { parseCloudFrontKey } from './cloudfront-key';
import { dayOf, isValidDay } from './days';

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
 * The day and hour of the first request line of a CloudFront standard log (its `date`
 * and `time` columns, as the `#Fields` directive places them), or undefined when the
 * text holds no such line.
 *
 * @example firstRequestHour('#Version: 1.0\n#Fields: date time\n2026-11-21\t07:12:01\n')
 *          // { day: '2026-11-21', hour: 7 }
 */
export function firstRequestHour(text: string): LogHour | undefined {
  let fields: readonly string[] | undefined;
  for (const line of text.split(/\r?\n/)) {
    if (line.startsWith('#')) {
      fields = parseFieldsDirective(line)?.fields ?? fields;
      continue;
    }
    if (line.trim() === '' || fields === undefined) continue;
    const columns = line.split('\t');
    const day = columns[fields.indexOf('date')];
    const time = columns[fields.indexOf('time')] ?? '00';
    const hour = Number(time.slice(0, 2));
    if (day !== undefined && isValidDay(day) && /^\d{2}$/.test(time.slice(0, 2)) && hour < 24) return { day, hour };
  }
  return undefined;
}

/** What `tally put` knows of a file when it names its object. */
export interface LogFileFacts {
  /** The file's own name (its last path segment is used). */
  readonly fileName: string;
  /** Hex content hash of the file's bytes: the same content always gets the same name. */
  readonly contentHash: string;
  /** The hour its first request line names, when it has one. */
  readonly firstHour?: LogHour;
  readonly gzip: boolean;
}

/**
 * The S3 key `tally put` gives a log file under `prefix`: its own name when that is
 * already a CloudFront standard-log name, else
 * `<prefix>E2TALLYPUT.<YYYY-MM-DD-HH>.<8 hex of the content hash>[.gz]` with the hour of
 * its first request (else `now`'s). The name depends on the content alone, so putting
 * the same file again writes the same object with the same ETag, and the ledger counts
 * it once.
 *
 * @example logObjectKey('cloudfront/', { fileName: 'logs/access.log.gz', contentHash: '9f86d081884c7d65', firstHour: { day: '2026-11-21', hour: 7 }, gzip: true }, now)
 *          // 'cloudfront/E2TALLYPUT.2026-11-21-07.9f86d081.gz'
 */
export function logObjectKey(prefix: string, file: LogFileFacts, now: Date): string {
  const name = file.fileName.slice(Math.max(file.fileName.lastIndexOf('/'), file.fileName.lastIndexOf('\\')) + 1);
  if (parseCloudFrontKey(name) !== undefined) return `${prefix}${name}`;
  const hour = file.firstHour ?? { day: dayOf(now), hour: now.getUTCHours() };
  const unique = file.contentHash.slice(0, UNIQUE_ID_CHARS).toLowerCase();
  return `${prefix}${PUT_DISTRIBUTION}.${hour.day}-${String(hour.hour).padStart(2, '0')}.${unique}${file.gzip ? '.gz' : ''}`;
}
