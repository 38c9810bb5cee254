import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Log } from '../../app/log';
import { handleUsageApiRequest, type UsageApiDeps } from '../../app/reading/usage-api';
import { mintToken } from '../../adapters/http/jwt-tokens';
import { readUsageApiConfig } from '../../adapters/wiring/usage-api-config';
import { createUsageApiClients, createUsageApiDeps } from '../../adapters/wiring/usage-api-deps';
import { startApiServer, type ApiServer, type StaticMount } from './api-server';
import { DEMO_ACCOUNTS } from '../demo/demo';
import { ensureLocalJwtSecret, LOCAL_JWT_SECRET_FILE } from '../lifecycle/jwt-secret';
import { LOCAL_CREDENTIALS } from '../local-credentials';
import { localEnvironment, type LocalStackInfo } from '../stack';

/** The port `npm start` tries first for the API and dashboard; a free one if it is taken. */
export const DEFAULT_API_PORT = 8787;

/**
 * Where the dashboard's files are: `dist/dashboard` next to the bundle (what
 * `npm run build` produces and what is deployed), else the sources with uPlot from
 * node_modules (tests running from TypeScript).
 */
export function dashboardMounts(): StaticMount[] {
  const built = join(__dirname, 'dashboard');
  if (existsSync(join(built, 'index.html'))) return [{ urlPrefix: '/', dir: built }];
  return [
    { urlPrefix: '/', dir: join(__dirname, '..', '..', 'dashboard') },
    { urlPrefix: '/vendor/', dir: dirname(require.resolve('uplot/dist/uPlot.iife.min.js')) },
  ];
}

/**
 * The read API wired to a local stack exactly as the Lambda is wired (same config
 * reader, same deps), with the local signing secret instead of SSM.
 */
export async function createLocalUsageApiDeps(
  info: LocalStackInfo,
  secret: string,
  log: Log,
  overrides: Record<string, string> = {},
): Promise<UsageApiDeps> {
  const config = readUsageApiConfig({
    ...process.env,
    ...localEnvironment(info),
    TALLY_JWT_SECRET: secret,
    TALLY_JWT_SECRET_PARAMETER: '',
    TALLY_JWT_PUBLIC_KEY: '',
    ...(info.dlqUrl === undefined ? {} : { TALLY_DLQ_URL: info.dlqUrl }),
    ...overrides,
  });
  return createUsageApiDeps(config, createUsageApiClients(config, LOCAL_CREDENTIALS), log);
}

export interface LocalUsageApi {
  readonly server: ApiServer;
  /** A token for the demo accounts, valid for 12 hours. */
  readonly demoToken: string;
  /** Set when the port asked for was taken: which one, why, and which port is used instead. */
  readonly portNote?: string;
  /** What `npm start` prints: the dashboard URL and how to sign in. */
  describe(): string;
  stop(): Promise<void>;
}

/** What `npm start` says when `wanted` was taken and the server listens at `url` instead. */
export function portInUseNote(wanted: number, url: string): string {
  return `tally: port ${wanted} is in use (another program, or another npm start in another folder), so the dashboard and API are on port ${new URL(url).port}`;
}

/**
 * `npm start`'s API and dashboard on one port: creates (or reuses) `.tally/jwt-secret`,
 * serves `/v1/...` through the same function the Lambda handler calls and the
 * dashboard at `/`, and mints a demo token for the demo accounts.
 */
export async function startLocalUsageApi(options: {
  root: string;
  info: LocalStackInfo;
  log: Log;
  metrics?: string;
  port?: number;
}): Promise<LocalUsageApi> {
  const secret = ensureLocalJwtSecret(join(options.root, LOCAL_JWT_SECRET_FILE));
  const deps = await createLocalUsageApiDeps(options.info, secret, options.log, options.metrics === undefined ? {} : { TALLY_METRICS: options.metrics });
  const serverOptions = { handler: (event: Parameters<typeof handleUsageApiRequest>[0]) => handleUsageApiRequest(event, deps), mounts: dashboardMounts() };
  const wanted = options.port ?? DEFAULT_API_PORT;
  let server: ApiServer;
  let portNote: string | undefined;
  try {
    server = await startApiServer({ ...serverOptions, port: wanted });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    server = await startApiServer({ ...serverOptions, port: 0 });
    portNote = portInUseNote(wanted, server.url);
  }
  const accounts = DEMO_ACCOUNTS.map((account) => account.id);
  const demoToken = await mintToken(secret, { accounts, ttlSeconds: 12 * 3600, subject: 'npm-start-demo' });
  return {
    server,
    demoToken,
    ...(portNote === undefined ? {} : { portNote }),
    describe: () =>
      [
        ...(portNote === undefined ? [] : [portNote]),
        `tally: dashboard ${server.url}/  (usage API ${server.url}/v1/accounts/{accountId}/usage)`,
        `  demo token (accounts ${accounts.join(', ')}; 12 h):`,
        `  ${demoToken}`,
        '  more tokens: npx tally token --account acme [--ttl 1h]   or   npx tally token --admin',
      ].join('\n'),
    stop: () => server.stop(),
  };
}
