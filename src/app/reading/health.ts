import { addDays, dayOf } from '../../domain/days';
import { buildHealthReport, checkHealthDays, HEALTH_DAYS, type HealthReport, type HistoryHorizon } from '../../domain/reading/health';
import type { DeadLetterProbe, LedgerActivityReader, ReconcileRecords } from '../ports';

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
 * the ledger's source-day index of the last `days` days up to today (UTC; yesterday and
 * today unless asked, one query each), the DLQ's attributes, the last reconcile record.
 * No scan of the table.
 */
export async function readHealth(deps: HealthDeps, days = HEALTH_DAYS): Promise<HealthReport> {
  checkHealthDays(days);
  const now = (deps.clock ?? (() => new Date()))();
  const today = dayOf(now);
  const read = Array.from({ length: days }, (_, i) => addDays(today, i - days + 1));
  const [entries, deadLetters, lastReconcile] = await Promise.all([
    Promise.all(read.map(async (day) => (await deps.activity.entriesOn(day)).map((entry) => ({ ...entry, day })))).then((perDay) => perDay.flat()),
    deps.deadLetters === undefined ? Promise.resolve(null) : deps.deadLetters.probe(now),
    deps.reconciles.last(),
  ]);
  return buildHealthReport({ now, days: read, entries, deadLetters, lastReconcile: lastReconcile ?? null, history: deps.history });
}
