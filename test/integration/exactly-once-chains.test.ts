import { DeleteItemCommand, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { createClients } from '../../src/adapters/clients';
import { ensureUsageTable } from '../../src/adapters/dynamodb/usage-table';
import { readConfig } from '../../src/adapters/config';
import { usageStoreFor } from '../../src/adapters/wiring/ingest-deps';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { incrementKey } from '../../src/domain/counters/idempotency-key';
import { droppedKeysPartition, ledgerKey, usageKey } from '../../src/domain/counters/keys';
import type { LogObjectRef } from '../../src/domain/counters/log-object';
import { s3EventBody } from '../../src/domain/counters/notifications';
import { LOCAL_CREDENTIALS } from '../../src/local/local-credentials';
import { localEnvironment } from '../../src/local/stack';
import { tallyCommand } from '../support/cli';
import { crashAfterUpdates, dieAfterApplying } from '../support/faults';
import { captureIo, operatorEnv } from '../support/operator';
import { accountsFor, batch, busyTraffic, DAY, DAYS, depsOn, MINUTE, objectFor, requestsOf, StoreClock } from '../support/clocked';
import { s3NotificationMessage, sqsRecord, testClients, testStackInfo, uniqueId } from '../support/stack';
import { tombstoneBatches, tombstoned } from '../support/tombstones';

/**
 * Redelivery chains on the queue's own schedule, driven by the store's clock: receives
 * 30 minutes apart (the deployed visibility timeout), busy account-days rolling the
 * histories between them (200 other objects per 30 minutes), DLQ replays days later.
 * No test here relies on a retry coming soon.
 */
const info = testStackInfo();
const { dynamodb } = testClients(info);

describe('exactly once on the queue schedule: unseen deaths chained 30 minutes apart, by the clock', () => {
  it.each([0, 1])('counts exactly when every receive before the last dies unseen after %i more update(s), on a busy account-day', async (k) => {
    const accounts = accountsFor('chain', 4);
    const object = await objectFor(accounts);
    const clock = new StoreClock();
    const createdAt = clock.read();
    const firstReceivedAt = clock.advance(10_000);

    // Receive 1 applies one increment and dies unseen; receive 2, 30 minutes later, dies after k more.
    const first = await ingestBatch(batch(s3NotificationMessage(object, { createdAt, firstReceivedAt, receiveCount: 1 })), depsOn(clock, (c) => dieAfterApplying(c, 1)));
    await busyTraffic(accounts, 200, 30, clock);
    const second = await ingestBatch(batch(s3NotificationMessage(object, { createdAt, firstReceivedAt, receiveCount: 2 })), depsOn(clock, (c) => dieAfterApplying(c, k)));
    await busyTraffic(accounts, 200, 30, clock);
    // Receive 3, 60 minutes after the first: the first receive's keys left the histories long ago.
    const third = await ingestBatch(batch(s3NotificationMessage(object, { createdAt, firstReceivedAt, receiveCount: 3 })), depsOn(clock));

    expect(first.batchItemFailures).toHaveLength(1);
    expect(second.batchItemFailures).toHaveLength(1);
    expect(third.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 4, applied: 3 - k, duplicates: 1 + k, unresolved: 0 });
    for (const account of accounts) expect(await requestsOf(account)).toBe(401);
  }, 240_000);

  it('counts exactly after five unseen deaths, one update more each, and a DLQ replay two days later', async () => {
    const accounts = accountsFor('five', 6);
    const object = await objectFor(accounts);
    const clock = new StoreClock();
    const createdAt = clock.read();
    const firstReceivedAt = clock.advance(10_000);

    const receives = [];
    for (let receive = 1; receive <= 5; receive++) {
      receives.push(await ingestBatch(batch(s3NotificationMessage(object, { createdAt, firstReceivedAt, receiveCount: receive })), depsOn(clock, (c) => dieAfterApplying(c, 1))));
      await busyTraffic(accounts, 200, 30, clock);
    }
    clock.advance(2 * DAYS);
    // The replay is a new message (receive 1) with the original body.
    const replay = await ingestBatch(batch(s3NotificationMessage(object, { createdAt, firstReceivedAt: clock.read(), receiveCount: 1 })), depsOn(clock));

    expect(receives.map((r) => r.batchItemFailures.length)).toEqual([1, 1, 1, 1, 1]);
    // Each receive applied one more before it died (every successful update is an increment applied).
    expect(replay.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 6, applied: 1, duplicates: 5, unresolved: 0 });
    for (const account of accounts) expect(await requestsOf(account)).toBe(1001);
  }, 300_000);

  it('counts exactly a first receive three hours after the object was written, behind a backlog', async () => {
    const accounts = accountsFor('backlog', 2);
    const object = await objectFor(accounts, 3);
    const clock = new StoreClock();
    const createdAt = clock.read();

    await busyTraffic(accounts, 1200, 180, clock);
    const late = await ingestBatch(batch(s3NotificationMessage(object, { createdAt, firstReceivedAt: clock.read(), receiveCount: 1 })), depsOn(clock));

    expect(late.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 2, applied: 2, duplicates: 0 });
    for (const account of accounts) expect(await requestsOf(account)).toBe(1203);
  }, 300_000);

  it('counts exactly a duplicate S3 notification first received three hours after its twin died unseen', async () => {
    const accounts = accountsFor('twin', 3);
    const object = await objectFor(accounts);
    const clock = new StoreClock();
    const createdAt = clock.read();

    // S3 announced the object twice: the first copy's receive applied one increment and died unseen.
    await ingestBatch(batch(s3NotificationMessage(object, { createdAt, firstReceivedAt: clock.advance(5_000), receiveCount: 1 })), depsOn(clock, (c) => dieAfterApplying(c, 1)));
    await busyTraffic(accounts, 1200, 180, clock);
    const twin = await ingestBatch(batch(s3NotificationMessage(object, { createdAt, firstReceivedAt: clock.read(), receiveCount: 1 })), depsOn(clock));

    expect(twin.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 3, applied: 2, duplicates: 1 });
    for (const account of accounts) expect(await requestsOf(account)).toBe(1201);
  }, 300_000);

  it('bounds a replay without an S3 event time by the earliest receive its attempt records name', async () => {
    const accounts = accountsFor('bound', 3);
    const object = await objectFor(accounts);
    const clock = new StoreClock();
    const firstReceivedAt = clock.advance(10_000);
    // A notification that carries no event time: only the attempt records bound the unseen attempt.
    const body = JSON.parse(s3EventBody([object])) as { Records: Record<string, unknown>[] };
    delete body.Records[0]!.eventTime;
    const message = (receiveCount: number, at: Date) => sqsRecord(JSON.stringify(body), { receiveCount, firstReceivedAt: at });

    // Receive 2 dies unseen after one increment; receive 3 fails where it sees it (a record, with the bound).
    await ingestBatch(batch(message(2, firstReceivedAt)), depsOn(clock, (c) => dieAfterApplying(c, 1)));
    // Enough to roll every shard well past its cap in those 30 minutes.
    await busyTraffic(accounts, 300, 30, clock);
    const seen = await ingestBatch(batch(message(3, firstReceivedAt)), depsOn(clock, (c) => crashAfterUpdates(c, 0)));
    clock.advance(2 * DAYS);
    // Replayed from the DLQ: a new message, first received now. The histories' oldest keys are
    // younger than the first receive but older than the seen attempt: only the record's bound
    // (the first receive) keeps the proof from trusting them.
    const replay = await ingestBatch(batch(message(1, clock.read())), depsOn(clock));

    expect(seen.batchItemFailures).toHaveLength(1);
    expect(replay.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 3, applied: 2, duplicates: 1 });
    for (const account of accounts) expect(await requestsOf(account)).toBe(301);
  }, 240_000);
});

