import { createHash } from 'node:crypto';
import { constants, gunzipSync } from 'node:zlib';
import { isSupportedDay, SUPPORTED_DAYS_TEXT } from '../../domain/days';
import { PoisonObjectError, ValidationError } from '../../domain/errors';
import { printable } from '../../domain/printable';
import type { LogObjectRef } from '../../domain/counters/log-object';
import { firstRequestHour, keyPrefixProblem, logObjectKey, MAX_S3_KEY_BYTES, type LogHour } from '../../domain/logs/log-naming';
import type { LogBody, LogSink, LogSource, NotificationSender } from '../ports';

/** A log file to put: its name as given, its content, and the hour of its first request ({@link firstHourOf}). */
export interface LogFile {
  readonly name: string;
  readonly content: LogFileContent;
  readonly firstHour: LogHour;
  readonly hourFrom: 'content' | 'first-day';
}

/** A log file's content as put knows it before putting it: read once for what names it, read again, part by part, to send it. */
export interface LogFileContent extends LogBody {
  /** SHA-256 of the content, hexadecimal: a made name's 8 hex come from it. */
  readonly sha256: string;
  /** The MD5 of each of its {@link LogBody.parts}, in order: the object's ETag is foreseen from them ({@link s3Etag}). */
  readonly partMd5s: readonly Uint8Array[];
  /**
   * Its first {@link HEAD_BYTES} (all of it when shorter): gzip or not, and the hour of its
   * first request. Once that hour is known, put keeps only the first {@link GZIP_MAGIC_BYTES}.
   */
  readonly head: Uint8Array;
}

/**
 * The bytes of one part of a file put. A file no longer than this is put in one PutObject
 * (its ETag the MD5 of its bytes, as before); a longer one in a multipart upload of parts
 * this long, the last shorter, so that put holds one part at a time whatever the file's
 * size. S3 takes parts of 5 MiB to 5 GiB (the last smaller) and 10,000 parts at the most
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/qfacts.html); the local stack's
 * emulator takes requests of up to 11 MiB.
 */
export const PUT_PART_BYTES = 8 * 1024 * 1024;
/** S3's most parts in one multipart upload (see {@link PUT_PART_BYTES}). */
export const PUT_MAX_PARTS = 10_000;
/** The largest file put takes: {@link PUT_MAX_PARTS} parts of {@link PUT_PART_BYTES}. */
export const PUT_MAX_BYTES = PUT_PART_BYTES * PUT_MAX_PARTS;

/**
 * The ETag a dry run foresees for an object put in parts whose MD5s are `partMd5s`: one
 * part, the MD5 of the bytes (PutObject's, for plaintext objects); more, the MD5 of their
 * MD5s one after another, a dash and how many there are. S3 documents only that a
 * multipart upload's ETag is then no MD5 of the data
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_Object.html); that form is what S3
 * answers and what the local stack's emulator computes. A real put reports the ETag S3
 * answered.
 */
export function s3Etag(partMd5s: readonly Uint8Array[]): string {
  if (partMd5s.length === 1) return Buffer.from(partMd5s[0]!).toString('hex');
  const hash = createHash('md5');
  for (const md5 of partMd5s) hash.update(md5);
  return `${hash.digest('hex')}-${partMd5s.length}`;
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
/** Bytes of a file's head that tell gzip from text: all that is kept of it once its first hour is known. */
export const GZIP_MAGIC_BYTES = GZIP_MAGIC.length;
/** Enough of a file to find its `#Fields` directive and first request line. */
export const HEAD_BYTES = 64 * 1024;

function isGzip(bytes: Uint8Array): boolean {
  return bytes[0] === GZIP_MAGIC[0] && bytes[1] === GZIP_MAGIC[1];
}

/** The first characters of a log from its first bytes, gunzipped when it is gzip; undefined when they cannot be read. */
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
export function firstHourOf(file: string, head: Uint8Array, days: readonly string[]): { firstHour: LogHour; from: 'content' | 'first-day' } {
  if (days.length === 0) throw new ValidationError(`file ${file}: no request line with a day: nothing to count (tally count ${file} shows its lines)`);
  const outside = days.find((day) => !isSupportedDay(day));
  if (outside !== undefined) throw new ValidationError(`file ${file}: has requests of ${outside}, outside the days Tally supports, ${SUPPORTED_DAYS_TEXT}`);
  const first = [...days].sort()[0]!;
  const hour = firstRequestHour(headText(head) ?? '');
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
  // Every key is made and measured before the first is put: one too long puts nothing.
  const keys = options.files.map((file) => logObjectKey(options.prefix, { fileName: file.name, contentHash: file.content.sha256, gzip: isGzip(file.content.head), firstHour: file.firstHour }));
  keys.forEach((key, i) => {
    const bytes = Buffer.byteLength(key, 'utf8');
    if (bytes > MAX_S3_KEY_BYTES) {
      throw new ValidationError(`file ${printable(options.files[i]!.name, 200)}: its key under the prefix would be ${bytes} bytes, and an S3 key is at most ${MAX_S3_KEY_BYTES}: choose a shorter --prefix; nothing was put`);
    }
    // A CloudFront-named file keeps its name, whatever it holds (a tab, a newline): the key is held to what the prefix is.
    const problem = keyPrefixProblem(key);
    if (problem !== undefined) {
      throw new ValidationError(`file ${printable(options.files[i]!.name, 200)}: its name cannot be part of an S3 key as it is: ${problem}; put a copy under another name; nothing was put`);
    }
  });
  for (const [i, file] of options.files.entries()) {
    const { content } = file;
    const key = keys[i]!;
    const named = key !== `${options.prefix}${file.name.slice(Math.max(file.name.lastIndexOf('/'), file.name.lastIndexOf('\\')) + 1)}`;
    const previousEtag = await etagBefore(options, key);
    const { etag } = options.dryRun === true ? { etag: s3Etag(content.partMd5s) } : await options.sink.put(options.bucket, key, content);
    const object: LogObjectRef = { bucket: options.bucket, key, etag, size: content.size, sequencer: s3Sequencer(clock(), sequence++) };
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
