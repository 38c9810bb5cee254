import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = `${__dirname}/../..`;
const tally = (...args: string[]) => run('node', [`${root}/bin/tally.js`, ...args], { cwd: root });

describe('tally count', () => {
  it('prints one JSON object summed over all files, with the conservation counts', async () => {
    const { stdout } = await tally(
      'count',
      '--json',
      'fixtures/logs/E2FIXTURE.2026-11-21-00.v33.gz',
      'fixtures/logs/plain-v33.log',
      '--metrics',
      '[{"name":"authorization_requests","path":"/api/authorization/*"}]',
    );

    const report = JSON.parse(stdout);
    // Per file, an IP literal and a line of the CloudFront default domain only (cs(Host)): unattributed.
    expect(report.lines).toEqual({ read: 14, counted: 10, unattributed: 4, malformed: 0 });
    expect(report.usage).toContainEqual({ account: 'acme', day: '2026-11-21', metrics: { requests: 4, bytes: 1500, authorization_requests: 2 } });
    expect(report.usage).toContainEqual({ account: 'unattributed', day: '2026-11-21', metrics: { requests: 4, bytes: 2000, authorization_requests: 0 } });
  });

  it('sums a sampled real-time file and a legacy one side by side: estimates apart from exact counts', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'tally-count-rt-'));
    const file = join(folder, 'realtime.tsv');
    writeFileSync(file, '1763683200.123\t100\tacme.x.com\n1763683201.500\t50\tacme.x.com\n');
    try {
      const { stdout } = await tally('count', '--json', '--fields', 'realtime:timestamp,sc-bytes,x-host-header', '--sampling-rate', '25', file, 'fixtures/logs/E2FIXTURE.2026-11-21-00.v33.gz');

      const report = JSON.parse(stdout);
      expect(report.usage).toContainEqual({ account: 'acme', day: '2025-11-21', metrics: { requests: 0, bytes: 0, estimated_requests: 8, estimated_bytes: 600 } });
      expect(report.usage).toContainEqual({ account: 'acme', day: '2026-11-21', metrics: { requests: 2, bytes: 750, estimated_requests: 0, estimated_bytes: 0 } });
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('uses the resolver it is given', async () => {
    const { stdout } = await tally('count', '--json', '--resolver', 'key:fixtures/logs/{account}-mix.*', 'fixtures/logs/malformed-mix.log.gz');

    const report = JSON.parse(stdout);
    expect(report.usage.map((row: { account: string }) => row.account)).toEqual(['malformed']);
    expect(report.lines).toEqual({ read: 10, counted: 4, unattributed: 0, malformed: 6 });
  });

  it('prints a table and the line balance for people', async () => {
    const { stdout } = await tally('count', 'fixtures/logs/header-change.log.gz');

    expect(stdout).toMatch(/account\s+day\s+requests\s+bytes/);
    expect(stdout).toMatch(/globex\s+2026-11-21\s+1\s+30/);
    expect(stdout).toContain('lines read 4 = counted 4 + unattributed 0 + malformed 0');
  });

  it('exits non-zero naming a file that is not a log', async () => {
    const failure = tally('count', 'fixtures/logs/plain-v33.log', 'fixtures/logs/not-a-log.bin');

    await expect(failure).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('fixtures/logs/not-a-log.bin') });
  });

  it('speaks of the file, and of one data line in the singular', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tally-count-'));
    const file = join(dir, 'one-line.log');
    writeFileSync(file, '2026-11-21\t10:00:00\t5\n');
    try {
      const failure = await tally('count', file).then(
        () => undefined,
        (error: { stderr: string }) => error.stderr,
      );

      expect(failure).toContain(`file ${file}: not a CloudFront log: 1 data line and no #Fields header`);
      expect(failure).not.toMatch(/\bobject\b/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('exits non-zero naming a file that does not exist', async () => {
    await expect(tally('count', 'fixtures/logs/nope.gz')).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('fixtures/logs/nope.gz: no such file'),
    });
  });
});
