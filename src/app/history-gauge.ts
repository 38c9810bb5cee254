/**
 * What the writes of one invocation learned about their shards' histories, for the
 * `HistoryHorizonSeconds` metric and its alarm: how long the dropped keys had been
 * kept (the horizon: a redelivery later than that could meet a forgotten key), how
 * large histories grew, and how many keys were dropped before the retention ran out.
 */
export interface HistorySummary {
  /** Shortest time a dropped key had been kept, in seconds; absent when nothing was dropped. */
  readonly horizonSeconds?: number;
  /** Largest history written to. */
  readonly maxKeys: number;
  /** Keys dropped younger than the retention (the history was at its maximum). */
  readonly forcedDrops: number;
}

/** Collects history observations between two publications. */
export class HistoryGauge {
  private horizon: number | undefined;
  private maxKeys = 0;
  private forcedDrops = 0;

  observe(observation: { keys: number; droppedAgeSeconds?: number; forced: boolean }): void {
    this.maxKeys = Math.max(this.maxKeys, observation.keys);
    if (observation.droppedAgeSeconds !== undefined) {
      this.horizon = Math.min(this.horizon ?? Infinity, observation.droppedAgeSeconds);
    }
    if (observation.forced) this.forcedDrops++;
  }

  /** The summary since the last drain, and a fresh start. */
  drain(): HistorySummary {
    const summary = { ...(this.horizon === undefined ? {} : { horizonSeconds: this.horizon }), maxKeys: this.maxKeys, forcedDrops: this.forcedDrops };
    this.horizon = undefined;
    this.maxKeys = 0;
    this.forcedDrops = 0;
    return summary;
  }
}
