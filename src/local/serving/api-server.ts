import { randomUUID } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, resolve, sep } from 'node:path';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';

/** What API Gateway would invoke: the same function the Lambda handler calls. */
export type ApiEventHandler = (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyResultV2>;

/** A directory served under a URL prefix, e.g. `{ urlPrefix: '/vendor/', dir: 'node_modules/uplot/dist' }`. */
export interface StaticMount {
  readonly urlPrefix: string;
  readonly dir: string;
}

export interface ApiServerOptions {
  readonly handler: ApiEventHandler;
  /** Static files (the dashboard); the longest matching prefix wins. `/` serves `index.html`. */
  readonly mounts?: readonly StaticMount[];
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port?: number;
}

export interface ApiServer {
  /** Base URL, e.g. `http://127.0.0.1:8787`. */
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

const API_PREFIX = '/v1/';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
};

/** Headers for the dashboard's files: a strict CSP (no inline script), no framing, no referrer. */
const STATIC_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-cache',
};

/**
 * The local stand-in for API Gateway plus a static host: one HTTP port serving the
 * read API under `/v1/` (each request translated into the payload v2 event API
 * Gateway sends) and the dashboard's static files everywhere else.
 */
export async function startApiServer(options: ApiServerOptions): Promise<ApiServer> {
  const host = options.host ?? '127.0.0.1';
  const mounts = [...(options.mounts ?? [])].sort((a, b) => b.urlPrefix.length - a.urlPrefix.length);
  const server = createServer((request, response) => {
    void serve(request, response).catch((error: unknown) => {
      if (!response.headersSent) {
        response.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
        response.end(JSON.stringify({ error: 'internal_error', message: 'the local server failed' }));
      } else response.destroy();
      process.stderr.write(`tally api: ${(error as Error).stack ?? String(error)}\n`);
    });
  });

  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = requestUrl(request.url ?? '/');
    if (url === undefined) {
      response.writeHead(400, { 'content-type': 'application/json; charset=utf-8', 'x-content-type-options': 'nosniff' });
      response.end(JSON.stringify({ error: 'bad_request', message: 'the request target is not a URL path; try GET /v1/accounts/{accountId}/usage' }));
      return;
    }
    if (url.pathname.startsWith(API_PREFIX)) {
      const result = await options.handler(toApiGatewayEvent(request, url, port));
      writeResult(response, result);
      return;
    }
    await serveStatic(request, response, url.pathname, mounts);
  }

  const port = await listen(server, host, options.port ?? 0);
  const url = `http://${host}:${port}`;
  return {
    url,
    port,
    stop: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}

/**
 * The URL of a request target: a path (`/v1/...`, kept as a path even when it starts with
 * `//`) or an absolute URL; undefined when it is neither (`GET http://[ HTTP/1.1` reaches
 * the server: Node's parser leaves the target to us), which is a 400, not a 500.
 */
export function requestUrl(target: string): URL | undefined {
  const text = target.startsWith('/') ? `http://local${target}` : target;
  return URL.canParse(text) ? new URL(text) : undefined;
}

function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((done, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => {
      server.off('error', fail);
      done((server.address() as AddressInfo).port);
    });
  });
}

/**
 * The payload v2 event API Gateway's HTTP API builds for a request: lower-case header
 * names, repeated headers and query keys joined with commas, the `$default` route.
 */
export function toApiGatewayEvent(request: IncomingMessage, url: URL, port: number): APIGatewayProxyEventV2 {
  // No prototype: a header or parameter named __proto__ or constructor is kept as given, not met as Object's.
  const headers: Record<string, string> = Object.create(null);
  for (let i = 0; i < request.rawHeaders.length; i += 2) {
    const name = request.rawHeaders[i]!.toLowerCase();
    const value = request.rawHeaders[i + 1]!;
    headers[name] = headers[name] === undefined ? value : `${headers[name]},${value}`;
  }
  const query: Record<string, string> = Object.create(null);
  for (const [name, value] of url.searchParams) query[name] = query[name] === undefined ? value : `${query[name]},${value}`;
  const now = new Date();
  const method = request.method ?? 'GET';
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    ...(Object.keys(query).length === 0 ? {} : { queryStringParameters: query }),
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: headers.host ?? `127.0.0.1:${port}`,
      domainPrefix: '127',
      http: {
        method,
        path: url.pathname,
        protocol: `HTTP/${request.httpVersion}`,
        sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    isBase64Encoded: false,
  };
}

