import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { Browser, Page } from 'playwright-core';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { silentLog } from '../../src/app/log';
import { mintToken } from '../../src/adapters/http/jwt-tokens';
import { addDays, dayOf } from '../../src/domain/days';
import { adjustmentItemKey } from '../../src/domain/counters/keys';
import type { ApiServer } from '../../src/local/serving/api-server';
import { createLocalUsageApiDeps } from '../../src/local/serving/local-usage-api';
import { localEnvironment } from '../../src/local/stack';
import { generateLog } from '../../src/local/demo/log-generator';
import { DynamoCloseStore } from '../../src/adapters/dynamodb/dynamodb-close-store';
import { DynamoQuotaStore } from '../../src/adapters/dynamodb/dynamodb-quotas';
import { readThresholdConfig } from '../../src/adapters/wiring/handoff-config';
import { createThresholdDeps } from '../../src/adapters/wiring/handoff-deps';
import { evaluateThresholds, THRESHOLD_SEND_LEASE_SECONDS } from '../../src/app/billing/thresholds';
import { readMonthToDate } from '../../src/app/reading/quota-status';
import { DynamoUsageReader } from '../../src/adapters/dynamodb/dynamodb-usage-reader';
import { monthOf } from '../../src/domain/billing/quota';
import { putLogObject, readCounters, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';
import { OUTPUT, serveDashboard, type DashboardUnderTest } from '../support/dashboard-browser';
import { TIME_LIMITS } from '../support/time-limits';
import { TEST_SECRET } from '../support/tokens';

const METRICS = '[{"name":"authorization_requests","path":"/api/authorization/*"}]';
const info = testStackInfo();

const today = dayOf(new Date());
const acme = uniqueId('acme');
const globex = uniqueId('globex');
const quiet = uniqueId('quiet');
const initech = uniqueId('initech');
/** An account whose one log object has a key as long as a v2 delivery's under Hive partitions. */
const longKeyed = uniqueId('longkey');
const LONG_KEY_DAY = addDays(today, -2);
const LONG_KEY = `cloudfront/AWSLogs/123456789012/CloudFront/DistributionId=E2DASHLONG/year=${LONG_KEY_DAY.slice(0, 4)}/month=${LONG_KEY_DAY.slice(5, 7)}/day=${LONG_KEY_DAY.slice(8)}/hour=00/E2DASHLONG.${LONG_KEY_DAY}-00.${uniqueId('k')}.gz`;
/** A correction on initech's bytes, larger than a quiet day's traffic: it must get a negative axis. */
const BYTES_CORRECTION = -150_000;

let server: ApiServer;
let browser: Browser;
let dashboard: DashboardUnderTest | undefined;

// Functions passed to page.evaluate run in Chromium. The project compiles without the
// DOM library, so the few browser shapes they touch are declared here, for this file only.
interface PageNode {
  readonly textContent: string | null;
  readonly hidden: boolean;
  readonly className: string;
  readonly scrollHeight: number;
  readonly clientHeight: number;
  readonly scrollWidth: number;
  readonly clientWidth: number;
  scrollLeft: number;
  getAttribute(name: string): string | null;
  querySelector(selector: string): PageNode | null;
  closest(selector: string): PageNode | null;
  querySelectorAll(selector: string): PageNodeList;
  getBoundingClientRect(): { top: number; bottom: number; left: number; right: number };
}
interface PageNodeList {
  readonly length: number;
  forEach(each: (node: PageNode) => void): void;
}
interface PageCanvas {
  readonly width: number;
  readonly height: number;
  getContext(kind: '2d'): { getImageData(x: number, y: number, width: number, height: number): { data: ArrayLike<number> } };
}
declare const document: {
  readonly documentElement: { readonly scrollWidth: number; readonly clientWidth: number };
  getElementById(id: string): PageNode | null;
  querySelectorAll(selector: string): PageNodeList;
};
declare const sessionStorage: { getItem(key: string): string | null; clear(): void };
declare const localStorage: { readonly length: number };

/** The API's `quota` block, as far as the page shows it. */
interface QuotaBlock {
  metrics: Record<string, { used: number; allowance: number; percent: number; projected: number; projectedPercent: number; crossed: { level: number; notifiedAt?: string }[] }>;
}

/** One row of the quota card as read from the page. */
interface QuotaRowOnPage {
  metric: string;
  used: number;
  allowance: number;
  projected: number;
  usedText: string;
  usedTitle: string | null;
  percent: string;
  projectedPercent: string;
  marks: number[];
  reached: number[];
  badges: number;
  badgeTexts: string[];
  badgeAlerts: string[];
  badgeTitles: string[];
  valueNow: number;
}

/** The API's operator ranking. */
interface Ranking {
  accounts: { accountId: string; rank: number; totals: Record<string, number>; share: Record<string, number> }[];
  totals: Record<string, number>;
  unattributed: Record<string, number> | null;
}

/** The parts of the API's JSON report the test compares with the page. */
interface Report {
  days: { day: string; metrics: Record<string, number> }[];
  months?: { month: string; metrics: Record<string, number> }[];
  totals: Record<string, number>;
  updatedAt: string | null;
}

/** What the API answers for `account` over the last `days` days, straight over HTTP. */
async function apiResponse(token: string, account: string, days: number, extra = ''): Promise<Response> {
  const url = `${server.url}/v1/accounts/${account}/usage?from=${addDays(today, -(days - 1))}&to=${today}${extra}`;
  const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  return response;
}
const apiReport = async (token: string, account: string, days: number, extra = ''): Promise<Report> =>
  (await apiResponse(token, account, days, extra)).json() as Promise<Report>;
const apiCsv = async (token: string, account: string, days: number): Promise<string> => (await apiResponse(token, account, days, '&format=csv')).text();
const dayRows = (report: Report) => report.days.map((row) => ({ day: row.day, metrics: row.metrics }));

async function signIn(page: Page, token: string) {
  await page.goto(server.url);
  await page.getByLabel('Access token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/**
 * The days table as the user sees it: one object per row, numbers read from the cells'
 * text, or from their hover title where the text is rounded (bytes in units).
 */
async function tableRows(page: Page) {
  return page.$$eval('#days-table tbody tr', (rows: PageNode[]) =>
    rows.map((row) => {
      const cells: Record<string, number> = {};
      row.querySelectorAll('td').forEach((td) => {
        cells[td.getAttribute('data-metric')!] = Number((td.getAttribute('title') ?? td.textContent!).replace(/[^\d-]/g, ''));
      });
      return { day: row.getAttribute('data-period'), metrics: cells };
    }),
  );
}

beforeAll(async () => {
  const refs = [];
  for (let back = 8; back >= 0; back--) {
    const day = addDays(today, -back);
    const log = generateLog({
      seed: 900 + back,
      day,
      hour: 0,
      distribution: 'E2DASH',
      accounts: [
        { id: acme, weight: 4 },
        { id: globex, weight: 1 },
        { id: initech, weight: 2 },
      ],
      lines: 60 + back * 7,
    });
    refs.push(await putLogObject(`cloudfront/${uniqueId('E2DASH')}.${day}-00.x.gz`, log.text));
  }
  const longLog = generateLog({ seed: 77, day: LONG_KEY_DAY, hour: 0, distribution: 'E2DASHLONG', accounts: [{ id: longKeyed, weight: 1 }], lines: 40 });
  refs.push(await putLogObject(LONG_KEY, longLog.text));
  const result = await ingestBatch({ Records: refs.map((ref) => s3NotificationMessage(ref)) }, testIngestDeps({ TALLY_METRICS: METRICS }));
  expect(result.batchItemFailures).toEqual([]);
  await putAdjustment(acme, addDays(today, -3), 'INC-7', 'requests', -12, 'synthetic monitoring traffic');
  await putAdjustment(initech, addDays(today, -4), 'INC-9', 'bytes', BYTES_CORRECTION, 'origin error pages refunded');
  await closeDay(CLOSED_DAY, {});
  await closeDay(LATE_DAY, { [acme]: LATE_REQUESTS });

  await setQuota();
  const deps = await createLocalUsageApiDeps(info, TEST_SECRET, silentLog, { TALLY_METRICS: METRICS, TALLY_QUOTAS: BYTES_DEFAULT_QUOTA });
  dashboard = await serveDashboard(deps);
  ({ server, browser } = dashboard);
}, TIME_LIMITS.browserSetup);

afterAll(async () => {
  await dashboard?.close();
});

/** Two closed days (a week ago): on LATE_DAY, acme's closed snapshot was taken before its last requests arrived. */
const CLOSED_DAY = addDays(today, -7);
const LATE_DAY = addDays(today, -6);
const LATE_REQUESTS = 9;

/** Closes `day` as the closer does (revision 1 = each account's counters), less `lateRequests` for some accounts. */
async function closeDay(day: string, lateRequests: Record<string, number>) {
  const { dynamodb } = testClients(info);
  const store = new DynamoCloseStore({ client: dynamodb, tableName: info.table });
  const closedAt = `${addDays(day, 3)}T00:05:00.000Z`;
  await store.beginRevision(day, 1, closedAt);
  for (const account of [acme, globex, initech]) {
    const counters = (await readCounters(dynamodb, info.table, account, day))[day] ?? {};
    const metrics = { ...counters, requests: (counters.requests ?? 0) - (lateRequests[account] ?? 0) };
    await store.recordRevisionRow({ day, revision: 1, account, metrics, createdAt: closedAt });
  }
  await store.completeRevision(day, 1, closedAt, 3);
}

/** An operator's correction, written as `tally adjust` writes it. */
async function putAdjustment(accountId: string, day: string, adjustmentId: string, metric: string, delta: number, reason: string) {
  const key = adjustmentItemKey({ accountId, day, adjustmentId });
  await testClients(info).dynamodb.send(
    new PutItemCommand({
      TableName: info.table,
      Item: {
        PK: { S: key.PK },
        SK: { S: key.SK },
        metric: { S: metric },
        delta: { N: String(delta) },
        reason: { S: reason },
        createdAt: { S: new Date().toISOString() },
      },
    }),
  );
}

/** Every account gets a default allowance of bytes; acme a requests allowance it has used about 90% of. */
const BYTES_DEFAULT_QUOTA = '{"bytes": 50000000}';

/** Sets acme's requests allowance so that month-to-date is about 90% of it, and evaluates: 80% fires, 100% does not. */
async function setQuota() {
  const { dynamodb, sqs } = testClients(info);
  const used = (await readMonthToDate(new DynamoUsageReader({ client: dynamodb, tableName: info.table, consistentRead: true }), acme, monthOf(new Date()), today)).requests ?? 0;
  await new DynamoQuotaStore({ client: dynamodb, tableName: info.table }).set({ account: acme, metric: 'requests', period: { from: monthOf(new Date()), monthly: Math.max(1, Math.ceil(used / 0.9)) }, updatedAt: new Date().toISOString() });
  const deps = createThresholdDeps(readThresholdConfig({ ...localEnvironment(info), TALLY_METRICS: METRICS }), { dynamodb, sqs }, silentLog);
  const report = await evaluateThresholds(deps, { accounts: [acme] });
  expect(report.crossed.map((crossing) => crossing.level)).toEqual([80]);
}

/** Fails the test on any script error in the page (a module that does not load, say). */
function watchErrors(page: Page): Error[] {
  const errors: Error[] = [];
  page.on('pageerror', (error) => errors.push(error));
  return errors;
}

describe('dashboard in Chromium', () => {
  it('signs in with a minted token, draws the chart, shows the API numbers, downloads CSV', async () => {
    const token = await mintToken(TEST_SECRET, { accounts: [acme, globex], ttlSeconds: 600, subject: 'browser-test' });
    const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
    const page = await context.newPage();
    const errors = watchErrors(page);

    await signIn(page, token);
    await page.waitForSelector('#days-table tbody tr');
    expect(await page.locator('#days-table tbody tr').count()).toBe(30);
    await page.screenshot({ path: join(OUTPUT, 'dashboard-30-days.png'), fullPage: false });
    await page.getByLabel('Date range').selectOption('7d');
    await page.waitForFunction(() => document.querySelectorAll('#days-table tbody tr').length === 7 && document.getElementById('status')!.hidden);

    // The chart: a uPlot canvas with bars drawn in it.
    const painted = await page.$eval('#chart canvas', (canvas) => {
      const c = canvas as unknown as PageCanvas;
      const pixels = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
      let coloured = 0;
      for (let i = 0; i < pixels.length; i += 4) if (pixels[i + 3]! > 0 && pixels[i + 2]! > pixels[i]! + 60) coloured++;
      return { width: c.width, coloured };
    });
    expect(painted.width).toBeGreaterThan(500);
    expect(painted.coloured).toBeGreaterThan(500);

    // The table's numbers are the API's.
    const report = await apiReport(token, acme, 7);
    expect(await tableRows(page)).toEqual(dayRows(report));
    expect(report.totals.requests).toBeGreaterThan(0);
    const totalText = await page.locator('#stat-total .stat-value').textContent();
    expect(Number(totalText!.replace(/[^\d-]/g, ''))).toBe(report.totals.requests);
    expect(await page.locator('#adjustments-table tbody tr').count()).toBe(1);
    await expect(page.locator('#adjustments-table tbody td.num').textContent()).resolves.toBe('-12');
    await expect(page.locator('#freshness time').getAttribute('datetime')).resolves.toBe(report.updatedAt);

    await page.screenshot({ path: join(OUTPUT, 'dashboard.png'), fullPage: true });

    // The metric selector redraws for bytes.
    await page.getByLabel('Metric').selectOption('bytes');
    await expect(page.locator('#chart-title').textContent()).resolves.toBe('Bytes per day');
    await expect(page.locator('#stat-total .stat-value').textContent()).resolves.toMatch(/^[\d.]+ (KB|MB)$/);

    // CSV download: the same bytes the API serves.
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
    expect(download.suggestedFilename()).toBe(`tally-${acme}-${addDays(today, -6)}-${today}-day.csv`);
    expect(readFileSync((await download.path())!, 'utf8')).toBe(await apiCsv(token, acme, 7));

    // The other account of the token, by keyboard.
    await page.getByLabel('Account').focus();
    await page.keyboard.press('ArrowDown');
    await page.waitForFunction((id) => document.getElementById('title-account')!.textContent === id && document.getElementById('status')!.hidden, globex);
    const globexReport = await apiReport(token, globex, 7);
    expect(await tableRows(page)).toEqual(dayRows(globexReport));

    // Rows per month: the API's month rows.
    await page.getByLabel('Table rows').selectOption('month');
    await page.waitForFunction(() => document.getElementById('table-title')!.textContent === 'Months' && document.getElementById('status')!.hidden);
    const monthly = await apiReport(token, globex, 7, '&granularity=month');
    expect(await tableRows(page)).toEqual(monthly.months!.map((row) => ({ day: row.month, metrics: row.metrics })));

    // The token stays out of the URL, in this tab's session storage only.
    expect(page.url()).not.toContain(token.slice(-20));
    expect(await page.evaluate(() => sessionStorage.getItem('tally.token'))).toBe(token);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(errors).toEqual([]);
    await context.close();
  });

  describe('details a reader relies on', () => {
    let context: Awaited<ReturnType<Browser['newContext']>>;
    let page: Page;
    let errors: Error[];
    let report: Report & { measuredTotals: Record<string, number> };

    beforeAll(async () => {
      const token = await mintToken(TEST_SECRET, { accounts: [initech], ttlSeconds: 600 });
      report = (await apiReport(token, initech, 30)) as typeof report;
      context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
      page = await context.newPage();
      errors = watchErrors(page);
      await signIn(page, token);
      await page.waitForSelector('#days-table tbody tr');
    });

    afterAll(async () => {
      expect(errors).toEqual([]);
      await context?.close();
    });

    it("marks today's partial day as in progress in the table and the chart", async () => {
      const row = page.locator(`#days-table tbody tr[data-period="${today}"]`);

      await expect(row.getAttribute('class')).resolves.toContain('in-progress');
      await expect(row.locator('th').textContent()).resolves.toContain('in progress');
      expect(await page.locator('#days-table tbody tr.in-progress').count()).toBe(1);
      await expect(page.locator('#chart-note').textContent()).resolves.toContain('The hatched bar is today (UTC), still in progress.');
      await expect(page.locator('#chart').getAttribute('aria-label')).resolves.toContain("Today's bar is still in progress.");
      await row.scrollIntoViewIfNeeded();
      await page.locator('#days-table').locator('xpath=ancestor::section[1]').screenshot({ path: join(OUTPUT, 'dashboard-today-row.png') });
    });

    it('shows the latest day in the chart legend before any hover', async () => {
      const legend = await page.locator('#chart .u-legend .u-value').allTextContents();

      expect(legend).not.toContain('—');
      expect(legend[0]).toMatch(/\(today, in progress\)$/);
      const latest = report.days[report.days.length - 1]!;
      expect(latest.day).toBe(today);
      expect(legend[1]).toBe(`${latest.metrics.requests!.toLocaleString('en-US')} so far`);
    });

    it('keeps the totals footer in view while the table scrolls', async () => {
      // Scrolled to its first day, the table's last rows are out of its view; the totals must not be.
      await page.locator('#days-table tbody tr').first().scrollIntoViewIfNeeded();

      const layout = await page.$eval('#days-table', (table: PageNode) => {
        const wrap = table.closest('.table-wrap')!;
        const foot = table.querySelector('tfoot')!.getBoundingClientRect();
        const box = wrap.getBoundingClientRect();
        return { scrolls: wrap.scrollHeight > wrap.clientHeight, footTop: foot.top, footBottom: foot.bottom, boxTop: box.top, boxBottom: box.bottom };
      });

      expect(layout.scrolls).toBe(true);
      expect(layout.footTop).toBeGreaterThanOrEqual(layout.boxTop);
      expect(layout.footBottom).toBeLessThanOrEqual(layout.boxBottom);
      await page.locator('#days-table').locator('xpath=ancestor::section[1]').screenshot({ path: join(OUTPUT, 'dashboard-table-footer.png') });
    });

    it('shows bytes in readable units in cards and table, the exact value on hover', async () => {
      await page.getByLabel('Metric').selectOption('bytes');
      await page.waitForFunction(() => document.getElementById('chart-title')!.textContent === 'Bytes per day');

      const cells = await page.$$eval('#days-table td[data-metric="bytes"]', (tds: PageNode[]) =>
        tds.map((td) => ({ text: td.textContent, title: td.getAttribute('title'), value: Number(td.getAttribute('data-value')) })),
      );
      expect(cells.length).toBe(33); // 30 days; measured total, adjustments, total
      for (const cell of cells) {
        expect(cell.text).toMatch(/^-?\d+(\.\d)? (B|KB|MB|GB)$/);
        expect(cell.title).toBe(`${cell.value.toLocaleString('en-US')} bytes`);
      }
      expect(cells.some((cell) => /KB|MB|GB/.test(cell.text!))).toBe(true);
      await expect(page.locator('#stat-total .stat-value').getAttribute('title')).resolves.toBe(`${report.totals.bytes!.toLocaleString('en-US')} bytes`);
      await expect(page.locator('#adjustments-table tbody td.num').getAttribute('title')).resolves.toBe(`${BYTES_CORRECTION.toLocaleString('en-US')} bytes`);
    });

    it('gives the bytes axis a labelled negative range for a negative adjustment', async () => {
      const ticks = (await page.locator('#chart').getAttribute('data-y-ticks'))!.split('|');

      expect(ticks).toContain('0 B');
      expect(ticks[0]).toMatch(/^-\d+(\.\d)? (B|KB|MB)$/);
      await page.screenshot({ path: join(OUTPUT, 'dashboard-details.png'), fullPage: true });
    });
  });

  it('marks closed days and the usage that reached them after the close', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, colorScheme: 'light' });
    const page = await context.newPage();
    const errors = watchErrors(page);
    const token = await mintToken(TEST_SECRET, { accounts: [acme], ttlSeconds: 600 });
    const report = (await apiReport(token, acme, 30)) as unknown as { days: { day: string; status: string; closedAt?: string; late?: Record<string, number> }[] };

    await signIn(page, token);
    await page.waitForSelector('#days-table tbody tr');
    const closed = page.locator(`#days-table tbody tr[data-period="${CLOSED_DAY}"]`);
    const late = page.locator(`#days-table tbody tr[data-period="${LATE_DAY}"]`);
    await late.scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(OUTPUT, 'dashboard-closed-late.png'), fullPage: true });

    expect(report.days.find((d) => d.day === LATE_DAY)).toMatchObject({ status: 'closed', late: { requests: LATE_REQUESTS } });
    expect(report.days.find((d) => d.day === CLOSED_DAY)!.late).toBeUndefined();
    await expect(closed.getAttribute('class')).resolves.toContain('closed');
    await expect(closed.locator('.badge-closed').textContent()).resolves.toBe('closed');
    expect(await closed.locator('.badge-late').count()).toBe(0);
    await expect(late.getAttribute('class')).resolves.toContain('late');
    await expect(late.locator('.badge-late').getAttribute('title')).resolves.toContain(`requests +${LATE_REQUESTS}`);
    // Closed by the closer: the two days. Closed too, without closedAt: the days before the logs (nothing of acme's, past their grace).
    expect(report.days.filter((d) => d.closedAt !== undefined).map((d) => d.day)).toEqual([CLOSED_DAY, LATE_DAY]);
    expect(report.days.filter((d) => d.status === 'closed' && d.closedAt === undefined).every((d) => d.day < addDays(today, -8))).toBe(true);
    const closedRows = await page.locator('#days-table tbody tr.closed').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-period')));
    expect(closedRows.sort()).toEqual(report.days.filter((d) => d.status === 'closed').map((d) => d.day));
    await expect(page.locator('#chart-note').textContent()).resolves.toContain('arrived after that day closed');
    expect(errors).toEqual([]);
    await context.close();
  });

  it("shows this month against the allowance: a bar with the 80% and 100% marks, the projection and the alert reached, as the API gives them", async () => {
    const token = await mintToken(TEST_SECRET, { accounts: [acme], ttlSeconds: 600 });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
    const page = await context.newPage();
    const errors = watchErrors(page);

    // The projection moves with the clock: compare with the very answer the page drew.
    const answered = page.waitForResponse((response) => response.url().includes(`/v1/accounts/${acme}/usage?`) && response.url().includes('quota=true'));
    await signIn(page, token);
    const api = ((await (await answered).json()) as { quota: QuotaBlock }).quota;
    await page.waitForSelector('#quota-card:not([hidden]) .quota-row');
    const rows = await page.$$eval('#quota-rows .quota-row', (nodes: PageNode[]) => {
      const list: QuotaRowOnPage[] = [];
      nodes.forEach((node) => {
        const value = (selector: string) => Number(node.querySelector(selector)!.getAttribute('data-value'));
        const marks: number[] = [];
        const reached: number[] = [];
        const badgeTexts: string[] = [];
        const badgeAlerts: string[] = [];
        const badgeTitles: string[] = [];
        node.querySelectorAll('.badge-threshold').forEach((badge) => {
          badgeTexts.push(badge.textContent!);
          badgeAlerts.push(badge.getAttribute('data-alert')!);
          badgeTitles.push(badge.getAttribute('title')!);
        });
        node.querySelectorAll('.quota-mark').forEach((mark) => {
          marks.push(Number(mark.getAttribute('data-level')));
          if (mark.className.includes('reached')) reached.push(Number(mark.getAttribute('data-level')));
        });
        list.push({
          metric: node.getAttribute('data-metric')!,
          used: value('.quota-used'),
          allowance: value('.quota-allowance'),
          projected: value('.quota-projected'),
          usedText: node.querySelector('.quota-used')!.textContent!,
          usedTitle: node.querySelector('.quota-used')!.getAttribute('title'),
          percent: node.querySelector('.quota-percent')!.textContent!,
          projectedPercent: node.querySelector('.quota-projected-percent')!.textContent!,
          marks,
          reached,
          badges: node.querySelectorAll('.badge-threshold').length,
          badgeTexts,
          badgeAlerts,
          badgeTitles,
          valueNow: Number(node.querySelector('[role="progressbar"]')!.getAttribute('aria-valuenow')),
        });
      });
      return list;
    });
    await page.locator('#quota-card').screenshot({ path: join(OUTPUT, 'dashboard-quota.png') });

    expect(rows.map((row) => row.metric)).toEqual(['requests', 'bytes']);
    for (const row of rows) {
      const status = api.metrics[row.metric]!;
      expect([row.used, row.allowance, row.projected, row.valueNow]).toEqual([status.used, status.allowance, status.projected, status.used]);
      expect(row.percent).toBe(` (${status.percent}%)`);
      expect(row.projectedPercent).toBe(` (${status.projectedPercent}%)`);
      expect(row.marks).toEqual([80, 100]);
    }
    const [requests, bytes] = rows as [QuotaRowOnPage, QuotaRowOnPage];
    expect(requests.reached).toEqual([80]);
    expect(requests.badges).toBe(1);
    expect(api.metrics.requests!.crossed.map((c) => c.level)).toEqual([80]);
    // Evaluated without a webhook queue (the npm start default): reached, its alert not sent.
    expect(api.metrics.requests!.crossed[0]!.notifiedAt).toBeUndefined();
    expect(requests.badgeTexts).toEqual([expect.stringMatching(/^80% reached .+ · alert pending$/)]);
    expect(requests.badgeAlerts).toEqual(['pending']);
    expect(requests.badgeTitles[0]).toMatch(/^Reached: .*; alert pending/);
    expect(requests.badgeTitles[0]).not.toMatch(/alert sent/i);
    expect(bytes.usedText).toMatch(/^\d+(\.\d)? (B|KB|MB|GB)$/);
    expect(bytes.usedTitle).toBe(`${api.metrics.bytes!.used.toLocaleString('en-US')} bytes`);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('after an allowance raised mid-month shows no level reached on the bar, the pending alert withdrawn as history', async () => {
    const { dynamodb, sqs } = testClients(info);
    const raised = uniqueId('raised');
    const quotas = new DynamoQuotaStore({ client: dynamodb, tableName: info.table });
    await putAdjustment(raised, today, 'USE-1', 'requests', 5000, 'usage of the month so far');
    await quotas.set({ account: raised, metric: 'requests', period: { from: monthOf(new Date()), monthly: 6178 }, updatedAt: new Date().toISOString() });
    const config = readThresholdConfig({ ...localEnvironment(info), TALLY_METRICS: METRICS });
    const before = await evaluateThresholds(createThresholdDeps(config, { dynamodb, sqs }, silentLog), { accounts: [raised] });
    await quotas.set({ account: raised, metric: 'requests', period: { from: monthOf(new Date()), monthly: 1_000_000 }, updatedAt: new Date().toISOString() });
    // The next scheduled run, after the recording run's send lease.
    const afterLease = () => new Date(Date.now() + 2 * THRESHOLD_SEND_LEASE_SECONDS * 1000);
    const after = await evaluateThresholds(createThresholdDeps(config, { dynamodb, sqs }, silentLog, { clock: afterLease }), { accounts: [raised] });
    const token = await mintToken(TEST_SECRET, { accounts: [raised], ttlSeconds: 600 });
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors = watchErrors(page);

    await signIn(page, token);
    await page.waitForSelector('#quota-card:not([hidden]) .quota-row[data-metric="requests"]');
    const row = page.locator('.quota-row[data-metric="requests"]');
    const badges = await row.locator('.badge-threshold').evaluateAll((nodes) => nodes.map((node) => [node.getAttribute('data-alert'), node.textContent]));
    await row.screenshot({ path: join(OUTPUT, 'dashboard-quota-raised.png') });

    expect(before.crossed.map((crossing) => [crossing.level, crossing.allowance])).toEqual([[80, 6178]]);
    expect(after.withdrawn.map((crossing) => [crossing.level, crossing.allowance])).toEqual([[80, 6178]]);
    expect(await row.locator('.quota-percent').textContent()).toBe(' (0.5%)');
    expect(await row.locator('.quota-mark.reached').count()).toBe(0);
    expect(badges).toEqual([['withdrawn', '80% of 6,178 (earlier allowance) · alert withdrawn']]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('keeps the 80% and 100% marks visible under a huge overage and flags the overflow', async () => {
    const { dynamodb } = testClients(info);
    await new DynamoQuotaStore({ client: dynamodb, tableName: info.table }).set({ account: globex, metric: 'requests', period: { from: monthOf(new Date()), monthly: 1 }, updatedAt: new Date().toISOString() });
    const token = await mintToken(TEST_SECRET, { accounts: [globex], ttlSeconds: 600 });
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors = watchErrors(page);

    await signIn(page, token);
    await page.waitForSelector('#quota-card:not([hidden]) .quota-row[data-metric="requests"] .quota-overflow');
    const row = page.locator('.quota-row[data-metric="requests"]');
    const trackWidth = (await row.locator('.quota-track').boundingBox())!.width;
    const markAt = async (level: number) => (await row.locator(`.quota-mark[data-level="${level}"]`).boundingBox())!.x - (await row.locator('.quota-track').boundingBox())!.x;
    await row.screenshot({ path: join(OUTPUT, 'dashboard-quota-overflow.png') });

    expect(await row.locator('.quota-track').getAttribute('data-scale')).toBe('200');
    expect(await markAt(80)).toBeGreaterThan(trackWidth * 0.35);
    expect(await markAt(100)).toBeGreaterThan(trackWidth * 0.45);
    expect(await row.locator('.quota-overflow').textContent()).toMatch(/^▶ \d+%$/);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('gives admin tokens the operator view: every account ranked for the range with its share, as the API ranks them', async () => {
    const admin = await mintToken(TEST_SECRET, { admin: true, ttlSeconds: 600, subject: 'operator' });
    const tenant = await mintToken(TEST_SECRET, { accounts: [acme, globex], ttlSeconds: 600 });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
    const page = await context.newPage();
    const errors = watchErrors(page);
    // Lines no resolver attributes, in the range: the ranking must keep them apart.
    const stray = generateLog({ seed: 4242, day: today, hour: 1, distribution: 'E2DASH', accounts: [{ id: globex, weight: 1 }], lines: 12, unattributedRate: 1 });
    const strayRef = await putLogObject(`cloudfront/${uniqueId('E2DASH')}.${today}-01.x.gz`, stray.text);
    expect((await ingestBatch({ Records: [s3NotificationMessage(strayRef)] }, testIngestDeps({ TALLY_METRICS: METRICS }))).batchItemFailures).toEqual([]);

    await signIn(page, admin);
    // (exact: the operator view's heading, "Usage for all accounts", names accounts too.)
    await page.getByLabel('Account', { exact: true }).fill(acme);
    const range = `from=${addDays(today, -29)}&to=${today}&metric=requests`;
    // Other test files may add to the shared table at any moment: the page is checked against
    // the ranking it drew (its own response for the range), not a second read made later.
    // The operator view's own ranking first, so that the response awaited is Show's.
    await page.waitForSelector(`#ranking-table tbody tr[data-account="${initech}"]`);
    const answered = page.waitForResponse((response) => response.url() === `${server.url}/v1/accounts?${range}`);
    await page.getByRole('button', { name: 'Show' }).click();
    const response = await answered;
    expect(response.status()).toBe(200);
    const ranking = (await response.json()) as Ranking;
    expect(ranking.unattributed).not.toBeNull();
    await page.waitForFunction(
      (requests) => document.getElementById('ranking-unattributed')?.querySelector('.unattributed-value')?.getAttribute('data-value') === String(requests),
      ranking.unattributed!.requests,
    );
    const shown = await page.$$eval('#ranking-table tbody tr', (trs: PageNode[]) => {
      const list: { account: string; rank: number; value: number; share: number }[] = [];
      trs.forEach((tr) => {
        const cells = tr.querySelectorAll('td');
        const numbers: number[] = [];
        cells.forEach((td) => numbers.push(Number(td.getAttribute('data-value') ?? td.textContent)));
        list.push({ account: tr.getAttribute('data-account')!, rank: numbers[0]!, value: numbers[1]!, share: numbers[2]! });
      });
      return list;
    });
    await page.locator('#ranking-card').screenshot({ path: join(OUTPUT, 'dashboard-ranking.png') });
    const ours = <T extends { account: string }>(rows: T[]) => rows.filter((row) => [acme, globex, initech].includes(row.account));

    const pageTotal = Number(await page.locator('#ranking-total').getAttribute('data-value'));

    expect(ours(shown).map(({ account, value }) => ({ account, value }))).toEqual(
      ours(ranking.accounts.map((row) => ({ account: row.accountId, value: row.totals.requests! }))),
    );
    expect(ours(shown).map((row) => row.account)).toEqual([acme, initech, globex]);
    // Lines no resolver attributed: apart, under the table, not ranked and not in the shares.
    expect(shown.map((row) => row.account)).not.toContain('unattributed');
    expect(ranking.unattributed).not.toBeNull();
    expect(Number(await page.locator('#ranking-unattributed .unattributed-value').getAttribute('data-value'))).toBe(ranking.unattributed!.requests);
    expect(shown.map((row) => row.rank)).toEqual(shown.map((_, i) => i + 1));
    // (`+ 0`: JSON has no -0, the share of an account corrected below zero reads as 0.)
    for (const row of shown) expect(row.share).toBe(Math.round((row.value * 10_000) / pageTotal) / 100 + 0);
    expect(pageTotal).toBe(shown.reduce((sum, row) => sum + row.value, 0));
    await page.locator(`#ranking-table tbody tr[data-account="${globex}"] button`).click();
    await page.waitForFunction((id) => document.getElementById('title-account')!.textContent === id && document.getElementById('status')!.hidden, globex);

    expect(errors).toEqual([]);
    await context.close();

    const tenantPage = await browser.newPage();
    await signIn(tenantPage, tenant);
    await tenantPage.waitForSelector('#days-table tbody tr');
    expect(await tenantPage.locator('#ranking-card').isHidden()).toBe(true);
    await tenantPage.close();
  });

  it('explains a day when it is clicked: the sums, the adjustment and every log object, as the API explains it', async () => {
    const token = await mintToken(TEST_SECRET, { accounts: [acme], ttlSeconds: 600 });
    const day = addDays(today, -3);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
    const page = await context.newPage();
    const errors = watchErrors(page);
    await signIn(page, token);
    await page.waitForSelector('#days-table tbody tr');

    await page.locator(`#days-table button.day-link[data-day="${day}"]`).click();
    await page.waitForSelector(`#explain-card[data-day="${day}"] #explain-sums`);
    const response = await fetch(`${server.url}/v1/accounts/${acme}/days/${day}/explain`, { headers: { authorization: `Bearer ${token}` } });
    const api = (await response.json()) as {
      metricNames: string[];
      metrics: Record<string, number>;
      totals: Record<string, number>;
      sourceTotals: Record<string, number>;
      sources: { key: string; metrics: Record<string, number> }[];
      adjustments: { id: string }[];
      complete: boolean;
    };
    const rowValues = (selector: string) =>
      page.$$eval(`${selector} td`, (cells: PageNode[]) => {
        const values: Record<string, number> = {};
        cells.forEach((cell) => (values[cell.getAttribute('data-metric')!] = Number(cell.getAttribute('data-value'))));
        return values;
      });
    const sources = await page.$$eval('#explain-sources tbody tr', (rows: PageNode[]) => {
      const keys: string[] = [];
      rows.forEach((row) => keys.push(row.getAttribute('data-key')!));
      return keys;
    });
    await page.locator('#explain-card').screenshot({ path: join(OUTPUT, 'dashboard-explain.png') });

    expect(response.status).toBe(200);
    expect(api.complete).toBe(true);
    expect(await page.locator('#explain-card').getAttribute('data-complete')).toBe('true');
    expect(await page.locator('#explain-check').textContent()).toContain('add up exactly');
    expect(await rowValues('#explain-sums tr.explain-sources')).toEqual(api.sourceTotals);
    expect(await rowValues('#explain-sums tr.explain-measured')).toEqual(api.metrics);
    expect(await rowValues('#explain-sums tr.explain-total')).toEqual(api.totals);
    expect(api.sourceTotals).toEqual(api.metrics);
    expect(api.adjustments.map((a) => a.id)).toEqual(['INC-7']);
    expect(await page.locator('#explain-adjustments tbody tr').count()).toBe(1);
    expect(sources).toEqual(api.sources.map((source) => source.key));
    expect(sources.length).toBeGreaterThanOrEqual(1);
    expect(api.totals.requests).toBe(api.metrics.requests! - 12);

    await page.locator('#explain-close').click();
    expect(await page.locator('#explain-card').isHidden()).toBe(true);
    expect(errors).toEqual([]);
    await context.close();
  });

  it("shows a day's hours in the explanation as the API gives them: the day's hours with usage, each object's hours, and the reason when hours are not known", async () => {
    type HourRow = { hour: number; metrics: Record<string, number> };
    interface HoursOfExplanation {
      hours: HourRow[] | null;
      hoursSource?: string;
      hoursReason?: string;
      sources: { key: string; hours: HourRow[] | null }[];
    }
    const withUsage = (rows: HourRow[]) => rows.filter((row) => Object.values(row.metrics).some((value) => value !== 0));
    const sourceHours = (hours: HourRow[] | null) => (hours === null ? 'unknown' : withUsage(hours).map((row) => row.hour).join(','));
    // A log whose lines have a date and no time of day: counted to the day, with no hour.
    const timeless = uniqueId('timeless');
    const timelessDay = addDays(today, -2);
    const ref = await putLogObject(`cloudfront/${uniqueId('E2DASHNT')}.${timelessDay}-00.x.gz`, `#Version: 1.0\n#Fields: date sc-bytes x-host-header cs-uri-stem\n${timelessDay}\t120\t${timeless}.example.com\t/a\n${timelessDay}\t80\t${timeless}.example.com\t/b\n`);
    expect((await ingestBatch({ Records: [s3NotificationMessage(ref)] }, testIngestDeps({ TALLY_METRICS: METRICS }))).batchItemFailures).toEqual([]);

    const explainOnPage = async (page: Page, token: string, account: string, day: string, shot: string) => {
      await signIn(page, token);
      await page.waitForSelector(`#days-table button.day-link[data-day="${day}"]`);
      await page.locator(`#days-table button.day-link[data-day="${day}"]`).click();
      await page.waitForSelector(`#explain-card[data-day="${day}"] #explain-sources`);
      const response = await fetch(`${server.url}/v1/accounts/${account}/days/${day}/explain`, { headers: { authorization: `Bearer ${token}` } });
      expect(response.status).toBe(200);
      const api = (await response.json()) as HoursOfExplanation;
      const hourRows = await page.$$eval('#explain-hours tbody tr', (rows: PageNode[]) => {
        const read: { hour: number; label: string | null; metrics: Record<string, number> }[] = [];
        rows.forEach((row) => {
          const metrics: Record<string, number> = {};
          row.querySelectorAll('td').forEach((cell) => (metrics[cell.getAttribute('data-metric')!] = Number(cell.getAttribute('data-value'))));
          read.push({ hour: Number(row.getAttribute('data-hour')), label: row.querySelector('th')!.textContent, metrics });
        });
        return read;
      });
      const sourceCells = await page.$$eval('#explain-sources tbody tr', (rows: PageNode[]) => {
        const read: { key: string | null; hours: string | null; text: string | null }[] = [];
        rows.forEach((row) => {
          const cell = row.querySelector('td.source-hours')!;
          read.push({ key: row.getAttribute('data-key'), hours: cell.getAttribute('data-hours'), text: cell.textContent });
        });
        return read;
      });
      const scrollsSideways = await page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);
      await page.locator('#explain-card').screenshot({ path: join(OUTPUT, shot) });
      return { api, hourRows, sourceCells, scrollsSideways };
    };

    for (const [width, suffix] of [
      [1400, '1400'],
      [390, 'phone'],
    ] as const) {
      const context = await browser.newContext({ viewport: { width, height: 900 }, colorScheme: 'light', ...(width === 390 ? { deviceScaleFactor: 2, isMobile: true, hasTouch: true } : {}) });
      const page = await context.newPage();
      const errors = watchErrors(page);

      // acme's day, counted from timed lines: hours from the counters, every hour with usage shown.
      const day = addDays(today, -3);
      const token = await mintToken(TEST_SECRET, { accounts: [acme], ttlSeconds: 600 });
      const known = await explainOnPage(page, token, acme, day, `dashboard-explain-hours-${suffix}.png`);
      expect(known.api.hours).not.toBeNull();
      expect(known.api.hoursSource).toBe('shards');
      expect(known.hourRows.map(({ hour, metrics }) => ({ hour, metrics }))).toEqual(withUsage(known.api.hours!));
      expect(known.hourRows.length).toBeGreaterThan(0);
      expect(known.hourRows.map((row) => row.label)).toEqual(withUsage(known.api.hours!).map((row) => String(row.hour).padStart(2, '0') + ':00'));
      expect(await page.locator('#explain-hours-note').textContent()).toContain(`${known.hourRows.length} of 24 hours with usage (from the counters)`);
      expect(known.sourceCells.map(({ key, hours }) => ({ key, hours }))).toEqual(known.api.sources.map((source) => ({ key: source.key, hours: sourceHours(source.hours) })));
      expect(known.sourceCells.every((cell) => cell.hours !== 'unknown' && cell.hours !== '')).toBe(true);
      expect(await page.locator('#explain-hours-unknown').count()).toBe(0);
      expect(known.scrollsSideways).toBe(false);

      // The timeless account's day: hours not known, the API's reason shown, no hour table, never zeros.
      const timelessToken = await mintToken(TEST_SECRET, { accounts: [timeless], ttlSeconds: 600 });
      await page.evaluate(() => sessionStorage.clear());
      const unknown = await explainOnPage(page, timelessToken, timeless, timelessDay, `dashboard-explain-hours-unknown-${suffix}.png`);
      expect(unknown.api.hours).toBeNull();
      expect(unknown.api.hoursReason).toBeTruthy();
      expect(await page.locator('#explain-hours-unknown').textContent()).toBe(`Hours not known: ${unknown.api.hoursReason}.`);
      expect(unknown.hourRows).toEqual([]);
      expect(unknown.sourceCells.map(({ key, hours }) => ({ key, hours }))).toEqual(unknown.api.sources.map((source) => ({ key: source.key, hours: sourceHours(source.hours) })));
      expect(unknown.scrollsSideways).toBe(false);
      expect(errors).toEqual([]);
      await context.close();
    }
  });

  it("in a zone, a day whose hours are not known does not claim its totals are: the table's dash and the hours card agree", async () => {
    // A log whose lines have a date and no time of day: its UTC day has totals and no hours.
    const dated = uniqueId('dated');
    const day = addDays(today, -2);
    const ref = await putLogObject(`cloudfront/${uniqueId('E2DASHDT')}.${day}-00.x.gz`, `#Version: 1.0\n#Fields: date sc-bytes x-host-header cs-uri-stem\n${day}\t120\t${dated}.example.com\t/a\n`);
    expect((await ingestBatch({ Records: [s3NotificationMessage(ref)] }, testIngestDeps({ TALLY_METRICS: METRICS }))).batchItemFailures).toEqual([]);
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, colorScheme: 'light', timezoneId: 'Asia/Tokyo' });
    const page = await context.newPage();
    const errors = watchErrors(page);
    await signIn(page, await mintToken(TEST_SECRET, { accounts: [dated], ttlSeconds: 600 }));
    await page.waitForSelector('#days-table tbody tr');
    await page.selectOption('#tz-select', 'browser');
    await page.waitForSelector(`#days-table tbody tr[data-period="${day}"] button.day-link`);
    const answer = await fetch(`${server.url}/v1/accounts/${dated}/usage?from=${day}&to=${day}&tz=Asia/Tokyo`, { headers: { authorization: `Bearer ${await mintToken(TEST_SECRET, { accounts: [dated], ttlSeconds: 600 })}` } });
    const report = (await answer.json()) as { days: { day: string; metrics: Record<string, number> | null }[] };
    await page.locator(`#days-table button.day-link[data-day="${day}"]`).click();
    await page.waitForSelector('#hours-card[data-ready="missing"]');
    await page.locator('#hours-card').screenshot({ path: join(OUTPUT, 'dashboard-hours-unknown-zone.png') });

    expect(report.days[0]!.metrics).toBeNull();
    expect(await page.locator(`#days-table tbody tr[data-period="${day}"] td`).first().textContent()).toBe('—');
    const summary = await page.locator('#hours-summary').textContent();
    expect(summary).not.toContain('totals are known');
    expect(summary).toContain('not known');
    expect(errors).toEqual([]);
    await context.close();
  });

  it('keeps every control inside its card at 390 px when the time zone has a long name', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, timezoneId: 'America/Argentina/Buenos_Aires' });
    const page = await context.newPage();
    const errors = watchErrors(page);
    await signIn(page, await mintToken(TEST_SECRET, { accounts: [acme], ttlSeconds: 600 }));
    await page.waitForSelector('#days-table tbody tr');
    await page.selectOption('#tz-select', 'browser');
    await page.selectOption('#range-select', 'custom');
    await page.waitForSelector('#from-input:visible');
    const layout = await page.$eval('#controls', (form: PageNode) => {
      const box = form.getBoundingClientRect();
      const outside: string[] = [];
      form.querySelectorAll('select, input:not([type="hidden"]), button').forEach((control) => {
        const rect = control.getBoundingClientRect();
        if (rect.right === rect.left) return; // hidden
        if (rect.left < box.left || rect.right > box.right - 8) outside.push(`${control.getAttribute('id') ?? control.textContent}: ${rect.left}..${rect.right} in ${box.left}..${box.right}`);
      });
      return outside;
    });
    await page.screenshot({ path: join(OUTPUT, 'dashboard-phone-long-zone.png') });

    expect(await page.locator('#tz-select option[value="browser"]').textContent()).toContain('Buenos_Aires');
    expect(layout).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  });

  it("keeps a log object's format, time and numbers in view at 1400 px however long its key: the key gives way, whole on hover", async () => {
    const token = await mintToken(TEST_SECRET, { accounts: [longKeyed], ttlSeconds: 600 });
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, colorScheme: 'light' });
    const page = await context.newPage();
    const errors = watchErrors(page);
    await signIn(page, token);
    await page.waitForSelector('#days-table tbody tr');

    await page.locator(`#days-table button.day-link[data-day="${LONG_KEY_DAY}"]`).click();
    await page.waitForSelector(`#explain-card[data-day="${LONG_KEY_DAY}"] #explain-sources tbody tr`);
    const layout = await page.$eval('#explain-sources', (table: PageNode) => {
      const wrap = table.closest('.table-wrap')!;
      const box = wrap.getBoundingClientRect();
      const columns: { text: string | null; left: number; right: number }[] = [];
      table.querySelectorAll('thead th').forEach((th) => {
        const rect = th.getBoundingClientRect();
        columns.push({ text: th.textContent, left: rect.left, right: rect.right });
      });
      const key = table.querySelector('tbody th.object-name')!;
      const folders = key.querySelector('.key-folders')!;
      return {
        box: { left: box.left, right: box.right },
        scrolls: wrap.scrollWidth > wrap.clientWidth,
        columns,
        keyText: key.textContent,
        keyTitle: key.getAttribute('title'),
        foldersCut: folders.scrollWidth > folders.clientWidth,
      };
    });
    await page.locator('#explain-card').screenshot({ path: join(OUTPUT, 'dashboard-explain-1400.png') });

    expect(layout.columns.map((column) => column.text)).toEqual(['Object', 'Format', 'Counted (UTC)', 'Hours (UTC)', 'Requests', 'Bytes', 'Authorization requests']);
    for (const column of layout.columns) {
      expect([column.text, column.left >= layout.box.left - 0.5 && column.right <= Math.min(layout.box.right, 1400) + 0.5]).toEqual([column.text, true]);
    }
    expect(layout.scrolls).toBe(false);
    expect(layout.keyText).toBe(LONG_KEY);
    expect(layout.foldersCut).toBe(true);
    expect(layout.keyTitle).toMatch(new RegExp(`^s3://${info.bucket}/${LONG_KEY.replace(/[.]/g, '\\.')} · ETag [0-9a-f]{32}$`));
    expect(errors).toEqual([]);
    await context.close();
  });

  it('lands an admin token on the operator view: ingestion health and every account ranked, no account typed', async () => {
    const admin = await mintToken(TEST_SECRET, { admin: true, ttlSeconds: 600, subject: 'operator' });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
    const page = await context.newPage();
    const errors = watchErrors(page);
    // The figures move while other suites ingest into the same ledger, so the page is checked
    // against the very report it drew (its own response), not a second read made later.
    const answered = page.waitForResponse((response) => new URL(response.url()).pathname === '/v1/health');
    await signIn(page, admin);
    const response = await answered;
    await page.waitForSelector('#health-card:not([hidden]) #health-facts .stat');
    await page.waitForSelector(`#ranking-table tbody tr[data-account="${acme}"]`);
    const health = (await response.json()) as {
      days: string[];
      objects: { lastDay: number };
      freshness: { source: string }[];
      perDay: { day: string; objects: number; lines: { read: number } }[];
    };
    expect(response.status()).toBe(200);
    expect(new URL(response.url()).searchParams.get('days')).toBe('7');
    expect(health.days).toHaveLength(7);
    await page.screenshot({ path: join(OUTPUT, 'dashboard-operator.png'), fullPage: true });

    expect(await page.locator('#title-account').textContent()).toBe('all accounts');
    expect(await page.locator('#health-objects .stat-value').textContent()).toBe(String(health.objects.lastDay));
    const ours = health.freshness.map((row) => row.source).filter((source) => source.startsWith('E2DASH'));
    expect(ours.length).toBeGreaterThan(0);
    expect(await page.locator(`#health-freshness tbody tr[data-source="${ours[0]}"]`).count()).toBe(1);
    // A week per day of the logs, newest first, each row the API's figures.
    expect(await page.locator('#health-days tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-day')))).toEqual(health.perDay.map((d) => d.day).reverse());
    const busiest = health.perDay.reduce((a, b) => (b.lines.read > a.lines.read ? b : a));
    expect(busiest.lines.read).toBeGreaterThan(0);
    expect(await page.locator(`#health-days tbody tr[data-day="${busiest.day}"] td`).allTextContents()).toEqual(
      expect.arrayContaining([busiest.objects.toLocaleString('en-US'), busiest.lines.read.toLocaleString('en-US')]),
    );
    const tenant = await browser.newPage();
    await signIn(tenant, await mintToken(TEST_SECRET, { accounts: [acme], ttlSeconds: 600 }));
    await tenant.waitForSelector('#days-table tbody tr');
    expect(await tenant.locator('#health-card').isHidden()).toBe(true);
    await tenant.close();
    expect(errors).toEqual([]);
    await context.close();
  });

  it('works at phone width', async () => {
    const token = await mintToken(TEST_SECRET, { accounts: [acme], ttlSeconds: 600 });
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    const page = await context.newPage();

    await signIn(page, token);
    await page.waitForSelector('#days-table tbody tr');

    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await page.screenshot({ path: join(OUTPUT, 'dashboard-phone.png'), fullPage: false });

    // The days table: every column in view, every number whole, nothing left to scroll to.
    const days = await page.$eval('#days-table', (table: PageNode) => {
      const wrap = table.closest('.table-wrap')!;
      const box = wrap.getBoundingClientRect();
      const cells: { text: string | null; left: number; right: number; clipped: boolean }[] = [];
      table.querySelectorAll('thead th, tbody tr:first-child > *, tfoot tr:first-child > *').forEach((cell) => {
        const rect = cell.getBoundingClientRect();
        cells.push({ text: cell.textContent, left: rect.left, right: rect.right, clipped: cell.scrollWidth > cell.clientWidth });
      });
      return { box: { left: box.left, right: box.right }, cells, cue: table.closest('.table-frame')!.getAttribute('data-overflow') };
    });
    await page.locator('#days-table').scrollIntoViewIfNeeded();
    await page.locator('#days-table').locator('xpath=ancestor::section[1]').screenshot({ path: join(OUTPUT, 'dashboard-phone-days.png') });
    expect(days.cells.length).toBe(12);
    for (const cell of days.cells) {
      expect([cell.text, cell.left >= days.box.left - 0.5 && cell.right <= Math.min(days.box.right, 390) + 0.5 && !cell.clipped]).toEqual([cell.text, true]);
    }
    expect(days.cue).toBe('');

    // A table that is wider than a phone (a day's log objects) says so on the side that hides columns.
    await page.locator('#days-table button.day-link').last().click();
    await page.waitForSelector('#explain-sources tbody tr');
    const frame = page.locator('#explain-sources').locator('xpath=ancestor::div[contains(@class, "table-frame")][1]');
    await expect(frame.getAttribute('data-overflow')).resolves.toBe('right');
    await page.locator('#explain-sources').locator('xpath=ancestor::div[contains(@class, "table-wrap")][1]').evaluate((wrap: PageNode) => {
      wrap.scrollLeft = wrap.scrollWidth;
    });
    await page.waitForFunction(() => document.getElementById('explain-sources')!.closest('.table-frame')!.getAttribute('data-overflow') === 'left');
    await page.locator('#explain-card').screenshot({ path: join(OUTPUT, 'dashboard-phone-explain.png') });
    await context.close();
  });

  it('says so when the range has no usage', async () => {
    const token = await mintToken(TEST_SECRET, { accounts: [quiet], ttlSeconds: 600 });
    const page = await browser.newPage();

    await signIn(page, token);

    await page.waitForSelector('#status[data-state="empty"]');
    await expect(page.locator('#status').textContent()).resolves.toContain(`No usage recorded for ${quiet} in this range.`);
    await page.close();
  });

  it('shows the error state for a wrong token and the expired state for an expired one', async () => {
    const wrongKey = await mintToken(`${TEST_SECRET}-not-ours`, { accounts: [acme], ttlSeconds: 600 });
    const expired = await mintToken(TEST_SECRET, { accounts: [acme], ttlSeconds: 60, now: new Date(Date.now() - 3_600_000) });
    const page = await browser.newPage();

    await signIn(page, wrongKey);
    await page.waitForSelector('#signin-error[data-state="rejected"]');
    const rejected = await page.locator('#signin-error').textContent();
    await signIn(page, 'this is not a token');
    await page.waitForSelector('#signin-error[data-state="error"]');
    const garbage = await page.locator('#signin-error').textContent();
    await signIn(page, expired);
    await page.waitForSelector('#signin-error[data-state="expired"]');
    const expiredText = await page.locator('#signin-error').textContent();
    await page.screenshot({ path: join(OUTPUT, 'dashboard-signin-error.png') });

    expect(rejected).toContain('The usage API rejected this token.');
    expect(rejected).toContain('the token signature does not verify');
    expect(garbage).toContain('That does not look like an access token');
    expect(expiredText).toContain('Your access token has expired.');
    expect(await page.evaluate(() => sessionStorage.getItem('tally.token'))).toBeNull();
    await page.close();
  });
});
