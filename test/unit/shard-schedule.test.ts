import { readShards } from '../../src/adapters/config';
import { shardScheduleLine } from '../../src/cli/commands/ingest/plan';
import { ConfigError } from '../../src/domain/errors';
import { formatShards, incrementKey, shardsOn } from '../../src/domain/counters/idempotency-key';

describe('dated shard schedule (TALLY_SHARDS=4,16@2027-01-01)', () => {
  const scheme = { keyBytes: 12, ...readShards('4,16@2027-01-01,32@2027-06-01') };

  it('gives each day the count in force on that day, and keeps every earlier day on its own', () => {
    expect([shardsOn(scheme, '2026-12-31'), shardsOn(scheme, '2027-01-01'), shardsOn(scheme, '2027-05-31'), shardsOn(scheme, '2027-06-01')]).toEqual([4, 16, 16, 32]);
    expect(formatShards(scheme)).toBe('4,16@2027-01-01,32@2027-06-01');
  });

  it('lands a retry of an old day on the same shard whatever changes are scheduled later', () => {
    const ref = { bucket: 'logs', key: 'cf/E2.2026-12-30-00.a.gz', etag: 'e' };
    const shards = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const before = incrementKey({ ...ref, key: `${ref.key}${i}` }, 'acme', '2026-12-30', { keyBytes: 12, shards: 4 });
      const after = incrementKey({ ...ref, key: `${ref.key}${i}` }, 'acme', '2026-12-30', scheme);
      expect(after).toEqual(before);
      shards.add(incrementKey({ ...ref, key: `${ref.key}${i}` }, 'acme', '2027-01-02', scheme).shard);
    }
    expect(Math.max(...shards)).toBeGreaterThan(3);
    expect(Math.max(...shards)).toBeLessThan(16);
  });

  it.each(['0', '65', 'abc', '4,16', '4,16@2027-02-30', '4,16@2027-06-01,32@2027-01-01', '4,x@2027-01-01'])(
    'refuses %j naming the variable',
    (value) => {
      expect(() => readShards(value)).toThrow(ConfigError);
      expect(() => readShards(value)).toThrow(/TALLY_SHARDS/);
    },
  );

  it('prints the schedule line that moves a live table from a future day on', () => {
    expect(shardScheduleLine({ shards: 4 }, 16, '2026-11-25')).toBe('TALLY_SHARDS=4,16@2026-11-25');
    expect(shardScheduleLine(readShards('4,8@2026-11-01'), 16, '2026-11-25')).toBe('TALLY_SHARDS=4,8@2026-11-01,16@2026-11-25');
    expect(shardScheduleLine(readShards('4,8@2026-11-01'), 8, '2026-11-25')).toBeUndefined();
    expect(shardScheduleLine({ shards: 4 }, 1, '2026-11-25')).toBeUndefined();
  });
});
