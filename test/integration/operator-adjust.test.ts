import { DynamoAdjustmentStore } from '../../src/adapters/dynamodb/dynamodb-adjustments';
import { DynamoUsageReader } from '../../src/adapters/dynamodb/dynamodb-usage-reader';
import { tallyCommand } from '../support/cli';
import { storeCorrection } from '../../src/cli/commands/billing/adjust';
import { openTarget } from '../../src/cli/open-target';
import { revertOf } from '../../src/domain/counters/adjustment';
import { AdjustmentConflictError } from '../../src/domain/errors';
import { buildUsageReport } from '../../src/domain/reading/usage-report';
import { captureIo, ingestFully, operatorEnv, putLogSet } from '../support/operator';
import { testClients, testStackInfo, uniqueId } from '../support/stack';

const runAdjust = tallyCommand('adjust');
const runAdjustments = tallyCommand('adjustments');
const runRevert = (argv: readonly string[], io: ReturnType<typeof captureIo>) => tallyCommand('adjustments')(['revert', ...argv], io, env);

const info = testStackInfo();
const { dynamodb } = testClients(info);
const env = operatorEnv(info, {}, { USER: 'ops-tester' });
const reader = new DynamoUsageReader({ client: dynamodb, tableName: info.table, consistentRead: true });

/**
 * The flags of a correction; `--force --allow-negative`, since most of these accounts were never measured
 * and their days total zero (the guards have their own tests).
 */
const adjustArgs = (account: string, overrides: Record<string, string> = {}, force = true) => [
  ...Object.entries({ account, day: '2026-11-21', metric: 'requests', delta: '-1200', reason: 'synthetic load test', id: 'INC-2041', ...overrides }).flatMap(
    ([name, value]) => [`--${name}`, value],
  ),
  ...(force ? ['--force', '--allow-negative'] : []),
];

async function adjustmentRecords(account: string) {
  const { records } = await reader.read(account, '2026-11-01', '2026-11-30');
  return records.filter((record) => record.kind === 'adjustment');
}

