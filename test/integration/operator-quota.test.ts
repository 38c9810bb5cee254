import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { DynamoAdjustmentStore } from '../../src/adapters/dynamodb/dynamodb-adjustments';
import { DynamoThresholdStore } from '../../src/adapters/dynamodb/dynamodb-quotas';
import { handoffTable } from '../support/handoff';
import { captureIo, tallyCommand } from '../support/cli';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { DEMO_QUOTA, setDemoQuota } from '../../src/local/demo/demo';
import { generateLog } from '../../src/local/demo/log-generator';
import { createTestQueues, putLogObject, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';

const runQuota = tallyCommand('quota');
const info = testStackInfo();
const { dynamodb } = testClients(info);
const NOW = () => new Date('2026-06-20T12:00:00Z');

let env: Record<string, string>;
let table: string;
beforeAll(async () => {
  ({ table, env } = await handoffTable(info));
  env = { ...env, USER: 'ops-tester' };
});

/** `requests` measured requests of `account` on `day` (one counter increment, as ingest writes it). */
async function measure(account: string, day: string, requests: number): Promise<void> {
  const log = generateLog({ seed: requests, day, hour: 9, distribution: 'E2QOPS', accounts: [{ id: account, weight: 1 }], lines: requests, previousDayRate: 0, malformedRate: 0, unattributedRate: 0 });
  const ref = await putLogObject(`cloudfront/${uniqueId('E2QOPS')}.${day}-09.x.gz`, log.text);
  const result = await ingestBatch({ Records: [s3NotificationMessage(ref)] }, { ...testIngestDeps({ TALLY_TABLE: table }), clock: () => new Date(`${day}T12:00:00Z`) });
  expect(result.batchItemFailures).toEqual([]);
}

async function quota(argv: string[], extraEnv: Record<string, string> = {}, now = NOW): Promise<{ code: number; stdout: string; stderr: string }> {
  const io = captureIo();
  const code = await runQuota(argv, io, { ...env, ...extraEnv }, process.cwd(), now);
  return { code, stdout: io.stdout, stderr: io.stderr };
}

describe('tally quota', () => {
  it('sets, replaces, lists and removes an allowance; the TALLY_QUOTAS default applies where none is set', async () => {
    const account = uniqueId('quota');
    const defaults = { TALLY_QUOTAS: '{"requests": 5000}' };

    const set = await quota(['set', '--account', account, '--metric', 'requests', '--monthly', '1000', '--force']);
    const replaced = await quota(['set', '--account', account, '--metric', 'requests', '--monthly', '2000', '--levels', '50,100', '--force']);
    const listed = await quota(['list', '--account', account, '--json'], defaults);
    const all = await quota(['list'], defaults);
    const removed = await quota(['remove', '--account', account, '--metric', 'requests'], defaults);
    const after = await quota(['list', '--account', account, '--json'], defaults);
    const again = await quota(['remove', '--account', account, '--metric', 'requests']);

    expect([set.code, replaced.code, listed.code, all.code, removed.code, after.code, again.code]).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect(set.stdout).toBe(`quota set: ${account} requests 1000 a month from 2026-06, alerts at 80%, 100%\n`);
    expect(replaced.stdout).toBe(`quota set: ${account} requests 2000 a month from 2026-06 (was 1000), alerts at 50%, 100%\n`);
    expect(JSON.parse(listed.stdout).quotas).toEqual([
      { metric: 'requests', monthly: 2000, levels: [50, 100], source: 'account', from: '2026-06', updatedAt: NOW().toISOString(), updatedBy: 'ops-tester' },
    ]);
    expect(all.stdout).toMatch(new RegExp(`^${account}\\s+requests\\s+2000\\s+50,100\\s+2026-06\\s+`, 'm'));
    expect(all.stdout).toContain('default for every other account (TALLY_QUOTAS): requests 5000; levels 80,100');
    expect(removed.stdout).toBe(`quota removed: ${account} requests (was 2000); now the default 5000 (TALLY_QUOTAS)\n`);
    expect(JSON.parse(after.stdout).quotas).toEqual([{ metric: 'requests', monthly: 5000, levels: [80, 100], source: 'default' }]);
    expect(again.stdout).toBe(`no quota of requests for ${account}: nothing removed\n`);
  });

  it('--dry-run on set and remove says what would change and writes nothing', async () => {
    const account = uniqueId('quota');
    const defaults = { TALLY_QUOTAS: '{"requests": 5000}' };

    const drySet = await quota(['set', '--account', account, '--metric', 'requests', '--monthly', '1000', '--force', '--dry-run']);
    const afterDrySet = await quota(['list', '--account', account, '--json']);
    await quota(['set', '--account', account, '--metric', 'requests', '--monthly', '1000', '--force']);
    const dryReplace = await quota(['set', '--account', account, '--metric', 'requests', '--monthly', '3000', '--force', '--dry-run', '--json']);
    const dryRemove = await quota(['remove', '--account', account, '--metric', 'requests', '--dry-run'], defaults);
    const afterDryRemove = await quota(['list', '--account', account, '--json']);
    const dryRemoveNone = await quota(['remove', '--account', account, '--metric', 'bytes', '--dry-run']);

    expect([drySet.code, dryReplace.code, dryRemove.code, dryRemoveNone.code]).toEqual([0, 0, 0, 0]);
    expect(drySet.stdout).toBe(`dry run: would set quota ${account} requests 1000 a month from 2026-06, alerts at 80%, 100% in ${table}; nothing written\n`);
    expect(JSON.parse(afterDrySet.stdout).history).toEqual([]);
    expect(JSON.parse(dryReplace.stdout)).toEqual(expect.objectContaining({ dryRun: true, quota: expect.objectContaining({ history: [{ from: '2026-06', monthly: 3000 }] }) }));
    expect(dryRemove.stdout).toBe(`dry run: would remove quota ${account} requests (was 1000); then the default 5000 (TALLY_QUOTAS); nothing written\n`);
    expect(JSON.parse(afterDryRemove.stdout).quotas).toEqual([expect.objectContaining({ metric: 'requests', monthly: 1000, source: 'account' })]);
    expect(dryRemoveNone.stdout).toBe(`dry run: no quota of bytes for ${account}: nothing to remove\n`);
  });

  it('refuses a bad allowance, level or metric with exit 2 and writes nothing', async () => {
    const account = uniqueId('quota');

    const zero = await quota(['set', '--account', account, '--metric', 'requests', '--monthly', '0']);
    const level = await quota(['set', '--account', account, '--metric', 'requests', '--monthly', '10', '--levels', '80,0']);
    const metric = await quota(['set', '--account', account, '--metric', 'reqests', '--monthly', '10']);
    const listed = await quota(['list', '--account', account, '--json']);

    expect([zero.code, level.code, metric.code]).toEqual([2, 2, 2]);
    expect(zero.stderr).toContain('--monthly must be a whole number');
    expect(level.stderr).toContain('a level is a whole percentage from 1 to 1000');
    expect(metric.stderr).toContain('metric "reqests" is not one the consumer measures here');
    expect(JSON.parse(listed.stdout).quotas).toEqual([]);
  });

  it('check fires a level reached once, queued to the webhook queue, and nothing on a rerun', async () => {
    const account = uniqueId('quota');
    const { queueUrl } = await createTestQueues(info);
    await quota(['set', '--account', account, '--metric', 'requests', '--monthly', '100', '--force']);
    await new DynamoAdjustmentStore({ client: dynamodb, tableName: table, clock: NOW }).record(
      { account, day: '2026-06-03', adjustmentId: 'INC-1', metric: 'requests', delta: 85, reason: 'usage' },
      'test',
    );

    const first = await quota(['check', '--account', account], { TALLY_WEBHOOK_QUEUE_URL: queueUrl });
    const second = await quota(['check', '--account', account, '--json'], { TALLY_WEBHOOK_QUEUE_URL: queueUrl });

    expect([first.code, second.code]).toEqual([0, 0]);
    expect(first.stdout).toMatch(new RegExp(`^${account}\\s+requests\\s+2026-06\\s+80%\\s+85\\s+100\\s*$`, 'm'));
    expect(first.stdout).toContain('events queued 1; pending 0; failed 0');
    expect(JSON.parse(second.stdout)).toMatchObject({ months: ['2026-06'], crossed: [], sent: [] });
    const recorded = await new DynamoThresholdStore({ client: dynamodb, tableName: table }).crossings('2026-06', account);
    expect(recorded.map((crossing) => [crossing.level, crossing.used, crossing.notifiedAt !== undefined])).toEqual([[80, 85, true]]);
  });

  it('refuses an account with no measured usage (a typo, another case) with exit 2, as tally adjust does, unless --force', async () => {
    const account = uniqueId('quota');
    const upper = account.toUpperCase();
    await measure(account, '2026-06-10', 5);

    const typo = await quota(['set', '--account', upper, '--metric', 'requests', '--monthly', '10']);
    const right = await quota(['set', '--account', account, '--metric', 'requests', '--monthly', '10']);
    const forced = await quota(['set', '--account', `${account}-new`, '--metric', 'requests', '--monthly', '10', '--force']);
    const listed = await quota(['list', '--json']);

    expect([typo.code, right.code, forced.code]).toEqual([2, 0, 0]);
    expect(typo.stderr).toContain(`account "${upper}" has no measured usage in ${table}, so its quota could never fire`);
    expect(typo.stderr).toContain('--force');
    const accounts = (JSON.parse(listed.stdout).quotas as { account: string }[]).map((stored) => stored.account);
    expect(accounts).toEqual(expect.arrayContaining([account, `${account}-new`]));
    expect(accounts).not.toContain(upper);
  });

  it('judges each month by the allowance in force then: set in November, October has none; a change in December leaves November alone', async () => {
    const account = uniqueId('quota');
    const november = () => new Date('2026-11-20T12:00:00Z');
    const december = () => new Date('2026-12-20T12:00:00Z');
    await measure(account, '2026-10-05', 1);
    const adjustments = new DynamoAdjustmentStore({ client: dynamodb, tableName: table, clock: december });
    for (const [day, delta] of [['2026-10-06', 899], ['2026-11-06', 850], ['2026-12-06', 850]] as const) {
      await adjustments.record({ account, day, adjustmentId: uniqueId('use'), metric: 'requests', delta, reason: 'usage' }, 'test');
    }

    await quota(['set', '--account', account, '--metric', 'requests', '--monthly', '1000'], {}, november);
    await quota(['set', '--account', account, '--metric', 'requests', '--monthly', '2000'], {}, december);
    const october = await quota(['check', '--month', '2026-10', '--account', account, '--json'], {}, december);
    const novemberCheck = await quota(['check', '--month', '2026-11', '--account', account, '--json'], {}, december);
    const decemberCheck = await quota(['check', '--month', '2026-12', '--account', account, '--json'], {}, december);
    const listed = await quota(['list', '--account', account, '--json'], {}, december);
    const history = await quota(['list', '--history'], {}, december);

    expect(JSON.parse(october.stdout)).toMatchObject({ months: ['2026-10'], evaluated: 0, crossed: [] });
    expect(JSON.parse(novemberCheck.stdout).crossed.map((c: { level: number; allowance: number }) => [c.level, c.allowance])).toEqual([[80, 1000]]);
    expect(JSON.parse(decemberCheck.stdout).crossed).toEqual([]);
    expect(JSON.parse(listed.stdout)).toMatchObject({
      month: '2026-12',
      quotas: [{ metric: 'requests', monthly: 2000, from: '2026-12', source: 'account' }],
      history: [{ history: [{ from: '2026-11', monthly: 1000 }, { from: '2026-12', monthly: 2000 }] }],
    });
    expect(history.stdout).toMatch(new RegExp(`^${account}\\s+requests\\s+2026-11\\s+1000\\s`, 'm'));
    expect(history.stdout).toMatch(new RegExp(`^${account}\\s+requests\\s+2026-12\\s+2000\\s`, 'm'));
  });

  it("npm start's demo sets acme's quota only when acme has none: the user's own is kept on every later start", async () => {
    await measure(DEMO_QUOTA.account, '2026-06-10', 90);

    const first = await setDemoQuota({ dynamodb, tableName: table, now: NOW() });
    const own = await quota(['set', '--account', DEMO_QUOTA.account, '--metric', 'requests', '--monthly', '12345']);
    const restart = await setDemoQuota({ dynamodb, tableName: table, now: NOW() });
    const listed = await quota(['list', '--account', DEMO_QUOTA.account, '--json']);

    expect(first).toEqual({ account: 'acme', metric: 'requests', monthly: 100, created: true });
    expect(own.code).toBe(0);
    expect(restart).toEqual({ account: 'acme', metric: 'requests', monthly: 12345, created: false });
    expect(JSON.parse(listed.stdout).quotas).toEqual([expect.objectContaining({ metric: 'requests', monthly: 12345, updatedBy: 'ops-tester' })]);
  });

  it('reads a quota stored before quotas had a history as in force for every month', async () => {
    const account = uniqueId('quota');
    await dynamodb.send(
      new PutItemCommand({
        TableName: table,
        Item: { PK: { S: 'QUOTA' }, SK: { S: `${account}#requests` }, account: { S: account }, metric: { S: 'requests' }, monthly: { N: '300' }, levels: { L: [{ N: '50' }] }, updatedAt: { S: '2026-06-01T00:00:00.000Z' } },
      }),
    );

    const listed = await quota(['list', '--account', account, '--month', '2020-01', '--json']);

    expect(JSON.parse(listed.stdout).quotas).toEqual([expect.objectContaining({ metric: 'requests', monthly: 300, levels: [50], source: 'account', from: '0000-01' })]);
  });
});
