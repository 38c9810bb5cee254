import { QueryCommand } from '@aws-sdk/client-dynamodb';
import type { SQSEvent } from 'aws-lambda';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { readConfig } from '../../src/adapters/config';
import { usageStoreFor } from '../../src/adapters/wiring/ingest-deps';
import { incrementKey } from '../../src/domain/counters/idempotency-key';
import { PIN_PREFIX } from '../../src/domain/counters/keys';
import { localEnvironment } from '../../src/local/stack';
import { crashAfterUpdates, dieAfterApplying, dieAfterUpdates, throttleUpdates } from '../support/faults';
import { tallyCommand } from '../support/cli';
import { captureIo, notificationBody, operatorEnv, sendBodies } from '../support/operator';
import { createTestQueues, exactRequests, putLogObject, putRequestsObject, readCounters, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';

const info = testStackInfo();
const { dynamodb } = testClients(info);
const DAY = '2026-11-21';

/** A log object with `lines` requests, all for `account` on DAY. */
async function objectFor(account: string, lines: number) {
  const text = [
    '#Version: 1.0',
    '#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status',
    ...Array.from({ length: lines }, (_, i) => `${DAY}\t00:00:${String(i % 60).padStart(2, '0')}\tIAD89-C1\t100\t192.0.2.1\tGET\t${account}.example.com\t/p${i}\t200`),
  ].join('\n');
  return putLogObject(`cloudfront/${uniqueId('E2VOL')}.${DAY}-00.x.gz`, `${text}\n`);
}

/**
 * `objects` other log objects each add one increment (1 request) to every account
 * in `accounts` on DAY, through the consumer's own store and key scheme: the
 * traffic that rolls a busy account-day's histories.
 */
async function otherTraffic(accounts: readonly string[], objects: number, env: Record<string, string> = {}) {
  const config = readConfig({ ...localEnvironment(info), ...env });
  const store = usageStoreFor(config, dynamodb);
  const run = uniqueId('other');
  const work = Array.from({ length: objects }, (_, i) => i).flatMap((i) => accounts.map((account) => ({ i, account })));
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < work.length) {
        const { i, account } = work[next++]!;
        const ref = { bucket: info.bucket, key: `${run}/${account}/${i}`, etag: 'e' };
        const { key, shard } = incrementKey(ref, account, DAY, config.keyScheme);
        await store.applyIncrement({ account, day: DAY, shard, key, metrics: { requests: 1, bytes: 0 }, hours: { [i % 24]: { requests: 1 } } });
      }
    }),
  );
}

/** The account's requests on DAY, checked against its hours too (see `exactRequests`). */
const requestsOf = async (account: string) => exactRequests(dynamodb, info.table, account, DAY);
const batch = (...records: SQSEvent['Records']): SQSEvent => ({ Records: records });

