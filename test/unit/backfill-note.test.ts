import type { BackfillReport } from '../../src/app/ingest/backfill';
import { describeBackfill } from '../../src/cli/commands/ingest/backfill';

/** A dry run that selected nothing: only the closing note matters here. */
const report: BackfillReport = {
  mode: 'queue',
  dryRun: true,
  listed: 0,
  selected: 0,
  unnamed: 0,
  alreadyCounted: 0,
  contributionsFilled: 0,
  sent: 0,
  counted: 0,
  applied: 0,
  duplicates: 0,
  failed: [],
};

describe('the note tally backfill ends with', () => {
  it('advises adding the day after the range, where its late lines are', () => {
    expect(describeBackfill(report, '2026-11-21', '2026-11-21')).toContain('late lines of 2026-11-21 sit in objects named 2026-11-22-00 (add that day to include them).');
  });

  it('never advises a day past the supported days (tryout: "add that day" for 2100-01-01, which every command refuses)', () => {
    const said = describeBackfill(report, '2099-12-01', '2099-12-31');

    expect(said).toContain('late lines of 2099-12-31 sit in objects named 2100-01-01-00, past the days Tally supports (2000-01-01..2099-12-31).');
    expect(said).not.toContain('add that day');
  });
});
