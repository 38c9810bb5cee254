import { randomBytes } from 'node:crypto';
import { GetItemCommand, PutItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { readConfig } from '../../src/adapters/config';
import { ensureUsageTable } from '../../src/adapters/dynamodb/usage-table';
import { historyMinute } from '../../src/adapters/dynamodb/history-update';
import { incrementKey } from '../../src/domain/counters/idempotency-key';
import { attemptKey, pinAttribute, usageKey } from '../../src/domain/counters/keys';
import type { LogObjectRef } from '../../src/domain/counters/log-object';
import { localEnvironment } from '../../src/local/stack';
import { putRequestsObject, readCounters, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';

/**
 * Shards written by versions of Tally that pinned objects (the last receive, inline
 * runs) and dropped keys by age without tombstones. Built here item by item through
 * DynamoDB's own API, as such a version left them: an attempt that pinned its increment
 * and died unseen, then a history that rolled the key out. Only the pin still says the
 * increment was applied; Tally no longer writes pins, but reads this one. A table of its
 * own: the increment left unresolved here is no other test's to settle.
 */
const info = testStackInfo();
const { dynamodb } = testClients(info);
const DAY = '2026-11-21';
const table = uniqueId('pins');
const env = { TALLY_TABLE: table };
const config = readConfig({ ...localEnvironment(info), ...env });

beforeAll(() => ensureUsageTable(dynamodb, table));

const requestsOf = async (account: string) => (await readCounters(dynamodb, table, account, DAY, DAY))[DAY]?.requests ?? 0;

/**
 * `ref`'s shard of `account` as a pinning version left it once its history (no `x`:
 * from before every drop was tombstoned) had rolled `ref`'s key out by age: full of
 * other keys added after the attempt, the counters including `ref`'s one request, and
 * the pin `pin`.
 */
async function rolledPinnedShard(ref: LogObjectRef, account: string, pin: string, now: Date): Promise<Record<string, AttributeValue>> {
  const { shard } = incrementKey(ref, account, DAY, config.keyScheme);
  const key = usageKey({ accountId: account, day: DAY, shard });
  const minute = { N: String(historyMinute(DAY, now)) };
  const item: Record<string, AttributeValue> = {
    PK: { S: key.PK },
    SK: { S: key.SK },
    requests: { N: String(config.historyCap + 1) },
    bytes: { N: String(100 * (config.historyCap + 1)) },
    h: { L: Array.from({ length: config.historyCap }, () => ({ B: randomBytes(config.keyScheme.keyBytes) })) },
    t: { L: Array.from({ length: config.historyCap }, () => minute) },
    updatedAt: { S: now.toISOString() },
    d: { S: DAY },
    [pin]: minute,
  };
  await dynamodb.send(new PutItemCommand({ TableName: table, Item: item }));
  return item;
}

/** The `started` record a pinning version wrote before its last receive applied anything. */
async function pinnedAttemptRecord(ref: LogObjectRef, startedAt: Date, since: Date): Promise<void> {
  const key = attemptKey(ref, `${startedAt.toISOString()}-old`, 0);
  await dynamodb.send(
    new PutItemCommand({
      TableName: table,
      Item: {
        PK: { S: key.PK },
        SK: { S: key.SK },
        startedAt: { S: startedAt.toISOString() },
        state: { S: 'started' },
        pinned: { BOOL: true },
        since: { S: since.toISOString() },
        ttl: { N: String(Math.floor(Date.now() / 1000) + 86_400) },
      },
    }),
  );
}

describe('exactly once over pins written by earlier versions', () => {
  it('counts an increment as applied when only its pin on a shard says so, and leaves it unresolved when the pin is another object\'s', async () => {
    const createdAt = new Date(Date.now() - 3_600_000);
    const now = new Date();
    const [pinnedOld, pinnedNew, otherOld, otherNew] = ['pin-old', 'pin-new', 'oth-old', 'oth-new'].map(uniqueId) as [string, string, string, string];
    const pinned = await putRequestsObject([pinnedOld, pinnedNew], DAY);
    const other = await putRequestsObject([otherOld, otherNew], DAY);
    for (const ref of [pinned, other]) await pinnedAttemptRecord(ref, new Date(createdAt.getTime() + 60_000), createdAt);
    const shard = await rolledPinnedShard(pinned, pinnedOld, pinAttribute(pinned), now);
    // The same state, but the pin there is another object's: nothing says `other` applied its increment.
    await rolledPinnedShard(other, otherOld, pinAttribute({ ...other, etag: 'another' }), now);

    // The replay from the DLQ: a new message, a first receive, days after.
    const replay = await ingestBatch({ Records: [s3NotificationMessage(pinned, { createdAt }), s3NotificationMessage(other, { createdAt })] }, testIngestDeps(env));

    expect(replay.batchItemFailures).toEqual([]);
    expect(replay.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: 2, applied: 1, duplicates: 1, unresolved: 0 });
    expect(await requestsOf(pinnedOld)).toBe(config.historyCap + 1);
    expect(await requestsOf(pinnedNew)).toBe(1);
    // Read, never written: the pinned shard is as the earlier version left it (no adoption, no new key).
    const after = await dynamodb.send(new GetItemCommand({ TableName: table, Key: { PK: shard.PK!, SK: shard.SK! }, ConsistentRead: true }));
    expect(Object.keys(after.Item ?? {}).sort()).toEqual(Object.keys(shard).sort());
    expect(after.Item?.updatedAt).toEqual(shard.updatedAt);

    expect(replay.results[1]?.objects[0]).toMatchObject({ status: 'counted', increments: 2, applied: 1, duplicates: 0, unresolved: 1 });
    expect(await requestsOf(otherOld)).toBe(config.historyCap + 1);
    expect(await requestsOf(otherNew)).toBe(1);
  }, 60_000);
});
