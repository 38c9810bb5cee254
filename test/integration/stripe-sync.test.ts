import { DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Stripe from 'stripe';
import { ingestBatch, type IngestDeps } from '../../src/app/ingest/ingest';
import { jsonLog, type Log } from '../../src/app/log';
import { sendStripeBatch } from '../../src/app/billing/stripe-sender';
import { handPendingAccounts, handleStripeMessage, linkAccount, planAccountDays, sendPending, type StripeSyncDeps } from '../../src/app/billing/stripe-sync';
import { sendWebhooks } from '../../src/app/billing/webhook-sender';
import { readConfig } from '../../src/adapters/config';
import { DynamoCloseStore } from '../../src/adapters/dynamodb/dynamodb-close-store';
import { readCloserConfig } from '../../src/adapters/wiring/handoff-config';
import { createStripeHandOff } from '../../src/adapters/wiring/handoff-deps';
import { FetchWebhookTransport } from '../../src/adapters/http/fetch-webhook-transport';
import { SqsStripeSendQueue } from '../../src/adapters/sqs/sqs-stripe-send-queue';
import { readStripeConfig } from '../../src/adapters/stripe/stripe-config';
import { createStripeSyncDeps } from '../../src/adapters/wiring/stripe-deps';
import { stripeConnection } from '../../src/adapters/stripe/stripe-meter-api';
import { meterEventTimestamp, oldestSendableDay } from '../../src/domain/billing/stripe';
import { verifySignature } from '../../src/domain/billing/webhook';
import { generateLog } from '../../src/local/demo/log-generator';
import { captureIo, tallyCommand } from '../support/cli';
import { closeOk, handoffTable, testCloser, webhookReceiver } from '../support/handoff';
import { startStripeServer, type StripeTestServer } from '../support/stripe-server';
import { createTestQueues, putLogObject, s3NotificationMessage, sqsRecord, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';

const info = testStackInfo();
const METERS = '{"requests":"cdn_requests","bytes":"cdn_bytes"}';
const API_KEY = 'sk_test_tally_integration_key_0123456789';
const WEBHOOK_SECRET = 'a-webhook-secret-for-the-tests';

const D1 = '2026-06-01';
const D2 = '2026-06-02';
const ON_TIME = new Date('2026-06-03T01:00:00Z');
const CLOSE_AT = new Date('2026-06-05T12:00:00Z');
const LATE_AT = new Date('2026-06-07T08:00:00Z');
const at = (date: Date) => () => date;
const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/** Every log line any Tally component wrote in this file: none may hold the key. */
const logLines: string[] = [];
const servers: StripeTestServer[] = [];

afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

/** A table, a Stripe server with Tally's two meters (clock pinned to `now`), and the sync wired as the sender wires it. */
async function scenario(now: Date, options: { webhookQueueUrl?: string; stripeQueueUrl?: string; requests?: Map<string, number> } = {}) {
  const { table, env } = await handoffTable(info);
  const server = await startStripeServer(API_KEY);
  servers.push(server);
  server.setClock(() => seconds(now));
  server.addMeter('cdn_requests');
  server.addMeter('cdn_bytes');
  const log: Log = jsonLog((line) => logLines.push(line), 'debug');
  const stripeEnv = { TALLY_STRIPE_API_KEY: API_KEY, TALLY_STRIPE_API_BASE: server.url, TALLY_STRIPE_METERS: METERS, ...(options.stripeQueueUrl === undefined ? {} : { TALLY_STRIPE_QUEUE_URL: options.stripeQueueUrl }) };
  const clients = testClients(info);
  if (options.requests !== undefined) {
    const counted = options.requests;
    clients.dynamodb.middlewareStack.add((next, context) => (args) => {
      counted.set(context.commandName!, (counted.get(context.commandName!) ?? 0) + 1);
      return next(args);
    });
  }
  const sync = (clock: Date = now): StripeSyncDeps =>
    createStripeSyncDeps(
      { tally: readConfig(env), stripe: readStripeConfig(stripeEnv), ...(options.webhookQueueUrl === undefined ? {} : { webhookQueueUrl: options.webhookQueueUrl }) },
      clients,
      API_KEY,
      log,
      { clock: at(clock), retry: { attempts: 6, baseMs: 5, maxMs: 40 } },
    );
  const ingestDeps = testIngestDeps(env, { log });
  return { table, env, server, sync, ingestDeps, stripeEnv, log, closeStore: new DynamoCloseStore({ client: testClients(info).dynamodb, tableName: table }) };
}

async function ingestLog(deps: IngestDeps, day: string, hour: number, seed: number, accounts: string[], when: Date, lines = 40): Promise<void> {
  const log = generateLog({ seed, day, hour, distribution: 'E2STRP', accounts: accounts.map((id, i) => ({ id, weight: i + 1 })), lines, previousDayRate: 0, malformedRate: 0, unattributedRate: 0 });
  const ref = await putLogObject(`cloudfront/${uniqueId('E2STRP')}.${day}-${String(hour).padStart(2, '0')}.x.gz`, log.text);
  const result = await ingestBatch({ Records: [s3NotificationMessage(ref)] }, { ...deps, clock: at(when) });
  expect(result.batchItemFailures).toEqual([]);
}

/** Tally's billable totals (counters; no adjustments in these tests) per day for one account and metric. */
async function tallyTotals(closeStore: DynamoCloseStore, account: string, metric: string, days: string[]): Promise<Record<string, number>> {
  const totals: Record<string, number> = {};
  for (const day of days) totals[day] = (await closeStore.accountDay(account, day)).counters[metric] ?? 0;
  return totals;
}

describe('closed days reach Stripe meters exactly once', () => {
  it('links, pushes and reconciles through the CLI: every closed day in Stripe equals the API total (exit 0)', async () => {
    const s = await scenario(CLOSE_AT);
    const [acme, globex] = [uniqueId('acme'), uniqueId('globex')];
    await ingestLog(s.ingestDeps, D1, 10, 1, [acme, globex], ON_TIME);
    await ingestLog(s.ingestDeps, D2, 11, 2, [acme, globex], ON_TIME);
    await closeOk(testCloser(s.env, at(CLOSE_AT)));
    const env = { ...s.env, ...s.stripeEnv };
    const stripe = tallyCommand('stripe');
    const io = captureIo();

    const check = await stripe(['check'], io, env, process.cwd(), at(CLOSE_AT));
    const link = await stripe(['link', '--account', acme, '--customer', 'cus_acme0001'], io, env, process.cwd(), at(CLOSE_AT));
    const push = await stripe(['push'], io, env, process.cwd(), at(CLOSE_AT));
    const again = await stripe(['push'], io, env, process.cwd(), at(CLOSE_AT));
    const status = captureIo();
    await stripe(['status', '--json'], status, env, process.cwd(), at(CLOSE_AT));
    const reconcile = captureIo();
    const reconciled = await stripe(['reconcile', '--from', D1, '--to', D2], reconcile, env, process.cwd(), at(CLOSE_AT));

    expect([check, link, push, again, reconciled]).toEqual([0, 0, 0, 0, 0]);
    expect(reconcile.stdout).toContain('4 account-day figure(s) compared, 0 differ');
    expect(s.server.billedByDay('cdn_requests', 'cus_acme0001')).toEqual(await tallyTotals(s.closeStore, acme, 'requests', [D1, D2]));
    expect(s.server.billedByDay('cdn_bytes', 'cus_acme0001')).toEqual(await tallyTotals(s.closeStore, acme, 'bytes', [D1, D2]));
    // Two days x two metrics, each sent once; the second push sent nothing; globex is not linked.
    expect(s.server.events()).toHaveLength(4);
    expect(s.server.events().every((event) => event.payload.stripe_customer_id === 'cus_acme0001')).toBe(true);
    const records = (JSON.parse(status.stdout) as { records: { state: string }[] }).records;
    expect(records.map((r) => r.state)).toEqual(['delivered', 'delivered', 'delivered', 'delivered']);
    expect(`${io.stdout}${io.stderr}${status.stdout}${reconcile.stdout}`).not.toContain(API_KEY);
  });

  it('an adjustment to a closed day after its last revision reaches Stripe as a new event; reconcile exits 0', async () => {
    const s = await scenario(CLOSE_AT);
    const acme = uniqueId('acme');
    await ingestLog(s.ingestDeps, D1, 10, 11, [acme], ON_TIME);
    await closeOk(testCloser(s.env, at(CLOSE_AT)));
    const env = { ...s.env, ...s.stripeEnv };
    const stripe = tallyCommand('stripe');
    const io = captureIo();
    await linkAccount(s.sync(), acme, 'cus_adjust001');
    await sendPending(s.sync());
    const measured = (await s.closeStore.accountDay(acme, D1)).counters.requests!;

    const adjusted = await tallyCommand('adjust')(['--account', acme, '--day', D1, '--metric', 'requests', '--delta', '-7', '--reason', 'outage credit', '--id', 'ADJ-STRIPE-1'], io, s.env, process.cwd(), at(CLOSE_AT));
    const before = captureIo();
    const drift = await stripe(['reconcile', '--from', D1, '--to', D1], before, env, process.cwd(), at(CLOSE_AT));
    const push = await stripe(['push', '--account', acme], io, env, process.cwd(), at(CLOSE_AT));
    const again = await stripe(['push', '--account', acme], io, env, process.cwd(), at(CLOSE_AT));
    const after = captureIo();
    const reconciled = await stripe(['reconcile', '--from', D1, '--to', D1], after, env, process.cwd(), at(CLOSE_AT));

    expect([adjusted, drift, push, again, reconciled]).toEqual([0, 1, 0, 0, 0]);
    expect(s.server.billedByDay('cdn_requests', 'cus_adjust001')).toEqual({ [D1]: measured - 7 });
    // requests and bytes once each, then requests again with the adjustment; the second push sent nothing.
    const requests = s.server.events().filter((event) => event.event_name === 'cdn_requests');
    expect(requests.map((event) => [event.payload.value, event.timestamp])).toEqual([
      [String(measured), meterEventTimestamp(D1, 1)],
      [String(measured - 7), meterEventTimestamp(D1, 2)],
    ]);
    expect(new Set(requests.map((event) => event.identifier)).size).toBe(2);
    expect(s.server.events()).toHaveLength(3);
  });

  it('on AWS, tally adjust on a closed day hands the account to the sender queue, which sends the new total by itself', async () => {
    const queues = await createTestQueues(info, { visibilityTimeoutSeconds: 1, maxReceiveCount: 10 });
    const s = await scenario(CLOSE_AT, { stripeQueueUrl: queues.queueUrl });
    const acme = uniqueId('acme');
    await ingestLog(s.ingestDeps, D1, 10, 12, [acme], ON_TIME);
    await closeOk(testCloser(s.env, at(CLOSE_AT)));
    await s.sync().store.link({ account: acme, customer: 'cus_adjust002', linkedAt: CLOSE_AT.toISOString() });
    await planAccountDays(s.sync(), { account: acme, customer: 'cus_adjust002', linkedAt: CLOSE_AT.toISOString() }, await s.closeStore.closedDays(D1, D1));
    await sendPending(s.sync());
    const measured = (await s.closeStore.accountDay(acme, D1)).counters.bytes!;
    const io = captureIo();

    const adjusted = await tallyCommand('adjust')(
      ['--account', acme, '--day', D1, '--metric', 'bytes', '--delta', '1000', '--reason', 'origin egress billed late', '--id', 'ADJ-STRIPE-2'],
      io,
      { ...s.env, TALLY_STRIPE_QUEUE_URL: queues.queueUrl },
      process.cwd(),
      at(CLOSE_AT),
    );
    const { sqs } = testClients(info);
    const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queues.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    const batch = await sendStripeBatch({ Records: (received.Messages ?? []).map((m) => sqsRecord(m.Body!, { messageId: m.MessageId! })) }, { sync: s.sync(), backoffSeconds: 1, maxBackoffSeconds: 1 });
    const reconcile = captureIo();
    const reconciled = await tallyCommand('stripe')(['reconcile', '--from', D1, '--to', D1], reconcile, { ...s.env, ...s.stripeEnv }, process.cwd(), at(CLOSE_AT));

    expect({ adjusted, messages: received.Messages?.map((m) => JSON.parse(m.Body!)), failures: batch.batchItemFailures }).toEqual({ adjusted: 0, messages: [{ account: acme }], failures: [] });
    expect(s.server.billedByDay('cdn_bytes', 'cus_adjust002')).toEqual({ [D1]: measured + 1000 });
    expect(reconciled).toBe(0);
    // requests once; bytes before and after the adjustment.
    expect(s.server.events().map((event) => [event.event_name, event.payload.value])).toEqual(
      expect.arrayContaining([['cdn_bytes', String(measured)], ['cdn_bytes', String(measured + 1000)]]),
    );
    expect(s.server.events()).toHaveLength(3);
  });

  it('reports drift (exit 1) when Stripe bills another figure than Tally', async () => {
    const s = await scenario(CLOSE_AT);
    const acme = uniqueId('acme');
    await ingestLog(s.ingestDeps, D1, 10, 3, [acme], ON_TIME);
    await closeOk(testCloser(s.env, at(CLOSE_AT)));
    await linkAccount(s.sync(), acme, 'cus_drift0001');
    await sendPending(s.sync());
    // Someone else sends a later event for the same customer and day.
    const other = new Stripe(API_KEY, { ...stripeConnection(s.server.url), maxNetworkRetries: 0 });
    await other.billing.meterEvents.create({ event_name: 'cdn_requests', payload: { stripe_customer_id: 'cus_drift0001', value: '1' }, timestamp: meterEventTimestamp(D1, 500) });
    const io = captureIo();

    const code = await tallyCommand('stripe')(['reconcile', '--from', D1, '--to', D1], io, { ...s.env, ...s.stripeEnv }, process.cwd(), at(CLOSE_AT));

    expect(code).toBe(1);
    expect(io.stdout).toMatch(new RegExp(`${acme}\\s+cus_drift0001\\s+requests\\s+${D1}`));
  });

  it('never calls a negative billable total and Stripe\'s 0 equal: drift, exit 1', async () => {
    const s = await scenario(CLOSE_AT);
    const acme = uniqueId('acme');
    await ingestLog(s.ingestDeps, D1, 10, 5, [acme], ON_TIME);
    await closeOk(testCloser(s.env, at(CLOSE_AT)));
    await linkAccount(s.sync(), acme, 'cus_negative01');
    const measured = (await s.closeStore.accountDay(acme, D1)).counters.requests!;
    const adjust = ['--account', acme, '--day', D1, '--metric', 'requests', '--delta', '-99999999', '--reason', 'typo', '--id', 'NEG-STRIPE-1', '--allow-negative'];
    expect(await tallyCommand('adjust')(adjust, captureIo(), s.env, process.cwd(), at(CLOSE_AT))).toBe(0);
    await planAccountDays(s.sync(), { account: acme, customer: 'cus_negative01', linkedAt: CLOSE_AT.toISOString() }, await s.closeStore.closedDays(D1, D1));
    await sendPending(s.sync());
    const io = captureIo();

    const code = await tallyCommand('stripe')(['reconcile', '--from', D1, '--to', D1, '--json'], io, { ...s.env, ...s.stripeEnv }, process.cwd(), at(CLOSE_AT));

    expect(s.server.billedByDay('cdn_requests', 'cus_negative01')).toEqual({ [D1]: 0 });
    expect(code).toBe(1);
    expect(JSON.parse(io.stdout).drift).toEqual([{ account: acme, customer: 'cus_negative01', metric: 'requests', day: D1, tally: measured - 99_999_999, stripe: 0 }]);
  });

  it('a lost answer (event recorded, 500 returned) leaves exactly one effective value', async () => {
    const s = await scenario(CLOSE_AT);
    const acme = uniqueId('acme');
    await ingestLog(s.ingestDeps, D1, 10, 4, [acme], ON_TIME);
    await closeOk(testCloser(s.env, at(CLOSE_AT)));
    s.server.fail({ status: 500, afterRecording: true });
    s.server.fail({ drop: true, afterRecording: true });

    await linkAccount(s.sync(), acme, 'cus_lost0001');
    const report = await sendPending(s.sync());

    const requests = s.server.events().filter((e) => e.event_name === 'cdn_requests');
    expect(requests).toHaveLength(1);
    expect(report.outcomes.map((o) => o.outcome).sort()).toEqual(['already-existed', 'already-existed']);
    expect(s.server.requests.filter((r) => r.path === '/v1/billing/meter_events').map((r) => r.status).sort()).toEqual([0, 400, 400, 500]);
    expect(s.server.billedByDay('cdn_requests', 'cus_lost0001')).toEqual(await tallyTotals(s.closeStore, acme, 'requests', [D1]));
  });

  it('stays exact when a retry comes after Stripe forgot the identifier (24 h): the copy carries the same total and timestamp', async () => {
    let stripeNow = seconds(CLOSE_AT);
    const s = await scenario(CLOSE_AT);
    s.server.setClock(() => stripeNow);
    const acme = uniqueId('acme');
    await ingestLog(s.ingestDeps, D1, 10, 18, [acme], ON_TIME);
    await closeOk(testCloser(s.env, at(CLOSE_AT)));
    await linkAccount(s.sync(), acme, 'cus_forgot001');
    await sendPending(s.sync());
    // As if the acknowledgement had been lost and the record retried a day later.
    const [record] = (await s.sync().store.records(acme, D1, D1)).filter((r) => r.metric === 'requests');
    await s.sync().store.updateRecord(record!, { state: 'pending' });
    stripeNow += 25 * 3600;

    const report = await sendPending(s.sync());

    expect(report.outcomes.map((o) => o.outcome)).toEqual(['delivered']);
    const copies = s.server.events().filter((e) => e.identifier === record!.identifier);
    expect(copies).toHaveLength(2);
    expect(new Set(copies.map((e) => `${e.timestamp}:${e.payload.value}`)).size).toBe(1);
    expect(s.server.billedByDay('cdn_requests', 'cus_forgot001')).toEqual(await tallyTotals(s.closeStore, acme, 'requests', [D1]));
  });

  it('the test server refuses what Stripe refuses: unknown and missing parameters, a bad key', async () => {
    const s = await scenario(CLOSE_AT);
    const stripe = new Stripe(API_KEY, { ...stripeConnection(s.server.url), maxNetworkRetries: 0 });
    const wrongKey = new Stripe('sk_test_not_the_key_0000', { ...stripeConnection(s.server.url), maxNetworkRetries: 0 });
    const event = { event_name: 'cdn_requests', payload: { stripe_customer_id: 'cus_x', value: '1' } };

    await expect(stripe.billing.meterEvents.create({ ...event, quantity: 3 } as never)).rejects.toThrow('Received unknown parameter: quantity');
    await expect(stripe.billing.meterEvents.create({ payload: event.payload } as never)).rejects.toThrow('Missing required param: event_name');
    await expect(stripe.billing.meterEvents.create({ ...event, identifier: 'x'.repeat(101) })).rejects.toThrow('at most 100 characters');
    await expect(stripe.billing.meters.listEventSummaries('mtr_test_0001', { customer: 'cus_x', start_time: 3600, end_time: 86_400, value_grouping_window: 'day' })).rejects.toThrow('UTC day boundaries');
    await expect(wrongKey.billing.meters.list()).rejects.toThrow('Invalid API Key');
  });

  it('while Stripe is down the message comes back after its backoff; the same identifier is delivered once it is up', async () => {
    const s = await scenario(CLOSE_AT);
    const acme = uniqueId('acme');
    await ingestLog(s.ingestDeps, D1, 10, 19, [acme], ON_TIME);
    await closeOk(testCloser(s.env, at(CLOSE_AT)));
    await s.sync().store.link({ account: acme, customer: 'cus_down00001', linkedAt: CLOSE_AT.toISOString() });
    s.server.fail({ status: 503 }, 1000);
    const extended: number[] = [];
    const sender = () => ({
      sync: s.sync(),
      visibility: { extend: async (_message: unknown, seconds: number) => void extended.push(seconds) },
      backoffSeconds: 30,
      maxBackoffSeconds: 900,
    });
    const message = (receiveCount: number) => sqsRecord(JSON.stringify({ day: D1, revision: 1 }), { receiveCount, receiptHandle: `rh-${receiveCount}` });

    const down = await sendStripeBatch({ Records: [message(1)] }, sender());
    const stillDown = await sendStripeBatch({ Records: [message(2)] }, sender());
    s.server.clearFaults();
    const up = await sendStripeBatch({ Records: [message(3)] }, sender());

    expect(down.batchItemFailures).toHaveLength(1);
    expect(stillDown.batchItemFailures).toHaveLength(1);
    expect(up.batchItemFailures).toEqual([]);
    expect(extended).toEqual([30, 60]);
    const sent = s.server.requests.filter((r) => r.path === '/v1/billing/meter_events');
    // Six attempts per metric per receive while down (each 503), then one each.
    expect(sent.filter((r) => r.status === 503)).toHaveLength(2 * 2 * 6);
    expect(sent.filter((r) => r.status === 200)).toHaveLength(2);
    expect(new Set(s.server.events().map((e) => e.identifier)).size).toBe(2);
    const records = await s.sync().store.records(acme, D1, D1);
    expect(records.map((r) => [r.state, r.attempts])).toEqual([
      ['delivered', 13],
      ['delivered', 13],
    ]);
    expect(s.server.billedByDay('cdn_requests', 'cus_down00001')).toEqual(await tallyTotals(s.closeStore, acme, 'requests', [D1]));
  });

  it('what a message left pending when its receives ran out is sent once the closer hands the account to the queue', async () => {
    // On AWS the closer does this each hourly run (handlers/close-days.ts): no one runs tally stripe push.
    const queues = await createTestQueues(info, { visibilityTimeoutSeconds: 1, maxReceiveCount: 10 });
    const s = await scenario(CLOSE_AT, { stripeQueueUrl: queues.queueUrl });
    const [acme, globex, initech] = [uniqueId('acme'), uniqueId('globex'), uniqueId('initech')];
    await ingestLog(s.ingestDeps, D1, 10, 23, [acme, globex, initech], ON_TIME);
    await closeOk(testCloser(s.env, at(CLOSE_AT)));
    for (const [account, customer] of [[acme, 'cus_handoff001'], [globex, 'cus_handoff002'], [initech, 'cus_handoff003']] as const) {
      await s.sync().store.link({ account, customer, linkedAt: CLOSE_AT.toISOString() });
    }
    // initech's days went out; then the revision's last receive while Stripe is down: its message goes
    // to the DLQ, acme's and globex's records stay pending.
    await handleStripeMessage(s.sync(), { account: initech });
    s.server.fail({ status: 503 }, 1000);
    const down = await handleStripeMessage(s.sync(), { day: D1, revision: 1 });
    s.server.clearFaults();
    const pendingBefore = (await s.sync().store.records(acme, D1, D1)).map((r) => r.state);

    const handOff = createStripeHandOff(readCloserConfig({ ...s.env, TALLY_STRIPE_QUEUE_URL: queues.queueUrl }), testClients(info))!;
    const handed = await handPendingAccounts({ ...handOff, clock: at(CLOSE_AT) });
    const { sqs } = testClients(info);
    const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queues.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    const batch = await sendStripeBatch(
      { Records: (received.Messages ?? []).map((m) => sqsRecord(m.Body!, { messageId: m.MessageId! })) },
      { sync: s.sync(), backoffSeconds: 1, maxBackoffSeconds: 1 },
    );
    const again = await handPendingAccounts({ ...handOff, clock: at(CLOSE_AT) });

    expect(down.left).toBe(4);
    expect(pendingBefore).toEqual(['pending', 'pending']);
    // This test's table holds these three links only; initech had nothing pending.
    expect(handed).toEqual({ linked: 3, handed: 2 });
    const bodies = (received.Messages ?? []).map((m) => m.Body!).sort();
    expect(bodies).toEqual([JSON.stringify({ account: acme, sendOnly: true }), JSON.stringify({ account: globex, sendOnly: true })].sort());
    expect(batch.batchItemFailures).toEqual([]);
    expect(s.server.billedByDay('cdn_requests', 'cus_handoff001')).toEqual(await tallyTotals(s.closeStore, acme, 'requests', [D1]));
    expect(s.server.billedByDay('cdn_bytes', 'cus_handoff002')).toEqual(await tallyTotals(s.closeStore, globex, 'bytes', [D1]));
    // Six events in all, each once, though acme's and globex's identifiers were tried while Stripe was down.
    expect(s.server.events()).toHaveLength(6);
    expect(new Set(s.server.events().map((e) => e.identifier)).size).toBe(6);
    expect((await s.sync().store.records(acme, D1, D1)).map((r) => r.state)).toEqual(['delivered', 'delivered']);
    expect(again).toEqual({ linked: 3, handed: 0 });
  });

  it('answers 429 to overlapping calls for a customer and meter; Tally retries and holds one call at a time', async () => {
    const s = await scenario(CLOSE_AT);
    const acme = uniqueId('acme');
    await ingestLog(s.ingestDeps, D1, 10, 5, [acme], ON_TIME);
    await ingestLog(s.ingestDeps, D2, 10, 6, [acme], ON_TIME);
    await closeOk(testCloser(s.env, at(CLOSE_AT)));
    await linkAccount(s.sync(), acme, 'cus_busy0001');
    // A foreign client holds the customer's meter while Tally starts (long enough for a loaded machine to get there).
    s.server.setDelay(600);
    const other = new Stripe(API_KEY, { ...stripeConnection(s.server.url), maxNetworkRetries: 0 });
    const foreign = other.billing.meterEvents.create({ event_name: 'cdn_requests', payload: { stripe_customer_id: 'cus_busy0001', value: '0' }, timestamp: meterEventTimestamp('2026-05-20', 1) });
    await new Promise((resolve) => setTimeout(resolve, 30));

    // Two senders at once (a Lambda and an operator's push): the lease lets one work per customer and meter.
    const [first, second] = await Promise.all([sendPending(s.sync()), sendPending(s.sync())]);
    await foreign;
    s.server.setDelay(0);
    const rest = await sendPending(s.sync());

    const statuses = s.server.requests.filter((r) => r.path === '/v1/billing/meter_events').map((r) => r.status);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThan(0);
    expect(s.server.concurrencyRefusals()).toBe(statuses.filter((status) => status === 429).length);
    expect([...first.outcomes, ...second.outcomes, ...rest.outcomes].filter((o) => o.outcome === 'delivered')).toHaveLength(4);
    expect(new Set(s.server.events().map((e) => e.identifier)).size).toBe(s.server.events().length);
    expect(s.server.billedByDay('cdn_requests', 'cus_busy0001')).toEqual({ '2026-05-20': 0, ...(await tallyTotals(s.closeStore, acme, 'requests', [D1, D2])) });
  });

  it('two senders at once never overlap at Stripe: the lease holds one call per customer and meter', async () => {
    const s = await scenario(CLOSE_AT);
    const acme = uniqueId('acme');
    await ingestLog(s.ingestDeps, D1, 10, 13, [acme], ON_TIME);
    await ingestLog(s.ingestDeps, D2, 10, 14, [acme], ON_TIME);
    await closeOk(testCloser(s.env, at(CLOSE_AT)));
    await linkAccount(s.sync(), acme, 'cus_lease0001');
    s.server.setDelay(100);

    const reports = await Promise.all([sendPending(s.sync()), sendPending(s.sync()), sendPending(s.sync())]);
    s.server.setDelay(0);
    const rest = await sendPending(s.sync());

    expect(s.server.concurrencyRefusals()).toBe(0);
    const outcomes = [...reports.flatMap((r) => r.outcomes), ...rest.outcomes];
    expect(outcomes.filter((o) => o.outcome === 'delivered')).toHaveLength(4);
    expect(outcomes.some((o) => o.outcome === 'busy')).toBe(true);
    expect(s.server.events()).toHaveLength(4);
  });

  it.each(['timestamp', 'receipt'] as const)('revision 2 replaces revision 1 (Stripe ordering a day by %s), sent by the closer through the sender queue', async (order) => {
    const queues = await createTestQueues(info, { visibilityTimeoutSeconds: 1, maxReceiveCount: 10 });
    const s = await scenario(LATE_AT, { stripeQueueUrl: queues.queueUrl });
    s.server.setOrder(order);
    const acme = uniqueId('acme');
    await ingestLog(s.ingestDeps, D1, 10, 7, [acme], ON_TIME);
    await s.sync(CLOSE_AT).store.link({ account: acme, customer: 'cus_rev00001', linkedAt: CLOSE_AT.toISOString() });
    const closer = (when: Date) => testCloser(s.env, at(when), { stripeQueue: new SqsStripeSendQueue({ client: testClients(info).sqs, queueUrl: queues.queueUrl }) });
    const drain = async (when: Date) => {
      const { sqs } = testClients(info);
      for (;;) {
        const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queues.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, AttributeNames: ['All'] }));
        if ((received.Messages ?? []).length === 0) return;
        for (const message of received.Messages!) {
          const result = await sendStripeBatch({ Records: [sqsRecord(message.Body!, { messageId: message.MessageId! })] }, { sync: s.sync(when), backoffSeconds: 1, maxBackoffSeconds: 1 });
          expect(result.batchItemFailures).toEqual([]);
          await sqs.send(new DeleteMessageCommand({ QueueUrl: queues.queueUrl, ReceiptHandle: message.ReceiptHandle! }));
        }
      }
    };

    await closeOk(closer(CLOSE_AT));
    await drain(CLOSE_AT);
    const revision1 = s.server.billedByDay('cdn_requests', 'cus_rev00001')[D1];
    await ingestLog(s.ingestDeps, D1, 22, 8, [acme], LATE_AT, 25);
    await closeOk(closer(LATE_AT));
    await drain(LATE_AT);

    const total = (await tallyTotals(s.closeStore, acme, 'requests', [D1]))[D1]!;
    expect(revision1).toBeLessThan(total);
    expect(s.server.billedByDay('cdn_requests', 'cus_rev00001')).toEqual({ [D1]: total });
    expect(s.server.events().filter((e) => e.event_name === 'cdn_requests').map((e) => [e.timestamp, e.payload.value])).toEqual([
      [meterEventTimestamp(D1, 1), String(revision1)],
      [meterEventTimestamp(D1, 2), String(total)],
    ]);
  });

  it('sends the oldest day inside the window, not the day before: that one gets a signed stripe.late_usage webhook (formerly stripe.adjustment_required)', async () => {
    const now = new Date('2026-07-06T00:00:00Z');
    const webhookQueues = await createTestQueues(info, { visibilityTimeoutSeconds: 1, maxReceiveCount: 10 });
    const s = await scenario(now, { webhookQueueUrl: webhookQueues.queueUrl });
    const acme = uniqueId('acme');
    await ingestLog(s.ingestDeps, D1, 10, 9, [acme], ON_TIME);
    await ingestLog(s.ingestDeps, D2, 10, 10, [acme], ON_TIME);
    await closeOk(testCloser(s.env, at(CLOSE_AT)));
    const link = { account: acme, customer: 'cus_old00001', linkedAt: now.toISOString() };
    await s.sync().store.link(link);
    // Stripe itself still takes D1 (35 days): Tally's margin refuses it.
    expect(oldestSendableDay(now)).toBe(D2);
    expect(meterEventTimestamp(D1, 1)).toBeGreaterThan(seconds(now) - 35 * 86_400);

    await planAccountDays(s.sync(), link, await s.closeStore.closedDays(D1, D2));
    const report = await sendPending(s.sync(), { from: D1, to: D2 });

    expect(report.outcomes.filter((o) => o.day === D1).map((o) => o.outcome)).toEqual(['too-old', 'too-old']);
    expect(report.outcomes.filter((o) => o.day === D2).map((o) => o.outcome)).toEqual(['delivered', 'delivered']);
    expect(Object.keys(s.server.billedByDay('cdn_requests', 'cus_old00001'))).toEqual([D2]);
    const receiver = await webhookReceiver();
    try {
      const { sqs } = testClients(info);
      const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl: webhookQueues.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
      const bodies = (received.Messages ?? []).map((m) => m.Body!);
      await sendWebhooks({ Records: bodies.map((body) => sqsRecord(body)) }, { url: receiver.url, secret: WEBHOOK_SECRET, transport: new FetchWebhookTransport(), backoffSeconds: 1, maxBackoffSeconds: 1, log: s.log });
      const events = receiver.received.map((r) => ({ verified: verifySignature(WEBHOOK_SECRET, r.signature, r.body, Math.floor(Date.now() / 1000)), ...(JSON.parse(r.body) as { type: string; data: Record<string, unknown> }) }));
      expect(events.map((e) => [e.type, e.verified, e.data.day, e.data.metric, e.data.reason, e.data.sentValue, e.data.billed]).sort()).toEqual([
        ['stripe.late_usage', true, D1, 'bytes', 'too-old', null, 0],
        ['stripe.late_usage', true, D1, 'requests', 'too-old', null, 0],
      ]);
      const requests = events.find((e) => e.data.metric === 'requests')!;
      expect(requests.data.currentValue).toBe((await tallyTotals(s.closeStore, acme, 'requests', [D1]))[D1]);
    } finally {
      await receiver.close();
    }
    // The server refuses what is past 35 days, as Stripe does.
    const other = new Stripe(API_KEY, { ...stripeConnection(s.server.url), maxNetworkRetries: 0 });
    await expect(other.billing.meterEvents.create({ event_name: 'cdn_requests', payload: { stripe_customer_id: 'cus_x', value: '1' }, timestamp: seconds(now) - 35 * 86_400 - 1 })).rejects.toThrow(/35 calendar days/);
  });

  it('sends nothing for an account that is not linked, and nothing after unlink', async () => {
    const s = await scenario(CLOSE_AT);
    const [acme, globex] = [uniqueId('acme'), uniqueId('globex')];
    await ingestLog(s.ingestDeps, D1, 10, 11, [acme, globex], ON_TIME);
    await closeOk(testCloser(s.env, at(CLOSE_AT)));
    const env = { ...s.env, ...s.stripeEnv };
    const stripe = tallyCommand('stripe');

    const linked = await stripe(['link', '--account', acme, '--customer', 'cus_gone0001'], captureIo(), env, process.cwd(), at(CLOSE_AT));
    const unlinked = await stripe(['unlink', '--account', acme], captureIo(), env, process.cwd(), at(CLOSE_AT));
    const push = await stripe(['push'], captureIo(), env, process.cwd(), at(CLOSE_AT));
    const onlyGlobex = await stripe(['push', '--account', globex], captureIo(), env, process.cwd(), at(CLOSE_AT));

    expect([linked, unlinked, push, onlyGlobex]).toEqual([0, 0, 0, 2]);
    expect(s.server.requests.filter((r) => r.path === '/v1/billing/meter_events')).toEqual([]);
  });

  it('refuses to link an account with no measured usage unless --force (exit 2, no link stored)', async () => {
    const s = await scenario(CLOSE_AT);
    const typo = uniqueId('nosuchacct');
    const env = { ...s.env, ...s.stripeEnv };
    const io = captureIo();

    const refused = await tallyCommand('stripe')(['link', '--account', typo, '--customer', 'cus_typo0001'], io, env, process.cwd(), at(CLOSE_AT));
    const storedAfterRefusal = await s.sync().store.linkOf(typo);
    const forced = await tallyCommand('stripe')(['link', '--account', typo, '--customer', 'cus_typo0001', '--force'], captureIo(), env, process.cwd(), at(CLOSE_AT));

    expect(refused).toBe(2);
    expect(io.stderr).toBe(`tally stripe link: account "${typo}" has no measured usage in ${s.table}: check the id, or pass --force to link it anyway\n`);
    expect(storedAfterRefusal).toBeUndefined();
    expect(forced).toBe(0);
    expect(await s.sync().store.linkOf(typo)).toEqual(expect.objectContaining({ account: typo, customer: 'cus_typo0001' }));
  });

  it('sends days never sent to the customer an account is relinked to, and nothing to the old one', async () => {
    const s = await scenario(CLOSE_AT);
    const acme = uniqueId('acme');
    await ingestLog(s.ingestDeps, D1, 10, 15, [acme], ON_TIME);
    await closeOk(testCloser(s.env, at(CLOSE_AT)));

    const first = await linkAccount(s.sync(), acme, 'cus_before001');
    const second = await linkAccount(s.sync(), acme, 'cus_after0001');
    const report = await sendPending(s.sync());

    expect([first.planned, second.planned]).toEqual([2, 0]);
    expect(second.previous?.customer).toBe('cus_before001');
    expect(report.outcomes.map((o) => o.outcome)).toEqual(['delivered', 'delivered']);
    expect(new Set(s.server.events().map((e) => e.payload.stripe_customer_id))).toEqual(new Set(['cus_after0001']));
    expect(s.server.billedByDay('cdn_requests', 'cus_after0001')).toEqual(await tallyTotals(s.closeStore, acme, 'requests', [D1]));
  });

  it('check needs Stripe alone: it runs with no table, no stack, in a folder where npm start never ran', async () => {
    const s = await scenario(CLOSE_AT);
    const empty = mkdtempSync(join(tmpdir(), 'tally-stripe-check-'));
    const io = captureIo();

    const code = await tallyCommand('stripe')(['check'], io, s.stripeEnv, empty, at(CLOSE_AT));

    expect(io.stderr).toBe('');
    expect(code).toBe(0);
    expect(io.stdout).toMatch(/^ok  requests -> cdn_requests \(/m);
    expect(io.stdout).toMatch(/^ok  bytes -> cdn_bytes \(/m);
  });

  it('refuses an unsuitable meter in check (exit 1) and records a refused event as failed, without retrying it', async () => {
    const s = await scenario(CLOSE_AT);
    s.server.addMeter('cdn_hits', { event_time_window: null });
    const io = captureIo();
    const code = await tallyCommand('stripe')(['check'], io, { ...s.env, ...s.stripeEnv, TALLY_STRIPE_METERS: '{"requests":"cdn_hits","bytes":"cdn_missing"}' }, process.cwd(), at(CLOSE_AT));
    expect(code).toBe(1);
    expect(io.stdout).toContain('event_time_window is unset, needs day');
    expect(io.stdout).toContain('no meter has event_name cdn_missing');
    expect(io.stdout).toContain('stripe billing meters create');

    const acme = uniqueId('acme');
    await ingestLog(s.ingestDeps, D1, 10, 12, [acme], ON_TIME);
    await closeOk(testCloser(s.env, at(CLOSE_AT)));
    await linkAccount(s.sync(), acme, 'cus_refused01');
    s.server.fail({ status: 400 }, 2);
    const report = await sendPending(s.sync());
    expect(report.outcomes.map((o) => o.outcome)).toEqual(['failed', 'failed']);
    expect(s.server.requests.filter((r) => r.path === '/v1/billing/meter_events')).toHaveLength(2);
    expect(logLines.some((line) => line.includes('"stripe meter event failed"'))).toBe(true);

    const again = await sendPending(s.sync());
    const retried = await tallyCommand('stripe')(['push', '--retry-failed', '--account', acme], captureIo(), { ...s.env, ...s.stripeEnv }, process.cwd(), at(CLOSE_AT));
    expect(again.outcomes).toEqual([]);
    expect(retried).toBe(0);
    expect(s.server.billedByDay('cdn_requests', 'cus_refused01')).toEqual(await tallyTotals(s.closeStore, acme, 'requests', [D1]));
  });

  it('costs a bounded number of DynamoDB requests per meter event (measured)', async () => {
    const requests = new Map<string, number>();
    const s = await scenario(CLOSE_AT, { requests });
    const accounts = Array.from({ length: 10 }, (_, i) => uniqueId(`cost${i}`));
    await ingestLog(s.ingestDeps, D1, 10, 16, accounts, ON_TIME, 200);
    await ingestLog(s.ingestDeps, D2, 10, 17, accounts, ON_TIME, 200);
    await closeOk(testCloser(s.env, at(CLOSE_AT)));
    for (const [i, account] of accounts.entries()) await s.sync().store.link({ account, customer: `cus_cost${String(i).padStart(4, '0')}`, linkedAt: CLOSE_AT.toISOString() });
    requests.clear();

    const started = Date.now();
    for (const day of [D1, D2]) await handleStripeMessage(s.sync(), { day, revision: 1 });
    const elapsed = Date.now() - started;

    const events = s.server.events().length;
    const total = [...requests.values()].reduce((sum, n) => sum + n, 0);
    // eslint-disable-next-line no-console
    console.log(`stripe sender: ${events} meter events, ${total} DynamoDB requests (${(total / events).toFixed(2)} per event: ${JSON.stringify(Object.fromEntries(requests))}), ${elapsed} ms`);
    expect(events).toBe(accounts.length * 2 * 2);
    // 7.15 before the group's records were read again under its lease (one Query per account and metric: 8.15).
    expect(total / events).toBeLessThan(9);
  });

  it('writes the API key into no log line', () => {
    expect(logLines.length).toBeGreaterThan(20);
    expect(logLines.filter((line) => line.includes(API_KEY))).toEqual([]);
    expect(logLines.filter((line) => line.includes('tally_integration_key'))).toEqual([]);
  });
});
