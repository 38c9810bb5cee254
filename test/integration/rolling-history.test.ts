import { DeleteItemCommand, GetItemCommand, PutItemCommand, UpdateItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DEFAULTS } from '../../src/adapters/config';
import { DynamoUsageStore } from '../../src/adapters/dynamodb/dynamodb-usage-store';
import { droppedKeyItem, droppedKeysPartition, usageKey, type ShardRef } from '../../src/domain/counters/keys';
import { testClients, testStackInfo, uniqueId } from '../support/stack';
import { tombstoneBatches, tombstoned } from '../support/tombstones';

const info = testStackInfo();
const { dynamodb } = testClients(info);
const key = (n: number) => new Uint8Array(12).fill(0).map((_, i) => (i === 0 ? n : i === 1 ? n >> 8 : 0xab));

function store(historyCap: number, capacity?: number[], tombstones?: number[]) {
  return new DynamoUsageStore({
    client: dynamodb,
    tableName: info.table,
    historyCap,
    ledgerTtlDays: 400,
    ...(capacity ? { onCapacity: (op: string, units: number) => (op === 'increment' ? capacity.push(units) : op === 'tombstone' && tombstones?.push(units)) } : {}),
  });
}

async function readItem(account: string, day: string, shard: number) {
  const k = usageKey({ accountId: account, day, shard });
  const { Item } = await dynamodb.send(new GetItemCommand({ TableName: info.table, Key: { PK: { S: k.PK }, SK: { S: k.SK } }, ConsistentRead: true }));
  return Item!;
}

const history = (item: Record<string, { L?: { B?: Uint8Array }[] }>) => (item.h?.L ?? []).map((entry) => entry.B![0]);

/**
 * A client for the retrying store: its first read of `shard`'s tombstones is answered
 * only after `meanwhile` ran (another writer's increments, between the read and the
 * retry's write).
 */
function afterTombstoneRead(shard: ShardRef, meanwhile: () => Promise<void>): { client: DynamoDBClient; happened: () => boolean } {
  const { dynamodb: client } = testClients(info);
  let happened = false;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const pk = (args.input as { ExpressionAttributeValues?: { ':pk'?: { S?: string } } }).ExpressionAttributeValues?.[':pk']?.S;
      if (context.commandName === 'QueryCommand' && pk === droppedKeysPartition(shard) && !happened) {
        happened = true;
        await meanwhile();
      }
      return result;
    },
    { step: 'initialize', name: 'interleave' },
  );
  return { client, happened: () => happened };
}

