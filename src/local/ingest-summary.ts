import type { MessageResult } from '../app/ingest';
import { UNATTRIBUTED } from '../domain/account-id';
import { addLineCounts, emptyLineCounts } from '../domain/usage-tally';

/**
 * Running totals of what the local consumer did, for the console. Lines are summed
 * once per distinct object, however many times it was delivered.
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
  private readonly objects = new Set<string>();

  record(results: readonly MessageResult[]): void {
    for (const result of results) {
      this.notifications++;
      if (result.outcome === 'failed') this.failedMessages++;
      if (result.outcome === 'skipped') this.skippedMessages++;
      for (const object of result.objects) {
        if (object.status === 'already-done') {
          this.deliveriesSkippedByLedger++;
          continue;
        }
        this.deliveriesCounted++;
        this.appliedIncrements += object.applied;
        this.duplicateIncrements += object.duplicates;
        const id = `${object.object.bucket}/${object.object.key}#${object.object.etag}`;
        if (this.objects.has(id)) continue;
        this.objects.add(id);
        addLineCounts(this.lines, object.lines);
        for (const account of object.accounts) this.accounts.add(account);
      }
    }
  }

  get distinctObjects(): number {
    return this.objects.size;
  }

  describe(): string {
    const accounts = [...this.accounts].filter((account) => account !== UNATTRIBUTED).sort();
    return [
      `objects ${this.distinctObjects} from ${this.notifications} notifications; duplicates skipped: ` +
        `${this.deliveriesSkippedByLedger} redeliveries by the ledger, ${this.duplicateIncrements} increments by the rolling history`,
      `lines read ${this.lines.read} = counted ${this.lines.counted} + unattributed ${this.lines.unattributed} + malformed ${this.lines.malformed}`,
      `increments applied ${this.appliedIncrements}; messages skipped ${this.skippedMessages}, failed ${this.failedMessages}` +
        (accounts.length > 0 ? `; accounts ${accounts.length} (${accounts.join(', ')})` : ''),
    ].join('\n');
  }
}
