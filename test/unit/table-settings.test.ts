import { shardScheduleConflicts } from '../../src/adapters/dynamodb/table-settings';

describe('a shard schedule against the days the table records', () => {
  const recorded = { shardsByDay: new Map([['2026-11-20', 4], ['2026-11-21', 4], ['2026-12-01', 16]]) };

  it('accepts a schedule that gives every recorded day its count, changes dated today or later, or past ones the table records', () => {
    expect(shardScheduleConflicts({ keyBytes: 12, shards: 4, schedule: [{ from: '2026-12-01', shards: 16 }] }, recorded, '2026-11-25')).toEqual([]);
    expect(shardScheduleConflicts({ keyBytes: 12, shards: 4, schedule: [{ from: '2026-12-01', shards: 16 }] }, recorded, '2026-12-05')).toEqual([]);
    expect(shardScheduleConflicts({ keyBytes: 12, shards: 4, schedule: [{ from: '2026-12-01', shards: 16 }, { from: '2027-01-01', shards: 32 }] }, recorded, '2026-12-05')).toEqual([]);
  });

  it('refuses, naming the day, a count that moves a recorded day, and a change dated in the past that the table does not record', () => {
    expect(shardScheduleConflicts({ keyBytes: 12, shards: 16 }, recorded, '2026-11-25')).toEqual([expect.stringMatching(/gives 2026-11-20 16 shard\(s\), but the table records 4 for it/)]);
    expect(shardScheduleConflicts({ keyBytes: 12, shards: 4, schedule: [{ from: '2026-11-21', shards: 16 }] }, recorded, '2026-11-25')[0]).toMatch(/gives 2026-11-21 16 shard\(s\)/);
    expect(shardScheduleConflicts({ keyBytes: 12, shards: 4 }, { shardsByDay: new Map() }, '2026-11-25')).toEqual([]);
    expect(shardScheduleConflicts({ keyBytes: 12, shards: 4, schedule: [{ from: '2026-11-22', shards: 8 }] }, { shardsByDay: new Map() }, '2026-11-25')).toEqual([
      expect.stringMatching(/the change 8@2026-11-22 is dated before today \(2026-11-25\) and the table does not record 2026-11-22 with 8 shard\(s\)/),
    ]);
  });
});
