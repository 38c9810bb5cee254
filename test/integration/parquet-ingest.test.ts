import type { LogObjectRef } from '../../src/domain/counters/log-object';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import type { SQSEvent } from 'aws-lambda';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { ObjectChangedError, PoisonObjectError } from '../../src/domain/errors';
import { S3ObjectBytes } from '../../src/adapters/s3/s3-log-source';
import { recountParquetLog, writeParquetLog, type ParquetLogSpec, type Recount } from '../support/parquet-logs';
import { nonZero, putLogObject, readCounters, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';

const info = testStackInfo();
const { dynamodb, s3 } = testClients(info);
const DAYS = ['2026-11-20', '2026-11-21', '2026-11-22'] as const;
const batch = (...records: SQSEvent['Records']): SQSEvent => ({ Records: records });

/** A DuckDB-written Parquet log for fresh accounts, its bytes and DuckDB's recount. */
async function parquetLog(spec: Omit<ParquetLogSpec, 'accounts'>) {
  const accounts = [uniqueId('pa'), uniqueId('pb'), uniqueId('pc')];
  const file = await writeParquetLog({ accounts, ...spec });
  try {
    return { accounts, bytes: file.bytes, recount: await recountParquetLog(file.path) };
  } finally {
    file.cleanup();
  }
}

/** Every account-day counter in DynamoDB equals DuckDB's recount. */
async function expectCounters(accounts: readonly string[], recount: Recount) {
  for (const account of accounts) {
    const counters = await readCounters(dynamodb, info.table, account, DAYS[0], DAYS[2]);
    for (const day of DAYS) {
      const want = recount.usage.get(`${account}|${day}`);
      expect({ account, day, ...nonZero(counters[day]) }).toEqual({ account, day, ...nonZero(want) });
    }
  }
}

const key = (name: string) => `AWSLogs/123456789012/CloudFront/E2PARQUETTEST/2026/11/21/00/${uniqueId(name)}.parquet`;

describe('Parquet logs through S3, the ingest handler and DynamoDB Local', () => {
  it.each([
    ['Snappy, every column a string', { shape: 'strings', codec: 'snappy' }],
    ['ZSTD, the day from timestamp_ms', { shape: 'timestamp-ms', codec: 'zstd' }],
    ['GZIP, typed BIGINT and TIMESTAMP columns', { shape: 'typed', codec: 'gzip' }],
  ] as const)('counts a file of %s once, as DuckDB recounts it', async (_, shape) => {
    const { accounts, bytes, recount } = await parquetLog({ rows: 6000, rowGroupRows: 1500, ...shape });
    const ref = await putLogObject(key('log'), bytes);
    const deps = testIngestDeps();

    const first = await ingestBatch(batch(s3NotificationMessage(ref)), deps);
    const again = await ingestBatch(batch(s3NotificationMessage(ref, { receiveCount: 2 })), deps);

    expect(first.batchItemFailures).toEqual([]);
    const lines = first.results[0]!.objects[0]!.lines;
    expect(lines).toEqual({ ...lines, read: recount.rows, unattributed: recount.hostless, malformed: recount.dayless });
    expect(lines.counted + lines.unattributed + lines.malformed).toBe(lines.read);
    expect(again.results[0]?.objects[0]?.status).toBe('already-done');
    await expectCounters(accounts, recount);
  });

  it('refuses a truncated Parquet file as a poison object, applying nothing', async () => {
    const { accounts, bytes } = await parquetLog({ rows: 3000, rowGroupRows: 1000, shape: 'strings', codec: 'zstd' });
    const ref = await putLogObject(key('cut'), bytes.subarray(0, bytes.length - 1000));

    const result = await ingestBatch(batch(s3NotificationMessage(ref)), testIngestDeps());

    expect(result.batchItemFailures).toHaveLength(1);
    expect(result.results[0]?.error?.message).toMatch(new RegExp(`object s3://${info.bucket}/${ref.key}: not a readable Parquet file \\(footer\\): parquet file invalid \\(footer != PAR1\\)`));
    for (const account of accounts) expect(await readCounters(dynamodb, info.table, account, DAYS[0], DAYS[2])).toEqual({});
  });

  it('reads a range of an object into a given array, the bytes a slice reads, and refuses a version S3 no longer holds', async () => {
    const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7 + (i >> 9)) % 251));
    const ref = await putLogObject(key('ranges'), bytes);
    const file = new S3ObjectBytes({ client: s3, ref, etag: `"${ref.etag}"`, size: bytes.length });
    const into = new Uint8Array(200_000);

    for (const [start, end] of [[0, 10], [1_000, 150_001], [120_000, 320_000], [299_990, 300_000]] as const) {
      const read = await file.readInto(start, end, into);
      expect(read.buffer).toBe(into.buffer);
      expect(Buffer.compare(read, bytes.subarray(start, end))).toBe(0);
      expect(Buffer.compare(Buffer.from(await file.slice(start, end)), bytes.subarray(start, end))).toBe(0);
    }
    await expect(file.readInto(0, 300_000, into)).rejects.toThrow(RangeError);

    await putLogObject(ref.key, Buffer.from(bytes).reverse());
    await expect(file.readInto(5_000, 6_000, into)).rejects.toBeInstanceOf(ObjectChangedError);
  });

  it('fails an object overwritten between its ranged reads, refuses the gone version on retry, and counts the new one from its own notification, once', async () => {
    const first = await parquetLog({ rows: 4000, rowGroupRows: 1000, shape: 'strings', codec: 'snappy', seed: 1 });
    const second = await writeParquetLog({ accounts: first.accounts, rows: 3000, rowGroupRows: 1000, shape: 'strings', codec: 'snappy', seed: 2 });
    const recountOfSecond = await recountParquetLog(second.path);
    const ref = await putLogObject(key('overwritten'), first.bytes);
    let replaced: LogObjectRef | undefined;
    const deps = testIngestDeps({}, {
      clients: (clients) =>
        clients.s3.middlewareStack.add(
          (next, context) => async (args) => {
            const input = args.input as { Range?: string };
            if (context.commandName === 'GetObjectCommand' && input.Range !== undefined && replaced === undefined) {
              replaced = await putLogObject(ref.key, second.bytes);
            }
            return next(args);
          },
          { step: 'initialize', name: 'overwriteBeforeFirstRangedRead' },
        ),
    });
    second.cleanup();

    const failed = await ingestBatch(batch(s3NotificationMessage(ref)), deps);
    const retried = await ingestBatch(batch(s3NotificationMessage(ref, { receiveCount: 2 })), deps);
    const successor = await ingestBatch(batch(s3NotificationMessage(replaced!)), deps);
    const again = await ingestBatch(batch(s3NotificationMessage(replaced!, { receiveCount: 2 })), deps);

    expect(failed.results[0]?.error?.name).toBe('ObjectChangedError');
    expect(failed.results[0]?.error).not.toBeInstanceOf(PoisonObjectError);
    expect(retried.results[0]?.error).toBeInstanceOf(PoisonObjectError);
    expect(retried.results[0]?.error?.message).toMatch(/replaced before it was read: S3 no longer holds the version announced \(ETag [0-9a-f]+\)/);
    expect(successor.results[0]?.objects[0]).toMatchObject({ status: 'counted', lines: { read: 3000 } });
    expect(again.results[0]?.objects[0]?.status).toBe('already-done');
    await expectCounters(first.accounts, recountOfSecond);
  });
});
