import { PutItemCommand, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import Stripe from 'stripe';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { jsonLog, type Log } from '../../src/app/log';
import { handleStripeMessage, linkAccount, sendPending, type StripeSyncDeps } from '../../src/app/billing/stripe-sync';
import { pendingOutboxRecord } from '../../src/domain/billing/stripe';
import { checkCustomer } from '../../src/app/billing/stripe-reconcile';
import { readConfig } from '../../src/adapters/config';
import { readStripeConfig } from '../../src/adapters/stripe/stripe-config';
import { createStripeSyncDeps } from '../../src/adapters/wiring/stripe-deps';
import { DynamoStripeStore } from '../../src/adapters/dynamodb/dynamodb-stripe-store';
import { stripeConnection } from '../../src/adapters/stripe/stripe-meter-api';
import { hourEventTimestamp } from '../../src/domain/billing/stripe-hours';
import { usageKey } from '../../src/domain/counters/keys';
import { hourSumsToAttributes, isHourAttribute } from '../../src/domain/hours';
import { expectedKey, generateLog } from '../../src/local/demo/log-generator';
import { closeOk, handoffTable, testCloser } from '../support/handoff';
import { startStripeServer } from '../support/stripe-server';
import { captureIo, tallyCommand } from '../support/cli';
import { handleUsageApiRequest } from '../../src/app/reading/usage-api';
import { explainDay } from '../../src/app/reading/explain';
import { mintToken } from '../../src/adapters/http/jwt-tokens';
import { DynamoUsageReader } from '../../src/adapters/dynamodb/dynamodb-usage-reader';
import { DynamoSourceReader } from '../../src/adapters/dynamodb/dynamodb-sources';
import { createLocalUsageApiDeps } from '../../src/local/serving/local-usage-api';
import { usageApiEvent } from '../support/api-events';
import { TEST_SECRET } from '../support/tokens';
import { createTestQueues, putLogObject, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';

/**
 * TALLY_STRIPE_WINDOW=hour against the Stripe stand-in (test/support/stripe-server.ts), whose
 * hour-window meters keep the last event of each UTC hour, as Stripe documents for
 * pre-aggregated meters (https://docs.stripe.com/billing/subscriptions/usage-based/recording-usage).
 */
const info = testStackInfo();
const METERS = '{"requests":"cdn_requests","bytes":"cdn_bytes"}';
const API_KEY = 'sk_test_tally_hour_key_0123456789';
const D1 = '2026-11-01';
const D2 = '2026-11-02';
const D3 = '2026-11-03';
const D4 = '2026-11-04';
const seconds = (date: Date) => Math.floor(date.getTime() / 1000);
const servers: { close(): Promise<void> }[] = [];

afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

/** A table, a Stripe stand-in with Tally's two meters in `window` windows, and the sync wired as the sender wires it. */
async function scenario(window: 'day' | 'hour', logLines: string[] = [], webhookQueueUrl?: string, lateUsage?: 'invoice-item') {
  const { env } = await handoffTable(info);
  const server = await startStripeServer(API_KEY);
  servers.push(server);
  let now = new Date(`${D1}T00:00:00Z`);
  server.setClock(() => seconds(now));
  server.addMeter('cdn_requests', { event_time_window: window });
  server.addMeter('cdn_bytes', { event_time_window: window });
  const log: Log = jsonLog((line) => void logLines.push(line), 'warn');
  const stripeEnv = { TALLY_STRIPE_API_KEY: API_KEY, TALLY_STRIPE_API_BASE: server.url, TALLY_STRIPE_METERS: METERS, TALLY_STRIPE_RUNNING_MINUTES: '60', TALLY_STRIPE_WINDOW: window, ...(lateUsage === undefined ? {} : { TALLY_STRIPE_LATE_USAGE: lateUsage }) };
  const clients = testClients(info);
  const sync = (): StripeSyncDeps =>
    createStripeSyncDeps({ tally: readConfig(env), stripe: readStripeConfig(stripeEnv), ...(webhookQueueUrl === undefined ? {} : { webhookQueueUrl }) }, clients, API_KEY, log, { clock: () => now, retry: { attempts: 4, baseMs: 5, maxMs: 20 } });
  const ingestDeps = testIngestDeps(env, { log });
  /** Requests counted per `day hh` for the account, from the generated logs (known apart from Tally). */
  const counted = new Map<string, number>();
  return {
    env,
    stripeEnv,
    server,
    sync,
    counted,
    now: () => now,
    moveTo(next: string) {
      now = new Date(next);
    },
    sweep: (account: string) => handleStripeMessage(sync(), { account, running: true }),
    async ingest(day: string, hour: number, seed: number, account: string, lines = 40) {
      const generated = generateLog({ seed, day, hour, distribution: 'E2HOUR', accounts: [{ id: account, weight: 1 }], lines, previousDayRate: 0, malformedRate: 0, unattributedRate: 0 });
      const ref = await putLogObject(`cloudfront/${uniqueId('E2HOUR')}.${day}-${String(hour).padStart(2, '0')}.x.gz`, generated.text);
      const at = now;
      const result = await ingestBatch({ Records: [s3NotificationMessage(ref)] }, { ...ingestDeps, clock: () => at });
      expect(result.batchItemFailures).toEqual([]);
      const requests = generated.expected.hours?.get(expectedKey(account, day))?.[hour]?.requests ?? 0;
      counted.set(`${day} ${hour}`, (counted.get(`${day} ${hour}`) ?? 0) + requests);
    },
    /** The hourly closer, then the sender's message for each revision it wrote. */
    async close() {
      const report = await closeOk(testCloser(env, () => now));
      for (const day of report.days) for (const { revision } of day.written ?? []) await handleStripeMessage(sync(), { day: day.day, revision });
    },
    requestEvents: () => server.events().filter((e) => e.event_name === 'cdn_requests'),
  };
}

type Scenario = Awaited<ReturnType<typeof scenario>>;

/**
 * A two-day period from 2026-11-01T15:00Z to 2026-11-03T15:00Z (finalized an hour after, Stripe's
 * default grace), traffic before, inside and after it, a running sweep after each log, the closer
 * at 00:30 each day. Answers the period's invoice and the requests counted in its hours.
 */
async function periodFromThreePm(s: Scenario) {
  const acme = uniqueId('acme');
  const customer = `cus_${acme.replace(/[^A-Za-z0-9]/g, '').slice(-12)}`;
  await s.sync().store.link({ account: acme, customer, linkedAt: `${D1}T00:00:00Z` });
  const start = seconds(new Date(`${D1}T15:00:00Z`));
  s.server.addSubscription({ customer, eventName: 'cdn_requests', start, periodSeconds: 2 * 86_400 });
  const traffic: [string, string, number][] = [
    [`${D1}T10:30:00Z`, D1, 10], // before the period
    [`${D1}T16:30:00Z`, D1, 16],
    [`${D2}T03:30:00Z`, D2, 3],
    [`${D3}T12:30:00Z`, D3, 12],
    [`${D3}T14:40:00Z`, D3, 14],
    [`${D3}T18:30:00Z`, D3, 18], // after it
  ];
  const timeline: [string, () => Promise<unknown>][] = [
    ...traffic.map(([time, day, hour], i): [string, () => Promise<unknown>] => [time, async () => {
      await s.ingest(day, hour, 100 + i, acme, 30 + 7 * i);
      await s.sweep(acme);
    }]),
    // D1 closes 48 h after its end (after the invoice): its closed hours equal the running totals sent.
    [`${D4}T00:30:00Z`, () => s.close()],
  ];
  for (const [time, step] of timeline.sort(([a], [b]) => (a < b ? -1 : 1))) {
    s.moveTo(time);
    await step();
  }
  s.moveTo(`${D4}T01:00:00Z`);
  const stripe = new Stripe(API_KEY, { ...stripeConnection(s.server.url), maxNetworkRetries: 0 });
  const invoices = (await stripe.invoices.list({ customer })).data;
  const inPeriod = [...s.counted].filter(([key]) => {
    const [day, hour] = key.split(' ');
    const at = hourEventTimestamp(day!, Number(hour), 0);
    return at >= start && at < start + 2 * 86_400;
  });
  return { acme, customer, invoices, inPeriod: inPeriod.reduce((sum, [, n]) => sum + n, 0), all: [...s.counted.values()].reduce((a, b) => a + b, 0) };
}

describe('TALLY_STRIPE_WINDOW=hour', () => {
  it('bills a period starting at 15:00 UTC exactly the hours inside it, sending per hour only the hours that changed', async () => {
    const s = await scenario('hour');
    const { acme, invoices, inPeriod, all } = await periodFromThreePm(s);

    expect(invoices).toHaveLength(1);
    expect(invoices[0]!.status).toBe('open');
    expect(invoices[0]!.status_transitions.finalized_at).toBe(seconds(new Date(`${D3}T16:00:00Z`)));
    expect(inPeriod).toBeGreaterThan(0);
    expect(inPeriod).toBeLessThan(all);
    expect(invoices[0]!.lines.data.map((line) => line.quantity)).toEqual([inPeriod]);
    // One event per metric per hour with traffic, stamped at that hour; D1's close changed no hour, so it sent nothing.
    const events = s.requestEvents();
    expect(events.map((e) => [new Date(e.timestamp * 1000).toISOString(), Number(e.payload.value)])).toEqual(
      [...s.counted].map(([key, n]) => {
        const [day, hour] = key.split(' ');
        return [new Date(hourEventTimestamp(day!, Number(hour), 0) * 1000).toISOString(), n];
      }),
    );
    expect(s.server.events()).toHaveLength(2 * s.counted.size);
    // The meter's day summaries still sum a day's hours: reconcile compares closed days as before.
    const reconcile = captureIo();
    expect(await tallyCommand('stripe')(['reconcile', '--from', D1, '--to', D1], reconcile, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now)).toBe(0);
    // reconcile --invoices compares the invoice with the hours it holds: equal, exit 0.
    const invoicesCheck = captureIo();
    expect(await tallyCommand('stripe')(['reconcile', '--invoices', '--json', '--from', D1, '--to', D3], invoicesCheck, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now)).toBe(0);
    expect((JSON.parse(invoicesCheck.stdout) as { rows: unknown[] }).rows).toEqual([
      expect.objectContaining({ invoice: invoices[0]!.id, metric: 'requests', from: D1, to: D3, tally: inPeriod, meter: inPeriod, invoiced: inPeriod, difference: 0 }),
    ]);
    const status = captureIo();
    await tallyCommand('stripe')(['status', '--account', acme, '--from', D1, '--to', D1], status, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);
    expect(status.stdout).toMatch(new RegExp(`${acme}\\s+requests\\s+${D1} 16h\\s+open #1\\s+${s.counted.get(`${D1} 16`)}\\s+delivered`));
  });

  it('with day windows (the default) the same period bills whole days by their midnight, as before', async () => {
    const s = await scenario('day');
    const { invoices, inPeriod } = await periodFromThreePm(s);
    const days = (day: string, hours: number[], before = Number.POSITIVE_INFINITY) => hours.filter((h) => h < before).reduce((sum, h) => sum + (s.counted.get(`${day} ${h}`) ?? 0), 0);

    // D2 and D3 (their midnights are inside), D3 as received by finalization (12:00 and 14:00); D1's 16:00 on the period before.
    expect(invoices[0]!.lines.data.map((line) => line.quantity)).toEqual([days(D2, [3]) + days(D3, [12, 14])]);
    expect(invoices[0]!.lines.data[0]!.quantity).not.toBe(inPeriod);
    expect(s.requestEvents().every((e) => e.timestamp % 86_400 < 60)).toBe(true);
  });

  it('a late log after a day closed sends a revision of the hour it changed, and that hour alone', async () => {
    const s = await scenario('hour');
    const acme = uniqueId('acme');
    await s.sync().store.link({ account: acme, customer: 'cus_hourrev01', linkedAt: `${D1}T00:00:00Z` });
    for (const [time, hour, seed] of [[`${D1}T10:30:00Z`, 10, 1], [`${D1}T13:30:00Z`, 13, 2]] as const) {
      s.moveTo(time);
      await s.ingest(D1, hour, seed, acme);
      await s.sweep(acme);
    }
    s.moveTo(`${D4}T00:30:00Z`);
    await s.close();
    const afterClose = s.server.events().length;
    s.moveTo(`${D4}T05:00:00Z`);
    await s.ingest(D1, 20, 3, acme, 17);
    s.moveTo(`${D4}T05:30:00Z`);
    await s.close();

    const total = (await s.sync().closeStore.accountDay(acme, D1)).counters.requests!;
    expect(afterClose).toBe(4); // two hours x two metrics, all running totals: revision 1 changed no hour
    const revised = s.server.events().slice(afterClose);
    expect(revised.map((e) => [e.event_name, e.timestamp]).sort()).toEqual([
      ['cdn_bytes', hourEventTimestamp(D1, 20, 2)],
      ['cdn_requests', hourEventTimestamp(D1, 20, 2)],
    ]);
    expect(revised.find((e) => e.event_name === 'cdn_requests')!.payload.value).toBe(String(s.counted.get(`${D1} 20`)));
    expect(s.server.billedByDay('cdn_requests', 'cus_hourrev01')).toEqual({ [D1]: total });
    const records = await s.sync().store.records(acme, D1, D1);
    expect(records.filter((r) => r.metric === 'requests').map((r) => [r.hour, r.revision, r.running ?? 0, r.state]).sort()).toEqual([
      [10, 0, 1, 'delivered'],
      [13, 0, 1, 'delivered'],
      [20, 2, 0, 'delivered'],
    ]);
  });

  /** A one-day period from D1 15:00, its invoice finalized at D2 16:00; D1 16:00 sent running, then a log of D1 17:00 after D1 closed. */
  async function lateHour(s: Scenario, customer: string) {
    const acme = uniqueId('acme');
    // A one-day period from D1 15:00 to D2 15:00, finalized at D2 16:00.
    s.server.addSubscription({ customer, eventName: 'cdn_requests', start: seconds(new Date(`${D1}T15:00:00Z`)), periodSeconds: 86_400 });
    await s.sync().store.link({ account: acme, customer, linkedAt: `${D1}T00:00:00Z` });
    s.moveTo(`${D1}T16:30:00Z`);
    await s.ingest(D1, 16, 41, acme);
    await s.sweep(acme);
    s.moveTo(`${D4}T00:30:00Z`);
    await s.close();
    // A late log of D1 17:00 after finalization: revision 2 of that hour alone, late.
    s.moveTo(`${D4}T02:00:00Z`);
    await s.ingest(D1, 17, 42, acme, 13);
    s.moveTo(`${D4}T02:30:00Z`);
    await s.close();
    return acme;
  }

  it('an hour revised after its invoice was finalized is reported once, naming the hour, and reconcile --invoices finds it recorded', async () => {
    const webhooks = await createTestQueues(info, { visibilityTimeoutSeconds: 1, maxReceiveCount: 10 });
    const s = await scenario('hour', [], webhooks.queueUrl);
    const customer = 'cus_hourlate01';
    const acme = await lateHour(s, customer);

    const received = await testClients(info).sqs.send(new ReceiveMessageCommand({ QueueUrl: webhooks.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    const late = (received.Messages ?? []).map((m) => JSON.parse(m.Body!) as { type: string; data: Record<string, unknown> }).filter((e) => e.data.metric === 'requests');
    const invoice = s.server.invoices(customer)[0]!;
    const h16 = s.counted.get(`${D1} 16`)!;
    const h17 = s.counted.get(`${D1} 17`)!;
    expect(invoice.lines.data[0]!.quantity).toBe(h16);
    expect(late).toEqual([
      expect.objectContaining({ type: 'stripe.late_usage', data: expect.objectContaining({ account: acme, day: D1, hour: 17, revision: 2, invoice: invoice.id, billed: 0, total: h17, difference: h17, reason: 'invoice-finalized' }) }),
    ]);
    const records = (await s.sync().store.records(acme, D1, D1)).filter((r) => r.metric === 'requests');
    expect(records.map((r) => [r.hour, r.revision, r.state, r.invoice ?? null]).sort()).toEqual([
      [16, 0, 'delivered', null],
      [17, 2, 'invoice-finalized', invoice.id],
    ]);
    const reconcile = captureIo();
    expect(await tallyCommand('stripe')(['reconcile', '--invoices', '--json', '--from', D1, '--to', D2], reconcile, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now)).toBe(0);
    // The next period (D2 15:00 to D3 15:00, finalized too) has no usage: a row of zeros.
    expect((JSON.parse(reconcile.stdout) as { rows: { invoice: string }[] }).rows.find((row) => row.invoice === invoice.id)).toEqual(
      expect.objectContaining({ from: D1, to: D2, tally: h16 + h17, meter: h16 + h17, invoiced: h16, difference: h17, recordedLate: h17 }),
    );
  });

  it('with TALLY_STRIPE_LATE_USAGE=invoice-item, the late hour becomes one invoice item for that hour on the next invoice', async () => {
    const s = await scenario('hour', [], undefined, 'invoice-item');
    const customer = 'cus_hourlate02';
    await lateHour(s, customer);

    const items = s.server.invoiceItems(customer);
    const h17 = s.counted.get(`${D1} 17`)!;
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ quantity: h17, amount: 3 * h17, period: { start: hourEventTimestamp(D1, 17, 0), end: hourEventTimestamp(D1, 17, 0) + 3_599 } });
    expect(items[0]!.description).toContain(`requests of ${D1} 17:00 UTC`);
  });

  it('tally stripe push with day windows against hour meters refuses before writing anything; with hour windows it sends the hours', async () => {
    const s = await scenario('hour');
    const acme = uniqueId('acme');
    await s.sync().store.link({ account: acme, customer: 'cus_hourpush01', linkedAt: `${D1}T00:00:00Z` });
    s.moveTo(`${D1}T10:30:00Z`);
    await s.ingest(D1, 10, 51, acme);
    s.moveTo(`${D4}T00:30:00Z`);
    await closeOk(testCloser(s.env, s.now));
    // The operator's environment without TALLY_STRIPE_WINDOW: day windows, the default.
    const dayEnv = Object.fromEntries(Object.entries(s.stripeEnv).filter(([name]) => name !== 'TALLY_STRIPE_WINDOW'));

    const refused = captureIo();
    const refusedCode = await tallyCommand('stripe')(['push', '--account', acme], refused, { ...s.env, ...dayEnv }, process.cwd(), s.now);
    const afterRefusal = await s.sync().store.records(acme, D1, D1);
    const pushed = captureIo();
    const pushedCode = await tallyCommand('stripe')(['push', '--account', acme], pushed, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);

    expect(refusedCode).toBe(2);
    expect(refused.stderr).toContain('has event_time_window=hour but TALLY_STRIPE_WINDOW is day: set TALLY_STRIPE_WINDOW=hour');
    // Not 'as the sender has it' (tryout: after npm start was restarted with day windows, the sender had day too).
    expect(refused.stderr).toContain("set TALLY_STRIPE_WINDOW=hour, the meters' window, here and for the sender");
    expect(afterRefusal).toEqual([]);
    expect(pushedCode).toBe(0);
    expect(pushed.stdout).toMatch(new RegExp(`${acme}\\s+requests\\s+${D1} 10h\\s+1\\s+${s.counted.get(`${D1} 10`)}\\s+delivered`));
    expect(s.requestEvents().map((e) => [e.timestamp, Number(e.payload.value)])).toEqual([[hourEventTimestamp(D1, 10, 1), s.counted.get(`${D1} 10`)]]);
  });

  it('linking sends from the first whole hour of the customer\'s current period, never its hours before', async () => {
    const s = await scenario('hour');
    const acme = uniqueId('acme');
    const customer = 'cus_hourlink01';
    s.server.addSubscription({ customer, eventName: 'cdn_requests', start: seconds(new Date(`${D1}T14:20:00Z`)), periodSeconds: 2 * 86_400 });
    s.moveTo(`${D1}T16:30:00Z`);
    for (const [hour, seed] of [[10, 31], [14, 32], [15, 33], [16, 34]] as const) await s.ingest(D1, hour, seed, acme);
    const linked = await linkAccount(s.sync(), acme, customer);
    await s.sweep(acme);

    // The period starts at 14:20: hour 14's events (stamped 14:00) would count in the period before.
    expect(linked.window.from).toBe(D1);
    expect(await s.sync().store.linkOf(acme)).toMatchObject({ from: D1, fromTime: seconds(new Date(`${D1}T15:00:00Z`)) });
    expect(s.requestEvents().map((e) => [e.timestamp, Number(e.payload.value)])).toEqual([
      [hourEventTimestamp(D1, 15, 0), s.counted.get(`${D1} 15`)],
      [hourEventTimestamp(D1, 16, 0), s.counted.get(`${D1} 16`)],
    ]);
  });

  it('a closed day whose counters moved past the revision being planned waits for the revision that holds them', async () => {
    const s = await scenario('hour');
    const acme = uniqueId('acme');
    await s.sync().store.link({ account: acme, customer: 'cus_hourwait01', linkedAt: `${D1}T00:00:00Z` });
    s.moveTo(`${D1}T10:30:00Z`);
    await s.ingest(D1, 10, 61, acme);
    await s.sweep(acme);
    s.moveTo(`${D4}T00:30:00Z`);
    const first = await closeOk(testCloser(s.env, s.now));
    const revision1 = first.days.find((d) => d.day === D1)!.written![0]!.revision;
    // A late log lands between the close and the sender's handling of revision 1.
    s.moveTo(`${D4}T00:40:00Z`);
    await s.ingest(D1, 20, 62, acme, 11);
    await handleStripeMessage(s.sync(), { day: D1, revision: revision1 });
    const afterRevision1 = (await s.sync().store.records(acme, D1, D1)).filter((r) => r.revision > 0);
    s.moveTo(`${D4}T01:30:00Z`);
    await s.close();

    expect(revision1).toBe(1);
    expect(afterRevision1).toEqual([]);
    const records = (await s.sync().store.records(acme, D1, D1)).filter((r) => r.metric === 'requests');
    expect(records.map((r) => [r.hour, r.revision, r.value]).sort()).toEqual([
      [10, 0, s.counted.get(`${D1} 10`)],
      [20, 2, s.counted.get(`${D1} 20`)],
    ]);
    expect(s.server.billedByDay('cdn_requests', 'cus_hourwait01')).toEqual({ [D1]: s.counted.get(`${D1} 10`)! + s.counted.get(`${D1} 20`)! });
  });

  it('a lost answer is retried with the same identifier: Stripe keeps one event per hour, nothing is billed twice', async () => {
    const s = await scenario('hour');
    const acme = uniqueId('acme');
    await s.sync().store.link({ account: acme, customer: 'cus_hourlost01', linkedAt: `${D1}T00:00:00Z` });
    s.moveTo(`${D1}T09:30:00Z`);
    await s.ingest(D1, 8, 7, acme);
    await s.ingest(D1, 9, 8, acme);
    // Stripe records the first event, then its answer is lost (500 after recording).
    s.server.fail({ status: 500, afterRecording: true });
    const first = await s.sweep(acme);
    // The same sweep message delivered again: nothing new to plan or send.
    const again = await s.sweep(acme);

    const identifiers = s.server.events().map((e) => e.identifier);
    expect(new Set(identifiers).size).toBe(identifiers.length);
    expect(identifiers).toHaveLength(4);
    expect(first.outcomes.map((o) => o.outcome).sort()).toEqual(['already-existed', 'delivered', 'delivered', 'delivered']);
    expect(again.outcomes).toEqual([]);
    expect(s.server.billedByDay('cdn_requests', 'cus_hourlost01')).toEqual({ [D1]: (s.counted.get(`${D1} 8`) ?? 0) + (s.counted.get(`${D1} 9`) ?? 0) });
  });

  it('a day counted before Tally kept hours is sent whole, its hourless part in hour 00 with a warning, never lost', async () => {
    const lines: string[] = [];
    const s = await scenario('hour', lines);
    const acme = uniqueId('acme');
    await s.sync().store.link({ account: acme, customer: 'cus_hourold01', linkedAt: `${D1}T00:00:00Z` });
    // Two shards of D1: one from before hours (7 requests, no hour attributes), one with 5 requests in hour 03.
    const { dynamodb } = testClients(info);
    const tableName = readConfig(s.env).tableName;
    const put = async (shard: number, requests: number, hours: Record<number, Record<string, number>>) => {
      const key = usageKey({ accountId: acme, day: D1, shard });
      const attributes = Object.fromEntries(Object.entries(hourSumsToAttributes(hours)).map(([name, n]) => [name, { N: String(n) }]));
      await dynamodb.send(new PutItemCommand({ TableName: tableName, Item: { PK: { S: key.PK }, SK: { S: key.SK }, requests: { N: String(requests) }, bytes: { N: String(requests * 10) }, ...attributes } }));
    };
    await put(0, 7, {});
    await put(1, 5, { 3: { requests: 5, bytes: 50 } });
    s.moveTo(`${D1}T12:00:00Z`);
    await s.sweep(acme);

    expect(s.requestEvents().map((e) => [e.timestamp, e.payload.value])).toEqual([
      [hourEventTimestamp(D1, 0, 0), '7'],
      [hourEventTimestamp(D1, 3, 0), '5'],
    ]);
    expect(s.server.billedByDay('cdn_requests', 'cus_hourold01')).toEqual({ [D1]: 12 });
    expect(lines.filter((line) => line.includes('usage without an hour sent in hour 00')).map((line) => JSON.parse(line) as { metric: string; amount: number })).toEqual([
      expect.objectContaining({ metric: 'requests', amount: 7 }),
      expect.objectContaining({ metric: 'bytes', amount: 70 }),
    ]);
  });
});

describe('a sender whose TALLY_STRIPE_WINDOW is not its meters\' window (tryout: npm start restarted with day windows)', () => {
  it('sends nothing to a meter of the other window: the records fail naming both windows, and the hour sender still sends the hours', async () => {
    const logLines: string[] = [];
    const s = await scenario('hour', logLines);
    const acme = uniqueId('acme');
    await s.sync().store.link({ account: acme, customer: 'cus_hourmix01', linkedAt: `${D1}T00:00:00Z` });
    s.moveTo(`${D1}T10:30:00Z`);
    await s.ingest(D1, 10, 61, acme);
    await s.ingest(D1, 9, 62, acme);
    const daySync = createStripeSyncDeps(
      { tally: readConfig(s.env), stripe: readStripeConfig({ ...s.stripeEnv, TALLY_STRIPE_WINDOW: 'day' }) },
      testClients(info),
      API_KEY,
      jsonLog((line) => void logLines.push(line), 'warn'),
      { clock: s.now, retry: { attempts: 2, baseMs: 5, maxMs: 10 } },
    );

    const dayRun = await handleStripeMessage(daySync, { account: acme, running: true });
    const eventsAfterDay = s.requestEvents().length;
    const dayRecords = (await s.sync().store.records(acme, D1, D1)).filter((r) => r.hour === undefined);
    await s.sweep(acme);

    expect(eventsAfterDay).toBe(0);
    expect(dayRun.outcomes.map((o) => o.outcome)).toEqual(['failed', 'failed']);
    expect(dayRecords.map((r) => [r.state, r.error])).toEqual([
      ['failed', expect.stringContaining('event_time_window=hour but this event is for a day window (TALLY_STRIPE_WINDOW=day)')],
      ['failed', expect.stringContaining('event_time_window=hour but this event is for a day window (TALLY_STRIPE_WINDOW=day)')],
    ]);
    expect(logLines.join('\n')).toContain('stripe meter event failed');
    expect(s.requestEvents().map((e) => [e.timestamp, Number(e.payload.value)]).sort()).toEqual([
      [hourEventTimestamp(D1, 9, 0), s.counted.get(`${D1} 9`)],
      [hourEventTimestamp(D1, 10, 0), s.counted.get(`${D1} 10`)],
    ]);
  });
});

describe('reconcile after a link from 14:20 UTC (tryout: false drift for what the link never sends)', () => {
  it('compares only what the link sends: the first day from its first hour, no earlier day, no invoice of a period before the link', async () => {
    const s = await scenario('hour');
    const acme = uniqueId('acme');
    const customer = 'cus_hourrec01';
    const D5 = '2026-11-05';
    s.server.addSubscription({ customer, eventName: 'cdn_requests', start: seconds(new Date(`${D1}T14:20:00Z`)), periodSeconds: 86_400 });
    s.moveTo(`${D1}T16:30:00Z`);
    await s.ingest(D1, 16, 71, acme);
    s.moveTo(`${D2}T10:30:00Z`);
    await s.ingest(D2, 10, 72, acme);
    s.moveTo(`${D2}T16:30:00Z`);
    await s.ingest(D2, 16, 73, acme);
    // The current period started at D2 14:20: the link sends from D2 15:00.
    await linkAccount(s.sync(), acme, customer);
    await s.sweep(acme);
    s.moveTo(`${D3}T03:30:00Z`);
    await s.ingest(D3, 3, 74, acme);
    await s.sweep(acme);
    s.moveTo(`${D5}T00:30:00Z`);
    await s.close();
    const env = { ...s.env, ...s.stripeEnv };

    const days = captureIo();
    const daysCode = await tallyCommand('stripe')(['reconcile', '--from', D1, '--to', D3], days, env, process.cwd(), s.now);
    const invoices = captureIo();
    const invoicesCode = await tallyCommand('stripe')(['reconcile', '--invoices', '--json', '--from', D1, '--to', D3], invoices, env, process.cwd(), s.now);

    expect(s.requestEvents().map((e) => Number(e.payload.value))).toEqual([s.counted.get(`${D2} 16`), s.counted.get(`${D3} 3`)]);
    expect({ code: daysCode, out: days.stdout }).toEqual({ code: 0, out: expect.stringContaining('0 differ') });
    expect(invoicesCode).toBe(0);
    const rows = (JSON.parse(invoices.stdout) as { rows: { invoice: string; tally: number; invoiced: number }[] }).rows;
    const before = s.server.invoices(customer).find((invoice) => invoice.period_start === seconds(new Date(`${D1}T14:20:00Z`)))!;
    const linked = s.server.invoices(customer).find((invoice) => invoice.period_start === seconds(new Date(`${D2}T14:20:00Z`)))!;
    const inPeriod = s.counted.get(`${D2} 16`)! + s.counted.get(`${D3} 3`)!;
    expect(before.status).toBe('open');
    expect(rows.map((row) => row.invoice)).not.toContain(before.id);
    expect(rows.find((row) => row.invoice === linked.id)).toMatchObject({ tally: inPeriod, invoiced: inPeriod });
  });
});

describe('tally stripe check with a one-minute running interval (tryout: "finalized 1.0 h ...; running totals need 1.0 h")', () => {
  it('prints a delay a minute short of the one needed as a different figure', async () => {
    const s = await scenario('hour');
    const customer = 'cus_hourcheck01';
    s.server.addSubscription({ customer, eventName: 'cdn_requests', start: seconds(new Date(`${D1}T14:20:00Z`)), periodSeconds: 86_400 });
    s.moveTo(`${D3}T00:00:00Z`);
    const meters = Object.fromEntries((await s.sync().api.meters()).map((m) => [m.eventName === 'cdn_requests' ? 'requests' : 'bytes', m.id]));

    const check = await checkCustomer(s.sync().api, { account: 'acme', customer, linkedAt: `${D1}T00:00:00Z` }, { requests: meters.requests! }, 1, 48);

    expect(check.finalization).toMatchObject({ delaySeconds: 3_600, neededSeconds: 3_660 });
    expect(check.problems).toEqual([expect.stringContaining('was finalized 1 h after its period ended; running totals need 1 h 1 min (every 1 min + 60 min of log delivery): set Stripe\'s invoice finalization grace period to at least 1 h 1 min')]);
  });
});

describe('tally stripe link with hour windows (tryout: "queued for closed days 2026-11-26..2026-11-26" for a link sending from 15:00)', () => {
  it('says the first hour it sends', async () => {
    const s = await scenario('hour');
    const acme = uniqueId('acme');
    const customer = 'cus_hourlinkcli1';
    s.server.addSubscription({ customer, eventName: 'cdn_requests', start: seconds(new Date(`${D1}T14:20:00Z`)), periodSeconds: 4 * 86_400 });
    s.moveTo(`${D1}T16:30:00Z`);
    await s.ingest(D1, 16, 81, acme);
    s.moveTo(`${D4}T00:30:00Z`);
    await closeOk(testCloser(s.env, s.now));

    const io = captureIo();
    const code = await tallyCommand('stripe')(['link', '--account', acme, '--customer', customer], io, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);

    expect(code).toBe(0);
    expect(io.stdout).toContain(`2 meter event(s) queued for closed days ${D1} from 15:00 UTC..${D1}`);
  });
});

describe('reconcile --invoices after a switch from day to hour windows (note3: day records left from a switch still counted)', () => {
  it("leaves a day held on the day meters out of the hour meter's figure; once sent by the operator, compares its hours with their late usage alone, never the day records'", async () => {
    const s = await scenario('hour');
    const acme = uniqueId('acme');
    const customer = 'cus_hourswitch01';
    // The day meters Tally sent to before the switch; the subscription bills both meters while switching.
    s.server.addMeter('cdn_requests_day', { event_time_window: 'day' });
    s.server.addMeter('cdn_bytes_day', { event_time_window: 'day' });
    s.server.addSubscription({ customer, eventName: 'cdn_requests', alsoEventNames: ['cdn_requests_day'], start: seconds(new Date(`${D1}T00:00:00Z`)), periodSeconds: 86_400 });
    await s.sync().store.link({ account: acme, customer, linkedAt: `${D1}T00:00:00Z` });
    const daySync = createStripeSyncDeps(
      { tally: readConfig(s.env), stripe: readStripeConfig({ ...s.stripeEnv, TALLY_STRIPE_WINDOW: 'day', TALLY_STRIPE_METERS: '{"requests":"cdn_requests_day","bytes":"cdn_bytes_day"}' }) },
      testClients(info),
      API_KEY,
      jsonLog(() => undefined, 'warn'),
      { clock: s.now, retry: { attempts: 2, baseMs: 5, maxMs: 10 } },
    );
    // Day windows: D1's running total, then a late log after D1's invoice was finalized (D2 01:00): a day record noted late.
    s.moveTo(`${D1}T10:30:00Z`);
    await s.ingest(D1, 10, 91, acme);
    await handleStripeMessage(daySync, { account: acme, running: true });
    s.moveTo(`${D2}T05:00:00Z`);
    await s.ingest(D1, 20, 92, acme, 13);
    await handleStripeMessage(daySync, { account: acme, running: true });
    // The operator switches to hour windows: D1 is on the day meters, so its hours are held.
    s.moveTo(`${D2}T06:00:00Z`);
    await s.sweep(acme);
    const env = { ...s.env, ...s.stripeEnv };
    const reconcile = async () => {
      const io = captureIo();
      const code = await tallyCommand('stripe')(['reconcile', '--invoices', '--json', '--from', D1, '--to', D1], io, env, process.cwd(), s.now);
      return { code, rows: (JSON.parse(io.stdout) as { rows: Record<string, unknown>[] }).rows };
    };
    const invoice = s.server.invoices(customer)[0]!;
    const total = s.counted.get(`${D1} 10`)! + s.counted.get(`${D1} 20`)!;

    const whileHeld = await reconcile();
    const heldHours = (await s.sync().store.records(acme, D1, D1)).filter((r) => r.metric === 'requests' && r.hour !== undefined);
    expect(heldHours.map((r) => [r.hour, r.state, r.invoice])).toEqual([
      [10, 'failed', undefined],
      [20, 'failed', undefined],
    ]);
    expect(whileHeld.rows).toEqual([expect.objectContaining({ invoice: invoice.id, metric: 'requests', tally: 0, meter: 0, invoiced: 0, difference: 0, recordedLate: 0, held: total })]);
    expect(whileHeld.code).toBe(0);

    // The operator sends the held hours (tally stripe push --retry-failed): after the invoice, so late too.
    expect(await tallyCommand('stripe')(['push', '--retry-failed', '--from', D1, '--to', D1], captureIo(), env, process.cwd(), s.now)).toBe(0);
    const sent = await reconcile();

    const records = (await s.sync().store.records(acme, D1, D1)).filter((r) => r.metric === 'requests');
    // The day record left from the switch holds the same invoice (its day line) and a late difference of its own.
    expect(records.filter((r) => r.hour === undefined && r.invoice === invoice.id).map((r) => [r.eventName, r.value - r.billed!])).toEqual([['cdn_requests_day', s.counted.get(`${D1} 20`)]]);
    expect(records.filter((r) => r.hour !== undefined).map((r) => [r.hour, r.invoice, r.billed])).toEqual([
      [10, invoice.id, 0],
      [20, invoice.id, 0],
    ]);
    expect(sent.rows).toEqual([expect.objectContaining({ invoice: invoice.id, metric: 'requests', tally: total, meter: total, invoiced: 0, difference: total, recordedLate: total, held: 0 })]);
    expect(sent.code).toBe(0);
  });
});

/** Removes the hour attributes of `account`'s shards of `day`: the day reads as counted before Tally kept hours. */
async function forgetShardHours(s: Scenario, account: string, day: string): Promise<void> {
  const { dynamodb } = testClients(info);
  const tableName = readConfig(s.env).tableName;
  const page = await dynamodb.send(new QueryCommand({ TableName: tableName, KeyConditionExpression: 'PK = :pk AND begins_with(SK, :day)', ExpressionAttributeValues: { ':pk': { S: usageKey({ accountId: account, day, shard: 0 }).PK }, ':day': { S: `DAY#${day}#S#` } }, ConsistentRead: true }));
  for (const item of page.Items ?? []) {
    const names = Object.keys(item).filter(isHourAttribute);
    if (names.length === 0) continue;
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: { PK: item.PK!, SK: item.SK! },
        UpdateExpression: `REMOVE ${names.map((_, i) => `#h${i}`).join(', ')}`,
        ExpressionAttributeNames: Object.fromEntries(names.map((name, i) => [`#h${i}`, name])),
      }),
    );
  }
}

