import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { DeleteMessageCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import Stripe from 'stripe';
import { ingestBatch, type IngestDeps } from '../../src/app/ingest/ingest';
import { jsonLog, type Log } from '../../src/app/log';
import { sendStripeBatch } from '../../src/app/billing/stripe-sender';
import { handleStripeMessage, handRunningAccounts, linkAccount, planRevision, pullMeterErrors, type StripeSyncDeps } from '../../src/app/billing/stripe-sync';
import { SqsStripeSendQueue } from '../../src/adapters/sqs/sqs-stripe-send-queue';
import { readConfig } from '../../src/adapters/config';
import { DynamoCloseStore } from '../../src/adapters/dynamodb/dynamodb-close-store';
import { readStripeConfig } from '../../src/adapters/stripe/stripe-config';
import { createStripeSyncDeps } from '../../src/adapters/wiring/stripe-deps';
import { SdkStripeMeterApi, stripeConnection } from '../../src/adapters/stripe/stripe-meter-api';
import { meterEventTimestamp } from '../../src/domain/billing/stripe';
import { generateLog } from '../../src/local/demo/log-generator';
import { closeOk, handoffTable, testCloser } from '../support/handoff';
import { startStripeServer, type StripeTestServer } from '../support/stripe-server';
import { startLosingProxy } from '../support/stripe-proxy';
import { startChaosProxy } from '../support/stripe-chaos-proxy';
import { captureIo, tallyCommand } from '../support/cli';
import { createTestQueues, putLogObject, s3NotificationMessage, sqsRecord, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';

const info = testStackInfo();
const METERS = '{"requests":"cdn_requests","bytes":"cdn_bytes"}';
const API_KEY = 'sk_test_tally_invoice_key_0123456789';
const D1 = '2026-06-01';
const D2 = '2026-06-02';
const D3 = '2026-06-03';
const at = (date: Date) => () => date;
const seconds = (date: Date) => Math.floor(date.getTime() / 1000);
const servers: { close(): Promise<void> }[] = [];

afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

/**
 * A table, a Stripe server with Tally's two meters whose clock follows the scenario's
 * (`moveTo`), and the sync wired as the sender wires it, with `TALLY_STRIPE_RUNNING_MINUTES`.
 */
async function scenario(runningMinutes: string, options: { webhookQueueUrl?: string; lateUsage?: 'webhook' | 'invoice-item'; losingProxy?: boolean } = {}) {
  const { env } = await handoffTable(info);
  const server = await startStripeServer(API_KEY);
  servers.push(server);
  const proxy = options.losingProxy === true ? await startLosingProxy(server.url) : undefined;
  if (proxy !== undefined) servers.push(proxy);
  let now = new Date(`${D1}T00:00:00Z`);
  server.setClock(() => seconds(now));
  server.addMeter('cdn_requests');
  server.addMeter('cdn_bytes');
  const log: Log = jsonLog(() => undefined, 'warn');
  const stripeEnv = {
    TALLY_STRIPE_API_KEY: API_KEY,
    TALLY_STRIPE_API_BASE: proxy?.url ?? server.url,
    TALLY_STRIPE_METERS: METERS,
    TALLY_STRIPE_RUNNING_MINUTES: runningMinutes,
    ...(options.lateUsage === undefined ? {} : { TALLY_STRIPE_LATE_USAGE: options.lateUsage }),
  };
  const clients = testClients(info);
  const sync = (): StripeSyncDeps =>
    createStripeSyncDeps({ tally: readConfig(env), stripe: readStripeConfig(stripeEnv), ...options }, clients, API_KEY, log, { clock: () => now, retry: { attempts: 4, baseMs: 5, maxMs: 20 } });
  const ingestDeps = testIngestDeps(env, { log });
  const closeStore = new DynamoCloseStore({ client: clients.dynamodb, tableName: readConfig(env).tableName });
  return {
    env,
    stripeEnv,
    now: () => now,
    server,
    proxy,
    sync,
    closeStore,
    moveTo(next: Date) {
      now = next;
    },
    /** The running sweep's message for `account` (AWS: one per linked account every interval). */
    sweep: (account: string) => handleStripeMessage(sync(), { account, running: true }),
    ingest: (day: string, hour: number, seed: number, accounts: string[], lines = 40) => ingestLog(ingestDeps, day, hour, seed, accounts, now, lines),
    /** The hourly closer, then the sender's message for each revision it wrote. */
    async close() {
      const report = await closeOk(testCloser(env, () => now));
      for (const day of report.days) for (const { revision } of day.written ?? []) await handleStripeMessage(sync(), { day: day.day, revision });
    },
    async total(account: string, metric: string, days: string[]) {
      let sum = 0;
      for (const day of days) sum += (await closeStore.accountDay(account, day)).counters[metric] ?? 0;
      return sum;
    },
  };
}

async function ingestLog(deps: IngestDeps, day: string, hour: number, seed: number, accounts: string[], when: Date, lines: number): Promise<void> {
  const log = generateLog({ seed, day, hour, distribution: 'E2INV', accounts: accounts.map((id, i) => ({ id, weight: i + 1 })), lines, previousDayRate: 0, malformedRate: 0, unattributedRate: 0 });
  const ref = await putLogObject(`cloudfront/${uniqueId('E2INV')}.${day}-${String(hour).padStart(2, '0')}.x.gz`, log.text);
  const result = await ingestBatch({ Records: [s3NotificationMessage(ref)] }, { ...deps, clock: at(when) });
  expect(result.batchItemFailures).toEqual([]);
}

/**
 * D1 of acme (a new account, linked to `customer` on a subscription of 3-day periods from
 * D1) counted from `objects` log objects, swept, and closed at its running total before
 * its period's invoice is finalized (D4 01:00): what each late-usage test starts from.
 */
async function invoicedDay(
  s: Awaited<ReturnType<typeof scenario>>,
  options: { objects: number; customer?: string; price?: Omit<Parameters<Awaited<ReturnType<typeof scenario>>['server']['addSubscription']>[0], 'customer' | 'eventName' | 'start' | 'periodSeconds'> },
) {
  const acme = uniqueId('acme');
  const customer = options.customer ?? `cus_${acme.replace(/[^A-Za-z0-9]/g, '').slice(-12)}`;
  const subscription = s.server.addSubscription({ customer, eventName: 'cdn_requests', start: seconds(new Date(`${D1}T00:00:00Z`)), periodSeconds: 3 * 86_400, ...options.price });
  s.moveTo(new Date(`${D1}T01:00:00Z`));
  const linked = await linkAccount(s.sync(), acme, customer);
  s.moveTo(new Date(`${D1}T11:00:00Z`));
  await s.ingest(D1, 10, options.objects, [acme]);
  await s.sweep(acme);
  s.moveTo(new Date('2026-06-04T00:30:00Z'));
  await s.close();
  return { acme, customer, subscription, linked };
}

describe('running totals of open days', () => {
  it.each(['receipt', 'timestamp'] as const)(
    'sends an open day\'s total when it changed, only then, and the closed revision replaces the last one (Stripe keeping a day\'s event by %s)',
    async (order) => {
      const s = await scenario('60');
      s.server.setOrder(order);
      const acme = uniqueId('acme');
      await s.sync().store.link({ account: acme, customer: 'cus_running01', linkedAt: `${D1}T00:00:00Z` });

      s.moveTo(new Date(`${D1}T10:30:00Z`));
      await s.ingest(D1, 10, 1, [acme]);
      const first = await s.sweep(acme);
      const afterFirst = s.server.billedByDay('cdn_requests', 'cus_running01');
      s.moveTo(new Date(`${D1}T11:30:00Z`));
      const unchanged = await s.sweep(acme);
      s.moveTo(new Date(`${D1}T14:00:00Z`));
      await s.ingest(D1, 13, 2, [acme], 25);
      const second = await s.sweep(acme);
      const running = s.server.billedByDay('cdn_requests', 'cus_running01');
      // D1 closes 48 h after its end.
      s.moveTo(new Date('2026-06-04T01:00:00Z'));
      await s.close();
      const afterClose = await s.sweep(acme);

      const total = await s.total(acme, 'requests', [D1]);
      expect(first.outcomes.map((o) => o.outcome)).toEqual(['delivered', 'delivered']);
      expect(unchanged.outcomes).toEqual([]);
      expect(second.outcomes.map((o) => o.outcome)).toEqual(['delivered', 'delivered']);
      expect(afterFirst[D1]).toBeLessThan(total);
      expect(running).toEqual({ [D1]: total });
      expect(afterClose.outcomes).toEqual([]);
      expect(s.server.billedByDay('cdn_requests', 'cus_running01')).toEqual({ [D1]: total });
      // Running totals at midnight in the order counted, then revision 1 a second later (sent last).
      const requests = s.server.events().filter((e) => e.event_name === 'cdn_requests');
      expect(requests.map((e) => [e.timestamp, e.payload.value])).toEqual([
        [meterEventTimestamp(D1, 0), String(afterFirst[D1])],
        [meterEventTimestamp(D1, 0), String(total)],
        [meterEventTimestamp(D1, 1), String(total)],
      ]);
      expect(new Set(s.server.events().map((e) => e.identifier)).size).toBe(6);
    },
  );

  it('on AWS, the scheduled sweep hands each linked account to the sender queue, whose messages send the running totals', async () => {
    const queues = await createTestQueues(info, { visibilityTimeoutSeconds: 1, maxReceiveCount: 10 });
    const s = await scenario('60');
    const [acme, globex] = [uniqueId('acme'), uniqueId('globex')];
    for (const [account, customer] of [[acme, 'cus_sweep0001'], [globex, 'cus_sweep0002']] as const) await s.sync().store.link({ account, customer, linkedAt: `${D1}T00:00:00Z` });
    s.moveTo(new Date(`${D1}T10:30:00Z`));
    await s.ingest(D1, 10, 51, [acme, globex]);
    const queue = new SqsStripeSendQueue({ client: testClients(info).sqs, queueUrl: queues.queueUrl });

    const handed = await handRunningAccounts({ store: s.sync().store, queue, runningMinutes: 60 });
    const off = await handRunningAccounts({ store: s.sync().store, queue, runningMinutes: 0 });
    const received = await testClients(info).sqs.send(new ReceiveMessageCommand({ QueueUrl: queues.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    const batch = await sendStripeBatch({ Records: (received.Messages ?? []).map((m) => sqsRecord(m.Body!, { messageId: m.MessageId! })) }, { sync: s.sync(), backoffSeconds: 1, maxBackoffSeconds: 1 });

    // This test's table holds these two links only.
    expect(handed).toEqual({ linked: 2, handed: 2 });
    expect(off).toEqual({ linked: 0, handed: 0 });
    expect((received.Messages ?? []).map((m) => JSON.parse(m.Body!)).sort((a, b) => (a.account < b.account ? -1 : 1))).toEqual(
      [acme, globex].sort().map((account) => ({ account, running: true })),
    );
    expect(batch.batchItemFailures).toEqual([]);
    expect(s.server.billedByDay('cdn_requests', 'cus_sweep0001')).toEqual({ [D1]: await s.total(acme, 'requests', [D1]) });
    expect(s.server.billedByDay('cdn_bytes', 'cus_sweep0002')).toEqual({ [D1]: await s.total(globex, 'bytes', [D1]) });
  });

  it('queues the sweep ten accounts to a SendMessageBatch call; entries SQS reports Failed are sent again, and one that keeps failing fails the sweep naming it', async () => {
    const queues = await createTestQueues(info, { visibilityTimeoutSeconds: 60, maxReceiveCount: 10 });
    const s = await scenario('60');
    const accounts = Array.from({ length: 23 }, (_, i) => uniqueId(`sweep${String(i).padStart(2, '0')}`));
    for (const [i, account] of accounts.entries()) await s.sync().store.link({ account, customer: `cus_batch${String(i).padStart(4, '0')}`, linkedAt: `${D1}T00:00:00Z` });
    const sqs = testClients(info).sqs;
    // Entries of accounts 3, 14 and 22 fail on their first call; `poisoned` ones fail on every call.
    const flaky = new Set([accounts[3]!, accounts[14]!, accounts[22]!]);
    const poisoned = new Set<string>();
    const calls = failBatchEntries(sqs, (account, seen) => poisoned.has(account) || (flaky.has(account) && seen === 1));
    const queue = new SqsStripeSendQueue({ client: sqs, queueUrl: queues.queueUrl });

    const handed = await handRunningAccounts({ store: s.sync().store, queue, runningMinutes: 60 });
    const queued = await drain(sqs, queues.queueUrl, accounts.length);
    poisoned.add(accounts[7]!);
    const refused = await handRunningAccounts({ store: s.sync().store, queue, runningMinutes: 60 }).catch((error: Error) => error.message);
    const requeued = await drain(sqs, queues.queueUrl, accounts.length - 1);

    expect(handed).toEqual({ linked: 23, handed: 23 });
    // 3 batches of 10, 10 and 3 entries, then one call each for the failed entries of the first two and the third.
    expect(calls.slice(0, 6).map((c) => c.entries).sort((a, b) => a - b)).toEqual([1, 1, 1, 3, 10, 10]);
    expect(queued.map((m) => m.account).sort()).toEqual([...accounts].sort());
    expect(queued.every((m) => m.running === true)).toBe(true);
    expect(refused).toMatch(new RegExp(`could not queue 1 of 23 Stripe send message\\(s\\) .* after 3 attempts: InternalError .*${accounts[7]}`));
    // The poisoned entry was tried three times; every other account was still queued, once.
    expect(calls.slice(6).filter((c) => c.accounts.includes(accounts[7]!))).toHaveLength(3);
    expect(requeued.map((m) => m.account).sort()).toEqual(accounts.filter((a) => a !== accounts[7]).sort());
  });

  it('sends nothing for open days with TALLY_STRIPE_RUNNING_MINUTES=0', async () => {
    const s = await scenario('0');
    const acme = uniqueId('acme');
    await s.sync().store.link({ account: acme, customer: 'cus_running02', linkedAt: `${D1}T00:00:00Z` });
    s.moveTo(new Date(`${D1}T10:30:00Z`));
    await s.ingest(D1, 10, 3, [acme]);

    const report = await s.sweep(acme);

    expect(report.outcomes).toEqual([]);
    expect(s.server.events()).toEqual([]);
  });
});

describe('the whole billing period on the invoice', () => {
  /**
   * A three-day period (D1..D3, ends D4 00:00, Stripe's default grace: finalized D4 01:00),
   * traffic every day and late on the last evening, the closer hourly (48 h grace), and the
   * running sweep at the times given. Returns the period's invoice after finalization and
   * Tally's total over the period.
   */
  async function billingPeriod(runningMinutes: string, sweeps: string[], extra: [string, (customer: string, server: StripeTestServer) => Promise<unknown>][] = []) {
    const s = await scenario(runningMinutes);
    const acme = uniqueId('acme');
    const customer = `cus_${acme.replace(/[^A-Za-z0-9]/g, '').slice(-12)}`;
    await s.sync().store.link({ account: acme, customer, linkedAt: `${D1}T00:00:00Z` });
    s.server.addSubscription({ customer, eventName: 'cdn_requests', start: seconds(new Date(`${D1}T00:00:00Z`)), periodSeconds: 3 * 86_400 });
    const timeline: [string, () => Promise<unknown>][] = [
      [`${D1}T11:00:00Z`, () => s.ingest(D1, 10, 11, [acme])],
      [`${D2}T11:00:00Z`, () => s.ingest(D2, 10, 12, [acme])],
      [`${D3}T11:00:00Z`, () => s.ingest(D3, 10, 13, [acme])],
      [`${D3}T23:10:00Z`, () => s.ingest(D3, 22, 14, [acme], 30)],
      ...sweeps.map((time): [string, () => Promise<unknown>] => [time, () => s.sweep(acme)]),
      ...extra.map(([time, step]): [string, () => Promise<unknown>] => [time, () => step(customer, s.server)]),
      // The closer's hourly runs once each day may close (48 h after its end): D1 at D4 00:30, before
      // finalization (D4 01:00); D2 and D3 after it.
      ['2026-06-04T00:30:00Z', () => s.close()],
      ['2026-06-05T00:30:00Z', () => s.close()],
      ['2026-06-06T00:30:00Z', () => s.close()],
    ];
    for (const [time, step] of timeline.sort(([a], [b]) => (a < b ? -1 : 1))) {
      s.moveTo(new Date(time));
      await step();
    }
    const stripe = new Stripe(API_KEY, { ...stripeConnection(s.server.url), maxNetworkRetries: 0 });
    const invoices = await stripe.invoices.list({ customer });
    return { invoices: invoices.data, total: await s.total(acme, 'requests', [D1, D2, D3]), s, customer };
  }

  it('has every day of a period ending with Stripe\'s default one-hour grace on its invoice, at the closed or running total', async () => {
    const { invoices, total, s } = await billingPeriod('60', ['2026-06-01T12:00:00Z', '2026-06-02T12:00:00Z', '2026-06-03T12:00:00Z', '2026-06-03T23:30:00Z']);
    const reconcile = captureIo();
    const reconciled = await tallyCommand('stripe')(['reconcile', '--invoices', '--from', D1, '--to', D3], reconcile, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);

    expect(invoices).toHaveLength(1);
    const [invoice] = invoices;
    expect(invoice!.status).toBe('open');
    expect(invoice!.status_transitions.finalized_at).toBe(seconds(new Date('2026-06-04T01:00:00Z')));
    expect(invoice!.lines.data.map((line) => line.quantity)).toEqual([total]);
    expect(reconciled).toBe(0);
    expect(reconcile.stdout).toContain('1 invoice line(s) compared, 0 differ');
  });

  it('with closed days alone (running totals off), the last two days of the period miss its invoice', async () => {
    const { invoices, total, s, customer } = await billingPeriod('0', []);

    const [invoice] = invoices;
    const billed = s.server.billedByDay('cdn_requests', customer);
    expect(invoice!.status).toBe('open');
    // D2 and D3 reached the meter after finalization: on the meter, on no invoice.
    expect(Object.keys(billed)).toEqual([D1, D2, D3]);
    expect(billed[D1]! + billed[D2]! + billed[D3]!).toBe(total);
    expect(invoice!.lines.data[0]!.quantity).toBe(billed[D1]);
    // Sent after finalization, D2 and D3 were reported late: reconcile --invoices shows the difference, recorded (exit 0).
    const reconcile = captureIo();
    const reconciled = await tallyCommand('stripe')(['reconcile', '--invoices', '--json', '--from', D1, '--to', D3], reconcile, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);
    expect(reconciled).toBe(0);
    const report = JSON.parse(reconcile.stdout) as { rows: { invoice: string; from: string; to: string; tally: number; meter: number; invoiced: number; difference: number; recordedLate: number }[] };
    expect(report.rows).toEqual([
      expect.objectContaining({ invoice: invoice!.id, from: D1, to: D3, tally: total, meter: total, invoiced: billed[D1], difference: total - billed[D1]!, recordedLate: total - billed[D1]! }),
    ]);
  });

  it('exits 1 on a difference no late usage explains (another sender added to a day before finalization)', async () => {
    const foreign = async (customer: string, server: StripeTestServer) => {
      const other = new Stripe(API_KEY, { ...stripeConnection(server.url), maxNetworkRetries: 0 });
      await other.billing.meterEvents.create({ event_name: 'cdn_requests', payload: { stripe_customer_id: customer, value: '7' }, timestamp: meterEventTimestamp(D2, 600) });
    };
    const { invoices, total, s } = await billingPeriod('60', ['2026-06-01T12:00:00Z', '2026-06-02T12:00:00Z', '2026-06-03T12:00:00Z', '2026-06-03T23:30:00Z'], [['2026-06-03T23:45:00Z', foreign]]);
    const reconcile = captureIo();

    const code = await tallyCommand('stripe')(['reconcile', '--invoices', '--from', D1, '--to', D3], reconcile, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);

    expect(code).toBe(1);
    expect(reconcile.stdout).toContain('1 invoice line(s) compared, 1 differ without a recorded late usage');
    expect(invoices[0]!.lines.data[0]!.quantity).not.toBe(total);
    expect(reconcile.stdout).toMatch(new RegExp(`${invoices[0]!.id}\\s+${D1}\\.\\.${D3}\\s+requests\\s+${total}\\s+`));
  });
});

describe('a total after its invoice was finalized', () => {
  it('is never silent: one signed stripe.late_usage per record through a lost answer and a retry, the record invoice-finalized, the alarm\'s count', async () => {
    const webhooks = await createTestQueues(info, { visibilityTimeoutSeconds: 1, maxReceiveCount: 10 });
    const s = await scenario('60', { webhookQueueUrl: webhooks.queueUrl });
    const { acme, customer, linked } = await invoicedDay(s, { objects: 21, customer: 'cus_lateusage01' });
    const billed = s.server.invoices(customer)[0]!;
    // Then a log of D1 arrives late: revision 2, sent after finalization, its answer lost once.
    s.moveTo(new Date('2026-06-05T10:00:00Z'));
    await s.ingest(D1, 20, 22, [acme], 15);
    s.server.fail({ status: 500, afterRecording: true });
    const late: number[] = [];
    const report = await closeOk(testCloser(s.env, s.now));
    const revision = report.days.find((d) => d.day === D1)!.written![0]!.revision;
    const batch = await sendStripeBatch({ Records: [sqsRecord(JSON.stringify({ day: D1, revision }))] }, { sync: s.sync(), backoffSeconds: 1, maxBackoffSeconds: 1, onLateUsage: (n) => late.push(n) });
    // The same record handled again (a redelivered message): nothing new is sent or reported.
    const [record] = (await s.sync().store.records(acme, D1, D1)).filter((r) => r.metric === 'requests' && r.revision === revision);
    await s.sync().store.updateRecord(record!, { state: 'pending' });
    await handleStripeMessage(s.sync(), { day: D1, revision });
    const status = captureIo();
    await tallyCommand('stripe')(['status', '--json', '--from', D1, '--to', D1], status, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);

    const total = await s.total(acme, 'requests', [D1]);
    const { sqs } = testClients(info);
    const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl: webhooks.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    const events = (received.Messages ?? []).map((m) => JSON.parse(m.Body!) as { id: string; type: string; data: Record<string, unknown> });
    expect(linked.window.from).toBe(D1);
    expect(billed.status).toBe('draft');
    expect(batch.batchItemFailures).toEqual([]);
    expect(late).toEqual([1]);
    const invoice = s.server.invoices(customer)[0]!;
    expect(invoice.status).toBe('open');
    const billedQuantity = invoice.lines.data[0]!.quantity;
    expect(billedQuantity).toBeLessThan(total);
    // Only requests changed (the late log's bytes too, but bytes have no subscription: no invoice to miss).
    const requestEvents = events.filter((e) => e.data.metric === 'requests');
    expect(requestEvents).toHaveLength(1);
    expect(requestEvents[0]).toMatchObject({
      type: 'stripe.late_usage',
      data: { account: acme, metric: 'requests', day: D1, invoice: invoice.id, billed: billedQuantity, total, difference: total - billedQuantity, reason: 'invoice-finalized' },
    });
    const rows = (JSON.parse(status.stdout) as { records: { metric: string; revision: number; state: string; invoice?: string; billed?: number }[] }).records;
    expect(rows.find((r) => r.metric === 'requests' && r.revision === revision)).toMatchObject({ state: 'invoice-finalized', invoice: invoice.id, billed: billedQuantity });
    // On the meter all the same: the meter keeps Tally's total.
    expect(s.server.billedByDay('cdn_requests', customer)).toEqual({ [D1]: total });
    // The invoice differs from Tally by exactly the late usage recorded: reconcile --invoices exits 0.
    const reconcile = captureIo();
    expect(await tallyCommand('stripe')(['reconcile', '--invoices', '--from', D1, '--to', D1], reconcile, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now)).toBe(0);
    expect(reconcile.stdout).toMatch(new RegExp(`${invoice.id}\\s+${D1}\\.\\.${D3}\\s+requests\\s+${total}\\s+${total}\\s+${billedQuantity}\\s+${total - billedQuantity}\\s+${total - billedQuantity}`));
  });

  it('linking sends from the start of the customer\'s current period: days of a finalized period are never sent nor reported', async () => {
    const s = await scenario('0');
    const acme = uniqueId('acme');
    const customer = 'cus_linkperiod1';
    s.server.addSubscription({ customer, eventName: 'cdn_requests', start: seconds(new Date(`${D1}T00:00:00Z`)), periodSeconds: 2 * 86_400 });
    s.moveTo(new Date(`${D1}T11:00:00Z`));
    await s.ingest(D1, 10, 31, [acme]);
    s.moveTo(new Date(`${D3}T11:00:00Z`));
    await s.ingest(D3, 10, 32, [acme]);
    s.moveTo(new Date('2026-06-06T00:30:00Z'));
    await closeOk(testCloser(s.env, s.now));

    // The current period began D5; with --from D3 the operator asks for D3 onwards.
    const linked = await linkAccount(s.sync(), acme, customer);
    const other = uniqueId('globex');
    const fromD3 = await linkAccount(s.sync(), other, 'cus_linkperiod2', { from: D3 });
    await handleStripeMessage(s.sync(), { account: acme, sendOnly: true });

    expect(linked).toMatchObject({ window: { from: '2026-06-05' }, planned: 0 });
    expect(fromD3.window.from).toBe(D3);
    expect(s.server.events()).toEqual([]);
    expect(await s.sync().store.records(acme, D1, D3)).toEqual([]);
  });

  it('a total back at the billed one after a reported difference is reported too (difference 0), and reconcile --invoices then matches', async () => {
    const webhooks = await createTestQueues(info, { visibilityTimeoutSeconds: 1, maxReceiveCount: 10 });
    const s = await scenario('60', { webhookQueueUrl: webhooks.queueUrl });
    const { acme, customer } = await invoicedDay(s, { objects: 21 });
    // A late log after finalization: reported (+difference). Then a correction takes the day back to what the invoice billed.
    s.moveTo(new Date('2026-06-05T10:00:00Z'));
    await s.ingest(D1, 20, 22, [acme], 15);
    const report = await closeOk(testCloser(s.env, s.now));
    const revision = report.days.find((d) => d.day === D1)!.written![0]!.revision;
    await handleStripeMessage(s.sync(), { day: D1, revision });
    const billed = s.server.invoices(customer)[0]!.lines.data[0]!.quantity;
    const late = await s.total(acme, 'requests', [D1]);
    s.moveTo(new Date('2026-06-05T12:00:00Z'));
    const adjust = captureIo();
    expect(await tallyCommand('adjust')(['--account', acme, '--day', D1, '--metric', 'requests', '--delta', String(billed - late), '--reason', 'the late log was a duplicate', '--id', 'ADJ-BACK-1'], adjust, s.env, process.cwd(), s.now)).toBe(0);
    await handleStripeMessage(s.sync(), { account: acme });
    const received = await testClients(info).sqs.send(new ReceiveMessageCommand({ QueueUrl: webhooks.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    const differences = (received.Messages ?? []).map((m) => JSON.parse(m.Body!) as { data: { metric: string; difference: number; total: number } }).filter((e) => e.data.metric === 'requests').map((e) => [e.data.total, e.data.difference]).sort();
    const reconcile = captureIo();
    const code = await tallyCommand('stripe')(['reconcile', '--invoices', '--json', '--from', D1, '--to', D1], reconcile, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);

    expect(late).toBeGreaterThan(billed);
    expect(s.server.billedByDay('cdn_requests', customer)).toEqual({ [D1]: billed });
    // Before, the second total was sent unreported: the operator's last word stayed "+difference", and reconcile counted it.
    expect(differences).toEqual([[billed, 0], [late, late - billed]].sort());
    expect((JSON.parse(reconcile.stdout) as { rows: { metric: string; difference: number; recordedLate: number }[] }).rows.find((r) => r.metric === 'requests')).toMatchObject({ difference: 0, recordedLate: 0 });
    expect(code).toBe(0);
  });
});

describe('late usage as invoice items (TALLY_STRIPE_LATE_USAGE=invoice-item)', () => {
  /**
   * D1 closes at its running total before its period's invoice is finalized (D4 01:00), then a
   * late log of D1 arrives on D5: revision 2, after finalization. Returns what the test needs.
   */
  async function lateRevision(price: { tiersMode?: 'graduated' | 'volume'; packageSize?: number }, loseItemAnswers: number) {
    const webhooks = await createTestQueues(info, { visibilityTimeoutSeconds: 1, maxReceiveCount: 10 });
    const s = await scenario('60', { webhookQueueUrl: webhooks.queueUrl, lateUsage: 'invoice-item', losingProxy: true });
    const { acme, customer, subscription } = await invoicedDay(s, { objects: 31, price: { unitAmountDecimal: '3', ...price } });
    s.moveTo(new Date('2026-06-05T10:00:00Z'));
    await s.ingest(D1, 20, 32, [acme], 15);
    s.proxy!.loseAnswers('POST', '/v1/invoiceitems', loseItemAnswers);
    const report = await closeOk(testCloser(s.env, s.now));
    const revision = report.days.find((d) => d.day === D1)!.written![0]!.revision;
    const first = await handleStripeMessage(s.sync(), { day: D1, revision });
    const record = async () => (await s.sync().store.records(acme, D1, D1)).find((r) => r.metric === 'requests' && r.revision === revision)!;
    const webhookEvents = async () => {
      const received = await testClients(info).sqs.send(new ReceiveMessageCommand({ QueueUrl: webhooks.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
      return (received.Messages ?? []).map((m) => JSON.parse(m.Body!) as { type: string; data: Record<string, unknown> }).filter((e) => e.data.metric === 'requests');
    };
    return { s, acme, customer, subscription, revision, first, record, webhookEvents, billed: s.server.invoices(customer)[0]!.lines.data[0]!.quantity };
  }

  it('puts one invoice item for the difference on the next invoice through a lost answer, a retry with the same key, and a retry 30 hours later', async () => {
    // Four answers lost: each run's call and the SDK's own retry of its closed connection (stripe-node
    // retries that once, with the same key, even with retries off), the first run and one an hour later.
    const { s, acme, customer, subscription, first, record, webhookEvents, billed } = await lateRevision({}, 4);
    const afterFirst = await record();
    // An hour later: the same Idempotency-Key, Stripe answers the saved item (this answer lost too).
    s.moveTo(new Date('2026-06-05T11:00:00Z'));
    const second = await handleStripeMessage(s.sync(), { account: acme, sendOnly: true });
    // 30 hours after the first call: Stripe forgot the key; the lookup finds the item, nothing is created.
    s.moveTo(new Date('2026-06-06T16:00:00Z'));
    const third = await handleStripeMessage(s.sync(), { account: acme, sendOnly: true });
    const status = captureIo();
    await tallyCommand('stripe')(['status', '--from', D1, '--to', D1], status, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);

    const total = await s.total(acme, 'requests', [D1]);
    const items = s.server.invoiceItems(customer);
    expect(s.proxy!.lost()).toBe(4);
    expect(first.outcomes.find((o) => o.metric === 'requests')).toMatchObject({ outcome: 'retry-later' });
    expect(afterFirst.item).toMatchObject({ state: 'pending', units: total - billed, firstAttemptAt: '2026-06-05T10:00:00.000Z' });
    expect(second.outcomes.find((o) => o.metric === 'requests')).toMatchObject({ outcome: 'retry-later' });
    expect(third.outcomes.find((o) => o.metric === 'requests')).toMatchObject({ outcome: 'invoice-finalized' });
    expect(total).toBeGreaterThan(billed);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      customer,
      subscription: subscription.id,
      quantity: total - billed,
      amount: 3 * (total - billed),
      currency: 'usd',
      metadata: { tally_id: afterFirst.item!.state === 'pending' ? afterFirst.item!.tallyId : '' },
      period: { start: seconds(new Date(`${D1}T00:00:00Z`)), end: seconds(new Date(`${D1}T23:59:59Z`)) },
    });
    expect(await record()).toMatchObject({ state: 'invoice-finalized', item: { state: 'created', id: items[0]!.id } });
    // One item from four POSTs with the same key (all but the first were replays), then the lookup alone.
    const calls = s.server.requests.filter((r) => r.path === '/v1/invoiceitems').map((r) => r.method);
    expect(calls).toEqual(['POST', 'POST', 'POST', 'POST', 'GET']);
    expect(s.server.events().filter((e) => e.event_name === 'cdn_requests').at(-1)!.payload.value).toBe(String(total));
    const [event] = await webhookEvents();
    expect(event!.data).toMatchObject({ difference: total - billed, invoiceItem: { units: total - billed, unitAmountDecimal: '3', currency: 'usd' } });
    expect(status.stdout).toContain(`${acme} requests ${D1} rev 2: invoice item ${items[0]!.id}, +${total - billed} unit(s) at 3 usd cents`);
    // The item goes on the next invoice: the period D4..D6, finalized D7 01:00.
    s.moveTo(new Date('2026-06-07T02:00:00Z'));
    const next = s.server.invoices(customer).find((invoice) => invoice.period_start === seconds(new Date('2026-06-04T00:00:00Z')))!;
    expect(next.lines.data.filter((line) => 'parent' in line)).toEqual([expect.objectContaining({ quantity: total - billed, amount: 3 * (total - billed) })]);
  });

  it('a total whose own first attempt reached Stripe before finalization, acknowledged after, gets no invoice item: the invoice billed it', async () => {
    const s = await scenario('60', { lateUsage: 'invoice-item', losingProxy: true });
    const acme = uniqueId('acme');
    const customer = `cus_${acme.replace(/[^A-Za-z0-9]/g, '').slice(-12)}`;
    s.server.addSubscription({ customer, eventName: 'cdn_requests', start: seconds(new Date(`${D1}T00:00:00Z`)), periodSeconds: 3 * 86_400, unitAmountDecimal: '3' });
    s.moveTo(new Date(`${D1}T01:00:00Z`));
    await linkAccount(s.sync(), acme, customer);
    // D3's running total goes out before the period ends (D4 00:00); Stripe applies it, every answer is lost.
    s.moveTo(new Date(`${D3}T23:00:00Z`));
    await s.ingest(D3, 22, 51, [acme]);
    // Both metrics' four attempts, each with the SDK's own retry of its closed connection.
    s.proxy!.loseAnswers('POST', '/v1/billing/meter_events', 16);
    const lost = await s.sweep(acme);
    // After finalization (D4 01:00) the same record is sent again: "already exists".
    s.moveTo(new Date('2026-06-04T02:00:00Z'));
    const after = await handleStripeMessage(s.sync(), { account: acme, sendOnly: true });

    const total = await s.total(acme, 'requests', [D3]);
    const invoiced = s.server.invoices(customer)[0]!.lines.data.find((line) => !('parent' in line) || line.parent?.type !== 'invoice_item_details')!.quantity;
    expect(lost.outcomes.find((o) => o.metric === 'requests')).toMatchObject({ outcome: 'retry-later' });
    expect(s.proxy!.lost()).toBe(16);
    expect(invoiced).toBe(total);
    expect(after.outcomes.find((o) => o.metric === 'requests')).toMatchObject({ outcome: 'already-existed' });
    // The invoice billed the total at its first attempt: no item bills it a second time.
    expect(s.server.invoiceItems(customer)).toEqual([]);
  });

  it('two senders at once: one that read the records before the other sent a newer late revision bills no second item and sends no older total', async () => {
    // D1 closed at its running total before its period's invoice was finalized (D4 01:00); two late logs of D1 on D5.
    const s = await scenario('60', { lateUsage: 'invoice-item' });
    const { acme, customer } = await invoicedDay(s, { objects: 41, price: { unitAmountDecimal: '3' } });
    s.moveTo(new Date('2026-06-05T10:00:00Z'));
    await s.ingest(D1, 20, 42, [acme], 15);
    const closed = await closeOk(testCloser(s.env, s.now));
    // Revision 2 planned (its outbox record written, pending), not sent yet.
    await planRevision(s.sync(), D1, closed.days.find((d) => d.day === D1)!.written![0]!.revision);
    const billed = s.server.invoices(customer)[0]!.lines.data[0]!.quantity;
    // Sender A reads D1's revision 2, pending; before it holds the lease, sender B sends a newer revision 3 (its item
    // for revision 3's difference, revision 2 superseded) and lets the lease go. The schedule two senders at once can take.
    let other: Promise<void> | undefined;
    const senderB = async () => {
      await s.ingest(D1, 21, 43, [acme], 12);
      const report = await closeOk(testCloser(s.env, s.now));
      const revision = report.days.find((d) => d.day === D1)!.written![0]!.revision;
      await handleStripeMessage(s.sync(), { day: D1, revision });
    };
    const senderA = s.sync();
    const store = senderA.store;
    const afterB = Object.assign(Object.create(store) as typeof store, {
      acquireLease: async (...args: Parameters<typeof store.acquireLease>) => {
        other ??= senderB();
        await other;
        return store.acquireLease(...args);
      },
    });
    const a = await handleStripeMessage({ ...senderA, store: afterB }, { account: acme, sendOnly: true });

    const total = await s.total(acme, 'requests', [D1]);
    const items = s.server.invoiceItems(customer);
    expect(total).toBeGreaterThan(billed);
    // The invoice and the items bill Tally's total once: one item, for revision 3's difference.
    expect(items.map((i) => i.quantity)).toEqual([total - billed]);
    expect(a.outcomes.filter((o) => o.metric === 'requests')).toEqual([]);
    // The meter keeps revision 3's total: revision 2's (lower) never reached it after.
    expect(s.server.events().filter((e) => e.event_name === 'cdn_requests').at(-1)!.payload.value).toBe(String(total));
    const records = (await s.sync().store.records(acme, D1, D1)).filter((r) => r.metric === 'requests');
    expect(records.filter((r) => r.revision > 0).map((r) => [r.revision, r.state])).toEqual([[1, 'delivered'], [2, 'superseded'], [3, 'invoice-finalized']]);
  });

  it('reconcile --invoices adds Stripe\'s invoice items to the invoice line, and an item twice at Stripe is a difference, never a match', async () => {
    const { s, acme, customer, first, billed } = await lateRevision({}, 0);
    const total = await s.total(acme, 'requests', [D1]);
    const reconcile = async () => {
      const io = captureIo();
      const code = await tallyCommand('stripe')(['reconcile', '--invoices', '--json', '--from', D1, '--to', D1], io, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);
      return { code, report: JSON.parse(io.stdout) as { rows: { metric: string; tally: number; invoiced: number; items: number; itemsPlanned: number; problems: string[] }[] } };
    };
    const clean = await reconcile();
    // Someone (an operator's script, a retry after Stripe forgot the key) creates the same late item again.
    const [item] = s.server.invoiceItems(customer);
    const stripe = new Stripe(API_KEY, { ...stripeConnection(s.server.url), maxNetworkRetries: 0 });
    await stripe.invoiceItems.create({ customer, subscription: item!.subscription!, currency: 'usd', unit_amount_decimal: Stripe.Decimal.from('3'), quantity: item!.quantity, metadata: { tally_id: item!.metadata.tally_id! } });
    const twice = await reconcile();

    expect(first.outcomes.find((o) => o.metric === 'requests')).toMatchObject({ outcome: 'invoice-finalized' });
    expect(clean.code).toBe(0);
    expect(clean.report.rows.find((r) => r.metric === 'requests')).toMatchObject({ tally: total, invoiced: billed, items: total - billed, itemsPlanned: total - billed, problems: [] });
    // Before, the invoice line alone was compared with the late usage recorded: exit 0 with the customer billed twice.
    expect(twice.code).toBe(1);
    expect(twice.report.rows.find((r) => r.metric === 'requests')).toMatchObject({ items: 2 * (total - billed), problems: [expect.stringContaining('is at Stripe 2 times')] });
  });

  it('reconcile --invoices finds the metered line of an invoice whose invoice items fill the handful of lines it embeds', async () => {
    const { s, acme, customer, subscription } = await lateRevision({}, 0);
    // Ten more items on the next invoice (period D4..D6): Stripe lists pending items first, so its metered line is the twelfth.
    const stripe = new Stripe(API_KEY, { ...stripeConnection(s.server.url), maxNetworkRetries: 0 });
    for (let i = 0; i < 10; i++) await stripe.invoiceItems.create({ customer, subscription: subscription.id, currency: 'usd', unit_amount_decimal: Stripe.Decimal.from('1'), quantity: 1, description: `setup fee ${i}` });
    await s.ingest('2026-06-05', 11, 7, [acme]);
    await s.sweep(acme);
    s.moveTo(new Date('2026-06-07T02:00:00Z'));
    const io = captureIo();
    const code = await tallyCommand('stripe')(['reconcile', '--invoices', '--json', '--from', '2026-06-04', '--to', '2026-06-06'], io, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);
    const report = JSON.parse(io.stdout) as { rows: { invoice: string; metric: string; tally: number; invoiced: number }[] };
    const next = s.server.invoices(customer).find((invoice) => invoice.period_start === seconds(new Date('2026-06-04T00:00:00Z')))!;

    expect(next.lines.data).toHaveLength(12);
    // Before, the line was not among the ten embedded: no row, "0 differ", exit 0 whatever the invoice billed.
    expect(report.rows.filter((r) => r.invoice === next.id).map((r) => [r.metric, r.tally, r.invoiced])).toEqual([['requests', await s.total(acme, 'requests', ['2026-06-05']), await s.total(acme, 'requests', ['2026-06-05'])]]);
    expect(code).toBe(0);
  });

  it('reconcile --invoices through 429s, 5xx and timeouts: the same report (reads retried with backoff), or a clear error when Stripe never answers', async () => {
    const { s } = await lateRevision({}, 0);
    const proxy = await startChaosProxy(s.server.url, 300);
    servers.push(proxy);
    proxy.setFaults(0, 7);
    const run = async (apiBase: string) => {
      const io = captureIo();
      const code = await tallyCommand('stripe')(['reconcile', '--invoices', '--json', '--from', D1, '--to', D1], io, { ...s.env, ...s.stripeEnv, TALLY_STRIPE_API_BASE: apiBase }, process.cwd(), s.now);
      return { code, stdout: io.stdout, stderr: io.stderr };
    };
    const clean = await run(s.server.url);
    const faulty = await run(await proxy.channel('reads fail half the time', 0.5));
    const down = await run(await proxy.channel('Stripe down', 1));

    const faulted = proxy.log.filter((entry) => entry.channel === 'reads fail half the time' && entry.fault !== 'pass');
    expect(faulted.length).toBeGreaterThan(0);
    // Before, the first fault ended the command with the SDK's error.
    expect(faulty).toEqual(clean);
    expect(clean.code).toBe(0);
    expect(down.code).toBe(1);
    expect(down.stdout).toBe('');
    expect(down.stderr).toMatch(/Stripe did not answer GET \/v1\/billing\/meters after 4 attempt\(s\) with backoff .*nothing was compared/);
  }, 120_000);

  it('a late revision whose invoices Stripe does not answer waits, pending, instead of reaching the meter unreported', async () => {
    const webhooks = await createTestQueues(info, { visibilityTimeoutSeconds: 1, maxReceiveCount: 10 });
    const s = await scenario('60', { webhookQueueUrl: webhooks.queueUrl, lateUsage: 'invoice-item' });
    const { acme, customer } = await invoicedDay(s, { objects: 31, price: { unitAmountDecimal: '3' } });
    s.moveTo(new Date('2026-06-05T10:00:00Z'));
    await s.ingest(D1, 20, 32, [acme], 15);
    const report = await closeOk(testCloser(s.env, s.now));
    const revision = report.days.find((d) => d.day === D1)!.written![0]!.revision;
    const proxy = await startChaosProxy(s.server.url, 300);
    servers.push(proxy);
    proxy.setFaults(0, 11);
    const down = { ...s.sync(), api: new SdkStripeMeterApi({ apiKey: API_KEY, apiBase: await proxy.channel('invoices unreadable', 1, /^\/v1\/invoices$/), readRetry: { attempts: 3, baseMs: 1, maxMs: 4 } }) };
    const requestEvents = () => s.server.events().filter((e) => e.event_name === 'cdn_requests').length;
    const eventsBefore = requestEvents();
    const whileDown = await handleStripeMessage(down, { day: D1, revision });
    const eventsWhileDown = requestEvents() - eventsBefore;
    const pending = (await s.sync().store.records(acme, D1, D1)).find((r) => r.metric === 'requests' && r.revision === revision)!;
    const after = await handleStripeMessage(s.sync(), { account: acme, sendOnly: true });
    const total = await s.total(acme, 'requests', [D1]);

    // Before, it was sent unchecked: on the meter, never on an invoice, no late usage, no item.
    expect(whileDown.outcomes.find((o) => o.metric === 'requests')).toMatchObject({ outcome: 'retry-later', error: expect.stringContaining('Stripe did not answer GET /v1/invoices') });
    expect(eventsWhileDown).toBe(0);
    expect(pending).toMatchObject({ state: 'pending' });
    expect(after.outcomes.find((o) => o.metric === 'requests')).toMatchObject({ outcome: 'invoice-finalized' });
    expect(s.server.invoiceItems(customer).map((item) => item.quantity)).toEqual([total - s.server.invoices(customer)[0]!.lines.data.find((line) => !('parent' in line))!.quantity]);
  });

  it('credits a negative difference: an adjustment below the billed total gives an item at the negated unit amount for what the invoice and the first item overbilled', async () => {
    const { s, acme, customer, first, billed } = await lateRevision({}, 0);
    const late = await s.total(acme, 'requests', [D1]);
    s.moveTo(new Date('2026-06-05T12:00:00Z'));
    const io = captureIo();
    const adjusted = await tallyCommand('adjust')(['--account', acme, '--day', D1, '--metric', 'requests', '--delta', String(-(late - billed) - 5), '--reason', 'credit', '--id', 'ADJ-CREDIT-1'], io, s.env, process.cwd(), s.now);
    const after = await handleStripeMessage(s.sync(), { account: acme });

    expect(adjusted).toBe(0);
    expect(first.outcomes.find((o) => o.metric === 'requests')).toMatchObject({ outcome: 'invoice-finalized' });
    expect(after.outcomes.find((o) => o.metric === 'requests')).toMatchObject({ outcome: 'invoice-finalized', value: billed - 5 });
    const items = s.server.invoiceItems(customer);
    expect(items.map((i) => [i.quantity, i.pricing.unit_amount_decimal, i.amount])).toEqual([
      [late - billed, '3', 3 * (late - billed)],
      [late - billed + 5, '-3', -3 * (late - billed + 5)],
    ]);
    // What the invoice billed plus the items is Tally's total now.
    const itemized = items.reduce((sum, i) => sum + Math.sign(Number(i.pricing.unit_amount_decimal)) * i.quantity, 0);
    expect(billed + itemized).toBe(after.outcomes.find((o) => o.metric === 'requests')!.value);
    expect(items[1]!.discountable).toBe(false);
  });

  it.each([
    ['volume', { tiersMode: 'volume' as const }, /volume price/],
    ['graduated', { tiersMode: 'graduated' as const }, /graduated tiered price/],
    ['package', { packageSize: 100 }, /package price \(100 units a package\)/],
  ])('a %s price gets the webhook alone, with the reason on the record and in tally stripe status', async (_name, price, reason) => {
    const { s, acme, customer, first, record, webhookEvents } = await lateRevision(price, 0);
    const status = captureIo();
    await tallyCommand('stripe')(['status', '--from', D1, '--to', D1], status, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);

    expect(first.outcomes.find((o) => o.metric === 'requests')).toMatchObject({ outcome: 'invoice-finalized' });
    expect(s.server.invoiceItems(customer)).toEqual([]);
    expect(s.server.requests.filter((r) => r.path === '/v1/invoiceitems')).toEqual([]);
    const late = await record();
    expect(late.item).toMatchObject({ state: 'webhook-only', reason: expect.stringMatching(reason) });
    const events = await webhookEvents();
    expect(events).toHaveLength(1);
    expect(events[0]!.data.invoiceItem).toEqual({ created: false, reason: expect.stringMatching(reason) });
    expect(status.stdout).toMatch(new RegExp(`${acme} requests ${D1} rev \\d+: no invoice item \\(webhook only\\): .*${reason.source}`));
  });
});

describe("Stripe's later refusals", () => {
  it('a meter event Stripe answered 200 and then dropped (a customer it does not know) reaches tally stripe status and, once, the alarm\'s count', async () => {
    const s = await scenario('60');
    const [acme, globex] = [uniqueId('acme'), uniqueId('globex')];
    await s.sync().store.link({ account: acme, customer: 'cus_dropped01', linkedAt: `${D1}T00:00:00Z` });
    await s.sync().store.link({ account: globex, customer: 'cus_kept0001', linkedAt: `${D1}T00:00:00Z` });
    s.server.forgetCustomer('cus_dropped01');
    s.moveTo(new Date(`${D1}T10:30:00Z`));
    await s.ingest(D1, 10, 61, [acme, globex]);

    const sent = [await s.sweep(acme), await s.sweep(globex)];
    // The sender's schedule: the count it publishes as StripeMeterErrors (the stripe-meter-errors alarm).
    const pulled = await pullMeterErrors(s.sync());
    const again = await pullMeterErrors(s.sync());
    s.moveTo(new Date(`${D1}T11:30:00Z`));
    await s.ingest(D1, 11, 62, [acme]);
    await s.sweep(acme);
    const later = await pullMeterErrors(s.sync());
    const status = captureIo();
    const code = await tallyCommand('stripe')(['status', '--from', D1, '--to', D1], status, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);
    const json = captureIo();
    await tallyCommand('stripe')(['status', '--json', '--from', D1, '--to', D1], json, { ...s.env, ...s.stripeEnv }, process.cwd(), s.now);
    const noKey = captureIo();
    const { TALLY_STRIPE_API_KEY: _key, ...withoutKey } = s.stripeEnv;
    await tallyCommand('stripe')(['status', '--from', D1, '--to', D1], noKey, { ...s.env, ...withoutKey }, process.cwd(), s.now);
    const unreachable = captureIo();
    const unreachableCode = await tallyCommand('stripe')(['status', '--from', D1, '--to', D1], unreachable, { ...s.env, ...s.stripeEnv, TALLY_STRIPE_API_BASE: 'http://127.0.0.1:1' }, process.cwd(), s.now);

    // Stripe answered 200 to all four (both metrics of both accounts), so Tally recorded them delivered.
    expect(sent.flatMap((r) => r.outcomes.map((o) => o.outcome))).toEqual(['delivered', 'delivered', 'delivered', 'delivered']);
    expect(s.server.billedByDay('cdn_requests', 'cus_dropped01')).toEqual({});
    expect(s.server.coreEvents()).toHaveLength(4);
    expect(pulled).toEqual({ read: 2, reports: 2, dropped: 2 });
    expect(again).toEqual({ read: 2, reports: 0, dropped: 0 });
    expect(later).toEqual({ read: 4, reports: 2, dropped: 2 });
    // Each read after the first asks only for reports since the newest seen (less the hour's overlap).
    const reads = s.server.requests.filter((r) => r.path === '/v2/core/events').slice(0, 3).map((r) => new URLSearchParams(r.query).get('created[gte]'));
    const newestFirst = s.server.coreEvents()[1]!.created;
    expect(reads).toEqual([null, new Date(Date.parse(newestFirst) - 3_600_000).toISOString(), new Date(Date.parse(newestFirst) - 3_600_000).toISOString()]);
    expect(await s.sync().store.meterErrorCursor!()).toBe(s.server.coreEvents()[3]!.created);
    // Recorded reports expire 35 days after Stripe created them (Stripe lists 30 days).
    const recorded = await testClients(info).dynamodb.send(
      new QueryCommand({ TableName: readConfig(s.env).tableName, KeyConditionExpression: 'PK = :pk AND SK > :from', ExpressionAttributeValues: { ':pk': { S: 'STRIPE#METERERR' }, ':from': { S: '2' } } }),
    );
    expect(recorded.Items!.map((item) => [item.SK!.S!.split('#')[0], Number(item.ttl!.N)])).toEqual(
      s.server.coreEvents().map((e) => [e.created, Date.parse(e.created) / 1000 + 35 * 86_400]),
    );
    expect(code).toBe(0);
    expect(status.stdout).toContain("meter events Stripe dropped after accepting them (its meter error reports, last 30 days): 4");
    const dropped = (JSON.parse(json.stdout) as { meterErrors: { code: string; count: number; record: { account: string; metric: string; day: string } | null }[] }).meterErrors;
    expect(dropped.map((d) => [d.code, d.count, d.record?.account, d.record?.metric, d.record?.day]).sort()).toEqual([
      ['meter_event_customer_not_found', 1, acme, 'bytes', D1],
      ['meter_event_customer_not_found', 1, acme, 'bytes', D1],
      ['meter_event_customer_not_found', 1, acme, 'requests', D1],
      ['meter_event_customer_not_found', 1, acme, 'requests', D1],
    ]);
    expect(status.stdout).toMatch(new RegExp(`meter_event_customer_not_found\\s+1\\s+${acme}\\s+requests\\s+${D1}\\s+tally-${D1}-p1-`));
    expect(noKey.stdout).toContain('meter events Stripe dropped after accepting them: not read (set TALLY_STRIPE_API_KEY)');
    // Stripe unreachable: the outbox is still shown, and the reports are said to be unread.
    expect(unreachableCode).toBe(0);
    expect(unreachable.stdout).toContain('outbox record(s)');
    expect(unreachable.stdout).toMatch(/meter events Stripe dropped after accepting them: not read \(Stripe: .+\)/);
    expect(unreachable.stdout).not.toContain(API_KEY);
  });
});

describe('tally stripe check', () => {
  it('fails (exit 1) on a raw meter, a customer with no item on a meter\'s price and a finalization delay shorter than running totals need; prints the delay', async () => {
    const s = await scenario('60');
    const acme = uniqueId('acme');
    const customer = 'cus_checkdelay1';
    s.server.addSubscription({ customer, eventName: 'cdn_requests', start: seconds(new Date(`${D1}T00:00:00Z`)), periodSeconds: 86_400 });
    s.moveTo(new Date(`${D1}T11:00:00Z`));
    await s.ingest(D1, 10, 41, [acme]);
    await linkAccount(s.sync(), acme, customer);
    s.moveTo(new Date(`${D3}T12:00:00Z`));
    const env = { ...s.env, ...s.stripeEnv };

    const withDefaults = captureIo();
    const failed = await tallyCommand('stripe')(['check'], withDefaults, env, process.cwd(), s.now);
    s.server.setFinalizationGrace(3 * 3600);
    s.moveTo(new Date('2026-06-05T12:00:00Z'));
    const longer = captureIo();
    const stillNoBytes = await tallyCommand('stripe')(['check'], longer, env, process.cwd(), s.now);
    s.server.addMeter('cdn_raw', { event_time_window: null });
    const raw = captureIo();
    const rawCode = await tallyCommand('stripe')(['check'], raw, { ...env, TALLY_STRIPE_METERS: '{"requests":"cdn_raw"}' }, process.cwd(), s.now);

    expect(failed).toBe(1);
    expect(withDefaults.stdout).toMatch(/BAD .* no subscription item on a price of meter mtr_test_0002 \(bytes\)/);
    expect(withDefaults.stdout).toContain('was finalized 1 h after its period ended; running totals need 2 h');
    expect(stillNoBytes).toBe(1);
    expect(longer.stdout).not.toContain('was finalized');
    expect(longer.stdout).toContain('no subscription item on a price of meter mtr_test_0002 (bytes)');
    expect(rawCode).toBe(1);
    expect(raw.stdout).toContain('event_time_window is unset, needs day');
  });
});

/**
 * SDK middleware on the real SQS client: each `SendMessageBatch` entry for which `fails(account,
 * seen)` holds (seen: how many calls have carried that account so far) is taken out of the request
 * before it reaches the queue and answered as SQS answers a failed entry (HTTP 200, in `Failed`,
 * `InternalError`, not the sender's fault). Returns each call's entry count and accounts.
 */
function failBatchEntries(client: SQSClient, fails: (account: string, seen: number) => boolean): { entries: number; accounts: string[] }[] {
  const calls: { entries: number; accounts: string[] }[] = [];
  const seen = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'SendMessageBatchCommand') return next(args);
      const input = (args as unknown as { input: { Entries: { Id: string; MessageBody: string }[] } }).input;
      const accountOf = (entry: { MessageBody: string }) => (JSON.parse(entry.MessageBody) as { account: string }).account;
      calls.push({ entries: input.Entries.length, accounts: input.Entries.map(accountOf) });
      const failing = input.Entries.filter((entry) => {
        const account = accountOf(entry);
        seen.set(account, (seen.get(account) ?? 0) + 1);
        return fails(account, seen.get(account)!);
      });
      input.Entries = input.Entries.filter((entry) => !failing.includes(entry));
      const failed = failing.map((entry) => ({ Id: entry.Id, SenderFault: false, Code: 'InternalError', Message: 'injected: entry not queued' }));
      if (input.Entries.length === 0) return { output: { Successful: [], Failed: failed, $metadata: {} }, response: {} } as never;
      const result = await next(args);
      const output = result.output as { Failed?: unknown[] };
      output.Failed = [...(output.Failed ?? []), ...failed];
      return result;
    },
    { step: 'initialize', name: 'failBatchEntries' },
  );
  return calls;
}

/** Receives and deletes `expected` messages of the queue (then one more empty wait), parsed. */
async function drain(client: SQSClient, queueUrl: string, expected: number): Promise<{ account: string; running?: boolean }[]> {
  const messages: { account: string; running?: boolean }[] = [];
  for (let empty = 0; empty < 2 && messages.length <= expected; ) {
    const { Messages = [] } = await client.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: messages.length >= expected ? 1 : 2 }));
    if (Messages.length === 0) empty++;
    for (const message of Messages) {
      messages.push(JSON.parse(message.Body!) as { account: string; running?: boolean });
      await client.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle! }));
    }
  }
  return messages;
}