describe('rolling idempotency history on DynamoDB Local', () => {
  it('grows to the cap, then rolls keeping the newest keys, and counts each key once', async () => {
    const account = uniqueId('roll');
    const usage = store(3);
    const inc = (n: number) => usage.applyIncrement({ account, day: '2026-11-21', shard: 0, key: key(n), metrics: { requests: 1, bytes: 10 } });

    const outcomes = [];
    for (const n of [1, 2, 3, 4, 5]) outcomes.push(await inc(n));
    const item = await readItem(account, '2026-11-21', 0);

    expect(outcomes).toEqual(['applied', 'applied', 'applied', 'applied', 'applied']);
    expect(history(item)).toEqual([3, 4, 5]);
    expect(item.requests?.N).toBe('5');
    expect(item.bytes?.N).toBe('50');
  });

  it('detects a duplicate in the growing form and in the rolling form', async () => {
    const account = uniqueId('dup');
    const usage = store(3);
    const inc = (n: number) => usage.applyIncrement({ account, day: '2026-11-21', shard: 1, key: key(n), metrics: { requests: 1, bytes: 1 } });

    await inc(1);
    const whileGrowing = await inc(1);
    await inc(2);
    await inc(3);
    await inc(4);
    const whileRolling = await inc(3);
    const freshStore = await store(3).applyIncrement({ account, day: '2026-11-21', shard: 1, key: key(4), metrics: { requests: 1, bytes: 1 } });

    expect([whileGrowing, whileRolling, freshStore]).toEqual(['duplicate', 'duplicate', 'duplicate']);
    expect((await readItem(account, '2026-11-21', 1)).requests?.N).toBe('4');
  });

  it('forgets a key only after cap newer keys on the same shard (the dedup horizon)', async () => {
    const account = uniqueId('horizon');
    const usage = store(3);
    const inc = (n: number) => usage.applyIncrement({ account, day: '2026-11-21', shard: 2, key: key(n), metrics: { requests: 1, bytes: 1 } });

    for (const n of [1, 2, 3, 4]) await inc(n);

    expect(await inc(2)).toBe('duplicate');
    expect(await inc(1)).toBe('applied');
  });

  it('keeps a full shard item with a full day of hours under 1 KB at the default cap: every increment costs 1 WCU (the first one also puts the shard in the day index)', async () => {
    const account = uniqueId('w').padEnd(64, 'x');
    const capacity: number[] = [];
    const tombstones: number[] = [];
    const cap = DEFAULTS.historyCap;
    const usage = store(cap, capacity, tombstones);
    // Every increment adds to all 24 hours: the item holds 48 hour attributes from the first write on, up to 14 digits each.
    const perHour = { requests: 123_456_789, bytes: 987_654_321_012 };
    const hours = Object.fromEntries(Array.from({ length: 24 }, (_, hour) => [hour, perHour]));

    for (let n = 0; n < cap + 12; n++) {
      await usage.applyIncrement({ account, day: '2026-11-21', shard: 0, key: key(n), metrics: { requests: 24 * perHour.requests, bytes: 24 * perHour.bytes }, hours });
    }

    expect(capacity).toHaveLength(cap + 12);
    // DynamoDB writes the byDay index only when the shard's day is first set.
    expect(capacity[0]).toBe(2);
    expect(new Set(capacity.slice(1))).toEqual(new Set([1]));
    const item = await readItem(account, '2026-11-21', 0);
    expect(history(item)).toHaveLength(cap);
    expect(item['23B']?.N).toBe(String((cap + 12) * perHour.bytes));
    // The 12 keys rolled out were tombstoned first, with the rest of the full history's front (16 keys at most): one item, 1 WCU.
    expect(tombstones).toEqual([1]);
    const batches = await tombstoneBatches(dynamodb, info.table, { accountId: account, day: '2026-11-21', shard: 0 });
    expect(batches).toHaveLength(1);
    const kept = batches[0]!.keys.map((entry) => entry[0]);
    expect(kept.slice(0, 12)).toEqual(Array.from({ length: 12 }, (_, n) => n));
    expect(kept.length).toBeLessThanOrEqual(16);
  });

  it('drops no key without its tombstone, and counts the drops', async () => {
    const account = uniqueId('tomb');
    const usage = store(3);

    for (const n of [1, 2, 3, 4, 5]) await usage.applyIncrement({ account, day: '2026-11-21', shard: 3, key: key(n), metrics: { requests: 1, bytes: 1 } });
    const item = await readItem(account, '2026-11-21', 3);
    const batches = await tombstoneBatches(dynamodb, info.table, { accountId: account, day: '2026-11-21', shard: 3 });

    expect(history(item)).toEqual([3, 4, 5]);
    expect(item.x?.N).toBe('2');
    // Keys 1 and 2 left the history; the tombstones of the keys then at its front were written with them.
    expect([1, 2].map((n) => tombstoned(batches, key(n)))).toEqual([true, true]);
    // The batches belong to their shard: another shard of the account and day has none.
    expect(await tombstoneBatches(dynamodb, info.table, { accountId: account, day: '2026-11-21', shard: 2 })).toEqual([]);
  });

  it("proves a dropped key applied from its shard's tombstone batch, or from a one-key tombstone an earlier version wrote", async () => {
    const account = uniqueId('proof');
    const day = '2026-11-21';
    const shard = { accountId: account, day, shard: 4 };
    // The store's reads, counted on a client of its own.
    const { dynamodb: client } = testClients(info);
    const reads: string[] = [];
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'QueryCommand' || context.commandName === 'GetItemCommand') reads.push(context.commandName);
        return next(args);
      },
      { step: 'initialize', name: 'count-reads' },
    );
    const usage = new DynamoUsageStore({ client, tableName: info.table, historyCap: 3, ledgerTtlDays: 400 });
    const inc = (n: number, since?: Date) => usage.applyIncrement({ account, day, shard: 4, key: key(n), metrics: { requests: 1, bytes: 1 } }, since === undefined ? {} : { since });
    for (const n of [1, 2, 3, 4, 5]) await inc(n);
    // An attempt that may have died unseen before any of these keys was added: the history cannot prove absence.
    const longAgo = new Date('2026-11-20T00:00:00Z');

    const fromBatch = await inc(1, longAgo);
    reads.length = 0;
    const neverApplied = await inc(99, longAgo);
    const readsForAbsent = [...reads];
    // The shard as a version before the batches left it: its drops uncounted in `y`, each
    // key's tombstone an item of its own (key 2's here), no batches.
    const shardKey = usageKey({ accountId: account, day, shard: 4 });
    await dynamodb.send(new UpdateItemCommand({ TableName: info.table, Key: { PK: { S: shardKey.PK }, SK: { S: shardKey.SK } }, UpdateExpression: 'REMOVE #y', ExpressionAttributeNames: { '#y': 'y' } }));
    for (const batch of await tombstoneBatches(dynamodb, info.table, shard)) {
      await dynamodb.send(new DeleteItemCommand({ TableName: info.table, Key: { PK: { S: droppedKeysPartition(shard) }, SK: { S: batch.SK } } }));
    }
    const legacy = droppedKeyItem(key(2));
    await dynamodb.send(new PutItemCommand({ TableName: info.table, Item: { PK: { S: legacy.PK }, SK: { S: legacy.SK } } }));
    const fresh = new DynamoUsageStore({ client: dynamodb, tableName: info.table, historyCap: 3, ledgerTtlDays: 400 });
    const retry = (n: number) => fresh.applyIncrement({ account, day, shard: 4, key: key(n), metrics: { requests: 1, bytes: 1 } }, { since: longAgo });
    const fromLegacy = await retry(2);
    // With no tombstone at all, nothing says key 1 was applied: the retry applies it (what a tombstone prevents).
    const withNone = await retry(1);

    expect([fromBatch, neverApplied, fromLegacy, withNone]).toEqual(['duplicate', 'applied', 'duplicate', 'applied']);
    // On a shard whose every drop is in a batch, proving a key absent is one Query: no one-key read.
    expect(readsForAbsent).toEqual(['QueryCommand']);
    expect((await readItem(account, day, 4)).requests?.N).toBe('7');
  });

  it('does not apply a retried key that leaves the history between its tombstone read and its write, when the store knew the shard only from its own earlier write', async () => {
    const account = uniqueId('race');
    const day = '2026-11-21';
    const shard = 5;
    // One minute for every write: the history's ages prove nothing, tombstones must.
    const clock = () => new Date('2026-11-21T12:00:00Z');
    const other = new DynamoUsageStore({ client: dynamodb, tableName: info.table, historyCap: 48, ledgerTtlDays: 400, clock });
    const inc = (n: number) => ({ account, day, shard, key: key(n), metrics: { requests: 1, bytes: 1 } });
    const contested = 200;
    // Right after the retry reads the tombstones (none for the key: it is still in the
    // history, past the front), 47 increments roll the history on and the key out of it,
    // tombstoned first.
    const interleaving = afterTombstoneRead({ accountId: account, day, shard }, async () => {
      for (let n = 300; n < 347; n++) await other.applyIncrement(inc(n));
    });
    const retrying = new DynamoUsageStore({ client: interleaving.client, tableName: info.table, historyCap: 48, ledgerTtlDays: 400, clock });
    for (let n = 1; n <= 48; n++) await other.applyIncrement(inc(n));
    // The attempt that will die unseen applies the contested key, at the back of the history.
    await other.applyIncrement(inc(contested));
    // The retrying store writes an increment of its own there and remembers the shard as it
    // left it (48 keys, 2 dropped), not which keys it holds.
    await retrying.applyIncrement(inc(100));

    const outcome = await retrying.applyIncrement(inc(contested), { since: clock() });

    expect(interleaving.happened()).toBe(true);
    expect(outcome).toBe('duplicate');
    expect((await readItem(account, day, shard)).requests?.N).toBe(String(48 + 1 + 1 + 47));
  });

  it('does not apply a retried key at the front of the history it remembers when the key leaves after its tombstone read', async () => {
    const account = uniqueId('front');
    const day = '2026-11-21';
    const shard = 6;
    const clock = () => new Date('2026-11-21T12:00:00Z');
    const other = new DynamoUsageStore({ client: dynamodb, tableName: info.table, historyCap: 48, ledgerTtlDays: 400, clock });
    const inc = (n: number) => ({ account, day, shard, key: key(n), metrics: { requests: 1, bytes: 1 } });
    const contested = 200;
    // 16 rolls right after the retry reads the tombstones: the 15 keys before the contested one, then it (tombstoned first).
    const interleaving = afterTombstoneRead({ accountId: account, day, shard }, async () => {
      for (let n = 300; n < 316; n++) await other.applyIncrement(inc(n));
    });
    const retrying = new DynamoUsageStore({ client: interleaving.client, tableName: info.table, historyCap: 48, ledgerTtlDays: 400, clock });
    // The attempt that will die unseen applied the contested key 17th of 48.
    for (let n = 1; n <= 48; n++) await other.applyIncrement(inc(n === 17 ? contested : n));
    // The retrying store's own write rolls the history (tombstoning keys 1-16, dropping 1):
    // it remembers the contested key 16th at the front, untombstoned.
    await retrying.applyIncrement(inc(100));

    const outcome = await retrying.applyIncrement(inc(contested), { since: clock() });

    expect(interleaving.happened()).toBe(true);
    expect(outcome).toBe('duplicate');
    expect((await readItem(account, day, shard)).requests?.N).toBe(String(48 + 1 + 16));
  });

  it('measures a larger cap as more than 1 WCU, so the 1 WCU figure is real', async () => {
    const account = uniqueId('w2').padEnd(64, 'x');
    const capacity: number[] = [];
    const usage = store(100, capacity);

    for (let n = 0; n < 100; n++) {
      await usage.applyIncrement({ account, day: '2026-11-21', shard: 0, key: key(n), metrics: { requests: 1, bytes: 1 } });
    }

    expect(Math.max(...capacity)).toBe(2);
  });
});
