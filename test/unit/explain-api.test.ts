import { handleUsageApiRequest, type UsageApiDeps } from '../../src/app/reading/usage-api';
import { silentLog } from '../../src/app/log';
import { JoseTokenVerifier, mintToken } from '../../src/adapters/http/jwt-tokens';
import type { HealthReport } from '../../src/domain/reading/health';
import type { UsageRecord } from '../../src/domain/reading/usage-records';
import { usageApiEvent } from '../support/api-events';
import { TEST_SECRET } from '../support/tokens';

const DAY = '2026-11-21';
const reads: string[] = [];
const records: UsageRecord[] = [{ kind: 'usage', day: DAY, shard: 1, metrics: { requests: 3, bytes: 30 } }];
const health = { generatedAt: 'now' } as HealthReport;

function deps(overrides: Partial<UsageApiDeps> = {}): UsageApiDeps {
  return {
    reader: { read: async (account) => (reads.push(`usage ${account}`), { records, requests: 1 }) },
    sources: {
      sourcesOf: async (account) => (
        reads.push(`sources ${account}`),
        { sources: [{ bucket: 'logs', key: 'k1', etag: 'e1', format: 'standard', processedAt: '2026-11-21T01:00:00.000Z', metrics: { requests: 3, bytes: 30 } }], requests: 4 }
      ),
    },
    health: async (days) => (reads.push(`health ${days}`), health),
    verifier: new JoseTokenVerifier({ kind: 'secret', secret: TEST_SECRET }, { audience: 'tally-usage-api', issuer: 'tally' }),
    log: silentLog,
    metricNames: ['requests', 'bytes'],
    corsOrigins: [],
    ...overrides,
  };
}

const tenant = () => mintToken(TEST_SECRET, { accounts: ['acme'], ttlSeconds: 60 });
const admin = () => mintToken(TEST_SECRET, { admin: true, ttlSeconds: 60 });
const explain = async (account: string, token: string, api = deps(), query?: Record<string, string>) =>
  handleUsageApiRequest(usageApiEvent({ path: `/v1/accounts/${account}/days/${DAY}/explain`, token, ...(query === undefined ? {} : { query }) }), api);

beforeEach(() => {
  reads.length = 0;
});

describe('GET /v1/accounts/{id}/days/{day}/explain', () => {
  it('explains a day of an account the token names', async () => {
    const response = await explain('acme', await tenant());
    const body = JSON.parse(response.body!);

    expect(response.statusCode).toBe(200);
    expect(body).toMatchObject({ accountId: 'acme', day: DAY, metrics: { requests: 3, bytes: 30 }, sourceTotals: { requests: 3, bytes: 30 }, complete: true });
    expect(reads.sort()).toEqual(['sources acme', 'usage acme']);
  });

  it("answers another tenant's account exactly as an unknown one, before any read", async () => {
    const token = await tenant();
    const other = await explain('globex', token);
    const unknown = await explain('nobody', token);

    expect(other.statusCode).toBe(404);
    expect({ status: other.statusCode, headers: other.headers, body: other.body }).toEqual({ status: unknown.statusCode, headers: unknown.headers, body: unknown.body });
    expect(reads).toEqual([]);
  });

  it('refuses a day that is not a calendar day', async () => {
    const response = await handleUsageApiRequest(usageApiEvent({ path: '/v1/accounts/acme/days/2026-02-30/explain', token: await tenant() }), deps());
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body!).message).toContain('calendar day');
  });

  it('refuses a far-future day with the supported range, reading nothing', async () => {
    const response = await handleUsageApiRequest(usageApiEvent({ path: '/v1/accounts/acme/days/9999-12-31/explain', token: await tenant() }), deps());
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body!).message).toBe('the day in the path must be within the days Tally supports, 2000-01-01..2099-12-31, got "9999-12-31"');
    expect(reads).toEqual([]);
  });

  it('refuses a time zone other than UTC, reading nothing: explain is by UTC day', async () => {
    const zoned = await explain('acme', await tenant(), deps(), { tz: 'Asia/Tokyo' });
    const unknown = await explain('acme', await tenant(), deps(), { tz: 'Mars/Olympus' });
    const readsBefore = [...reads];
    const utc = await explain('acme', await tenant(), deps(), { tz: 'UTC' });

    expect(zoned.statusCode).toBe(400);
    expect(JSON.parse(zoned.body!).message).toContain('explain answers UTC days only');
    expect(JSON.parse(zoned.body!).message).toContain('tz=Asia/Tokyo');
    expect(unknown.statusCode).toBe(400);
    expect(readsBefore).toEqual([]);
    expect(utc.statusCode).toBe(200);
  });

  it('answers CSV when asked, as a download', async () => {
    const response = await explain('acme', await tenant(), deps(), { format: 'csv' });
    expect(response.headers['content-type']).toContain('text/csv');
    expect(response.headers['content-disposition']).toBe(`attachment; filename="tally-acme-${DAY}-explain.csv"`);
  });

  it('is no route when the API has no source reader', async () => {
    expect((await explain('acme', await tenant(), deps({ sources: undefined as never }))).statusCode).toBe(404);
  });
});

describe('GET /v1/health', () => {
  const call = async (token: string) => handleUsageApiRequest(usageApiEvent({ path: '/v1/health', token }), deps());

  it('answers admin tokens', async () => {
    const response = await call(await admin());
    expect(response.statusCode).toBe(200);
    expect(JSON.parse(response.body!)).toEqual(health);
    expect(response.headers['cache-control']).toBe('no-store');
  });

  it('reads the days asked for, 1 to 31 (2 when not asked), and refuses others with 400', async () => {
    const token = await admin();
    const days = async (value?: string) => handleUsageApiRequest(usageApiEvent({ path: '/v1/health', token, ...(value === undefined ? {} : { query: { days: value } }) }), deps());
    reads.length = 0;

    expect((await days('7')).statusCode).toBe(200);
    expect((await days()).statusCode).toBe(200);
    expect((await days('31')).statusCode).toBe(200);
    for (const bad of ['0', '32', '1.5', 'x', '', '-1']) {
      const response = await days(bad);
      expect({ bad, status: response.statusCode }).toEqual({ bad, status: 400 });
      expect(JSON.parse(response.body!).message).toContain('days must be a whole number from 1 to 31');
    }
    expect(reads).toEqual(['health 7', 'health 2', 'health 31']);
  });

  it('refuses every other token with 403', async () => {
    const response = await call(await tenant());
    expect(response.statusCode).toBe(403);
    expect(JSON.parse(response.body!).message).toContain('admin token');
  });
});
