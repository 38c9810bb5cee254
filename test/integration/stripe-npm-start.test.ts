import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { addDays, dayOf } from '../../src/domain/days';
import { generateLog } from '../../src/local/demo/log-generator';
import { localClients } from '../../src/local/stack';
import { DynamoCloseStore } from '../../src/adapters/dynamodb/dynamodb-close-store';
import { runTallyBin } from '../support/cli';
import { stackEnv, stackInfoIn, startLocal, stopLocal, type LocalRun } from '../support/npm-start';
import { startStripeServer, type StripeTestServer } from '../support/stripe-server';
import { TIME_LIMITS } from '../support/time-limits';

const API_KEY = 'sk_test_tally_npm_start_key_0123456789';
const METERS = '{"requests":"cdn_requests","bytes":"cdn_bytes"}';

/** Polls `condition` every second until it holds or `ms` pass; resolves with the time it took. */
async function within(ms: number, condition: () => Promise<boolean>, what: string, detail?: () => string): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await condition()) return Date.now() - started;
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms: ${what}${detail === undefined ? '' : `\n${detail()}`}`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

describe('npm start with the Stripe variables', () => {
  let server: StripeTestServer;
  let run: LocalRun | undefined;
  const cwd = mkdtempSync(join(tmpdir(), 'tally-stripe-start-'));

  beforeAll(async () => {
    server = await startStripeServer(API_KEY);
    server.addMeter('cdn_requests');
    server.addMeter('cdn_bytes');
  });

  afterAll(async () => {
    if (run !== undefined) await stopLocal(run);
    await server.close();
  });

  it('sends a linked account\'s late usage on a closed day to Stripe by itself within two minutes; push and reconcile agree', async () => {
    const stripe = { TALLY_STRIPE_API_KEY: API_KEY, TALLY_STRIPE_API_BASE: server.url, TALLY_STRIPE_METERS: METERS };
    run = await startLocal(cwd, stripe);
    const info = stackInfoIn(cwd);
    const cli = (args: string[], env: Record<string, string> = {}) => runTallyBin(args, { cwd, env: stackEnv(env) });
    const day = addDays(dayOf(new Date()), -5);
    const account = 'stripeacme';
    const closeStore = new DynamoCloseStore({ client: localClients(info).dynamodb, tableName: info.table });
    const total = async () => (await closeStore.accountDay(account, day)).counters.requests ?? 0;
    const putLate = async (seed: number, lines: number) => {
      const log = generateLog({ seed, day, hour: 9, distribution: 'E2STRIPE', accounts: [{ id: account, weight: 1 }], lines, previousDayRate: 0, malformedRate: 0, unattributedRate: 0 });
      const file = join(cwd, `late-${seed}.log.gz`);
      writeFileSync(file, gzipSync(log.text));
      const put = await cli(['put', file]);
      expect(put.code).toBe(0);
      return log.expected;
    };

    // Linked before its first log, as a new customer is: an account with no usage yet takes --force.
    const link = await cli(['stripe', 'link', '--account', account, '--customer', 'cus_npmstart01', '--force']);
    expect(link.code).toBe(0);
    await putLate(1, 30);
    const first = await within(120_000, async () => (server.billedByDay('cdn_requests', 'cus_npmstart01')[day] ?? -1) === (await total()) && (await total()) > 0, 'first late log in Stripe', () => `${run!.output()}\nstripe: ${JSON.stringify(server.requests)}`);
    await putLate(2, 17);
    const second = await within(120_000, async () => {
      const billed = server.billedByDay('cdn_requests', 'cus_npmstart01')[day];
      return billed !== undefined && billed === (await total()) && billed > 30;
    }, 'second late log in Stripe', () => `${run!.output()}\nstripe: ${JSON.stringify(server.requests)}`);
    const push = await cli(['stripe', 'push'], stripe);
    const reconcile = await cli(['stripe', 'reconcile', '--from', addDays(day, -1), '--to', day], stripe);
    // Then a customer Stripe does not know (after reconcile, which shows such days as drift): its events are answered 200, dropped, and reported later.
    server.forgetCustomer('cus_npmghost01');
    expect((await cli(['stripe', 'link', '--account', 'stripeghost', '--customer', 'cus_npmghost01', '--force'])).code).toBe(0);
    const ghostLog = generateLog({ seed: 3, day, hour: 10, distribution: 'E2STRIPE', accounts: [{ id: 'stripeghost', weight: 1 }], lines: 5, previousDayRate: 0, malformedRate: 0, unattributedRate: 0 });
    writeFileSync(join(cwd, 'ghost.log.gz'), gzipSync(ghostLog.text));
    expect((await cli(['put', join(cwd, 'ghost.log.gz')])).code).toBe(0);
    await within(120_000, async () => run!.output().includes('tally: Stripe dropped 2 meter event(s) after accepting them'), 'the meter error reports said', () => run!.output());
    const status = await cli(['stripe', 'status', '--account', 'stripeghost', '--from', day, '--to', day], stripe);

    expect(first).toBeLessThan(120_000);
    expect(second).toBeLessThan(120_000);
    expect(status.stdout).toContain('meter events Stripe dropped after accepting them (its meter error reports, last 30 days): 2');
    expect(status.stdout).toMatch(new RegExp(`meter_event_customer_not_found\\s+1\\s+stripeghost\\s+requests\\s+${day}`));
    expect(push.code).toBe(0);
    expect(reconcile.code).toBe(0);
    expect(reconcile.stdout).toContain('0 differ');
    expect(server.billedByDay('cdn_bytes', 'cus_npmstart01')[day]).toBe((await closeStore.accountDay(account, day)).counters.bytes);
    expect(run.output()).toContain('stripe on:');
    // The window it sends by (tryout: an operator could not tell which TALLY_STRIPE_WINDOW the stack had).
    expect(run.output()).toContain('one event per UTC day (TALLY_STRIPE_WINDOW)');
    expect(readFileSync(join(cwd, '.tally', 'local.json'), 'utf8')).not.toContain(API_KEY);
    expect(`${run.output()}${link.stdout}${push.stdout}${reconcile.stdout}${push.stderr}${reconcile.stderr}`).not.toContain(API_KEY);
    // eslint-disable-next-line no-console
    console.log(`stripe npm start: first late log in Stripe after ${first} ms, second after ${second} ms`);
  }, TIME_LIMITS.stripeNpmStartTest);
});
