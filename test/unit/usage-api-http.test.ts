import { jsonLog } from '../../src/app/log';
import { handleUsageApiRequest, unavailableResponse, type UsageApiDeps } from '../../src/app/reading/usage-api';
import { JoseTokenVerifier, mintToken } from '../../src/adapters/http/jwt-tokens';
import type { UsageReader } from '../../src/app/ports';
import type { UsageRecord } from '../../src/domain/reading/usage-records';
import { usageApiEvent } from '../support/api-events';
import { TEST_SECRET } from '../support/tokens';

/** A reader over records held in memory that remembers what it was asked. */
class MemoryUsageReader implements UsageReader {
  readonly calls: [string, string, string][] = [];
  constructor(private readonly byAccount: Record<string, UsageRecord[]> = {}) {}
  async read(accountId: string, from: string, to: string) {
    this.calls.push([accountId, from, to]);
    return { records: (this.byAccount[accountId] ?? []).filter((r) => r.day >= from && r.day <= to), requests: 1 };
  }
}

const RECORDS: Record<string, UsageRecord[]> = {
  acme: [
    { kind: 'usage', day: '2026-11-21', shard: 0, metrics: { requests: 10, bytes: 1000 }, updatedAt: '2026-11-21T12:00:00.000Z' },
    { kind: 'usage', day: '2026-11-21', shard: 2, metrics: { requests: 2, bytes: 2456 }, updatedAt: '2026-11-21T13:00:00.000Z' },
  ],
  globex: [{ kind: 'usage', day: '2026-11-21', shard: 0, metrics: { requests: 99, bytes: 9 } }],
};

function setup(options: { corsOrigins?: string[]; reader?: UsageReader } = {}) {
  const lines: string[] = [];
  const reader = options.reader ?? new MemoryUsageReader(RECORDS);
  const deps: UsageApiDeps = {
    reader,
    verifier: new JoseTokenVerifier({ kind: 'secret', secret: TEST_SECRET }, { audience: 'tally-usage-api', issuer: 'tally' }),
    log: jsonLog((line) => void lines.push(line), 'debug'),
    metricNames: ['requests', 'bytes'],
    corsOrigins: options.corsOrigins ?? [],
    clock: () => new Date('2026-11-22T09:00:00Z'),
  };
  return { deps, reader, lines };
}

const range = { from: '2026-11-20', to: '2026-11-21' };
const tokenFor = (accounts: string[], admin = false) => mintToken(TEST_SECRET, { accounts, admin, ttlSeconds: 300 });

