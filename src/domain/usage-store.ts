import type { LogObjectRef } from './log-object';
import type { LineCounts } from './usage-tally';

/** One idempotent addition to a usage shard. */
export interface Increment {
  readonly account: string;
  readonly day: string;
  readonly shard: number;
  /** Idempotency key: the same key is applied at most once per shard history. */
  readonly key: Uint8Array;
  readonly metrics: Readonly<Record<string, number>>;
}

/**
 * `applied`: the counters moved. `duplicate`: the key was already in the history;
 * nothing changed. `unverifiable`: a verified write found that the history no longer
 * reaches back to the unobserved attempt it had to rule out; nothing changed, and the
 * increment is reported for an operator instead of risking a double count.
 */
export type IncrementOutcome = 'applied' | 'duplicate' | 'unverifiable';

export interface ApplyOptions {
  /**
   * Apply only if the shard's history provably still holds every key added since this
   * time (an earlier attempt that started then may have applied the increment unseen).
   */
  readonly verifySince?: Date;
}

/** An increment left for an operator: applied by nobody now, maybe by a lost attempt. */
export interface UnverifiedIncrement {
  readonly account: string;
  readonly day: string;
  readonly metrics: Readonly<Record<string, number>>;
}

/**
 * What one attempt at an object left behind when it did not finish. `started` is
 * written before an attempt whose failure would not be retried within the history's
 * retention (the last receive before the DLQ, an inline replay or backfill); an attempt
 * that fails where Tally sees it writes `failed` with every key it knows is applied.
 * A `started` record that never became `failed` names an attempt that died unseen.
 */
export interface AttemptRecord {
  readonly id: string;
  readonly startedAt: string;
  readonly state: 'started' | 'failed';
  /** Keys known to be in their shard's history (applied now or found as duplicates). */
  readonly applied: readonly Uint8Array[];
  readonly reason?: string;
}

/** Everything the ledger knows of an object: finished, or the attempts that were not. */
export interface ObjectState {
  readonly done?: LedgerEntry;
  readonly attempts: readonly AttemptRecord[];
}

/** The `#DONE` record of an object whose increments have all been applied. */
export interface LedgerEntry {
  readonly object: LogObjectRef;
  readonly lines: LineCounts;
  readonly increments: number;
  readonly applied: number;
  readonly duplicates: number;
  /** Increments skipped because an earlier, failed attempt recorded them as applied. */
  readonly resumed?: number;
  /** Increments neither applied nor provably applied (see {@link IncrementOutcome}). */
  readonly unverified?: readonly UnverifiedIncrement[];
  readonly processedAt: string;
}

/**
 * Where counters live. The DynamoDB adapter is the real one; the in-memory one keeps
 * the same semantics (bounded rolling history per shard) for domain tests.
 */
export interface UsageStore {
  applyIncrement(increment: Increment, options?: ApplyOptions): Promise<IncrementOutcome>;
  /** Strongly consistent: a finished object is never counted twice. */
  findLedger(ref: LogObjectRef): Promise<LedgerEntry | undefined>;
  /** The ledger and any unfinished attempts, strongly consistent, in one read when the object is new or done. */
  findObject(ref: LogObjectRef): Promise<ObjectState>;
  /** Records (or overwrites) one attempt's progress; many keys may take several items. */
  recordAttempt(ref: LogObjectRef, attempt: AttemptRecord): Promise<void>;
  writeLedger(entry: LedgerEntry): Promise<void>;
}
