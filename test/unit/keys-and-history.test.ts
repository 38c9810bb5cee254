import { APPEND_INDEX, historyMinute, historyUpdate, nextForm, observeWrite } from '../../src/adapters/history-update';
import { isValidAccountId } from '../../src/domain/account-id';
import { ValidationError } from '../../src/domain/errors';
import { incrementKey, keyHex } from '../../src/domain/idempotency-key';
import { dayRangeKeys, isShardMetric, ledgerKey, parseAccountSortKey, pinAttribute, usageKey } from '../../src/domain/keys';
import { validateMetricRules } from '../../src/domain/metric-rules';
import { validateAdjustment } from '../../src/domain/adjustment';

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
  const options = { tableName: 'usage', cap: 48, maxKeys: 480, retentionSeconds: 2400, now: new Date('2026-11-21T10:00:30.000Z') };

  it('appends key and minute with list_append while the history has room or its oldest key is young, guarded by NOT contains', () => {
    const input = historyUpdate('grow', increment, options);

    expect(input.UpdateExpression).toBe(
      'SET #h = list_append(if_not_exists(#h, :empty), :kl), #t = list_append(if_not_exists(#t, :empty), :tml), #u = :now, #d = :day ADD #m0 :m0, #m1 :m1',
    );
    expect(input.ConditionExpression).toBe(
      '(attribute_not_exists(#h) OR attribute_exists(#t)) AND (attribute_not_exists(#h) OR size(#h) < :cap OR (size(#h) < :max AND #t[0] >= :cutoff)) AND NOT contains(#h, :k)',
    );
    expect(input.ExpressionAttributeValues?.[':tml']).toEqual({ L: [{ N: '600' }] });
    expect(input.ExpressionAttributeValues?.[':cutoff']).toEqual({ N: '560' });
    expect(input.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
    expect(input.Key).toEqual({ PK: { S: 'ACCT#acme' }, SK: { S: 'DAY#2026-11-21#S#01' } });
  });

  it('rolls with SET h[big] and REMOVE h[0] only past the retention, never the overlapping list_append form', () => {
    const input = historyUpdate('roll', increment, options);

    expect(input.UpdateExpression).toBe(
      `SET #h[${APPEND_INDEX}] = :k, #t[${APPEND_INDEX}] = :tm, #u = :now, #d = :day REMOVE #h[0], #t[0] ADD #m0 :m0, #m1 :m1`,
    );
    expect(input.UpdateExpression).not.toMatch(/list_append\(#h, .*REMOVE/);
    expect(input.ConditionExpression).toBe('attribute_exists(#t) AND size(#h) >= :cap AND #t[0] < :cutoff AND NOT contains(#h, :k)');
  });

  it('forces a young key out of a history at max only if the head is one of the candidates the store tombstoned first', () => {
    const input = historyUpdate('force', increment, options, { heads: [new Uint8Array([7, 7, 7]), new Uint8Array([8])] });

    expect(input.UpdateExpression).toBe(`SET #h[${APPEND_INDEX}] = :k, #t[${APPEND_INDEX}] = :tm, #u = :now, #d = :day REMOVE #h[0], #t[0] ADD #m0 :m0, #m1 :m1`);
    expect(input.ConditionExpression).toBe('attribute_exists(#t) AND size(#h) >= :max AND #h[0] IN (:head0, :head1) AND NOT contains(#h, :k)');
    expect(input.ExpressionAttributeValues?.[':head1']).toEqual({ B: new Uint8Array([8]) });
  });

  it('rolls at the cap whatever the age when retention is off', () => {
    expect(historyUpdate('roll', increment, { ...options, retentionSeconds: 0 }).ConditionExpression).toBe(
      'attribute_exists(#t) AND size(#h) >= :cap AND NOT contains(#h, :k)',
    );
  });

  it('adopts an item from before `t` by dating every key it holds now, only at the size it was seen with', () => {
    const input = historyUpdate('adopt', increment, options, { size: 3 });

    expect(input.UpdateExpression).toBe('SET #h = list_append(#h, :kl), #t = :tadopt, #u = :now, #d = :day ADD #m0 :m0, #m1 :m1');
    expect(input.ConditionExpression).toBe('attribute_exists(#h) AND attribute_not_exists(#t) AND size(#h) = :n AND NOT contains(#h, :k)');
    expect(input.ExpressionAttributeValues?.[':tadopt']).toEqual({ L: [{ N: '600' }, { N: '600' }, { N: '600' }, { N: '600' }] });
    expect(input.ExpressionAttributeValues?.[':n']).toEqual({ N: '3' });
  });

  it('in proven mode also requires the history to reach back to the unseen attempt', () => {
    const input = historyUpdate('grow', increment, { ...options, since: new Date('2026-11-21T09:00:00Z') });

    expect(input.ConditionExpression).toMatch(/ AND NOT contains\(#h, :k\) AND \(attribute_not_exists\(#h\) OR size\(#h\) < :cap OR #t\[0\] < :since\)$/);
    expect(input.ExpressionAttributeValues?.[':since']).toEqual({ N: '540' });
  });

  it('in pinned mode also sets the object pin, refused when the pin is already there', () => {
    const input = historyUpdate('roll', increment, { ...options, pin: 'P#abc' });

    expect(input.UpdateExpression).toBe(
      `SET #h[${APPEND_INDEX}] = :k, #t[${APPEND_INDEX}] = :tm, #u = :now, #d = :day, #p = :tm REMOVE #h[0], #t[0] ADD #m0 :m0, #m1 :m1`,
    );
    expect(input.ConditionExpression).toMatch(/ AND NOT contains\(#h, :k\) AND attribute_not_exists\(#p\)$/);
    expect(input.ExpressionAttributeNames?.['#p']).toBe('P#abc');
  });

  it('reads a failed condition as duplicate (key or pin there) or the form that fits', () => {
    const key = new Uint8Array([1, 2, 3]);
    const other = { B: new Uint8Array([9, 9, 9]) };
    const at = (minute: number) => ({ N: String(minute) });
    const base = { cap: 2, maxKeys: 4, retentionSeconds: 2400, now: options.now, day: '2026-11-21' };

    expect(nextForm({ h: { L: [other, { B: key }] }, t: { L: [at(1), at(2)] } }, key, base)).toEqual({ kind: 'duplicate', by: 'history' });
    expect(nextForm(undefined, key, base)).toEqual({ kind: 'retry', form: 'grow', size: 0 });
    expect(nextForm({ h: { L: [other] }, t: { L: [at(599)] } }, key, base)).toEqual({ kind: 'retry', form: 'grow', size: 1 });
    expect(nextForm({ h: { L: [other, other] }, t: { L: [at(500), at(599)] } }, key, base)).toEqual({ kind: 'retry', form: 'roll', size: 2 });
    expect(nextForm({ h: { L: [other, other] }, t: { L: [at(590), at(599)] } }, key, base)).toEqual({ kind: 'retry', form: 'grow', size: 2 });
    const first = { B: new Uint8Array([5]) };
    expect(nextForm({ h: { L: [first, other, other, other] }, t: { L: [at(599), at(599), at(599), at(599)] } }, key, base)).toEqual({ kind: 'retry', form: 'force', size: 4, heads: [first.B, other.B, other.B, other.B] });
    expect(nextForm({ h: { L: [first, other, other, other] }, t: { L: [at(500), at(599), at(599), at(599)] } }, key, base)).toEqual({ kind: 'retry', form: 'roll', size: 4 });
    expect(nextForm({ h: { L: [other, other] } }, key, base)).toEqual({ kind: 'retry', form: 'adopt', size: 2 });
    const pinnedItem = { h: { L: [other] }, t: { L: [at(599)] }, 'P#abc': at(599) };
    expect(nextForm(pinnedItem, key, { ...base, pin: 'P#abc' })).toEqual({ kind: 'duplicate', by: 'pin' });
    // Proven mode: the oldest key (minute 599) is not older than the unseen attempt (09:59 = minute 599): the tombstone decides.
    const since = new Date('2026-11-21T09:59:00Z');
    // A history below the cap never dropped anything: it proves any time.
    expect(nextForm(pinnedItem, key, { ...base, since })).toEqual({ kind: 'retry', form: 'grow', size: 1 });
    expect(nextForm({ h: { L: [other, other] }, t: { L: [at(599), at(599)] } }, key, { ...base, since })).toEqual({ kind: 'unproven', form: 'grow', size: 2 });
    expect(nextForm({ h: { L: [other] }, t: { L: [at(598)] } }, key, { ...base, since })).toEqual({ kind: 'retry', form: 'grow', size: 1 });
    expect(nextForm(pinnedItem, key, { ...base, pin: 'P#xyz' })).toEqual({ kind: 'retry', form: 'grow', size: 1 });
    expect(nextForm(pinnedItem, key, base)).toEqual({ kind: 'retry', form: 'grow', size: 1 });
  });

  it('learns from a rolling write how long the dropped key was kept, and whether it was forced out early', () => {

    const small = { ...options, cap: 2, maxKeys: 4 };
    const second = new Uint8Array([2]);
    const old = (minute: number, length = 2) => ({
      h: { L: [{ B: new Uint8Array([1]) }, { B: second }, ...Array.from({ length: length - 2 }, () => ({ B: new Uint8Array([3]) }))] },
      t: { L: [{ N: String(minute) }, ...Array.from({ length: length - 1 }, () => ({ N: '600' }))] },
    });

    expect(observeWrite('roll', old(500), '2026-11-21', small)).toEqual({ keys: 2, droppedAgeSeconds: 6030, forced: false, next: 'grow', heads: [second] });
    const three = new Uint8Array([3]);
    expect(observeWrite('force', old(590, 4), '2026-11-21', small)).toEqual({ keys: 4, droppedAgeSeconds: 630, forced: true, next: 'force', heads: [second, three, three] });
    expect(observeWrite('grow', old(590), '2026-11-21', small)).toMatchObject({ keys: 3, forced: false, next: 'grow' });
    expect(observeWrite('grow', old(500), '2026-11-21', small)).toMatchObject({ keys: 3, forced: false, next: 'roll' });
    expect(observeWrite('grow', old(590), '2026-11-21', { ...small, maxKeys: 3 })).toMatchObject({ keys: 3, forced: false, next: 'force' });
  });

  it('counts history minutes from the start of the shard day', () => {
    expect(historyMinute('2026-11-21', new Date('2026-11-21T00:00:59Z'))).toBe(0);
    expect(historyMinute('2026-11-21', new Date('2026-11-22T00:01:00Z'))).toBe(1441);
    expect(historyMinute('2026-11-21', new Date('2026-11-20T23:59:00Z'))).toBe(-1);
  });
});