/**
 * What the hour meter bills `customer` for `day` after each event it received, in receipt order (Stripe keeps the
 * latest event of each hour window): the day's billed total at every step of the senders' runs.
 */
function billedAfterEachEvent(s: Scenario, customer: string, day: string, eventName = 'cdn_requests'): number[] {
  const kept = new Map<number, number>();
  const out: number[] = [];
  for (const event of s.server.events().filter((e) => e.event_name === eventName)) {
    if (event.payload.stripe_customer_id !== customer || new Date(event.timestamp * 1000).toISOString().slice(0, 10) !== day) continue;
    kept.set(Math.floor(event.timestamp / 3_600), Number(event.payload.value));
    out.push([...kept.values()].reduce((a, b) => a + b, 0));
  }
  return out;
}

/**
 * D1 counted before hours (hours 10 and 13, shards without hour attributes; logs generated from `seed` and `seed + 1`),
 * linked to `customer`; `sweep`: a running sweep at 14:00 sends it all in hour 00.
 */
async function dayBeforeHours(s: Scenario, customer: string, sweep: boolean, seed = 101) {
  const acme = uniqueId('acme');
  await s.sync().store.link({ account: acme, customer, linkedAt: `${D1}T00:00:00Z` });
  s.moveTo(`${D1}T13:30:00Z`);
  await s.ingest(D1, 10, seed, acme);
  await s.ingest(D1, 13, seed + 1, acme, 23);
  await forgetShardHours(s, acme, D1);
  s.moveTo(`${D1}T14:00:00Z`);
  if (sweep) await s.sweep(acme);
  return acme;
}

