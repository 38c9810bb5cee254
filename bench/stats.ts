/**
 * Rounds, medians and ratios. Every comparison runs its two sides alternately in the
 * same process (A B, B A, A B, ...) so that drift on a shared machine (other
 * processes, JIT warm-up, GC, a cooling CPU) falls on both sides alike.
 */

export interface Comparison<T = number> {
  readonly candidate: T[];
  readonly baseline: T[];
}

/** The middle value (mean of the two middle ones for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * Runs `candidate` and `baseline` `rounds` times each, swapping which goes first every
 * round; with `warmup`, each side runs once first and is not recorded.
 */
export async function alternate<T>(options: {
  rounds: number;
  warmup?: boolean;
  candidate: (round: number) => Promise<T>;
  baseline: (round: number) => Promise<T>;
  onRound?: (round: number, candidate: T, baseline: T) => void;
}): Promise<Comparison<T>> {
  if (options.warmup) {
    await options.candidate(-1);
    await options.baseline(-1);
  }
  const candidate: T[] = [];
  const baseline: T[] = [];
  for (let round = 0; round < options.rounds; round++) {
    let c: T;
    let b: T;
    if (round % 2 === 0) {
      c = await options.candidate(round);
      b = await options.baseline(round);
    } else {
      b = await options.baseline(round);
      c = await options.candidate(round);
    }
    candidate.push(c);
    baseline.push(b);
    options.onRound?.(round, c, b);
  }
  return { candidate, baseline };
}

/**
 * Runs several ways in rotation: in round r the way at index r (mod n) goes first, so
 * each way takes each position equally often over n rounds.
 */
export async function rotate<K extends string, T>(options: {
  rounds: number;
  ways: readonly K[];
  run: (way: K, round: number) => Promise<T>;
  onRound?: (round: number, results: Record<K, T>) => void;
}): Promise<Record<K, T[]>> {
  const results = Object.fromEntries(options.ways.map((way) => [way, [] as T[]])) as Record<K, T[]>;
  for (let round = 0; round < options.rounds; round++) {
    const order = options.ways.map((_, i) => options.ways[(i + round) % options.ways.length]!);
    const roundResults = {} as Record<K, T>;
    for (const way of order) {
      const result = await options.run(way, round);
      results[way].push(result);
      roundResults[way] = result;
    }
    options.onRound?.(round, roundResults);
  }
  return results;
}

/** `1.18×`, with the spread of the per-round ratios when there are several. */
export function ratioText(candidate: number, baseline: number): string {
  return `${(candidate / baseline).toFixed(2)}×`;
}

/** Per-round ratios candidate / baseline (rounds paired as they ran). */
export function roundRatios(comparison: Comparison): number[] {
  return comparison.candidate.map((c, i) => c / comparison.baseline[i]!);
}

/** `1,234,567` style. */
export function grouped(value: number, digits = 0): string {
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}
