import { DynamoAdjustmentStore } from '../../src/adapters/dynamodb-adjustments';
import { DynamoThresholdStore } from '../../src/adapters/dynamodb-quotas';
import { handoffTable } from '../support/handoff';
import { captureIo, tallyCommand } from '../support/cli';
import { createTestQueues, testClients, testStackInfo, uniqueId } from '../support/stack';

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

async function quota(argv: string[], extraEnv: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const io = captureIo();
  const code = await runQuota(argv, io, { ...env, ...extraEnv }, process.cwd(), NOW);
  return { code, stdout: io.stdout, stderr: io.stderr };
}

describe('tally quota', () => {
  it('sets, replaces, lists and removes an allowance; the TALLY_QUOTAS default applies where none is set', async () => {
    const account = uniqueId('quota');
    const defaults = { TALLY_QUOTAS: '{"requests": 5000}' };

    const set = await quota(['set', '--account', account, '--metric', 'requests', '--monthly', '1000']);
    const replaced = await quota(['set', '--account', account, '--metric', 'requests', '--monthly', '2000', '--levels', '50,100']);
    const listed = await quota(['list', '--account', account, '--json'], defaults);
    const all = await quota(['list'], defaults);
    const removed = await quota(['remove', '--account', account, '--metric', 'requests'], defaults);
    const after = await quota(['list', '--account', account, '--json'], defaults);
    const again = await quota(['remove', '--account', account, '--metric', 'requests']);

    expect([set.code, replaced.code, listed.code, all.code, removed.code, after.code, again.code]).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect(set.stdout).toBe(`quota set: ${account} requests 1000 a month, alerts at 80%, 100%\n`);
    expect(replaced.stdout).toBe(`quota set: ${account} requests 2000 a month (was 1000), alerts at 50%, 100%\n`);
    expect(JSON.parse(listed.stdout).quotas).toEqual([
      { metric: 'requests', monthly: 2000, levels: [50, 100], source: 'account', updatedAt: NOW().toISOString(), updatedBy: 'ops-tester' },
    ]);
    expect(all.stdout).toMatch(new RegExp(`^${account}\\s+requests\\s+2000\\s+50,100\\s+`, 'm'));
    expect(all.stdout).toContain('default for every other account (TALLY_QUOTAS): requests 5000; levels 80,100');
    expect(removed.stdout).toBe(`quota removed: ${account} requests (was 2000); now the default 5000 (TALLY_QUOTAS)\n`);
    expect(JSON.parse(after.stdout).quotas).toEqual([{ metric: 'requests', monthly: 5000, levels: [80, 100], source: 'default' }]);
    expect(again.stdout).toBe(`no quota of requests for ${account}: nothing removed\n`);
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
    await quota(['set', '--account', account, '--metric', 'requests', '--monthly', '100']);
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
});
