import { randomBytes } from 'node:crypto';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { S3Client } from '@aws-sdk/client-s3';
import { backfill } from '../../src/app/ingest/backfill';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { S3LogListing } from '../../src/adapters/s3/s3-log-listing';
import { SqsNotificationSender } from '../../src/adapters/sqs/sqs-notification-sender';
import { DynamoUsageStore } from '../../src/adapters/dynamodb/dynamodb-usage-store';
import { readConfig } from '../../src/adapters/config';
import { prepareToWrite } from '../../src/adapters/wiring/ingest-deps';
import { ensureUsageTable } from '../../src/adapters/dynamodb/usage-table';
import { localEnvironment } from '../../src/local/stack';
import { tallyCommand } from '../support/cli';
import { captureIo, operatorEnv } from '../support/operator';
import { historyMinute } from '../../src/adapters/dynamodb/history-update';
import { incrementKey } from '../../src/domain/counters/idempotency-key';
import { attemptKey, usageKey } from '../../src/domain/counters/keys';
import { s3EventBody } from '../../src/domain/counters/notifications';
import { dieAfterApplying } from '../support/faults';
import { accountsFor, batch, busyTraffic, DAY, DAYS, depsOn, MINUTE, objectFor, requestsOf, StoreClock } from '../support/clocked';
import { createTestQueues, readCounters, s3NotificationMessage, sqsRecord, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';

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
  it('twin notifications on consumers 40 minutes behind S3: the twin that read the ledger before its sibling recorded still finds the key the sibling applied and rolled out', async () => {
    const accounts = accountsFor('twin', 3);
    const object = await objectFor(accounts);
    // S3 wrote the object now; both consumers' clocks are 40 minutes behind it, far past the margin.
    const createdAt = new Date();
    const lagging = new StoreClock(createdAt.getTime() - 40 * MINUTE);
    // The late twin reads the ledger (nothing there yet) and is held at its GetObject.
    const gate = holdGetObject();
    const late = ingestBatch(
      batch(s3NotificationMessage(object, { createdAt, receiveCount: 1 })),
      testIngestDeps({ TALLY_INCREMENT_CONCURRENCY: '1', TALLY_MAX_RECEIVE_COUNT: '5' }, { clock: lagging.read, clients: (c) => gate.install(c.s3) }),
    );
    await gate.reached;
    // Meanwhile its twin records its attempt, applies one increment and dies unseen; busy traffic rolls that key out.
    const died = await ingestBatch(batch(s3NotificationMessage(object, { createdAt, receiveCount: 1 })), depsOn(lagging, (c) => dieAfterApplying(c, 1)));
    await busyTraffic(accounts, 400, 2, lagging);
    gate.release();
    const counted = await late;

    expect(died.batchItemFailures).toHaveLength(1);
    expect(counted.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 3, applied: 2, duplicates: 1, unresolved: 0 });
    for (const account of accounts) expect(await requestsOf(account)).toBe(401);
  }, 240_000);
});

/** Holds the first `GetObject` of an S3 client until released; `reached` settles when it arrives. */
function holdGetObject(): { install: (client: S3Client) => void; reached: Promise<void>; release: () => void } {
  let arrived!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((resolve) => (arrived = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  const install = (client: S3Client) =>
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'GetObjectCommand') {
          arrived();
          await released;
        }
        return next(args);
      },
      { step: 'initialize', name: 'holdGetObject' },
    );
  return { install, reached, release };
}

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

