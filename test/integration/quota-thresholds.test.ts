import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand, DeleteMessageBatchCommand } from '@aws-sdk/client-sqs';
import { ingestBatch, type IngestDeps } from '../../src/app/ingest/ingest';
import { silentLog } from '../../src/app/log';
import { evaluateThresholds, THRESHOLD_SEND_LEASE_SECONDS, type ThresholdDeps, type ThresholdReport } from '../../src/app/billing/thresholds';
import type { WebhookOutbox } from '../../src/app/ports';
import { DynamoAdjustmentStore } from '../../src/adapters/dynamodb/dynamodb-adjustments';
import { DynamoQuotaStore, DynamoThresholdStore } from '../../src/adapters/dynamodb/dynamodb-quotas';
import { readThresholdConfig } from '../../src/adapters/wiring/handoff-config';
import { createThresholdDeps } from '../../src/adapters/wiring/handoff-deps';
import type { ThresholdEvent } from '../../src/domain/billing/webhook';
import { generateLog } from '../../src/local/demo/log-generator';
import { DynamoMonthRechecks } from '../../src/adapters/dynamodb/dynamodb-quotas';
import { quotaBlock } from '../../src/app/reading/quota-status';
import { captureIo, tallyCommand } from '../support/cli';
import { closeOk, handoffTable, testCloser } from '../support/handoff';
import { createTestQueues, putLogObject, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';

const info = testStackInfo();
const { dynamodb, sqs } = testClients(info);

/** Mid-June 2026: days 19 and 20 are open, so ingest writes no late markers for them. */
const EVAL_AT = new Date('2026-06-20T12:00:00Z');
const at = (date: Date) => () => date;
const later = (date: Date, seconds: number) => new Date(date.getTime() + seconds * 1000);

let table: string;
let env: Record<string, string>;
beforeAll(async () => {
  ({ table, env } = await handoffTable(info));
});

/** A webhook queue of the test's own, and every message on it (drained, so each test sees its own). */
async function webhookQueue(): Promise<{ queueUrl: string; drain(): Promise<ThresholdEvent[]> }> {
  const { queueUrl } = await createTestQueues(info, { visibilityTimeoutSeconds: 60, maxReceiveCount: 5 });
  return {
    queueUrl,
    async drain() {
      const events: ThresholdEvent[] = [];
      for (;;) {
        const page = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, VisibilityTimeout: 60 }));
        const messages = page.Messages ?? [];
        if (messages.length === 0) return events;
        events.push(...messages.map((message) => JSON.parse(message.Body!) as ThresholdEvent));
        await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }));
      }
    },
  };
}

function evaluator(queueUrl: string | undefined, when: Date, overrides: Record<string, string> = {}, extra: Partial<ThresholdDeps> = {}): ThresholdDeps {
  const config = readThresholdConfig({ ...env, ...overrides, ...(queueUrl === undefined ? {} : { TALLY_WEBHOOK_QUEUE_URL: queueUrl }) });
  return { ...createThresholdDeps(config, { dynamodb, sqs }, silentLog, { clock: at(when) }), ...extra };
}

async function evaluateOk(deps: ThresholdDeps, options: Parameters<typeof evaluateThresholds>[1] = {}): Promise<ThresholdReport> {
  const report = await evaluateThresholds(deps, options);
  expect(report.failed).toBe(0);
  return report;
}

const quotas = () => new DynamoQuotaStore({ client: dynamodb, tableName: table });

/** Sets `account`'s requests allowance from `from` (June 2026, the tests' month, by default) on. */
async function setQuota(account: string, monthly: number, from = '2026-06'): Promise<void> {
  await quotas().set({ account, metric: 'requests', period: { from, monthly }, updatedAt: EVAL_AT.toISOString() });
}
const thresholds = () => new DynamoThresholdStore({ client: dynamodb, tableName: table });

/** One log object of `lines` requests, all of `account` on `day`; its notification. */
async function logOf(account: string, day: string, hour: number, lines: number) {
  const log = generateLog({ seed: hour * 7919 + lines, day, hour, distribution: 'E2QUOTA', accounts: [{ id: account, weight: 1 }], lines, previousDayRate: 0, malformedRate: 0, unattributedRate: 0 });
  const ref = await putLogObject(`cloudfront/${uniqueId('E2QUOTA')}.${day}-${String(hour).padStart(2, '0')}.x.gz`, log.text);
  return s3NotificationMessage(ref);
}

