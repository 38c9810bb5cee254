import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PUT_MAX_BYTES, PUT_PART_BYTES } from '../../src/app/ingest/put-logs';
import { captureIo, tallyCommand } from '../support/cli';

/**
 * tally put holds one part of a file at a time (PUT_PART_BYTES), so a file's size is
 * bounded only by what S3 takes in one multipart upload (10,000 parts), and a file over
 * that is refused before anything is read or any target opened (sparse files here:
 * nothing is written to disk).
 */
describe('tally put: a file is bounded in size by the parts S3 takes, a run is not', () => {
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
    expect(PUT_MAX_BYTES).toBe(10_000 * PUT_PART_BYTES);
    expect(io.stderr).toBe(
      `tally put: file huge.log: 80000 MiB (${PUT_MAX_BYTES + 1} bytes) is over put's limit of 80000 MiB (${PUT_MAX_BYTES} bytes: S3's 10000 parts of 8 MiB); nothing was put\n`,
    );
  });

  it('takes files that together pass 512 MiB (the limit while put held them in memory)', async () => {
    for (const name of ['a.log', 'b.log']) {
      writeFileSync(join(dir, name), '');
      truncateSync(join(dir, name), 256 * 1024 * 1024 + 1);
    }
    const io = captureIo();

    const code = await put(['a.log', 'b.log'], io, {}, dir);

    // Not refused for their size: put goes on to open its target (there is none here).
    expect(code).toBe(2);
    expect(io.stderr).toMatch(/^tally put: no target: /);
  });
});
