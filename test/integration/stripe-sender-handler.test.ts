import type { Context } from 'aws-lambda';
import Stripe from 'stripe';
import { DynamoStripeStore } from '../../src/adapters/dynamodb/dynamodb-stripe-store';
import { stripeConnection } from '../../src/adapters/stripe/stripe-meter-api';
import { addDays, dayOf } from '../../src/domain/days';
import { meterEventIdentifier, meterEventTimestamp, type StripeOutboxRecord } from '../../src/domain/billing/stripe';
import { handoffTable } from '../support/handoff';
import { startStripeServer } from '../support/stripe-server';
import { sqsRecord, testClients, testStackInfo, uniqueId } from '../support/stack';

// The Stripe sender's Lambda module (handlers/stripe-sender.ts) on the test stack: what it
// publishes must be the metric its alarm watches (scripts/serverless/alarms.js), or the alarm
// never fires. Powertools Metrics writes EMF lines to stdout; CloudWatch turns them into metrics.

interface AlarmsModule {
  ALARMS: Record<string, { metric: { namespace: string; name: string; dimensions: Record<string, unknown> } }>;
}
const { ALARMS } = require('../../scripts/serverless/alarms.js') as AlarmsModule;

const info = testStackInfo();
const API_KEY = 'sk_test_tally_handler_key_0123456789';
const FUNCTION_NAME = 'tally-prod-stripeSender';
const context = { functionName: FUNCTION_NAME, awsRequestId: 'req-1' } as unknown as Context;

type Handler = (event: unknown, context: Context) => Promise<unknown>;

