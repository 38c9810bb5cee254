import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { addDays, dayOf } from '../../src/domain/days';
import { DEMO_ACCOUNTS, planDemoLogs } from '../../src/local/demo/demo';
import { emptyExpected, mergeExpected } from '../../src/local/demo/log-generator';
import { localClients, type LocalStackInfo } from '../../src/local/stack';
import { mintToken } from '../../src/adapters/http/jwt-tokens';
import { LOCAL_JWT_SECRET_FILE } from '../../src/local/lifecycle/jwt-secret';
import { monthOf } from '../../src/domain/billing/quota';
import { nonZero, readCounters } from '../support/stack';
import { TIME_LIMITS } from '../support/time-limits';

const root = join(__dirname, '..', '..');

/** Starts `node dist/local.js` (what `npm start` runs after building) in `cwd`; resolves once it is running. */
function startLocal(cwd: string): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn('node', [join(root, 'dist', 'local.js')], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  return new Promise((resolve, reject) => {
    // Both starts must fit in the test's limit; the first also counts the demo's 30 days.
    const timer = setTimeout(() => reject(new Error(`npm start did not get ready:\n${output}`)), TIME_LIMITS.npmStartDemoTest / 2);
    child.stdout!.on('data', () => {
      if (output.includes('tally: running')) {
        clearTimeout(timer);
        resolve({ child, output: () => output });
      }
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}:\n${output}`)));
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** The keys of the log objects in the local stack's bucket. */
async function writtenKeys(info: LocalStackInfo): Promise<Set<string>> {
  const { s3 } = localClients(info);
  const keys = new Set<string>();
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: info.bucket, Prefix: info.logPrefix, ContinuationToken: token }));
    for (const object of page.Contents ?? []) keys.add(object.Key!);
    token = page.NextContinuationToken;
  } while (token !== undefined);
  s3.destroy();
  return keys;
}

describe('npm start', () => {
  it('brings the pipeline up with 30 days of demo data counted exactly, and keeps the counts across a restart', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'tally-start-'));
    const before = new Date();

    const first = await startLocal(cwd);
    const info = JSON.parse(readFileSync(join(cwd, '.tally', 'local.json'), 'utf8')) as LocalStackInfo;
    const now = new Date();
    // The demo plans its logs at its own moment between `before` and `now`, and a planned hour (0, 6, 12, 18)
    // or a day may begin in between: what it must count is what either moment plans and the demo wrote.
    const written = await writtenKeys(info);
    const planned = new Map([...planDemoLogs(before, 'cloudfront/'), ...planDemoLogs(now, 'cloudfront/')].map((log) => [log.key, log]));
    const expected = emptyExpected();
    for (const log of planned.values()) if (written.has(log.key)) mergeExpected(expected, log.expected);
    const countersOf = async (stackInfo: LocalStackInfo) => {
      const { dynamodb } = localClients(stackInfo);
      const all: Record<string, Record<string, Record<string, number>>> = {};
      for (const { id } of DEMO_ACCOUNTS) all[id] = await readCounters(dynamodb, stackInfo.table, id, addDays(dayOf(now), -31), dayOf(now));
      dynamodb.destroy();
      return all;
    };
    const counted = await countersOf(info);
    // The demo's quota fired its 80% level; the API (and so the dashboard) shows it.
    const token = await mintToken(readFileSync(join(cwd, LOCAL_JWT_SECRET_FILE), 'utf8').trim(), { accounts: ['acme'], ttlSeconds: 300 });
    const quota = (await (await fetch(`${info.api}/v1/accounts/acme/quota`, { headers: { authorization: `Bearer ${token}` } })).json()) as { thresholds: { metric: string; level: number }[] };
    // Explain: every demo account-day with usage is traced to its log objects, exactly.
    const secret = readFileSync(join(cwd, LOCAL_JWT_SECRET_FILE), 'utf8').trim();
    const demoToken = await mintToken(secret, { accounts: DEMO_ACCOUNTS.map(({ id }) => id), ttlSeconds: 300 });
    const explained: { account: string; day: string; complete: boolean; sources: Record<string, number>; metrics: Record<string, number> }[] = [];
    for (const { id } of DEMO_ACCOUNTS) {
      for (const day of Object.keys(counted[id]!)) {
        const body = (await (await fetch(`${info.api}/v1/accounts/${id}/days/${day}/explain`, { headers: { authorization: `Bearer ${demoToken}` } })).json()) as {
          complete: boolean;
          sourceTotals: Record<string, number>;
          metrics: Record<string, number>;
        };
        explained.push({ account: id, day, complete: body.complete, sources: body.sourceTotals, metrics: body.metrics });
      }
    }
    const admin = await mintToken(secret, { admin: true, ttlSeconds: 300 });
    const health = (await (await fetch(`${info.api}/v1/health`, { headers: { authorization: `Bearer ${admin}` } })).json()) as { objects: { lastDay: number }; deadLetters: { depth: number } };
    const { s3 } = localClients(info);
    const exported = (await s3.send(new ListObjectsV2Command({ Bucket: info.bucket, Prefix: info.exportPrefix }))).Contents ?? [];
    s3.destroy();
    await stop(first.child);
    const second = await startLocal(cwd);
    const afterRestart = await countersOf(JSON.parse(readFileSync(join(cwd, '.tally', 'local.json'), 'utf8')));
    await stop(second.child);

    expect(Object.keys(info).sort()).toEqual(
      expect.arrayContaining(['region', 'endpoints', 'bucket', 'logPrefix', 'queueUrl', 'dlqUrl', 'table']),
    );
    for (const { id } of DEMO_ACCOUNTS) {
      for (const [key, metrics] of expected.usage) {
        const [account, day] = key.split('|');
        if (account === id) expect({ account, day, ...nonZero(counted[id]![day!]) }).toEqual({ account, day, ...nonZero(metrics) });
      }
    }
    expect(first.output()).toContain(`lines read ${expected.lines.read} = counted ${expected.lines.counted} + unattributed ${expected.lines.unattributed} + malformed ${expected.lines.malformed}`);
    expect(first.output()).toContain('dead-letter queue: 0 message(s)');
    expect(afterRestart).toEqual(counted);
    expect(explained.length).toBeGreaterThan(100);
    for (const { account, day, complete, sources, metrics } of explained) {
      expect({ account, day, complete, sources }).toEqual({ account, day, complete: true, sources: metrics });
    }
    expect(health.objects.lastDay).toBeGreaterThan(0);
    expect(health.deadLetters.depth).toBe(0);
    // Billing handoff: the 35 days up to the last closable one are closed and exported once.
    expect(info.exportPrefix).toBe('exports/');
    expect(first.output()).toMatch(/tally: closed 35 day\(s\) \S+\.\.\S+ \(\d+ account-day snapshot\(s\)\); exports s3:\/\/tally-logs\/exports\//);
    expect(exported.map((object) => object.Key).filter((key) => key!.endsWith('/revision=1/usage.parquet'))).toHaveLength(35);
    expect(second.output()).not.toContain('revision 2');
    // Quotas: the demo's acme crosses 80% of its requests allowance during the first start, once.
    expect(first.output()).toContain(`tally: usage.threshold acme requests ${monthOf(now)}: 80% reached`);
    expect(quota.thresholds.map((t) => [t.metric, t.level])).toEqual([['requests', 80]]);
    expect(second.output()).not.toContain('tally: usage.threshold acme');
  }, TIME_LIMITS.npmStartDemoTest);
});