describe('tally adjust', () => {
  it('applies the same id once: the second run reports it already recorded', async () => {
    const account = uniqueId('adj');

    const first = captureIo();
    const firstCode = await runAdjust(adjustArgs(account), first, env);
    const second = captureIo();
    const secondCode = await runAdjust(adjustArgs(account), second, env);

    expect([firstCode, secondCode]).toEqual([0, 0]);
    expect(first.stdout).toMatch(new RegExp(`recorded adjustment INC-2041: ${account} 2026-11-21 requests -1200 \\(ops-tester, `));
    expect(second.stdout).toMatch(/adjustment INC-2041 was already recorded \(ops-tester, .*\): nothing changed, it applies once/);
    expect(await adjustmentRecords(account)).toEqual([
      expect.objectContaining({ kind: 'adjustment', day: '2026-11-21', adjustmentId: 'INC-2041', metric: 'requests', delta: -1200, reason: 'synthetic load test' }),
    ]);
  });

  it('fails loudly when an id is reused for another delta, metric or day, and changes nothing', async () => {
    const account = uniqueId('adj');
    await runAdjust(adjustArgs(account), captureIo(), env);

    const outcomes = [];
    const changes: Record<string, string>[] = [{ delta: '-1300' }, { metric: 'bytes' }, { day: '2026-11-22' }];
    for (const change of changes) {
      const io = captureIo();
      outcomes.push({ code: await runAdjust(adjustArgs(account, change), io, env), stderr: io.stderr });
    }

    expect(outcomes.map((outcome) => outcome.code)).toEqual([1, 1, 1]);
    expect(outcomes[0]!.stderr).toMatch(/adjustment INC-2041 is already recorded with different content \(delta -1200 vs -1300\); choose a new id/);
    expect(outcomes[1]!.stderr).toMatch(/metric requests vs bytes/);
    expect(outcomes[2]!.stderr).toMatch(/day 2026-11-21 vs 2026-11-22/);
    expect((await adjustmentRecords(account)).map((record) => record.kind === 'adjustment' && record.delta)).toEqual([-1200]);
  });

  it('records one adjustment when the same id is sent five times at once', async () => {
    const account = uniqueId('adj');
    const store = new DynamoAdjustmentStore({ client: dynamodb, tableName: info.table });
    const adjustment = { account, day: '2026-11-21', adjustmentId: 'RACE-1', metric: 'bytes', delta: 500, reason: 'late log' };

    const results = await Promise.all(Array.from({ length: 5 }, () => store.record(adjustment, 'ops')));

    expect(results.filter((result) => result.outcome === 'recorded')).toHaveLength(1);
    expect(await adjustmentRecords(account)).toHaveLength(1);
    await expect(store.record({ ...adjustment, delta: 501 }, 'ops')).rejects.toThrow(AdjustmentConflictError);
  });

  it('keeps measured usage apart: the report adds the adjustment into totals and shows it separately', async () => {
    const set = await putLogSet({ days: ['2026-11-21'], hours: [12], accounts: 1 });
    await ingestFully(set.refs[0]!);
    const [account] = set.accounts;
    const measured = set.expected.usage.get(`${account}|2026-11-21`)!.requests!;

    await runAdjust(adjustArgs(account!, { delta: '-5' }), captureIo(), env);
    const { records } = await reader.read(account!, '2026-11-21', '2026-11-21');
    const report = buildUsageReport({ accountId: account!, from: '2026-11-21', to: '2026-11-21', granularity: 'day', records });

    expect(report.measuredTotals.requests).toBe(measured);
    expect(report.adjustmentTotals.requests).toBe(-5);
    expect(report.totals.requests).toBe(measured - 5);
    expect(report.adjustments).toEqual([expect.objectContaining({ id: 'INC-2041', delta: -5, reason: 'synthetic load test' })]);
  });

  it('writes nothing on --dry-run and refuses a metric the consumer does not measure', async () => {
    const account = uniqueId('adj');

    const dry = captureIo();
    const dryCode = await runAdjust([...adjustArgs(account), '--dry-run'], dry, env);
    const typo = captureIo();
    const typoCode = await runAdjust(adjustArgs(account, { metric: 'reqeusts' }), typo, env);

    expect(dryCode).toBe(0);
    expect(dry.stdout).toMatch(/dry run: would record adjustment INC-2041/);
    expect(typoCode).toBe(2);
    expect(typo.stderr).toMatch(/metric "reqeusts" is not one the consumer measures here \(requests, bytes, authorization_requests\)/);
    expect(await adjustmentRecords(account)).toEqual([]);
  });

  it('refuses an account with no measured usage unless --force, and records it for one that has some', async () => {
    const set = await putLogSet({ days: ['2026-11-21'], hours: [12], accounts: 1 });
    await ingestFully(set.refs[0]!);
    const typo = uniqueId('never-measured');

    const refused = captureIo();
    const refusedCode = await runAdjust(adjustArgs(typo, {}, false), refused, env);
    const measured = captureIo();
    const measuredCode = await runAdjust(adjustArgs(set.accounts[0]!, { delta: '-1' }, false), measured, env);
    const forced = await runAdjust(adjustArgs(typo, { id: 'INC-2042' }), captureIo(), env);

    expect(refusedCode).toBe(2);
    expect(refused.stderr).toBe(
      `tally adjust: account "${typo}" has no measured usage in ${info.table}: check the id, or pass --force to record it anyway\n`,
    );
    expect(measuredCode).toBe(0);
    expect(measured.stdout).toMatch(/^recorded adjustment INC-2041/);
    expect(forced).toBe(0);
    expect((await adjustmentRecords(typo)).map((record) => record.kind === 'adjustment' && record.adjustmentId)).toEqual(['INC-2042']);
  });

  it('lists an account\'s adjustments by day, filtered by --from/--to, with net totals', async () => {
    const account = uniqueId('adj');
    await runAdjust(adjustArgs(account, { id: 'A-1', day: '2026-11-03', delta: '100', reason: 'missed log' }), captureIo(), env);
    await runAdjust(adjustArgs(account, { id: 'A-2', day: '2026-11-20', delta: '-30', reason: 'refund' }), captureIo(), env);
    await runAdjust(adjustArgs(account, { id: 'A-3', day: '2026-11-21', metric: 'bytes', delta: '4096', reason: 'egress fix' }), captureIo(), env);

    const all = captureIo();
    await runAdjustments(['--account', account], all, env);
    const some = captureIo();
    await runAdjustments(['--account', account, '--from', '2026-11-20', '--to', '2026-11-20', '--json'], some, env);

    expect(all.stdout.split('\n').filter((line) => /^2026-/.test(line)).map((line) => line.split(/\s+/).slice(0, 4))).toEqual([
      ['2026-11-03', 'A-1', 'requests', '+100'],
      ['2026-11-20', 'A-2', 'requests', '-30'],
      ['2026-11-21', 'A-3', 'bytes', '+4096'],
    ]);
    expect(all.stdout).toMatch(/3 adjustment\(s\); net requests \+70, bytes \+4096/);
    expect(JSON.parse(some.stdout).adjustments).toEqual([expect.objectContaining({ adjustmentId: 'A-2', delta: -30, actor: 'ops-tester' })]);
  });

  it('refuses a correction that would take the day\'s billable total below zero, saying what it would be, unless --allow-negative', async () => {
    const set = await putLogSet({ days: ['2026-11-21'], hours: [12], accounts: 1 });
    await ingestFully(set.refs[0]!);
    const account = set.accounts[0]!;
    const measured = set.expected.usage.get(`${account}|2026-11-21`)!.requests!;
    const args = adjustArgs(account, { delta: '-99999999', id: 'NEG-1' }, false);

    const refused = captureIo();
    const refusedCode = await runAdjust(args, refused, env);
    const recordsAfterRefusal = await adjustmentRecords(account);
    const allowed = await runAdjust([...args, '--allow-negative'], captureIo(), env);
    const rerun = captureIo();
    const rerunCode = await runAdjust(args, rerun, env);

    expect(refusedCode).toBe(2);
    expect(refused.stderr).toBe(
      `tally adjust: this would take the billable requests of ${account} on 2026-11-21 below zero: ` +
        `${measured.toLocaleString('en-US')} - 99,999,999 = ${(measured - 99_999_999).toLocaleString('en-US')}; ` +
        'check the delta, or pass --allow-negative to record it anyway\n',
    );
    expect(recordsAfterRefusal).toEqual([]);
    expect(allowed).toBe(0);
    // Recorded once: the same correction again is "already recorded", not refused.
    expect(rerunCode).toBe(0);
    expect(rerun.stdout).toMatch(/adjustment NEG-1 was already recorded/);
    expect(await adjustmentRecords(account)).toEqual([expect.objectContaining({ adjustmentId: 'NEG-1', delta: -99_999_999 })]);
  });

  it('refuses, whatever the flags, a correction that takes a day past Number.MAX_SAFE_INTEGER, where sums stop being exact; one toward zero passes', async () => {
    const account = uniqueId('adj');
    const peta = (id: string, delta = '1000000000000000') => adjustArgs(account, { delta, id });

    // Nine of the largest corrections: 9 x 10^15, still exact.
    const codes = [];
    for (let i = 1; i <= 9; i++) codes.push(await runAdjust(peta(`PETA-${i}`), captureIo(), env));
    const refused = captureIo();
    const refusedCode = await runAdjust(peta('PETA-10'), refused, env);
    const back = await runAdjust(peta('PETA-BACK', '-1000000000000000'), captureIo(), env);

    expect([codes, refusedCode, back]).toEqual([Array(9).fill(0), 2, 0]);
    expect(refused.stderr).toBe(
      `tally adjust: this would take the billable requests of ${account} on 2026-11-21 to 10,000,000,000,000,000, past 9,007,199,254,740,991, where sums stop being exact: check the delta\n`,
    );
    const records = await adjustmentRecords(account);
    expect(records.map((record) => record.kind === 'adjustment' && record.adjustmentId).sort()).toEqual([...Array.from({ length: 9 }, (_, i) => `PETA-${i + 1}`), 'PETA-BACK'].sort());
    const report = buildUsageReport({ accountId: account, from: '2026-11-21', to: '2026-11-21', granularity: 'day', records, metricNames: ['requests'] });
    expect(report.totals.requests).toBe(8_000_000_000_000_000);
  });

  it('takes a day down to exactly zero without --allow-negative', async () => {
    const set = await putLogSet({ days: ['2026-11-21'], hours: [12], accounts: 1 });
    await ingestFully(set.refs[0]!);
    const account = set.accounts[0]!;
    const measured = set.expected.usage.get(`${account}|2026-11-21`)!.requests!;

    const code = await runAdjust(adjustArgs(account, { delta: String(-measured), id: 'ZERO-1' }, false), captureIo(), env);
    const { records } = await reader.read(account, '2026-11-21', '2026-11-21');

    expect(code).toBe(0);
    expect(buildUsageReport({ accountId: account, from: '2026-11-21', to: '2026-11-21', granularity: 'day', records }).totals.requests).toBe(0);
  });

  it.each(['1000000000000001', '-1000000000000001', '99999999999999999999', '0'])('refuses --delta %s (outside ±10^15 or zero) and writes nothing', async (delta) => {
    const account = uniqueId('adj');
    const io = captureIo();

    const code = await runAdjust(adjustArgs(account, { delta }), io, env);

    expect(code).toBe(2);
    expect(io.stderr).toMatch(/^tally adjust: delta must be a non-zero whole number from -1,000,000,000,000,000 to 1,000,000,000,000,000, got /);
    expect(await adjustmentRecords(account)).toEqual([]);
  });
});

