import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { SignJWT } from 'jose';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { jsonLog } from '../../src/app/log';
import { handleUsageApiRequest, type UsageApiDeps } from '../../src/app/reading/usage-api';
import { mintToken } from '../../src/adapters/http/jwt-tokens';
import { adjustmentItemKey } from '../../src/domain/counters/keys';
import { startApiServer, type ApiServer } from '../../src/local/serving/api-server';
import { createLocalUsageApiDeps, dashboardMounts } from '../../src/local/serving/local-usage-api';
import { putLogObject, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';
import { rsaKeys, signHs256, standardClaims, tamperedToken, TEST_SECRET, unsignedToken } from '../support/tokens';

/**
 * Tenant isolation and hostile input against the read API over real HTTP (the local
 * server in front of the same handler function the Lambda runs), with DynamoDB Local.
 */
const info = testStackInfo();
const { dynamodb } = testClients(info);
const acme = uniqueId('sec-acme');
const globex = uniqueId('sec-globex');
const RANGE = 'from=2026-11-20&to=2026-11-22';
const logLines: string[] = [];
let deps: UsageApiDeps;
let server: ApiServer;

const get = (path: string, token?: string, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers } });
const usagePath = (account: string, query = RANGE) => `/v1/accounts/${account}/usage?${query}`;

/** What no response body may ever carry. */
function expectNoInternals(body: string): void {
  expect(body).not.toMatch(/\bat .+\.(ts|js):\d+|node_modules|DynamoDB|ResourceNotFound|Exception|stack|TALLY_|\/work\//i);
}

beforeAll(async () => {
  const ingest = testIngestDeps({}, { log: jsonLog((line) => logLines.push(line)) });
  const refs = await Promise.all(
    [acme, globex].map((account, i) =>
      putLogObject(`cloudfront/${uniqueId('E2SEC')}.2026-11-21-00.${i}.gz`, `#Fields: date time sc-bytes x-host-header\n2026-11-21\t00:00:01\t${100 + i}\t${account}.x.com\n`),
    ),
  );
  expect((await ingestBatch({ Records: refs.map((ref) => s3NotificationMessage(ref)) }, ingest)).batchItemFailures).toEqual([]);
  deps = await createLocalUsageApiDeps(info, TEST_SECRET, jsonLog((line) => logLines.push(line), 'debug'));
  server = await startApiServer({ handler: (event) => handleUsageApiRequest(event, deps), mounts: dashboardMounts() });
});
afterAll(() => server.stop());

describe('tokens', () => {
  const claims = () => ({ ...standardClaims(), accounts: [acme] });

  it.each([
    ['forged (signed with another secret)', () => signHs256(claims(), 'another-secret-that-is-long-enough-0123456789')],
    ['expired', () => mintToken(TEST_SECRET, { accounts: [acme], ttlSeconds: 60, now: new Date(Date.now() - 3_600_000) })],
    ['alg none', async () => unsignedToken(claims())],
    ['alg none with an empty but present signature', async () => `${unsignedToken(claims())}AAAA`],
    ['for the wrong audience', () => signHs256({ ...claims(), aud: 'billing-admin' })],
    ['for the wrong issuer', () => signHs256({ ...claims(), iss: 'someone-else' })],
    ['tampered claims', async () => tamperedToken(await mintToken(TEST_SECRET, { accounts: [globex], ttlSeconds: 300 }), (c) => ({ ...c, accounts: [acme] }))],
    ['without exp', () => new SignJWT({ accounts: [acme] }).setProtectedHeader({ alg: 'HS256' }).setIssuer('tally').setAudience('tally-usage-api').sign(new TextEncoder().encode(TEST_SECRET))],
    ['garbage', async () => 'not.a.jwt'],
  ])('refuses a token that is %s with 401 and no data', async (_, make) => {
    const response = await get(usagePath(acme), await make());
    const body = await response.text();

    expect(response.status).toBe(401);
    expect(JSON.parse(body).error).toMatch(/token/);
    expect(body).not.toContain('"days"');
    expectNoInternals(body);
  });

  it('refuses an HS256 token signed with the RS256 public key (algorithm confusion)', async () => {
    const { publicKey, privateKey } = rsaKeys();
    const rsaDeps = await createLocalUsageApiDeps(info, TEST_SECRET, jsonLog(() => undefined), { TALLY_JWT_SECRET: '', TALLY_JWT_PUBLIC_KEY: publicKey });
    const confused = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(publicKey));
    const genuine = await new SignJWT(claims()).setProtectedHeader({ alg: 'RS256' }).sign((await import('node:crypto')).createPrivateKey(privateKey));
    const event = (token: string) => ({ ...usageEvent(acme), headers: { host: 'x', authorization: `Bearer ${token}` } });

    const refused = await handleUsageApiRequest(event(confused), rsaDeps);
    const accepted = await handleUsageApiRequest(event(genuine), rsaDeps);

    expect(refused.statusCode).toBe(401);
    expect(accepted.statusCode).toBe(200);
  });
});

