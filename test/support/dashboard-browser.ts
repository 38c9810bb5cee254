import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { handleUsageApiRequest, type UsageApiDeps } from '../../src/app/reading/usage-api';
import { startApiServer, type ApiServer } from '../../src/local/serving/api-server';

/** Debian's Chromium, which `.ci/run` installs. */
export const CHROMIUM = '/usr/bin/chromium';
/** Where the browser tests leave their screenshots (git-ignored). */
export const OUTPUT = join(__dirname, '..', '..', 'test-output');

/** The dashboard as the build ships it, served beside the read API, and a headless Chromium to open it. */
export interface DashboardUnderTest {
  readonly server: ApiServer;
  readonly browser: Browser;
  /** Closes the browser and the server and removes the built dashboard. */
  close(): Promise<void>;
}

/**
 * Builds the dashboard (native modules, lib/ compiled with the domain rules) into a
 * temporary folder, serves it with the read API over `deps`, and starts Chromium.
 */
export async function serveDashboard(deps: UsageApiDeps): Promise<DashboardUnderTest> {
  const built = mkdtempSync(join(tmpdir(), 'tally-dashboard-'));
  execFileSync(process.execPath, [join(__dirname, '..', '..', 'scripts', 'build-dashboard.mjs'), built]);
  const server = await startApiServer({ handler: (event) => handleUsageApiRequest(event, deps), mounts: [{ urlPrefix: '/', dir: built }] });
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  mkdirSync(OUTPUT, { recursive: true });
  return {
    server,
    browser,
    async close() {
      await browser.close();
      await server.stop();
      rmSync(built, { recursive: true, force: true });
    },
  };
}