/** `tally backfill --hours` of D1 for `acme`, which must succeed without a word on stderr. */
async function backfill(s: Scenario, acme: string) {
  const io = captureIo();
  const code = await tallyCommand('backfill')(['--hours', '--from', D1, '--to', D1, '--account', acme], io, { ...s.env, TALLY_LOG_BUCKET: info.bucket }, process.cwd(), s.now);
  expect({ code, err: io.stderr }).toEqual({ code: 0, err: '' });
}

describe('tally backfill --hours of a day already sent in hour 00 (note3: a later backfill did not re-split the day)', () => {
  it.each([
    ['swept while open (hour 00 holds a running total)', true, 0],
    ['sent first by its closed revision (hour 00 holds revision 1)', false, 1],
  ])('a closed day %s: the next sender run sends hour 00 at its own total and the other hours at theirs, never billing the day twice', async (_, sweep, step) => {
    const s = await scenario('hour');
    const customer = `cus_hourresplit${sweep ? 'a' : 'b'}`;
    const acme = await dayBeforeHours(s, customer, sweep);
    const total = s.counted.get(`${D1} 10`)! + s.counted.get(`${D1} 13`)!;
    s.moveTo(`${D4}T00:30:00Z`);
    await s.close();
    const beforeBackfill = s.requestEvents().map((e) => [e.timestamp, Number(e.payload.value)]);
    s.moveTo(`${D4}T01:00:00Z`);
    await backfill(s, acme);
    // The sender's next run for the account (tally stripe push, an adjustment, npm start's sweep).
    await handleStripeMessage(s.sync(), { account: acme });
    await handleStripeMessage(s.sync(), { account: acme });

    expect(beforeBackfill).toEqual([[hourEventTimestamp(D1, 0, step), total]]);
    const kept = new Map<number, number>();
    for (const e of s.requestEvents()) kept.set(Math.floor(e.timestamp / 3_600) % 24, Number(e.payload.value));
    expect(Object.fromEntries(kept)).toEqual({ 0: 0, 10: s.counted.get(`${D1} 10`), 13: s.counted.get(`${D1} 13`) });
    expect(s.server.billedByDay('cdn_requests', customer)).toEqual({ [D1]: total });
    expect(Math.max(...billedAfterEachEvent(s, customer, D1))).toBe(total);
  });

  it("a closed day whose hour 00 cannot be lowered yet (Stripe failing): the other hours wait for it, the day is never billed above its total", async () => {
    const s = await scenario('hour');
    const customer = 'cus_hourresplitc';
    const acme = await dayBeforeHours(s, customer, false);
    s.moveTo(`${D4}T00:30:00Z`);
    await s.close();
    s.moveTo(`${D4}T01:00:00Z`);
    await backfill(s, acme);
    const { counters } = await s.sync().closeStore.accountDay(acme, D1);
    // One group at a time: the first metric's hour 00 gets every failure of the run (4 attempts).
    const sync = { ...s.sync(), concurrency: 1 };
    s.server.fail({ status: 500 }, 4);
    const failing = await handleStripeMessage(sync, { account: acme });
    const afterFailing = { requests: billedAfterEachEvent(s, customer, D1, 'cdn_requests'), bytes: billedAfterEachEvent(s, customer, D1, 'cdn_bytes') };
    const later = await handleStripeMessage(sync, { account: acme });

    expect(failing.left).toBeGreaterThan(0);
    for (const [metric, eventName] of [['requests', 'cdn_requests'], ['bytes', 'cdn_bytes']] as const) {
      expect({ metric, max: Math.max(...afterFailing[metric]) }).toEqual({ metric, max: counters[metric] });
      expect({ metric, max: Math.max(...billedAfterEachEvent(s, customer, D1, eventName)) }).toEqual({ metric, max: counters[metric] });
      expect(s.server.billedByDay(eventName, customer)).toEqual({ [D1]: counters[metric] });
    }
    expect(later.left).toBe(0);
  });

  it("a plan moving usage back into hour 00, cut short after its first write (the sender died): another sender never bills the day above its total (chaos seed 1: 295 for 170)", async () => {
    const s = await scenario('hour');
    const customer = 'cus_hourresplitd';
    const acme = await dayBeforeHours(s, customer, true);
    s.moveTo(`${D1}T15:00:00Z`);
    await backfill(s, acme);
    // Re-split while open: hour 00 lowered, hours 10 and 13 raised.
    await s.sweep(acme);
    s.moveTo(`${D4}T00:30:00Z`);
    await s.close();
    // A late log of hour 20 counted without hours (a consumer of a version that kept none, mid-deploy): the backfilled
    // hours no longer cover the day, the usage without an hour goes back to hour 00.
    s.moveTo(`${D4}T02:00:00Z`);
    await s.ingest(D1, 20, 103, acme, 9);
    await forgetShardHours(s, acme, D1);
    s.moveTo(`${D4}T02:30:00Z`);
    const report = await closeOk(testCloser(s.env, s.now));
    const revision = report.days.find((d) => d.day === D1)!.written![0]!.revision;
    const total = s.counted.get(`${D1} 10`)! + s.counted.get(`${D1} 13`)! + s.counted.get(`${D1} 20`)!;
    // The revision's sender dies after its first outbox write (SDK middleware; the table is real): its plan is cut short.
    const dying = testClients(info).dynamodb;
    let outboxWrites = 0;
    dying.middlewareStack.add(
      (next, context) => async (args) => {
        const item = (args as unknown as { input: { Item?: { PK?: { S?: string } } } }).input.Item;
        if (context.commandName === 'PutItemCommand' && item?.PK?.S?.startsWith('STRIPE#OUT#') === true && ++outboxWrites > 1) throw new Error('the sender died');
        return next(args);
      },
      { step: 'initialize', name: 'dieAfterFirstOutboxWrite' },
    );
    await expect(handleStripeMessage({ ...s.sync(), store: new DynamoStripeStore({ client: dying, tableName: readConfig(s.env).tableName }) }, { day: D1, revision })).rejects.toThrow('the sender died');
    // Another sender's run for the account (the closer's hourly hand-off) sends what the plan holds.
    await handleStripeMessage(s.sync(), { account: acme, sendOnly: true });
    const afterCutShort = Math.max(...billedAfterEachEvent(s, customer, D1));
    // The message comes back: the plan is completed, the day billed exactly its total.
    await handleStripeMessage(s.sync(), { day: D1, revision });

    expect(outboxWrites).toBe(2);
    // Before: hour 00's raise was the plan's first write, sent beside hours 10 and 13 (126 billed for 72).
    expect(afterCutShort).toBeLessThanOrEqual(total);
    expect(Math.max(...billedAfterEachEvent(s, customer, D1))).toBe(total);
    expect(s.server.billedByDay('cdn_requests', customer)).toEqual({ [D1]: total });
  });

  it('an open day: the next sweep re-splits it the same way', async () => {
    const s = await scenario('hour');
    const customer = 'cus_hourresplit2';
    const acme = await dayBeforeHours(s, customer, true);
    const total = s.counted.get(`${D1} 10`)! + s.counted.get(`${D1} 13`)!;
    s.moveTo(`${D1}T15:00:00Z`);
    await backfill(s, acme);
    await s.sweep(acme);

    const kept = new Map<number, number>();
    for (const e of s.requestEvents()) kept.set(Math.floor(e.timestamp / 3_600) % 24, Number(e.payload.value));
    expect(Object.fromEntries(kept)).toEqual({ 0: 0, 10: s.counted.get(`${D1} 10`), 13: s.counted.get(`${D1} 13`) });
    expect(s.server.billedByDay('cdn_requests', customer)).toEqual({ [D1]: total });
    expect(Math.max(...billedAfterEachEvent(s, customer, D1))).toBe(total);
  });
});