describe('settings every writer shares live in the table', () => {
  it('a day\'s shard count is fixed by its first increment: a retry under a schedule that changes it uses the recorded one, and the schedule is refused at cold start naming the day', async () => {
    const accounts = accountsFor('moved', 8);
    const object = await objectFor(accounts);
    const clock = new StoreClock();
    const createdAt = clock.read();
    const died = await ingestBatch(batch(s3NotificationMessage(object, { createdAt, receiveCount: 1 })), depsOn(clock, (c) => dieAfterApplying(c, 4)));
    // The operator now sets 16 shards from DAY on, a day that has data.
    const moved = depsOn(clock, undefined, { TALLY_SHARDS: `4,16@${DAY}` });
    const coldStart = await prepareToWrite(moved, readConfig({ ...localEnvironment(info), TALLY_SHARDS: `4,16@${DAY}` }), clock.read()).then(
      () => 'started',
      (error: Error) => error.message,
    );
    const retry = await ingestBatch(batch(s3NotificationMessage(object, { createdAt, receiveCount: 2 })), moved);

    expect(died.batchItemFailures).toHaveLength(1);
    expect(coldStart).toMatch(new RegExp(`gives ${DAY} 16 shard\\(s\\), but the table records 4 for it`));
    expect(retry.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 8, applied: 4, duplicates: 4, unresolved: 0 });
    for (const account of accounts) expect(await requestsOf(account)).toBe(1);
  }, 120_000);

  it('an inline replay or backfill whose TALLY_SHARDS disagrees with the table is refused, naming the day; one on a clock 20 minutes behind DynamoDB\'s is refused, saying by how much', async () => {
    const table = uniqueId('settings');
    await ensureUsageTable(dynamodb, table);
    const accounts = accountsFor('cli', 2);
    const prefix = uniqueId('cli-logs');
    const object = await objectFor(accounts, 1, prefix);
    // The consumer runs with 16 shards: the day's first increment (another object's) fixes 16.
    const counted = await ingestBatch(batch(s3NotificationMessage(await objectFor(accounts))), testIngestDeps({ TALLY_TABLE: table, TALLY_SHARDS: '16' }));
    const env = operatorEnv(info, { prefix: `${prefix}/` }, { TALLY_TABLE: table });

    const unshared = captureIo();
    const unsharedCode = await tallyCommand('backfill')(['--from', DAY, '--to', DAY, '--inline'], unshared, env);
    const skewed = captureIo();
    const skewedCode = await tallyCommand('backfill')(['--from', DAY, '--to', DAY, '--inline'], skewed, { ...env, TALLY_SHARDS: '16' }, process.cwd(), () => new Date(Date.now() - 20 * MINUTE));
    const right = captureIo();
    const rightCode = await tallyCommand('backfill')(['--from', DAY, '--to', DAY, '--inline'], right, { ...env, TALLY_SHARDS: '16' });

    expect(counted.batchItemFailures).toEqual([]);
    expect(unsharedCode).not.toBe(0);
    expect(unshared.stderr).toMatch(new RegExp(`TALLY_SHARDS=4 gives ${DAY} 4 shard\\(s\\), but the table records 16 for it`));
    expect(skewedCode).not.toBe(0);
    expect(skewed.stderr).toMatch(/clock is (19 min 5[0-9]|20 min [0-9]+) s behind DynamoDB's/);
    expect(rightCode).toBe(0);
    for (const account of accounts) expect(await requestsOf(account, table)).toBe(2);
  }, 120_000);
});

describe('a raised history cap', () => {
  it('does not take an item of an earlier version below the new cap for one that never dropped a key: the increment is left unresolved, not applied twice', async () => {
    const table = uniqueId('cap');
    await ensureUsageTable(dynamodb, table);
    const env48 = { TALLY_TABLE: table, TALLY_HISTORY_CAP: '48' };
    // This version ran with cap 48 on the table (the consumer's cold start recorded it).
    const before = testIngestDeps(env48);
    await prepareToWrite(before, readConfig({ ...localEnvironment(info), ...env48 }), new Date());
    const [old, fresh] = accountsFor('capped', 2) as [string, string];
    const object = await objectFor([old, fresh]);
    const startedAt = new Date(Date.now() - 3_600_000);
    // An earlier version's attempt applied `old`'s increment and died unseen; its history, at 48 keys with no
    // drop count, then dropped the key by age, leaving no tombstone.
    const config48 = readConfig({ ...localEnvironment(info), ...env48 });
    const { shard } = incrementKey(object, old, DAY, config48.keyScheme);
    const key = usageKey({ accountId: old, day: DAY, shard });
    await dynamodb.send(
      new PutItemCommand({
        TableName: table,
        Item: {
          PK: { S: key.PK },
          SK: { S: key.SK },
          requests: { N: '49' },
          bytes: { N: '4900' },
          h: { L: Array.from({ length: 48 }, () => ({ B: randomBytes(12) })) },
          t: { L: Array.from({ length: 48 }, () => ({ N: String(historyMinute(DAY, new Date())) })) },
          updatedAt: { S: new Date().toISOString() },
          d: { S: DAY },
        },
      }),
    );
    const record = attemptKey(object, `${startedAt.toISOString()}-old`, 0);
    await dynamodb.send(
      new PutItemCommand({
        TableName: table,
        Item: { PK: { S: record.PK }, SK: { S: record.SK }, startedAt: { S: startedAt.toISOString() }, state: { S: 'started' }, since: { S: startedAt.toISOString() }, ttl: { N: String(Math.floor(Date.now() / 1000) + 86_400) } },
      }),
    );
    // The operator raises the cap to 64; the retry comes from the DLQ.
    const env64 = { TALLY_TABLE: table, TALLY_HISTORY_CAP: '64' };
    const after = testIngestDeps(env64);
    await prepareToWrite(after, readConfig({ ...localEnvironment(info), ...env64 }), new Date());
    const retry = await ingestBatch(batch(s3NotificationMessage(object)), after);

    expect(retry.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 2, applied: 1, duplicates: 0, unresolved: 1 });
    // `old`'s shard is the earlier version's item, written before hours: its day holds 49 requests and no hours.
    expect((await readCounters(dynamodb, table, old, DAY))[DAY]?.requests).toBe(49);
    expect(await requestsOf(fresh, table)).toBe(1);
  }, 120_000);
});
