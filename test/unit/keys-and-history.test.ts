import { APPEND_INDEX, hasOneKeyTombstones, historyMinute, historyUpdate, newestFirst, nextForm, observeWrite, provesAbsence, tombstonesCover, type HistoryState } from '../../src/adapters/dynamodb/history-update';
import { isValidAccountId } from '../../src/domain/account-id';
import { ValidationError } from '../../src/domain/errors';
import { incrementKey, keyHex } from '../../src/domain/counters/idempotency-key';
import { dayRangeKeys, droppedKeysItem, droppedKeysSince, isShardMetric, ledgerKey, parseAccountSortKey, pinAttribute, usageKey } from '../../src/domain/counters/keys';
import { validateMetricRules } from '../../src/domain/logs/metric-rules';
import { validateAdjustment } from '../../src/domain/counters/adjustment';

const ref = { bucket: 'logs', key: 'cf/E2.2026-11-21-00.a.gz', etag: 'abc' };
const scheme = { keyBytes: 12, shards: 4 };

describe('idempotency keys', () => {
  it('gives the same key and shard for the same object, account and day', () => {
    const first = incrementKey(ref, 'acme', '2026-11-21', scheme);
    const again = incrementKey({ ...ref }, 'acme', '2026-11-21', scheme);

    expect(keyHex(again.key)).toBe(keyHex(first.key));
    expect(again.shard).toBe(first.shard);
    expect(first.key).toHaveLength(12);
  });

  it('gives different keys when any part of the identity differs', () => {
    const keys = [
      incrementKey(ref, 'acme', '2026-11-21', scheme),
      incrementKey(ref, 'acme', '2026-11-22', scheme),
      incrementKey(ref, 'globex', '2026-11-21', scheme),
      incrementKey({ ...ref, etag: 'abd' }, 'acme', '2026-11-21', scheme),
      incrementKey({ ...ref, key: `${ref.key}x` }, 'acme', '2026-11-21', scheme),
    ].map((k) => keyHex(k.key));

    expect(new Set(keys).size).toBe(keys.length);
  });

  it('spreads keys over every shard and no further', () => {
    const shards = new Set<number>();
    for (let i = 0; i < 200; i++) shards.add(incrementKey({ ...ref, key: `k${i}` }, 'acme', '2026-11-21', scheme).shard);

    expect([...shards].sort()).toEqual([0, 1, 2, 3]);
  });
});

describe('table keys', () => {
  it('spells usage, range and ledger keys in one place', () => {
    expect(usageKey({ accountId: 'acme', day: '2026-11-21', shard: 3 })).toEqual({ PK: 'ACCT#acme', SK: 'DAY#2026-11-21#S#03' });
    expect(dayRangeKeys('acme', '2026-11-01', '2026-11-30')).toEqual({ PK: 'ACCT#acme', from: 'DAY#2026-11-01#', to: 'DAY#2026-11-30#~' });
    expect(ledgerKey(ref)).toEqual({ PK: 'OBJ#logs/cf/E2.2026-11-21-00.a.gz#abc', SK: '#DONE' });
    expect(parseAccountSortKey('DAY#2026-11-21#S#03')).toEqual({ kind: 'usage', day: '2026-11-21', shard: 3 });
    expect(parseAccountSortKey('DAY#2026-11-21#A#fix-1')).toEqual({ kind: 'adjustment', day: '2026-11-21', adjustmentId: 'fix-1' });
  });

  it.each(['acme#DAY', '../etc', 'a/b', '', 'x'.repeat(65), 'caf\u00e9', '=cmd()', '-lead', 'a b'])(
    'refuses the account id %j so it cannot break the key scheme',
    (accountId) => {
      expect(isValidAccountId(accountId)).toBe(false);
      expect(() => usageKey({ accountId, day: '2026-11-21', shard: 0 })).toThrow(ValidationError);
    },
  );
});

