import { hash } from 'fast-sha256';

/**
 * The seeded fault schedule. Every decision is a pure function of the seed and of
 * what is being decided (fault kind, request content, how often that content was
 * seen), not of timing, so a seed names the same faults on every run.
 */
export class FaultSchedule {
  private readonly seen = new Map<string, number>();
  readonly fired = new Map<string, number>();

  constructor(
    readonly seed: number,
    private readonly rates: Readonly<Record<string, number>>,
  ) {}

  /** A number in [0, 1) fixed by the seed and `parts`. */
  chance(...parts: readonly (string | number)[]): number {
    const digest = hash(new TextEncoder().encode(JSON.stringify([this.seed, ...parts])));
    return new DataView(digest.buffer, digest.byteOffset).getUint32(0) / 4_294_967_296;
  }

  /**
   * Whether fault `kind` strikes the `occurrence`-th time `subject` comes by.
   * Counts occurrences per (kind, subject) itself and records what fired.
   */
  strikes(kind: string, subject: string): boolean {
    const id = `${kind}|${subject}`;
    const occurrence = (this.seen.get(id) ?? 0) + 1;
    this.seen.set(id, occurrence);
    const strikes = this.chance(kind, subject, occurrence) < (this.rates[kind] ?? 0);
    if (strikes) this.fired.set(kind, (this.fired.get(kind) ?? 0) + 1);
    return strikes;
  }

  record(kind: string, times = 1): void {
    this.fired.set(kind, (this.fired.get(kind) ?? 0) + times);
  }

  get total(): number {
    return [...this.fired.values()].reduce((sum, n) => sum + n, 0);
  }
}
