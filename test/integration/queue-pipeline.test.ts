import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { MessageResult } from '../../src/app/ingest/ingest';
import { jsonLog } from '../../src/app/log';
import type { LogSource } from '../../src/app/ports';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { s3EventBody } from '../../src/domain/counters/notifications';
import { emptyExpected, generateLog, mergeExpected } from '../../src/local/demo/log-generator';
import { QueuePoller, queueDepth, waitForEmptyQueue } from '../../src/local/pipeline/poller';
import { createTestQueues, nonZero, putLogObject, readCounters, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';
import { SHORT_WAIT_MS } from '../support/time-limits';

const info = testStackInfo();
const { sqs, dynamodb } = testClients(info);

async function drainDlq(dlqUrl: string): Promise<string[]> {
  const bodies: string[] = [];
  for (let i = 0; i < 5; i++) {
    const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl: dlqUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    bodies.push(...(received.Messages ?? []).map((m) => m.Body ?? ''));
    if ((received.Messages ?? []).length === 0 && bodies.length > 0) break;
  }
  return bodies;
}

describe('the ingest queue end to end (SQS emulator, S3 emulator, DynamoDB Local)', () => {
  it('sends a poison message and a poison object to the DLQ with clear errors, and lands the rest', async () => {
    const queues = await createTestQueues(info, { visibilityTimeoutSeconds: 1, maxReceiveCount: 2 });
    const account = uniqueId('ok');
    const good = await putLogObject(`cloudfront/${uniqueId('E2')}.2026-11-21-00.a.gz`, `#Fields: date time sc-bytes x-host-header\n2026-11-21\t00:00:01\t42\t${account}.x.com\n`);
    const garbage = await putLogObject(`cloudfront/${uniqueId('E2')}.2026-11-21-00.b.gz`, Buffer.from('\u0000\u0001 definitely not a log \u00ff'.repeat(50)));
    const logLines: string[] = [];
    const deps = testIngestDeps({}, { log: jsonLog((line) => logLines.push(line)) });
    const poller = new QueuePoller({ sqs, queueUrl: queues.queueUrl, queueArn: queues.queueArn, region: info.region, handler: (event) => ingestBatch(event, deps), waitSeconds: 1 });
    await sqs.send(new SendMessageCommand({ QueueUrl: queues.queueUrl, MessageBody: 'not json at all' }));
    const garbageBody = s3EventBody([garbage]);
    await sqs.send(new SendMessageCommand({ QueueUrl: queues.queueUrl, MessageBody: garbageBody }));
    await sqs.send(new SendMessageCommand({ QueueUrl: queues.queueUrl, MessageBody: s3EventBody([good]) }));

    poller.start();
    const emptied = await waitForEmptyQueue(sqs, queues.queueUrl, SHORT_WAIT_MS);
    await poller.stop();
    const dead = await drainDlq(queues.dlqUrl);

    expect(emptied).toBe(true);
    expect(dead.sort()).toEqual([garbageBody, 'not json at all'].sort());
    const errors = logLines.map((line) => JSON.parse(line)).filter((entry) => entry.message === 'message failed');
    expect(errors.some((e) => /message .+: body is not JSON/.test(e.error) && e.poison === true)).toBe(true);
    expect(errors.some((e) => e.error.includes(`object s3://${info.bucket}/${garbage.key}: not a CloudFront log`))).toBe(true);
    expect((await readCounters(dynamodb, info.table, account, '2026-11-21'))['2026-11-21']).toMatchObject({ requests: 1, bytes: 42 });
  });

  it('keeps a long object invisible to other consumers by extending its visibility', async () => {
    const queues = await createTestQueues(info, { visibilityTimeoutSeconds: 2, maxReceiveCount: 5 });
    const account = uniqueId('slow');
    const ref = await putLogObject(`cloudfront/${uniqueId('E2')}.2026-11-21-00.slow.gz`, `#Fields: date time sc-bytes x-host-header\n2026-11-21\t00:00:01\t7\t${account}.x.com\n`);
    const deps = testIngestDeps({ TALLY_HEARTBEAT_SECONDS: '1', TALLY_VISIBILITY_TIMEOUT: '3', TALLY_INGEST_QUEUE_URL: queues.queueUrl });
    const slowSource: LogSource = {
      etagOf: (r) => deps.source.etagOf(r),
      open: async (r) => {
        await new Promise((resolve) => setTimeout(resolve, 5_000));
        return deps.source.open(r);
      },
    };
    let handled = 0;
    const poller = new QueuePoller({
      sqs, queueUrl: queues.queueUrl, queueArn: queues.queueArn, region: info.region,
      handler: async (event) => {
        handled += event.Records.length;
        return ingestBatch(event, { ...deps, source: slowSource });
      },
    });
    await sqs.send(new SendMessageCommand({ QueueUrl: queues.queueUrl, MessageBody: s3EventBody([ref]) }));

    const working = poller.pollOnce();
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    const peek = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queues.queueUrl, WaitTimeSeconds: 0, MaxNumberOfMessages: 10 }));
    await working;

    expect(peek.Messages ?? []).toEqual([]);
    expect(handled).toBe(1);
    expect(await queueDepth(sqs, queues.queueUrl)).toEqual({ visible: 0, inFlight: 0 });
    expect((await readCounters(dynamodb, info.table, account, '2026-11-21'))['2026-11-21']).toMatchObject({ requests: 1, bytes: 7 });
  });

  it('counts many objects with duplicate notifications through the poller exactly', async () => {
    const queues = await createTestQueues(info, { visibilityTimeoutSeconds: 5, maxReceiveCount: 3 });
    const accounts = [uniqueId('p1'), uniqueId('p2'), uniqueId('p3')].map((id, i) => ({ id, weight: i + 1 }));
    const expected = emptyExpected();
    const refs = [];
    for (let i = 0; i < 12; i++) {
      const log = generateLog({ seed: 1000 + i, day: '2026-11-21', hour: i % 2 === 0 ? 0 : 12, distribution: 'E2PIPE', accounts, lines: 80, unattributedRate: 0.05, malformedRate: 0.02, previousDayRate: 0.2 });
      mergeExpected(expected, log.expected);
      refs.push(await putLogObject(`cloudfront/${uniqueId('E2PIPE')}.2026-11-21-00.${i}.gz`, log.text));
    }
    const results: MessageResult[] = [];
    const deps = testIngestDeps();
    const poller = new QueuePoller({
      sqs, queueUrl: queues.queueUrl, queueArn: queues.queueArn, region: info.region,
      handler: async (event) => {
        const response = await ingestBatch(event, deps);
        results.push(...response.results);
        return response;
      },
    });
    for (const [i, ref] of refs.entries()) {
      await sqs.send(new SendMessageCommand({ QueueUrl: queues.queueUrl, MessageBody: s3EventBody([ref]) }));
      if (i % 3 === 0) await sqs.send(new SendMessageCommand({ QueueUrl: queues.queueUrl, MessageBody: s3EventBody([ref]) }));
    }

    poller.start();
    await waitForEmptyQueue(sqs, queues.queueUrl, SHORT_WAIT_MS);
    await poller.stop();

    for (const { id } of accounts) {
      const counters = await readCounters(dynamodb, info.table, id, '2026-11-20', '2026-11-21');
      for (const day of ['2026-11-20', '2026-11-21']) {
        expect({ id, day, ...nonZero(counters[day]) }).toEqual({ id, day, ...nonZero(expected.usage.get(`${id}|${day}`)) });
      }
    }
    const counted = results.flatMap((r) => r.objects).filter((o) => o.status === 'counted');
    const lines = counted.reduce((sum, o) => sum + o.lines.read, 0);
    const firstTimeLines = new Map(counted.map((o) => [o.object.key, o.lines.read]));
    expect([...firstTimeLines.values()].reduce((a, b) => a + b, 0)).toBe(expected.lines.read);
    expect(lines).toBeGreaterThanOrEqual(expected.lines.read);
    expect(results.filter((r) => r.outcome === 'failed')).toEqual([]);
  });
});
