import { DeleteItemCommand, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { dayOf } from '../../src/domain/days';
import type { HealthReport } from '../../src/domain/reading/health';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { ingestBatch, type IngestDeps, type ObjectResult } from '../../src/app/ingest/ingest';
import { silentLog } from '../../src/app/log';
import { handleUsageApiRequest, type UsageApiDeps } from '../../src/app/reading/usage-api';
import { mintToken } from '../../src/adapters/http/jwt-tokens';
import type { DayExplanation } from '../../src/domain/reading/explanation';
import { ledgerKey } from '../../src/domain/counters/keys';
import type { LogObjectRef } from '../../src/domain/counters/log-object';
import { createLocalUsageApiDeps } from '../../src/local/serving/local-usage-api';
import { emptyExpected, expectedKey, generateLog, mergeExpected, type ExpectedCount } from '../../src/local/demo/log-generator';
import { usageApiEvent } from '../support/api-events';
import { tallyCommand } from '../support/cli';
import { closeOk, handoffTable, testCloser } from '../support/handoff';
import { captureIo, eventually, halfIngest, operatorEnv, startConsumer } from '../support/operator';
import { createTestQueues, putLogObject, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';
import { SHORT_WAIT_MS, TIME_LIMITS } from '../support/time-limits';
import { TEST_SECRET } from '../support/tokens';

/**
 * Explain on the local stack: every account-day's log objects, read back through the
 * API and the CLI, add up to what the usage API serves, after duplicate deliveries,
 * resumed objects (one by its last receive), a late revision and an adjustment; an
 * object counted before contributions were recorded is reported missing until
 * `tally backfill` fills it.
 */
const info = testStackInfo();
const { dynamodb, s3, sqs } = testClients(info);
const D0 = '2026-06-10';
const D1 = '2026-06-11';
const D2 = '2026-06-12';
const DAYS = [D0, D1, D2];
const ON_TIME = new Date('2026-06-13T01:00:00Z');
const CLOSE_AT = new Date('2026-06-15T12:00:00Z');
const LATE_AT = new Date('2026-06-16T08:00:00Z');
const at = (date: Date) => () => date;

const accounts = [uniqueId('acme'), uniqueId('globex'), uniqueId('initech')];
/** This file's objects only: backfill and reconcile list the prefix. */
const PREFIX = `cloudfront/${uniqueId('explain')}/`;
const expected = emptyExpected();
const perObject = new Map<string, ExpectedCount>();
const objects: Record<'duplicated' | 'resumed' | 'lastReceive' | 'legacy' | 'late', LogObjectRef> = {} as never;
let env: Record<string, string>;
let table: string;
let ingestDeps: IngestDeps;
let api: UsageApiDeps;
let lastReceiveResult: ObjectResult | undefined;
let resumedResult: ObjectResult | undefined;
let seed = 500;

/** Puts one generated log object for `day` and `hour` (hour 0 holds lines of the day before). */
async function logObject(day: string, hour: number): Promise<LogObjectRef> {
  const log = generateLog({
    seed: seed++,
    day,
    hour,
    distribution: 'E2EXPL',
    accounts: accounts.map((id, i) => ({ id, weight: i + 1 })),
    lines: 80,
    previousDayRate: hour === 0 ? 0.25 : 0,
    malformedRate: 0.02,
    unattributedRate: 0.03,
  });
  mergeExpected(expected, log.expected);
  const ref = await putLogObject(`${PREFIX}${uniqueId('E2EXPL')}.${day}-${String(hour).padStart(2, '0')}.x.gz`, log.text);
  perObject.set(ref.key, log.expected);
  return ref;
}

async function ingest(records: ReturnType<typeof s3NotificationMessage>[], when: Date, deps = ingestDeps): Promise<ObjectResult[]> {
  const result = await ingestBatch({ Records: records }, { ...deps, clock: at(when) });
  expect(result.batchItemFailures).toEqual([]);
  return result.results.flatMap((r) => r.objects);
}

const tokenFor = (accounts: string[]) => mintToken(TEST_SECRET, { accounts, ttlSeconds: 300, subject: 'explain-test' });
const adminToken = () => mintToken(TEST_SECRET, { admin: true, ttlSeconds: 300, subject: 'explain-admin' });
const call = async (path: string, token: string, query: Record<string, string> = {}) => handleUsageApiRequest(usageApiEvent({ path, token, query }), api);
const body = (response: APIGatewayProxyStructuredResultV2) => JSON.parse(response.body!);

async function explainOf(account: string, day: string): Promise<DayExplanation> {
  const response = await call(`/v1/accounts/${account}/days/${day}/explain`, await tokenFor([account]));
  expect(response.statusCode).toBe(200);
  return body(response) as DayExplanation;
}

async function usageDay(account: string, day: string) {
  const response = await call(`/v1/accounts/${account}/usage`, await tokenFor([account]), { from: day, to: day });
  expect(response.statusCode).toBe(200);
  return body(response).days[0] as { metrics: Record<string, number>; adjustments: Record<string, number>; totals: Record<string, number>; status: string };
}

const sum = (rows: readonly Readonly<Record<string, number>>[], names: readonly string[]) =>
  Object.fromEntries(names.map((name) => [name, rows.reduce((total, row) => total + (row[name] ?? 0), 0)]));

/** What the generator says `ref` counts for `account` on `day`, every metric present. */
function contributionOf(ref: LogObjectRef, account: string, day: string, names: readonly string[]): Record<string, number> {
  const counted = perObject.get(ref.key)?.usage.get(expectedKey(account, day)) ?? {};
  return Object.fromEntries(names.map((name) => [name, counted[name] ?? 0]));
}

/** Turns an object's ledger into one written before contributions were recorded. */
async function forgetContributions(ref: LogObjectRef): Promise<void> {
  const key = ledgerKey(ref);
  await dynamodb.send(new UpdateItemCommand({ TableName: table, Key: { PK: { S: key.PK }, SK: { S: key.SK } }, UpdateExpression: 'REMOVE cv, c, cm, sd, fmt' }));
  const page = await dynamodb.send(
    new QueryCommand({ TableName: table, KeyConditionExpression: 'PK = :pk AND begins_with(SK, :day)', ExpressionAttributeValues: { ':pk': { S: key.PK }, ':day': { S: '#DONE#DAY#' } } }),
  );
  for (const item of page.Items ?? []) await dynamodb.send(new DeleteItemCommand({ TableName: table, Key: { PK: item.PK!, SK: item.SK! } }));
}

beforeAll(async () => {
  ({ env, table } = await handoffTable());
  env = { ...env, TALLY_MAX_RECEIVE_COUNT: '5' };
  ingestDeps = testIngestDeps(env);
  api = await createLocalUsageApiDeps(info, TEST_SECRET, silentLog, { TALLY_TABLE: table, TALLY_METRICS: env.TALLY_METRICS! });

  // On time: every object once, one of them delivered twice in the batch and once more after.
  const plain = [await logObject(D1, 12), await logObject(D2, 0), await logObject(D2, 12)];
  objects.duplicated = await logObject(D1, 0);
  await ingest([...[...plain, objects.duplicated].map((ref) => s3NotificationMessage(ref)), s3NotificationMessage(objects.duplicated)], ON_TIME);
  await ingest([s3NotificationMessage(objects.duplicated, { receiveCount: 2 })], ON_TIME);

  // A consumer dies after one increment where it sees it; the retry resumes from its record.
  objects.resumed = await logObject(D1, 6);
  await halfIngest(objects.resumed, 1, env);
  [resumedResult] = await ingest([s3NotificationMessage(objects.resumed, { receiveCount: 2 })], ON_TIME);

  // Another dies the same way; its last receive (maxReceiveCount) records that it started, then resumes.
  objects.lastReceive = await logObject(D2, 6);
  await halfIngest(objects.lastReceive, 2, env);
  [lastReceiveResult] = await ingest([s3NotificationMessage(objects.lastReceive, { receiveCount: 5 })], ON_TIME);

  // Counted before this change: its ledger has no contributions.
  objects.legacy = await logObject(D2, 18);
  await ingest([s3NotificationMessage(objects.legacy)], ON_TIME);
  await forgetContributions(objects.legacy);

  // The days close; then late usage reaches D1 and becomes its revision 2.
  await closeOk(testCloser(env, at(CLOSE_AT)));
  objects.late = await logObject(D1, 20);
  await ingest([s3NotificationMessage(objects.late)], LATE_AT);
  await closeOk(testCloser(env, at(new Date(LATE_AT.getTime() + 60_000))));

  const adjust = tallyCommand('adjust');
  const io = captureIo();
  const code = await adjust(['--account', accounts[0]!, '--day', D1, '--metric', 'requests', '--delta', '-3', '--reason', 'refund: health checks', '--id', 'ADJ-EXPLAIN-1'], io, operatorEnv(info, {}, { TALLY_TABLE: table }));
  expect({ code, err: io.stderr }).toEqual({ code: 0, err: '' });
}, TIME_LIMITS.explainSetup);

describe('explain (DynamoDB Local, S3 emulator)', () => {
  it('wrote the objects the way the cases need: resumed, and resumed by the last receive', () => {
    expect(resumedResult).toMatchObject({ status: 'counted' });
    expect(resumedResult!.resumed).toBeGreaterThan(0);
    expect(lastReceiveResult).toMatchObject({ status: 'counted' });
    expect(lastReceiveResult!.resumed).toBeGreaterThan(0);
  });

  it('says what is missing for an object counted before contributions were recorded', async () => {
    const account = accounts[2]!;
    const explanation = await explainOf(account, D2);
    const missing = contributionOf(objects.legacy, account, D2, explanation.metricNames);

    expect(missing.requests).toBeGreaterThan(0);
    expect(explanation.complete).toBe(false);
    expect(explanation.missing?.metrics).toEqual(missing);
    expect(explanation.missing?.reason).toContain('tally backfill');
    expect(explanation.sources.map((s) => s.key)).not.toContain(objects.legacy.key);
  });

  it('tally backfill over those days records the contributions without counting anything again', async () => {
    const before = await Promise.all(accounts.map((account) => usageDay(account, D2)));
    const backfill = tallyCommand('backfill');
    const io = captureIo();
    const code = await backfill(['--from', D2, '--to', D2, '--inline', '--json'], io, operatorEnv(info, { prefix: PREFIX }, { TALLY_TABLE: table }));
    const report = JSON.parse(io.stdout);

    expect({ code, err: io.stderr }).toEqual({ code: 0, err: '' });
    expect(report).toMatchObject({ contributionsFilled: 1, counted: 0, applied: 0 });
    expect(await Promise.all(accounts.map((account) => usageDay(account, D2)))).toEqual(before);
    expect((await explainOf(accounts[2]!, D2)).complete).toBe(true);
  });

  it('tally backfill through the queue records them too: the consumer only reads the object again', async () => {
    // A day no closer has reached yet (due 48 hours after its end), so nothing but this object is on it.
    const D3 = '2026-06-14';
    const ref = await logObject(D3, 9);
    await ingest([s3NotificationMessage(ref)], ON_TIME);
    await forgetContributions(ref);
    const before = await Promise.all(accounts.map((account) => usageDay(account, D3)));
    expect((await explainOf(accounts[0]!, D3)).complete).toBe(false);
    const queues = await createTestQueues(info);
    const io = captureIo();
    const code = await tallyCommand('backfill')(['--from', D3, '--to', D3, '--json'], io, operatorEnv(info, { ...queues, prefix: PREFIX }, { TALLY_TABLE: table }));
    const consumer = startConsumer(queues, testIngestDeps(env));
    try {
      await eventually(async () => (await Promise.all(accounts.map((account) => explainOf(account, D3)))).every((e) => e.complete), SHORT_WAIT_MS, 'the consumer to record the contributions');
    } finally {
      await consumer.stop();
    }

    expect({ code, report: JSON.parse(io.stdout) }).toMatchObject({ code: 0, report: { contributionsFilled: 1, sent: 0 } });
    expect(await Promise.all(accounts.map((account) => usageDay(account, D3)))).toEqual(before);
    expect((await explainOf(accounts[0]!, D3)).sources.map((s) => s.key)).toEqual([ref.key]);
  });

  it('explains every account-day: sources sum to the usage API, measured + adjustments = totals', async () => {
    let checked = 0;
    for (const account of accounts) {
      for (const day of DAYS) {
        const explanation = await explainOf(account, day);
        const usage = await usageDay(account, day);
        const names = explanation.metricNames;

        expect({ account, day, complete: explanation.complete, missing: explanation.missing }).toEqual({ account, day, complete: true, missing: undefined });
        expect(sum(explanation.sources.map((s) => s.metrics), names)).toEqual(usage.metrics);
        expect(explanation.metrics).toEqual(usage.metrics);
        expect(explanation.totals).toEqual(usage.totals);
        expect(sum([explanation.metrics, ...explanation.adjustments.map((a) => ({ [a.metric]: a.delta }))], names)).toEqual(explanation.totals);
        expect(explanation.status).toBe('closed');
        const ids = explanation.sources.map((s) => `${s.bucket}/${s.key}#${s.etag}`);
        expect(new Set(ids).size).toBe(ids.length);
        for (const source of explanation.sources) {
          const ref = { bucket: source.bucket, key: source.key, etag: source.etag };
          expect({ key: source.key, metrics: source.metrics }).toEqual({ key: source.key, metrics: contributionOf(ref, account, day, names) });
        }
        if (usage.metrics.requests! > 0) checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(7);
  });

  it("shows each day by UTC hour from its shards, and each object's hours, which add up to the day's hours", async () => {
    for (const account of accounts) {
      for (const day of DAYS) {
        const explanation = await explainOf(account, day);
        const names = explanation.metricNames;
        const bySources = Array.from({ length: 24 }, (_, hour) => ({
          hour,
          metrics: sum(explanation.sources.flatMap((s) => (s.hours ?? []).filter((h) => h.hour === hour).map((h) => h.metrics)), names),
        }));

        expect({ account, day, source: explanation.hoursSource, reason: explanation.hoursReason }).toEqual({ account, day, source: 'shards', reason: undefined });
        expect(explanation.sources.every((s) => s.hours !== null)).toBe(true);
        expect(explanation.hours).toEqual(bySources);
        expect(sum(explanation.hours!.map((h) => h.metrics), names)).toEqual(explanation.metrics);
      }
    }
    // The late object of D1 was written at 20:xx: its lines are in hour 20 only.
    const late = (await explainOf(accounts[0]!, D1)).sources.find((s) => s.key === objects.late.key)!;
    expect(late.hours!.map((h) => h.hour)).toEqual([20]);
  });

  it('lists a duplicated object and resumed ones once, each with its whole contribution', async () => {
    const account = accounts[2]!;
    for (const [ref, day] of [
      [objects.duplicated, D1],
      [objects.duplicated, D0],
      [objects.resumed, D1],
      [objects.lastReceive, D2],
    ] as const) {
      const explanation = await explainOf(account, day);
      const listed = explanation.sources.filter((s) => s.key === ref.key);

      expect(listed).toHaveLength(1);
      expect(listed[0]!.metrics).toEqual(contributionOf(ref, account, day, explanation.metricNames));
      expect(listed[0]!.format).toBe('standard');
    }
  });

  it('shows the late revision and the adjustment', async () => {
    const explanation = await explainOf(accounts[0]!, D1);
    const late = contributionOf(objects.late, accounts[0]!, D1, explanation.metricNames);

    expect(explanation.revisions.map((r) => r.revision)).toEqual([1, 2]);
    expect(explanation.revisions[1]!.metrics).toEqual(late);
    expect(explanation.revisions[1]!.createdAt).not.toBe('');
    expect(sum(explanation.revisions.map((r) => r.metrics), explanation.metricNames)).toEqual(explanation.metrics);
    expect(explanation.adjustments).toEqual([{ id: 'ADJ-EXPLAIN-1', metric: 'requests', delta: -3, reason: 'refund: health checks', createdAt: expect.any(String) }]);
    expect(explanation.totals.requests).toBe(explanation.metrics.requests! - 3);
    expect(explanation.sources.map((s) => s.key)).toContain(objects.late.key);
  });

  it('lists only objects that exist in S3 with that ETag', async () => {
    const explanation = await explainOf(accounts[1]!, D1);
    expect(explanation.sources.length).toBeGreaterThanOrEqual(3);
    for (const source of explanation.sources) {
      const head = await s3.send(new HeadObjectCommand({ Bucket: source.bucket, Key: source.key }));
      expect(head.ETag?.replace(/"/g, '')).toBe(source.etag);
    }
  });

  it('gives a token for another account the answer an unknown account gets', async () => {
    const token = await tokenFor([accounts[1]!]);
    const other = await call(`/v1/accounts/${accounts[0]}/days/${D1}/explain`, token);
    const unknown = await call(`/v1/accounts/${uniqueId('nobody')}/days/${D1}/explain`, token);

    expect(other.statusCode).toBe(404);
    expect({ status: other.statusCode, body: other.body }).toEqual({ status: unknown.statusCode, body: unknown.body });
    expect((await call(`/v1/accounts/${accounts[0]}/days/2026-13-01/explain`, token)).statusCode).toBe(400);
    expect((await call(`/v1/accounts/${accounts[0]}/days/${D1}/explain`, await adminToken())).statusCode).toBe(200);
  });

  it('answers CSV on request, one row per source and the sums', async () => {
    const response = await call(`/v1/accounts/${accounts[0]}/days/${D1}/explain`, await tokenFor([accounts[0]!]), { format: 'csv' });
    const lines = response.body!.trimEnd().split('\r\n');
    const explanation = await explainOf(accounts[0]!, D1);

    expect(response.headers['content-type']).toContain('text/csv');
    expect(lines[0]).toBe(`account,day,part,id,detail,created_at,${explanation.metricNames.join(',')}`);
    expect(lines.filter((line) => line.split(',')[2] === 'source')).toHaveLength(explanation.sources.length);
    expect(lines.find((line) => line.split(',')[2] === 'total')).toBe(`${accounts[0]},${D1},total,,,,${explanation.metricNames.map((n) => explanation.totals[n]).join(',')}`);
  });

  it('lists the log objects a page at a time, its sums those of every object; a page past the last, or no page, is a 400', async () => {
    // The account-day with the most objects, listed 2 a page.
    const days = await Promise.all(accounts.flatMap((account) => DAYS.map(async (day) => ({ account, day, all: await explainOf(account, day) }))));
    const { account, day, all } = days.sort((a, b) => b.all.sources.length - a.all.sources.length)[0]!;
    expect(all.sources.length).toBeGreaterThanOrEqual(3);
    const paged = { ...api, explainSourcesPerPage: 2 };
    const token = await tokenFor([account]);
    const pageOf = (query: Record<string, string>) => handleUsageApiRequest(usageApiEvent({ path: `/v1/accounts/${account}/days/${day}/explain`, token, query }), paged);
    const pages = Math.ceil(all.sources.length / 2);

    const answers = await Promise.all(Array.from({ length: pages }, (_, i) => pageOf(i === 0 ? {} : { page: String(i + 1) })));
    const past = await pageOf({ page: String(pages + 1) });
    const hostile = await Promise.all(['0', '-1', '1.5', 'x', '99999999', ''].map((page) => pageOf({ page })));

    const bodies = answers.map((answer) => body(answer) as DayExplanation);
    expect(bodies.map((b) => [b.page, b.pages, b.sourceCount, b.sources.length])).toEqual(
      bodies.map((_, i) => [i + 1, pages, all.sources.length, Math.min(2, all.sources.length - i * 2)]),
    );
    expect(bodies.flatMap((b) => b.sources)).toEqual(all.sources);
    for (const b of bodies) expect({ sourceTotals: b.sourceTotals, complete: b.complete, metrics: b.metrics }).toEqual({ sourceTotals: all.sourceTotals, complete: all.complete, metrics: all.metrics });
    expect([past.statusCode, body(past).message]).toEqual([400, `page=${pages + 1}: ${account} on ${day} has ${all.sources.length} log object(s), ${pages} page(s) of 2`]);
    expect(hostile.map((answer) => [answer.statusCode, body(answer).message])).toEqual(
      ['0', '-1', '1.5', 'x', '99999999', ''].map((page) => [400, `page must be a whole number from 1 to 1000000, got "${page}"`]),
    );
    expect(all).toMatchObject({ page: 1, pages: 1, sourceCount: all.sources.length });
  });

  it('tally explain --json prints the API body', async () => {
    const io = captureIo();
    const code = await tallyCommand('explain')(['--account', accounts[1]!, '--day', D1, '--json'], io, operatorEnv(info, {}, { TALLY_TABLE: table }));

    expect({ code, err: io.stderr }).toEqual({ code: 0, err: '' });
    expect(JSON.parse(io.stdout)).toEqual(await explainOf(accounts[1]!, D1));
  });

  it('tally explain prints the sums and each object', async () => {
    const io = captureIo();
    const code = await tallyCommand('explain')(['--account', accounts[0]!, '--day', D1], io, operatorEnv(info, {}, { TALLY_TABLE: table }));

    expect(code).toBe(0);
    expect(io.stdout).toContain('complete: the log objects below add up to the measured counters exactly');
    expect(io.stdout).toContain(objects.late.key);
    expect(io.stdout).toMatch(/adjustment ADJ-EXPLAIN-1/);
    expect(io.stdout).toContain('hours (UTC, from the counters; hours without usage left out):');
    expect(io.stdout).toMatch(new RegExp(`${objects.late.key}\\s+\\S+\\s+standard\\s+\\S+\\s+20\\s`));
  });
});

describe('health (DynamoDB Local, SQS emulator)', () => {
  const distribution = `E2H${Date.now().toString(36).toUpperCase()}`;
  const now = new Date();
  const today = dayOf(now);
  const hour = String(now.getUTCHours()).padStart(2, '0');
  let healthApi: UsageApiDeps;
  let healthEnv: Record<string, string>;
  let lines: { read: number; counted: number; unattributed: number; malformed: number };

  beforeAll(async () => {
    const queues = await createTestQueues(info);
    await sqs.send(new SendMessageCommand({ QueueUrl: queues.dlqUrl, MessageBody: '{"not":"an s3 event"}' }));
    healthEnv = operatorEnv(info, { dlqUrl: queues.dlqUrl, prefix: PREFIX }, { TALLY_TABLE: table });
    healthApi = await createLocalUsageApiDeps(info, TEST_SECRET, silentLog, { TALLY_TABLE: table, TALLY_METRICS: env.TALLY_METRICS!, TALLY_DLQ_URL: queues.dlqUrl });
    const log = generateLog({ seed: 9_001, day: today, hour: now.getUTCHours(), distribution, accounts: [{ id: accounts[0]!, weight: 1 }], lines: 50, malformedRate: 0.1, unattributedRate: 0.1 });
    const ref = await putLogObject(`${PREFIX}${distribution}.${today}-${hour}.${uniqueId('h')}.gz`, log.text);
    const [result] = await ingest([s3NotificationMessage(ref)], now, testIngestDeps(env));
    lines = result!.lines;
    const io = captureIo();
    expect(await tallyCommand('reconcile')(['--from', D1, '--to', D1, '--json'], io, healthEnv)).toBe(0);
  }, TIME_LIMITS.explainHealthSetup);

  const health = async (token: string) => handleUsageApiRequest(usageApiEvent({ path: '/v1/health', token }), healthApi);

  it('answers admin tokens only', async () => {
    const tenant = await health(await tokenFor([accounts[0]!]));
    expect(tenant.statusCode).toBe(403);
    expect(body(tenant).message).toContain('admin token');
    expect((await health(await adminToken())).statusCode).toBe(200);
  });

  it("reports the newest hour per distribution, the last day's objects and lines, the DLQ, the last reconcile and the horizon", async () => {
    const report = body(await health(await adminToken())) as HealthReport;

    expect(report.freshness).toContainEqual({ source: distribution, newestHour: `${today}T${hour}`, processedAt: expect.any(String) });
    expect(report.objects.lastDay).toBe(1);
    expect(report.objects.lastHour).toBe(1);
    expect(report.lines).toMatchObject(lines);
    expect(lines.unattributed + lines.malformed).toBeGreaterThan(0);
    expect(report.missed[0]).toMatchObject({ unattributed: lines.unattributed, malformed: lines.malformed, read: lines.read });
    // The generator's unattributed lines come from hosts under 203.0.113.0/24: those are what the resolver missed.
    expect(lines.unattributed).toBeGreaterThan(0);
    expect(report.missedKeys.length).toBeGreaterThan(0);
    for (const { key } of report.missedKeys) expect(key).toMatch(/^203\.0\.113\.\d+$/);
    expect(report.missed[0]!.samples).toEqual(expect.arrayContaining([report.missedKeys[0]!.key]));
    expect(report.deadLetters).toEqual({ depth: 1, oldestAgeSeconds: expect.any(Number) });
    expect(report.lastReconcile).toMatchObject({ from: D1, to: D1, clean: true, drifting: 0 });
    expect(report.history).toEqual({ shards: 4, cap: 15, keysPerAccountDay: 60, tombstoneDays: 400 });
  });

  it('reads a week when asked: per day of the logs, the objects and lines', async () => {
    const response = await handleUsageApiRequest(usageApiEvent({ path: '/v1/health', token: await adminToken(), query: { days: '7' } }), healthApi);
    const report = body(response) as HealthReport;

    expect(report.days).toHaveLength(7);
    expect(report.days[6]).toBe(today);
    expect(report.perDay.map((d) => d.day)).toEqual(report.days);
    expect(report.perDay[6]).toEqual({ day: today, objects: 1, lines, lastProcessedAt: expect.any(String) });
    const io = captureIo();
    expect(await tallyCommand('status')(['--days', '7'], io, healthEnv)).toBe(0);
    expect(io.stdout).toContain(`ledger of ${report.days[0]}..${today} (UTC)`);
    expect(io.stdout).toMatch(new RegExp(`${today}\\s+1\\s+${lines.read}\\s+${lines.counted}\\s+${lines.unattributed}\\s+${lines.malformed}`));
  });

  it('tally status --json prints what the API answers', async () => {
    const io = captureIo();
    expect(await tallyCommand('status')(['--json'], io, healthEnv)).toBe(0);
    const api = body(await health(await adminToken())) as HealthReport;
    const cli = JSON.parse(io.stdout) as HealthReport;
    const stable = (h: HealthReport) => ({ ...h, generatedAt: '', deadLetters: { ...h.deadLetters!, oldestAgeSeconds: 0 } });

    expect(stable(cli)).toEqual(stable(api));
    const human = captureIo();
    await tallyCommand('status')([], human, healthEnv);
    expect(human.stdout).toContain(distribution);
    expect(human.stdout).toContain('dead-letter queue: 1 message(s)');
  });
});
