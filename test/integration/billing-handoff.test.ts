import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { ingestBatch, type IngestDeps } from '../../src/app/ingest/ingest';
import { handleUsageApiRequest } from '../../src/app/reading/usage-api';
import { closeDays } from '../../src/app/billing/close-days';
import { sendWebhooks } from '../../src/app/billing/webhook-sender';
import { silentLog } from '../../src/app/log';
import { mintToken } from '../../src/adapters/http/jwt-tokens';
import { DynamoCloseStore } from '../../src/adapters/dynamodb/dynamodb-close-store';
import { FetchWebhookTransport } from '../../src/adapters/http/fetch-webhook-transport';
import { SqsMessageVisibility } from '../../src/adapters/sqs/sqs-visibility';
import { SqsWebhookOutbox } from '../../src/adapters/sqs/sqs-webhook-outbox';
import { eachDay } from '../../src/domain/days';
import { lateFigures, sumFigures } from '../../src/domain/billing/day-close';
import { revisionKey } from '../../src/domain/counters/keys';
import { verifySignature, type WebhookEvent } from '../../src/domain/billing/webhook';
import { createLocalUsageApiDeps } from '../../src/local/serving/local-usage-api';
import { emptyExpected, expectedKey, generateLog, mergeExpected, type ExpectedCount } from '../../src/local/demo/log-generator';
import { QueuePoller } from '../../src/local/pipeline/poller';
import { usageApiEvent } from '../support/api-events';
import { closeOk, handoffTable, readExports, testCloser, webhookReceiver } from '../support/handoff';
import { createTestQueues, nonZero, putLogObject, readCounters, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';
import { SHORT_WAIT_MS } from '../support/time-limits';
import { TEST_SECRET } from '../support/tokens';

const info = testStackInfo();
const { dynamodb } = testClients(info);
const SECRET = 'a-webhook-secret-for-the-tests';

/** Days with usage; the closer's clock puts both past their grace (48 h). */
const D1 = '2026-06-01';
const D2 = '2026-06-02';
const ON_TIME = new Date('2026-06-03T01:00:00Z');
const CLOSE_AT = new Date('2026-06-05T12:00:00Z');
const LATE_AT = new Date('2026-06-07T08:00:00Z');

const at = (date: Date) => () => date;
const later = (date: Date, seconds: number) => new Date(date.getTime() + seconds * 1000);

/** Generates one log object for `day`, puts it, and returns its notification and expected counts. */
async function logObject(day: string, hour: number, seed: number, accounts: string[], lines = 60): Promise<{ message: ReturnType<typeof s3NotificationMessage>; expected: ExpectedCount }> {
  const log = generateLog({
    seed,
    day,
    hour,
    distribution: 'E2HAND',
    accounts: accounts.map((id, i) => ({ id, weight: i + 1 })),
    lines,
    previousDayRate: 0,
    malformedRate: 0,
    unattributedRate: 0,
  });
  const ref = await putLogObject(`cloudfront/${uniqueId('E2HAND')}.${day}-${String(hour).padStart(2, '0')}.x.gz`, log.text);
  return { message: s3NotificationMessage(ref), expected: log.expected };
}

async function ingest(deps: IngestDeps, messages: ReturnType<typeof s3NotificationMessage>[], when: Date): Promise<void> {
  const result = await ingestBatch({ Records: messages }, { ...deps, clock: at(when) });
  expect(result.batchItemFailures).toEqual([]);
}

/** Revision items of an account-day, from the account partition. */
async function revisionItems(table: string, account: string, day: string): Promise<{ revision: number; metrics: Record<string, number> }[]> {
  const first = revisionKey({ accountId: account, day, revision: 0 });
  const page = await dynamodb.send(
    new QueryCommand({
      TableName: table,
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
      ExpressionAttributeValues: { ':pk': { S: first.PK }, ':prefix': { S: `DAY#${day}#R#` } },
      ConsistentRead: true,
    }),
  );
  return (page.Items ?? []).map((item) => ({
    revision: Number(item.SK!.S!.split('#R#')[1]),
    metrics: Object.fromEntries(Object.entries(item.m?.M ?? {}).map(([name, value]) => [name, Number(value.N)])),
  }));
}

/** Every account-day's revisions add up to its counters. */
async function expectRevisionSumsEqualCounters(table: string, accounts: string[], days: string[]): Promise<void> {
  for (const account of accounts) {
    const counters = await readCounters(dynamodb, table, account, days[0]!, days[days.length - 1]!);
    for (const day of days) {
      const revisions = await revisionItems(table, account, day);
      expect({ account, day, sum: nonZero(sumFigures(revisions.map((r) => r.metrics))) }).toEqual({ account, day, sum: nonZero(counters[day]) });
    }
  }
}

describe('closing days, late usage and exports (DynamoDB Local, S3 emulator, DuckDB)', () => {
  const accounts = [uniqueId('acme'), uniqueId('globex'), uniqueId('initech')];
  const expected = emptyExpected();
  const late = emptyExpected();
  let env: Record<string, string>;
  let table: string;
  let exportPrefix: string;
  let ingestDeps: IngestDeps;

  beforeAll(async () => {
    ({ env, table, exportPrefix } = await handoffTable());
    ingestDeps = testIngestDeps(env);
    const objects = [await logObject(D1, 3, 101, accounts), await logObject(D1, 15, 102, accounts), await logObject(D2, 10, 103, accounts.slice(0, 2))];
    for (const object of objects) mergeExpected(expected, object.expected);
    await ingest(ingestDeps, objects.map((object) => object.message), ON_TIME);
  });

  it('closes every due day once: revision 1 holds each account-day as counted; closing again changes nothing', async () => {
    const closer = testCloser(env, at(CLOSE_AT));

    const first = await closeOk(closer);
    const second = await closeOk(closer);
    const third = await closeOk(testCloser(env, at(later(CLOSE_AT, 3600))));

    const closed = first.days.filter((day) => day.action === 'closed');
    expect(first.lastClosableDay).toBe(D2);
    expect(closed.map((day) => day.day)).toEqual(eachDay('2026-04-29', D2));
    expect(closed.find((day) => day.day === D1)).toMatchObject({ written: [{ revision: 1, accounts: 3 }], closedAt: CLOSE_AT.toISOString() });
    expect(closed.find((day) => day.day === D2)).toMatchObject({ written: [{ revision: 1, accounts: 2 }] });
    expect(second.days).toEqual([]);
    expect(third.days).toEqual([]);
    for (const account of accounts) {
      for (const day of [D1, D2]) {
        const revisions = await revisionItems(table, account, day);
        const counted = expected.usage.get(expectedKey(account, day));
        expect(revisions).toEqual(counted === undefined ? [] : [{ revision: 1, metrics: nonZero(counted) }]);
      }
    }
  });

  it('records usage that reaches a closed day as revision 2, whose figures are exactly the late lines', async () => {
    const object = await logObject(D1, 20, 104, accounts.slice(1), 40);
    mergeExpected(late, object.expected);
    mergeExpected(expected, object.expected);

    await ingest(ingestDeps, [object.message], LATE_AT);
    const report = await closeOk(testCloser(env, at(later(LATE_AT, 60))));
    const settled = await closeOk(testCloser(env, at(later(LATE_AT, 3600))));

    expect(report.days.filter((day) => day.day <= D2)).toEqual([expect.objectContaining({ day: D1, action: 'revised', written: [{ revision: 2, accounts: 2 }] })]);
    expect(report.markers).toEqual({ found: 2, cleared: 0, waiting: 2 });
    expect(settled.markers).toEqual({ found: 2, cleared: 2, waiting: 0 });
    expect(settled.days.filter((day) => day.day <= D2)).toEqual([]);
    for (const account of accounts) {
      const revisions = await revisionItems(table, account, D1);
      const lateLines = late.usage.get(expectedKey(account, D1));
      expect(revisions.find((r) => r.revision === 2)?.metrics).toEqual(lateLines === undefined ? undefined : nonZero(lateLines));
    }
    await expectRevisionSumsEqualCounters(table, accounts, [D1, D2]);
  });

  it('serves status, closedAt and late usage in the read API', async () => {
    const api = await createLocalUsageApiDeps({ ...info, table }, TEST_SECRET, silentLog, { TALLY_METRICS: env.TALLY_METRICS! });
    const account = accounts[1]!;
    const token = await mintToken(TEST_SECRET, { accounts: [account], ttlSeconds: 300 });

    const response = await handleUsageApiRequest(usageApiEvent({ accountId: account, query: { from: D1, to: '2026-06-05' }, token }), api);

    const days = JSON.parse(response.body!).days as { day: string; status: string; closedAt?: string; late?: Record<string, number> }[];
    expect(days.map(({ day, status, closedAt }) => ({ day, status, closedAt }))).toEqual([
      { day: D1, status: 'closed', closedAt: CLOSE_AT.toISOString() },
      { day: D2, status: 'closed', closedAt: CLOSE_AT.toISOString() },
      { day: '2026-06-03', status: 'closed', closedAt: later(LATE_AT, 60).toISOString() },
      { day: '2026-06-04', status: 'closed', closedAt: later(LATE_AT, 60).toISOString() },
      // Never closed by these closers, but nothing of this account on it and long past its grace: its zeros are final.
      { day: '2026-06-05', status: 'closed', closedAt: undefined },
    ]);
    expect(nonZero(days[0]!.late)).toEqual(nonZero(late.usage.get(expectedKey(account, D1))));
    expect(days[1]!.late).toBeUndefined();
  });

  it('exports each revision once, Hive-partitioned; read back with DuckDB it equals the API for every account-day', async () => {
    const { parquet, csv, files } = await readExports(exportPrefix);

    expect(files).toEqual(
      expect.arrayContaining([`day=${D1}/revision=1/usage.csv`, `day=${D1}/revision=1/usage.parquet`, `day=${D1}/revision=2/usage.parquet`, `day=${D2}/revision=1/usage.parquet`]),
    );
    expect(csv).toEqual(parquet);
    expect(parquet.filter((row) => row.day === D1 && row.revision === 2).map((row) => row.account)).toEqual(accounts.slice(1).sort());
    for (const account of accounts) {
      const counters = await readCounters(dynamodb, table, account, D1, D2);
      for (const day of [D1, D2]) {
        const rows = parquet.filter((row) => row.account === account && row.day === day);
        const exported = sumFigures(rows.map((row) => ({ requests: Number(row.requests), bytes: Number(row.bytes), authorization_requests: Number(row.authorization_requests) })));
        expect({ account, day, exported: nonZero(exported) }).toEqual({ account, day, exported: nonZero(counters[day]) });
        expect(rows.every((row) => row.closed_at === CLOSE_AT.toISOString())).toBe(true);
      }
    }
  });

  it('writes the same objects when a revision is exported again', async () => {
    const before = await readExports(exportPrefix);
    const store = new DynamoCloseStore({ client: dynamodb, tableName: table });
    const closer = testCloser(env, at(later(LATE_AT, 7200)));
    const record = (await store.closedDay(D1))!;
    // Forget that revision 2 was exported: the next run writes it again.
    const { UpdateItemCommand } = await import('@aws-sdk/client-dynamodb');
    await dynamodb.send(
      new UpdateItemCommand({ TableName: table, Key: { PK: { S: 'CLOSED' }, SK: { S: `DAY#${D1}` } }, UpdateExpression: 'REMOVE revisions.#n.exportedAt', ExpressionAttributeNames: { '#n': '2' } }),
    );

    const report = await closeOk(closer);
    const after = await readExports(exportPrefix);

    expect(record.revisions.map((r) => r.revision)).toEqual([1, 2]);
    expect(report.days).toEqual([expect.objectContaining({ day: D1, action: 'published', exports: [expect.objectContaining({ revision: 2 })] })]);
    expect(report.days[0]!.written).toBeUndefined();
    expect(after).toEqual(before);
  });
});

describe('a closer that stops half way', () => {
  it('resumes on the next run and leaves one snapshot per account-day; revisions still add up to the counters', async () => {
    const { env, table } = await handoffTable();
    const ingestDeps = testIngestDeps(env);
    const accounts = Array.from({ length: 12 }, (_, i) => uniqueId(`crash${i}`));
    const first = await logObject(D1, 9, 201, accounts, 200);
    await ingest(ingestDeps, [first.message], ON_TIME);
    const closer = testCloser(env, at(CLOSE_AT));
    let rows = 0;
    const crashing = {
      ...closer,
      store: Object.assign(Object.create(Object.getPrototypeOf(closer.store)), closer.store, {
        recordRevisionRow: async (row: Parameters<typeof closer.store.recordRevisionRow>[0]) => {
          if (row.day === D1 && ++rows > 5) throw new Error('the closer died');
          return closer.store.recordRevisionRow(row);
        },
      }),
    };

    const crashed = await closeDays(crashing, { day: D1 });
    const between = await logObject(D1, 22, 202, accounts.slice(0, 4), 30);
    await ingest(ingestDeps, [between.message], later(CLOSE_AT, 60));
    const resumed = await closeOk(testCloser(env, at(later(CLOSE_AT, 120))), { day: D1 });
    const settled = await closeOk(testCloser(env, at(later(CLOSE_AT, 7200))), { day: D1 });

    expect(crashed.failed).toBe(1);
    // Accounts the crashed run had recorded get the usage in between as revision 2; the others' snapshots, taken on resuming, hold it.
    expect(resumed.days).toHaveLength(1);
    expect(resumed.days[0]!.written![0]).toEqual({ revision: 1, accounts: accounts.length });
    expect(resumed.days[0]!.written![1]?.accounts ?? 0).toBeLessThanOrEqual(between.expected.usage.size);
    expect(settled.days).toEqual([expect.objectContaining({ day: D1, action: 'unchanged' })]);
    expect(settled.markers).toMatchObject({ found: between.expected.usage.size, cleared: between.expected.usage.size });
    for (const account of accounts) {
      const revisions = await revisionItems(table, account, D1);
      expect(revisions.filter((r) => r.revision === 1)).toHaveLength(1);
    }
    await expectRevisionSumsEqualCounters(table, accounts, [D1]);
  });
});

describe('signed webhooks through their own queue', () => {
  it('delivers every event, signed, to a receiver that failed three times; a duplicate carries the same id', async () => {
    const { env } = await handoffTable();
    const receiver = await webhookReceiver({ failFirst: 3 });
    const queues = await createTestQueues(info, { visibilityTimeoutSeconds: 1, maxReceiveCount: 10 });
    const { sqs } = testClients(info);
    const ingestDeps = testIngestDeps(env);
    const accounts = [uniqueId('hook-a'), uniqueId('hook-b')];
    await ingest(ingestDeps, [(await logObject(D1, 4, 301, accounts)).message, (await logObject(D2, 4, 302, accounts)).message], ON_TIME);
    const outbox = new SqsWebhookOutbox({ client: sqs, queueUrl: queues.queueUrl });
    let dropNotified = true;
    const closer = testCloser({ ...env, TALLY_WEBHOOK_QUEUE_URL: queues.queueUrl }, at(CLOSE_AT));
    // The first run dies right after queueing D1's event, before it records that: the rerun queues it again.
    const flaky = {
      ...closer,
      outbox: {
        enqueue: async (event: { id: string; body: string }) => {
          await outbox.enqueue(event);
          if (dropNotified) {
            dropNotified = false;
            throw new Error('died after queueing');
          }
        },
      },
    };
    const poller = new QueuePoller({
      sqs,
      queueUrl: queues.queueUrl,
      queueArn: queues.queueArn,
      region: info.region,
      waitSeconds: 0,
      handler: (event) =>
        sendWebhooks(event, {
          url: receiver.url,
          secret: SECRET,
          transport: new FetchWebhookTransport(2_000),
          visibility: new SqsMessageVisibility({ client: sqs, queueUrl: queues.queueUrl }),
          backoffSeconds: 1,
          maxBackoffSeconds: 2,
          log: silentLog,
        }),
    });

    try {
      await closeDays(flaky, { day: D1 });
      await closeOk(closer, { day: D1 });
      await closeOk(closer, { day: D2 });
      const lateObject = await logObject(D1, 23, 303, accounts.slice(0, 1), 10);
      await ingest(ingestDeps, [lateObject.message], LATE_AT);
      await closeOk(testCloser({ ...env, TALLY_WEBHOOK_QUEUE_URL: queues.queueUrl }, at(later(LATE_AT, 60))), { day: D1 });
      poller.start();
      const deadline = Date.now() + SHORT_WAIT_MS;
      while (receiver.received.filter((r) => r.status === 200).length < 4 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      await poller.stop();
      await receiver.close();
    }

    const now = Math.floor(Date.now() / 1000);
    expect(receiver.received.slice(0, 3).map((r) => r.status)).toEqual([500, 500, 500]);
    for (const request of receiver.received) expect(verifySignature(SECRET, request.signature, request.body, now)).toBe(true);
    expect(verifySignature('another-secret-entirely', receiver.received[0]!.signature, receiver.received[0]!.body, now)).toBe(false);
    const delivered = receiver.received.filter((r) => r.status === 200).map((r) => JSON.parse(r.body) as WebhookEvent);
    const byId = new Map<string, WebhookEvent[]>();
    for (const event of delivered) byId.set(event.id, [...(byId.get(event.id) ?? []), event]);
    const events = [...byId.values()].map((copies) => copies[0]!);
    expect(events.map((e) => `${e.type} ${e.data.day} r${e.data.revision}`).sort()).toEqual([`day.closed ${D1} r1`, `day.closed ${D2} r1`, `day.revised ${D1} r2`]);
    const d1 = byId.get(events.find((e) => e.data.day === D1 && e.data.revision === 1)!.id)!;
    expect(d1).toHaveLength(2);
    expect(d1[1]).toEqual(d1[0]);
    const revised = events.find((e) => e.type === 'day.revised')!;
    expect(revised.data.accounts!.map((a) => a.account)).toEqual([accounts[0]]);
    expect(revised.data.export.parquet).toMatch(new RegExp(`^s3://${info.bucket}/.+day=${D1}/revision=2/usage\\.parquet$`));
  });
});

describe('chaos: late objects while the closer runs', () => {
  it('leaves every account-day with revisions that add up to its counters, and counters equal to the logs', async () => {
    const { env, table } = await handoffTable();
    const ingestDeps = testIngestDeps(env);
    const accounts = Array.from({ length: 6 }, (_, i) => uniqueId(`chaos${i}`));
    const expected = emptyExpected();
    const onTime = [await logObject(D1, 1, 401, accounts), await logObject(D2, 2, 402, accounts)];
    for (const object of onTime) mergeExpected(expected, object.expected);
    await ingest(ingestDeps, onTime.map((o) => o.message), ON_TIME);
    await closeOk(testCloser(env, at(CLOSE_AT)));

    for (let round = 0; round < 4; round++) {
      const when = later(LATE_AT, round * 600);
      const objects = [await logObject(D1, 5 + round, 410 + round, accounts.slice(round, round + 3), 25), await logObject(D2, 5 + round, 420 + round, accounts.slice(0, 2 + round), 25)];
      for (const object of objects) mergeExpected(expected, object.expected);
      // Ingest (each object notified twice) and two closers, all at once.
      await Promise.all([
        ingest(ingestDeps, [...objects.map((o) => o.message), ...objects.map((o) => ({ ...o.message, messageId: uniqueId('dup') }))], when),
        closeDays(testCloser(env, at(later(when, 1)))),
        closeDays(testCloser(env, at(later(when, 2)))),
      ]);
    }
    await closeOk(testCloser(env, at(later(LATE_AT, 4 * 600 + 60))));

    for (const account of accounts) {
      const counters = await readCounters(dynamodb, table, account, D1, D2);
      for (const day of [D1, D2]) {
        expect({ account, day, counters: nonZero(counters[day]) }).toEqual({ account, day, counters: nonZero(expected.usage.get(expectedKey(account, day))) });
        const revisions = await revisionItems(table, account, day);
        expect({ account, day, unrecorded: lateFigures(counters[day] ?? {}, revisions.map((r) => r.metrics)) }).toEqual({ account, day, unrecorded: {} });
        expect(new Set(revisions.map((r) => r.revision)).size).toBe(revisions.length);
      }
    }
  });
});