async function ingest(deps: IngestDeps, messages: ReturnType<typeof s3NotificationMessage>[], when = EVAL_AT): Promise<void> {
  const result = await ingestBatch({ Records: messages }, { ...deps, clock: at(when) });
  expect(result.batchItemFailures).toEqual([]);
}

async function addUsage(account: string, day: string, delta: number): Promise<void> {
  const store = new DynamoAdjustmentStore({ client: dynamodb, tableName: table, clock: at(EVAL_AT) });
  await store.record({ account, day, adjustmentId: uniqueId('adj'), metric: 'requests', delta, reason: 'test usage' }, 'test');
}

describe('usage thresholds: one usage.threshold event per (account, metric, month, level)', () => {
  it('fires 80% and 100% once each while three consumers ingest with redeliveries and three evaluators run at once', async () => {
    const account = uniqueId('acct');
    const queue = await webhookQueue();
    await setQuota(account, 100);
    // Ten objects of 10 requests: 80% after eight, 100% after ten.
    const messages = await Promise.all(Array.from({ length: 10 }, (_, i) => logOf(account, i < 5 ? '2026-06-19' : '2026-06-20', i, 10)));
    const consumers = [testIngestDeps({ TALLY_TABLE: table }), testIngestDeps({ TALLY_TABLE: table }), testIngestDeps({ TALLY_TABLE: table })];
    const evaluators = [evaluator(queue.queueUrl, EVAL_AT), evaluator(queue.queueUrl, EVAL_AT), evaluator(queue.queueUrl, EVAL_AT)];

    let ingesting = true;
    const evaluating = evaluators.map(async (deps) => {
      while (ingesting) await evaluateOk(deps);
    });
    // Each object reaches two consumers (a redelivery), in batches that overlap.
    for (let start = 0; start < messages.length; start += 2) {
      const batch = messages.slice(start, start + 2);
      await Promise.all(consumers.map((deps, i) => ingest(deps, i === 2 ? [...batch].reverse() : batch)));
    }
    await ingest(consumers[0]!, messages);
    ingesting = false;
    await Promise.all(evaluating);
    await Promise.all(evaluators.map((deps) => evaluateOk(deps)));

    const events = (await queue.drain()).filter((event) => event.data.account === account);
    expect(events.map((event) => event.data.level).sort((a, b) => a - b)).toEqual([80, 100]);
    expect(new Set(events.map((event) => event.id)).size).toBe(2);
    for (const event of events) {
      expect(event.type).toBe('usage.threshold');
      expect(Object.keys(event.data).sort()).toEqual(['account', 'allowance', 'level', 'metric', 'month', 'used']);
      expect(event.data).toMatchObject({ account, metric: 'requests', month: '2026-06', allowance: 100 });
      expect(event.data.used * 100).toBeGreaterThanOrEqual(event.data.level * 100);
    }
    const recorded = await thresholds().crossings('2026-06', account);
    expect(recorded.map((crossing) => [crossing.level, crossing.notifiedAt !== undefined])).toEqual([[80, true], [100, true]]);
  });

  it('sends the event of a crossing whose run died before queueing it, once, after the lease, whichever of three runs takes it', async () => {
    const account = uniqueId('acct');
    const queue = await webhookQueue();
    await setQuota(account, 10);
    await addUsage(account, '2026-06-10', 9);
    const dying: WebhookOutbox = {
      enqueue: () => Promise.reject(new Error('the process died before SendMessage')),
    };

    const first = await evaluateThresholds(evaluator(queue.queueUrl, EVAL_AT, {}, { outbox: dying }), { accounts: [account] });
    const soon = await evaluateOk(evaluator(queue.queueUrl, later(EVAL_AT, 60)), { accounts: [account] });
    const afterLease = later(EVAL_AT, THRESHOLD_SEND_LEASE_SECONDS + 1);
    const runs = await Promise.all([0, 1, 2].map(() => evaluateOk(evaluator(queue.queueUrl, afterLease), { accounts: [account] })));

    expect(first.crossed.map((crossing) => crossing.level)).toEqual([80]);
    expect(first.failed).toBe(1);
    expect(soon.sent).toEqual([]);
    expect(runs.flatMap((run) => run.sent)).toHaveLength(1);
    const events = await queue.drain();
    expect(events.map((event) => [event.data.level, event.data.used, event.createdAt])).toEqual([[80, 9, EVAL_AT.toISOString()]]);
  });

  it('re-evaluates a quota changed mid-month: a level left behind by a raise alerts again once reached, a lowered one does not repeat a level still reached', async () => {
    const account = uniqueId('acct');
    const queue = await webhookQueue();
    const deps = evaluator(queue.queueUrl, EVAL_AT);
    await setQuota(account, 1000);
    await ingest(testIngestDeps({ TALLY_TABLE: table }), [await logOf(account, '2026-06-20', 3, 50)]);
    await addUsage(account, '2026-06-02', 800);

    const at850 = await evaluateOk(deps, { accounts: [account] });
    await setQuota(account, 2000);
    const raised = await evaluateOk(deps, { accounts: [account] });
    await addUsage(account, '2026-06-03', 850);
    const at1700of2000 = await evaluateOk(deps, { accounts: [account] });
    await setQuota(account, 1500);
    const lowered = await evaluateOk(deps, { accounts: [account] });
    const again = await evaluateOk(deps, { accounts: [account] });

    expect(at850.crossed.map((c) => [c.level, c.used, c.allowance])).toEqual([[80, 850, 1000]]);
    expect(raised.crossed).toEqual([]);
    expect(at1700of2000.crossed.map((c) => [c.level, c.used, c.allowance])).toEqual([[80, 1700, 2000]]);
    // 80% of 2000 was alerted at 1700, past 80% of 1500 already: only 100% is new.
    expect(lowered.crossed.map((c) => [c.level, c.used, c.allowance])).toEqual([[100, 1700, 1500]]);
    expect(again.crossed).toEqual([]);
    const events = await queue.drain();
    expect(events.map((event) => [event.data.level, event.data.allowance])).toEqual([[80, 1000], [80, 2000], [100, 1500]]);
    expect(new Set(events.map((event) => event.id)).size).toBe(3);
  });

  it('withdraws a pending alert whose level a raised allowance no longer reaches, shows it as history, and alerts once when the level is reached under the new allowance', async () => {
    const account = uniqueId('acct');
    const queue = await webhookQueue();
    await setQuota(account, 6178);
    await addUsage(account, '2026-06-02', 5000);
    // Webhooks off: 80% of 6,178 is recorded, its alert pending.
    const off = await evaluateOk(evaluator(undefined, EVAL_AT), { accounts: [account] });
    await setQuota(account, 1_000_000);
    // The next run, past the lease the recording run took.
    const next = later(EVAL_AT, 2 * THRESHOLD_SEND_LEASE_SECONDS);
    const deps = evaluator(queue.queueUrl, next);
    const raised = await evaluateOk(deps, { accounts: [account] });
    const block = await quotaBlock({ ...deps, metricNames: ['requests'] }, account, next);
    const afterRaise = await queue.drain();
    await addUsage(account, '2026-06-10', 795_000);
    const reached = await evaluateOk(deps, { accounts: [account] });
    const rerun = await evaluateOk(evaluator(queue.queueUrl, later(next, 2 * THRESHOLD_SEND_LEASE_SECONDS)), { accounts: [account] });

    expect(off.crossed.map((c) => [c.level, c.allowance])).toEqual([[80, 6178]]);
    expect(raised.withdrawn.map((c) => [c.level, c.allowance])).toEqual([[80, 6178]]);
    expect(raised.sent).toEqual([]);
    expect(afterRaise).toEqual([]);
    expect(block.metrics.requests).toMatchObject({ used: 5000, allowance: 1_000_000, percent: 0.5, crossed: [] });
    expect(block.metrics.requests!.earlier).toEqual([{ level: 80, used: 5000, allowance: 6178, crossedAt: EVAL_AT.toISOString(), withdrawnAt: next.toISOString() }]);
    expect(reached.crossed.map((c) => [c.level, c.used, c.allowance])).toEqual([[80, 800_000, 1_000_000]]);
    expect(rerun.crossed).toEqual([]);
    expect(rerun.sent).toEqual([]);
    const events = await queue.drain();
    expect(events.map((event) => [event.data.level, event.data.used, event.data.allowance])).toEqual([[80, 800_000, 1_000_000]]);
  });

  it('withdraws at once, webhooks off, a pending alert of an allowance raised since: a run without a webhook queue holds no send lease', async () => {
    const account = uniqueId('acct');
    const deps = evaluator(undefined, EVAL_AT);
    await setQuota(account, 6178);
    await addUsage(account, '2026-06-02', 5000);
    const before = await evaluateOk(deps, { accounts: [account] });
    await setQuota(account, 1_000_000);
    const raised = await evaluateOk(deps, { accounts: [account] });

    expect(before.crossed.map((c) => c.level)).toEqual([80]);
    expect(raised.withdrawn.map((c) => [c.level, c.allowance])).toEqual([[80, 6178]]);
    expect(raised.pending).toBe(0);
  });

  it('keeps an alert already sent as history when the allowance is raised past it', async () => {
    const account = uniqueId('acct');
    const queue = await webhookQueue();
    const deps = evaluator(queue.queueUrl, EVAL_AT);
    await setQuota(account, 6178);
    await addUsage(account, '2026-06-02', 5000);
    await evaluateOk(deps, { accounts: [account] });
    await setQuota(account, 1_000_000);
    const raised = await evaluateOk(deps, { accounts: [account] });
    const block = await quotaBlock({ ...deps, metricNames: ['requests'] }, account, EVAL_AT);

    expect(raised.withdrawn).toEqual([]);
    expect(block.metrics.requests!.crossed).toEqual([]);
    expect(block.metrics.requests!.earlier).toEqual([{ level: 80, used: 5000, allowance: 6178, crossedAt: EVAL_AT.toISOString(), notifiedAt: EVAL_AT.toISOString() }]);
    expect((await queue.drain()).map((event) => [event.data.level, event.data.allowance])).toEqual([[80, 6178]]);
  });

  it('alerts once for each level an allowance lowered mid-month puts usage past, pending ones of the old allowance withdrawn', async () => {
    const account = uniqueId('acct');
    const queue = await webhookQueue();
    await setQuota(account, 1000);
    await addUsage(account, '2026-06-02', 850);
    // 80% of 1000 pending (webhooks off) when the allowance is lowered to 800: 850 is past 80% and 100% of it.
    await evaluateOk(evaluator(undefined, EVAL_AT), { accounts: [account] });
    await setQuota(account, 800);
    const next = later(EVAL_AT, 2 * THRESHOLD_SEND_LEASE_SECONDS);
    const deps = evaluator(queue.queueUrl, next);
    const lowered = await Promise.all([evaluateThresholds(deps, { accounts: [account] }), evaluateThresholds(deps, { accounts: [account] })]);
    const again = await evaluateOk(evaluator(queue.queueUrl, later(next, 2 * THRESHOLD_SEND_LEASE_SECONDS)), { accounts: [account] });
    const block = await quotaBlock({ ...deps, metricNames: ['requests'] }, account, next);

    expect(lowered.flatMap((report) => report.crossed).map((c) => [c.level, c.allowance]).sort()).toEqual([[100, 800], [80, 800]]);
    expect(lowered.flatMap((report) => report.withdrawn).map((c) => [c.level, c.allowance])).toEqual([[80, 1000]]);
    expect(again.crossed).toEqual([]);
    const events = await queue.drain();
    expect(events.map((event) => [event.data.level, event.data.used, event.data.allowance]).sort()).toEqual([[100, 850, 800], [80, 850, 800]]);
    expect(block.metrics.requests!.crossed.map((c) => [c.level, c.allowance])).toEqual([[80, 800], [100, 800]]);
    expect(block.metrics.requests!.earlier.map((c) => [c.level, c.allowance, c.withdrawnAt !== undefined])).toEqual([[80, 1000, true]]);
  });

  it('writes a withdrawn alert anew, and sends it once, when its allowance comes back in force', async () => {
    const account = uniqueId('acct');
    const queue = await webhookQueue();
    await setQuota(account, 1000);
    await addUsage(account, '2026-06-02', 850);
    await evaluateOk(evaluator(undefined, EVAL_AT), { accounts: [account] });
    await setQuota(account, 5000);
    const deps = evaluator(queue.queueUrl, later(EVAL_AT, 2 * THRESHOLD_SEND_LEASE_SECONDS));
    const raised = await evaluateOk(deps, { accounts: [account] });
    await setQuota(account, 1000);
    const back = await evaluateOk(deps, { accounts: [account] });
    const again = await evaluateOk(deps, { accounts: [account] });

    expect(raised.withdrawn.map((c) => c.allowance)).toEqual([1000]);
    expect(back.crossed.map((c) => [c.level, c.allowance])).toEqual([[80, 1000]]);
    expect(again.crossed).toEqual([]);
    expect((await queue.drain()).map((event) => [event.data.level, event.data.allowance])).toEqual([[80, 1000]]);
    expect((await thresholds().crossings('2026-06', account)).map((c) => [c.level, c.allowance, c.notifiedAt !== undefined, c.withdrawnAt !== undefined])).toEqual([[80, 1000, true, false]]);
  });

  it('sends, or withdraws, a pending crossing stored before crossings were keyed by allowance, under its own key', async () => {
    const [kept, raised] = [uniqueId('acct'), uniqueId('acct')];
    const queue = await webhookQueue();
    for (const account of [kept, raised]) {
      await setQuota(account, 1000);
      await addUsage(account, '2026-06-02', 850);
      // As an older version wrote it: SK without the allowance, its run gone before queueing the event.
      await dynamodb.send(
        new PutItemCommand({
          TableName: table,
          Item: {
            PK: { S: 'THRESHOLD#2026-06' }, SK: { S: `${account}#requests#080` }, account: { S: account }, metric: { S: 'requests' }, month: { S: '2026-06' },
            level: { N: '80' }, allowance: { N: '1000' }, used: { N: '850' }, crossedAt: { S: EVAL_AT.toISOString() }, sendingAt: { S: EVAL_AT.toISOString() },
          },
        }),
      );
    }
    await setQuota(raised, 5000);
    const report = await evaluateOk(evaluator(queue.queueUrl, later(EVAL_AT, 2 * THRESHOLD_SEND_LEASE_SECONDS)), { accounts: [kept, raised] });
    const again = await evaluateOk(evaluator(queue.queueUrl, later(EVAL_AT, 4 * THRESHOLD_SEND_LEASE_SECONDS)), { accounts: [kept, raised] });

    expect(report.crossed).toEqual([]);
    expect(report.withdrawn.map((c) => c.account)).toEqual([raised]);
    expect(report.sent).toHaveLength(1);
    expect(again.sent).toEqual([]);
    expect((await queue.drain()).map((event) => [event.data.account, event.data.level, event.data.allowance])).toEqual([[kept, 80, 1000]]);
    const stored = [...(await thresholds().crossings('2026-06', kept)), ...(await thresholds().crossings('2026-06', raised))];
    expect(stored.map((c) => [c.account, c.notifiedAt !== undefined, c.withdrawnAt !== undefined])).toEqual([[kept, true, false], [raised, false, true]]);
  });

  it('never fires for an account without a quota, however much it uses', async () => {
    const withQuota = uniqueId('acct');
    const without = uniqueId('acct');
    const queue = await webhookQueue();
    await setQuota(withQuota, 5);
    await addUsage(withQuota, '2026-06-20', 10);
    await ingest(testIngestDeps({ TALLY_TABLE: table }), [await logOf(without, '2026-06-20', 5, 40)]);
    await addUsage(without, '2026-06-20', 1_000_000);

    const report = await evaluateOk(evaluator(queue.queueUrl, EVAL_AT), { accounts: [withQuota, without] });

    expect(report.crossed.map((c) => c.account)).toEqual([withQuota, withQuota]);
    expect(await thresholds().crossings('2026-06', without)).toEqual([]);
    expect((await queue.drain()).filter((event) => event.data.account === without)).toEqual([]);
  });

  it('gives every active account the TALLY_QUOTAS default; an own quota wins over it', async () => {
    const defaulted = uniqueId('acct');
    const own = uniqueId('acct');
    const queue = await webhookQueue();
    await ingest(testIngestDeps({ TALLY_TABLE: table }), [await logOf(defaulted, '2026-06-20', 6, 30), await logOf(own, '2026-06-20', 7, 30)]);
    await setQuota(own, 1000);

    const report = await evaluateOk(evaluator(queue.queueUrl, EVAL_AT, { TALLY_QUOTAS: '{"requests": 30}', TALLY_QUOTA_LEVELS: '50,100' }));

    expect(report.crossed.filter((c) => c.account === defaulted).map((c) => [c.level, c.allowance])).toEqual([[50, 30], [100, 30]]);
    expect(report.crossed.filter((c) => c.account === own)).toEqual([]);
  });

  it("fires the previous month's level when a late log for its last day arrives on the 1st", async () => {
    const account = uniqueId('acct');
    const queue = await webhookQueue();
    const firstOfJuly = new Date('2026-07-01T10:00:00Z');
    await setQuota(account, 100);
    await addUsage(account, '2026-06-29', 70);
    const before = await evaluateOk(evaluator(queue.queueUrl, firstOfJuly), { accounts: [account] });

    await ingest(testIngestDeps({ TALLY_TABLE: table }), [await logOf(account, '2026-06-30', 23, 20)], firstOfJuly);
    const after = await evaluateOk(evaluator(queue.queueUrl, firstOfJuly), { accounts: [account] });

    expect(before.months).toEqual(['2026-06', '2026-07']);
    expect(before.crossed).toEqual([]);
    expect(after.crossed.map((c) => [c.month, c.level, c.used])).toEqual([['2026-06', 80, 90]]);
    expect((await queue.drain()).map((event) => event.data.month)).toEqual(['2026-06']);
  });
});

