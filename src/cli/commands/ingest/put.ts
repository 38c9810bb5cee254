import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { firstHourOf, GZIP_MAGIC_BYTES, HEAD_BYTES, PUT_MAX_BYTES, PUT_MAX_PARTS, PUT_PART_BYTES, putLogs, type LogFile, type PutLogResult } from '../../../app/ingest/put-logs';
import type { TallyConfig } from '../../../adapters/config';
import { ConfigError, ValidationError } from '../../../domain/errors';
import { printable } from '../../../domain/printable';
import { countLogFile, refuseNonLogFiles } from './count';
import { readLogFileContent } from './put-file';
import { defineCommand, JSON_OPTION } from '../../command';
import { formatTable } from '../../io';
import { logBucketOf } from '../../operator-target';

const MIB = 1024 * 1024;
const LIMIT = `put's limit of ${PUT_MAX_BYTES / MIB} MiB (${PUT_MAX_BYTES} bytes: S3's ${PUT_MAX_PARTS} parts of ${PUT_PART_BYTES / MIB} MiB)`;

/**
 * Refuses, before anything is read or a target opened, a file over {@link PUT_MAX_BYTES}
 * (more parts than S3 takes in one upload), naming the file and the sizes. Put holds one
 * part of a file at a time, so files of any number and size up to that are taken. A file
 * that cannot be looked at is left to the reader (it says why).
 */
function refuseOversizedFiles(names: readonly string[], cwd: string): void {
  for (const name of names) {
    let size: number;
    try {
      size = statSync(resolve(cwd, name)).size;
    } catch {
      continue;
    }
    if (size > PUT_MAX_BYTES) throw new ValidationError(`file ${printable(name, 200)}: ${Math.round(size / MIB)} MiB (${size} bytes) is over ${LIMIT}; nothing was put`);
  }
}

/**
 * Reads each file and counts it as the consumer counts it, before anything is put: a
 * mistyped name, or a file tally count refuses (with the same words), puts nothing. What
 * is kept of each until it is put is its hashes and the two bytes that say gzip, not its
 * content, nor its first {@link HEAD_BYTES} once its first hour is known: 64 KiB a file
 * held 125 MB for 2,000 files, and more than a GiB for a month of a distribution's logs.
 */
export async function readFilesToPut(names: readonly string[], cwd: string, config: Pick<TallyConfig, 'resolver' | 'metricRules' | 'logFormat'>): Promise<LogFile[]> {
  const files: LogFile[] = [];
  for (const name of names) {
    let content: LogFile['content'];
    try {
      content = await readLogFileContent(resolve(cwd, name), name);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new ValidationError(`file ${printable(name, 200)}: no such file; nothing was put`, { cause: error });
      throw error;
    }
    // A file that grew since it was looked at is held to the same bound.
    if (content.size > PUT_MAX_BYTES) throw new ValidationError(`file ${printable(name, 200)}: it grew to ${content.size} bytes, over ${LIMIT}; nothing was put`);
    if (content.size === 0) throw new ValidationError(`file ${printable(name, 200)}: empty: nothing to count; nothing was put`);
    let days: string[];
    try {
      const count = await countLogFile(resolve(cwd, name), { resolver: config.resolver, metricRules: config.metricRules, logFormat: config.logFormat }, name);
      days = [...new Set(count.tally.usage().map((row) => row.day))];
    } catch (error) {
      throw new ValidationError(`${(error as Error).message}; nothing was put`, { cause: error });
    }
    const { firstHour, from } = firstHourOf(name, content.head, days);
    // A copy, not a view: a view would keep the whole head's memory.
    files.push({ name, content: { ...content, head: new Uint8Array(content.head.subarray(0, GZIP_MAGIC_BYTES)) }, firstHour, hourFrom: from });
  }
  return files;
}

