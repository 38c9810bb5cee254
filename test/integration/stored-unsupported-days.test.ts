import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { closeDays } from '../../src/app/billing/close-days';
import { silentLog } from '../../src/app/log';
import { evaluateThresholds } from '../../src/app/billing/thresholds';
import { DynamoAdjustmentStore } from '../../src/adapters/dynamodb/dynamodb-adjustments';
import { DynamoMonthRechecks } from '../../src/adapters/dynamodb/dynamodb-quotas';
import { readThresholdConfig } from '../../src/adapters/wiring/handoff-config';
import { createThresholdDeps } from '../../src/adapters/wiring/handoff-deps';
import { lateMarkerKey } from '../../src/domain/counters/keys';
import { captureIo, runTallyBin, tallyCommand } from '../support/cli';
import { handoffTable, testCloser } from '../support/handoff';
import { killProcessesNaming, stackEnv, stackInfoIn, startLocal, stopLocal, waitUntilNoProcessNames, type LocalRun } from '../support/npm-start';
import { testClients, testStackInfo, uniqueId } from '../support/stack';

// Records an older version could store (it took any calendar day): a later version skips
// each with an error naming it, and the closer, the quota check and `npm start` go on.

const FAR = '9999-12-31';
const NOW = new Date('2026-06-20T12:00:00Z');

/** What `tally adjust --day 9999-12-31 ... --force` of an older version left: the adjustment, its month's recheck marker, and a late marker. */
async function storeFarFutureRecords(dynamodb: DynamoDBClient, tableName: string, account: string): Promise<void> {
  const adjustments = new DynamoAdjustmentStore({ client: dynamodb, tableName, clock: () => NOW });
  await adjustments.record({ account, day: FAR, metric: 'requests', delta: 1, reason: 'x', adjustmentId: 'NC-FUT-1' }, 'older-version');
  await new DynamoMonthRechecks({ client: dynamodb, tableName }).mark(FAR.slice(0, 7), NOW.toISOString());
  const key = lateMarkerKey(FAR, account);
  await dynamodb.send(new PutItemCommand({ TableName: tableName, Item: { PK: { S: key.PK }, SK: { S: key.SK }, markedAt: { S: NOW.toISOString() } } }));
}

const MARKER_SKIPPED = 'skipped the recheck marker of month 9999-12 (THRESHOLD#RECHECK): 9999-12 is outside the days Tally supports, 2000-01-01..2099-12-31 (an older version recorded it)';
const lateSkipped = (account: string) =>
  `skipped the late marker of ${account} on 9999-12-31: 9999-12-31 is outside the days Tally supports, 2000-01-01..2099-12-31 (an older version recorded it)`;

describe('a stored far-future record', () => {
  const info = testStackInfo();
  const { dynamodb, sqs } = testClients(info);
  let table: string;
  let env: Record<string, string>;
  const account = uniqueId('far');

  beforeAll(async () => {
    ({ table, env } = await handoffTable(info));
    await storeFarFutureRecords(dynamodb, table, account);
  });

  it('is skipped by the closer with an error naming it; the due days still close', async () => {
    const report = await closeDays(testCloser(env, () => NOW));

    expect(report.failed).toBe(0);
    expect(report.skipped).toEqual([lateSkipped(account)]);
    expect(report.days.map((day) => day.day)).not.toContain(FAR);
    expect(report.days.length).toBeGreaterThan(0);
  });

  it('is skipped by the threshold evaluator, which evaluates the other months and keeps the record', async () => {
    const deps = createThresholdDeps(readThresholdConfig(env), { dynamodb, sqs }, silentLog, { clock: () => NOW });

    const report = await evaluateThresholds(deps);
    const again = await evaluateThresholds(deps);

    expect([report.failed, report.months, report.skipped]).toEqual([0, ['2026-05', '2026-06'], [MARKER_SKIPPED]]);
    expect(again.skipped).toEqual([MARKER_SKIPPED]);
  });

  it('lets tally quota check and tally close run and say what they skipped', async () => {
    const quota = captureIo();
    const close = captureIo();

    const quotaCode = await tallyCommand('quota')(['check'], quota, env, process.cwd(), () => NOW);
    const closeCode = await tallyCommand('close')(['--dry-run'], close, env, process.cwd(), () => NOW);

    expect([quotaCode, quota.stderr]).toEqual([0, '']);
    expect(quota.stdout).toContain(MARKER_SKIPPED);
    expect([closeCode, close.stderr]).toEqual([0, '']);
    expect(close.stdout).toContain(lateSkipped(account));
    expect(`${quota.stdout}${close.stdout}`).not.toMatch(/\+0\d{5}|Invalid time value/);
  });

  it('is still listed by tally adjustments, which names its day', async () => {
    const io = captureIo();

    const code = await tallyCommand('adjustments')(['--account', account], io, env, process.cwd(), () => NOW);

    expect(code).toBe(0);
    expect(io.stdout).toContain('9999-12-31');
    expect(io.stdout).toContain('NC-FUT-1');
  });
});

describe('npm start with a stored far-future record', () => {
  let folder: string | undefined;
  const runs: LocalRun[] = [];
  afterAll(async () => {
    await Promise.all(runs.map((run) => stopLocal(run, 'SIGKILL')));
    if (folder !== undefined) {
      killProcessesNaming(folder);
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('starts again, names the record once, and its closer and quota check go on', async () => {
    const cwd = (folder = mkdtempSync(join(tmpdir(), 'tally-far-future-')));
    runs.push(await startLocal(cwd));
    const first = stackInfoIn(cwd);
    const account = uniqueId('far');
    await storeFarFutureRecords(testClients(first).dynamodb, first.table, account);
    await stopLocal(runs[0]!);
    await waitUntilNoProcessNames(cwd, 10_000);

    const restarted = await startLocal(cwd);
    runs.push(restarted);
    const quota = await runTallyBin(['quota', 'check'], { cwd, env: stackEnv() });
    const output = restarted.output();
    await stopLocal(restarted);

    expect(output).toContain('tally: running');
    expect(output).not.toContain('could not start');
    expect(output).toContain(`tally: ${MARKER_SKIPPED}`);
    expect(output.split(MARKER_SKIPPED).length - 1).toBe(1);
    expect(output).not.toMatch(/Invalid time value|\+0\d{5}/);
    expect(quota.code).toBe(0);
    expect(quota.stdout).toContain(MARKER_SKIPPED);
  }, 240_000);
});
