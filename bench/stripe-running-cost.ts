/**
 * What running totals cost: meter events, Stripe calls and DynamoDB requests per linked
 * account per day, measured by playing one day of hourly traffic (and a late log for the
 * day before every fourth hour) through the real sync against DynamoDB Local and the test
 * Stripe server, with the running sweep every `--minutes`; then the calls per second at
 * 10,000 linked accounts against Stripe's v1 limit (1,000 meter events per second in live
 * mode, https://docs.stripe.com/api/billing/meter-event/create; the v2 meter event stream
 * takes 10,000, https://docs.stripe.com/changelog/acacia/2024-09-30/usage-based-billing-v2-meter-events-api).
 *
 * With `--window hour` (TALLY_STRIPE_WINDOW=hour, meters with hour windows) each hour's total
 * is an event of its own: each log object holds the end of the hour before and the hour it is
 * named for (CloudFront's delivery lag), so a sweep finds two hours changed.
 *
 *   npx tsx bench/stripe-running-cost.ts [--accounts 20] [--minutes 60] [--window day|hour]
 */
import { parseArgs } from 'node:util';
import { silentLog } from '../src/app/log';
import { handleStripeMessage } from '../src/app/billing/stripe-sync';
import { createClients } from '../src/adapters/clients';
import { readConfig } from '../src/adapters/config';
import { usageStoreFor } from '../src/adapters/wiring/ingest-deps';
import { readStripeConfig } from '../src/adapters/stripe/stripe-config';
import { createStripeSyncDeps } from '../src/adapters/wiring/stripe-deps';
import { DynamoStripeStore } from '../src/adapters/dynamodb/dynamodb-stripe-store';
import { ensureUsageTable } from '../src/adapters/dynamodb/usage-table';
import { addDays } from '../src/domain/days';
import { incrementKey } from '../src/domain/counters/idempotency-key';
import { LOCAL_CREDENTIALS } from '../src/local/local-credentials';
import { localEnvironment, startLocalStack } from '../src/local/stack';
import { startStripeServer } from '../test/support/stripe-server';
import { meterCapacity, totalRequests } from './capacity-meter';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const V1_EVENTS_PER_SECOND = 1_000;
const AT_SCALE = 10_000;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { accounts: { type: 'string', default: '20' }, minutes: { type: 'string', default: '60' }, window: { type: 'string', default: 'day' } } });
  const window = values.window === 'hour' ? 'hour' : 'day';
  const minutes = Number(values.minutes);
  const accounts = Array.from({ length: Number(values.accounts) }, (_, i) => `running-${String(i).padStart(4, '0')}`);
  const day = '2026-06-10';
  let now = new Date(`${day}T00:00:00Z`);
  const stack = await startLocalStack();
  const server = await startStripeServer('sk_test_bench_running_cost_0000');
  server.setClock(() => Math.floor(now.getTime() / 1000));
  server.addMeter('cdn_requests', { event_time_window: window });
  server.addMeter('cdn_bytes', { event_time_window: window });
  try {
    const env = { ...localEnvironment(stack.info), TALLY_TABLE: 'stripe-running-cost', TALLY_HEARTBEAT_SECONDS: '0' };
    const tally = readConfig(env);
    const clients = createClients(tally, LOCAL_CREDENTIALS);
    await ensureUsageTable(clients.dynamodb, tally.tableName);
    const stripe = readStripeConfig({
      TALLY_STRIPE_API_KEY: server.apiKey,
      TALLY_STRIPE_API_BASE: server.url,
      TALLY_STRIPE_METERS: '{"requests":"cdn_requests","bytes":"cdn_bytes"}',
      TALLY_STRIPE_RUNNING_MINUTES: String(minutes),
      TALLY_STRIPE_WINDOW: window,
    });
    const store = usageStoreFor(tally, clients.dynamodb, { clock: () => now });
    const links = new DynamoStripeStore({ client: clients.dynamodb, tableName: tally.tableName });
    for (const [i, account] of accounts.entries()) await links.link({ account, customer: `cus_bench${String(i).padStart(6, '0')}`, linkedAt: now.toISOString() });
    const meter = meterCapacity(clients.dynamodb);
    const sync = () => createStripeSyncDeps({ tally, stripe }, { dynamodb: clients.dynamodb, sqs: clients.sqs }, server.apiKey, silentLog, { clock: () => now });

    let object = 0;
    let sweeps = 0;
    let sweepDb = 0;
    let ingestDb = 0;
    // A log object of hour `hour`: a third of its requests from the hour before (none before 00:00).
    const increment = async (account: string, on: string, hour: number) => {
      const ref = { bucket: 'logs', key: `cloudfront/E1.${on}-${String(object++).padStart(6, '0')}.x.gz`, etag: 'e' };
      const { key, shard } = incrementKey(ref, account, on, tally.keyScheme);
      const hours = hour === 0 ? { 0: { requests: 3, bytes: 3000 } } : { [hour - 1]: { requests: 1, bytes: 1000 }, [hour]: { requests: 2, bytes: 2000 } };
      await store.applyIncrement({ account, day: on, shard, key, metrics: { requests: 3, bytes: 3000 }, hours });
    };
    const started = Date.now();
    for (let minute = minutes; minute <= 24 * 60; minute += minutes) {
      // Traffic of the interval (one log object an hour, and a late one for yesterday every fourth hour).
      if (minute % 60 < minutes) {
        const hour = Math.floor((minute - 1) / 60);
        for (const account of accounts) await increment(account, day, hour);
        if (hour % 4 === 0) for (const account of accounts) await increment(account, addDays(day, -1), 23 - hour / 4);
      }
      ingestDb += totalRequests(meter.reset());
      now = new Date(Date.parse(`${day}T00:00:00Z`) + minute * 60_000 - 1_000);
      for (const account of accounts) await handleStripeMessage(sync(), { account, running: true });
      sweeps++;
      sweepDb += totalRequests(meter.reset());
    }
    const elapsed = Date.now() - started;
    const calls = server.requests.filter((r) => r.path === '/v1/billing/meter_events').length;
    const events = server.events().length;
    const perAccount = (n: number) => n / accounts.length;
    const eventsPerDayAtScale = perAccount(events) * AT_SCALE;
    const perSweepAtScale = eventsPerDayAtScale / sweeps;
    console.log(`running totals every ${minutes} min, ${window} windows, ${accounts.length} linked accounts, one day (${sweeps} sweeps), 2 metrics; ${elapsed} ms on DynamoDB Local`);
    console.log(`  per linked account per day: ${perAccount(events).toFixed(1)} meter events, ${perAccount(calls).toFixed(1)} Stripe calls, ${perAccount(sweepDb).toFixed(1)} DynamoDB requests for the sweeps (${(sweepDb / sweeps / accounts.length).toFixed(1)} per account and sweep)`);
    console.log(`  at ${AT_SCALE.toLocaleString('en')} linked accounts: ${Math.round(eventsPerDayAtScale).toLocaleString('en')} meter events a day, ${(eventsPerDayAtScale / 86_400).toFixed(1)} calls/s on average;`);
    console.log(`    ${Math.round(perSweepAtScale).toLocaleString('en')} per sweep: ${(perSweepAtScale / (minutes * 60)).toFixed(1)} calls/s spread over the interval, ${(perSweepAtScale / 60).toFixed(0)} calls/s if sent within a minute (v1 limit ${V1_EVENTS_PER_SECOND}/s)`);
    console.log(`  (ingest of the traffic: ${ingestDb} DynamoDB requests, not part of the cost above)`);
  } finally {
    await server.close();
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