describe('usage thresholds: late changes to a month the schedule no longer looks at', () => {
  const rechecks = () => new DynamoMonthRechecks({ client: dynamodb, tableName: table });
  const markedMonths = async () => (await rechecks().marked()).map((marker) => marker.month);

  it("fires an earlier month's level once when the closer turns late usage of its closed day into a revision", async () => {
    const account = uniqueId('acct');
    const queue = await webhookQueue();
    await setQuota(account, 100, '2026-03');
    await ingest(testIngestDeps({ TALLY_TABLE: table }), [await logOf(account, '2026-03-10', 1, 70)], new Date('2026-03-10T18:00:00Z'));
    await closeOk(testCloser(env, at(EVAL_AT)), { day: '2026-03-10' });
    const atClose = await evaluateOk(evaluator(queue.queueUrl, later(EVAL_AT, 120)));

    // Three months late (a DLQ replay, a backfill): the day is closed, so ingest marks it late.
    await ingest(testIngestDeps({ TALLY_TABLE: table }), [await logOf(account, '2026-03-10', 2, 20)], later(EVAL_AT, 180));
    const beforeRevision = await evaluateOk(evaluator(queue.queueUrl, later(EVAL_AT, 240)));
    const closed = await closeOk(testCloser(env, at(later(EVAL_AT, 300))));
    const afterRevision = await evaluateOk(evaluator(queue.queueUrl, later(EVAL_AT, 420)));
    const rerun = await evaluateOk(evaluator(queue.queueUrl, later(EVAL_AT, 480)));

    expect(atClose.months).toContain('2026-03');
    expect(atClose.crossed.filter((c) => c.account === account)).toEqual([]);
    expect(beforeRevision.months).not.toContain('2026-03');
    expect(closed.days.find((day) => day.day === '2026-03-10')?.action).toBe('revised');
    expect(afterRevision.months).toContain('2026-03');
    expect(afterRevision.crossed.filter((c) => c.account === account).map((c) => [c.month, c.level, c.used, c.allowance])).toEqual([['2026-03', 80, 90, 100]]);
    expect(rerun.crossed.filter((c) => c.account === account)).toEqual([]);
    expect(rerun.months).not.toContain('2026-03');
    const events = (await queue.drain()).filter((event) => event.data.account === account);
    expect(events.map((event) => [event.type, event.data.month, event.data.level])).toEqual([['usage.threshold', '2026-03', 80]]);
    expect(await markedMonths()).not.toContain('2026-03');
  });

  it("fires an earlier month's level once when tally adjust corrects one of its days", async () => {
    const account = uniqueId('acct');
    const queue = await webhookQueue();
    await setQuota(account, 100, '2026-04');
    await ingest(testIngestDeps({ TALLY_TABLE: table }), [await logOf(account, '2026-04-10', 1, 10)], new Date('2026-04-10T18:00:00Z'));
    const io = captureIo();

    const code = await tallyCommand('adjust')(
      ['--account', account, '--day', '2026-04-11', '--metric', 'requests', '--delta', '75', '--reason', 'missed logs', '--id', uniqueId('INC')],
      io,
      env,
      process.cwd(),
      at(EVAL_AT),
    );
    const soon = await evaluateOk(evaluator(queue.queueUrl, later(EVAL_AT, 10)));
    const settled = await evaluateOk(evaluator(queue.queueUrl, later(EVAL_AT, 120)));
    const rerun = await evaluateOk(evaluator(queue.queueUrl, later(EVAL_AT, 180)));

    expect([code, io.stderr]).toEqual([0, '']);
    expect(soon.crossed.filter((c) => c.account === account).map((c) => [c.month, c.level, c.used])).toEqual([['2026-04', 80, 85]]);
    // Kept until month-to-date (eventually consistent) surely shows the change; firing again is impossible anyway.
    expect(settled.months).toContain('2026-04');
    expect(settled.crossed.filter((c) => c.account === account)).toEqual([]);
    expect(rerun.months).not.toContain('2026-04');
    const events = (await queue.drain()).filter((event) => event.data.account === account);
    expect(events.map((event) => [event.data.month, event.data.level, event.data.used])).toEqual([['2026-04', 80, 85]]);
  });
});
