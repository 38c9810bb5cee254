import type { MessageResult, ObjectResult } from '../../src/app/ingest/ingest';
import { IngestSummary } from '../../src/local/pipeline/ingest-summary';

/** What ingest reports for one message naming `key`, counted now or found in the ledger. */
function message(key: string, status: ObjectResult['status']): MessageResult {
  const object: ObjectResult = {
    object: { bucket: 'tally-logs', key, etag: 'e', size: 1 },
    status,
    lines: status === 'counted' ? { read: 2, counted: 2, unattributed: 0, malformed: 0 } : { read: 0, counted: 0, unattributed: 0, malformed: 0 },
    increments: 1,
    applied: status === 'counted' ? 1 : 0,
    duplicates: 0,
    resumed: 0,
    unresolved: 0,
    accounts: status === 'counted' ? ['acme'] : [],
    malformedSamples: [],
  };
  return { messageId: key, outcome: 'processed', objects: [object] };
}

describe("npm start's ingest summary", () => {
  it('counts against what the demo wrote and sent, and plainly once more came than that', () => {
    const summary = new IngestSummary();
    summary.expect({ objects: 2, notifications: 3 });

    summary.record([message('a', 'counted'), message('b', 'already-done'), message('a', 'already-done')]);

    expect(summary.describe()).toContain('objects 2 of 2 written (1 counted now, 1 counted before) from 3 of 3 notifications sent; duplicates skipped: 2 deliveries by the ledger');

    // A log put after the demo: no longer "3 of 2".
    summary.record([message('c', 'counted')]);

    expect(summary.describe()).toContain('objects 3 (2 counted now, 1 counted before) from 4 notifications;');
    expect(summary.describe()).toContain('lines read 4 = counted 4 + unattributed 0 + malformed 0');
  });
});
