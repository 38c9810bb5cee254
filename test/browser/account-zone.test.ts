import { join } from 'node:path';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { Browser } from 'playwright-core';
import { silentLog } from '../../src/app/log';
import { mintToken } from '../../src/adapters/http/jwt-tokens';
import { addDays, dayOf } from '../../src/domain/days';
import { hourAttribute } from '../../src/domain/hours';
import { usageKey } from '../../src/domain/counters/keys';
import type { ApiServer } from '../../src/local/serving/api-server';
import { createLocalUsageApiDeps } from '../../src/local/serving/local-usage-api';
import { localEnvironment } from '../../src/local/stack';
import { captureIo, tallyCommand } from '../support/cli';
import { testClients, testStackInfo, uniqueId } from '../support/stack';
import { OUTPUT, serveDashboard, type DashboardUnderTest } from '../support/dashboard-browser';
import { TIME_LIMITS } from '../support/time-limits';
import { TEST_SECRET } from '../support/tokens';

/**
 * The dashboard's time-zone selector offers the account's zone once an operator set it
 * (`tally zone set`, which the usage report names as `accountTimeZone`), picks it when
 * nothing else was chosen, and asks the API for its days; an account without one is
 * offered this browser's zone and UTC only.
 */

const info = testStackInfo();
const today = dayOf(new Date());
const zoned = uniqueId('zoned');
const plain = uniqueId('plain');

let server: ApiServer;
let browser: Browser;
let dashboard: DashboardUnderTest | undefined;

declare const document: { getElementById(id: string): { readonly hidden: boolean } | null };

/** One day of usage for `account`, as a shard item, all of it in the 15:00 UTC hour (so a zone's days are known). */
async function measure(account: string): Promise<void> {
  const key = usageKey({ accountId: account, day: addDays(today, -1), shard: 0 });
  await testClients(info).dynamodb.send(
    new PutItemCommand({ TableName: info.table, Item: {
        PK: { S: key.PK },
        SK: { S: key.SK },
        requests: { N: '42' },
        bytes: { N: '4200' },
        [hourAttribute(15, 'requests')]: { N: '42' },
        [hourAttribute(15, 'bytes')]: { N: '4200' },
        updatedAt: { S: new Date().toISOString() },
      },
    }),
  );
}

beforeAll(async () => {
  await measure(zoned);
  await measure(plain);
  const io = captureIo();
  const code = await tallyCommand('zone')(['set', '--account', zoned, '--zone', 'America/New_York'], io, localEnvironment(info));
  expect([code, io.stderr]).toEqual([0, '']);
  const deps = await createLocalUsageApiDeps(info, TEST_SECRET, silentLog);
  dashboard = await serveDashboard(deps);
  ({ server, browser } = dashboard);
}, TIME_LIMITS.browserSetup);

afterAll(async () => {
  await dashboard?.close();
});

/** Signs in as a tenant of `account` in a browser in Berlin; the selector's options and the zones the page asked the API for. */
async function zoneChoices(account: string, screenshot: string) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, timezoneId: 'Europe/Berlin', colorScheme: 'light' });
  const page = await context.newPage();
  const errors: Error[] = [];
  page.on('pageerror', (error) => errors.push(error));
  const asked: string[] = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.pathname.endsWith('/usage')) asked.push(url.searchParams.get('tz') ?? '');
  });
  const token = await mintToken(TEST_SECRET, { accounts: [account], ttlSeconds: 600, subject: 'browser-test' });
  await page.goto(server.url);
  await page.getByLabel('Access token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForSelector('#days-table tbody tr');
  await page.waitForFunction(() => document.getElementById('status')!.hidden);
  const total = await page.locator('#stat-total .stat-value').textContent();
  const options = await page.$$eval('#tz-select option', (nodes) => nodes.map((node) => ({ value: (node as unknown as { value: string }).value, label: node.textContent })));
  const selected = await page.locator('#tz-select').inputValue();
  await page.screenshot({ path: join(OUTPUT, screenshot), fullPage: false });
  await context.close();
  expect(errors).toEqual([]);
  return { options, selected, asked, total };
}

describe('the time-zone selector and the account zone, in Chromium', () => {
  it("offers the account's zone when it is set, picks it, and asks the API for its days", async () => {
    const { options, selected, asked, total } = await zoneChoices(zoned, 'dashboard-account-zone.png');

    expect(options).toEqual([
      { value: 'account', label: expect.stringContaining('America/New_York') },
      { value: 'browser', label: expect.stringContaining('Europe/Berlin') },
      { value: 'utc', label: 'UTC' },
    ]);
    expect(selected).toBe('account');
    expect(asked[asked.length - 1]).toBe('America/New_York');
    expect(total).toBe('42');
  }, TIME_LIMITS.browserSetup);

  it("offers only this browser's zone and UTC to an account without one", async () => {
    const { options, selected } = await zoneChoices(plain, 'dashboard-no-account-zone.png');

    expect(options).toEqual([
      { value: 'browser', label: expect.stringContaining('Europe/Berlin') },
      { value: 'utc', label: 'UTC' },
    ]);
    expect(selected).not.toBe('account');
  }, TIME_LIMITS.browserSetup);
});
