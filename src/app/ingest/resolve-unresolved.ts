import { isSupportedDay, skippedRecord } from '../../domain/days';
import { keyHex } from '../../domain/counters/idempotency-key';
import { describeObject } from '../../domain/counters/log-object';
import type { Increment, UnresolvedObject } from '../../domain/counters/usage-store';
import { reconcileUsage, type ReconcileOptions } from './reconcile';
import type { UnresolvedLedger, UsageStore } from '../ports';

/** How one unresolved increment was settled, or why it was not. */
export interface Settlement {
  readonly object: string;
  readonly account: string;
  readonly day: string;
  readonly metrics: Readonly<Record<string, number>>;
  /** `applied` now; `already-counted` by the attempt that died; `left`: the recount could not tell. */
  readonly outcome: 'applied' | 'already-counted' | 'left';
  readonly reason?: string;
}

export interface ResolveOptions extends Omit<ReconcileOptions, 'from' | 'to' | 'account'> {
  readonly unresolved: UnresolvedLedger;
  readonly store: Pick<UsageStore, 'applyIncrement'>;
}

/** Unresolved increments of one account-day tried as every subset up to this many; more is settled only when all or none are missing. */
const MAX_SUBSET_SEARCH = 16;

/**
 * Settles every unresolved increment exactly, from the raw logs (`tally reconcile
 * --resolve`). For each account-day that has some, the day is recounted from S3 with
 * the ingest parser and compared with what the counters serve: the shortfall is what
 * was never applied. If exactly one set of the day's unresolved increments adds up to
 * it, metric by metric, those are applied (with their own keys) and the rest were
 * counted by the attempt that died; otherwise they are left, with the reason. A day
 * whose recount is incomplete (an object unread, or not counted yet) is left too.
 * Running it again is safe: what was applied shows in the next recount.
 */
export async function resolveUnresolved(options: ResolveOptions): Promise<Settlement[]> {
  const objects = await options.unresolved.listUnresolved();
  const byAccountDay = new Map<string, { object: UnresolvedObject; increment: Increment }[]>();
  for (const object of objects) {
    for (const increment of object.increments) {
      const id = `${increment.account}|${increment.day}`;
      byAccountDay.set(id, [...(byAccountDay.get(id) ?? []), { object, increment }]);
    }
  }
  const settlements: Settlement[] = [];
  const outcomes = new Map<string, { increment: Increment; outcome: 'applied' | 'already-counted' }[]>();
  for (const group of byAccountDay.values()) {
    const { account, day } = group[0]!.increment;
    if (!isSupportedDay(day)) {
      // No recount can name such a day: left, with why, and the others go on.
      for (const { object, increment } of group) {
        const record = `the unresolved increment of ${account} on ${day} (${describeObject(object.object)})`;
        settlements.push({ object: describeObject(object.object), account, day, metrics: increment.metrics, outcome: 'left', reason: skippedRecord(record, day) });
      }
      continue;
    }
    const report = await reconcileUsage({ ...options, from: day, to: day, account });
    const incomplete = report.objects.failed.length + report.objects.notCounted.length;
    const shortfall = Object.fromEntries(report.rows.filter((row) => row.account === account && row.day === day).map((row) => [row.metric, -row.drift]));
    const missing = incomplete > 0 ? undefined : uniqueSubset(group.map((entry) => entry.increment), shortfall);
    for (const [i, { object, increment }] of group.entries()) {
      const base = { object: describeObject(object.object), account, day, metrics: increment.metrics };
      if (missing === undefined) {
        settlements.push({
          ...base,
          outcome: 'left',
          reason:
            incomplete > 0
              ? `the recount of ${day} is incomplete (${incomplete} object(s) unread or not counted yet): rerun when they are`
              : `no single set of the day's unresolved increments adds up to its shortfall (${JSON.stringify(shortfall)}): other drift on ${account} ${day}; compare with tally reconcile`,
        });
        continue;
      }
      const outcome = missing.has(i) ? 'applied' : 'already-counted';
      // Its key is in no history (that is why it was unresolved): a plain write applies it once.
      if (outcome === 'applied') await options.store.applyIncrement(increment);
      settlements.push({ ...base, outcome });
      const id = describeObject(object.object);
      outcomes.set(id, [...(outcomes.get(id) ?? []), { increment, outcome }]);
    }
  }
  for (const object of objects) {
    const settled = outcomes.get(describeObject(object.object)) ?? [];
    const all = new Set(object.increments.map((increment) => keyHex(increment.key)));
    if (settled.length === all.size) await options.unresolved.settleUnresolved(object.object, settled);
  }
  return settlements;
}

/**
 * The one subset of `increments` (as indexes) whose metrics add up to `shortfall`
 * exactly, every metric; undefined when none or several do.
 */
export function uniqueSubset(increments: readonly Increment[], shortfall: Readonly<Record<string, number>>): Set<number> | undefined {
  const metrics = [...new Set([...Object.keys(shortfall), ...increments.flatMap((increment) => Object.keys(increment.metrics))])];
  const sums = (chosen: (i: number) => boolean) =>
    metrics.every((metric) => increments.reduce((sum, increment, i) => sum + (chosen(i) ? (increment.metrics[metric] ?? 0) : 0), 0) === (shortfall[metric] ?? 0));
  if (increments.length > MAX_SUBSET_SEARCH) {
    if (sums(() => false)) return new Set();
    return sums(() => true) ? new Set(increments.map((_, i) => i)) : undefined;
  }
  let found: Set<number> | undefined;
  for (let mask = 0; mask < 2 ** increments.length; mask++) {
    if (!sums((i) => (mask & (1 << i)) !== 0)) continue;
    if (found !== undefined) return undefined;
    found = new Set(increments.map((_, i) => i).filter((i) => (mask & (1 << i)) !== 0));
  }
  return found;
}
