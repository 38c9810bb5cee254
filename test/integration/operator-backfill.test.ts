import { tallyCommand } from '../support/cli';
import { queueDepth } from '../../src/local/pipeline/poller';
import { captureIo, countersOf, eventually, expectedOf, halfIngest, ingestFully, operatorEnv, putLogSet, startConsumer } from '../support/operator';
import { createTestQueues, putLogObject, testClients, testStackInfo } from '../support/stack';
import { SHORT_WAIT_MS } from '../support/time-limits';

const runBackfill = tallyCommand('backfill');

const info = testStackInfo();
const { sqs } = testClients(info);

async function waiting(queueUrl: string): Promise<number> {
  const depth = await queueDepth(sqs, queueUrl);
  return depth.visible + depth.inFlight;
}

describe('tally backfill', () => {
  it('changes nothing for days that were fully ingested, inline or through the queue', async () => {
    const queues = await createTestQueues(info);
    const set = await putLogSet({ days: ['2026-11-20', '2026-11-21'] });
    for (const ref of set.refs) await ingestFully(ref);
    const env = operatorEnv(info, { ...queues, prefix: set.prefix });
    const before = await countersOf(set, ['2026-11-19', '2026-11-20', '2026-11-21']);

    const inline = captureIo();
    const inlineCode = await runBackfill(['--from', '2026-11-20', '--to', '2026-11-21', '--inline'], inline, env);
    const queued = captureIo();
    const queuedCode = await runBackfill(['--from', '2026-11-20', '--to', '2026-11-21'], queued, env);
    const after = await countersOf(set, ['2026-11-19', '2026-11-20', '2026-11-21']);

    expect(before.got).toEqual(before.want);
    expect(after.got).toEqual(before.got);
    expect([inlineCode, queuedCode]).toEqual([0, 0]);
    expect(inline.stdout).toMatch(/listed 4 object\(s\) under the prefix; 4 named 2026-11-20..2026-11-21/);
    expect(inline.stdout).toMatch(/already counted 4 \(skipped\); counted now 0 \(increments applied 0/);
    expect(queued.stdout).toMatch(/already counted 4 \(skipped\); notifications sent 0; failed 0/);
    expect(await waiting(queues.queueUrl)).toBe(0);
  });

  it('completes half-counted objects exactly and leaves objects named on other days alone', async () => {
    const set = await putLogSet({ days: ['2026-11-20', '2026-11-21', '2026-11-22'] });
    const named21 = set.refs.filter((ref) => ref.key.includes('.2026-11-21-'));
    await halfIngest(named21[0]!, 2);
    await halfIngest(named21[1]!, 1);
    const env = operatorEnv(info, { prefix: set.prefix });
    const days = ['2026-11-19', '2026-11-20', '2026-11-21', '2026-11-22'];

    const io = captureIo();
    const code = await runBackfill(['--from', '2026-11-21', '--to', '2026-11-21', '--inline'], io, env);
    const afterOneDay = await countersOf(set, days, expectedOf(set, named21));
    const again = await runBackfill(['--from', '2026-11-21', '--to', '2026-11-21', '--inline'], captureIo(), env);
    const whole = await runBackfill(['--from', '2026-11-20', '--to', '2026-11-22', '--inline'], captureIo(), env);
    const afterAll = await countersOf(set, days);

    expect(code).toBe(0);
    expect(io.stdout).toMatch(/already counted 0 \(skipped\); counted now 2 \(increments applied \d+, already applied by an earlier attempt 3\)/);
    expect(afterOneDay.got).toEqual(afterOneDay.want);
    expect([again, whole]).toEqual([0, 0]);
    expect(afterAll.got).toEqual(afterAll.want);
  });

  it('sends notifications no faster than --rate; --dry-run sends none; the consumer counts them exactly', async () => {
    const queues = await createTestQueues(info);
    const set = await putLogSet({ days: ['2026-11-21'], hours: [0, 4, 8, 12, 16, 20] });
    const env = operatorEnv(info, { ...queues, prefix: set.prefix });

    const dry = captureIo();
    const dryCode = await runBackfill(['--from', '2026-11-21', '--to', '2026-11-21', '--dry-run'], dry, env);
    const queuedByDryRun = await waiting(queues.queueUrl);
    const started = Date.now();
    const sent = captureIo();
    const sentCode = await runBackfill(['--from', '2026-11-21', '--to', '2026-11-21', '--rate', '4'], sent, env);
    const elapsed = Date.now() - started;
    const queued = (await queueDepth(sqs, queues.queueUrl)).visible;
    const consumer = startConsumer(queues);
    try {
      await eventually(async () => (await waiting(queues.queueUrl)) === 0, SHORT_WAIT_MS, 'the consumer to drain the queue');
    } finally {
      await consumer.stop();
    }
    const { got, want } = await countersOf(set, ['2026-11-20', '2026-11-21']);

    expect([dryCode, sentCode]).toEqual([0, 0]);
    expect(dry.stdout).toMatch(/dry run: already counted 0; would send 6; nothing changed/);
    expect(queuedByDryRun).toBe(0);
    expect(sent.stdout).toMatch(/notifications sent 6; failed 0/);
    expect(queued).toBe(6);
    expect(elapsed).toBeGreaterThanOrEqual((5 / 4) * 1000 - 50);
    expect(got).toEqual(want);
  });

  it('selects objects by the day in every v2 and Firehose key layout, and leaves keys naming no day alone', async () => {
    const hh = (hour: number) => String(hour).padStart(2, '0');
    const uuid = (unique: string) => `${unique.replace(/[^0-9a-f]/g, '').padEnd(8, '0').slice(0, 8)}-d9cb-469f-a165-70867728950e`;
    const layouts = [
      (prefix: string, day: string, hour: number) => `${prefix}AWSLogs/123456789012/CloudFront/E3PART/${day.replaceAll('-', '/')}/${hh(hour)}/part.json.gz`,
      (prefix: string, day: string, hour: number) => {
        const [year, month, dd] = day.split('-');
        return `${prefix}AWSLogs/123456789012/CloudFront/DistributionId=E3HIVE/year=${year}/month=${month}/day=${dd}/hour=${hh(hour)}/f.log.gz`;
      },
      (prefix: string, day: string, hour: number, unique: string) => `${prefix}${day.replaceAll('-', '/')}/${hh(hour)}/cf-logs-1-${day}-${hh(hour)}-15-42-${uuid(unique)}.gz`,
    ];
    const sets = [];
    for (const keyOf of layouts) sets.push(await putLogSet({ days: ['2026-11-21', '2026-11-22'], hours: [6], keyOf }));

    const results = [];
    for (const set of sets) {
      await putLogObject(`${set.prefix}AWSLogs/123456789012/CloudFront/E3PART/notes.json.gz`, 'not a log');
      const io = captureIo();
      const code = await runBackfill(['--from', '2026-11-21', '--to', '2026-11-21', '--inline'], io, operatorEnv(info, { prefix: set.prefix }));
      const named21 = set.refs.filter((ref) => /2026.11.21|day=21/.test(ref.key));
      results.push({ code, stdout: io.stdout, counters: await countersOf(set, ['2026-11-20', '2026-11-21', '2026-11-22'], expectedOf(set, named21)) });
    }

    for (const { code, stdout, counters } of results) {
      expect(code).toBe(0);
      expect(stdout).toMatch(/listed 3 object\(s\) under the prefix; 1 named 2026-11-21..2026-11-21 \(1 not named like CloudFront logs, left alone\)/);
      expect(stdout).toMatch(/counted now 1 /);
      expect(counters.got).toEqual(counters.want);
    }
  });

  it('reports a poison object, counts the rest and exits 1', async () => {
    const set = await putLogSet({ days: ['2026-11-21'], hours: [0] });
    await putLogObject(`${set.prefix}E2OPS.2026-11-21-05.broken.gz`, Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x01]));
    const env = operatorEnv(info, { prefix: set.prefix });

    const io = captureIo();
    const code = await runBackfill(['--from', '2026-11-21', '--to', '2026-11-21', '--inline'], io, env);
    const { got, want } = await countersOf(set, ['2026-11-20', '2026-11-21']);

    expect(code).toBe(1);
    expect(io.stdout).toMatch(/counted now 1 .*failed 1/);
    // The reason alone: the row names the object (tryout: 'PoisonObjectError: object s3://...broken.gz: cannot gunzip' repeated it).
    expect(io.stdout).toMatch(/broken\.gz +poison +cannot gunzip/);
    expect(io.stdout).not.toContain('PoisonObjectError');
    expect(got).toEqual(want);
  });
});