/** The handler module loaded fresh with `env`, and every EMF object it wrote to stdout while `run` ran. */
async function withHandler(env: Record<string, string>, run: (handler: Handler) => Promise<void>): Promise<Record<string, unknown>[]> {
  const saved = { ...process.env };
  Object.assign(process.env, env, { AWS_LAMBDA_FUNCTION_NAME: FUNCTION_NAME, LOG_LEVEL: 'error' });
  for (const name of ['TALLY_STRIPE_API_KEY_PARAMETER', 'POWERTOOLS_DEV', 'POWERTOOLS_METRICS_DISABLED', 'POWERTOOLS_METRICS_NAMESPACE']) delete process.env[name];
  const written: string[] = [];
  const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
  // The handler's own log lines (a refused event is logged as an error) stay out of the test's output.
  const quiet = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    let handler: Handler | undefined;
    jest.isolateModules(() => {
      handler = (require('../../handlers/stripe-sender') as { handler: Handler }).handler;
    });
    await run(handler!);
  } finally {
    write.mockRestore();
    quiet.mockRestore();
    process.env = saved;
  }
  return written
    .join('')
    .split('\n')
    .filter((line) => line.includes('"_aws"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('the Stripe sender Lambda handler', () => {
  it('publishes the events of new meter error reports as StripeMeterErrors, in the namespace and dimensions the stripe-meter-errors alarm watches, on its hourly schedule with running totals off', async () => {
    const { env } = await handoffTable(info);
    const server = await startStripeServer(API_KEY);
    try {
      server.addMeter('cdn_requests');
      server.forgetCustomer('cus_handler0001');
      const stripe = new Stripe(API_KEY, { ...stripeConnection(server.url), maxNetworkRetries: 0 });
      // Two events Stripe answers 200 and drops later (a customer it does not know): one report each.
      for (const value of ['5', '6']) await stripe.billing.meterEvents.create({ event_name: 'cdn_requests', payload: { stripe_customer_id: 'cus_handler0001', value } });
      const answers: unknown[] = [];

      const emf = await withHandler(
        { ...env, TALLY_STRIPE_API_KEY: API_KEY, TALLY_STRIPE_API_BASE: server.url, TALLY_STRIPE_METERS: '{"requests":"cdn_requests"}', TALLY_STRIPE_RUNNING_MINUTES: '0' },
        async (handler) => {
          answers.push(await handler({ meterErrors: true }, context));
          // The next hour: nothing new, a 0 (the alarm's Sum stays 0).
          answers.push(await handler({ meterErrors: true }, context));
        },
      );

      const { metric } = ALARMS.StripeMeterErrorsAlarm!;
      expect(answers).toEqual([{ meterErrors: { read: 2, reports: 2, dropped: 2 } }, { meterErrors: { read: 2, reports: 0, dropped: 0 } }]);
      expect(emf.map((line) => line[metric.name])).toEqual([2, 0]);
      for (const line of emf) {
        const [directive] = (line._aws as { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] }).CloudWatchMetrics;
        expect(directive!.Namespace).toBe(metric.namespace);
        expect(directive!.Metrics.map((m) => m.Name)).toEqual([metric.name]);
        // The alarm's dimensions, with the values the function publishes (FunctionName is a Ref to it in the template).
        expect([...directive!.Dimensions[0]!].sort()).toEqual(Object.keys(metric.dimensions).sort());
        expect(line.service).toBe(metric.dimensions.service);
        expect(line.FunctionName).toBe(FUNCTION_NAME);
      }
    } finally {
      await server.close();
    }
  });

  it('publishes a batch\'s refused events as StripeEventsFailed and its totals after a finalized invoice as StripeLateUsage, as their alarms watch them', async () => {
    const { env, table } = await handoffTable(info);
    const server = await startStripeServer(API_KEY);
    try {
      server.addMeter('cdn_requests');
      server.addMeter('cdn_bytes');
      // A day ten days ago, in a 3-day period whose invoice was finalized an hour after it ended.
      const day = addDays(dayOf(new Date()), -10);
      const customer = 'cus_handler0002';
      server.addSubscription({ customer, eventName: 'cdn_requests', start: meterEventTimestamp(day, 0), periodSeconds: 3 * 86_400 });
      const account = uniqueId('acme');
      const store = new DynamoStripeStore({ client: testClients(info).dynamodb, tableName: table });
      await store.link({ account, customer, linkedAt: new Date().toISOString() });
      const pending = (metric: string, eventName: string, value: number): StripeOutboxRecord => {
        const subject = { account, metric, day, revision: 1 };
        return { ...subject, customer, eventName, identifier: meterEventIdentifier(table, subject), timestamp: meterEventTimestamp(day, 1), value, state: 'pending', attempts: 0, createdAt: new Date().toISOString() };
      };
      // requests: its invoice billed nothing of the day (late usage); bytes: 17 digits, which Stripe refuses.
      await store.addRecord(pending('requests', 'cdn_requests', 42));
      await store.addRecord(pending('bytes', 'cdn_bytes', 1e16));
      const answers: unknown[] = [];

      const emf = await withHandler(
        { ...env, TALLY_STRIPE_API_KEY: API_KEY, TALLY_STRIPE_API_BASE: server.url, TALLY_STRIPE_METERS: '{"requests":"cdn_requests","bytes":"cdn_bytes"}', TALLY_STRIPE_RUNNING_MINUTES: '60' },
        async (handler) => {
          answers.push(await handler({ Records: [sqsRecord(JSON.stringify({ account, sendOnly: true }))] }, context));
        },
      );

      expect(answers).toEqual([{ batchItemFailures: [] }]);
      expect((await store.records(account, day, day)).map((r) => [r.metric, r.state]).sort()).toEqual([['bytes', 'failed'], ['requests', 'invoice-finalized']]);
      for (const [alarm, count] of [['StripeEventsRefusedAlarm', 1], ['StripeLateUsageAlarm', 1]] as const) {
        const { metric } = ALARMS[alarm]!;
        const lines = emf.filter((line) => metric.name in line);
        expect(lines.map((line) => line[metric.name])).toEqual([count]);
        const [directive] = (lines[0]!._aws as { CloudWatchMetrics: { Namespace: string; Dimensions: string[][] }[] }).CloudWatchMetrics;
        expect(directive!.Namespace).toBe(metric.namespace);
        expect([...directive!.Dimensions[0]!].sort()).toEqual(Object.keys(metric.dimensions).sort());
        expect([lines[0]!.service, lines[0]!.FunctionName]).toEqual([metric.dimensions.service, FUNCTION_NAME]);
      }
    } finally {
      await server.close();
    }
  });
});
