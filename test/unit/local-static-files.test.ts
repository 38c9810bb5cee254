import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readdirSync, rmSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import fc from 'fast-check';
import { resolveStaticFile, startApiServer, type ApiServer } from '../../src/local/serving/api-server';

/**
 * The local server (npm start) serves the dashboard's files from disk. A file that
 * vanishes, or shrinks, while it is being served (a dashboard rebuilt while a browser
 * loads it) must neither end the process (an `error` event with no listener did) nor
 * answer a body shorter than its content-length on a connection that goes on (the
 * next answer would be read as the rest of the body).
 */
describe('the local server serves files that change under it', () => {
  let dir: string;
  let server: ApiServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tally-static-'));
    server = await startApiServer({
      handler: async () => ({ statusCode: 200, body: '{}' }),
      mounts: [{ urlPrefix: '/', dir }],
    });
  });
  afterAll(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Sends raw HTTP/1.1 requests on one keep-alive connection; resolves with all bytes received when the server closes it. */
  function exchange(socket: Socket, timeoutMs = 5_000): Promise<Buffer> {
    return new Promise((done, fail) => {
      const chunks: Buffer[] = [];
      const timer = setTimeout(() => fail(new Error('the server neither finished nor closed the connection')), timeoutMs);
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('close', () => {
        clearTimeout(timer);
        done(Buffer.concat(chunks));
      });
      socket.on('error', () => undefined);
    });
  }

  function get(path: string): Promise<string> {
    const socket = connect(server.port, '127.0.0.1', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: local\r\nConnection: close\r\n\r\n`));
    return exchange(socket).then((bytes) => bytes.toString('latin1'));
  }

  it('a file deleted between the request and its read is a 404, and the server goes on', async () => {
    // Arrange: every thread of libuv's pool waits in open() on a FIFO with no writer,
    // so the server's own open of the file waits behind them, and the file is deleted
    // while it waits. Before, statSync had said "a file" and the read stream's ENOENT
    // was an error event with no listener: the process died.
    writeFileSync(join(dir, 'app.js'), 'console.log(1);\n');
    writeFileSync(join(dir, 'still.js'), 'ok\n');
    const poolSize = Number(process.env.UV_THREADPOOL_SIZE ?? 4) || 4;
    const fifos = Array.from({ length: poolSize }, (_, i) => join(dir, `block-${i}.fifo`));
    for (const fifo of fifos) execFileSync('mkfifo', [fifo]);
    const blocked: Promise<FileHandle>[] = fifos.map((fifo) => open(fifo, 'r'));
    const answer = get('/app.js');
    await new Promise((done) => setTimeout(done, 300));

    // Act: the file goes; the pool is let go.
    unlinkSync(join(dir, 'app.js'));
    const writers = fifos.map((fifo) => openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
    for (const handle of await Promise.all(blocked)) await handle.close();
    for (const fd of writers) closeSync(fd);

    // Assert
    expect((await answer).split('\r\n')[0]).toBe('HTTP/1.1 404 Not Found');
    expect(await get('/still.js')).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*\r\n\r\nok\n$/);
  });

  it('a file that shrinks while it is sent cuts the connection: no further answer is read as its rest', async () => {
    // Arrange: a file larger than loopback's socket buffers, so the server is still reading it when it shrinks.
    const size = 32 * 1024 * 1024;
    const file = join(dir, 'big.bin');
    writeFileSync(file, Buffer.alloc(size, 0x61));
    const socket = connect(server.port, '127.0.0.1', () => socket.write('GET /big.bin HTTP/1.1\r\nHost: local\r\n\r\n'));
    const received = exchange(socket);
    socket.once('data', () => {
      socket.pause();
      // Act: the file is cut to nothing mid-answer; then a second request on the same connection.
      truncateSync(file, 0);
      setTimeout(() => {
        socket.write('GET /big.bin HTTP/1.1\r\nHost: local\r\nConnection: close\r\n\r\n');
        socket.resume();
      }, 200);
    });

    // Assert: the server closed the connection after fewer bytes than it declared, and never answered again on it.
    const bytes = await received;
    const text = bytes.toString('latin1');
    expect(text.startsWith('HTTP/1.1 200 OK')).toBe(true);
    expect(text).toContain(`content-length: ${size}`);
    expect(bytes.length).toBeLessThan(size);
    expect(text.indexOf('HTTP/1.1', 1)).toBe(-1);
    expect(await get('/still.js')).toMatch(/^HTTP\/1\.1 200 OK/);
  });

  it('serves a whole file with its exact length, and HEAD with no body', async () => {
    writeFileSync(join(dir, 'page.html'), '<p>hello</p>\n');
    const answer = await get('/page.html');
    expect(answer).toContain('content-length: 13');
    expect(answer.endsWith('\r\n\r\n<p>hello</p>\n')).toBe(true);
    const socket = connect(server.port, '127.0.0.1', () => socket.write('HEAD /page.html HTTP/1.1\r\nHost: local\r\nConnection: close\r\n\r\n'));
    const head = (await exchange(socket)).toString('latin1');
    expect(head).toContain('content-length: 13');
    expect(head.endsWith('\r\n\r\n')).toBe(true);
  });

  it('a client gone before its file was opened leaves no file open', async () => {
    // Arrange: the pool held as above, so the server opens the file after the client left.
    writeFileSync(join(dir, 'left.js'), 'x'.repeat(100_000));
    const openFiles = () => readdirSync('/proc/self/fd').length;
    const poolSize = Number(process.env.UV_THREADPOOL_SIZE ?? 4) || 4;
    const fifos = Array.from({ length: poolSize }, (_, i) => join(dir, `hold-${i}.fifo`));
    for (const fifo of fifos) execFileSync('mkfifo', [fifo]);
    const before = openFiles();
    const blocked: Promise<FileHandle>[] = fifos.map((fifo) => open(fifo, 'r'));
    const socket = connect(server.port, '127.0.0.1', () => socket.write('GET /left.js HTTP/1.1\r\nHost: local\r\n\r\n'));
    await new Promise((done) => setTimeout(done, 300));

    // Act: the client goes; the pool is let go.
    socket.destroy();
    await new Promise((done) => setTimeout(done, 100));
    const writers = fifos.map((fifo) => openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
    for (const handle of await Promise.all(blocked)) await handle.close();
    for (const fd of writers) closeSync(fd);
    await new Promise((done) => setTimeout(done, 300));

    // Assert: as many files open as before (the file's handle was closed), and the server goes on.
    expect(openFiles()).toBe(before);
    expect(await get('/still.js')).toMatch(/^HTTP\/1\.1 200 OK/);
  });
});

describe('a static path never names a file outside its mount', () => {
  it('any URL path, percent-encoded or not: a file under the mount, or none', () => {
    const root = join(tmpdir(), 'tally-mount');
    const mounts = [
      { urlPrefix: '/vendor/', dir: join(root, 'vendor') },
      { urlPrefix: '/', dir: join(root, 'site') },
    ];
    const segment = fc.oneof(fc.constantFrom('..', '.', '%2e%2e', '%2E%2E', '..%2f', '%2f', '%5c..', '\\..', '%00', 'vendor', 'a', '', '%c0%ae%c0%ae'), fc.string({ maxLength: 8 }));
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 8 }), fc.boolean(), (segments, slash) => {
        const path = `/${segments.join('/')}${slash ? '/' : ''}`;

        const file = resolveStaticFile(path, mounts);

        if (file !== undefined) {
          const inside = mounts.some((mount) => {
            const base = resolve(mount.dir);
            // The mount's own folder ("/.") is no file: the server answers it 404.
            return file === base || file.startsWith(base + sep);
          });
          expect([path, inside]).toEqual([path, true]);
          expect(file.includes('\0')).toBe(false);
        }
      }),
      { numRuns: 2_000 },
    );
  });
});