describe('tenant isolation', () => {
  it('answers a token for acme asking for globex exactly as for an account that does not exist', async () => {
    const token = await mintToken(TEST_SECRET, { accounts: [acme], ttlSeconds: 300 });

    const other = await get(usagePath(globex), token);
    const unknown = await get(usagePath(uniqueId('nobody')), token);
    const own = await get(usagePath(acme), token);

    expect(other.status).toBe(404);
    expect(await other.text()).toBe(await unknown.text());
    expect([...other.headers.entries()].filter(([h]) => h !== 'date')).toEqual([...unknown.headers.entries()].filter(([h]) => h !== 'date'));
    expect(own.status).toBe(200);
    expect(((await own.json()) as { totals: { requests: number } }).totals.requests).toBe(1);
  });

  it.each([
    ['a path traversal', '..%2F..%2Fadmin'],
    ['dot segments', '..'],
    ['a key separator', `${acme}%23DAY%232026-11-21`],
    ['unicode', 'caf%C3%A9'],
    ['a formula', '%3DHYPERLINK(1)'],
    ['10 KB', 'a'.repeat(10 * 1024)],
  ])('refuses an account id with %s with 400 (or 404), without reading or echoing it', async (_, account) => {
    const token = await mintToken(TEST_SECRET, { admin: true, ttlSeconds: 300 });

    const response = await get(usagePath(account), token);
    const body = await response.text();

    expect([400, 404]).toContain(response.status);
    expect(body.length).toBeLessThan(600);
    expect(body).not.toContain('a'.repeat(100));
    expectNoInternals(body);
  });

  it('never serves files outside the dashboard', async () => {
    for (const path of ['/../package.json', '/..%2f..%2fpackage.json', '/%2e%2e/%2e%2e/package.json', '/static/..%5c..%5cpackage.json', '/.tally/jwt-secret']) {
      const response = await get(path);
      expect({ path, status: response.status }).toEqual({ path, status: 404 });
      expect(await response.text()).not.toContain('"devDependencies"');
    }
  });
});

describe('hostile input', () => {
  it('refuses an oversize query string (414) without echoing it, and a bad day (400) briefly', async () => {
    const token = await mintToken(TEST_SECRET, { accounts: [acme], ttlSeconds: 300 });

    const response = await get(usagePath(acme, `from=2026-11-20&to=2026-11-22&junk=${'x'.repeat(12_000)}`), token);
    const hugeDay = await get(usagePath(acme, `from=${'9'.repeat(8_000)}&to=2026-11-22`), token);

    expect(response.status).toBe(414);
    const longDay = await get(usagePath(acme, `from=${'9'.repeat(900)}&to=2026-11-22`), token);
    expect(hugeDay.status).toBe(414);
    expect(longDay.status).toBe(400);
    const body = await longDay.text();
    expect(body.length).toBeLessThan(600);
    expectNoInternals(body);
  });

  it('writes CSV that a spreadsheet will not run, even for hostile metric names in the table', async () => {
    const account = uniqueId('sec-csv');
    const key = adjustmentItemKey({ accountId: account, day: '2026-11-21', adjustmentId: 'evil' });
    await dynamodb.send(new PutItemCommand({
      TableName: info.table,
      Item: { PK: { S: key.PK }, SK: { S: key.SK }, metric: { S: '=HYPERLINK("http://x","y")' }, delta: { N: '-3' }, reason: { S: '@SUM(1+1)' }, createdAt: { S: '2026-11-21T00:00:00Z' } },
    }));
    const token = await mintToken(TEST_SECRET, { accounts: [account], ttlSeconds: 300 });

    const csv = await (await get(usagePath(account, `${RANGE}&format=csv`), token)).text();

    const cells = csv.trim().split(/\r?\n/).flatMap((line) => line.split(','));
    expect(cells.length).toBeGreaterThan(3);
    for (const cell of cells) {
      const text = cell.replace(/^"|"$/g, '');
      if (/^-?\d+(\.\d+)?$/.test(text)) continue;
      expect({ cell: text, dangerous: /^[=+\-@\t\r]/.test(text) }).toEqual({ cell: text, dangerous: false });
    }
  });
});

describe('logs', () => {
  it('never contain a token, the signing secret or an Authorization header', async () => {
    const good = await mintToken(TEST_SECRET, { accounts: [acme], ttlSeconds: 300 });
    const forged = await signHs256({ ...standardClaims(), accounts: [acme] }, 'forged-secret-forged-secret-forged-0123');
    await get(usagePath(acme), good);
    await get(usagePath(globex), good);
    await get(usagePath(acme), forged);
    await get(usagePath(acme, 'from=bad'), good);
    await get(usagePath(acme), `${good}x`);
    const brokenLines: string[] = [];
    const broken = await createLocalUsageApiDeps(info, TEST_SECRET, jsonLog((line) => brokenLines.push(line)), { TALLY_TABLE: 'missing-table-sec', TALLY_MAX_ATTEMPTS: '1' });
    await handleUsageApiRequest({ ...usageEvent(acme), headers: { host: 'x', authorization: `Bearer ${good}` } }, broken);

    const all = [...logLines, ...brokenLines].join('\n');

    expect(logLines.length).toBeGreaterThan(5);
    for (const secret of [good, forged, TEST_SECRET, good.split('.')[2]!, forged.split('.')[2]!]) expect(all).not.toContain(secret);
    expect(all).not.toMatch(/bearer\s+ey/i);
    expect(all).not.toMatch(/"authorization"/i);
  });
});

function usageEvent(accountId: string) {
  return {
    version: '2.0',
    routeKey: 'GET /v1/accounts/{accountId}/usage',
    rawPath: `/v1/accounts/${accountId}/usage`,
    rawQueryString: RANGE,
    headers: { host: 'x' } as Record<string, string>,
    queryStringParameters: { from: '2026-11-20', to: '2026-11-22' },
    pathParameters: { accountId },
    requestContext: {
      accountId: '1', apiId: 'a', domainName: 'x', domainPrefix: 'x', requestId: 'r', routeKey: 'GET /v1/accounts/{accountId}/usage', stage: '$default', time: '', timeEpoch: 0,
      http: { method: 'GET', path: `/v1/accounts/${accountId}/usage`, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'jest' },
    },
    isBase64Encoded: false,
  };
}
