/**
 * How a long operator command reports its progress. The CLI draws a bar from it; tests
 * and library callers pass {@link noProgress} or record the calls.
 */
export interface ProgressReporter {
  /** The work is (now known to be) `total` items. */
  setTotal(total: number): void;
  /** `items` more are done; `counts` are running figures shown next to the bar. */
  advance(items: number, counts?: Readonly<Record<string, number>>): void;
}

export const noProgress: ProgressReporter = { setTotal() {}, advance() {} };

/**
 * Spaces out work to at most `perSecond` starts a second, across concurrent workers:
 * each call to the returned function resolves at the next free slot.
 */
export function pacer(perSecond: number | undefined, sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))): () => Promise<void> {
  if (perSecond === undefined || perSecond <= 0 || !Number.isFinite(perSecond)) return async () => undefined;
  const interval = 1000 / perSecond;
  let nextAt = 0;
  return async () => {
    const now = Date.now();
    const at = Math.max(now, nextAt);
    nextAt = at + interval;
    if (at > now) await sleep(at - now);
  };
}
