import { BatchWriteItemCommand, PutItemCommand, type WriteRequest } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { jsonLog } from '../../src/app/log';
import { handleUsageApiRequest, type UsageApiDeps } from '../../src/app/reading/usage-api';
import { mintToken } from '../../src/adapters/http/jwt-tokens';
import { addDays, dayOf, eachDay } from '../../src/domain/days';
import { adjustmentItemKey, usageKey } from '../../src/domain/counters/keys';
import { startApiServer, type ApiServer } from '../../src/local/serving/api-server';
import { createLocalUsageApiDeps, dashboardMounts } from '../../src/local/serving/local-usage-api';
import { emptyExpected, expectedKey, generateLog, mergeExpected } from '../../src/local/demo/log-generator';
import { localEnvironment } from '../../src/local/stack';
import { usageApiEvent } from '../support/api-events';
import { putLogObject, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';
import { signHs256, standardClaims, tamperedToken, TEST_SECRET, unsignedToken } from '../support/tokens';

const info = testStackInfo();
const { dynamodb } = testClients(info);
const METRICS = '[{"name":"authorization_requests","path":"/api/authorization/*"}]';

const acme = uniqueId('acme');
const globex = uniqueId('globex');
const never = uniqueId('never');
const expected = emptyExpected();
/**
 * Logs of hours 00 and 13 on these days; hour 00 carries some lines of the day before,
 * so 10-29 and 11-01 get usage too, and 10-28 and 11-03 stay empty.
 */
const LOG_DAYS = ['2026-10-30', '2026-10-31', '2026-11-02'];
const RANGE = { from: '2026-10-28', to: '2026-11-03' };
const ZERO_DAYS = ['2026-10-28', '2026-11-03'];
const ADJUSTMENTS = [
  { id: 'INC-1', day: '2026-11-02', metric: 'requests', delta: -5, reason: 'refund: health checks', createdAt: '2026-11-20T10:00:00.000Z' },
  { id: 'INC-2', day: '2026-10-31', metric: 'bytes', delta: 1_000, reason: 'late log', createdAt: '2026-11-20T11:00:00.000Z' },
];

let deps: UsageApiDeps;
let logLines: string[];

const call = (event: APIGatewayProxyEventV2) => handleUsageApiRequest(event, deps);
const tokenFor = (accounts: string[], options: { ttlSeconds?: number } = {}) =>
  mintToken(TEST_SECRET, { accounts, ttlSeconds: options.ttlSeconds ?? 300, subject: 'integration' });
const json = (response: APIGatewayProxyStructuredResultV2) => JSON.parse(response.body!);

/** What the generator says acme must count to on `day`, all three metrics present. */
function measured(account: string, day: string): Record<string, number> {
  return { requests: 0, bytes: 0, authorization_requests: 0, ...(expected.usage.get(expectedKey(account, day)) ?? {}) };
}

beforeAll(async () => {
  // Ingest realistic logs through the real ingest path, as the Lambda would.
  const refs = [];
  for (const [i, day] of LOG_DAYS.entries()) {
    for (const hour of [0, 13]) {
      const log = generateLog({
        seed: 7_000 + i * 100 + hour,
        day,
        hour,
        distribution: 'E2API',
        accounts: [
          { id: acme, weight: 3 },
          { id: globex, weight: 1 },
        ],
        lines: 120,
        previousDayRate: 0.2,
        malformedRate: 0.02,
        unattributedRate: 0.02,
      });
      mergeExpected(expected, log.expected);
      refs.push(await putLogObject(`cloudfront/${uniqueId('E2API')}.${day}-${String(hour).padStart(2, '0')}.x.gz`, log.text));
    }
  }
  const ingestDeps = testIngestDeps({ TALLY_METRICS: METRICS });
  const result = await ingestBatch({ Records: refs.map((ref) => s3NotificationMessage(ref)) }, ingestDeps);
  expect(result.batchItemFailures).toEqual([]);
  for (const a of ADJUSTMENTS) {
    const key = adjustmentItemKey({ accountId: acme, day: a.day, adjustmentId: a.id });
    await dynamodb.send(
      new PutItemCommand({
        TableName: info.table,
        Item: {
          PK: { S: key.PK },
          SK: { S: key.SK },
          metric: { S: a.metric },
          delta: { N: String(a.delta) },
          reason: { S: a.reason },
          createdAt: { S: a.createdAt },
          actor: { S: 'ops@example.com' },
        },
      }),
    );
  }
  logLines = [];
  deps = await createLocalUsageApiDeps(info, TEST_SECRET, jsonLog((line) => void logLines.push(line), 'info'), { TALLY_METRICS: METRICS });
});

describe('usage API against DynamoDB Local, with data ingested through the real handler', () => {
  it('returns per-day numbers equal to what was ingested, with zero days present', async () => {
    const response = await call(usageApiEvent({ accountId: acme, query: RANGE, token: await tokenFor([acme]) }));

    expect(response.statusCode).toBe(200);
    const report = json(response);
    expect(report.metricNames).toEqual(['requests', 'bytes', 'authorization_requests']);
    expect(report.days.map((row: { day: string }) => row.day)).toEqual(eachDay(RANGE.from, RANGE.to));
    for (const row of report.days) expect({ day: row.day, ...row.metrics }).toEqual({ day: row.day, ...measured(acme, row.day) });
    for (const day of ZERO_DAYS) {
      expect(report.days.find((row: { day: string }) => row.day === day).metrics).toEqual({ requests: 0, bytes: 0, authorization_requests: 0 });
    }
    expect(measured(acme, '2026-10-29').requests).toBeGreaterThan(0);
    expect(measured(acme, '2026-11-01').requests).toBeGreaterThan(0);
    expect(report.updatedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('shows adjustments apart from measured usage and includes them in the totals', async () => {
    const report = json(await call(usageApiEvent({ accountId: acme, query: RANGE, token: await tokenFor([acme]) })));

    const sum = (metric: string) => eachDay(RANGE.from, RANGE.to).reduce((total, day) => total + measured(acme, day)[metric]!, 0);
    expect(report.measuredTotals).toEqual({ requests: sum('requests'), bytes: sum('bytes'), authorization_requests: sum('authorization_requests') });
    expect(report.adjustmentTotals).toEqual({ requests: -5, bytes: 1_000, authorization_requests: 0 });
    expect(report.totals).toEqual({ requests: sum('requests') - 5, bytes: sum('bytes') + 1_000, authorization_requests: sum('authorization_requests') });
    const nov2 = report.days.find((row: { day: string }) => row.day === '2026-11-02');
    expect(nov2.adjustments).toEqual({ requests: -5, bytes: 0, authorization_requests: 0 });
    expect(nov2.totals.requests).toBe(measured(acme, '2026-11-02').requests! - 5);
    expect(report.adjustments).toEqual([
      { id: 'INC-2', day: '2026-10-31', metric: 'bytes', delta: 1_000, reason: 'late log', createdAt: '2026-11-20T11:00:00.000Z' },
      { id: 'INC-1', day: '2026-11-02', metric: 'requests', delta: -5, reason: 'refund: health checks', createdAt: '2026-11-20T10:00:00.000Z' },
    ]);
  });

  it('groups by calendar month', async () => {
    const report = json(await call(usageApiEvent({ accountId: acme, query: { ...RANGE, granularity: 'month' }, token: await tokenFor([acme]) })));

    const monthSum = (days: string[], metric: string) => days.reduce((total, day) => total + measured(acme, day)[metric]!, 0);
    const october = eachDay('2026-10-28', '2026-10-31');
    const november = eachDay('2026-11-01', '2026-11-03');
    expect(report.granularity).toBe('month');
    expect(report.months).toEqual([
      {
        month: '2026-10',
        from: '2026-10-28',
        to: '2026-10-31',
        days: 4,
        metrics: { requests: monthSum(october, 'requests'), bytes: monthSum(october, 'bytes'), authorization_requests: monthSum(october, 'authorization_requests') },
        adjustments: { requests: 0, bytes: 1_000, authorization_requests: 0 },
        totals: { requests: monthSum(october, 'requests'), bytes: monthSum(october, 'bytes') + 1_000, authorization_requests: monthSum(october, 'authorization_requests') },
      },
      {
        month: '2026-11',
        from: '2026-11-01',
        to: '2026-11-03',
        days: 3,
        metrics: { requests: monthSum(november, 'requests'), bytes: monthSum(november, 'bytes'), authorization_requests: monthSum(november, 'authorization_requests') },
        adjustments: { requests: -5, bytes: 0, authorization_requests: 0 },
        totals: { requests: monthSum(november, 'requests') - 5, bytes: monthSum(november, 'bytes'), authorization_requests: monthSum(november, 'authorization_requests') },
      },
    ]);
  });

  it('returns the same rows as CSV', async () => {
    const response = await call(usageApiEvent({ accountId: globex, query: { ...RANGE, format: 'csv' }, token: await tokenFor([globex]) }));

    const lines = eachDay(RANGE.from, RANGE.to).map((day) => {
      const m = measured(globex, day);
      // Past their close grace, never closed here: open where globex has usage, closed (no closedAt) where it has none.
      const status = expected.usage.has(expectedKey(globex, day)) ? 'open' : 'closed';
      return `${globex},${day},${m.requests},${m.bytes},${m.authorization_requests},0,0,0,${m.requests},${m.bytes},${m.authorization_requests},${status},,0,0,0`;
    });
    expect(response.headers?.['content-type']).toBe('text/csv; charset=utf-8');
    expect(response.body).toBe(
      [
        'account,day,requests,bytes,authorization_requests,requests_adjustment,bytes_adjustment,authorization_requests_adjustment,requests_total,bytes_total,authorization_requests_total,status,closed_at,requests_late,bytes_late,authorization_requests_late',
        ...lines,
      ]
        .map((line) => `${line}\r\n`)
        .join(''),
    );
  });

  it('calls a year-old day with no usage closed (its zeros are final), alike in JSON and CSV', async () => {
    const day = addDays(dayOf(new Date()), -365);
    const token = await tokenFor([acme]);

    const body = json(await call(usageApiEvent({ accountId: acme, query: { from: day, to: day }, token })));
    const csv = await call(usageApiEvent({ accountId: acme, query: { from: day, to: day, format: 'csv' }, token }));

    expect(body.days).toEqual([expect.objectContaining({ day, status: 'closed', totals: { requests: 0, bytes: 0, authorization_requests: 0 } })]);
    expect(body.days[0].closedAt).toBeUndefined();
    expect(csv.body!.split('\r\n')[1]).toBe(`${acme},${day},0,0,0,0,0,0,0,0,0,closed,,0,0,0`);
  });

  it('reads a 366-day range with one Query request when the items fit one page (and one of the close records)', async () => {
    logLines.length = 0;

    const response = await call(usageApiEvent({ accountId: acme, query: { from: '2026-01-01', to: '2027-01-01' }, token: await tokenFor([acme]) }));

    expect(response.statusCode).toBe(200);
    expect(json(response).days).toHaveLength(366);
    const entry = JSON.parse(logLines.find((line) => line.includes('"usage api request"'))!);
    expect([entry.queryRequests, entry.records]).toEqual([2, expect.any(Number)]);
  });

  describe('refuses bad tokens with 401', () => {
    const claims = () => ({ ...standardClaims(), accounts: [acme] });
    it.each([
      ['missing', async () => undefined, 'missing_token'],
      ['expired', async () => mintToken(TEST_SECRET, { accounts: [acme], ttlSeconds: 60, now: new Date(Date.now() - 600_000) }), 'token_expired'],
      ['not yet valid (nbf in the future)', async () => mintToken(TEST_SECRET, { accounts: [acme], ttlSeconds: 600, notBeforeSeconds: 120 }), 'invalid_token'],
      ['for another audience', async () => signHs256({ ...claims(), aud: 'another-api' }), 'invalid_token'],
      ['alg none', async () => unsignedToken(claims()), 'invalid_token'],
      ['tampered (accounts changed)', async () => tamperedToken(await tokenFor([acme]), (c) => ({ ...c, accounts: [globex] })), 'invalid_token'],
      ['signed with the wrong key', async () => signHs256(claims(), `${TEST_SECRET}-wrong`), 'invalid_token'],
    ])('%s', async (_name, token, failure) => {
      const response = await call(usageApiEvent({ accountId: acme, query: RANGE, ...(await token().then((t) => (t === undefined ? {} : { token: t }))) }));

      expect(response.statusCode).toBe(401);
      expect(json(response).error).toBe(failure);
      expect(response.headers?.['www-authenticate']).toMatch(/^Bearer realm="tally"/);
      expect(response.body).not.toContain(String(measured(acme, '2026-10-30').requests));
    });
  });

  it('answers a token for one tenant asking for another exactly as an unknown account', async () => {
    const token = await tokenFor([acme]);

    const otherTenant = await call(usageApiEvent({ accountId: globex, query: RANGE, token }));
    const unknown = await call(usageApiEvent({ accountId: never, query: RANGE, token }));

    expect(otherTenant.statusCode).toBe(404);
    expect(otherTenant.body).toBe(unknown.body);
    expect(otherTenant.headers).toEqual(unknown.headers);
    expect(json(otherTenant)).toEqual({ error: 'not_found', message: 'account not found' });
  });

  it.each([
    [{ from: '2026-01-01', to: '2027-01-02' }, acme, 'spans 367 days; ask for at most 366 days per request'],
    [{ from: '2026-11-03', to: '2026-10-28' }, acme, '"to" (2026-10-28) is before "from" (2026-11-03)'],
    [{ from: '2026-13-01', to: '2026-11-03' }, acme, 'query parameter "from" must be a calendar day as YYYY-MM-DD, got "2026-13-01"'],
    [{ from: '2026-11-01' }, acme, 'query parameter "to" is required'],
    [RANGE, 'bad#id', 'invalid account id'],
  ])('answers 400 for %j on %s', async (query, accountId, message) => {
    const response = await call(usageApiEvent({ accountId, query, token: await tokenFor([acme]) }));

    expect(response.statusCode).toBe(400);
    expect(json(response).error).toBe('bad_request');
    expect(json(response).message).toContain(message);
  });

  it('answers 500 without internals when DynamoDB fails, and logs the cause', async () => {
    const lines: string[] = [];
    const broken = await createLocalUsageApiDeps(info, TEST_SECRET, jsonLog((line) => void lines.push(line)), { TALLY_TABLE: 'no-such-table-xyz', TALLY_MAX_ATTEMPTS: '1' });

    const response = await handleUsageApiRequest(usageApiEvent({ accountId: acme, query: RANGE, token: await tokenFor([acme]) }), broken);

    expect(response.statusCode).toBe(500);
    expect(Object.keys(json(response)).sort()).toEqual(['error', 'message', 'requestId']);
    expect(response.body).not.toMatch(/no-such-table|ResourceNotFound|DynamoDB|at /);
    expect(lines.join('\n')).toContain('ResourceNotFoundException');
  });

  it('the Lambda handler module answers as the local API does', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, { ...localEnvironment(info), TALLY_JWT_SECRET: TEST_SECRET, TALLY_METRICS: METRICS, LOG_LEVEL: 'error' });
    delete process.env.TALLY_JWT_SECRET_PARAMETER;
    delete process.env.TALLY_JWT_PUBLIC_KEY;
    try {
      let handler: ((event: APIGatewayProxyEventV2) => Promise<unknown>) | undefined;
      jest.isolateModules(() => {
        handler = (require('../../handlers/usage-api') as { handler: typeof handler }).handler;
      });
      const event = usageApiEvent({ accountId: acme, query: RANGE, token: await tokenFor([acme]) });

      const fromLambda = (await handler!(event)) as APIGatewayProxyStructuredResultV2;
      const fromLocal = await call(event);

      expect(fromLambda.statusCode).toBe(200);
      expect(fromLambda.body).toBe(fromLocal.body);
    } finally {
      process.env = saved;
    }
  });

  describe('over HTTP through the local server', () => {
    let server: ApiServer;
    beforeAll(async () => {
      server = await startApiServer({ handler: (event) => handleUsageApiRequest(event, deps), mounts: dashboardMounts() });
    });
    afterAll(() => server.stop());

    it('answers what the handler answers, honours If-None-Match, and serves the dashboard', async () => {
      const token = await tokenFor([acme]);
      const url = `${server.url}/v1/accounts/${acme}/usage?from=${RANGE.from}&to=${RANGE.to}`;

      const first = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      const again = await fetch(url, { headers: { authorization: `Bearer ${token}`, 'if-none-match': first.headers.get('etag')! } });
      const page = await fetch(`${server.url}/`);
      const escape = await fetch(`${server.url}/..%2f..%2fpackage.json`);

      expect(first.status).toBe(200);
      expect(await first.json()).toEqual(json(await call(usageApiEvent({ accountId: acme, query: RANGE, token }))));
      expect(again.status).toBe(304);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(await page.text()).toContain('<title>Tally usage</title>');
      expect(escape.status).toBe(404);
    });
  });
});

describe('usage API read cost', () => {
  it('reads a full year of data (366 days x 4 shards at the 48-key history cap) in few Query pages', async () => {
    const account = uniqueId('year');
    const days = eachDay('2028-01-01', '2028-12-31');
    const history = { L: Array.from({ length: 48 }, (_, i) => ({ B: Buffer.alloc(12, i) })) };
    const writes: WriteRequest[] = days.flatMap((day) =>
      [0, 1, 2, 3].map((shard) => {
        const key = usageKey({ accountId: account, day, shard });
        return {
          PutRequest: {
            Item: {
              PK: { S: key.PK },
              SK: { S: key.SK },
              requests: { N: '10' },
              bytes: { N: '1000' },
              authorization_requests: { N: '1' },
              h: history,
              updatedAt: { S: `${day}T23:00:00.000Z` },
            },
          },
        };
      }),
    );
    const batches = Array.from({ length: Math.ceil(writes.length / 25) }, (_, i) => writes.slice(i * 25, i * 25 + 25));
    for (let i = 0; i < batches.length; i += 6) {
      await Promise.all(
        batches.slice(i, i + 6).map(async (batch) => {
          const result = await dynamodb.send(new BatchWriteItemCommand({ RequestItems: { [info.table]: batch } }));
          expect(result.UnprocessedItems ?? {}).toEqual({});
        }),
      );
    }
    const lines: string[] = [];
    const measuring = await createLocalUsageApiDeps(info, TEST_SECRET, jsonLog((line) => void lines.push(line)), { TALLY_METRICS: METRICS });

    const response = await handleUsageApiRequest(
      usageApiEvent({ accountId: account, query: { from: '2028-01-01', to: '2028-12-31' }, token: await tokenFor([account]) }),
      measuring,
    );

    const report = json(response);
    expect(report.totals).toEqual({ requests: 366 * 40, bytes: 366 * 4000, authorization_requests: 366 * 4 });
    expect(report.updatedAt).toBe('2028-12-31T23:00:00.000Z');
    const entry = JSON.parse(lines.find((line) => line.includes('"usage api request"'))!);
    expect(entry.records).toBe(366 * 4);
    // 1464 items of about 740 bytes: 1 MB pages, so one Query in two requests, and one of the close records.
    expect(entry.queryRequests).toBe(3);
  });
});

describe('usage API figures past exact numbers', () => {
  /** 10^14 + 1 bytes a day (100 TB, a big CDN customer), on one shard a day; the last digit makes any rounding show. */
  const DAILY_BYTES = 100_000_000_000_001;
  const account = uniqueId('huge');
  beforeAll(async () => {
    const writes: WriteRequest[] = eachDay('2029-01-01', '2029-04-30').map((day) => {
      const key = usageKey({ accountId: account, day, shard: 0 });
      return { PutRequest: { Item: { PK: { S: key.PK }, SK: { S: key.SK }, requests: { N: '1' }, bytes: { N: String(DAILY_BYTES) }, updatedAt: { S: `${day}T23:00:00.000Z` } } } };
    });
    for (let i = 0; i < writes.length; i += 25) {
      const result = await dynamodb.send(new BatchWriteItemCommand({ RequestItems: { [info.table]: writes.slice(i, i + 25) } }));
      expect(result.UnprocessedItems ?? {}).toEqual({});
    }
  });

  it('answers a range whose totals stay exact, to the last digit (90 days of 10^14 + 1)', async () => {
    const response = await call(usageApiEvent({ accountId: account, query: { from: '2029-01-01', to: '2029-03-31' }, token: await tokenFor([account]) }));

    expect(response.statusCode).toBe(200);
    expect(response.body).toMatch(new RegExp(`"totals":\\{"requests":90,"bytes":${90n * BigInt(DAILY_BYTES)}\\b`));
  });

  it.each([['json'], ['csv']])('refuses (400, naming the figure) a range whose total passes 2^53 - 1 as %s, rather than answer it rounded', async (format) => {
    // 91 days: 9,100,000,000,000,091 bytes, which a double holds as 9,100,000,000,000,092.
    const response = await call(usageApiEvent({ accountId: account, query: { from: '2029-01-01', to: '2029-04-01', format }, token: await tokenFor([account]) }));

    expect(response.statusCode).toBe(400);
    expect(json(response)).toEqual({
      error: 'bad_request',
      message: expect.stringMatching(
        new RegExp(`^usage of ${account} over 2029-01-01\\.\\.2029-04-01: totals\\.bytes adds up past 9,007,199,254,740,991 \\(2\\^53 - 1\\), .*nothing is answered rounded: ask for a shorter range`),
      ),
    });
  });

  it('answers the same 120 days a month at a time, each month exact', async () => {
    const token = await tokenFor([account]);
    let bytes = 0n;
    for (const [from, to] of [['2029-01-01', '2029-01-31'], ['2029-02-01', '2029-02-28'], ['2029-03-01', '2029-03-31'], ['2029-04-01', '2029-04-30']]) {
      const response = await call(usageApiEvent({ accountId: account, query: { from: from!, to: to! }, token }));
      expect(response.statusCode).toBe(200);
      const month = json(response).totals.bytes as number;
      expect(Number.isSafeInteger(month)).toBe(true);
      bytes += BigInt(month);
    }
    expect(bytes).toBe(120n * BigInt(DAILY_BYTES));
  });
});
