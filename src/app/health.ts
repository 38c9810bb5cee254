import { addDays, dayOf } from '../domain/days';
import { buildHealthReport, type HealthReport, type HistoryHorizon } from '../domain/health';
import type { DeadLetterProbe, LedgerActivityReader, ReconcileRecords } from './ports';

export interface HealthDeps {
  readonly activity: LedgerActivityReader;
  /** The dead-letter queue; absent when none is configured (the report says null). */
  readonly deadLetters?: DeadLetterProbe;
  readonly reconciles: ReconcileRecords;
  readonly history: HistoryHorizon;
  readonly clock?: () => Date;
}

/**
 * Reads ingestion health from what ingest and the operator commands already record:
 * the ledger's source-day index of today and yesterday (UTC), the DLQ's attributes,
 * the last reconcile record. No scan of the table.
 */
export async function readHealth(deps: HealthDeps): Promise<HealthReport> {
  const now = (deps.clock ?? (() => new Date()))();
  const today = dayOf(now);
  const days = [addDays(today, -1), today];
  const [entries, deadLetters, lastReconcile] = await Promise.all([
    Promise.all(days.map((day) => deps.activity.entriesOn(day))).then((perDay) => perDay.flat()),
    deps.deadLetters === undefined ? Promise.resolve(null) : deps.deadLetters.probe(now),
    deps.reconciles.last(),
  ]);
  return buildHealthReport({ now, days, entries, deadLetters, lastReconcile: lastReconcile ?? null, history: deps.history });
}
