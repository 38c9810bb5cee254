import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { backfill } from '../../src/app/backfill';
import { ingestBatch } from '../../src/app/ingest';
import { S3LogListing } from '../../src/adapters/s3-log-listing';
import { SqsNotificationSender } from '../../src/adapters/sqs-notification-sender';
import { DynamoUsageStore } from '../../src/adapters/dynamodb-usage-store';
import { s3EventBody } from '../../src/domain/notifications';
import { dieAfterApplying } from '../support/faults';
import { accountsFor, batch, busyTraffic, DAY, DAYS, depsOn, MINUTE, objectFor, requestsOf, StoreClock } from '../support/clocked';
import { createTestQueues, s3NotificationMessage, sqsRecord, testClients, testStackInfo, uniqueId } from '../support/stack';

/**
 * Exactly once on the paths an operator takes, and under clocks writers do not share:
 * each test is a sequence that counted one request twice before its guard, asserted to
 * the exact count with the store's clock driven by the test.
 */
const info = testStackInfo();
const { dynamodb, sqs } = testClients(info);

describe('the proof bound comes only from facts nothing later can move', () => {
  it('a queue-mode backfill over a half-applied object whose keys rolled out completes it exactly (the backfill\'s own event time is now)', async () => {
    const accounts = accountsFor('bfq', 4);
    const prefix = uniqueId('bfq-logs');
    const object = await objectFor(accounts, 1, prefix);
    const clock = new StoreClock();
    const createdAt = clock.read();
    // The first receive applies one increment and dies unseen; its message is gone since.
    const died = await ingestBatch(batch(s3NotificationMessage(object, { createdAt, receiveCount: 1 })), depsOn(clock, (c) => dieAfterApplying(c, 1)));
    await busyTraffic(accounts, 400, 30, clock);
    clock.advance(2 * DAYS);
    // `tally backfill` (queue mode) sends the object again, as S3 would, dated now.
    const queue = await createTestQueues(info);
    const report = await backfill({
      listing: new S3LogListing({ client: testClients(info).s3 }),
      ledger: new DynamoUsageStore({ client: dynamodb, tableName: info.table, historyCap: 48, ledgerTtlDays: 400 }),
      mode: { kind: 'queue', sender: new SqsNotificationSender({ client: sqs, queueUrl: queue.queueUrl, region: info.region }) },
      bucket: info.bucket,
      prefix: `${prefix}/`,
      from: DAY,
      to: DAY,
    });
    const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queue.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    const sent = received.Messages ?? [];
    const consumed = await ingestBatch(batch(...sent.map((m) => sqsRecord(m.Body ?? '', { receiveCount: 1 }))), depsOn(clock));

    expect(died.batchItemFailures).toHaveLength(1);
    expect(report.sent).toBe(1);
    expect(sent).toHaveLength(1);
    expect(consumed.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 4, applied: 3, duplicates: 1, unresolved: 0 });
    for (const account of accounts) expect(await requestsOf(account)).toBe(401);
  }, 240_000);

  it('a replayed message without an event time, a first receive, proves its keys from the record the unseen attempt left', async () => {
    const accounts = accountsFor('noevent', 3);
    const object = await objectFor(accounts);
    const clock = new StoreClock();
    const body = JSON.parse(s3EventBody([object])) as { Records: Record<string, unknown>[] };
    delete body.Records[0]!.eventTime;
    const message = () => sqsRecord(JSON.stringify(body), { receiveCount: 1, firstReceivedAt: clock.read() });

    const died = await ingestBatch(batch(message()), depsOn(clock, (c) => dieAfterApplying(c, 1)));
    await busyTraffic(accounts, 400, 30, clock);
    clock.advance(2 * DAYS);
    const replay = await ingestBatch(batch(message()), depsOn(clock));

    expect(died.batchItemFailures).toHaveLength(1);
    expect(replay.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 3, applied: 2, duplicates: 1, unresolved: 0 });
    for (const account of accounts) expect(await requestsOf(account)).toBe(401);
  }, 240_000);

  it('a consumer whose clock is 8 minutes behind S3 dies unseen; the retry on a right clock still finds its key', async () => {
    const accounts = accountsFor('lag', 3);
    const object = await objectFor(accounts);
    // S3 wrote the object now (its LastModified and event time); the consumer's clock is 8 minutes behind.
    const createdAt = new Date();
    const lagging = new StoreClock(createdAt.getTime() - 8 * MINUTE);
    const died = await ingestBatch(batch(s3NotificationMessage(object, { createdAt, receiveCount: 1 })), depsOn(lagging, (c) => dieAfterApplying(c, 1)));
    // Busy traffic on the same lagging clocks, within two minutes: the key rolls out, dated before S3's time less the margin.
    await busyTraffic(accounts, 400, 2, lagging);
    const right = new StoreClock(createdAt.getTime() + 30 * MINUTE);
    const retry = await ingestBatch(batch(s3NotificationMessage(object, { createdAt, receiveCount: 2 })), depsOn(right));

    expect(died.batchItemFailures).toHaveLength(1);
    expect(retry.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 3, applied: 2, duplicates: 1, unresolved: 0 });
    for (const account of accounts) expect(await requestsOf(account)).toBe(401);
  }, 240_000);
});

describe('clocks cannot reorder history', () => {
  it('keys rolled out by a writer whose clock is 20 minutes behind are found by the retry (its keys dated no earlier than the item, its tombstones filed by their keys)', async () => {
    const accounts = accountsFor('behind', 3);
    const object = await objectFor(accounts);
    const clock = new StoreClock();
    const createdAt = clock.read();
    const died = await ingestBatch(batch(s3NotificationMessage(object, { createdAt, receiveCount: 1 })), depsOn(clock, (c) => dieAfterApplying(c, 1)));
    // An inline run on an operator's machine 20 minutes behind writes 400 other objects to the same account-day.
    const behind = new StoreClock(clock.now - 20 * MINUTE);
    await busyTraffic(accounts, 400, 2, behind);
    clock.advance(30 * MINUTE);
    const retry = await ingestBatch(batch(s3NotificationMessage(object, { createdAt, receiveCount: 2 })), depsOn(clock));

    expect(died.batchItemFailures).toHaveLength(1);
    expect(retry.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 3, applied: 2, duplicates: 1, unresolved: 0 });
    for (const account of accounts) expect(await requestsOf(account)).toBe(401);
  }, 240_000);
});