describe('a credit larger than hour 00 (tally adjust with a negative delta) under hour windows', () => {
  it("bills the day's billable total, not its hours with hour 00 cut at 0 (tryout by reading: 63 billed for 13), and reconcile --invoices compares that", async () => {
    const s = await scenario('hour');
    const acme = uniqueId('acme');
    const customer = 'cus_hourcredit01';
    s.server.addSubscription({ customer, eventName: 'cdn_requests', start: seconds(new Date(`${D1}T00:00:00Z`)), periodSeconds: 2 * 86_400 });
    await s.sync().store.link({ account: acme, customer, linkedAt: `${D1}T00:00:00Z` });
    s.moveTo(`${D1}T13:30:00Z`);
    await s.ingest(D1, 10, 111, acme);
    await s.ingest(D1, 13, 112, acme, 23);
    await s.sweep(acme);
    const counted = s.counted.get(`${D1} 10`)! + s.counted.get(`${D1} 13`)!;
    const credit = counted - 13;
    s.moveTo(`${D1}T14:00:00Z`);
    const adjust = captureIo();
    expect(await tallyCommand('adjust')(['--account', acme, '--day', D1, '--metric', 'requests', '--delta', String(-credit), '--reason', 'outage credit', '--id', 'CN-1'], adjust, s.env, process.cwd(), s.now)).toBe(0);
    await s.sweep(acme);
    s.moveTo(`${D4}T00:30:00Z`);
    await s.close();
    s.moveTo(`${D4}T01:00:00Z`);
    await handleStripeMessage(s.sync(), { account: acme });
    const invoices = captureIo();
    const code = await tallyCommand('stripe')(['reconcile', '--invoices', '--json', '--from', D1, '--to', D2], invoices, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);

    expect(s.server.billedByDay('cdn_requests', customer)).toEqual({ [D1]: 13 });
    expect(Math.max(...billedAfterEachEvent(s, customer, D1))).toBe(counted);
    expect(code).toBe(0);
    expect((JSON.parse(invoices.stdout) as { rows: Record<string, unknown>[] }).rows).toEqual([expect.objectContaining({ metric: 'requests', tally: 13, meter: 13, invoiced: 13, difference: 0 })]);
  });
});

