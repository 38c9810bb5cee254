import { join } from 'node:path';
import { PutItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { silentLog } from '../../src/app/log';
import { mintToken } from '../../src/adapters/http/jwt-tokens';
import { hourAttribute } from '../../src/domain/hours';
import { SHARD_ATTRIBUTES, usageKey } from '../../src/domain/counters/keys';
import type { ApiServer } from '../../src/local/serving/api-server';
import { createLocalUsageApiDeps } from '../../src/local/serving/local-usage-api';
import { testClients, testStackInfo, uniqueId } from '../support/stack';
import { OUTPUT, serveDashboard, type DashboardUnderTest } from '../support/dashboard-browser';
import { TIME_LIMITS } from '../support/time-limits';
import { TEST_SECRET } from '../support/tokens';

/**
 * The dashboard's time zones and hours in Chromium, against the real read API over
 * DynamoDB Local. The usage shards are written as the consumer writes them (day totals
 * and the hour attributes of src/domain/hours.ts), so the days have known hours, except
 * one written as before hours existed.
 */
const ZONE = 'America/New_York';
const info = testStackInfo();
const account = uniqueId('dst');

/** New York's clocks go back on 2026-11-01 (25 hours) and forward on 2026-03-08 (23 hours). */
const FALL_BACK = '2026-11-01';
const SPRING_FORWARD = '2026-03-08';
/** A UTC day counted before hours existed: its shard has day totals and no hour attributes. */
const NO_HOURS_DAY = '2026-11-03';

/** UTC hour `h` of every day with hours has 10 + h requests, and 1000 × that in bytes: no hour is empty. */
const requestsAt = (hour: number) => 10 + hour;

let server: ApiServer;
let browser: Browser;
let dashboard: DashboardUnderTest | undefined;

// Functions passed to page.evaluate run in Chromium; the project compiles without the DOM library.
interface PageCanvas {
  readonly width: number;
  readonly height: number;
  getContext(kind: '2d'): { getImageData(x: number, y: number, width: number, height: number): { data: ArrayLike<number> } };
}
interface PageNode {
  readonly hidden: boolean;
  readonly textContent: string | null;
  getAttribute(name: string): string | null;
}
declare const document: {
  readonly documentElement: { readonly scrollWidth: number; readonly clientWidth: number };
  getElementById(id: string): PageNode | null;
  querySelector(selector: string): PageNode | null;
};
declare const localStorage: { getItem(key: string): string | null };
declare const window: { scrollTo(x: number, y: number): void };

/** One usage shard as the consumer leaves it: day totals, and with `withHours` every UTC hour's sums. */
async function putShard(day: string, withHours: boolean): Promise<void> {
  const key = usageKey({ accountId: account, day, shard: 0 });
  const item: Record<string, AttributeValue> = {
    PK: { S: key.PK },
    SK: { S: key.SK },
    [SHARD_ATTRIBUTES.day]: { S: day },
    updatedAt: { S: `${day}T23:59:00.000Z` },
  };
  let requests = 0;
  for (let hour = 0; hour < 24; hour++) {
    requests += requestsAt(hour);
    if (withHours) {
      item[hourAttribute(hour, 'requests')] = { N: String(requestsAt(hour)) };
      item[hourAttribute(hour, 'bytes')] = { N: String(1000 * requestsAt(hour)) };
    }
  }
  item.requests = { N: String(requests) };
  item.bytes = { N: String(1000 * requests) };
  await testClients(info).dynamodb.send(new PutItemCommand({ TableName: info.table, Item: item }));
}

/** The API's answer, straight over HTTP. */
async function api(token: string, query: string): Promise<{ days: { day: string; metrics: Record<string, number> | null; hoursReason?: string }[]; hours?: { start: string }[] }> {
  const response = await fetch(`${server.url}/v1/accounts/${account}/usage?${query}`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  return (await response.json()) as never;
}

/**
 * The bars drawn in a chart's canvas: the most separate runs of bar-coloured pixels
 * along any one row (bars are drawn apart, with gaps between them).
 */
async function barsDrawn(page: Page, container: string): Promise<number> {
  return page.$eval(`${container} canvas`, (canvas) => {
    const c = canvas as unknown as PageCanvas;
    const pixels = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let most = 0;
    for (let y = 0; y < c.height; y++) {
      let runs = 0;
      let inBar = false;
      for (let x = 0; x < c.width; x++) {
        const i = (y * c.width + x) * 4;
        const bar = pixels[i + 3]! > 200 && pixels[i + 2]! > pixels[i]! + 60;
        if (bar && !inBar) runs++;
        inBar = bar;
      }
      most = Math.max(most, runs);
    }
    return most;
  });
}

async function signIn(page: Page, token: string): Promise<void> {
  await page.goto(server.url);
  await page.getByLabel('Access token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForSelector('#tz-select option', { state: 'attached' });
  // The first load (the last 30 days) is over.
  await page.waitForFunction(() => document.getElementById('status')!.hidden && document.querySelector('#days-table tbody tr') !== null);
  await loaded(page);
}

/** Shows `from`..`to` and waits for the table of those days. */
async function showRange(page: Page, from: string, to: string): Promise<void> {
  await page.getByLabel('Date range').selectOption('custom');
  await page.locator('#from-input').fill(from);
  await page.locator('#to-input').fill(to);
  // The click starts the load (aria-busy true) before it returns.
  await page.getByRole('button', { name: 'Show' }).click();
  await loaded(page);
  await page.waitForFunction(
    ([first, last]) => document.querySelector(`#days-table tr[data-period="${first}"]`) !== null && document.querySelector(`#days-table tr[data-period="${last}"]`) !== null,
    [from, to],
  );
}

/** Waits for the load in progress to be drawn (or to fail: its status shows). */
async function loaded(page: Page): Promise<void> {
  await page.waitForFunction(() => document.getElementById('results')!.getAttribute('aria-busy') === 'false' && document.getElementById('status')!.hidden);
}

/** Clicks a day of the table and waits for its hours card. */
async function openDay(page: Page, day: string): Promise<string> {
  await page.locator(`#days-table button.day-link[data-day="${day}"]`).click();
  await page.waitForFunction((d) => {
    const card = document.getElementById('hours-card');
    return card !== null && card.getAttribute('data-day') === d && card.getAttribute('data-ready') !== null;
  }, day);
  return (await page.locator('#hours-card').getAttribute('data-ready'))!;
}

beforeAll(async () => {
  for (const day of ['2026-10-31', FALL_BACK, '2026-11-02', '2026-03-07', SPRING_FORWARD, '2026-03-09']) await putShard(day, true);
  await putShard(NO_HOURS_DAY, false);
  const deps = await createLocalUsageApiDeps(info, TEST_SECRET, silentLog, {});
  dashboard = await serveDashboard(deps);
  ({ server, browser } = dashboard);
}, TIME_LIMITS.browserSetup);

afterAll(async () => {
  await dashboard?.close();
});

describe('dashboard time zones and hours in Chromium', () => {
  let context: BrowserContext;
  let token: string;

  beforeAll(async () => {
    token = await mintToken(TEST_SECRET, { accounts: [account], ttlSeconds: 900, subject: 'browser-hours' });
    // The browser's own zone is New York: the selector offers it beside UTC.
    context = await browser.newContext({ viewport: { width: 1400, height: 1000 }, colorScheme: 'light', timezoneId: ZONE });
  });
  afterAll(async () => {
    await context?.close();
  });

  it("offers this browser's zone and UTC; the choice sticks across visits, in localStorage", async () => {
    const page = await context.newPage();
    const errors: Error[] = [];
    page.on('pageerror', (error) => errors.push(error));
    await signIn(page, token);
    const options = await page.$$eval('#tz-select option', (nodes) => nodes.map((n) => [(n as unknown as { value: string }).value, n.textContent]));
    expect(options).toEqual([
      ['browser', `${ZONE} (this browser)`],
      ['utc', 'UTC'],
    ]);
    // No account zone and nothing chosen yet: UTC, as the counters.
    await expect(page.locator('#tz-select').inputValue()).resolves.toBe('utc');

    await page.getByLabel('Time zone').selectOption('browser');
    await loaded(page);
    await page.waitForFunction((zone) => document.getElementById('range-caption')!.textContent!.endsWith(`(${zone})`), ZONE);
    expect(await page.evaluate(() => localStorage.getItem('tally.timeZone'))).toBe('browser');

    // A later visit (a new tab: the token is asked again, the zone is not).
    const later = await context.newPage();
    await signIn(later, token);
    await expect(later.locator('#tz-select').inputValue()).resolves.toBe('browser');
    await later.waitForFunction((zone) => document.getElementById('range-caption')!.textContent!.endsWith(`(${zone})`), ZONE);
    await later.close();
    await page.close();
    expect(errors).toEqual([]);
  });

  it('draws 25 hour bars on the fall-back day and 23 on the spring-forward day, labelled in the zone, with the API figures', async () => {
    const page = await context.newPage();
    const errors: Error[] = [];
    page.on('pageerror', (error) => errors.push(error));
    await signIn(page, token);
    await page.getByLabel('Time zone').selectOption('browser');
    await loaded(page);
    await showRange(page, '2026-10-31', FALL_BACK);

    // The table's local days are the API's days in the zone.
    const zoned = await api(token, `from=2026-10-31&to=${FALL_BACK}&tz=${ZONE}`);
    const shown = await page.$$eval('#days-table tbody tr', (rows) =>
      rows.map((row) => {
        const r = row as unknown as { getAttribute(n: string): string; querySelector(s: string): { textContent: string } };
        return { day: r.getAttribute('data-period'), requests: Number(r.querySelector('td[data-metric="requests"]').textContent.replace(/[^\d]/g, '')) };
      }),
    );
    expect(shown).toEqual(zoned.days.map((d) => ({ day: d.day, requests: d.metrics!.requests })));

    expect(await openDay(page, FALL_BACK)).toBe('hours');
    const fallBack = await api(token, `from=${FALL_BACK}&to=${FALL_BACK}&tz=${ZONE}&granularity=hour`);
    expect(fallBack.hours).toHaveLength(25);
    await expect(page.locator('#hours-chart').getAttribute('data-hours')).resolves.toBe('25');
    const labels = (await page.locator('#hours-chart').getAttribute('data-hour-labels'))!.split('|');
    expect(labels.slice(0, 4)).toEqual(['00:00', '01:00 \u221204:00', '01:00 \u221205:00', '02:00']);
    expect(await barsDrawn(page, '#hours-chart')).toBe(25);
    await expect(page.locator('#hours-note').textContent()).resolves.toContain('25 hours');
    await expect(page.locator('#hours-title').textContent()).resolves.toContain(ZONE);
    // A local day touches two UTC days: each can be explained.
    expect(await page.locator('#hours-explain button').evaluateAll((nodes) => nodes.map((n) => (n as unknown as { getAttribute(a: string): string }).getAttribute('data-utc-day')))).toEqual([
      FALL_BACK,
      '2026-11-02',
    ]);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(OUTPUT, 'dashboard-hours-1400.png'), fullPage: true });

    await showRange(page, '2026-03-07', '2026-03-08');
    expect(await openDay(page, SPRING_FORWARD)).toBe('hours');
    await expect(page.locator('#hours-chart').getAttribute('data-hours')).resolves.toBe('23');
    expect(await barsDrawn(page, '#hours-chart')).toBe(23);
    expect((await page.locator('#hours-chart').getAttribute('data-hour-labels'))!.split('|')).not.toContain('02:00');
    await expect(page.locator('#hours-note').textContent()).resolves.toContain('23 hours');
    await page.close();
    expect(errors).toEqual([]);
  });

  it("shows the API's reason, never zeros, for a day counted before hours existed", async () => {
    const page = await context.newPage();
    await signIn(page, token);
    await page.getByLabel('Time zone').selectOption('browser');
    await loaded(page);
    await showRange(page, '2026-11-02', NO_HOURS_DAY);
    const zoned = await api(token, `from=${NO_HOURS_DAY}&to=${NO_HOURS_DAY}&tz=${ZONE}&granularity=hour`);
    const reason = zoned.days[0]!.hoursReason!;
    expect(reason).toContain(NO_HOURS_DAY);

    // In the zone the day's figures are not known: the table shows a dash with the reason, not a zero.
    const cell = page.locator(`#days-table tr[data-period="${NO_HOURS_DAY}"] td[data-metric="requests"]`);
    await expect(cell.textContent()).resolves.toBe('—');
    await expect(cell.getAttribute('title')).resolves.toContain(reason);

    expect(await openDay(page, NO_HOURS_DAY)).toBe('missing');
    await expect(page.locator('#hours-missing').textContent()).resolves.toBe(`No hours for this day: ${reason}.`);
    expect(await page.evaluate(() => document.getElementById('hours-chart')!.hidden)).toBe(true);

    // In UTC the day's own figures are known, and its hours still are not.
    await page.getByLabel('Time zone').selectOption('utc');
    await loaded(page);
    await page.waitForFunction(() => document.getElementById('range-caption')!.textContent!.endsWith('(UTC)'));
    const utcCell = page.locator(`#days-table tr[data-period="${NO_HOURS_DAY}"] td[data-metric="requests"]`);
    await expect(utcCell.textContent()).resolves.toBe(String(Array.from({ length: 24 }, (_, h) => requestsAt(h)).reduce((a, b) => a + b)));
    expect(await openDay(page, NO_HOURS_DAY)).toBe('missing');
    await expect(page.locator('#hours-missing').textContent()).resolves.toContain('counted (in part) before hours were kept');
    await page.close();
  });

  it('draws the range chart per hour for ranges of up to 7 days, per day beyond', async () => {
    const page = await context.newPage();
    await signIn(page, token);
    await page.getByLabel('Time zone').selectOption('browser');
    await loaded(page);
    await page.getByLabel('Chart bars').selectOption('hour');
    await showRange(page, '2026-03-07', '2026-03-09');
    const hours = await api(token, `from=2026-03-07&to=2026-03-09&tz=${ZONE}&granularity=hour`);
    expect(hours.hours).toHaveLength(71);
    await page.waitForFunction(() => document.getElementById('chart')!.getAttribute('data-hours') === '71');
    await expect(page.locator('#chart-title').textContent()).resolves.toBe(`Requests per hour (${ZONE})`);
    await expect(page.locator('#chart-note').textContent()).resolves.toContain('23 hours');
    await page.locator('.chart-card').screenshot({ path: join(OUTPUT, 'dashboard-hours-range.png') });

    await showRange(page, '2026-03-01', '2026-03-09');
    await expect(page.locator('#chart-title').textContent()).resolves.toBe('Requests per day');
    await expect(page.locator('#chart-note').textContent()).resolves.toContain('ranges of up to 7 days');
    await page.getByLabel('Chart bars').selectOption('day');
    await page.close();
  });

  it("says why a browser in a zone of sub-hour offsets cannot have its days: the API's message", async () => {
    const kolkata = await browser.newContext({ viewport: { width: 1400, height: 900 }, timezoneId: 'Asia/Kolkata' });
    const page = await kolkata.newPage();
    await signIn(page, token);
    await page.getByLabel('Time zone').selectOption('browser');
    await page.waitForFunction(() => document.getElementById('status')!.getAttribute('data-state') === 'error');
    await expect(page.locator('#status').textContent()).resolves.toContain('+05:30 from UTC');
    await expect(page.locator('#results').isHidden()).resolves.toBe(true);
    await kolkata.close();
  });

  it('fits a phone: the hours of a fall-back day at 390 px', async () => {
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1, isMobile: true, hasTouch: true, timezoneId: ZONE });
    const page = await phone.newPage();
    await signIn(page, token);
    await page.getByLabel('Time zone').selectOption('browser');
    await showRange(page, '2026-10-31', FALL_BACK);
    expect(await openDay(page, FALL_BACK)).toBe('hours');
    expect(await barsDrawn(page, '#hours-chart')).toBe(25);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await page.locator('#hours-card').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(OUTPUT, 'dashboard-hours-phone.png'), fullPage: false });
    await page.screenshot({ path: join(OUTPUT, 'dashboard-hours-phone-full.png'), fullPage: true });
    await phone.close();
  });
});
