import { connect } from 'node:net';
import fc from 'fast-check';
import { startApiServer, type ApiServer } from '../../src/local/serving/api-server';
import { REPO_ROOT } from '../support/cli';
import { join } from 'node:path';

/**
 * The local server (npm start) stands in for API Gateway: whatever request target a
 * client sends, it answers (a 4xx for what is no URL path), never a 500, and keeps
 * query parameters as given, whatever their names.
 */
describe('the local API server answers any request target, never with a 5xx', () => {
  let server: ApiServer;
  const seen: { path: string; query: Record<string, string> | undefined }[] = [];
  beforeAll(async () => {
    server = await startApiServer({
      handler: async (event) => {
        seen.push({ path: event.rawPath, query: event.queryStringParameters as Record<string, string> | undefined });
        return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{}' };
      },
      mounts: [{ urlPrefix: '/', dir: join(REPO_ROOT, 'src', 'dashboard') }],
    });
  });
  afterAll(() => server.stop());

  /** Sends one raw request line; the status code of the answer (0 when the connection closed with none). */
  function statusOf(target: string, method = 'GET'): Promise<number> {
    return new Promise((done, fail) => {
      const socket = connect(server.port, '127.0.0.1', () => socket.write(`${method} ${target} HTTP/1.1\r\nHost: local\r\nConnection: close\r\n\r\n`));
      let answer = '';
      socket.setTimeout(2_000, () => fail(new Error(`no answer to ${JSON.stringify(target)}`)));
      socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
      socket.on('end', () => done(Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0)));
      socket.on('error', () => done(0));
    });
  }

  it('malformed targets are a 400 (they were a 500 with a stack trace on stderr)', async () => {
    for (const target of ['http://[', 'http://[::1', '*', 'foo']) expect(await statusOf(target)).toBe(400);
    // A target that starts with "/" is a path, "//" included: no route there, not a host.
    expect(await statusOf('//[')).toBe(404);
  });

  it('any target: an answer below 500', async () => {
    const target = fc.oneof(
      fc.constantFrom('/v1/accounts/acme/usage?from=%E0', '//v1/accounts', '/%2e%2e/%2e%2e/etc/passwd', '/..%2f..%2fetc/passwd', '/index.html%00', `/${'a'.repeat(8_000)}`, 'http://evil/v1/x', '/v1/?__proto__=x&constructor=y'),
      fc.string({ maxLength: 40 }).map((text) => text.replace(/[\s]/g, '')).filter((text) => text !== ''),
      fc.string({ maxLength: 40 }).map((text) => `/v1/${encodeURI(text)}`),
      fc.webUrl(),
    );
    await fc.assert(
      fc.asyncProperty(target, async (t) => {
        const status = await statusOf(t);
        expect(status === 0 || (status >= 200 && status < 500)).toBe(true);
      }),
      { numRuns: 150 },
    );
  });

  it('keeps query parameters named __proto__ and constructor as given', async () => {
    seen.length = 0;
    expect(await statusOf('/v1/accounts?__proto__=x&constructor=y&constructor=z')).toBe(200);

    expect(seen).toHaveLength(1);
    expect(Object.entries(seen[0]!.query ?? {})).toEqual([
      ['__proto__', 'x'],
      ['constructor', 'y,z'],
    ]);
  });
});