describe('reconcile --invoices of a link made with --from inside a period', () => {
  it.each(['hour', 'day'] as const)('with %s windows compares the invoice with what the link sends, from its first day, not the days of the period before it', async (window) => {
    const s = await scenario(window);
    const acme = uniqueId('acme');
    const customer = `cus_fromlink${window}`;
    // A three-day period from D1 00:00, finalized at D4 01:00; the link sends from D2 (tally stripe link --from D2).
    s.server.addSubscription({ customer, eventName: 'cdn_requests', start: seconds(new Date(`${D1}T00:00:00Z`)), periodSeconds: 3 * 86_400 });
    s.moveTo(`${D1}T10:30:00Z`);
    await s.ingest(D1, 10, 121, acme);
    s.moveTo(`${D2}T10:30:00Z`);
    await s.ingest(D2, 10, 122, acme, 19);
    await linkAccount(s.sync(), acme, customer, { from: D2 });
    await s.sweep(acme);
    s.moveTo(`${D4}T01:30:00Z`);
    const io = captureIo();
    const code = await tallyCommand('stripe')(['reconcile', '--invoices', '--json', '--from', D1, '--to', D3], io, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);

    const sent = s.counted.get(`${D2} 10`)!;
    expect(s.requestEvents().map((e) => Number(e.payload.value))).toEqual([sent]);
    expect((JSON.parse(io.stdout) as { rows: Record<string, unknown>[] }).rows).toEqual([expect.objectContaining({ metric: 'requests', from: D2, tally: sent, meter: sent, invoiced: sent, difference: 0 })]);
    expect(code).toBe(0);
  });
});