describe('proving absence against concurrent writers', () => {
  it('refuses the write when the key was applied and rolled out between its tombstone read and its write', async () => {
    const account = uniqueId('guard');
    const config = readConfig(localEnvironment(info));
    const clock = new StoreClock();
    const incrementOf = (i: number) => ({ account, day: DAY, shard: 0, key: new TextEncoder().encode(`${account}-${i}`.slice(-12).padStart(12, '.')), metrics: { requests: 1, bytes: 0 }, hours: { [i % 24]: { requests: 1 } } });
    const other = usageStoreFor(config, dynamodb, { clock: clock.read });
    for (let i = 0; i < 60; i++) await other.applyIncrement(incrementOf(i), {});
    const contested = incrementOf(1000);
    // Right after the retry read the contested key's tombstone (absent), a concurrent attempt
    // applies it and 60 more increments roll it out of the history (its tombstone written).
    const clients = createClients(config, LOCAL_CREDENTIALS);
    let interleaved = false;
    clients.dynamodb.middlewareStack.add(
      (next, context) => async (args) => {
        const result = await next(args);
        const pk = (args.input as { ExpressionAttributeValues?: { ':pk'?: { S?: string } } }).ExpressionAttributeValues?.[':pk']?.S;
        if (context.commandName === 'QueryCommand' && pk === droppedKeysPartition({ accountId: account, day: DAY, shard: 0 }) && !interleaved) {
          interleaved = true;
          await other.applyIncrement(contested);
          for (let i = 100; i < 160; i++) await other.applyIncrement(incrementOf(i));
        }
        return result;
      },
      { step: 'initialize', name: 'interleave' },
    );
    const retry = usageStoreFor(config, clients.dynamodb, { clock: clock.read });

    const outcome = await retry.applyIncrement(contested, { since: new Date(clock.now - 10 * MINUTE) });

    expect(interleaved).toBe(true);
    expect(outcome).toBe('duplicate');
    expect(await requestsOf(account)).toBe(121);
    clients.dynamodb.destroy();
  }, 120_000);
});

