import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { captureIo, REPO_ROOT, tallyCommand } from '../support/cli';

/**
 * A flag given an empty value (`--table "$TABLE"` with TABLE unset) is a mistake the
 * operator must hear about: taken as not given, it silently fell back to the environment
 * or the local stack (tryout: `tally replay --queue ""` drained the local stack's DLQ).
 */
describe('a flag given an empty value', () => {
  const nowhere = () => mkdtempSync(join(tmpdir(), 'tally-empty-flag-'));

  it.each([
    ['status', ['--table', '']],
    ['status', ['--queue-url', '']],
    ['status', ['--dlq-url', '']],
    ['status', ['--bucket', '']],
    ['status', ['--region', '']],
    ['status', ['--endpoint', '']],
    ['explain', ['--account', 'acme', '--day', '2026-11-21', '--stack', '']],
    ['reconcile', ['--from', '2026-11-21', '--to', '2026-11-21', '--resolver', '']],
  ])('tally %s %j exits 2 naming the flag, before any target is chosen', async (command, argv) => {
    const io = captureIo();

    const code = await tallyCommand(command)(argv, io, { TALLY_TABLE: 'prod-usage' }, nowhere());

    expect(code).toBe(2);
    expect(io.stderr).toBe(`tally ${command}: ${argv.at(-2)} is empty: give it a value, or leave it out to use the environment or the local stack\n`);
    expect(io.stdout).toBe('');
  });

  it('tally replay --queue "" exits 2 naming --queue, draining nothing', async () => {
    const io = captureIo();

    const code = await tallyCommand('replay')(['--queue', ''], io, {}, nowhere());

    expect(code).toBe(2);
    expect(io.stderr).toBe('tally replay: --queue is empty: give the dead-letter queue URL, or leave it out to use TALLY_DLQ_URL or the local stack\n');
  });

  it.each([['--fields'], ['--resolver'], ['--sampling-rate']])('tally count %s "" exits 2 naming the flag, counting nothing', async (flag) => {
    const io = captureIo();

    const code = await tallyCommand('count')([flag, '', 'fixtures/logs/plain-v33.log'], io, {}, REPO_ROOT);

    expect(code).toBe(2);
    expect(io.stderr).toBe(`tally count: ${flag} is empty: give it a value, or leave it out to use the environment or the local stack's settings\n`);
    expect(io.stdout).toBe('');
  });

  it('--metrics "" still means no metric rules', async () => {
    const io = captureIo();

    const code = await tallyCommand('count')(['--metrics', '', '--json', 'fixtures/logs/plain-v33.log'], io, {}, REPO_ROOT);

    expect(code).toBe(0);
    expect(JSON.parse(io.stdout).lines).toEqual({ read: 7, counted: 5, unattributed: 2, malformed: 0 });
  });
});
