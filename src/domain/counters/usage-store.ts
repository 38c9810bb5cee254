import type { Contribution } from './contributions';
import type { HourSums } from '../hours';
import type { LogObjectRef } from './log-object';
import type { LineCounts } from '../logs/usage-tally';

/** One idempotent addition to a usage shard. */
export interface Increment {
  readonly account: string;
  readonly day: string;
  readonly shard: number;
  /** Idempotency key: the same key is applied at most once per shard history. */
  readonly key: Uint8Array;
  readonly metrics: Readonly<Record<string, number>>;
  /**
   * The same usage by UTC hour of `day` (hours.ts), added in the same conditional write:
   * each metric's hours sum to its amount in `metrics`. Absent on an increment recorded
   * before hours existed (an unresolved increment in an older ledger): it then adds to
   * the day only, and that day's hours no longer cover it (`hoursCoverDay`), so readers
   * say its hours are unknown until `tally backfill --hours` recomputes them.
   */
  readonly hours?: HourSums;
}

/**
 * `applied`: the counters moved. `duplicate`: the key was in its shard's history, or its
 * tombstone (or a pin an earlier version left, see `legacyPin`) was there; nothing
 * changed. `unresolved`: nothing can prove whether an earlier, unseen attempt applied
 * it (its shard dropped keys without tombstones, before this version of Tally), so it
 * was not applied: the object's ledger lists it for `tally reconcile --resolve`.
 */
export type IncrementOutcome = 'applied' | 'duplicate' | 'unresolved';

export interface ApplyOptions {
  /**
   * Proven mode: an attempt that died unseen may have applied this increment, no earlier
   * than this time. Applied only if the key is in neither its shard's history nor its
   * tombstones (see `droppedKeysItem`); they are read only when the history cannot
   * prove it alone (it dropped keys added since this time).
   */
  readonly since?: Date;
  /**
   * The pin attribute (see `pinAttribute`) an earlier version may have set on the shard
   * when it applied this increment, given for an object whose earlier attempts recorded
   * themselves (every pinning attempt did). Never written; read only before an
   * increment would be left unresolved, the one case where tombstones cannot answer.
   */
  readonly legacyPin?: string;
}

/**
 * What one attempt at an object left behind when it did not finish. `started` is
 * written before an attempt whose failure would next be seen from a new message or
 * none (the last receive before the DLQ, an inline replay or backfill): that retry,
 * a first receive, learns from it that an attempt came before, and since when. An
 * attempt that fails where Tally sees it writes `failed` with every key it knows is
 * applied. A `started` record that never became `failed` names an attempt that may
 * have died unseen: its keys are in the shard histories or have tombstones.
 */
export interface AttemptRecord {
  readonly id: string;
  readonly startedAt: string;
  readonly state: 'started' | 'failed';
  /** Keys known to be in their shard's history (applied now or found as duplicates). */
  readonly applied: readonly Uint8Array[];
  readonly reason?: string;
  /**
   * The earliest an attempt of this object may have started before this one, unseen:
   * its message's first receive (or an earlier record's bound). A retry from the DLQ,
   * a new message, learns it from here.
   */
  readonly since?: string;
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
  /** Increments nothing could prove applied or not: not applied, left for `tally reconcile --resolve`. */
  readonly unresolved?: readonly Increment[];
  readonly processedAt: string;
  /**
   * What the object contributed to each (account, day), whole: one row per increment,
   * whatever its outcome (see contributions.ts). Absent on an entry written before
   * contributions were recorded (`tally backfill` fills them in); read back, the rows
   * the ledger item itself holds.
   */
  readonly contributions?: readonly Contribution[];
  /** The format the object was read in (`standard`, `json`, `headerless`, `parquet`). */
  readonly format?: string;
  /** A few keys (hosts) the resolver could not attribute, for ingestion health. */
  readonly unattributedSamples?: readonly string[];
}

/** An object whose ledger lists unresolved increments, and how each was settled. */
export interface UnresolvedObject {
  readonly object: LogObjectRef;
  readonly increments: readonly Increment[];
  readonly recordedAt: string;
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
  /**
   * Adds `entry.contributions` (and its format) to the ledger of an object counted
   * before contributions were recorded; nothing else of the stored entry changes, and
   * one that has them stays as it is.
   */
  recordContributions(entry: LedgerEntry): Promise<void>;
}
