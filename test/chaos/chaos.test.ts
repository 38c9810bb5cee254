import { ensureUsageTable } from '../../src/adapters/dynamodb/usage-table';
import { createTestQueues, testClients, testStackInfo, uniqueId } from '../support/stack';
import { TIME_LIMITS } from '../support/time-limits';
import { runChaos } from './run-chaos';

describe('chaos (fixed seed)', () => {
  it('ends with every counter equal to an independent recount after faults, DLQ replay and backfills queued and inline beside the consumers', async () => {
    const base = testStackInfo();
    const queues = await createTestQueues(base, { visibilityTimeoutSeconds: 1, maxReceiveCount: 3 });

    const report = await runChaos({ seed: 42, objects: 200, consumers: 2, info: { ...base, ...queues } });

    expect(report.drift).toEqual([]);
    expect(report.appliedTwice).toEqual([]);
    expect(report.hoursDrift).toEqual([]);
    expect(report.dlqAfterReplay).toBe(0);
    expect(report.lines.ledger).toEqual(report.lines.expected);
    for (const kind of ['crash', 'throttle', 'lostResponse', 'duplicateNotification', 'batchLost', 'dlqBound']) {
      expect({ kind, fired: (report.faults[kind] ?? 0) > 0 }).toEqual({ kind, fired: true });
    }
    expect(report.faults.deadLettered).toBeGreaterThan(0);
    expect(report.faults.partlyApplied).toBeGreaterThan(0);
    expect(report.faults.backfilledObjects).toBeGreaterThan(0);
    expect(report.faults.hauntedDeath).toBeGreaterThan(0);
    expect(report.inlineBackfill.counted + report.inlineBackfill.alreadyCounted).toBeGreaterThan(0);
  }, TIME_LIMITS.chaosRun);
});

describe('chaos, hot profile (fixed seed)', () => {
  it('keeps two hot accounts on one day exact while crashed and haunted batches are held back behind other traffic, on skewed clocks', async () => {
    const base = testStackInfo();
    const queues = await createTestQueues(base, { visibilityTimeoutSeconds: 1, maxReceiveCount: 3 });
    // A table of its own: the run changes the shard count from its second day on, which the table then records for every later day.
    const table = uniqueId('hot');
    await ensureUsageTable(testClients(base).dynamodb, table);

    const report = await runChaos({ seed: 43, objects: 150, consumers: 2, profile: 'hot', holdIncrements: 100, historyCap: 4, hauntEvery: 25, info: { ...base, ...queues, table } });

    expect(report.drift).toEqual([]);
    expect(report.appliedTwice).toEqual([]);
    expect(report.hoursDrift).toEqual([]);
    expect(report.history.unresolved).toBe(0);
    expect(report.dlqAfterReplay).toBe(0);
    expect(report.lines.ledger).toEqual(report.lines.expected);
    expect(report.faults.crash).toBeGreaterThan(0);
    // About 33 increments per hot shard roll histories of 4 (12 after the raise): held-back and haunted redeliveries came
    // after their keys had left them, and tombstones answered (with the tombstone read disabled in the store this seed
    // applies 4 increments twice: checked 2026-11-27; with a cap of 8 and haunt-every 50 it did not notice).
    expect(report.history.drops).toBeGreaterThan(0);
    expect(report.faults.partlyApplied).toBeGreaterThan(0);
    expect(report.heldBack?.redeliveries).toBeGreaterThan(0);
    // The next day's usage spread over the scheduled 16 shards, the hot day's stayed on its 4.
    expect(report.shardChange?.shardsByDay['2026-09-01']).toBe(4);
    expect(report.shardChange?.shardsByDay['2026-09-02']).toBeGreaterThan(4);
    // Objects of the next day's first hour with lines of the hot day: one object's increments on 4 shards and on 16.
    expect(report.shardChange?.straddling).toBeGreaterThan(0);
    // The operators: a schedule moving the hot day refused, a raised cap, a queue-mode backfill over half-applied objects, an inline copy of the replay.
    expect(report.faults.scheduleRefused).toBe(1);
    expect(report.faults.capRaised).toBe(1);
    expect(report.faults.backfillOverHalfApplied).toBeGreaterThan(0);
    // Haunted objects died unseen on every receive (three in a row for one of them) and reached the DLQ, replayed two days later after hot traffic rolled their keys out.
    expect(report.haunted.objects).toBeGreaterThan(0);
    expect(report.haunted.mostDeaths).toBeGreaterThanOrEqual(3);
    // An inline backfill of the hot day ran beside the consumers, dying and rerun; the writers' clocks were minutes apart.
    expect(report.inlineBackfill.runs).toBeGreaterThan(0);
    expect(report.inlineBackfill.counted + report.inlineBackfill.alreadyCounted).toBeGreaterThan(0);
    expect(Math.max(...report.clocks.consumers) - Math.min(...report.clocks.consumers)).toBeGreaterThanOrEqual(4);
    // Their DLQ messages expired unreplayed; 55 days on, after a TTL sweep, a backfill counted them once.
    expect(report.expiry.expiredFromDlq).toBeGreaterThan(0);
    expect(report.expiry.horizonBackfillSent).toBeGreaterThan(0);
    expect(report.expiry.clockDays).toBeGreaterThan(55);
  }, TIME_LIMITS.chaosRun);
});
