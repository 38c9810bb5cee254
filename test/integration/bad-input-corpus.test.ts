import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { jsonLog } from '../../src/app/log';
import { DynamoUsageStore } from '../../src/adapters/dynamodb/dynamodb-usage-store';
import type { LogObjectRef } from '../../src/domain/counters/log-object';
import { s3EventBody } from '../../src/domain/counters/notifications';
import { nonZero, putLogObject, readCounters, sqsRecord, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';

/**
 * The bad-input corpus: every case goes through the real ingest path (S3 emulator,
 * DynamoDB Local) twice, and asserts what happens to the message, to every line,
 * and that no count is lost or doubled.
 */
const info = testStackInfo();
const { dynamodb, s3 } = testClients(info);
const fixture = (name: string) => readFileSync(`${__dirname}/../../fixtures/logs/${name}`);
const HEADER = '#Version: 1.0\n#Fields: date time sc-bytes x-host-header cs-uri-stem\n';
const row = (account: string, bytes: string | number, extra: Partial<{ date: string; time: string; path: string }> = {}) =>
  [extra.date ?? '2026-11-21', extra.time ?? '10:00:00', String(bytes), `${account}.x.com`, extra.path ?? '/a'].join('\t');

interface Case {
  readonly name: string;
  /** Builds the object (if any) and the SQS body for a fresh account. */
  readonly build: (account: string) => Promise<{ body: string; ref?: LogObjectRef }>;
  readonly outcome: 'processed' | 'failed' | 'skipped';
  readonly error?: (ctx: { messageId: string; ref?: LogObjectRef }) => RegExp;
  readonly lines?: { read: number; counted: number; unattributed: number; malformed: number };
  readonly counters?: { requests: number; bytes: number };
}

const key = (suffix: string) => `cloudfront/${uniqueId('E2BAD')}.2026-11-21-10.${suffix}`;
const object = async (content: string | Buffer, suffix = 'a.gz', gzip = true) => {
  const ref = await putLogObject(key(suffix), typeof content === 'string' && gzip ? gzipSync(content) : Buffer.from(content));
  return { ref, body: s3EventBody([ref]) };
};
const namesObject = ({ ref }: { ref?: LogObjectRef }) => new RegExp(`object s3://${info.bucket}/${escape(ref!.key)}`);
const namesMessage = ({ messageId }: { messageId: string }) => new RegExp(`message ${messageId}`);
function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const CASES: Case[] = [
  { name: 'a plain-text (not gzip) log', build: (a) => object(`${HEADER}${row(a, 5)}\n`, 'a.log', false), outcome: 'processed', lines: { read: 1, counted: 1, unattributed: 0, malformed: 0 }, counters: { requests: 1, bytes: 5 } },
  { name: 'binary garbage that is not gzip', build: () => object(fixture('not-a-log.bin')), outcome: 'failed', error: namesObject },
  { name: 'a truncated gzip stream', build: () => object(fixture('truncated.log.gz')), outcome: 'failed', error: namesObject },
  { name: 'gzip of binary garbage', build: () => object(gzipSync(fixture('not-a-log.bin'))), outcome: 'failed', error: namesObject },
  { name: 'an empty object', build: () => object(Buffer.alloc(0)), outcome: 'processed', lines: { read: 0, counted: 0, unattributed: 0, malformed: 0 } },
  { name: 'a header-only log', build: () => object(HEADER), outcome: 'processed', lines: { read: 0, counted: 0, unattributed: 0, malformed: 0 } },
  { name: 'a log with no #Fields header', build: (a) => object(`#Version: 1.0\n${row(a, 5)}\n`), outcome: 'failed', error: namesObject },
  { name: 'an unknown #Fields header (no date)', build: (a) => object(`#Fields: when bytes host\n${row(a, 5)}\n`), outcome: 'failed', error: namesObject },
  { name: 'a line with too few fields', build: (a) => object(`${HEADER}${row(a, 5)}\n2026-11-21\t10:00:00\t9\n`), outcome: 'processed', lines: { read: 2, counted: 1, unattributed: 0, malformed: 1 }, counters: { requests: 1, bytes: 5 } },
  { name: 'a line with too many fields', build: (a) => object(`${HEADER}${row(a, 5)}\textra\tmore\n`), outcome: 'processed', lines: { read: 1, counted: 1, unattributed: 0, malformed: 0 }, counters: { requests: 1, bytes: 5 } },
  { name: 'a 1 MB line among good ones', build: (a) => object(`${HEADER}${row(a, 5)}\n${row(a, 7, { path: `/${'x'.repeat(1024 * 1024)}` })}\n${row(a, 11)}\n`), outcome: 'processed', lines: { read: 3, counted: 2, unattributed: 0, malformed: 1 }, counters: { requests: 2, bytes: 16 } },
  { name: 'an invalid date', build: (a) => object(`${HEADER}${row(a, 5, { date: '2026-13-01' })}\n${row(a, 3)}\n`), outcome: 'processed', lines: { read: 2, counted: 1, unattributed: 0, malformed: 1 }, counters: { requests: 1, bytes: 3 } },
  { name: 'an invalid time', build: (a) => object(`${HEADER}${row(a, 5, { time: '24:00:00' })}\n${row(a, 3)}\n`), outcome: 'processed', lines: { read: 2, counted: 1, unattributed: 0, malformed: 1 }, counters: { requests: 1, bytes: 3 } },
  { name: 'negative bytes', build: (a) => object(`${HEADER}${row(a, -5)}\n${row(a, 3)}\n`), outcome: 'processed', lines: { read: 2, counted: 1, unattributed: 0, malformed: 1 }, counters: { requests: 1, bytes: 3 } },
  { name: 'non-numeric bytes', build: (a) => object(`${HEADER}${row(a, '12kb')}\n${row(a, 3)}\n`), outcome: 'processed', lines: { read: 2, counted: 1, unattributed: 0, malformed: 1 }, counters: { requests: 1, bytes: 3 } },
  { name: 'CRLF line ends', build: (a) => object(`${HEADER}${row(a, 5)}\n${row(a, 6)}\n`.replace(/\n/g, '\r\n')), outcome: 'processed', lines: { read: 2, counted: 2, unattributed: 0, malformed: 0 }, counters: { requests: 2, bytes: 11 } },
  { name: 'a UTF-8 BOM', build: (a) => object(`\uFEFF${HEADER}${row(a, 5)}\n`), outcome: 'processed', lines: { read: 1, counted: 1, unattributed: 0, malformed: 0 }, counters: { requests: 1, bytes: 5 } },
  { name: 'invalid UTF-8 bytes in a line', build: (a) => object(Buffer.concat([Buffer.from(`${HEADER}${row(a, 5)}\n2026-11-21\t10:00:00\t4\t`), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('.x.com\t/a\n')])), outcome: 'processed', lines: { read: 2, counted: 1, unattributed: 1, malformed: 0 }, counters: { requests: 1, bytes: 5 } },
  { name: 'no line break at the end', build: (a) => object(`${HEADER}${row(a, 5)}\n${row(a, 6)}`), outcome: 'processed', lines: { read: 2, counted: 2, unattributed: 0, malformed: 0 }, counters: { requests: 2, bytes: 11 } },
  { name: 'two gzip members concatenated', build: (a) => object(Buffer.concat([gzipSync(`${HEADER}${row(a, 5)}\n`), gzipSync(`${row(a, 6)}\n`)])), outcome: 'processed', lines: { read: 2, counted: 2, unattributed: 0, malformed: 0 }, counters: { requests: 2, bytes: 11 } },
  { name: 'an account id with "#" in the log', build: (a) => object(`${HEADER}${row(`${a}#DAY#2026-11-21#S#00`, 5)}\n${row(a, 2)}\n`), outcome: 'processed', lines: { read: 2, counted: 1, unattributed: 1, malformed: 0 }, counters: { requests: 1, bytes: 2 } },
  { name: 'an object key with spaces', build: (a) => object(`${HEADER}${row(a, 5)}\n`, 'with some spaces.gz'), outcome: 'processed', lines: { read: 1, counted: 1, unattributed: 0, malformed: 0 }, counters: { requests: 1, bytes: 5 } },
  { name: 'an object key with +', build: (a) => object(`${HEADER}${row(a, 5)}\n`, 'a+b+c.gz'), outcome: 'processed', lines: { read: 1, counted: 1, unattributed: 0, malformed: 0 }, counters: { requests: 1, bytes: 5 } },
  { name: 'an object key with unicode', build: (a) => object(`${HEADER}${row(a, 5)}\n`, 'caf\u00e9-\u65e5\u672c-\ud83d\ude80.gz'), outcome: 'processed', lines: { read: 1, counted: 1, unattributed: 0, malformed: 0 }, counters: { requests: 1, bytes: 5 } },
  {
    name: 'a notification without an ETag',
    build: async (a) => {
      const { ref } = await object(`${HEADER}${row(a, 5)}\n`);
      return { ref, body: s3EventBody([{ ...ref, etag: '' }]).replace('"eTag":"",', '') };
    },
    outcome: 'processed', lines: { read: 1, counted: 1, unattributed: 0, malformed: 0 }, counters: { requests: 1, bytes: 5 },
  },
  {
    name: 'an object deleted before it is read',
    build: async (a) => {
      const made = await object(`${HEADER}${row(a, 5)}\n`);
      await s3.send(new DeleteObjectCommand({ Bucket: info.bucket, Key: made.ref.key }));
      return made;
    },
    outcome: 'failed', error: (ctx) => new RegExp(`${namesObject(ctx).source}: object does not exist`),
  },
  { name: 'an SQS body that is not JSON', build: async () => ({ body: '<xml>not json</xml>' }), outcome: 'failed', error: namesMessage },
  { name: 'JSON that is not an S3 event', build: async () => ({ body: '{"orderId":42}' }), outcome: 'failed', error: namesMessage },
  { name: 'a malformed SNS envelope', build: async () => ({ body: '{"Type":"Notification","Message":"{not json"}' }), outcome: 'failed', error: namesMessage },
  { name: 'a malformed EventBridge event', build: async () => ({ body: '{"source":"aws.s3","detail-type":"Object Created","detail":{"bucket":{}}}' }), outcome: 'failed', error: namesMessage },
  { name: 'an oversize notification', build: async () => ({ body: JSON.stringify({ Records: [], pad: 'x'.repeat(300_000) }) }), outcome: 'failed', error: namesMessage },
  { name: 'an s3:TestEvent', build: async () => ({ body: '{"Service":"Amazon S3","Event":"s3:TestEvent","Bucket":"tally-logs"}' }), outcome: 'skipped' },
  { name: 'an ObjectRemoved event', build: async () => ({ body: '{"Records":[{"eventName":"ObjectRemoved:Delete","s3":{"bucket":{"name":"b"},"object":{"key":"k"}}}]}' }), outcome: 'skipped' },
  {
    name: 'an SNS envelope around an S3 event',
    build: async (a) => {
      const made = await object(`${HEADER}${row(a, 5)}\n`);
      return { ...made, body: JSON.stringify({ Type: 'Notification', TopicArn: 'arn:aws:sns:us-east-1:1:logs', Message: made.body }) };
    },
    outcome: 'processed', lines: { read: 1, counted: 1, unattributed: 0, malformed: 0 }, counters: { requests: 1, bytes: 5 },
  },
];

describe('bad-input corpus through the real ingest path', () => {
  const store = new DynamoUsageStore({ client: dynamodb, tableName: info.table, historyCap: 48, ledgerTtlDays: 400 });

  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_, testCase) => {
    const account = uniqueId('bad');
    const { body, ref } = await testCase.build(account);
    const messageId = uniqueId('msg');
    const logLines: string[] = [];
    const deps = testIngestDeps({}, { log: jsonLog((line) => logLines.push(line)) });

    const first = await ingestBatch({ Records: [sqsRecord(body, { messageId })] }, deps);
    const again = await ingestBatch({ Records: [sqsRecord(body, { messageId, receiveCount: 2 })] }, deps);

    expect(first.results[0]?.outcome).toBe(testCase.outcome);
    expect(first.batchItemFailures).toEqual(testCase.outcome === 'failed' ? [{ itemIdentifier: messageId }] : []);
    if (testCase.error) {
      const pattern = testCase.error({ messageId, ...(ref ? { ref } : {}) });
      expect(first.results[0]?.error?.message).toMatch(pattern);
      expect(logLines.some((line) => pattern.test(JSON.parse(line).error ?? ''))).toBe(true);
    }
    if (testCase.lines) {
      expect(first.results[0]?.objects[0]?.lines).toEqual(testCase.lines);
      expect((await store.findLedger(first.results[0]!.objects[0]!.object))?.lines).toEqual(testCase.lines);
      expect(again.results[0]?.objects[0]?.status).toBe('already-done');
    }
    const counters = await readCounters(dynamodb, info.table, account, '2026-11-21');
    expect(nonZero(counters['2026-11-21'])).toEqual(testCase.counters ?? {});
  });

  it('counts every object of a notification with 50 records, once', async () => {
    const account = uniqueId('fifty');
    const refs = await Promise.all(Array.from({ length: 50 }, (_, i) => putLogObject(key(`r${i}.gz`), `${HEADER}${row(account, i + 1)}\n`)));
    const deps = testIngestDeps();

    const first = await ingestBatch({ Records: [sqsRecord(s3EventBody(refs))] }, deps);
    await ingestBatch({ Records: [sqsRecord(s3EventBody(refs))] }, deps);

    expect(first.results[0]?.objects).toHaveLength(50);
    expect(nonZero((await readCounters(dynamodb, info.table, account, '2026-11-21'))['2026-11-21'])).toEqual({ requests: 50, bytes: 1275 });
  });
});
