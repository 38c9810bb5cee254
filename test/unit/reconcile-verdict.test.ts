import type { ReconcileReport } from '../../src/app/ingest/reconcile';
import { reconcileRecord } from '../../src/cli/commands/ingest/reconcile';
import { describeHealth } from '../../src/cli/commands/ingest/status';
import type { HealthReport } from '../../src/domain/reading/health';
import { reconcileVerdict } from '../../src/domain/reading/reconcile-verdict';

/**
 * tryout: a reconcile whose only fault was two poison objects (a truncated gzip) was shown
 * by the dashboard as "drift on 0 row(s)" and by tally status as "DRIFT on 0 row(s), 0
 * unreadable object(s)": the record did not keep the poison objects, so nothing said why
 * the run was not clean.
 */
describe('the last reconcile, as health shows it', () => {
  const report = (poison: number, drifting: number): ReconcileReport => ({
    from: '2026-11-21',
    to: '2026-11-21',
    objects: {
      read: 24,
      poison: Array.from({ length: poison }, (_, i) => ({ object: `s3://logs/cf/E2ODD.2026-11-21-0${i}.gz`, error: 'cannot gunzip: unexpected end of file' })),
      failed: [],
      notCounted: [],
    },
    accounts: 6,
    metrics: ['requests', 'bytes'],
    unchecked: [],
    rows: [],
    drifting: Array.from({ length: drifting }, () => ({}) as ReconcileReport['drifting'][number]),
  });

  it('keeps the poison objects in the record, and names them, not drift, as the reason the run was not clean', () => {
    const record = reconcileRecord(report(2, 0), new Date('2026-11-27T15:33:00Z'));

    expect(record).toMatchObject({ clean: false, drifting: 0, failed: 0, poison: 2 });
    expect(reconcileVerdict(record)).toBe('no drift; 2 poison object(s) not counted');
  });

  it('names drift, unreadable and poison objects and objects not counted yet, each when there is some', () => {
    expect(reconcileVerdict({ clean: true, drifting: 0, failed: 0, poison: 0, notCounted: 0 })).toBe('no drift');
    expect(reconcileVerdict({ clean: false, drifting: 3, failed: 1, poison: 0, notCounted: 2 })).toBe('drift on 3 row(s); 1 unreadable object(s); 2 object(s) not counted yet');
    // A record written before the poison count was kept: not clean with no drift and nothing unreadable.
    expect(reconcileVerdict({ clean: false, drifting: 0, failed: 0, notCounted: 0 })).toBe('no drift; object(s) not counted (poison)');
  });

  it('is the words tally status prints', () => {
    const health = {
      generatedAt: '2026-11-27T15:34:00.000Z',
      days: ['2026-11-26', '2026-11-27'],
      perDay: [],
      freshness: [],
      objects: { lastHour: 0, lastDay: 0 },
      lines: { read: 0, counted: 0, unattributed: 0, malformed: 0, unattributedRate: 0, malformedRate: 0 },
      missed: [],
      missedKeys: [],
      deadLetters: null,
      lastReconcile: reconcileRecord(report(2, 0), new Date('2026-11-27T15:33:00Z')),
      history: { shards: 4, cap: 15, keysPerAccountDay: 60, tombstoneDays: 400 },
    } satisfies HealthReport;

    expect(describeHealth(health)).toContain(
      'last reconcile: 2026-11-27T15:33:00.000Z over 2026-11-21..2026-11-21: no drift; 2 poison object(s) not counted; 24 object(s), 0 account-day(s)',
    );
  });
});