describe('never guessing: shards from before tombstoned drops', () => {
  it('leaves what nothing can prove unapplied and recorded, and tally reconcile --resolve settles it exactly from the raw logs', async () => {
    const account = uniqueId('legacy');
    const prefix = uniqueId('legacy-logs');
    // A table of its own: its day has one shard, which the shared table records otherwise.
    const table = uniqueId('legacy');
    await ensureUsageTable(dynamodb, table);
    const env = { TALLY_SHARDS: '1', TALLY_TABLE: table };
    const clock = new StoreClock();
    const createdAt = clock.read();
    // Sixty objects fill the account-day's one shard past its cap (DEFAULTS.historyCap, 15).
    const counted: LogObjectRef[] = [];
    for (let i = 0; i < 60; i++) counted.push(await objectFor([account], 1, prefix));
    for (const ref of counted) await ingestBatch(batch(s3NotificationMessage(ref, { createdAt, receiveCount: 1 })), depsOn(clock, undefined, env));
    // X1 (2 requests) died unseen before applying anything; X2 (1 request) applied its increment, then died unseen.
    const [x1, x2] = [await objectFor([account], 2, prefix), await objectFor([account], 1, prefix)];
    await ingestBatch(batch(s3NotificationMessage(x1, { createdAt, receiveCount: 1 })), depsOn(clock, (c) => dieAfterApplying(c, 0), env));
    await ingestBatch(batch(s3NotificationMessage(x2, { createdAt, receiveCount: 1 })), depsOn(clock, (c) => dieAfterApplying(c, 1), env));
    // An earlier version then rolled X2's key out by age, leaving no tombstone and no drop count.
    await forgetUntombstoned(account, x2, env);

    const retries = [];
    for (const ref of [x1, x2]) retries.push(await ingestBatch(batch(s3NotificationMessage(ref, { createdAt, receiveCount: 2 })), depsOn(clock, undefined, env)));
    const before = await requestsOf(account, table);
    const io = captureIo();
    const code = await tallyCommand('reconcile')(['--resolve', '--json'], io, operatorEnv(info, { prefix: `${prefix}/` }, env));
    const settlements = (JSON.parse(io.stdout) as { settlements: { account: string; outcome: string; metrics: { requests: number } }[] }).settlements;
    const again = captureIo();
    const secondCode = await tallyCommand('reconcile')(['--resolve'], again, operatorEnv(info, { prefix: `${prefix}/` }, env));
    const check = captureIo();
    const reconcileCode = await tallyCommand('reconcile')(['--from', DAY, '--to', DAY, '--account', account], check, operatorEnv(info, { prefix: `${prefix}/` }, env));

    expect(retries.map((r) => r.results[0]?.objects[0]?.unresolved)).toEqual([1, 1]);
    expect(before).toBe(61);
    expect(code).toBe(0);
    expect(settlements.map((s) => [s.metrics.requests, s.outcome]).sort()).toEqual([
      [1, 'already-counted'],
      [2, 'applied'],
    ]);
    expect(await requestsOf(account, table)).toBe(63);
    expect(secondCode).toBe(0);
    expect(again.stdout).toMatch(/no unresolved increments/);
    expect(reconcileCode).toBe(0);
    const ledger = await dynamodb.send(new GetItemCommand({ TableName: table, Key: { PK: { S: ledgerKey(x1).PK }, SK: { S: '#DONE' } }, ConsistentRead: true }));
    expect(ledger.Item?.unresolved).toBeUndefined();
    expect(ledger.Item?.settled?.L?.[0]?.M?.outcome?.S).toBe('applied');
  }, 240_000);
});