describe('usage shard attributes', () => {
  it('tells metrics from the history, its minutes, the timestamps and pins, and refuses metrics named like them', () => {
    const pin = pinAttribute({ bucket: 'b', key: 'k.gz', etag: 'e' });

    expect(pin).toMatch(/^P#[A-Za-z0-9_-]{16}$/);
    expect(pinAttribute({ bucket: 'b', key: 'k.gz', etag: 'e2' })).not.toBe(pin);
    expect(['requests', 'bytes', 'auth_requests'].map(isShardMetric)).toEqual([true, true, true]);
    expect(['h', 't', 'updatedAt', 'd', 'PK', 'SK', 'ttl', pin].map(isShardMetric)).toEqual(Array(8).fill(false));
    expect(() => validateMetricRules([{ name: 't', path: '/x' }])).toThrow(/reserved/);
    expect(() => validateAdjustment({ account: 'acme', day: '2026-11-21', adjustmentId: 'A1', metric: 't', delta: 1, reason: 'x' })).toThrow(/not a metric name/);
  });
});

describe('rolling-history update expressions', () => {
  const increment = { account: 'acme', day: '2026-11-21', shard: 1, key: new Uint8Array(12).fill(7), metrics: { requests: 3, bytes: 10, authorization_requests: 0 } };
  const options = { tableName: 'usage', cap: 48, now: new Date('2026-11-21T10:00:30.000Z') };
  const heads = [new Uint8Array([7, 7, 7]), new Uint8Array([8])];

  it('appends key and minute with list_append below the cap, guarded by NOT contains, and starts the drop count', () => {
    const input = historyUpdate('grow', increment, options);

    expect(input.UpdateExpression).toBe(
      'SET #h = list_append(if_not_exists(#h, :empty), :kl), #t = list_append(if_not_exists(#t, :empty), :tml), #x = if_not_exists(#x, :zero), #u = :now, #d = :day ADD #m0 :m0, #m1 :m1',
    );
    expect(input.ConditionExpression).toBe('(attribute_not_exists(#h) OR (attribute_exists(#x) AND size(#h) < :cap)) AND (attribute_not_exists(#u) OR #u < :nextMinute) AND NOT contains(#h, :k)');
    expect(input.ExpressionAttributeValues?.[':tml']).toEqual({ L: [{ N: '600' }] });
    expect(input.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
    expect(input.Key).toEqual({ PK: { S: 'ACCT#acme' }, SK: { S: 'DAY#2026-11-21#S#01' } });
  });

  it('rolls with SET h[big] and REMOVE h[0], counting the drop, only when the head is a key the store tombstoned first', () => {
    const input = historyUpdate('roll', increment, options, { heads });

    expect(input.UpdateExpression).toBe(
      `SET #h[${APPEND_INDEX}] = :k, #t[${APPEND_INDEX}] = :tm, #u = :now, #d = :day REMOVE #h[0], #t[0] ADD #x :one, #y :one, #m0 :m0, #m1 :m1`,
    );
    expect(input.UpdateExpression).not.toMatch(/list_append\(#h, .*REMOVE/);
    expect(input.ConditionExpression).toBe('attribute_exists(#x) AND size(#h) >= :cap AND #h[0] IN (:head0, :head1) AND (attribute_not_exists(#u) OR #u < :nextMinute) AND NOT contains(#h, :k)');
    expect(input.ExpressionAttributeValues?.[':head1']).toEqual({ B: new Uint8Array([8]) });
  });

  it('adopts an item from before tombstoned drops: dates every key now, starts x at 0 and remembers the minute', () => {
    const input = historyUpdate('adopt', increment, options, { size: 3 });

    expect(input.UpdateExpression).toBe('SET #h = list_append(#h, :kl), #t = :tadopt, #x = :zero, #a = :tm, #u = :now, #d = :day ADD #m0 :m0, #m1 :m1');
    expect(input.ConditionExpression).toBe('attribute_exists(#h) AND attribute_not_exists(#x) AND size(#h) = :n AND (attribute_not_exists(#u) OR #u < :nextMinute) AND NOT contains(#h, :k)');
    expect(input.ExpressionAttributeValues?.[':tadopt']).toEqual({ L: [{ N: '600' }, { N: '600' }, { N: '600' }, { N: '600' }] });
    expect(input.ExpressionAttributeValues?.[':n']).toEqual({ N: '3' });
  });

  it('in proven mode also requires that the history never dropped a key or reaches back to the unseen attempt', () => {
    const input = historyUpdate('grow', increment, { ...options, since: new Date('2026-11-21T09:00:00Z') });

    expect(input.ConditionExpression).toMatch(
      / AND NOT contains\(#h, :k\) AND \(attribute_not_exists\(#h\) OR \(#x = :zero AND attribute_not_exists\(#a\)\) OR \(\(attribute_not_exists\(#x\) OR attribute_exists\(#a\)\) AND size\(#h\) < :legacyCap\) OR #t\[0\] < :since\)$/,
    );
    expect(input.ExpressionAttributeValues?.[':since']).toEqual({ N: '540' });
  });

  it('in guarded mode requires instead that no more keys were dropped than the history held when last seen', () => {
    const input = historyUpdate('roll', increment, { ...options, since: new Date('2026-11-21T09:00:00Z'), maxDrops: 96 }, { heads });

    expect(input.ConditionExpression).toMatch(/ AND NOT contains\(#h, :k\) AND #x <= :xmax$/);
    expect(input.ExpressionAttributeValues?.[':xmax']).toEqual({ N: '96' });
    expect(input.ExpressionAttributeValues).not.toHaveProperty(':since');
  });

  it('reads a failed condition as duplicate (key there), unproven (the tombstone must decide), or the form that fits', () => {
    const key = new Uint8Array([1, 2, 3]);
    const other = { B: new Uint8Array([9, 9, 9]) };
    const first = { B: new Uint8Array([5]) };
    const at = (minute: number) => ({ N: String(minute) });
    const base = { cap: 2, day: '2026-11-21' };
    const full = (oldest: number, drops: number) => ({ h: { L: [first, other] }, t: { L: [at(oldest), at(599)] }, x: at(drops) });

    expect(nextForm({ h: { L: [other, { B: key }] }, t: { L: [at(1), at(2)] }, x: at(0) }, key, base)).toEqual({ kind: 'duplicate' });
    expect(nextForm(undefined, key, base)).toMatchObject({ kind: 'retry', form: 'grow', state: { size: 0 } });
    expect(nextForm({ h: { L: [other] }, t: { L: [at(599)] }, x: at(0) }, key, base)).toMatchObject({ kind: 'retry', form: 'grow' });
    expect(nextForm(full(599, 0), key, base)).toMatchObject({ kind: 'retry', form: 'roll', state: { size: 2, drops: 0, heads: [first.B, other.B] } });
    expect(nextForm({ h: { L: [other, other] } }, key, base)).toMatchObject({ kind: 'retry', form: 'adopt', state: { size: 2 } });

    const since = new Date('2026-11-21T09:59:00Z'); // minute 599
    // Never dropped a key: proves at any time. Dropped, oldest key not older than the attempt: unproven.
    expect(nextForm(full(599, 0), key, { ...base, since })).toMatchObject({ kind: 'retry', form: 'roll' });
    expect(nextForm(full(599, 5), key, { ...base, since })).toMatchObject({ kind: 'unproven', form: 'roll', state: { drops: 5, oldest: 599 } });
    expect(nextForm(full(598, 5), key, { ...base, since })).toMatchObject({ kind: 'retry', form: 'roll' });
    // Guarded: holds while no more keys were dropped than allowed.
    expect(nextForm(full(599, 5), key, { ...base, since, maxDrops: 5 })).toMatchObject({ kind: 'retry' });
    expect(nextForm(full(599, 6), key, { ...base, since, maxDrops: 5 })).toMatchObject({ kind: 'unproven' });
  });

  it('proves absence only where every drop since the attempt left a tombstone', () => {
    const day = '2026-11-21';
    const since = new Date('2026-11-21T09:59:00Z');
    const state = (s: Partial<HistoryState>): HistoryState => ({ size: 48, heads: [], ...s });

    expect(provesAbsence(state({ size: 0 }), day, 48, since)).toBe(true);
    expect(provesAbsence(state({ drops: 0, oldest: 700 }), day, 48, since)).toBe(true);
    expect(provesAbsence(state({ drops: 3, oldest: 700 }), day, 48, since)).toBe(false);
    expect(provesAbsence(state({ drops: 3, oldest: 598 }), day, 48, since)).toBe(true);
    // From before: below the cap it never dropped; at the cap only its age proves.
    expect(provesAbsence(state({ size: 47, oldest: 700 }), day, 48, since)).toBe(true);
    expect(provesAbsence(state({ drops: 0, adoptedAt: 650, oldest: 650 }), day, 48, since)).toBe(false);

    expect(tombstonesCover(state({ drops: 9 }), day, since)).toBe(true);
    expect(tombstonesCover(state({ drops: 9, adoptedAt: 598 }), day, since)).toBe(true);
    expect(tombstonesCover(state({ drops: 9, adoptedAt: 599 }), day, since)).toBe(false);
    expect(tombstonesCover(state({}), day, since)).toBe(false);
  });

  it('orders tombstone batches by the minute they were written, under their shard', () => {
    const shard = { accountId: 'acme', day: '2026-11-21', shard: 3 };
    const keys = [new Uint8Array([1, 2]), new Uint8Array([3])];
    const at = (minute: number) => droppedKeysItem(shard, keys, minute).SK;
    const minutes = [-1_500, -1, 0, 59, 600, 1_439, 1_440, 20_000, 600_000];

    expect(droppedKeysItem(shard, keys, 600)).toEqual({ PK: 'DROPPED#acme#2026-11-21#S#03', SK: expect.stringMatching(/^B#01000600#[0-9a-f]{32}$/) });
    expect(minutes.map(at)).toEqual([...minutes.map(at)].sort());
    // A proof from minute m reads every batch written at m or later, and none before.
    for (const m of minutes) expect(minutes.filter((w) => at(w) >= droppedKeysSince(m))).toEqual(minutes.filter((w) => w >= m));
    // The same run of keys in the same minute is one item; another run, or a split of the same bytes, another.
    expect(at(600)).toBe(droppedKeysItem(shard, [new Uint8Array([1, 2]), new Uint8Array([3])], 600).SK);
    expect(at(600)).not.toBe(droppedKeysItem(shard, [new Uint8Array([1]), new Uint8Array([2, 3])], 600).SK);
  });

  it('reads one-key tombstones only for a shard that dropped keys before the batches', () => {
    const state = (s: Partial<HistoryState>): HistoryState => ({ size: 48, heads: [], ...s });

    expect(hasOneKeyTombstones(state({ drops: 7, batched: 7 }))).toBe(false);
    expect(hasOneKeyTombstones(state({ drops: 8, batched: 7 }))).toBe(true);
    expect(hasOneKeyTombstones(state({ drops: 3 }))).toBe(true);
    expect(hasOneKeyTombstones(state({}))).toBe(false);
  });

  it('learns from a rolling write how long the dropped key was kept and the state after it', () => {
    const second = new Uint8Array([2]);
    const old = (minute: number) => ({
      h: { L: [{ B: new Uint8Array([1]) }, { B: second }] },
      t: { L: [{ N: String(minute) }, { N: '600' }] },
      x: { N: '4' },
    });

    expect(observeWrite('roll', old(500), '2026-11-21', options.now)).toEqual({
      keys: 2,
      droppedAgeSeconds: 6030,
      dropped: true,
      after: { size: 2, drops: 5, batched: 1, oldest: 600, heads: [second], headsMinute: 600, updatedAt: options.now.toISOString() },
    });
    expect(observeWrite('grow', old(590), '2026-11-21', options.now)).toMatchObject({ keys: 3, dropped: false, after: { size: 3, drops: 4, oldest: 590 } });
    expect(observeWrite('adopt', { h: old(590).h }, '2026-11-21', options.now)).toMatchObject({ keys: 3, after: { drops: 0, adoptedAt: 600, oldest: 600 } });
  });

  it('dates a key no earlier than the item\'s last write, and asks that no write be dated past the minute after', () => {
    const clock = new Date('2026-11-21T10:00:30Z');
    expect(newestFirst(clock, '2026-11-21T10:20:00.000Z')).toEqual(new Date('2026-11-21T10:20:00Z'));
    expect(newestFirst(clock, '2026-11-21T09:00:00.000Z')).toBe(clock);
    expect(newestFirst(clock, undefined)).toBe(clock);
    const input = historyUpdate('grow', { account: 'acme', day: '2026-11-21', shard: 0, key: new Uint8Array([1]), metrics: { requests: 1 } }, { tableName: 't', cap: 4, now: clock });
    expect(input.ExpressionAttributeValues?.[':nextMinute']).toEqual({ S: '2026-11-21T10:01:00.000Z' });
  });

  it('counts history minutes from the start of the shard day', () => {
    expect(historyMinute('2026-11-21', new Date('2026-11-21T00:00:59Z'))).toBe(0);
    expect(historyMinute('2026-11-21', new Date('2026-11-22T00:01:00Z'))).toBe(1441);
    expect(historyMinute('2026-11-21', new Date('2026-11-20T23:59:00Z'))).toBe(-1);
  });
});
