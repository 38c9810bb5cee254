import { freePort } from './ports';

export interface SqsS3Emulator {
  readonly endpoint: string;
  readonly port: number;
  stop(): Promise<void>;
}

interface FauxqsServer {
  address: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * Starts the fauxqs SQS/SNS/S3 emulator in this process. fauxqs is an ES module;
 * it is loaded with a native dynamic import so CommonJS callers can use it.
 */
export async function startSqsS3Emulator(options: { port?: number } = {}): Promise<SqsS3Emulator> {
  const port = options.port ?? (await freePort());
  const load = new Function('specifier', 'return import(specifier)') as (s: string) => Promise<{
    startFauxqs(options: { port: number; logger: boolean; host?: string }): Promise<FauxqsServer>;
  }>;
  const { startFauxqs } = await load('fauxqs');
  const server = await startFauxqs({ port, logger: false });
  return { endpoint: `http://127.0.0.1:${server.port}`, port: server.port, stop: () => server.stop() };
}
