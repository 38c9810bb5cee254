import { APPEND_INDEX, growingUpdate, historyState, rollingUpdate } from '../../src/adapters/history-update';
import { isValidAccountId } from '../../src/domain/account-id';
import { ValidationError } from '../../src/domain/errors';
import { incrementKey, keyHex } from '../../src/domain/idempotency-key';
import { dayRangeKeys, ledgerKey, parseAccountSortKey, usageKey } from '../../src/domain/keys';

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

describe('rolling-history update expressions', () => {
  const increment = { account: 'acme', day: '2026-11-21', shard: 1, key: new Uint8Array(12).fill(7), metrics: { requests: 3, bytes: 10, authorization_requests: 0 } };
  const options = { tableName: 'usage', cap: 48, now: '2026-11-21T00:00:00.000Z' };

  it('appends with list_append while the history has room, guarded by NOT contains', () => {
    const input = growingUpdate(increment, options);

    expect(input.UpdateExpression).toBe('SET #h = list_append(if_not_exists(#h, :empty), :kl), #u = :now ADD #m0 :m0, #m1 :m1');
    expect(input.ConditionExpression).toBe('(attribute_not_exists(#h) OR size(#h) < :cap) AND NOT contains(#h, :k)');
    expect(input.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
    expect(input.Key).toEqual({ PK: { S: 'ACCT#acme' }, SK: { S: 'DAY#2026-11-21#S#01' } });
  });

  it('rolls with SET h[big] and REMOVE h[0], never the overlapping list_append form', () => {
    const input = rollingUpdate(increment, options);

    expect(input.UpdateExpression).toBe(`SET #h[${APPEND_INDEX}] = :k, #u = :now REMOVE #h[0] ADD #m0 :m0, #m1 :m1`);
    expect(input.UpdateExpression).not.toMatch(/list_append\(#h, .*REMOVE/);
    expect(input.ConditionExpression).toBe('size(#h) >= :cap AND NOT contains(#h, :k)');
  });

  it('reads a failed condition as duplicate, full or room', () => {
    const key = new Uint8Array([1, 2, 3]);
    const other = { B: new Uint8Array([9, 9, 9]) };

    expect(historyState({ h: { L: [other, { B: new Uint8Array([1, 2, 3]) }] } }, key, 2)).toBe('duplicate');
    expect(historyState({ h: { L: [other, other] } }, key, 2)).toBe('full');
    expect(historyState({ h: { L: [other] } }, key, 2)).toBe('room');
    expect(historyState(undefined, key, 2)).toBe('room');
  });
});
