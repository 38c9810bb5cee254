import { keysNeededPerShard, planCapacity, shardItemBytes } from '../../src/domain/counters/capacity-plan';
import { tallyCommand } from '../support/cli';
import { ValidationError } from '../../src/domain/errors';

const runPlan = tallyCommand('plan');

describe('tally plan (capacity arithmetic)', () => {
  it('sizes the default item as the README measures it: a full day of hours and 15 keys under 1 KB, 1 WCU, 1,000 writes/s', () => {
    const plan = planCapacity({ objectsPerAccountDay: 24, shards: 4, historyCap: 15 });

    expect(plan.itemBytes).toBeLessThan(1024);
    expect(plan.itemBytes).toBe(plan.fixedBytes + 15 * 17);
    // The worst case (15-digit values, a 64-character id, 7-digit drop counts) with 24
    // hours of requests and bytes: 48 hour attributes of 3 + 9 bytes beside the rest.
    expect(plan.fixedBytes).toBe(187 + 24 * 2 * (3 + 9));
    expect(plan.wcuPerIncrement).toBe(1);
    expect(plan.maxWritesPerSecondPerItem).toBe(1000);
    expect(plan.horizonObjects).toBe(60);
    expect(plan.warnings).toEqual([]);
    expect(planCapacity({ objectsPerAccountDay: 40 })).toMatchObject({ maxCapAtOneWcu: 15, historyCap: 15 });
  });

  it("counts a configured metric's 24 hours too: past 1 KB, the keys fill the second KB and the plan warns of 2 WCU", () => {
    const plan = planCapacity({ objectsPerAccountDay: 40, metricNames: ['requests', 'bytes', 'authorization_requests'] });

    // The day total `authorization_requests`, and 24 hour attributes named by its code (`05My6j1`, 7 characters) of 9 bytes each.
    expect(plan.fixedBytes).toBe(187 + 24 * 2 * (3 + 9) + 'authorization_requests'.length + 9 + 24 * (7 + 9));
    expect(plan).toMatchObject({ maxCapAtOneWcu: 0, wcuPerIncrement: 2 });
    expect(plan.itemBytes).toBeLessThanOrEqual(2048);
    expect(plan.warnings.join('\n')).toMatch(/every increment costs 2 WCU/);
    // More shards would not help (the counters and hours alone pass 1 KB): the plan must not advise them.
    expect(plan.warnings.join('\n')).not.toMatch(/use more shards/);
    expect(plan.warnings.join('\n')).toMatch(/alone are 1178 bytes at 15-digit values, so no shard count or cap gives 1 WCU.*--counter-digits/);
  });

  it('sizes every counter value at the given digits: at 10 digits one configured metric fits 1 KB', () => {
    const metricNames = ['requests', 'bytes', 'authorization_requests'];
    const plan = planCapacity({ objectsPerAccountDay: 40, metricNames, counterDigits: 10 });
    // 10 digits take 6 bytes (1 per two digits, + 1), 3 fewer than 15 on each of 3 day totals and 72 hourly sums.
    expect(plan.fixedBytes).toBe(planCapacity({ objectsPerAccountDay: 40, metricNames }).fixedBytes - 3 * (3 + 72));
    expect(plan).toMatchObject({ counterDigits: 10, wcuPerIncrement: 1, warnings: [] });
  });

  it('recommends the fewest shards whose history covers an account-day at 1 WCU per increment', () => {
    const plan = planCapacity({ objectsPerAccountDay: 300 });

    expect(plan.wcuPerIncrement).toBe(1);
    expect(plan.coversWindow).toBe(true);
    expect(plan.historyCap).toBeGreaterThanOrEqual(keysNeededPerShard(300, plan.shards));
    expect(keysNeededPerShard(300, plan.shards - 1)).toBeGreaterThan(plan.maxCapAtOneWcu);
    expect(plan.horizonHours).toBeGreaterThanOrEqual(24);
  });

  it('keeps the default cap when a few objects fit on one shard', () => {
    const plan = planCapacity({ objectsPerAccountDay: 12 });

    expect(plan).toMatchObject({ shards: 1, historyCap: 15, wcuPerIncrement: 1 });
  });

  it('covers only the stated window when asked: fewer shards for the last 6 hours', () => {
    const day = planCapacity({ objectsPerAccountDay: 400 });
    const sixHours = planCapacity({ objectsPerAccountDay: 400, windowHours: 6 });

    expect(sixHours.objectsInWindow).toBe(100);
    expect(sixHours.shards).toBeLessThan(day.shards);
    expect(sixHours.horizonHours).toBeGreaterThanOrEqual(6);
  });

  it('keeps items at 1 WCU when a fixed shard count is too small for the window: the horizon is short instead', () => {
    const plan = planCapacity({ objectsPerAccountDay: 2000, shards: 4 });

    expect(plan.wcuPerIncrement).toBe(1);
    expect(plan.historyCap).toBe(plan.maxCapAtOneWcu);
    expect(plan.coversWindow).toBe(false);
    expect(plan.warnings.join('\n')).toMatch(/less than the 24 h asked for: past it increments also write tombstones/);
    expect(plan.breaksLimit).toBe(false);
  });

  it('recommends at most 64 shards of 1 KB items for the busiest account-days, never larger items', () => {
    const plan = planCapacity({ objectsPerAccountDay: 100_000 });

    expect(plan).toMatchObject({ shards: 64, historyCap: plan.maxCapAtOneWcu, wcuPerIncrement: 1, coversWindow: false });
  });

  it('warns that a given cap too large for 1 KB costs more than 1 WCU per increment', () => {
    const plan = planCapacity({ objectsPerAccountDay: 2000, shards: 4, historyCap: 600 });

    expect(plan.wcuPerIncrement).toBeGreaterThan(1);
    expect(plan.maxWritesPerSecondPerItem).toBe(Math.floor(1000 / plan.wcuPerIncrement));
    expect(plan.warnings.join('\n')).toMatch(/costs \d+ WCU/);
    expect(plan.breaksLimit).toBe(false);
  });

  it('warns when the horizon is shorter than the window asked for', () => {
    const plan = planCapacity({ objectsPerAccountDay: 1000, shards: 2, historyCap: 48 });

    expect(plan.coversWindow).toBe(false);
    expect(plan.horizonHours).toBeCloseTo((96 / 1000) * 24, 5);
    expect(plan.warnings.join('\n')).toMatch(/less than the 24 h asked for/);
  });

  it('breaks the 400 KB item limit loudly', () => {
    const plan = planCapacity({ objectsPerAccountDay: 40_000, shards: 1, historyCap: 25_000 });

    expect(plan.itemBytes).toBeGreaterThan(400 * 1024);
    expect(plan.breaksLimit).toBe(true);
    expect(plan.warnings.join('\n')).toMatch(/400 KB item limit/);
  });

  it("warns when one account's average load is over a partition's 1,000 WCU/s", () => {
    const plan = planCapacity({ objectsPerAccountDay: 100_000_000, shards: 64, historyCap: 48, windowHours: 1 });

    expect(plan.accountWcuPerSecond).toBeGreaterThan(1000);
    expect(plan.warnings.join('\n')).toMatch(/1,000 WCU\/s of a partition/);
  });

  it('counts a remembered key as its list element (key + 1) plus its minute in t (4)', () => {
    const shape = { keyBytes: 12, accountIdChars: 10, metrics: [{ name: 'requests', digits: 4 }] };

    expect(shardItemBytes({ ...shape, keys: 10 }) - shardItemBytes({ ...shape, keys: 9 })).toBe(17);
  });

  it('refuses inputs that cannot be planned', () => {
    expect(() => planCapacity({ objectsPerAccountDay: 0 })).toThrow(ValidationError);
    expect(() => planCapacity({ objectsPerAccountDay: 10, keyBytes: 8 })).toThrow(ValidationError);
    expect(() => planCapacity({ objectsPerAccountDay: 10, windowHours: 48 })).toThrow(ValidationError);
  });

  it('refuses a shard count or cap the consumer would refuse, naming the limit, instead of planning it', () => {
    expect(() => planCapacity({ objectsPerAccountDay: 96, shards: 1000 })).toThrow(/shards \(TALLY_SHARDS' limit\) must be a whole number from 1 to 64, got 1000/);
    expect(() => planCapacity({ objectsPerAccountDay: 96, historyCap: 434_089_788 })).toThrow(/TALLY_HISTORY_CAP's limit: 25000.*from 1 to 25000, got 434089788/);
    // 16-byte keys: 350,000 / 17 = 20,588 keys at most.
    expect(() => planCapacity({ objectsPerAccountDay: 96, keyBytes: 16, historyCap: 20_589 })).toThrow(/from 1 to 20588, got 20589/);
    expect(planCapacity({ objectsPerAccountDay: 96, shards: 64, keyBytes: 16, historyCap: 20_588 }).historyCap).toBe(20_588);
  });

  it('rounds the window it names in a warning', () => {
    const plan = planCapacity({ objectsPerAccountDay: 20_000, shards: 1, historyCap: 48, windowHours: 2400 / 3600 });

    expect(plan.warnings.join('\n')).toMatch(/less than the 0\.67 h asked for/);
    expect(plan.warnings.join('\n')).not.toMatch(/0\.666/);
  });
});

describe('tally plan (command)', () => {
  const capture = () => {
    const io = { stdout: '', stderr: '', out: (t: string) => void (io.stdout += t), err: (t: string) => void (io.stderr += t) };
    return io;
  };

  it('sizes for the retention by default: 5,000 objects per account-day need 20 shards at 1 WCU, not 64 at 3', async () => {
    const io = capture();

    const code = await runPlan(['--objects-per-account-day', '5000'], io, { TALLY_SHARDS: '4' });

    expect(code).toBe(0);
    expect(io.stdout).toMatch(/horizon to cover 0\.67 h \(139 objects\)/);
    expect(io.stdout).toMatch(/TALLY_SHARDS=20 \(recommended\)/);
    expect(io.stdout).toMatch(/1 WCU per increment/);
    expect(io.stdout).toMatch(/on a live table TALLY_SHARDS=4,20@/);
  });

  it('sizes counter values at --counter-digits (default 15, the worst case)', async () => {
    const metrics = JSON.stringify([{ name: 'authorization_requests', path: '/api/authorization/*' }]);
    const worst = capture();
    const sized = capture();

    await runPlan(['--objects-per-account-day', '40', '--metrics', metrics], worst, {});
    const code = await runPlan(['--objects-per-account-day', '40', '--metrics', metrics, '--counter-digits', '10'], sized, {});

    expect(worst.stdout).toMatch(/hourly sums at 15-digit values/);
    expect(worst.stdout).toMatch(/cost +2 WCU per increment/);
    expect(code).toBe(0);
    expect(sized.stdout).toMatch(/hourly sums at 10-digit values/);
    expect(sized.stdout).toMatch(/cost +1 WCU per increment/);
  });

  it('prints the recommendation and exits 0', async () => {
    const io = capture();

    const code = await runPlan(['--objects-per-account-day', '96', '--hours', '24'], io, {});

    expect(code).toBe(0);
    expect(io.stdout).toMatch(/TALLY_SHARDS=14 \(recommended\)  TALLY_HISTORY_CAP=15 \(recommended\)/);
    expect(io.stdout).toMatch(/1 WCU per increment/);
  });

  it('exits 1 when the plan breaks the 400 KB item limit, and 2 on a bad flag', async () => {
    const broken = capture();
    const bad = capture();

    const brokenCode = await runPlan(['--objects-per-account-day', '40000', '--shards', '1', '--history-cap', '25000', '--json'], broken, {});
    const badCode = await runPlan(['--objects-per-account-day', 'many'], bad, {});

    expect(brokenCode).toBe(1);
    expect(JSON.parse(broken.stdout)).toMatchObject({ breaksLimit: true });
    expect(badCode).toBe(2);
    expect(bad.stderr).toMatch(/--objects-per-account-day must be a number/);
  });

  it('refuses --shards 1000 with exit 2 and prints no TALLY_SHARDS line to paste', async () => {
    const io = capture();

    const code = await runPlan(['--objects-per-account-day', '96', '--shards', '1000'], io, { TALLY_SHARDS: '4' });

    expect(code).toBe(2);
    expect(io.stderr).toMatch(/^tally plan: shards \(TALLY_SHARDS' limit\) must be a whole number from 1 to 64, got 1000/);
    expect(io.stdout).toBe('');
  });
});