/** `tally put FILE...`: exit 0 when every file was put and notified; 2 against AWS, and for a file refused (nothing put). */
export const putCommand = defineCommand<{ dryRun?: boolean; json?: boolean }>({
  name: 'put',
  summary: 'put log files into the local stack and send their S3 notifications',
  description:
    "Local stack only. Puts log files into the local bucket under its log prefix (--prefix to " +
    'choose another) and sends each one the S3 notification S3 would send: one message per ' +
    'object with its real ETag, size and sequencer. A file keeps its name when it is a ' +
    'CloudFront standard-log name (<distribution>.YYYY-MM-DD-HH.<id>.gz); any other file is named ' +
    'E2TALLYPUT.<hour of its first request>.<8 hex of its content hash>[.gz] (from the content ' +
    'alone, never the clock), so putting the same file again, whenever, writes the same object and it is ' +
    'counted once. A file tally count refuses (not gzip, truncated, not a log), an empty one or one with ' +
    `no dated request line is refused and nothing is put; so is a file over ${PUT_MAX_BYTES / MIB} MiB. A file is read a part of ${PUT_PART_BYTES / MIB} MiB at a time ` +
    '(a longer one is put in a multipart upload), never held whole. On AWS, CloudFront writes the ' +
    'logs and S3 sends the notifications: use tally backfill for objects already in the bucket.',
  arguments: [{ name: '<file...>', help: 'log files to put (gzip or plain text), sent in this order' }],
  options: [{ flags: '--dry-run', help: 'say which object each file would become; put and send nothing' }, JSON_OPTION],
  target: { settings: [] },
  async run({ options, args, context: { io, cwd }, target: open }) {
    // Before the target: a folder or /dev/zero is refused with nothing opened or read.
    refuseNonLogFiles(args, cwd, false);
    refuseOversizedFiles(args, cwd);
    const { target, clients } = await open();
    if (!target.emulated) {
      throw new ConfigError(
        `the target is AWS (${target.origin}: ${target.config.tableName} in ${target.config.region}), and put feeds the local stack only. ` +
          'On AWS, CloudFront writes the logs and S3 sends their notifications; tally backfill notifies objects already in the bucket'
      );
    }
    const bucket = logBucketOf(target);
    const queueUrl = target.config.ingestQueueUrl;
    if (queueUrl === undefined) throw new ConfigError('no ingest queue: pass --queue-url or set TALLY_INGEST_QUEUE_URL');
    const files = await readFilesToPut(args, cwd, target.config);
    const { S3LogSink, S3LogSource, SqsNotificationSender } = await import('../../aws-adapters');
    if (options.json !== true) io.out(`tally put: ${target.origin}\n  into s3://${bucket}/${target.logPrefix}, notifications to ${queueUrl}\n`);
    const results = await putLogs({
      sink: new S3LogSink({ client: clients.s3 }),
      source: new S3LogSource({ client: clients.s3 }),
      sender: new SqsNotificationSender({ client: clients.sqs, queueUrl, region: target.config.region }),
      bucket,
      prefix: target.logPrefix,
      files,
      dryRun: options.dryRun === true,
    });
    io.out(options.json === true ? `${JSON.stringify({ bucket, queueUrl, dryRun: options.dryRun === true, objects: results })}\n` : describePut(results, options.dryRun === true));
    return 0;
  },
});

const BEFORE: Record<PutLogResult['before'], string> = {
  new: 'new',
  same: 'same content was there: counted once',
  replaced: 'REPLACED other content (its counts stay)',
};

/** The human account of a put. */
export function describePut(results: readonly PutLogResult[], dryRun = false): string {
  const rows = results.map((result) => [
    result.file,
    result.object.key,
    result.object.etag,
    String(result.object.size ?? 0),
    result.named ? `named from content${result.hourFrom === 'first-day' ? ' (first day of its requests, hour 00)' : ''}` : 'own name',
    BEFORE[result.before],
  ]);
  return (
    `${formatTable(['file', 'key', 'etag', 'bytes', 'name', 'object'], rows)}\n` +
    (dryRun
      ? `dry run: would put ${results.length} object(s) and send their S3 notifications; nothing was put or sent\n`
      : `put ${results.length} object(s) and sent ${results.length} S3 notification(s); the consumer counts them within seconds\n`)
  );
}