function writeResult(response: ServerResponse, result: APIGatewayProxyResultV2): void {
  if (typeof result === 'string') {
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    response.end(result);
    return;
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
  response.writeHead(result.statusCode ?? 200, headers);
  if (result.body === undefined || result.statusCode === 304 || result.statusCode === 204) {
    response.end();
    return;
  }
  response.end(result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body);
}

/**
 * Serves one static file. The file is opened first and its size taken from the open
 * handle, so a file deleted or replaced between a look and the read (a dashboard rebuilt
 * while a browser loads it) is a 404, never an error event with no listener (which
 * ended the whole local stack). Once the headers are out, a read that fails or a file
 * that shrank cuts the connection (the client sees an incomplete answer, never a short
 * body under a longer content-length); a file that grew is sent as it was measured.
 * O_NONBLOCK: a FIFO put in a file's place must not hold a thread of the pool forever.
 */
async function serveStatic(request: IncomingMessage, response: ServerResponse, pathname: string, mounts: readonly StaticMount[]): Promise<void> {
  const notFound = () => {
    response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', ...STATIC_HEADERS });
    response.end('not found\n');
  };
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' });
    response.end('method not allowed\n');
    return;
  }
  const file = resolveStaticFile(pathname, mounts);
  if (file === undefined) return notFound();
  const opened = await openStaticFile(file);
  if (opened === undefined) return notFound();
  const { handle, size } = opened;
  // A client gone while the file was opened: its 'close' has been and will not come again.
  if (response.destroyed || request.socket.destroyed) {
    await handle.close().catch(() => undefined);
    return;
  }
  response.writeHead(200, {
    'content-type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream',
    'content-length': String(size),
    ...STATIC_HEADERS,
  });
  if (request.method === 'HEAD' || size === 0) {
    await handle.close().catch(() => undefined);
    response.end();
    return;
  }
  const stream = handle.createReadStream({ start: 0, end: size - 1, autoClose: true });
  let sent = 0;
  stream.on('data', (chunk: string | Buffer) => (sent += chunk.length));
  await new Promise<void>((done) => {
    // Ended by hand, not by pipe: a short body must cut the connection before the answer
    // is finished, or the socket goes on to the next request of a keep-alive connection.
    stream.on('end', () => {
      if (sent < size) {
        process.stderr.write(`tally api: ${file}: it shrank to ${sent} of ${size} bytes while it was sent; connection cut\n`);
        response.destroy();
      } else response.end();
    });
    stream.on('error', (error) => {
      process.stderr.write(`tally api: ${file}: ${error.message}; connection cut\n`);
      response.destroy();
    });
    response.on('close', () => {
      stream.destroy();
      done();
    });
    stream.pipe(response, { end: false });
  });
}

/** Opens a static file and measures it through the handle; undefined when it is absent, unreadable or not a regular file. */
async function openStaticFile(file: string): Promise<{ handle: FileHandle; size: number } | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stat = await handle.stat();
    if (stat.isFile()) return { handle, size: stat.size };
  } catch {
    // an unreadable handle is as good as no file
  }
  await handle.close().catch(() => undefined);
  return undefined;
}

/** Maps a URL path to a file inside a mount, refusing anything that would climb out of it. */
export function resolveStaticFile(pathname: string, mounts: readonly StaticMount[]): string | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return undefined;
  }
  if (decoded.includes('\0') || decoded.split('/').includes('..')) return undefined;
  const path = decoded.endsWith('/') ? `${decoded}index.html` : decoded;
  const mount = mounts.find((candidate) => path.startsWith(candidate.urlPrefix));
  if (mount === undefined) return undefined;
  const root = resolve(mount.dir);
  const file = resolve(join(root, path.slice(mount.urlPrefix.length)));
  return file === root || file.startsWith(root + sep) ? file : undefined;
}
