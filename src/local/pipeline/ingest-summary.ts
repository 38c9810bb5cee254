import type { MessageResult } from '../../app/ingest/ingest';
import { UNATTRIBUTED } from '../../domain/account-id';
import { addLineCounts, emptyLineCounts } from '../../domain/logs/usage-tally';

/** What was put in the bucket and the queue, for the summary to count against. */
export interface IngestExpectation {
  readonly objects: number;
  readonly notifications: number;
}

/**
 * Running totals of what the local consumer did, for the console. Lines are summed
 * once per distinct object, however many times it was delivered.
 *
 * The numbers add up: every object seen was counted now or by an earlier start (the
 * ledger had it), every delivery of an object was counted or skipped by the ledger, and
 * with an {@link expect}ation the summary says how many of the objects written and the
 * notifications sent it has seen so far.
 */
export class IngestSummary {
  notifications = 0;
  deliveriesCounted = 0;
  deliveriesSkippedByLedger = 0;
  duplicateIncrements = 0;
  appliedIncrements = 0;
  skippedMessages = 0;
  failedMessages = 0;
  readonly lines = emptyLineCounts();
  readonly accounts = new Set<string>();
  /** Objects counted by this process. */
  private readonly objects = new Set<string>();
  /** Every object a notification named and the consumer read or found in the ledger. */
  private readonly seen = new Set<string>();
  private expected: IngestExpectation | undefined;

  /** Sets what the summary counts against: the objects written and the notifications sent (the demo's). */
  expect(expected: IngestExpectation): void {
    this.expected = expected;
  }

  record(results: readonly MessageResult[]): void {
    for (const result of results) {
      this.notifications++;
      if (result.outcome === 'failed') this.failedMessages++;
      if (result.outcome === 'skipped') this.skippedMessages++;
      for (const object of result.objects) {
        const id = `${object.object.bucket}/${object.object.key}#${object.object.etag}`;
        this.seen.add(id);
        if (object.status === 'already-done') {
          this.deliveriesSkippedByLedger++;
          continue;
        }
        this.deliveriesCounted++;
        this.appliedIncrements += object.applied;
        this.duplicateIncrements += object.duplicates;
        if (this.objects.has(id)) continue;
        this.objects.add(id);
        addLineCounts(this.lines, object.lines);
        for (const account of object.accounts) this.accounts.add(account);
      }
    }
  }

  /** Distinct objects counted by this process. */
  get distinctObjects(): number {
    return this.objects.size;
  }

  /** Distinct objects seen, counted now or before. */
  get objectsSeen(): number {
    return this.seen.size;
  }

  describe(): string {
    const accounts = [...this.accounts].filter((account) => account !== UNATTRIBUTED).sort();
    // Counted against what the demo wrote and sent until more came (logs put since): then plainly.
    const expected =
      this.expected !== undefined && this.objectsSeen <= this.expected.objects && this.notifications <= this.expected.notifications ? this.expected : undefined;
    const ofObjects = expected === undefined ? '' : ` of ${expected.objects} written`;
    const notifications = expected === undefined ? `${this.notifications} notifications` : `${this.notifications} of ${expected.notifications} notifications sent`;
    return [
      `objects ${this.objectsSeen}${ofObjects} (${this.distinctObjects} counted now, ${this.objectsSeen - this.distinctObjects} counted before) ` +
        `from ${notifications}; duplicates skipped: ` +
        `${this.deliveriesSkippedByLedger} deliveries by the ledger, ${this.duplicateIncrements} increments by the rolling history`,
      `lines read ${this.lines.read} = counted ${this.lines.counted} + unattributed ${this.lines.unattributed} + malformed ${this.lines.malformed}`,
      `increments applied ${this.appliedIncrements}; messages skipped ${this.skippedMessages}, failed ${this.failedMessages}` +
        (accounts.length > 0 ? `; accounts ${accounts.length} (${accounts.join(', ')})` : ''),
    ].join('\n');
  }
}

/** Messages waiting and in flight on the ingest queue. */
export type QueueDepth = () => Promise<{ visible: number; inFlight: number }>;

/**
 * Tells the console what the local consumer has counted, and whether it is finished:
 * the summary is final only once the ingest queue holds nothing, waiting or in flight
 * (a message in flight is being counted, or failed and comes back). Before that, it
 * says that counting goes on, and prints the totals again as they change.
 */
export class IngestProgress {
  private drained = false;
  /** Notifications handled when the totals were last printed. */
  private printed = 0;

  constructor(
    private readonly summary: IngestSummary,
    private readonly depth: QueueDepth,
    private readonly print: (text: string) => void,
  ) {}

  /**
   * Waits up to `timeoutMs` for the queue to empty, then prints the summary: as the
   * final one, or as the totals so far with what the queue still holds. Resolves
   * whether the queue emptied.
   */
  async awaitDrained(timeoutMs: number, pollMs = 200): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const depth = await this.depth();
      if (depth.visible === 0 && depth.inFlight === 0) {
        this.drained = true;
        this.printSummary('tally: the ingest queue is empty; counted:');
        return true;
      }
      if (Date.now() >= deadline) {
        this.printSummary(
          `tally: still counting after ${Math.round(timeoutMs / 1000)} s (the queue holds ${depth.visible} message(s) waiting, ${depth.inFlight} in flight); ` +
            'counting goes on, and the totals are printed again as they change. So far:',
        );
        return false;
      }
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  }

  /**
   * One look (the console's ticker calls it every few seconds): prints the totals when
   * more notifications were handled, and says once when the queue has emptied.
   */
  async tick(): Promise<void> {
    const handled = this.summary.notifications;
    if (handled === this.printed && (this.drained || handled === 0)) return;
    const depth = await this.depth();
    const empty = depth.visible === 0 && depth.inFlight === 0;
    if (empty && !this.drained) {
      this.drained = true;
      this.printSummary('tally: the ingest queue is empty; counted:');
    } else if (handled !== this.printed) {
      this.drained = empty;
      this.printSummary(empty ? 'tally: the ingest queue is empty; counted:' : 'tally: counting goes on; so far:');
    }
  }

  private printSummary(heading: string): void {
    this.printed = this.summary.notifications;
    this.print(`${heading}\n${this.summary.describe()}`);
  }
}