describe('tally backfill --hours of a day whose invoice is finalized (late-usage rules per hour)', () => {
  it('reports each moved hour late, bills their differences as invoice items that add up to 0, and reconcile --invoices finds them recorded', async () => {
    const webhooks = await createTestQueues(info, { visibilityTimeoutSeconds: 1, maxReceiveCount: 10 });
    const s = await scenario('hour', [], webhooks.queueUrl, 'invoice-item');
    const customer = 'cus_hourresplitf';
    // A one-day period from D1 00:00, finalized at D2 01:00.
    s.server.addSubscription({ customer, eventName: 'cdn_requests', start: seconds(new Date(`${D1}T00:00:00Z`)), periodSeconds: 86_400 });
    const acme = await dayBeforeHours(s, customer, true, 131);
    s.moveTo(`${D4}T00:30:00Z`);
    await s.close();
    s.moveTo(`${D4}T01:00:00Z`);
    await backfill(s, acme);
    await handleStripeMessage(s.sync(), { account: acme });
    const reconcile = captureIo();
    const code = await tallyCommand('stripe')(['reconcile', '--invoices', '--json', '--from', D1, '--to', D1], reconcile, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);

    const h10 = s.counted.get(`${D1} 10`)!;
    const h13 = s.counted.get(`${D1} 13`)!;
    const invoice = s.server.invoices(customer)[0]!;
    expect(invoice.lines.data[0]!.quantity).toBe(h10 + h13);
    const received = await testClients(info).sqs.send(new ReceiveMessageCommand({ QueueUrl: webhooks.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    const late = (received.Messages ?? []).map((m) => (JSON.parse(m.Body!) as { data: { metric: string; hour: number; difference: number } }).data).filter((d) => d.metric === 'requests');
    expect(late.map((d) => [d.hour, d.difference]).sort((a, b) => a[0]! - b[0]!)).toEqual([[0, -(h10 + h13)], [10, h10], [13, h13]]);
    const items = s.server.invoiceItems(customer);
    expect(items.map((item) => item.amount).reduce((a, b) => a + b, 0)).toBe(0);
    expect(Math.max(...billedAfterEachEvent(s, customer, D1))).toBe(h10 + h13);
    expect(s.server.billedByDay('cdn_requests', customer)).toEqual({ [D1]: h10 + h13 });
    expect((JSON.parse(reconcile.stdout) as { rows: Record<string, unknown>[] }).rows).toEqual([expect.objectContaining({ metric: 'requests', tally: h10 + h13, invoiced: h10 + h13, difference: 0, recordedLate: 0 })]);
    expect(code).toBe(0);
  });
});

describe('switching windows (defect: after TALLY_STRIPE_WINDOW changed, days already on the old meters went to the new ones too)', () => {
  it.each([
    ['day', 'hour'],
    ['hour', 'day'],
  ] as const)('from %s to %s windows: a day of a finalized period already on the old meters is held (failed, visible in status), never billed twice; push --retry-failed sends it', async (before, after) => {
    const logLines: string[] = [];
    // The new window's meters are Tally's (cdn_requests, cdn_bytes); the old ones keep their own names.
    const s = await scenario(after, logLines);
    s.server.addMeter('cdn_requests_old', { event_time_window: before });
    s.server.addMeter('cdn_bytes_old', { event_time_window: before });
    const acme = uniqueId('acme');
    const customer = `cus_switch${before}${after}`;
    // The subscription bills both meters while switching (the old price not removed yet); daily periods, so D1's invoice is finalized by the switch.
    s.server.addSubscription({ customer, eventName: 'cdn_requests', alsoEventNames: ['cdn_requests_old'], start: seconds(new Date(`${D1}T00:00:00Z`)), periodSeconds: 86_400 });
    await s.sync().store.link({ account: acme, customer, linkedAt: `${D1}T00:00:00Z` });
    const oldEnv = { ...s.stripeEnv, TALLY_STRIPE_WINDOW: before, TALLY_STRIPE_METERS: '{"requests":"cdn_requests_old","bytes":"cdn_bytes_old"}' };
    const oldSync = createStripeSyncDeps({ tally: readConfig(s.env), stripe: readStripeConfig(oldEnv) }, testClients(info), API_KEY, jsonLog((line) => void logLines.push(line), 'warn'), { clock: s.now, retry: { attempts: 2, baseMs: 5, maxMs: 10 } });
    const billed = () => (s.server.billedByDay('cdn_requests', customer)[D1] ?? 0) + (s.server.billedByDay('cdn_requests_old', customer)[D1] ?? 0);
    const billedAfterEachRun: number[] = [];
    const run = async (sender: Promise<unknown>) => {
      await sender;
      billedAfterEachRun.push(billed());
    };

    // Before the switch: D1's running total, then its closed revision, on the old meters.
    s.moveTo(`${D1}T10:30:00Z`);
    await s.ingest(D1, 10, 141, acme);
    await run(handleStripeMessage(oldSync, { account: acme, running: true }));
    s.moveTo(`${D4}T00:30:00Z`);
    for (const day of (await closeOk(testCloser(s.env, s.now))).days) for (const { revision } of day.written ?? []) await run(handleStripeMessage(oldSync, { day: day.day, revision }));
    const onOldMeters = s.counted.get(`${D1} 10`)!;
    expect(billed()).toBe(onOldMeters);

    // The operator switches: the sender plans the account's closed days (tally stripe link / push / an adjustment's message) ...
    s.moveTo(`${D4}T01:00:00Z`);
    const switched = await handleStripeMessage(s.sync(), { account: acme });
    billedAfterEachRun.push(billed());
    // ... and a late log of D1 gets a revision, planned in the new window.
    s.moveTo(`${D4}T05:00:00Z`);
    await s.ingest(D1, 20, 142, acme, 13);
    s.moveTo(`${D4}T05:30:00Z`);
    await s.close();
    billedAfterEachRun.push(billed());
    const total = onOldMeters + s.counted.get(`${D1} 20`)!;

    // Never billed twice at any run: the old meters keep the day, the new ones get nothing of it.
    expect(billedAfterEachRun).toEqual(billedAfterEachRun.map(() => onOldMeters));
    expect(switched.outcomes.filter((o) => o.metric === 'requests').map((o) => o.outcome)).toEqual(['failed']);
    expect(s.requestEvents()).toEqual([]);
    expect(logLines.join('\n')).toContain('stripe meter event failed');
    const status = captureIo();
    const newEnv = { ...s.env, ...s.stripeEnv };
    expect(await tallyCommand('stripe')(['status', '--json', '--account', acme, '--from', D1, '--to', D1], status, newEnv, process.cwd(), s.now)).toBe(0);
    const held = (JSON.parse(status.stdout) as { records: { metric: string; eventName: string; state: string; error?: string }[] }).records.filter((r) => r.metric === 'requests' && r.eventName === 'cdn_requests');
    expect(held.length).toBeGreaterThan(0);
    for (const record of held) {
      expect(record.state).toBe('failed');
      expect(record.error).toContain(`already on the meters of ${before} windows`);
      expect(record.error).toContain(`TALLY_STRIPE_WINDOW=${after}`);
      expect(record.error).toContain('tally stripe push --retry-failed');
    }

    // tally stripe reconcile compares the new meters' days as the sender holds them: D1 is not drift, it is held.
    const reconcile = captureIo();
    expect(await tallyCommand('stripe')(['reconcile', '--json', '--from', D1, '--to', D1], reconcile, newEnv, process.cwd(), s.now)).toBe(0);
    const report = JSON.parse(reconcile.stdout) as { drift: { account: string }[]; held: { account: string; metric: string; day: string; tally: number }[] };
    expect(report.drift.filter((d) => d.account === acme)).toEqual([]);
    expect(report.held.filter((h) => h.account === acme && h.metric === 'requests')).toEqual([expect.objectContaining({ day: D1, tally: total })]);

    // The operator's choice (the old price removed from the subscription): the held records are sent.
    const retry = captureIo();
    expect(await tallyCommand('stripe')(['push', '--retry-failed', '--account', acme], retry, newEnv, process.cwd(), s.now)).toBe(0);
    expect(s.server.billedByDay('cdn_requests', customer)[D1]).toBe(total);
  });

  it.each([
    ['day', 'hour'],
    ['hour', 'day'],
  ] as const)('from %s to %s windows: a day of the current period moves to the new meters by itself, its old events to 0 first, never on both at any event', async (before, after) => {
    const logLines: string[] = [];
    const s = await scenario(after, logLines);
    s.server.addMeter('cdn_requests_old', { event_time_window: before });
    s.server.addMeter('cdn_bytes_old', { event_time_window: before });
    const acme = uniqueId('acme');
    const customer = `cus_move${before}${after}`;
    // Both meters priced (the old price not removed yet); one period long enough that no invoice holds D1 yet.
    s.server.addSubscription({ customer, eventName: 'cdn_requests', alsoEventNames: ['cdn_requests_old'], start: seconds(new Date(`${D1}T00:00:00Z`)), periodSeconds: 30 * 86_400 });
    await s.sync().store.link({ account: acme, customer, linkedAt: `${D1}T00:00:00Z` });
    const oldEnv = { ...s.stripeEnv, TALLY_STRIPE_WINDOW: before, TALLY_STRIPE_METERS: '{"requests":"cdn_requests_old","bytes":"cdn_bytes_old"}' };
    const oldSync = createStripeSyncDeps({ tally: readConfig(s.env), stripe: readStripeConfig(oldEnv) }, testClients(info), API_KEY, jsonLog((line) => void logLines.push(line), 'warn'), { clock: s.now, retry: { attempts: 2, baseMs: 5, maxMs: 10 } });
    s.moveTo(`${D1}T10:30:00Z`);
    await s.ingest(D1, 10, 141, acme);
    await handleStripeMessage(oldSync, { account: acme, running: true });
    s.moveTo(`${D4}T00:30:00Z`);
    for (const day of (await closeOk(testCloser(s.env, s.now))).days) for (const { revision } of day.written ?? []) await handleStripeMessage(oldSync, { day: day.day, revision });
    const onOldMeters = s.counted.get(`${D1} 10`)!;

    // The switch, then a late log of D1: the sender's runs (a message coming back, the closer's hand-off) until nothing is left.
    s.moveTo(`${D4}T01:00:00Z`);
    const runs = [await handleStripeMessage(s.sync(), { account: acme })];
    s.moveTo(`${D4}T05:00:00Z`);
    await s.ingest(D1, 20, 142, acme, 13);
    s.moveTo(`${D4}T05:30:00Z`);
    await s.close();
    for (let i = 0; i < 6 && runs.at(-1)!.left > 0; i++) runs.push(await handleStripeMessage(s.sync(), { account: acme, sendOnly: true }));
    const total = onOldMeters + s.counted.get(`${D1} 20`)!;

    // At every event Stripe received (in receipt order, each window keeping its latest): D1 never on both meters, never above Tally.
    const kept = new Map<string, number>();
    for (const event of s.server.events().filter((e) => e.payload.stripe_customer_id === customer && e.event_name.startsWith('cdn_requests'))) {
      const size = event.event_name === 'cdn_requests' ? (after === 'hour' ? 3_600 : 86_400) : before === 'hour' ? 3_600 : 86_400;
      kept.set(`${event.event_name} ${event.timestamp - (event.timestamp % size)}`, Number(event.payload.value));
      const on = (name: string) => [...kept].filter(([key]) => key.split(' ')[0] === name).reduce((sum, [, value]) => sum + value, 0);
      expect(on('cdn_requests') > 0 && on('cdn_requests_old') > 0).toBe(false);
      expect(on('cdn_requests') + on('cdn_requests_old')).toBeLessThanOrEqual(total);
    }
    expect(runs.at(-1)!.left).toBe(0);
    expect(s.server.billedByDay('cdn_requests_old', customer)[D1]).toBe(0);
    expect(s.server.billedByDay('cdn_requests', customer)[D1]).toBe(total);
    // Nothing failed, nothing for the operator: before, D1 was held (failed, the alarm) until tally stripe push --retry-failed.
    const records = (await s.sync().store.records(acme, D1, D1)).filter((r) => r.metric === 'requests');
    expect(records.filter((r) => r.state === 'failed')).toEqual([]);
    // (bytes has no price on either meter: no subscription bills the new one, so its day stays held.)
    expect(logLines.filter((line) => line.includes('"metric":"requests"')).join('\n')).not.toContain('stripe meter event failed');
    const reconcile = captureIo();
    expect(await tallyCommand('stripe')(['reconcile', '--json', '--from', D1, '--to', D1], reconcile, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now)).toBe(0);
    const report = JSON.parse(reconcile.stdout) as { drift: unknown[]; held: { account: string; metric: string }[] };
    expect(report.held.filter((h) => h.account === acme && h.metric === 'requests')).toEqual([]);
  });
});

describe('reconcile --invoices after a switch from hour to day windows', () => {
  it("leaves a day held on the hour meters out of the day meter's figure, as the sender holds it", async () => {
    const s = await scenario('day');
    s.server.addMeter('cdn_requests_old', { event_time_window: 'hour' });
    s.server.addMeter('cdn_bytes_old', { event_time_window: 'hour' });
    const acme = uniqueId('acme');
    const customer = 'cus_dayswitch01';
    // A one-day period from D1 00:00, finalized at D2 01:00, billing both meters.
    s.server.addSubscription({ customer, eventName: 'cdn_requests', alsoEventNames: ['cdn_requests_old'], start: seconds(new Date(`${D1}T00:00:00Z`)), periodSeconds: 86_400 });
    await s.sync().store.link({ account: acme, customer, linkedAt: `${D1}T00:00:00Z` });
    const oldEnv = { ...s.stripeEnv, TALLY_STRIPE_WINDOW: 'hour', TALLY_STRIPE_METERS: '{"requests":"cdn_requests_old","bytes":"cdn_bytes_old"}' };
    const hourSync = createStripeSyncDeps({ tally: readConfig(s.env), stripe: readStripeConfig(oldEnv) }, testClients(info), API_KEY, jsonLog(() => undefined, 'warn'), { clock: s.now, retry: { attempts: 2, baseMs: 5, maxMs: 10 } });
    s.moveTo(`${D1}T10:30:00Z`);
    await s.ingest(D1, 10, 151, acme);
    await handleStripeMessage(hourSync, { account: acme, running: true });
    // Switched to day windows: D1's day total is held (it is on the hour meters).
    s.moveTo(`${D2}T06:00:00Z`);
    const switched = await s.sweep(acme);
    const io = captureIo();
    const code = await tallyCommand('stripe')(['reconcile', '--invoices', '--json', '--from', D1, '--to', D1], io, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);

    const h10 = s.counted.get(`${D1} 10`)!;
    expect(switched.outcomes.filter((o) => o.metric === 'requests').map((o) => [o.hour, o.outcome])).toEqual([[undefined, 'failed']]);
    expect(s.server.billedByDay('cdn_requests_old', customer)).toEqual({ [D1]: h10 });
    expect(s.requestEvents()).toEqual([]);
    expect((JSON.parse(io.stdout) as { rows: Record<string, unknown>[] }).rows).toEqual([expect.objectContaining({ metric: 'requests', tally: 0, meter: 0, invoiced: 0, difference: 0, held: h10 })]);
    expect(code).toBe(0);
  });
});

describe('the lease after a switch of windows (defect: it was taken on the first record\'s event name, so two senders could send one metric at once)', () => {
  it("two senders whose runs start on different windows' records never send the same metric at once: one waits", async () => {
    const s = await scenario('hour');
    s.server.addMeter('cdn_requests_old', { event_time_window: 'day' });
    s.server.addMeter('cdn_bytes_old', { event_time_window: 'day' });
    const acme = uniqueId('acme');
    const customer = 'cus_leaseswitch';
    await s.sync().store.link({ account: acme, customer, linkedAt: `${D1}T00:00:00Z` });
    s.moveTo(`${D2}T12:00:00Z`);
    // Left from before the switch: D1's day record for the old day meter; since it, D2's hour record for the hour meter.
    const store = s.sync().store;
    const oldDay = pendingOutboxRecord('scope', { customer }, 'cdn_requests_old', { account: acme, metric: 'requests', day: D1, revision: 1 }, { timestamp: hourEventTimestamp(D1, 0, 1), value: 7, createdAt: s.now().toISOString() });
    const newHour = pendingOutboxRecord('scope', { customer }, 'cdn_requests', { account: acme, metric: 'requests', day: D2, revision: 0, running: 1, hour: 3 }, { timestamp: hourEventTimestamp(D2, 3, 0), value: 5, createdAt: s.now().toISOString() });
    expect(await store.addRecord(oldDay)).toBe(true);
    expect(await store.addRecord(newHour)).toBe(true);
    s.server.setDelay(300);

    // A revision's message reads D2 alone (its first record: the hour one); a send-only message reads 60 days (its first: D1's day record).
    const [ofDay, ofAccount] = await Promise.all([sendPending(s.sync(), { account: acme, from: D2, to: D2 }), sendPending(s.sync(), { account: acme })]);

    const posts = (identifier: string) => s.server.rawRequests.filter((r) => r.body.includes(`identifier=${encodeURIComponent(identifier)}`)).length;
    // Before: both held a lease (one per event name) and both posted D2's hour event at once.
    expect({ posts: posts(newHour.identifier), refusals: s.server.concurrencyRefusals() }).toEqual({ posts: 1, refusals: 0 });
    expect([...ofDay.outcomes, ...ofAccount.outcomes].filter((o) => o.outcome === 'busy').length).toBeGreaterThan(0);
    // The one that waited sends the rest on its next run.
    s.server.setDelay(0);
    const next = await sendPending(s.sync(), { account: acme });
    expect(next.left).toBe(0);
    expect(s.server.billedByDay('cdn_requests', customer)).toEqual({ [D2]: 5 });
  });
});

describe('tally stripe push --retry-failed right after a switch of windows (chaos seed 8: a day closed under the old window stayed off the new meters)', () => {
  it.each([
    ['day', 'hour'],
    ['hour', 'day'],
  ] as const)('from %s to %s windows: one push plans the held day in the new window and sends it, the operator\'s choice', async (before, after) => {
    const s = await scenario(after);
    s.server.addMeter('cdn_requests_old', { event_time_window: before });
    s.server.addMeter('cdn_bytes_old', { event_time_window: before });
    const acme = uniqueId('acme');
    const customer = `cus_pushheld${before}${after}`;
    await s.sync().store.link({ account: acme, customer, linkedAt: `${D1}T00:00:00Z` });
    const oldEnv = { ...s.stripeEnv, TALLY_STRIPE_WINDOW: before, TALLY_STRIPE_METERS: '{"requests":"cdn_requests_old","bytes":"cdn_bytes_old"}' };
    const oldSync = createStripeSyncDeps({ tally: readConfig(s.env), stripe: readStripeConfig(oldEnv) }, testClients(info), API_KEY, jsonLog(() => undefined, 'error'), { clock: s.now, retry: { attempts: 2, baseMs: 5, maxMs: 10 } });
    // D1 closed and sent on the old meters; nothing of it planned in the new window yet.
    s.moveTo(`${D1}T10:30:00Z`);
    await s.ingest(D1, 10, 151, acme);
    s.moveTo(`${D4}T00:30:00Z`);
    for (const day of (await closeOk(testCloser(s.env, s.now))).days) for (const { revision } of day.written ?? []) await handleStripeMessage(oldSync, { day: day.day, revision });
    expect(s.server.billedByDay('cdn_requests_old', customer)[D1]).toBe(s.counted.get(`${D1} 10`));

    // The operator switches, removes the old price and sends the held days: one push.
    s.moveTo(`${D4}T01:00:00Z`);
    const push = captureIo();
    const code = await tallyCommand('stripe')(['push', '--retry-failed', '--account', acme], push, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);

    // Before: the push planned D1 in the new window and held what it planned (exit 1); a second push was needed.
    expect({ code, billed: s.server.billedByDay('cdn_requests', customer)[D1] }).toEqual({ code: 0, billed: s.counted.get(`${D1} 10`) });
  });
});

describe('a late log on a day whose hours tally backfill --hours recomputed (defect: its usage went back to hour 00, across a 15:00 period start)', () => {
  it('keeps the backfilled hours and bills the late log in its own hour: the usage API, explain and the invoice of a period from 15:00 agree', async () => {
    const s = await scenario('hour');
    const customer = 'cus_hourlatebackfill';
    const acme = uniqueId('acme');
    // A one-day period from D1 15:00 to D2 15:00, finalized at D2 16:00.
    s.server.addSubscription({ customer, eventName: 'cdn_requests', start: seconds(new Date(`${D1}T15:00:00Z`)), periodSeconds: 86_400 });
    await s.sync().store.link({ account: acme, customer, linkedAt: `${D1}T00:00:00Z` });
    // Hours 10 (before the period) and 16 (inside it) counted before Tally kept hours, then recomputed by the backfill.
    s.moveTo(`${D1}T16:30:00Z`);
    await s.ingest(D1, 10, 201, acme);
    await s.ingest(D1, 16, 202, acme, 31);
    await forgetShardHours(s, acme, D1);
    s.moveTo(`${D1}T17:00:00Z`);
    await backfill(s, acme);
    await s.sweep(acme);
    // A late log of D1 20:00, counted live (with its hours) after the backfill.
    s.moveTo(`${D1}T21:00:00Z`);
    await s.ingest(D1, 20, 203, acme, 17);
    await s.sweep(acme);
    const [c10, c16, c20] = [10, 16, 20].map((hour) => s.counted.get(`${D1} ${hour}`)!) as [number, number, number];
    const byHour = { 10: c10, 16: c16, 20: c20 };

    // The usage API by hour (one Query of the real table): each hour where its requests were made, nothing in hour 00.
    const deps = await createLocalUsageApiDeps(info, TEST_SECRET, jsonLog(() => undefined, 'error'), { TALLY_TABLE: readConfig(s.env).tableName, TALLY_METRICS: s.env.TALLY_METRICS! });
    const token = await mintToken(TEST_SECRET, { accounts: [acme], ttlSeconds: 300, subject: 'integration' });
    const response = await handleUsageApiRequest(usageApiEvent({ accountId: acme, query: { from: D1, to: D1, granularity: 'hour' }, token }), deps);
    const body = JSON.parse(response.body!) as { hours: { start: string; metrics: { requests: number } | null }[]; days: { hoursReason?: string }[] };
    expect(response.statusCode).toBe(200);
    expect(body.days[0]!.hoursReason).toBeUndefined();
    expect(Object.fromEntries(body.hours.filter((h) => h.metrics?.requests !== 0).map((h) => [Number(h.start.slice(11, 13)), h.metrics?.requests ?? null]))).toEqual(byHour);
    // explain shows the same hours.
    const t = { client: testClients(info).dynamodb, tableName: readConfig(s.env).tableName };
    const explanation = await explainDay({ reader: new DynamoUsageReader(t), sources: new DynamoSourceReader(t), metricNames: ['requests', 'bytes'] }, acme, D1);
    expect(explanation.hoursSource).toBe('backfill');
    expect(Object.fromEntries(explanation.hours!.filter((h) => h.metrics.requests !== 0).map((h) => [h.hour, h.metrics.requests]))).toEqual(byHour);

    // The Stripe hour plan: each hour's meter value is its own usage; hour 00 holds none.
    s.moveTo(`${D2}T00:30:00Z`);
    await s.close();
    const kept = new Map<number, number>();
    for (const e of s.requestEvents()) kept.set(Math.floor(e.timestamp / 3_600) % 24, Number(e.payload.value));
    expect(Object.fromEntries([...kept].filter(([, value]) => value !== 0))).toEqual(byHour);
    expect(s.server.billedByDay('cdn_requests', customer)).toEqual({ [D1]: c10 + c16 + c20 });
    // The invoice of the period from 15:00 bills hours 16 and 20, not hour 16's usage moved to 00:00 (the period before).
    s.moveTo(`${D2}T17:00:00Z`);
    const stripe = new Stripe(API_KEY, { ...stripeConnection(s.server.url), maxNetworkRetries: 0 });
    const invoices = (await stripe.invoices.list({ customer })).data;
    expect(invoices.map((invoice) => invoice.lines.data.map((line) => line.quantity))).toEqual([[c16 + c20]]);
  });
});