/**
 * What an earlier version of Tally could leave behind: `ref`'s key rolled out of its
 * shard's history by age, with no tombstone, on an item that counts no drops (a newer
 * key took its place: such histories stayed at their cap once they had dropped one).
 */
async function forgetUntombstoned(account: string, ref: LogObjectRef, env: Record<string, string>): Promise<void> {
  const config = readConfig({ ...localEnvironment(info), ...env });
  const table = config.tableName;
  const { key, shard } = incrementKey(ref, account, DAY, config.keyScheme);
  const shardKey = usageKey({ accountId: account, day: DAY, shard });
  const item = await dynamodb.send(new GetItemCommand({ TableName: table, Key: { PK: { S: shardKey.PK }, SK: { S: shardKey.SK } }, ConsistentRead: true }));
  const at = (item.Item?.h?.L ?? []).findIndex((entry) => Buffer.from(entry.B ?? []).equals(Buffer.from(key)));
  expect(at).toBeGreaterThanOrEqual(0);
  await dynamodb.send(
    new UpdateItemCommand({
      TableName: table,
      Key: { PK: { S: shardKey.PK }, SK: { S: shardKey.SK } },
      UpdateExpression: `REMOVE #h[${at}], #t[${at}], #x`,
      ExpressionAttributeNames: { '#h': 'h', '#t': 't', '#x': 'x' },
    }),
  );
  await dynamodb.send(
    new UpdateItemCommand({
      TableName: table,
      Key: { PK: { S: shardKey.PK }, SK: { S: shardKey.SK } },
      UpdateExpression: 'SET #h = list_append(#h, :k), #t = list_append(#t, :m)',
      ExpressionAttributeNames: { '#h': 'h', '#t': 't' },
      ExpressionAttributeValues: { ':k': { L: [{ B: new TextEncoder().encode('a-newer-key!') }] }, ':m': { L: [{ N: '481' }] } },
    }),
  );
  // A tombstone written for it at the front of a full history, before it was dropped, goes too.
  const partition = droppedKeysPartition({ accountId: account, day: DAY, shard });
  for (const batch of await tombstoneBatches(dynamodb, table, { accountId: account, day: DAY, shard })) {
    if (tombstoned([batch], key)) await dynamodb.send(new DeleteItemCommand({ TableName: table, Key: { PK: { S: partition }, SK: { S: batch.SK } } }));
  }
}