describe('exactly once at volume: a busy account-day between an attempt and its retry', () => {
  it('counts an object whose consumer died unseen after its increment once, after 400 other objects rolled its key out (its tombstone answers)', async () => {
    const [a, b] = [uniqueId('hot-a'), uniqueId('hot-b')];
    const ref = await objectFor(a, 1);
    const dead = testIngestDeps({}, { clients: (c) => dieAfterUpdates(c.dynamodb, 1) });

    const crashed = await ingestBatch(batch(s3NotificationMessage(ref)), dead);
    await otherTraffic([a, b], 400);
    const redelivered = await ingestBatch(batch(s3NotificationMessage(ref, { receiveCount: 2 })), testIngestDeps());

    expect(crashed.batchItemFailures).toHaveLength(1);
    expect(redelivered.results[0]?.objects[0]).toMatchObject({ status: 'counted', applied: 0, duplicates: 1 });
    expect(await requestsOf(a)).toBe(401);
    expect(await requestsOf(b)).toBe(400);
  }, 120_000);

  it('counts it once when the failure was seen: the attempt record knows, whatever rolled since', async () => {
    const accounts = [uniqueId('hot-a'), uniqueId('hot-b'), uniqueId('hot-c')];
    const env = {};
    const crashing = testIngestDeps(env, { clients: (c) => crashAfterUpdates(c.dynamodb, 1) });
    // One object for three accounts: its first increment lands, then the consumer fails.
    const combined = await objectForMany(accounts);

    const first = await ingestBatch(batch(s3NotificationMessage(combined)), crashing);
    await otherTraffic(accounts, 1000, env);
    const retry = await ingestBatch(batch(s3NotificationMessage(combined, { receiveCount: 2 })), testIngestDeps(env));

    expect(first.batchItemFailures).toHaveLength(1);
    expect(retry.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 3, applied: 2, resumed: 1 });
    for (const account of accounts) expect(await requestsOf(account)).toBe(1000 + 1);
  }, 180_000);

  it('counts exactly after the retry budget ran out mid-object and 1,000 other increments rolled the histories', async () => {
    const accounts = [uniqueId('thr-a'), uniqueId('thr-b'), uniqueId('thr-c'), uniqueId('thr-d')];
    const combined = await objectForMany(accounts);
    const env = { TALLY_MAX_ATTEMPTS: '2', TALLY_INCREMENT_CONCURRENCY: '1' };
    const throttled = testIngestDeps(env, { clients: (c) => throttleAfter(c.dynamodb, 2) });

    const first = await ingestBatch(batch(s3NotificationMessage(combined)), throttled);
    await otherTraffic(accounts, 1000, env);
    const retry = await ingestBatch(batch(s3NotificationMessage(combined, { receiveCount: 2 })), testIngestDeps(env));

    expect(first.batchItemFailures).toHaveLength(1);
    expect(retry.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 4, applied: 2, resumed: 2 });
    for (const account of accounts) expect(await requestsOf(account)).toBe(1001);
  }, 180_000);

  it('counts an unseen death once after its shards dropped its key: the tombstone answers the redelivery', async () => {
    const accounts = [uniqueId('frc-a'), uniqueId('frc-b'), uniqueId('frc-c')];
    const combined = await objectForMany(accounts);
    const env = { TALLY_INCREMENT_CONCURRENCY: '1' };
    const dead = testIngestDeps(env, { clients: (c) => dieAfterUpdates(c.dynamodb, 1) });

    const crashed = await ingestBatch(batch(s3NotificationMessage(combined)), dead);
    await otherTraffic(accounts, 400, env);
    const redelivered = await ingestBatch(batch(s3NotificationMessage(combined, { receiveCount: 2 })), testIngestDeps(env));

    expect(crashed.batchItemFailures).toHaveLength(1);
    expect(redelivered.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 3, applied: 2, duplicates: 1 });
    for (const account of accounts) expect(await requestsOf(account)).toBe(401);
  }, 180_000);

  it('never double counts retries of unseen deaths while eight writers roll keys out of four shards', async () => {
    const account = uniqueId('race');
    const config = readConfig(localEnvironment(info));
    const store = usageStoreFor(config, dynamodb);
    const incrementOf = (i: number) => {
      const { key, shard } = incrementKey({ bucket: info.bucket, key: `${account}/${i}`, etag: 'e' }, account, DAY, config.keyScheme);
      return { account, day: DAY, shard, key, metrics: { requests: 1, bytes: 0 }, hours: { [i % 24]: { requests: 1 } } };
    };
    const objects = 1500;
    // Every tenth increment is applied by an attempt that then dies unseen; its retry comes later, in proven mode.
    const unseen: { i: number; at: Date }[] = [];
    const outcomes: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async (_, writer) => {
        while (next < objects) {
          const i = next++;
          const at = new Date();
          await store.applyIncrement(incrementOf(i));
          if (i % 10 === 3) unseen.push({ i, at });
          if (unseen.length > 20 || (writer % 2 === 0 && unseen.length > 5)) {
            const retry = unseen.shift()!;
            outcomes.push(await store.applyIncrement(incrementOf(retry.i), { since: new Date(retry.at.getTime() - 120_000) }));
          }
        }
      }),
    );
    for (const retry of unseen.splice(0)) outcomes.push(await store.applyIncrement(incrementOf(retry.i), { since: new Date(retry.at.getTime() - 120_000) }));

    expect(outcomes).toHaveLength(objects / 10);
    expect(outcomes.filter((o) => o !== 'duplicate')).toEqual([]);
    expect(await requestsOf(account)).toBe(objects);
  }, 180_000);

  it('counts exactly a message whose every receive died unseen, replayed from the DLQ after its keys were rolled out', async () => {
    const accounts = [uniqueId('dd-a'), uniqueId('dd-b'), uniqueId('dd-c')];
    const combined = await objectForMany(accounts);
    const env = { TALLY_MAX_RECEIVE_COUNT: '3', TALLY_INCREMENT_CONCURRENCY: '1' };
    const firstReceivedAt = new Date();

    // Receive 1 applies two increments and dies unseen; their keys are then forced out by other traffic.
    await ingestBatch(batch(s3NotificationMessage(combined, { firstReceivedAt })), testIngestDeps(env, { clients: (c) => dieAfterUpdates(c.dynamodb, 2) }));
    await otherTraffic(accounts, 150, env);
    // Receive 3, the last (an hour later by its clock), records that it started and dies before it writes anything.
    const lastDeps = { ...testIngestDeps(env, { clients: (c) => dieAtFirstUpdate(c.dynamodb) }), clock: () => new Date(Date.now() + 3_600_000) };
    const last = await ingestBatch(batch(s3NotificationMessage(combined, { receiveCount: 3, firstReceivedAt })), lastDeps);
    await otherTraffic(accounts, 150, env);
    // Replayed from the DLQ: a new message, a first receive.
    const replay = await ingestBatch(batch(s3NotificationMessage(combined)), testIngestDeps(env));

    expect(last.batchItemFailures).toHaveLength(1);
    expect(replay.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 3, applied: 1, duplicates: 2, unresolved: 0 });
    for (const account of accounts) expect(await requestsOf(account)).toBe(301);
  }, 180_000);

  it('counts exactly when the last receive died unseen and the histories rolled far past it: its tombstones answer, no pin is written', async () => {
    const accounts = [uniqueId('lst-a'), uniqueId('lst-b'), uniqueId('lst-c')];
    const combined = await objectForMany(accounts);
    const env = { TALLY_MAX_RECEIVE_COUNT: '3', TALLY_INCREMENT_CONCURRENCY: '1' };
    const dead = testIngestDeps(env, { clients: (c) => dieAfterUpdates(c.dynamodb, 1) });

    await ingestBatch(batch(s3NotificationMessage(combined, { receiveCount: 3 })), dead);
    const pinsMidway = await pinsOn(accounts);
    await otherTraffic(accounts, 400, env);
    const replay = await ingestBatch(batch(s3NotificationMessage(combined)), testIngestDeps(env));

    expect(pinsMidway).toBe(0);
    expect(replay.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 3, applied: 2, duplicates: 1, unresolved: 0 });
    for (const account of accounts) expect(await requestsOf(account)).toBe(401);
    expect(await pinsOn(accounts)).toBe(0);
  }, 180_000);

  it('counts exactly a partly applied object dead-lettered and replayed with tally replay after 5,000 other increments', async () => {
    const accounts = [uniqueId('dlq-a'), uniqueId('dlq-b'), uniqueId('dlq-c'), uniqueId('dlq-d')];
    const combined = await objectForMany(accounts);
    const queues = await createTestQueues(info);
    const env = { TALLY_MAX_RECEIVE_COUNT: '3', TALLY_INCREMENT_CONCURRENCY: '1' };

    // Receive 1 fails where it sees it after one increment; receive 3, the last, dies unseen after applying one more
    // (on shards full by then, its first write may fail its condition before it applies anything).
    const first = await ingestBatch(batch(s3NotificationMessage(combined)), testIngestDeps(env, { clients: (c) => crashAfterUpdates(c.dynamodb, 1) }));
    await otherTraffic(accounts, 250, env);
    const last = await ingestBatch(batch(s3NotificationMessage(combined, { receiveCount: 3 })), testIngestDeps(env, { clients: (c) => dieAfterApplying(c.dynamodb, 1) }));
    await otherTraffic(accounts, 1000, env);
    await sendBodies(queues.dlqUrl, [notificationBody(combined)]);
    const io = captureIo();
    const code = await tallyCommand('replay')(['--inline'], io, operatorEnv(info, queues, env));

    expect(first.batchItemFailures).toHaveLength(1);
    expect(last.batchItemFailures).toHaveLength(1);
    expect(code).toBe(0);
    expect(io.stdout).toMatch(/processed 1, skipped 0, failed 0/);
    for (const account of accounts) expect(await requestsOf(account)).toBe(1250 + 1);
    expect(await pinsOn(accounts)).toBe(0);
  }, 300_000);
});

