import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DEMO_METRICS } from '../../src/local/demo/demo';
import { acquireStackLock, STACK_LOCK_FILE } from '../../src/local/lifecycle/stack-lock';
import { captureIo, tallyCommand } from '../support/cli';

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

  it('refuses a bad --tz or --granularity with exit 2, naming the flag, before reading any file', async () => {
    for (const [args, message] of [
      [['--tz', 'Mars/Olympus'], '--tz: unknown time zone "Mars/Olympus"'],
      [['--tz', 'x'.repeat(200)], '--tz must be an IANA time zone'],
      [['--granularity', 'minute'], '--granularity must be "day" or "hour", got "minute"'],
    ] as const) {
      await expect(tally('count', ...args, 'fixtures/logs/no-such-file.log')).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining(message) });
    }
  });

  it('refuses a zone of sub-hour offsets with exit 2, saying why', async () => {
    await expect(tally('count', '--tz', 'Asia/Kathmandu', 'fixtures/logs/plain-v33.log')).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('Asia/Kathmandu is +05:45 from UTC'),
    });
  });

  it('prints the hours and the days of a time zone: two UTC days of the fixture are one evening in New York', async () => {
    const { stdout } = await tally('count', '--json', '--granularity', 'hour', '--tz', 'America/New_York', 'fixtures/logs/E2FIXTURE.2026-11-21-00.v33.gz');

    const report = JSON.parse(stdout);
    expect(report.timeZone).toBe('America/New_York');
    expect(report.usage).toContainEqual({ account: 'acme', day: '2026-11-20', metrics: { requests: 3, bytes: 1750 } });
    expect(report.hours.filter((row: { account: string }) => row.account === 'acme')).toEqual([
      { account: 'acme', day: '2026-11-20', start: '2026-11-20T18:00:00-05:00', metrics: { requests: 1, bytes: 1000 } },
      { account: 'acme', day: '2026-11-20', start: '2026-11-20T19:00:00-05:00', metrics: { requests: 2, bytes: 750 } },
    ]);
    expect(report.timeless).toEqual([]);
  });

  it("tells apart the two 01:00 hours of New York's fall-back day", async () => {
    const folder = mkdtempSync(join(tmpdir(), 'tally-count-dst-'));
    const file = join(folder, 'fall-back.log');
    // The fixture's header and first line, at 05:30 and 06:30 UTC on 2026-11-01: 01:30 EDT, then 01:30 EST.
    const [version, fields, line] = readFileSync(`${root}/fixtures/logs/plain-v33.log`, 'utf8').split('\n');
    const at = (time: string) => line!.replace(/^2026-11-20\t23:59:58/, `2026-11-01\t${time}`).replace('d111111abcdef8.cloudfront.net', 'acme.api.example.com');
    writeFileSync(file, [version, fields, at('05:30:00'), at('06:30:00'), at('06:31:00'), ''].join('\n'));
    try {
      const { stdout } = await tally('count', '--granularity', 'hour', '--tz', 'America/New_York', file);

      expect(stdout).toMatch(/acme\s+2026-11-01\s+01:00-04:00\s+1\s+1000/);
      expect(stdout).toMatch(/acme\s+2026-11-01\s+01:00-05:00\s+2\s+2000/);
      expect(stdout).toMatch(/acme\s+2026-11-01\s+3\s+3000/);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
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

  it('says a directory is no log file, naming it', async () => {
    // tryout: "file fixtures: EISDIR: illegal operation on a directory, read".
    await expect(tally('count', 'fixtures')).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('tally count: file fixtures: is a folder, not a log file\n') });
  });

  it('exits 2 naming a file that does not exist, as tally put does: a wrong name, not a bad log (exit 1)', async () => {
    await expect(tally('count', 'fixtures/logs/nope.gz')).rejects.toMatchObject({
      code: 2,
      stderr: 'tally count: file fixtures/logs/nope.gz: no such file\n',
    });
  });

  it('names the hosts it could not attribute, with the reason', async () => {
    const { stdout } = await tally('count', 'fixtures/logs/E2FIXTURE.2026-11-21-00.v24.gz');

    expect(stdout).toContain('hosts of no account: d111111abcdef8.cloudfront.net (the CloudFront default domain: it names a distribution, not an account), 203.0.113.7 (an IP address, not a host name)');
  });
});

