import type { CloseReport } from '../../src/app/billing/close-days';
import { describeClose } from '../../src/cli/commands/billing/close';

/** A closer report with no day to act on and `found` late markers, none cleared. */
function nothingToDo(found: number, dryRun: boolean): CloseReport {
  return { now: '2026-06-20T12:00:00.000Z', graceHours: 6, lastClosableDay: '2026-06-19', dryRun, days: [], markers: { found, cleared: 0, waiting: found }, failed: 0, skipped: [] };
}

describe('tally close summary', () => {
  it('says no late usage is waiting only when no late marker was found', () => {
    expect(describeClose(nothingToDo(0, false))).toContain('no late usage is waiting');
  });

  it('--dry-run with late markers whose usage is already revised: no claim that none is waiting, and no claim a marker is kept', () => {
    const text = describeClose(nothingToDo(4, true));

    expect(text).not.toContain('no late usage is waiting');
    expect(text).toContain('its revisions already hold the late usage its 4 late marker(s) point at');
    expect(text).not.toContain('kept for the next run');
    expect(text).toContain('late markers: 4 found; a dry run clears none');
  });

  it('a run that keeps unsettled markers says so, and does not say none is waiting', () => {
    const text = describeClose(nothingToDo(2, false));

    expect(text).not.toContain('no late usage is waiting');
    expect(text).toContain('late markers: 2 found, 0 cleared, 2 kept for the next run');
  });
});
