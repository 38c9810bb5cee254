import fc from 'fast-check';
import { earliestAttempt } from '../../src/app/ingest/ingest';
import type { AttemptRecord } from '../../src/domain/counters/usage-store';

const instant = fc.integer({ min: Date.parse('2000-01-01T00:00:00Z'), max: Date.parse('2099-12-31T00:00:00Z') });
const record = fc.record({ startedAt: instant, since: fc.option(instant, { nil: undefined }) }).map(
  ({ startedAt, since }): AttemptRecord => ({ id: 'a', startedAt: new Date(startedAt).toISOString(), state: 'started', applied: [], ...(since === undefined ? {} : { since: new Date(since).toISOString() }) }),
);

describe('earliestAttempt: the bound of every proof by age', () => {
  it('is never later than a record, the object or this attempt\'s own start, and is one of them', () => {
    fc.assert(
      fc.property(fc.array(record, { maxLength: 4 }), fc.option(instant, { nil: undefined }), instant, (attempts, modified, begun) => {
        const lastModified = modified === undefined ? undefined : new Date(modified);
        const bound = earliestAttempt(attempts, lastModified, new Date(begun));
        const known = [...attempts.flatMap((a) => [Date.parse(a.startedAt), a.since === undefined ? 0 : Date.parse(a.since)]), ...(modified === undefined ? [] : [modified])];
        if (known.length === 0) return bound === 0;
        return bound <= Math.min(...known) && bound <= begun && [...known, begun].includes(bound);
      }),
    );
  });

  it('takes this attempt\'s start when S3\'s clock runs ahead of the consumers\' (a twin may have begun at it)', () => {
    const begun = new Date('2026-11-21T08:00:00Z');
    expect(earliestAttempt([], new Date('2026-11-21T08:40:00Z'), begun)).toBe(begun.getTime());
  });

  it('stays at the epoch when nothing but this attempt is known: an earlier one may have gone unrecorded', () => {
    expect(earliestAttempt([], undefined, new Date('2026-11-21T08:00:00Z'))).toBe(0);
  });
});