describe('tally adjustments revert', () => {
  it('records one compensating adjustment, as a revert of the id: a second run, or one after a lost answer, changes nothing', async () => {
    const account = uniqueId('rev');
    await runAdjust(adjustArgs(account, { delta: '500', id: 'INC-7' }), captureIo(), env);

    const first = captureIo();
    const firstCode = await runRevert(['INC-7', '--account', account, '--reason', 'billed twice'], first);
    const again = captureIo();
    const againCode = await runRevert(['INC-7', '--account', account], again);
    // As if the first answer had been lost and another operator retried with another reason.
    const retried = await runRevert(['INC-7', '--account', account, '--reason', 'retry'], captureIo());

    expect([firstCode, againCode, retried]).toEqual([0, 0, 0]);
    expect(first.stdout).toMatch(new RegExp(`^recorded adjustment revert:INC-7: ${account} 2026-11-21 requests -500 \\(ops-tester, `));
    expect(again.stdout).toMatch(/^INC-7 was already reverted by revert:INC-7 \(ops-tester, .*\): nothing changed, it applies once/);
    const stored = await new DynamoAdjustmentStore({ client: dynamodb, tableName: info.table }).list(account);
    expect(stored).toEqual([
      expect.objectContaining({ adjustmentId: 'INC-7', delta: 500 }),
      expect.objectContaining({ adjustmentId: 'revert:INC-7', delta: -500, metric: 'requests', day: '2026-11-21', reason: 'revert of INC-7: billed twice', revertOf: 'INC-7' }),
    ]);
    const { records } = await reader.read(account, '2026-11-21', '2026-11-21');
    expect(buildUsageReport({ accountId: account, from: '2026-11-21', to: '2026-11-21', granularity: 'day', records }).totals.requests).toBe(0);
  });

  it('records one revert when five are sent at once', async () => {
    const account = uniqueId('rev');
    await runAdjust(adjustArgs(account, { delta: '40', id: 'RACE-7' }), captureIo(), env);

    const codes = await Promise.all(Array.from({ length: 5 }, () => runRevert(['RACE-7', '--account', account], captureIo())));

    expect(codes).toEqual([0, 0, 0, 0, 0]);
    expect((await adjustmentRecords(account)).map((record) => record.kind === 'adjustment' && record.adjustmentId).sort()).toEqual(['RACE-7', 'revert:RACE-7']);
  });

  it('takes a twin revert recorded while it read the total as a rerun, not as a second correction that goes negative', async () => {
    const account = uniqueId('rev');
    await runAdjust(adjustArgs(account, { delta: '40', id: 'TWIN-1' }), captureIo(), env);
    const store = new DynamoAdjustmentStore({ client: dynamodb, tableName: info.table });
    const revert = revertOf((await store.find(account, 'TWIN-1'))!);
    const opened = openTarget({}, env, process.cwd());
    // The twin lands just before this run's read of the day's total, as two operators' runs can interleave.
    let twinRecorded = false;
    opened.clients.dynamodb.middlewareStack.add(
      (next, context) => async (args) => {
        if (!twinRecorded && context.commandName === 'QueryCommand') {
          twinRecorded = true;
          await store.record(revert, 'twin');
        }
        return next(args);
      },
      { step: 'initialize', name: 'recordTwinRevert' },
    );
    const io = captureIo();

    const code = await storeCorrection(revert, { command: 'adjustments revert', actor: 'ops-tester' }, { context: { io, env, cwd: process.cwd(), now: () => new Date() }, opened });
    opened.close();

    expect(twinRecorded).toBe(true);
    expect({ code, stderr: io.stderr }).toEqual({ code: 0, stderr: '' });
    expect((await adjustmentRecords(account)).map((record) => record.kind === 'adjustment' && record.adjustmentId).sort()).toEqual(['TWIN-1', 'revert:TWIN-1']);
  });

  it('refuses an unknown id, a revert of a revert, a malformed id, and a revert that would make the total negative', async () => {
    const set = await putLogSet({ days: ['2026-11-21'], hours: [12], accounts: 1 });
    await ingestFully(set.refs[0]!);
    const account = set.accounts[0]!;
    const measured = set.expected.usage.get(`${account}|2026-11-21`)!.requests!;
    await runAdjust(adjustArgs(account, { delta: '10', id: 'UP-1' }, false), captureIo(), env);
    await runAdjust(adjustArgs(account, { delta: String(-measured - 10), id: 'DOWN-1' }, false), captureIo(), env);
    await runAdjust(adjustArgs(account, { delta: '5', id: 'X-1' }, false), captureIo(), env);
    await runRevert(['X-1', '--account', account], captureIo());

    const outcomes: Record<string, { code: number; stderr: string }> = {};
    for (const [name, argv] of Object.entries({
      unknown: ['NOPE-1', '--account', account],
      revertOfRevert: ['revert:X-1', '--account', account],
      malformed: ['../x', '--account', account],
      negative: ['UP-1', '--account', account, '--dry-run'],
    })) {
      const io = captureIo();
      outcomes[name] = { code: await runRevert(argv, io), stderr: io.stderr };
    }
    const forced = captureIo();
    const forcedCode = await runRevert(['UP-1', '--account', account, '--dry-run', '--allow-negative'], forced);

    expect(outcomes.unknown).toEqual({ code: 2, stderr: `tally adjustments revert: no adjustment "NOPE-1" for account ${account}: tally adjustments --account ${account} lists them\n` });
    expect(outcomes.revertOfRevert!.code).toBe(2);
    expect(outcomes.revertOfRevert!.stderr).toMatch(/revert:X-1 is itself a revert of X-1: record a new correction with tally adjust instead/);
    expect(outcomes.malformed!.code).toBe(2);
    expect(outcomes.negative).toEqual({
      code: 2,
      stderr: `tally adjustments revert: this would take the billable requests of ${account} on 2026-11-21 below zero: 0 - 10 = -10; check the delta, or pass --allow-negative to record it anyway\n`,
    });
    expect(forcedCode).toBe(0);
    expect(forced.stdout).toMatch(/^dry run: would record adjustment revert:UP-1/);
  });
});
