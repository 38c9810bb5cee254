import { writeFileSync } from 'node:fs';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { jsonLog, type Log } from '../../src/app/log';
import { periodHourTotals } from '../../src/app/billing/stripe-hours';
import { daysOfPeriod, reconcileInvoices } from '../../src/app/billing/stripe-reconcile';
import { handleStripeMessage, planLinked, sendableWindow, sendPending, type SendReport, type StripeSyncDeps } from '../../src/app/billing/stripe-sync';
import type { StripeSendMessage } from '../../src/app/ports';
import { readConfig } from '../../src/adapters/config';
import { readStripeConfig } from '../../src/adapters/stripe/stripe-config';
import { SdkStripeMeterApi, StripeUnavailableError } from '../../src/adapters/stripe/stripe-meter-api';
import { createStripeSyncDeps } from '../../src/adapters/wiring/stripe-deps';
import { addDays, dayOf } from '../../src/domain/days';
import { usageKey } from '../../src/domain/counters/keys';
import { isHourAttribute } from '../../src/domain/hours';
import { generateLog } from '../../src/local/demo/log-generator';
import { closeOk, handoffTable, testCloser } from '../support/handoff';
import { captureIo, tallyCommand } from '../support/cli';
import { startChaosProxy, type ChaosProxy } from '../support/stripe-chaos-proxy';
import { startStripeServer, type StripeTestServer } from '../support/stripe-server';
import { putLogObject, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';

/**
 * The Stripe sender in hour mode under hostile faults, against the Stripe model of the tests
 * (test/support/stripe-server.ts) behind a seeded chaos proxy (test/support/stripe-chaos-proxy.ts:
 * lost answers after Stripe applied the event, timeouts before and after, 429, 5xx) and a
 * DynamoDB middleware that kills a sender between its writes (an unseen death: the Lambda
 * vanished, its lease left to expire, sometimes several in a row; often right after Stripe
 * acknowledged an event and before the outbox says so). Time is the test's clock, shared by
 * Tally and the model: days close (TALLY_CLOSE_GRACE_HOURS=12), daily periods from 15:00 UTC
 * end and their invoices are finalized an hour later (Stripe's default grace,
 * https://docs.stripe.com/billing/subscriptions/usage-based/configure-grace-period), late logs
 * revise closed days, TALLY_STRIPE_WINDOW switches day <-> hour mid-run (new meters: the old
 * window's are kept by the subscription), and `tally backfill --hours` re-splits days counted
 * without hours.
 *
 * The law, checked after every sender run and at every event Stripe received in it: for every
 * day and metric, what Stripe bills the customer over all meters is never above Tally's counters
 * and a day is never on both windows' meters (never double); no record fails but a day held
 * after a switch. At the end, faults off, the senders settle, the operator sends what a
 * switch held (`push --retry-failed`, the old price removed): the current window's meters bill
 * every day exactly Tally's counters (never missing), in hour mode every daily period exactly
 * Tally's hours in it, no invoice item was created twice, and `reconcile --invoices` run through
 * the faulting proxy reports exactly what the model holds (checkReconcileInvoices).
 *
 * A failing seed replays: faults are decided per request identity and sender run, not by arrival
 * order (test/support/stripe-chaos-proxy.ts); TALLY_STRIPE_CHAOS_FAULTS=<file> writes them and the
 * trail. TALLY_STRIPE_CHAOS_SEED=<n> runs that seed alone;
 * TALLY_STRIPE_CHAOS_SEEDS=<count> (default 3, about 30 s each) runs seeds 1..count, =<a>..<b> seeds a to b.
 */
const info = testStackInfo();
const API_KEY = 'sk_test_tally_chaos_key_0123456789';
const D1 = '2026-11-01';
const METRICS = ['requests', 'bytes'] as const;
const METERS = { hour: { requests: 'req_hour', bytes: 'bytes_hour' }, day: { requests: 'req_day', bytes: 'bytes_day' } } as const;
type Window = keyof typeof METERS;
const SDK_TIMEOUT_MS = 250;
/**
 * `TALLY_STRIPE_CHAOS_SERIAL=1`: the two senders "at once" run one after the other and each works
 * on one group at a time. The proxy's faults follow each request's identity, so what is left to
 * vary between two replays of a seed is this concurrency: serial, a seed replays the same trail.
 */
const SERIAL = process.env.TALLY_STRIPE_CHAOS_SERIAL === '1';
const seconds = (date: Date) => Math.floor(date.getTime() / 1000);
const closers: { close(): Promise<void> }[] = [];

afterAll(async () => {
  await Promise.all(closers.map((c) => c.close()));
});

/** A small seeded generator (mulberry32): a seed replays the same faults and timeline. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** How a sender dies in a run: at its n-th write to the table (before or after DynamoDB applied it), or at its first "delivered" write. */
type Death = { kind: 'nth-write'; n: number; applied: boolean } | { kind: 'at-delivered' };

class SenderDied extends Error {}

/**
 * A DynamoDB client of one sender run that dies as `death` says: from then on every call of the
 * run fails (the process is gone; its lease stays until it expires). SDK middleware, the table is real.
 */
function mortalClient(death: Death | undefined): DynamoDBClient {
  const { dynamodb } = testClients(info);
  if (death === undefined) return dynamodb;
  let writes = 0;
  let dead = false;
  dynamodb.middlewareStack.add(
    (next, context) => async (args) => {
      if (dead) throw new SenderDied('the sender is dead');
      const write = /^(Put|Update|Delete)ItemCommand$/.test(context.commandName ?? '');
      if (!write) return next(args);
      writes++;
      const input = (args as unknown as { input: { ExpressionAttributeValues?: Record<string, { S?: string }> } }).input;
      if (death.kind === 'at-delivered' && input.ExpressionAttributeValues?.[':state']?.S === 'delivered') {
        dead = true;
        throw new SenderDied('died after Stripe acknowledged, before the outbox said so');
      }
      if (death.kind === 'nth-write' && writes === death.n) {
        dead = true;
        if (death.applied) await next(args);
        throw new SenderDied(`died at write ${death.n}${death.applied ? ' (applied)' : ''}`);
      }
      return next(args);
    },
    { step: 'deserialize', name: 'chaosDeath' },
  );
  return dynamodb;
}

interface Chaos {
  readonly seed: number;
  readonly server: StripeTestServer;
  readonly proxy: ChaosProxy;
  readonly account: string;
  readonly customer: string;
  /** Every check's failure, with the step that produced it. */
  readonly violations: string[];
  /** What happened, for a failing seed's message. */
  readonly trail: string[];
}

async function runSeed(seed: number): Promise<Chaos> {
  const random = seeded(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const { env: tableEnv } = await handoffTable(info);
  const env = { ...tableEnv, TALLY_CLOSE_GRACE_HOURS: '12' };
  const account = uniqueId('chaos');
  const customer = `cus_chaos${seed}x${account.replace(/[^A-Za-z0-9]/g, '').slice(-8)}`;
  const server = await startStripeServer(API_KEY);
  // A request's fault is decided by its identity (test/support/stripe-chaos-proxy.ts): what differs between two runs of the seed is named alike.
  const stable = (identity: string) => identity.split(account).join('ACCOUNT').split(customer).join('CUSTOMER').replace(/-[0-9a-f]{20}\b/g, '-DIGEST');
  const proxy = await startChaosProxy(server.url, SDK_TIMEOUT_MS * 3, stable);
  closers.push(server, proxy);
  let now = new Date(`${D1}T00:10:00Z`);
  server.setClock(() => seconds(now));
  const meterIds: Record<string, string> = {};
  for (const window of ['hour', 'day'] as const) for (const metric of METRICS) meterIds[METERS[window][metric]] = server.addMeter(METERS[window][metric], { event_time_window: window }).id;
  // Daily periods from 15:00 UTC billing all four meters (the old window's price kept while switching).
  const subscription = server.addSubscription({ customer, eventName: 'req_hour', alsoEventNames: ['req_day', 'bytes_hour', 'bytes_day'], start: seconds(new Date(`${D1}T15:00:00Z`)), periodSeconds: 86_400 });
  const lateUsage = random() < 0.5 ? 'invoice-item' : 'webhook';
  let window: Window = random() < 0.75 ? 'hour' : 'day';
  const log: Log = jsonLog(() => undefined, 'error');
  const stripeEnv = (w: Window) => ({
    TALLY_STRIPE_API_KEY: API_KEY,
    TALLY_STRIPE_API_BASE: server.url,
    TALLY_STRIPE_METERS: JSON.stringify(METERS[w]),
    TALLY_STRIPE_RUNNING_MINUTES: '60',
    TALLY_STRIPE_WINDOW: w,
    TALLY_STRIPE_LATE_USAGE: lateUsage,
  });
  /** One sender (a Lambda instance): its own table client, which may die, and Stripe through the chaos proxy. */
  const sender = (death?: Death, apiBase = proxy.url): StripeSyncDeps => ({
    ...createStripeSyncDeps({ tally: readConfig(env), stripe: readStripeConfig(stripeEnv(window)) }, { dynamodb: mortalClient(death), sqs: testClients(info).sqs }, API_KEY, log, {
      clock: () => now,
      retry: { attempts: 3, baseMs: 1, maxMs: 4 },
      // TALLY_STRIPE_CHAOS_SERIAL=1: one (account, metric) group at a time, so a death at the n-th write hits the same write in every replay.
      ...(SERIAL ? { concurrency: 1 } : {}),
    }),
    api: new SdkStripeMeterApi({ apiKey: API_KEY, apiBase, timeoutMs: SDK_TIMEOUT_MS, readRetry: { attempts: 3, baseMs: 1, maxMs: 4 } }),
  });
  proxy.setFaults(0, seed);
  const chaos: Chaos = { seed, server, proxy, account, customer, violations: [], trail: [] };
  const store = sender().store;
  await store.link({ account, customer, linkedAt: now.toISOString() });
  const ingestDeps = testIngestDeps(env, { log });
  const closeStore = sender().closeStore;
  const hourless = new Set<string>();
  const decided = new Set<string>();

  const ingest = async (day: string, hour: number, lines: number) => {
    if (!decided.has(day)) {
      decided.add(day);
      // A day counted as if before Tally kept hours: its shards lose their hours (backfill --hours restores them).
      if (random() < 0.2) hourless.add(day);
    }
    const generated = generateLog({ seed: Math.floor(random() * 1e9), day, hour, distribution: 'E2CHAOS', accounts: [{ id: account, weight: 1 }], lines, previousDayRate: 0, malformedRate: 0, unattributedRate: 0 });
    const ref = await putLogObject(`cloudfront/${uniqueId('E2CHAOS')}.${day}-${String(hour).padStart(2, '0')}.x.gz`, generated.text);
    const at = now;
    const result = await ingestBatch({ Records: [s3NotificationMessage(ref)] }, { ...ingestDeps, clock: () => at });
    expect(result.batchItemFailures).toEqual([]);
    if (hourless.has(day)) await forgetShardHours(env, account, day);
    chaos.trail.push(`${now.toISOString()} ingest ${day} ${hour} x${lines}${hourless.has(day) ? ' (hourless)' : ''}`);
  };

  /** Tally's counters of each day so far: the law's figure. */
  const tallyDays = async (): Promise<Map<string, Record<string, number>>> => {
    const days = new Map<string, Record<string, number>>();
    for (let day = D1; day <= dayOf(now); day = addDays(day, 1)) {
      const { counters } = await closeStore.accountDay(account, day);
      days.set(day, Object.fromEntries(METRICS.map((m) => [m, counters[m] ?? 0])));
    }
    return days;
  };
  const billed = (w: Window, metric: string, day: string) => server.billedByDay(METERS[w][metric as 'requests'], customer)[day] ?? 0;

  // Once the operator sent the held days (push --retry-failed, the old window's price removed), only the current window's meters bill.
  let oldPriceRemoved = false;
  /** Never double: no day above Tally's counters over all meters billed, none on both windows' meters. */
  // Stripe's kept event per meter and window (receipt order, as the model keeps them), replayed event by event.
  const kept = new Map<string, number>();
  let replayed = 0;
  const meterOf = new Map<string, { window: Window; metric: string }>(
    (['hour', 'day'] as const).flatMap((w) => METRICS.map((metric) => [METERS[w][metric], { window: w, metric }] as const)),
  );
  const checkNeverDouble = async (after: string) => {
    const days = await tallyDays();
    // At every event received since the last check, not only after the run: a day is never billed above Tally's counters.
    const events = server.events().filter((e) => e.payload.stripe_customer_id === customer);
    for (; replayed < events.length; replayed++) {
      const event = events[replayed]!;
      const meter = meterOf.get(event.event_name)!;
      const windowStart = event.timestamp - (event.timestamp % (meter.window === 'hour' ? 3_600 : 86_400));
      kept.set(`${event.event_name} ${windowStart}`, Number(event.payload.value));
      const day = dayOf(new Date(event.timestamp * 1000));
      let billedThen = 0;
      for (const [key, value] of kept) {
        const [name, start] = key.split(' ');
        const of = meterOf.get(name!)!;
        if (of.metric !== meter.metric || dayOf(new Date(Number(start) * 1000)) !== day) continue;
        if (oldPriceRemoved && of.window !== window) continue;
        billedThen += value;
      }
      const total = days.get(day)?.[meter.metric] ?? 0;
      if (billedThen > total) chaos.violations.push(`after ${after}, at event ${event.identifier} (${event.event_name} ${event.payload.value}): ${day} ${meter.metric} billed ${billedThen} > Tally's ${total}`);
    }
    for (const [day, totals] of days) {
      for (const metric of METRICS) {
        const hour = oldPriceRemoved && window !== 'hour' ? 0 : billed('hour', metric, day);
        const dayBilled = oldPriceRemoved && window !== 'day' ? 0 : billed('day', metric, day);
        if (hour + dayBilled > totals[metric]!) chaos.violations.push(`after ${after}: ${day} ${metric} billed ${hour} (hour meters) + ${dayBilled} (day meters) > Tally's ${totals[metric]}`);
        if (hour > 0 && dayBilled > 0) chaos.violations.push(`after ${after}: ${day} ${metric} on both windows' meters (${hour} hour, ${dayBilled} day)`);
      }
    }
  };

  let deathStreak = false;
  let runs = 0;
  /** One sender run under faults: it may die; afterwards the law is checked once its last calls have landed. */
  const run = async (name: string, work: (deps: StripeSyncDeps) => Promise<SendReport>, faults = true): Promise<boolean> => {
    let death: Death | undefined;
    if (faults && (deathStreak || random() < 0.2)) {
      death = random() < 0.4 ? { kind: 'at-delivered' } : { kind: 'nth-write', n: 1 + Math.floor(random() * 30), applied: random() < 0.5 };
    }
    deathStreak = death !== undefined && random() < 0.5;
    // Each run on a channel of its own, with its own chance of a fault: its faults depend on its own requests alone.
    const apiBase = await proxy.channel(`run ${++runs}`, faults ? pick([0, 0.1, 0.3, 0.6]) : 0);
    let outcome: string;
    let done = false;
    try {
      const report = await work(sender(death, apiBase));
      done = report.left === 0;
      outcome = `left ${report.left}, ${report.outcomes.map((o) => `${o.day}${o.hour === undefined ? '' : `T${o.hour}`}/${o.metric}:${o.outcome}`).join(' ')}`;
    } catch (error) {
      outcome = `${error instanceof SenderDied ? 'died' : 'error'}: ${(error as Error).message}`;
    }
    await proxy.drained();
    chaos.trail.push(`${now.toISOString()} [${window}] ${name}${death === undefined ? '' : ` (death ${JSON.stringify(death)})`}: ${outcome}`);
    await checkNeverDouble(`${name} at ${now.toISOString()}`);
    return done;
  };
  /**
   * The sender's queue: a message whose run died, failed or left work comes back later (SQS
   * redelivers it after its visibility timeout), as on AWS; the rest are deleted.
   */
  const inbox: { message: StripeSendMessage; receives: number }[] = [];
  const nameOf = (message: StripeSendMessage) => ('day' in message ? `revision ${message.day} r${message.revision}` : 'running' in message ? 'sweep' : 'send-only');
  const deliver = async (entry: { message: StripeSendMessage; receives: number }, faults = true) => {
    entry.receives++;
    const ok = await run(`${nameOf(entry.message)}${entry.receives > 1 ? ` (receive ${entry.receives})` : ''}`, (deps) => handleStripeMessage(deps, entry.message), faults);
    if (!ok) inbox.push(entry);
  };
  const enqueue = (message: StripeSendMessage) => inbox.push({ message, receives: 0 });
  /** The hourly closer: closes what is due and queues each revision it wrote; hands the account over when something is pending. */
  const closer = async () => {
    const report = await closeOk(testCloser(env, () => now));
    for (const day of report.days) for (const { revision } of day.written ?? []) enqueue({ day: day.day, revision });
    if ((await store.records(account, addDays(dayOf(now), -60), dayOf(now))).some((r) => r.state === 'pending')) enqueue({ account, sendOnly: true });
  };
  const backfill = async (day: string) => {
    const io = captureIo();
    const code = await tallyCommand('backfill')(['--hours', '--from', day, '--to', day, '--account', account], io, { ...env, TALLY_LOG_BUCKET: info.bucket }, process.cwd(), () => now);
    expect({ code, err: io.stderr }).toEqual({ code: 0, err: '' });
    hourless.delete(day);
    chaos.trail.push(`${now.toISOString()} backfill --hours ${day}`);
  };
  /** Takes a random message off the queue. */
  const receive = () => inbox.splice(Math.floor(random() * inbox.length), 1)[0]!;

  const end = new Date(`${D1}T00:00:00Z`).getTime() + (3 * 24 + 18) * 3_600_000;
  let switches = 0;
  while (now.getTime() < end) {
    now = new Date(now.getTime() + (15 + Math.floor(random() * 135)) * 60_000);
    const today = dayOf(now);
    if (random() < 0.6) await ingest(today, now.getUTCHours(), 3 + Math.floor(random() * 28));
    if (random() < 0.2) {
      // A late log: an hour of the last 40, maybe of a closed day (a revision), maybe after its invoice was finalized.
      const at = new Date(now.getTime() - (1 + Math.floor(random() * 40)) * 3_600_000);
      if (dayOf(at) >= D1) await ingest(dayOf(at), at.getUTCHours(), 2 + Math.floor(random() * 10));
    }
    if (random() < 0.06 && switches < 2) {
      window = window === 'hour' ? 'day' : 'hour';
      switches++;
      chaos.trail.push(`${now.toISOString()} switch to ${window} windows`);
    }
    if (random() < 0.08 && hourless.size > 0) {
      const day = pick([...hourless]);
      if (day < today) await backfill(day);
    }
    if (random() < 0.6) enqueue({ account, running: true });
    if (random() < 0.5) await closer();
    // A few messages per step, sometimes two senders at once.
    for (let taken = 0; taken < 3 && inbox.length > 0; taken++) {
      if (inbox.length > 1 && random() < 0.3) {
        if (SERIAL) for (const entry of [receive(), receive()]) await deliver(entry);
        else await Promise.all([deliver(receive()), deliver(receive())]);
      }
      else await deliver(receive());
    }
  }

  // Faults off: every dead sender's lease expires, the queue drains, the senders settle.
  const settle = async () => {
    for (let round = 0; round < 6; round++) {
      now = new Date(now.getTime() + 5 * 60_000);
      enqueue({ account, running: true });
      await closer();
      while (inbox.length > 0) await deliver(receive(), false);
    }
  };
  for (const day of [...hourless]) if (day < dayOf(now)) await backfill(day);
  await settle();
  // Before the operator's retry: the only failed records are days held after a switch (no fault is a refusal).
  for (const record of (await store.records(account, D1, dayOf(now))).filter((r) => r.state === 'failed')) {
    if (switches === 0 || !(record.error ?? '').includes('is already on the meters of')) chaos.violations.push(`${record.identifier} failed: ${record.error}`);
  }
  // The operator after a switch (the old window's price removed): tally stripe push --retry-failed plans the closed days and sends what was held.
  oldPriceRemoved = true;
  await run('push --retry-failed', async (deps) => {
    await planLinked(deps, { account, ...sendableWindow(now, deps.graceHours) });
    return sendPending(deps, { account, retryFailed: true });
  }, false);
  await settle();
  const pending = (await store.records(account, D1, dayOf(now))).filter((r) => r.state === 'pending');
  if (pending.length > 0) chaos.violations.push(`${pending.length} record(s) still pending after settling: ${pending.map((r) => r.identifier).join(', ')}`);

  // Never missing: the current window's meters bill every day exactly Tally's counters.
  for (const [day, totals] of await tallyDays()) {
    for (const metric of METRICS) {
      const got = billed(window, metric, day);
      if (got !== totals[metric]) chaos.violations.push(`at the end: ${day} ${metric} billed ${got} on the ${window} meters, Tally counts ${totals[metric]}`);
    }
  }
  if (window === 'hour') {
    // Per period (daily from 15:00 UTC): the hour meters' value over it, read as reconcile reads it, against Tally's hours in it.
    const deps = sender();
    const api = new SdkStripeMeterApi({ apiKey: API_KEY, apiBase: server.url });
    for (let start = seconds(new Date(`${D1}T15:00:00Z`)); start + 86_400 <= seconds(now); start += 86_400) {
      const { totals } = await periodHourTotals(deps, account, start, start + 86_400);
      for (const metric of METRICS) {
        const got = await api.summaryOver(meterIds[METERS.hour[metric]]!, customer, start, start + 86_400);
        if (got !== totals[metric]) chaos.violations.push(`at the end: the period from ${new Date(start * 1000).toISOString()} billed ${got} ${metric} on the hour meter, Tally counts ${totals[metric]} in its hours`);
      }
    }
  }
  const tallyIds = server.invoiceItems(customer).map((item) => item.metadata.tally_id);
  if (new Set(tallyIds).size !== tallyIds.length) chaos.violations.push(`an invoice item created twice: ${tallyIds.join(', ')}`);
  await checkReconcileInvoices(chaos, { sender: () => sender(), window, lateUsage, meterIds, prices: subscription.items.map((item) => ({ price: item.price.id, meter: item.price.meter })), now, reconcileBase: await proxy.channel('reconcile --invoices', 0.3) });
  return chaos;
}

/**
 * `tally stripe reconcile --invoices` run through the faulting proxy (30% of its reads fail:
 * 429, 5xx, timeouts, lost answers) must report exactly what Stripe's model holds: a row for
 * each finalized invoice and metered line of the current window's meters, its figures those of
 * the model read without faults (the line's quantity from all the invoice's lines, the invoice
 * items of the period's late usage, the meter's value), Tally's total (with what it holds apart)
 * that of Tally's counters, and "matches" exactly when the line and the items bill Tally's
 * total but for the late usage reported by webhook alone: never a match where Stripe billed
 * something else, never a crash (a read that never succeeds is a clear error, and the operator
 * runs it again). At the end everything is settled, so every row must match, and with invoice
 * items every period is billed whole.
 */
async function checkReconcileInvoices(
  chaos: Chaos,
  run: { sender: () => StripeSyncDeps; window: Window; lateUsage: string; meterIds: Record<string, string>; prices: { price: string; meter: string }[]; now: Date; reconcileBase: string },
): Promise<void> {
  const { server, customer, account } = chaos;
  const deps = run.sender();
  const faulty = new SdkStripeMeterApi({ apiKey: API_KEY, apiBase: run.reconcileBase, timeoutMs: SDK_TIMEOUT_MS, readRetry: { attempts: 6, baseMs: 1, maxMs: 8 } });
  let report: Awaited<ReturnType<typeof reconcileInvoices>> | undefined;
  for (let attempt = 1; report === undefined && attempt <= 3; attempt++) {
    try {
      report = await reconcileInvoices({ ...deps, api: faulty }, D1, dayOf(run.now));
    } catch (error) {
      chaos.trail.push(`reconcile --invoices attempt ${attempt}: ${(error as Error).message}`);
      if (!(error instanceof StripeUnavailableError)) {
        chaos.violations.push(`reconcile --invoices crashed: ${(error as Error).stack}`);
        return;
      }
    }
  }
  if (report === undefined) {
    chaos.violations.push('reconcile --invoices: Stripe never answered in three runs');
    return;
  }
  const direct = new SdkStripeMeterApi({ apiKey: API_KEY, apiBase: server.url });
  // The price of each current-window meter, and its metric.
  const metricOfPrice = new Map(run.prices.flatMap(({ price, meter }) => METRICS.filter((metric) => run.meterIds[METERS[run.window][metric]] === meter).map((metric) => [price, metric] as const)));
  const rangeStart = seconds(new Date(`${D1}T00:00:00Z`));
  const expected = new Set<string>();
  for (const invoice of server.invoices(customer).filter((i) => i.status_transitions.finalized_at !== null && i.period_end > rangeStart)) {
    for (const line of invoice.lines.data) {
      if (!('price_details' in line.pricing) || line.pricing.price_details === null) continue;
      const price = line.pricing.price_details.price;
      const metric = metricOfPrice.get(price);
      if (metric === undefined) continue;
      expected.add(`${invoice.id} ${metric}`);
      const row = report.rows.find((r) => r.invoice === invoice.id && r.metric === metric);
      const where = `reconcile --invoices, ${invoice.id} ${metric}`;
      if (row === undefined) {
        chaos.violations.push(`${where}: no row`);
        continue;
      }
      // The model, read without faults.
      const hourItems = run.window === 'hour';
      const items = server
        .invoiceItems(customer)
        .filter((item) => (item.description ?? '').startsWith(`Late usage: ${metric} of `) && item.period.start >= invoice.period_start && item.period.start < invoice.period_end && (item.period.end - item.period.start === 3_599) === hourItems)
        .reduce((sum, item) => sum + (item.pricing.unit_amount_decimal.startsWith('-') ? -item.quantity : item.quantity), 0);
      const truth = hourItems
        ? (await periodHourTotals(deps, account, invoice.period_start, invoice.period_end)).totals[metric] ?? 0
        : (await Promise.all(daysOfPeriod(invoice.period_start, invoice.period_end).map(async (day) => (await deps.closeStore.accountDay(account, day)).counters[metric] ?? 0))).reduce((a, b) => a + b, 0);
      const meter = hourItems
        ? await direct.summaryOver(run.meterIds[METERS.hour[metric]]!, customer, invoice.period_start, invoice.period_end)
        : Object.values(await direct.daySummaries(run.meterIds[METERS.day[metric]]!, customer, row.from, row.to)).reduce((a, b) => a + b, 0);
      const figures = { invoiced: line.quantity, items, tally: truth, meter };
      const got = { invoiced: row.invoiced, items: row.items, tally: row.tally + row.held, meter: row.meter };
      if (JSON.stringify(got) !== JSON.stringify(figures)) chaos.violations.push(`${where}: read ${JSON.stringify(got)}, the model holds ${JSON.stringify(figures)}`);
      const matches = !report.unexplained.includes(row);
      const shouldMatch = truth - row.held - line.quantity - items === row.recordedLate - row.itemsPlanned && new Set(server.invoiceItems(customer).map((i) => i.metadata.tally_id)).size === server.invoiceItems(customer).length;
      if (matches !== shouldMatch) chaos.violations.push(`${where}: reconcile says ${matches ? 'matches' : 'differs'}, the model ${shouldMatch ? 'matches' : 'differs'} (${JSON.stringify(row)})`);
      // Settled: each period is billed as Tally counts it, but for late usage reported by webhook alone.
      if (!matches) chaos.violations.push(`${where}: differs after everything settled (${JSON.stringify(row)})`);
      if (run.lateUsage === 'invoice-item' && line.quantity + items !== truth - row.held) chaos.violations.push(`${where}: with invoice items, billed ${line.quantity} + ${items} for Tally's ${truth - row.held}`);
    }
  }
  for (const row of report.rows) if (!expected.has(`${row.invoice} ${row.metric}`)) chaos.violations.push(`reconcile --invoices: a row for ${row.invoice} ${row.metric} the model has no line for`);
  chaos.trail.push(`reconcile --invoices: ${report.compared} compared, ${report.unexplained.length} differ`);
}

/** Removes the hour attributes of an account-day's shards: the day looks counted before Tally kept hours. */
async function forgetShardHours(env: Record<string, string>, account: string, day: string): Promise<void> {
  const { dynamodb } = testClients(info);
  const tableName = readConfig(env).tableName;
  const page = await dynamodb.send(new QueryCommand({ TableName: tableName, KeyConditionExpression: 'PK = :pk AND begins_with(SK, :day)', ExpressionAttributeValues: { ':pk': { S: usageKey({ accountId: account, day, shard: 0 }).PK }, ':day': { S: `DAY#${day}#S#` } }, ConsistentRead: true }));
  for (const item of page.Items ?? []) {
    const names = Object.keys(item).filter(isHourAttribute);
    if (names.length === 0) continue;
    await dynamodb.send(new UpdateItemCommand({ TableName: tableName, Key: { PK: item.PK!, SK: item.SK! }, UpdateExpression: `REMOVE ${names.map((_, i) => `#h${i}`).join(', ')}`, ExpressionAttributeNames: Object.fromEntries(names.map((name, i) => [`#h${i}`, name])) }));
  }
}

const only = process.env.TALLY_STRIPE_CHAOS_SEED;
/** `TALLY_STRIPE_CHAOS_SEEDS`: a count (seeds 1..n) or a range `a..b`. */
function seedRange(text: string): number[] {
  const range = /^(\d+)\.\.(\d+)$/.exec(text);
  const [first, last] = range === null ? [1, Number(text)] : [Number(range[1]), Number(range[2])];
  return Array.from({ length: Math.max(0, Math.min(last - first + 1, 1_000)) }, (_, i) => first + i);
}
const seeds = only !== undefined ? [Number(only)] : seedRange(process.env.TALLY_STRIPE_CHAOS_SEEDS ?? '3');

describe('the Stripe sender in hour mode under faults (lost answers, timeouts, 429/5xx, unseen deaths, window switches, backfill re-splits)', () => {
  it.each(seeds)('seed %i: Stripe bills each day exactly Tally\'s counters, never double at any run', async (seed) => {
    const chaos = await runSeed(seed);
    const faults = chaos.proxy.log.filter((entry) => entry.fault !== 'pass').length;
    // TALLY_STRIPE_CHAOS_FAULTS=<file>: each request's identity and fault, to compare two replays of a seed.
    if (process.env.TALLY_STRIPE_CHAOS_FAULTS !== undefined) {
      writeFileSync(`${process.env.TALLY_STRIPE_CHAOS_FAULTS}.${seed}`, `${chaos.proxy.log.map((e) => `${e.channel} ${e.identity} ${e.fault}`).sort().join('\n')}\n--- trail ---\n${chaos.trail.join('\n')}\n`);
    }
    // The faults happened (a seed that injected none would prove nothing).
    expect(faults).toBeGreaterThan(0);
    if (chaos.violations.length > 0) {
      throw new Error(`seed ${seed} (replay: TALLY_STRIPE_CHAOS_SEED=${seed}): ${chaos.violations.slice(0, 8).join('\n')}\n--- trail ---\n${chaos.trail.join('\n')}`);
    }
  }, 300_000);
});
