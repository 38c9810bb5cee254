import type { MessageResult } from '../app/ingest';
import { UNATTRIBUTED } from '../domain/account-id';
import { addLineCounts, emptyLineCounts } from '../domain/usage-tally';

/** Running totals of what the local consumer did, for the console. */
export class IngestSummary {
  objectsCounted = 0;
  objectsAlreadyDone = 0;
  duplicateIncrements = 0;
  appliedIncrements = 0;
  skippedMessages = 0;
  failedMessages = 0;
  readonly lines = emptyLineCounts();
  readonly accounts = new Set<string>();

  record(results: readonly MessageResult[]): void {
    for (const result of results) {
      if (result.outcome === 'failed') this.failedMessages++;
      if (result.outcome === 'skipped') this.skippedMessages++;
      for (const object of result.objects) {
        if (object.status === 'already-done') {
          this.objectsAlreadyDone++;
          continue;
        }
        this.objectsCounted++;
        this.appliedIncrements += object.applied;
        this.duplicateIncrements += object.duplicates;
        addLineCounts(this.lines, object.lines);
        for (const account of object.accounts) this.accounts.add(account);
      }
    }
  }

  describe(): string {
    const accounts = [...this.accounts].filter((account) => account !== UNATTRIBUTED);
    return [
      `objects counted ${this.objectsCounted}, duplicates skipped ${this.objectsAlreadyDone} objects + ${this.duplicateIncrements} increments`,
      `lines read ${this.lines.read} = counted ${this.lines.counted} + unattributed ${this.lines.unattributed} + malformed ${this.lines.malformed}`,
      `increments applied ${this.appliedIncrements}; messages skipped ${this.skippedMessages}, failed ${this.failedMessages}` +
        (accounts.length > 0 ? `; accounts ${accounts.length} (${accounts.sort().join(', ')})` : ''),
    ].join('\n');
  }
}
