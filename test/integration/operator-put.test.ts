import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { PutLogResult } from '../../src/app/put-logs';
import { normaliseEtag } from '../../src/domain/log-object';
import { parseNotification } from '../../src/domain/notifications';
import { generateLog } from '../../src/local/log-generator';
import { queueDepth } from '../../src/local/poller';
import { tallyCommand } from '../support/cli';
import { captureIo, eventually, operatorEnv, startConsumer } from '../support/operator';
import { createTestQueues, nonZero, readCounters, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';

const put = tallyCommand('put');
const info = testStackInfo();
const { sqs, s3, dynamodb } = testClients(info);

describe('tally put', () => {
  it('puts a file and sends the notification S3 would; the same file put twice counts once', async () => {
    const queues = await createTestQueues(info);
    const prefix = `cloudfront/${uniqueId('put')}/`;
    const accounts = [uniqueId('puta'), uniqueId('putb')];
    const log = generateLog({ seed: 11, day: '2026-11-21', hour: 7, distribution: 'E2PUT', accounts: accounts.map((id) => ({ id, weight: 1 })), lines: 80 });
    const dir = mkdtempSync(join(tmpdir(), 'tally-put-'));
    writeFileSync(join(dir, 'access.log.gz'), gzipSync(log.text));
    const env = operatorEnv(info, { queueUrl: queues.queueUrl, dlqUrl: queues.dlqUrl, prefix });

    const runs = [];
    for (let i = 0; i < 2; i++) {
      const io = captureIo();
      const code = await put(['--json', 'access.log.gz'], io, env, dir);
      runs.push({ code, objects: (JSON.parse(io.stdout) as { objects: PutLogResult[] }).objects });
    }
    const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queues.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 0 }));
    const head = await s3.send(new HeadObjectCommand({ Bucket: info.bucket, Key: runs[0]!.objects[0]!.object.key }));
    const consumer = startConsumer(queues, testIngestDeps());
    try {
      await eventually(async () => {
        const depth = await queueDepth(sqs, queues.queueUrl);
        return depth.visible + depth.inFlight === 0;
      }, 30_000, 'the ingest queue to drain');
    } finally {
      await consumer.stop();
    }

    expect(runs.map((run) => run.code)).toEqual([0, 0]);
    const [first, second] = runs.map((run) => run.objects[0]!);
    expect(first!.object.key).toMatch(new RegExp(`^${prefix}E2TALLYPUT\\.2026-11-21-07\\.[0-9a-f]{8}\\.gz$`));
    expect(second!.object).toMatchObject({ key: first!.object.key, etag: first!.object.etag });
    expect([first!.before, second!.before]).toEqual(['new', 'same']);
    // The notification carries the object's real ETag and size, and a sequencer that grows.
    expect(first!.object.etag).toBe(normaliseEtag(head.ETag!));
    const notified = Messages.map((message) => parseNotification(message.Body!, message.MessageId!));
    expect(notified).toHaveLength(2);
    for (const notification of notified) {
      expect(notification).toEqual({ kind: 'objects', objects: [expect.objectContaining({ bucket: info.bucket, key: first!.object.key, etag: first!.object.etag, size: head.ContentLength })], createdAt: expect.any(String) });
    }
    expect(second!.object.sequencer! > first!.object.sequencer!).toBe(true);
    // Counted once: the counters equal what one copy of the log holds.
    for (const account of accounts) {
      const counters = await readCounters(dynamodb, info.table, account, '2026-11-20', '2026-11-21');
      for (const day of ['2026-11-20', '2026-11-21']) {
        expect(nonZero(counters[day])).toEqual(nonZero(log.expected.usage.get(`${account}|${day}`)));
      }
    }
    expect(await queueDepth(sqs, queues.dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
  });

  it('refuses when the target is AWS, before reading a file or calling any service', async () => {
    const io = captureIo();
    const env = {
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'example',
      TALLY_TABLE: 'tally-prod-usage',
      TALLY_INGEST_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/tally-prod-ingest',
      TALLY_LOG_BUCKET: 'tally-prod-logs',
    };

    const code = await put(['no-such-file.gz'], io, env, '/nonexistent');

    expect(code).toBe(2);
    expect(io.stdout).toBe('');
    expect(io.stderr).toMatch(/^tally put: the target is AWS \(flags and environment: tally-prod-usage in eu-west-1\), and put feeds the local stack only/);
  });
});
