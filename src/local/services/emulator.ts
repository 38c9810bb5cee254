import { existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { persistentS3Store, type S3StoreClass, type S3StoreLike } from './persistent-bucket-store';
import { freePort } from './ports';

export interface SqsS3Emulator {
  readonly endpoint: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** The part of fauxqs's Fastify app the stack uses. */
interface FauxqsApp {
  listen(options: { port: number; host: string }): Promise<string>;
  close(): Promise<void>;
}

type BuildApp = (options: { logger: boolean; stores?: { s3Store: S3StoreLike } }) => FauxqsApp;

/**
 * Starts the fauxqs SQS/SNS/S3 emulator in this process. With `objectsDir`, the log
 * bucket's objects are kept there across restarts (as DynamoDB Local keeps the counters),
 * so `tally reconcile` after a restart still finds the logs that were counted.
 *
 * fauxqs 1.x keeps everything in memory (2.x adds SQLite persistence but needs Node
 * 22.5), so the stack builds fauxqs's app itself: `buildApp` takes the stores it
 * should use and creates the others, and the S3 store it is given writes each
 * change through to disk ({@link persistentS3Store}). fauxqs is an ES module, loaded
 * with a native dynamic import so CommonJS callers can use it.
 */
export async function startSqsS3Emulator(options: { port?: number; objectsDir?: string } = {}): Promise<SqsS3Emulator> {
  const port = options.port ?? (await freePort());
  const dist = fauxqsDist();
  const load = new Function('specifier', 'return import(specifier)') as <T>(specifier: string) => Promise<T>;
  // The store's module is not in fauxqs's exports: it is loaded by file, the same file app.js imports.
  const [{ buildApp }, { S3Store }] = await Promise.all([
    load<{ buildApp: BuildApp }>(pathToFileURL(join(dist, 'app.js')).href),
    load<{ S3Store: S3StoreClass }>(pathToFileURL(join(dist, 's3', 's3Store.js')).href),
  ]);
  const s3Store = options.objectsDir === undefined ? new S3Store() : persistentS3Store(S3Store, options.objectsDir);
  const app = buildApp({ logger: false, stores: { s3Store } });
  try {
    await app.listen({ port, host: '0.0.0.0' });
  } catch (error) {
    await app.close();
    throw error;
  }
  return { endpoint: `http://127.0.0.1:${port}`, port, stop: () => app.close() };
}

/** fauxqs's `dist` folder, found the way `require` would find the package. */
function fauxqsDist(): string {
  for (const folder of require.resolve.paths('fauxqs') ?? []) {
    const dist = join(folder, 'fauxqs', 'dist');
    if (existsSync(join(dist, 'app.js'))) return realpathSync(dist);
  }
  throw new Error('cannot find the fauxqs package: run npm ci');
}
