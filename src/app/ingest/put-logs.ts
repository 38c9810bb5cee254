import { createHash } from 'node:crypto';
import { constants, gunzipSync } from 'node:zlib';
import { isSupportedDay, SUPPORTED_DAYS_TEXT } from '../../domain/days';
import { PoisonObjectError, ValidationError } from '../../domain/errors';
import type { LogObjectRef } from '../../domain/counters/log-object';
import { firstRequestHour, logObjectKey, type LogHour } from '../../domain/logs/log-naming';
import type { LogSink, LogSource, NotificationSender } from '../ports';

/** A log file to put: its name as given, its bytes, and the hour of its first request ({@link firstHourOf}). */
export interface LogFile {
  readonly name: string;
  readonly bytes: Uint8Array;
  readonly firstHour: LogHour;
  readonly hourFrom: 'content' | 'first-day';
}

export interface PutLogsOptions {
  readonly sink: LogSink;
  /** Says what the bucket held under a key before (HeadObject). */
  readonly source: Pick<LogSource, 'etagOf'>;
  readonly sender: NotificationSender;
  readonly bucket: string;
  readonly prefix: string;
  readonly files: readonly LogFile[];
  /** Name the objects and compare them with the bucket; put and send nothing. */
  readonly dryRun?: boolean;
  readonly clock?: () => Date;
}

/** What putting one file did. */
export interface PutLogResult {
  readonly file: string;
  readonly object: LogObjectRef;
  /** `new`: no object had that key; `same`: the same content was there (counted once all the same); `replaced`: other content was. */
  readonly before: 'new' | 'same' | 'replaced';
  /** The ETag the key held before, for `replaced`. */
  readonly previousEtag?: string;
  /** The key was made from the content (the file's name is no CloudFront name). */
  readonly named: boolean;
  /**
   * For a made name: the hour came from the first request line (`content`), or is 00 of
   * the first day the file has requests of (`first-day`: a Parquet file, a log with no header).
   */
  readonly hourFrom?: 'content' | 'first-day';
}

const GZIP_MAGIC = [0x1f, 0x8b] as const;
/** Enough of a file to find its `#Fields` directive and first request line. */
const HEAD_BYTES = 64 * 1024;

function isGzip(bytes: Uint8Array): boolean {
  return bytes[0] === GZIP_MAGIC[0] && bytes[1] === GZIP_MAGIC[1];
}

/** The first characters of a log, gunzipped when it is gzip; undefined when it cannot be read. */
function headText(bytes: Uint8Array): string | undefined {
  try {
    // A sync flush reads what the first bytes inflate to, without needing the end of the stream.
    const head = isGzip(bytes) ? gunzipSync(bytes.subarray(0, HEAD_BYTES), { finishFlush: constants.Z_SYNC_FLUSH }) : bytes.subarray(0, HEAD_BYTES);
    return Buffer.from(head).toString('utf8');
  } catch {
    return undefined;
  }
}

/**
 * A sequencer as S3 writes into event notifications: hexadecimal, growing with every
 * event on a key (S3 compares them as equal-length strings).
 */
export function s3Sequencer(now: Date, sequence: number): string {
  return (BigInt(now.getTime()) * 1_000_000n + BigInt(sequence % 1_000_000)).toString(16).toUpperCase().padStart(18, '0');
}

let sequence = 0;

/**
 * The hour `tally put` names a file by, from its content alone: its first request's
 * (the `#Fields` layout's `date` and `time` or timestamp, a JSON line's fields), else 00
 * of the first day it has requests of. `days` are the days its lines were counted on
 * (the consumer's counter read the file: every format). A file with no dated line, or
 * with lines outside the supported days, is refused: there is nothing it could be
 * counted under.
 */
export function firstHourOf(file: string, bytes: Uint8Array, days: readonly string[]): { firstHour: LogHour; from: 'content' | 'first-day' } {
  if (days.length === 0) throw new ValidationError(`file ${file}: no request line with a day: nothing to count (tally count ${file} shows its lines)`);
  const outside = days.find((day) => !isSupportedDay(day));
  if (outside !== undefined) throw new ValidationError(`file ${file}: has requests of ${outside}, outside the days Tally supports, ${SUPPORTED_DAYS_TEXT}`);
  const first = [...days].sort()[0]!;
  const hour = firstRequestHour(headText(bytes) ?? '');
  return hour !== undefined && days.includes(hour.day) ? { firstHour: hour, from: 'content' } : { firstHour: { day: first, hour: 0 }, from: 'first-day' };
}

/**
 * Puts log files into the bucket under `prefix` and sends each one's S3 notification to
 * the ingest queue, as S3 does after every PutObject: one message per object, with the
 * ETag, size and sequencer of the object it wrote. A file without a CloudFront name is
 * named from its content ({@link logObjectKey}), so putting the same file twice writes
 * the same object and its second notification is skipped by the ledger.
 */
export async function putLogs(options: PutLogsOptions): Promise<PutLogResult[]> {
  const clock = options.clock ?? (() => new Date());
  const results: PutLogResult[] = [];
  for (const file of options.files) {
    const key = logObjectKey(options.prefix, {
      fileName: file.name,
      contentHash: createHash('sha256').update(file.bytes).digest('hex'),
      gzip: isGzip(file.bytes),
      firstHour: file.firstHour,
    });
    const named = key !== `${options.prefix}${file.name.slice(Math.max(file.name.lastIndexOf('/'), file.name.lastIndexOf('\\')) + 1)}`;
    const previousEtag = await etagBefore(options, key);
    // A dry run foresees the ETag: a single-part PutObject's is the MD5 of the bytes.
    const { etag } = options.dryRun === true ? { etag: createHash('md5').update(file.bytes).digest('hex') } : await options.sink.put(options.bucket, key, file.bytes);
    const object: LogObjectRef = { bucket: options.bucket, key, etag, size: file.bytes.length, sequencer: s3Sequencer(clock(), sequence++) };
    if (options.dryRun !== true) await options.sender.send([object]);
    results.push({
      file: file.name,
      object,
      before: previousEtag === undefined ? 'new' : previousEtag === etag ? 'same' : 'replaced',
      ...(previousEtag === undefined || previousEtag === etag ? {} : { previousEtag }),
      named,
      ...(named ? { hourFrom: file.hourFrom } : {}),
    });
  }
  return results;
}

async function etagBefore(options: PutLogsOptions, key: string): Promise<string | undefined> {
  try {
    return await options.source.etagOf({ bucket: options.bucket, key });
  } catch (error) {
    if (error instanceof PoisonObjectError) return undefined;
    throw error;
  }
}
