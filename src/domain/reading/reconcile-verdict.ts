/** What the last `tally reconcile` found, as its record in health holds it. */
export interface ReconcileOutcome {
  readonly clean: boolean;
  /** Rows (account, day, metric) whose counters differ from the recount. */
  readonly drifting: number;
  /** Objects that could not be read this time (retryable). */
  readonly failed: number;
  /** Objects no consumer can count (not a log, cannot gunzip). Absent from records written before it was kept. */
  readonly poison?: number;
  /** Objects with lines in the range that the ledger has not (fully) counted yet. */
  readonly notCounted: number;
}

/**
 * The last reconcile's verdict in a few words, for `tally status` and the dashboard:
 * `no drift`, or each reason the run was not clean. A run is not clean when rows drift
 * or when objects could not be counted (unreadable or poison); drift alone is named
 * drift, so a run whose only fault is a poison object never reads "drift on 0 rows".
 *
 * @example reconcileVerdict({ clean: false, drifting: 0, failed: 0, poison: 2, notCounted: 0 })
 *          // 'no drift; 2 poison object(s) not counted'
 */
export function reconcileVerdict(record: ReconcileOutcome): string {
  const parts = [record.drifting > 0 ? `drift on ${record.drifting} row(s)` : 'no drift'];
  if (record.failed > 0) parts.push(`${record.failed} unreadable object(s)`);
  if ((record.poison ?? 0) > 0) parts.push(`${record.poison} poison object(s) not counted`);
  if (!record.clean && record.drifting === 0 && record.failed === 0 && record.poison === undefined) parts.push('object(s) not counted (poison)');
  if (record.notCounted > 0) parts.push(`${record.notCounted} object(s) not counted yet`);
  return parts.join('; ');
}
