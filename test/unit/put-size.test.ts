import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PUT_MAX_BYTES } from '../../src/cli/commands/ingest/put';
import { captureIo, tallyCommand } from '../support/cli';

/**
 * tally put holds every file it puts in memory until all are counted and put: their
 * sizes are bounded, and a file over the bound is refused before anything is read or
 * any target opened (sparse files here: nothing is written to disk).
 */
describe('tally put: the files of one run are bounded in size', () => {
  const put = tallyCommand('put');
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tally-put-size-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a file over the limit, naming it, its size and the limit (exit 2)', async () => {
    writeFileSync(join(dir, 'small.log'), '#Fields: date time sc-bytes x-host-header\n');
    writeFileSync(join(dir, 'huge.log'), '');
    truncateSync(join(dir, 'huge.log'), PUT_MAX_BYTES + 1);
    const io = captureIo();

    const code = await put(['small.log', 'huge.log'], io, {}, dir);

    expect(code).toBe(2);
    expect(io.stdout).toBe('');
    expect(io.stderr).toBe(
      `tally put: file huge.log: 512 MiB (${PUT_MAX_BYTES + 1} bytes) is over put's limit of 512 MiB (${PUT_MAX_BYTES} bytes) for the files of one run, which it holds in memory; nothing was put\n`,
    );
  });

  it('refuses files that together pass the limit, naming the one that does', async () => {
    for (const name of ['a.log', 'b.log']) {
      writeFileSync(join(dir, name), '');
      truncateSync(join(dir, name), PUT_MAX_BYTES / 2 + 1);
    }
    const io = captureIo();

    const code = await put(['a.log', 'b.log'], io, {}, dir);

    expect(code).toBe(2);
    expect(io.stderr).toBe(
      `tally put: file b.log: with the files before it, ${PUT_MAX_BYTES + 2} bytes, over put's limit of 512 MiB (${PUT_MAX_BYTES} bytes) for the files of one run, which it holds in memory: put them in several runs; nothing was put\n`,
    );
  });
});