describe('usage API request handling', () => {
  it('answers the report as JSON with caching headers', async () => {
    const { deps } = setup();

    const response = await handleUsageApiRequest(usageApiEvent({ query: range, token: await tokenFor(['acme']) }), deps);

    expect(response.statusCode).toBe(200);
    expect(response.headers).toMatchObject({
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'private, max-age=60',
      vary: 'Authorization, Accept, Origin',
    });
    expect(response.headers.etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(JSON.parse(response.body!)).toMatchObject({
      accountId: 'acme',
      granularity: 'day',
      days: [
        { day: '2026-11-20', metrics: { requests: 0, bytes: 0 } },
        { day: '2026-11-21', metrics: { requests: 12, bytes: 3456 } },
      ],
      totals: { requests: 12, bytes: 3456 },
      updatedAt: '2026-11-21T13:00:00.000Z',
    });
  });

  it('lets past-only ranges be cached for five minutes', async () => {
    const { deps } = setup();

    const response = await handleUsageApiRequest(usageApiEvent({ query: { from: '2026-11-01', to: '2026-11-20' }, token: await tokenFor(['acme']) }), deps);

    expect(response.headers['cache-control']).toBe('private, max-age=300');
  });

  it('answers 304 without a body when If-None-Match carries the current ETag', async () => {
    const { deps } = setup();
    const token = await tokenFor(['acme']);
    const first = await handleUsageApiRequest(usageApiEvent({ query: range, token }), deps);

    const second = await handleUsageApiRequest(usageApiEvent({ query: range, token, headers: { 'if-none-match': `"other", W/${first.headers.etag}` } }), deps);

    expect(second.statusCode).toBe(304);
    expect(second.body).toBeUndefined();
    expect(second.headers.etag).toBe(first.headers.etag);
  });

  it('answers CSV for format=csv and for Accept: text/csv, as a download', async () => {
    const { deps } = setup();
    const token = await tokenFor(['acme']);

    const byQuery = await handleUsageApiRequest(usageApiEvent({ query: { ...range, format: 'csv' }, token }), deps);
    const byAccept = await handleUsageApiRequest(usageApiEvent({ query: range, token, headers: { accept: 'text/csv' } }), deps);

    expect(byQuery.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(byQuery.headers['content-disposition']).toBe('attachment; filename="tally-acme-2026-11-20-2026-11-21-day.csv"');
    expect(byQuery.body).toBe(
      'account,day,requests,bytes,requests_adjustment,bytes_adjustment,requests_total,bytes_total,status,closed_at,requests_late,bytes_late\r\n' +
        'acme,2026-11-20,0,0,0,0,0,0,open,,0,0\r\nacme,2026-11-21,12,3456,0,0,12,3456,open,,0,0\r\n',
    );
    expect(byAccept.body).toBe(byQuery.body);
  });

  it('lets an admin read any account', async () => {
    const { deps } = setup();

    const response = await handleUsageApiRequest(usageApiEvent({ accountId: 'globex', query: range, token: await tokenFor([], true) }), deps);

    expect(JSON.parse(response.body!).totals).toEqual({ requests: 99, bytes: 9 });
  });

  it('answers another tenant exactly as an unknown account, without reading the table', async () => {
    const { deps, reader } = setup();
    const token = await tokenFor(['acme']);

    const otherTenant = await handleUsageApiRequest(usageApiEvent({ accountId: 'globex', query: range, token }), deps);
    const unknown = await handleUsageApiRequest(usageApiEvent({ accountId: 'no-such-account', query: range, token }), deps);

    expect(otherTenant.statusCode).toBe(404);
    expect(otherTenant.body).toBe('{"error":"not_found","message":"account not found"}');
    expect({ ...otherTenant, body: otherTenant.body }).toEqual(unknown);
    expect((reader as MemoryUsageReader).calls).toEqual([]);
  });

  it('answers 401 with a bearer challenge when the token is missing, before looking at the query', async () => {
    const { deps, reader } = setup();

    const response = await handleUsageApiRequest(usageApiEvent({ query: { from: 'bad' } }), deps);

    expect(response.statusCode).toBe(401);
    expect(response.headers['www-authenticate']).toBe('Bearer realm="tally"');
    expect(JSON.parse(response.body!)).toEqual({
      error: 'missing_token',
      message: 'send a bearer token: Authorization: Bearer <token> (mint one with `npx tally token --account <id>`)',
    });
    expect((reader as MemoryUsageReader).calls).toEqual([]);
  });

  it('answers 401 invalid_token for a header that is not a bearer token', async () => {
    const { deps } = setup();

    const response = await handleUsageApiRequest(usageApiEvent({ query: range, headers: { authorization: 'Basic dXNlcjpwYXNz' } }), deps);

    expect(response.statusCode).toBe(401);
    expect(response.headers['www-authenticate']).toBe(
      'Bearer realm="tally", error="invalid_token", error_description="the Authorization header must be Bearer <token>"',
    );
  });

  it('answers 400 with the validation message once the token is good', async () => {
    const { deps } = setup();

    const response = await handleUsageApiRequest(usageApiEvent({ query: { from: '2026-11-21', to: '2026-11-20' }, token: await tokenFor(['acme']) }), deps);

    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body!)).toEqual({ error: 'bad_request', message: '"to" (2026-11-20) is before "from" (2026-11-21); give the earlier day as "from"' });
    expect(response.headers['cache-control']).toBe('no-store');
  });

  it('answers 404 for other paths and 405 for other methods', async () => {
    const { deps } = setup();
    const token = await tokenFor(['acme']);

    const path = await handleUsageApiRequest(usageApiEvent({ path: '/v1/accounts/acme', token }), deps);
    const method = await handleUsageApiRequest(usageApiEvent({ method: 'DELETE', query: range, token }), deps);

    expect([path.statusCode, JSON.parse(path.body!).error]).toEqual([404, 'not_found']);
    expect([method.statusCode, method.headers.allow]).toEqual([405, 'GET, OPTIONS']);
  });

  it('serves the route behind a named stage too', async () => {
    const { deps } = setup();

    const response = await handleUsageApiRequest(usageApiEvent({ path: '/prod/v1/accounts/acme/usage', query: range, token: await tokenFor(['acme']) }), deps);

    expect(response.statusCode).toBe(200);
  });

  it('answers a 500 that carries no internals, and logs the details', async () => {
    const failing: UsageReader = {
      read: async () => {
        throw Object.assign(new Error('Requested resource not found: Table: tally-secret-table not found'), { name: 'ResourceNotFoundException' });
      },
    };
    const { deps, lines } = setup({ reader: failing });

    const response = await handleUsageApiRequest(usageApiEvent({ query: range, token: await tokenFor(['acme']) }), deps);

    expect(response.statusCode).toBe(500);
    const body = JSON.parse(response.body!);
    expect(Object.keys(body).sort()).toEqual(['error', 'message', 'requestId']);
    expect(body.error).toBe('internal_error');
    expect(response.body).not.toMatch(/tally-secret-table|ResourceNotFound|Table/);
    const logged = lines.map((line) => JSON.parse(line)).find((entry) => entry.level === 'ERROR');
    expect(logged).toMatchObject({ message: 'usage api request failed', accountId: 'acme', error: expect.stringContaining('tally-secret-table') });
  });

  it('logs one line per request with the outcome, and never the token', async () => {
    const { deps, lines } = setup();
    const token = await tokenFor(['acme']);

    await handleUsageApiRequest(usageApiEvent({ query: range, token }), deps);
    await handleUsageApiRequest(usageApiEvent({ query: range, token: `${token}x` }), deps);

    const entries = lines.map((line) => JSON.parse(line));
    expect(entries.map((e) => [e.message, e.status])).toEqual([
      ['usage api request', 200],
      ['usage api request', 401],
    ]);
    expect(entries[0]).toMatchObject({ accountId: 'acme', subject: 'tally-cli', queryRequests: 1, records: 2 });
    expect(entries[1]).toMatchObject({ refused: 'invalid_token', reason: 'the token signature does not verify' });
    expect(lines.join('\n')).not.toContain(token.split('.')[2]);
  });

  it('answers 503 with CORS and no internals when the API could not be wired', () => {
    const response = unavailableResponse(usageApiEvent({ headers: { origin: 'https://usage.example.com' } }), ['https://usage.example.com']);

    expect(response.statusCode).toBe(503);
    expect(JSON.parse(response.body!)).toMatchObject({ error: 'service_unavailable', message: 'the usage API is starting or misconfigured; try again shortly' });
    expect(response.headers['access-control-allow-origin']).toBe('https://usage.example.com');
  });

  describe('CORS', () => {
    it('allows a configured origin, on answers and errors alike', async () => {
      const { deps } = setup({ corsOrigins: ['https://usage.example.com'] });

      const ok = await handleUsageApiRequest(usageApiEvent({ query: range, token: await tokenFor(['acme']), headers: { origin: 'https://usage.example.com' } }), deps);
      const refused = await handleUsageApiRequest(usageApiEvent({ query: range, headers: { origin: 'https://usage.example.com' } }), deps);

      for (const response of [ok, refused]) {
        expect(response.headers['access-control-allow-origin']).toBe('https://usage.example.com');
        expect(response.headers['access-control-expose-headers']).toBe('ETag, Content-Disposition, WWW-Authenticate');
        expect(response.headers.vary).toContain('Origin');
      }
    });

    it('answers a preflight without a token, and gives other origins nothing', async () => {
      const { deps } = setup({ corsOrigins: ['https://usage.example.com'] });

      const preflight = await handleUsageApiRequest(usageApiEvent({ method: 'OPTIONS', headers: { origin: 'https://usage.example.com' } }), deps);
      const stranger = await handleUsageApiRequest(usageApiEvent({ method: 'OPTIONS', headers: { origin: 'https://evil.example' } }), deps);

      expect(preflight.statusCode).toBe(204);
      expect(preflight.headers).toMatchObject({
        'access-control-allow-origin': 'https://usage.example.com',
        'access-control-allow-methods': 'GET, OPTIONS',
        'access-control-allow-headers': 'Authorization, Accept, If-None-Match',
      });
      expect(stranger.statusCode).toBe(204);
      expect(stranger.headers['access-control-allow-origin']).toBeUndefined();
    });
  });
});
