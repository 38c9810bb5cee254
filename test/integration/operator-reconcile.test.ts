import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { DynamoAdjustmentStore } from '../../src/adapters/dynamodb/dynamodb-adjustments';
import type { ReconcileReport } from '../../src/app/ingest/reconcile';
import { tallyCommand } from '../support/cli';
import { usageKey } from '../../src/domain/counters/keys';
import { addDays, dayOf } from '../../src/domain/days';
import { captureIo, ingestFully, operatorEnv, putLogSet } from '../support/operator';
import { putLogObject, testClients, testStackInfo, uniqueId } from '../support/stack';

const runReconcile = tallyCommand('reconcile');

const info = testStackInfo();
const { dynamodb } = testClients(info);

/** A fully ingested set over three days; only the middle day is complete (late lines of it sit in the next day's first object). */
async function ingestedSet() {
  const set = await putLogSet({ days: ['2026-11-20', '2026-11-21', '2026-11-22'] });
  for (const ref of set.refs) await ingestFully(ref);
  return { set, env: operatorEnv(info, { prefix: set.prefix }) };
}

async function reconcileJson(argv: string[], env: Record<string, string>): Promise<{ code: number; report: ReconcileReport }> {
  const io = captureIo();
  const code = await runReconcile([...argv, '--json'], io, env);
  return { code, report: JSON.parse(io.stdout) as ReconcileReport };
}

describe('tally reconcile', () => {
  it('finds no drift in a cleanly ingested day, reading the next day for its late lines', async () => {
    const { set, env } = await ingestedSet();

    const io = captureIo();
    const code = await runReconcile(['--from', '2026-11-21', '--to', '2026-11-21'], io, env);
    const { report } = await reconcileJson(['--from', '2026-11-21', '--to', '2026-11-21'], env);

    expect(code).toBe(0);
    expect(io.stdout).toMatch(/read 6 object\(s\); compared 3 account-day\(s\) of 3 account\(s\) on 3 metric\(s\)/);
    expect(io.stdout).toMatch(/no drift: the counters match the logs/);
    expect(report.rows.length).toBeGreaterThan(0);
    expect(report.rows.every((row) => row.day === '2026-11-21' && row.logs === row.served)).toBe(true);
    expect(report.rows.find((row) => row.account === set.accounts[0] && row.metric === 'requests')?.logs).toBe(
      set.expected.usage.get(`${set.accounts[0]}|2026-11-21`)!.requests,
    );
  });

  it('detects a counter changed behind its back and exits 1', async () => {
    const { set, env } = await ingestedSet();
    const [victim] = set.accounts;
    const key = usageKey({ accountId: victim!, day: '2026-11-21', shard: 1 });
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: info.table,
        Key: { PK: { S: key.PK }, SK: { S: key.SK } },
        UpdateExpression: 'ADD #r :one',
        ExpressionAttributeNames: { '#r': 'requests' },
        ExpressionAttributeValues: { ':one': { N: '1' } },
      }),
    );

    const io = captureIo();
    const code = await runReconcile(['--from', '2026-11-21', '--to', '2026-11-21'], io, env);
    const { report } = await reconcileJson(['--from', '2026-11-21', '--to', '2026-11-21', '--account', victim!], env);

    const logs = set.expected.usage.get(`${victim}|2026-11-21`)!.requests!;
    expect(code).toBe(1);
    expect(io.stdout).toMatch(new RegExp(`${victim} +2026-11-21 +requests +${logs} +${logs + 1} +\\+1 +0`));
    expect(io.stdout).toMatch(/DRIFT on 1 row\(s\)/);
    expect(report.drifting).toEqual([{ account: victim, day: '2026-11-21', metric: 'requests', logs, served: logs + 1, adjustments: 0, drift: 1 }]);
  });

  it('shows adjustments apart without calling them drift', async () => {
    const { set, env } = await ingestedSet();
    const store = new DynamoAdjustmentStore({ client: dynamodb, tableName: info.table });
    await store.record({ account: set.accounts[1]!, day: '2026-11-21', adjustmentId: 'INC-1', metric: 'requests', delta: -7, reason: 'test traffic' }, 'ops');

    const io = captureIo();
    const code = await runReconcile(['--from', '2026-11-21', '--to', '2026-11-21'], io, env);

    expect(code).toBe(0);
    expect(io.stdout).toMatch(new RegExp(`${set.accounts[1]} +2026-11-21 +requests +(\\d+) +\\1 +0 +-7`));
    expect(io.stdout).toMatch(/adjustments on 1 row\(s\) are shown apart/);
  });

  it('calls an object that was never ingested drift and names it', async () => {
    const set = await putLogSet({ days: ['2026-11-21'], hours: [6, 12] });
    await ingestFully(set.refs[0]!);
    const env = operatorEnv(info, { prefix: set.prefix });

    const io = captureIo();
    const code = await runReconcile(['--from', '2026-11-21', '--to', '2026-11-21'], io, env);

    expect(code).toBe(1);
    expect(io.stdout).toMatch(/1 object\(s\) with lines in the range are not \(fully\) counted yet/);
    expect(io.stdout).toContain(set.refs[1]!.key);
    expect(io.stdout).toMatch(/DRIFT on 9 row\(s\)/);
  });
});