describe('tally count: the metric rules it applies, and where they come from', () => {
  const count = tallyCommand('count');
  const fixture = join(root, 'fixtures/logs/E2FIXTURE.2026-11-21-00.v24.gz');
  let cwd: string;
  beforeEach(() => {
    cwd = mkdtempSync(join(tmpdir(), 'tally-count-settings-'));
  });
  afterEach(() => rmSync(cwd, { recursive: true, force: true }));
  /** A stack description as `npm start` writes it, its consumer counting with the demo's rules. */
  const writeStackInfo = () => {
    mkdirSync(join(cwd, '.tally'), { recursive: true });
    writeFileSync(join(cwd, '.tally', 'local.json'), JSON.stringify({ table: 'tally-usage', endpoints: { dynamodb: 'http://127.0.0.1:1' }, consumer: { TALLY_METRICS: DEMO_METRICS } }));
  };

  it('says that it applies none, and why, when nothing sets any', async () => {
    const io = captureIo();

    const code = await count([fixture], io, {}, cwd);

    expect(code).toBe(0);
    expect(io.stdout.split('\n').slice(0, 2)).toEqual([
      'resolver host-label (from the default)',
      'metric rules (from the default: no --metrics or TALLY_METRICS, and no local stack running here): none: requests and bytes only',
    ]);
  });

  it('counts with the rules of the local stack running here, and says so', async () => {
    writeStackInfo();
    // This process holds the folder's lock, as npm start does: the stack runs.
    const lock = acquireStackLock(join(cwd, STACK_LOCK_FILE));
    const io = captureIo();
    try {
      await count([fixture], io, {}, cwd);
    } finally {
      lock.release();
    }

    expect(io.stdout).toContain('metric rules (from the running local stack (.tally/local.json)): authorization_requests = requests with path /api/authorization/*\n');
    expect(io.stdout).toMatch(/account\s+day\s+requests\s+bytes\s+authorization_requests/);
    expect(io.stdout).toMatch(/acme\s+2026-11-21\s+2\s+750\s+1/);
  });

  it('says when a flag makes it count otherwise than the running stack', async () => {
    writeStackInfo();
    const lock = acquireStackLock(join(cwd, STACK_LOCK_FILE));
    const io = captureIo();
    try {
      await count([fixture, '--metrics', '[]', '--json'], io, {}, cwd);
    } finally {
      lock.release();
    }

    // --json keeps stdout for the JSON; the settings go to stderr.
    expect(JSON.parse(io.stdout).usage[0].metrics).toEqual({ requests: 1, bytes: 1000 });
    expect(io.stderr).toContain('metric rules (from --metrics): none: requests and bytes only');
    expect(io.stderr).toContain(
      'note: the running local stack (.tally/local.json) counts with other metric rules (authorization_requests = requests with path /api/authorization/*): its counts differ from these',
    );
  });

  it('does not take the rules of a stack that is not running, and says so', async () => {
    writeStackInfo();
    const io = captureIo();

    await count([fixture], io, {}, cwd);

    expect(io.stdout).toContain('metric rules (from the default: no --metrics or TALLY_METRICS, and no local stack running here): none');
    expect(io.stdout).toContain('note: .tally/local.json was left by a local stack that is not running: its settings are not used');
  });

  it('takes TALLY_METRICS from the environment before the running stack', async () => {
    const io = captureIo();

    await count([fixture], io, { TALLY_METRICS: '[{"name":"posts","method":"POST","status":"2xx"}]' }, cwd);

    expect(io.stdout).toContain('metric rules (from TALLY_METRICS): posts = requests with method POST, status 2xx\n');
    expect(io.stdout).toMatch(/globex\s+2026-11-21\s+2\s+2000\s+1/);
  });
});
