import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { HEAD_BYTES } from '../../src/app/ingest/put-logs';
import { readFilesToPut } from '../../src/cli/commands/ingest/put';
import { legacyLog, type Request } from '../support/log-formats';

/**
 * `tally put logs/*.gz` reads and counts every file before it puts any, and keeps of each
 * what names and puts it. It kept each file's first 64 KiB too: 2,000 files held 125 MB,
 * a month of one distribution's logs (tens of thousands of files) more than a GiB.
 */
describe('tally put holds little of each file before it puts them', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tally-put-memory-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('300 logs of over 64 KiB each: what is kept of them is far below their heads', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const at = Date.UTC(2026, 10, 21, 7, 0, 0);
    const requests: Request[] = Array.from({ length: 900 }, (_, i) => ({ at: at + i * 1000, host: 'acme.example.com', method: 'GET', stem: `/a/${i}`, status: 200, bytes: i, distribution: 'E2MEM' }));
    const text = legacyLog(requests);
    expect(text.length).toBeGreaterThan(HEAD_BYTES);
    const names = Array.from({ length: 300 }, (_, i) => `access-${i}.log`);
    for (const name of names) writeFileSync(join(dir, name), text);
    const config = { resolver: { kind: 'host-label' as const }, metricRules: [], logFormat: {} };

    gc();
    const before = process.memoryUsage().arrayBuffers;
    const files = await readFilesToPut(names, dir, config);
    gc();
    const held = process.memoryUsage().arrayBuffers - before;

    expect(files).toHaveLength(300);
    expect(files[0]!.firstHour).toEqual({ day: '2026-11-21', hour: 7 });
    // The heads alone were 300 x 64 KiB = 19.2 MB; a few bytes a file is what is left.
    expect(held).toBeLessThan((300 * HEAD_BYTES) / 10);
  });
});
