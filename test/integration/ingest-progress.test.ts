import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { ingestBatch } from '../../src/app/ingest/ingest';
import type { LogObjectRef } from '../../src/domain/counters/log-object';
import { s3EventBody } from '../../src/domain/counters/notifications';
import { IngestProgress, IngestSummary } from '../../src/local/pipeline/ingest-summary';
import { QueuePoller, queueDepth } from '../../src/local/pipeline/poller';
import { createTestQueues, putRequestsObject, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';

const info = testStackInfo();
const { sqs } = testClients(info);

/** `npm start`'s consumer on a queue of its own: the poller, the ingest handler, the summary and its progress. */
async function consumer(objects: readonly LogObjectRef[], notifications: readonly LogObjectRef[]) {
  const queues = await createTestQueues(info, { visibilityTimeoutSeconds: 5, maxReceiveCount: 3 });
  const summary = new IngestSummary();
  summary.expect({ objects: objects.length, notifications: notifications.length });
  const deps = testIngestDeps();
  const poller = new QueuePoller({
    sqs,
    queueUrl: queues.queueUrl,
    queueArn: queues.queueArn,
    region: info.region,
    waitSeconds: 1,
    handler: async (event) => {
      const response = await ingestBatch(event, deps);
      summary.record(response.results);
      return { batchItemFailures: response.batchItemFailures };
    },
  });
  const printed: string[] = [];
  const progress = new IngestProgress(summary, () => queueDepth(sqs, queues.queueUrl), (text) => printed.push(text));
  await sqs.send(
    new SendMessageBatchCommand({ QueueUrl: queues.queueUrl, Entries: notifications.map((ref, i) => ({ Id: String(i), MessageBody: s3EventBody([ref]) })) }),
  );
  return { poller, progress, printed };
}

describe("npm start's ingest summary", () => {
  it('says that counting goes on while the queue holds messages, and gives the final totals once it is empty, adding up to what was sent', async () => {
    const objects = await Promise.all([1, 2, 3].map(() => putRequestsObject([uniqueId('sum')], '2026-11-21')));
    // The second object notified twice, as S3 sometimes does.
    const { poller, progress, printed } = await consumer(objects, [...objects, objects[1]!]);

    // Nothing consumes yet: the wait ends with the totals so far, saying that counting goes on.
    const drainedEarly = await progress.awaitDrained(300, 50);

    expect(drainedEarly).toBe(false);
    expect(printed).toHaveLength(1);
    expect(printed[0]).toContain('counting goes on');
    expect(printed[0]).toContain('the queue holds 4 message(s) waiting, 0 in flight');
    expect(printed[0]).toContain('objects 0 of 3 written (0 counted now, 0 counted before) from 0 of 4 notifications sent');

    // The consumer runs: the console's ticker says once that the queue is empty, with totals that add up.
    poller.start();
    try {
      const deadline = Date.now() + 60_000;
      while (!printed.at(-1)!.includes('the ingest queue is empty') && Date.now() < deadline) {
        await progress.tick();
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    } finally {
      await poller.stop();
    }
    const final = printed.at(-1)!;

    expect(final).toContain('the ingest queue is empty; counted:');
    expect(final).toMatch(/objects 3 of 3 written \(3 counted now, 0 counted before\) from 4 of 4 notifications sent; duplicates skipped: (\d+) deliveries by the ledger/);
    expect(final).toContain('lines read 3 = counted 3 + unattributed 0 + malformed 0');
    // Once empty, a tick with nothing new prints nothing more.
    const before = printed.length;
    await progress.tick();
    expect(printed).toHaveLength(before);
  });

  it('counts objects an earlier start counted as counted before, so that a restart adds up too', async () => {
    const objects = await Promise.all([1, 2].map(() => putRequestsObject([uniqueId('again')], '2026-11-21')));
    const first = await consumer(objects, objects);
    first.poller.start();
    await first.progress.awaitDrained(60_000);
    await first.poller.stop();

    const second = await consumer(objects, objects);
    second.poller.start();
    const drained = await second.progress.awaitDrained(60_000);
    await second.poller.stop();

    expect(drained).toBe(true);
    expect(second.printed.at(-1)).toContain(
      'objects 2 of 2 written (0 counted now, 2 counted before) from 2 of 2 notifications sent; duplicates skipped: 2 deliveries by the ledger',
    );
    expect(second.printed.at(-1)).toContain('lines read 0 = counted 0');
  });
});
