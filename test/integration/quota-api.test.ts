import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { silentLog } from '../../src/app/log';
import { evaluateThresholds } from '../../src/app/billing/thresholds';
import { handleUsageApiRequest, type UsageApiDeps } from '../../src/app/reading/usage-api';
import { DynamoAdjustmentStore } from '../../src/adapters/dynamodb/dynamodb-adjustments';
import { DynamoQuotaStore } from '../../src/adapters/dynamodb/dynamodb-quotas';
import { readThresholdConfig } from '../../src/adapters/wiring/handoff-config';
import { createThresholdDeps } from '../../src/adapters/wiring/handoff-deps';
import { mintToken } from '../../src/adapters/http/jwt-tokens';
import { createLocalUsageApiDeps } from '../../src/local/serving/local-usage-api';
import { usageApiEvent } from '../support/api-events';
import { handoffTable } from '../support/handoff';
import { generateLog } from '../../src/local/demo/log-generator';
import { putLogObject, readCounters, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';
import { TEST_SECRET } from '../support/tokens';

const info = testStackInfo();
const { dynamodb, sqs } = testClients(info);

/** Half of June 2026 has passed: the linear projection doubles month-to-date. */
const NOW = new Date('2026-06-16T00:00:00Z');
const at = (date: Date) => () => date;

const heavy = uniqueId('heavy');
const light = uniqueId('light');
let table: string;
let env: Record<string, string>;
let deps: UsageApiDeps;

const call = (event: APIGatewayProxyEventV2) => handleUsageApiRequest(event, deps);
const json = (response: APIGatewayProxyStructuredResultV2) => JSON.parse(response.body!);
const tokenFor = (accounts: string[]) => mintToken(TEST_SECRET, { accounts, ttlSeconds: 300, subject: 'quota-test' });
const adminToken = () => mintToken(TEST_SECRET, { accounts: [], admin: true, ttlSeconds: 300, subject: 'operator' });
const quotaPath = (account: string) => `/v1/accounts/${account}/quota`;

/** Measured usage: one log object of `lines` requests of `account` on `day`, ingested (the day index then lists the account). */
async function measured(account: string, day: string, lines: number): Promise<void> {
  const log = generateLog({ seed: lines, day, hour: 9, distribution: 'E2QAPI', accounts: [{ id: account, weight: 1 }], lines, previousDayRate: 0, malformedRate: 0, unattributedRate: 0 });
  const ref = await putLogObject(`cloudfront/${uniqueId('E2QAPI')}.${day}-09.x.gz`, log.text);
  const result = await ingestBatch({ Records: [s3NotificationMessage(ref)] }, { ...testIngestDeps({ TALLY_TABLE: table }), clock: at(NOW) });
  expect(result.batchItemFailures).toEqual([]);
}

async function usage(account: string, day: string, metric: 'requests' | 'bytes', delta: number): Promise<void> {
  const store = new DynamoAdjustmentStore({ client: dynamodb, tableName: table, clock: at(NOW) });
  await store.record({ account, day, adjustmentId: uniqueId('adj'), metric, delta, reason: 'test usage' }, 'test');
}

async function measuredBytes(account: string): Promise<number> {
  return (await readCounters(dynamodb, table, account, '2026-06-15'))['2026-06-15']?.bytes ?? 0;
}

beforeAll(async () => {
  ({ table, env } = await handoffTable(info));
  deps = { ...(await createLocalUsageApiDeps({ ...info, table }, TEST_SECRET, silentLog, { TALLY_TABLE: table, TALLY_QUOTAS: '{"bytes": 10000}' })), clock: at(NOW) };
  await new DynamoQuotaStore({ client: dynamodb, tableName: table }).set({ account: heavy, metric: 'requests', period: { from: '2026-06', monthly: 1000 }, updatedAt: NOW.toISOString() });
  await usage(heavy, '2026-06-02', 'requests', 600);
  await measured(heavy, '2026-06-15', 250);
  await usage(heavy, '2026-06-15', 'bytes', 2_000 - (await measuredBytes(heavy)));
  await measured(light, '2026-06-15', 150);
  await usage(light, '2026-05-31', 'requests', 999);
  const evaluator = createThresholdDeps(readThresholdConfig({ ...env, TALLY_QUOTAS: '{"bytes": 10000}' }), { dynamodb, sqs }, silentLog, { clock: at(NOW) });
  await evaluateThresholds(evaluator, { accounts: [heavy, light] });
});

describe('quotas in the read API', () => {
  it('adds month-to-date, allowance, percentage and the linear projection to a month-grouped report', async () => {
    const response = await call(usageApiEvent({ accountId: heavy, query: { from: '2026-06-01', to: '2026-06-30', granularity: 'month' }, token: await tokenFor([heavy]) }));

    expect(response.statusCode).toBe(200);
    const { quota } = json(response);
    expect(quota).toMatchObject({ month: '2026-06', from: '2026-06-01', to: '2026-06-16', asOf: NOW.toISOString() });
    expect(quota.metrics.requests).toMatchObject({ used: 850, allowance: 1000, percent: 85, projected: 1700, projectedPercent: 170, levels: [80, 100], source: 'account' });
    expect(quota.metrics.requests.crossed).toEqual([{ level: 80, crossedAt: NOW.toISOString(), used: 850, allowance: 1000 }]);
    expect(quota.metrics.bytes).toMatchObject({ used: 2000, allowance: 10000, percent: 20, projected: 4000, source: 'default' });
    expect(quota.metrics.authorization_requests).toMatchObject({ allowance: null, percent: null, projectedPercent: null, source: null });
  });

  it('adds the quota block to a day report only when asked', async () => {
    const token = await tokenFor([heavy]);
    const plain = json(await call(usageApiEvent({ accountId: heavy, query: { from: '2026-06-10', to: '2026-06-12' }, token })));
    const asked = json(await call(usageApiEvent({ accountId: heavy, query: { from: '2026-06-10', to: '2026-06-12', quota: 'true' }, token })));

    expect(plain.quota).toBeUndefined();
    expect(asked.quota.metrics.requests.used).toBe(850);
  });

  it("GET /v1/accounts/{id}/quota returns the account's allowances and this month's crossings", async () => {
    const response = await call(usageApiEvent({ accountId: heavy, path: quotaPath(heavy), token: await tokenFor([heavy]) }));

    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({
      accountId: heavy,
      month: '2026-06',
      levels: [80, 100],
      quotas: [
        { metric: 'bytes', monthly: 10000, levels: [80, 100], source: 'default' },
        expect.objectContaining({ metric: 'requests', monthly: 1000, levels: [80, 100], source: 'account' }),
      ],
      thresholds: [{ metric: 'requests', level: 80, allowance: 1000, used: 850, crossedAt: NOW.toISOString() }],
    });
  });

  it("keeps tenants apart on the quota endpoint: another tenant's account answers exactly as an unknown one", async () => {
    const lightToken = await tokenFor([light]);
    const other = await call(usageApiEvent({ accountId: heavy, path: quotaPath(heavy), token: lightToken }));
    const unknown = await call(usageApiEvent({ accountId: 'no-such-account', path: quotaPath('no-such-account'), token: lightToken }));
    const own = await call(usageApiEvent({ accountId: light, path: quotaPath(light), token: lightToken }));
    const admin = await call(usageApiEvent({ accountId: heavy, path: quotaPath(heavy), token: await adminToken() }));
    const anonymous = await call(usageApiEvent({ accountId: heavy, path: quotaPath(heavy) }));

    expect(other.statusCode).toBe(404);
    expect(other.body).toBe(unknown.body);
    expect(own.statusCode).toBe(200);
    expect(json(own).accountId).toBe(light);
    expect(admin.statusCode).toBe(200);
    expect(anonymous.statusCode).toBe(401);
  });

  it('ranks every account by usage over a range with its share of the total, for admin tokens only', async () => {
    const query = { from: '2026-06-01', to: '2026-06-30' };
    const ranking = await call(usageApiEvent({ path: '/v1/accounts', query, token: await adminToken() }));
    const tenant = await call(usageApiEvent({ path: '/v1/accounts', query, token: await tokenFor([heavy, light]) }));

    expect(ranking.statusCode).toBe(200);
    const body = json(ranking);
    expect(body.metric).toBe('requests');
    expect(body.accounts.map((row: { accountId: string; rank: number; totals: { requests: number }; share: { requests: number } }) => [row.accountId, row.rank, row.totals.requests, row.share.requests])).toEqual([
      [heavy, 1, 850, 85],
      [light, 2, 150, 15],
    ]);
    expect(body.totals.requests).toBe(1000);
    expect(tenant.statusCode).toBe(403);
  });

  it('keeps lines no resolver attributed out of the ranking and the shares, and answers CSV for format=csv', async () => {
    const only = uniqueId('ranked');
    const log = generateLog({ seed: 77, day: '2026-05-20', hour: 9, distribution: 'E2QAPI', accounts: [{ id: only, weight: 1 }], lines: 40, previousDayRate: 0, malformedRate: 0, unattributedRate: 0.5 });
    const ref = await putLogObject(`cloudfront/${uniqueId('E2QAPI')}.2026-05-20-09.x.gz`, log.text);
    expect((await ingestBatch({ Records: [s3NotificationMessage(ref)] }, { ...testIngestDeps({ TALLY_TABLE: table }), clock: at(NOW) })).batchItemFailures).toEqual([]);
    const query = { from: '2026-05-01', to: '2026-05-31' };
    const token = await adminToken();

    const ranking = json(await call(usageApiEvent({ path: '/v1/accounts', query, token })));
    const csv = await call(usageApiEvent({ path: '/v1/accounts', query: { ...query, format: 'csv' }, token }));
    const unknown = await call(usageApiEvent({ path: '/v1/accounts', query: { ...query, format: 'xml' }, token }));

    const ranked = ranking.accounts.map((row: { accountId: string; rank: number; share: { requests: number } }) => [row.accountId, row.rank, row.share.requests]);
    expect(ranked).toEqual([[only, 1, 100]]);
    expect(ranking.unattributed.requests).toBeGreaterThan(0);
    expect(ranking.totals.requests + ranking.unattributed.requests).toBe(40);
    expect(csv.statusCode).toBe(200);
    expect(csv.headers!['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers!['content-disposition']).toBe('attachment; filename="tally-ranking-2026-05-01-2026-05-31-requests.csv"');
    expect(csv.body!.split('\r\n')).toEqual([
      ['rank', 'account', ...ranking.metricNames, 'share_requests'].join(','),
      ['1', only, ...ranking.metricNames.map((name: string) => String(ranking.accounts[0].totals[name])), '100'].join(','),
      ['', 'unattributed', ...ranking.metricNames.map((name: string) => String(ranking.unattributed[name])), ''].join(','),
      '',
    ]);
    expect(unknown.statusCode).toBe(400);
  });
});
