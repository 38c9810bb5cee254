/**
 * What the writes of one invocation learned about their shards' histories, for the
 * ingest function's metrics: how long dropped keys had been kept (the horizon: a
 * redelivery later than that proves from tombstones, one Query per increment), how large
 * histories grew, how many keys were dropped (each after its tombstone), and how many
 * increments were left unresolved (alarmed: an operator settles them).
 */
export interface HistorySummary {
  /** Shortest time a dropped key had been kept, in seconds; absent when nothing was dropped. */
  readonly horizonSeconds?: number;
  /** Largest history written to. */
  readonly maxKeys: number;
  /** Keys dropped from histories, each after its tombstone was written. */
  readonly drops: number;
  /** Increments nothing could prove applied or not: not applied, listed for `tally reconcile --resolve`. */
  readonly unresolved: number;
}

/** Collects history observations between two publications. */
export class HistoryGauge {
  private horizon: number | undefined;
  private maxKeys = 0;
  private drops = 0;
  private unresolved = 0;

  observe(observation: { keys: number; droppedAgeSeconds?: number; dropped: boolean }): void {
    this.maxKeys = Math.max(this.maxKeys, observation.keys);
    if (observation.droppedAgeSeconds !== undefined) {
      this.horizon = Math.min(this.horizon ?? Infinity, observation.droppedAgeSeconds);
    }
    if (observation.dropped) this.drops++;
  }

  /** One increment was left unresolved. */
  unresolvedIncrement(): void {
    this.unresolved++;
  }

  /** The summary since the last drain, and a fresh start. */
  drain(): HistorySummary {
    const summary = { ...(this.horizon === undefined ? {} : { horizonSeconds: this.horizon }), maxKeys: this.maxKeys, drops: this.drops, unresolved: this.unresolved };
    this.horizon = undefined;
    this.maxKeys = 0;
    this.drops = 0;
    this.unresolved = 0;
    return summary;
  }
}