/** The consumer reads and records what it likes, then dies unseen at its first UpdateItem. */
function dieAtFirstUpdate(client: Parameters<typeof dieAfterUpdates>[0]): void {
  let dead = false;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (dead || context.commandName === 'UpdateItemCommand') {
        dead = true;
        throw Object.assign(new Error('consumer died'), { name: 'ConsumerDied' });
      }
      return next(args);
    },
    { step: 'initialize', name: 'dieAtFirstUpdate' },
  );
}

/** Pin attributes on the usage shards of `accounts` on DAY. */
async function pinsOn(accounts: readonly string[]): Promise<number> {
  let pins = 0;
  for (const account of accounts) {
    const page = await dynamodb.send(
      new QueryCommand({ TableName: info.table, KeyConditionExpression: 'PK = :pk', ExpressionAttributeValues: { ':pk': { S: `ACCT#${account}` } }, ConsistentRead: true }),
    );
    for (const item of page.Items ?? []) pins += Object.keys(item).filter((name) => name.startsWith(PIN_PREFIX)).length;
  }
  return pins;
}

/** One object with one request for each of `accounts`. */
const objectForMany = (accounts: readonly string[]) => putRequestsObject(accounts, DAY);

/** Every UpdateItem after the first `k` is throttled (the SDK retries, then gives up). */
function throttleAfter(client: Parameters<typeof throttleUpdates>[0], k: number) {
  let sent = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'UpdateItemCommand' && sent++ >= k) {
        throw Object.assign(new Error('throughput exceeded'), { name: 'ProvisionedThroughputExceededException', $fault: 'client', $metadata: { httpStatusCode: 400 } });
      }
      return next(args);
    },
    { step: 'finalizeRequest', name: 'throttleAfter' },
  );
}