describe('tally reconcile says what it checked', () => {
  it('refuses an account with no measured usage unless --force (exit 2, nothing checked)', async () => {
    const { env } = await ingestedSet();
    const typo = uniqueId('nosuchacct');

    const io = captureIo();
    const code = await runReconcile(['--from', '2026-11-21', '--to', '2026-11-21', '--account', typo], io, env);
    const forced = await runReconcile(['--from', '2026-11-21', '--to', '2026-11-21', '--account', typo, '--force'], captureIo(), env);

    expect(code).toBe(2);
    expect(io.stderr).toBe(
      `tally reconcile: nothing was checked: account "${typo}" has no measured usage in ${info.table}: check the id, or pass --force to reconcile it anyway\n`,
    );
    expect(io.stdout).toBe('');
    expect(forced).toBe(0);
  });

  it('refuses a range that starts after today: nothing was checked (exit 2)', async () => {
    const { env } = await ingestedSet();
    const tomorrow = addDays(dayOf(new Date()), 1);

    const io = captureIo();
    const code = await runReconcile(['--from', tomorrow, '--to', addDays(tomorrow, 30)], io, env);

    expect(code).toBe(2);
    expect(io.stderr).toMatch(new RegExp(`^tally reconcile: nothing was checked: --from ${tomorrow} is in the future \\(today is `));
    expect(io.stdout).toBe('');
  });

  it('says nothing was checked, not "no drift", over a range with no logs and no usage', async () => {
    const { env } = await ingestedSet();

    const io = captureIo();
    const code = await runReconcile(['--from', '2026-06-10', '--to', '2026-06-10'], io, env);

    expect(code).toBe(0);
    expect(io.stdout).toMatch(/nothing was checked: no log object in range was read and no counter holds usage for 2026-06-10\.\.2026-06-10/);
    expect(io.stdout).not.toMatch(/no drift/);
  });

  it('names a poison object in range and exits 1', async () => {
    const { set, env } = await ingestedSet();
    const garbage = await putLogObject(`${set.prefix}E2OPS.2026-11-21-18.garbage.gz`, 'this is not a CloudFront log\nat all\n');

    const io = captureIo();
    const code = await runReconcile(['--from', '2026-11-21', '--to', '2026-11-21'], io, env);

    expect(code).toBe(1);
    // The object once, then the reason (tryout: '...garbage.gz: PoisonObjectError: object s3://...garbage.gz: not a CloudFront log').
    expect(io.stdout).toMatch(new RegExp(`poison object \\(the consumer cannot count it either\\): s3://${info.bucket}/${garbage.key.replace(/[.]/g, '\\.')}: not a CloudFront log`));
    expect(io.stdout).not.toContain('PoisonObjectError');
    expect(io.stdout).toMatch(/no drift in what could be counted, but 1 poison object\(s\) in range could not be counted/);
    expect(io.stdout).not.toMatch(/^no drift: the counters match the logs$/m);
  });
});
