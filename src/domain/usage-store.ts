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

/** `applied`: the counters moved. `duplicate`: the key was already in the history; nothing changed. */
export type IncrementOutcome = 'applied' | 'duplicate';

/** The `#DONE` record of an object whose increments have all been applied. */
export interface LedgerEntry {
  readonly object: LogObjectRef;
  readonly lines: LineCounts;
  readonly increments: number;
  readonly applied: number;
  readonly duplicates: number;
  readonly processedAt: string;
}

/**
 * Where counters live. The DynamoDB adapter is the real one; the in-memory one keeps
 * the same semantics (bounded rolling history per shard) for domain tests.
 */
export interface UsageStore {
  applyIncrement(increment: Increment): Promise<IncrementOutcome>;
  /** Strongly consistent: a finished object is never counted twice. */
  findLedger(ref: LogObjectRef): Promise<LedgerEntry | undefined>;
  writeLedger(entry: LedgerEntry): Promise<void>;
}
