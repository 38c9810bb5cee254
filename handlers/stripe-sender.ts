import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { sendStripeBatch, type StripeSenderDeps } from '../src/app/billing/stripe-sender';
import { handRunningAccounts, pullMeterErrors } from '../src/app/billing/stripe-sync';
import { createClients } from '../src/adapters/clients';
import { readThresholdConfig } from '../src/adapters/wiring/handoff-config';
import { METRICS_NAMESPACE } from '../src/adapters/history-metrics';
import { powertoolsLog } from '../src/adapters/powertools-log';
import { SqsMessageVisibility } from '../src/adapters/sqs/sqs-visibility';
import { readStripeConfig, resolveStripeKey, STRIPE_SENDER_DEFAULTS, STRIPE_SERVICE } from '../src/adapters/stripe/stripe-config';
import { createStripeSyncDeps } from '../src/adapters/wiring/stripe-deps';
import { initOnce } from '../src/adapters/init-once';

// The table settings and the webhook queue (stripe.adjustment_required) as the evaluator reads them.
const base = readThresholdConfig(process.env);
const stripe = readStripeConfig(process.env);
const logger = new Logger({ serviceName: STRIPE_SERVICE, logLevel: base.tally.logLevel.toUpperCase() as 'INFO' });
const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: STRIPE_SERVICE });
if (process.env.AWS_LAMBDA_FUNCTION_NAME) metrics.setDefaultDimensions({ FunctionName: process.env.AWS_LAMBDA_FUNCTION_NAME });
const clients = createClients(base.tally);
const ssm = stripe.key.kind === 'key-parameter' ? new SSMClient({ region: base.tally.region }) : undefined;

// The SSM read starts during init; a failure is retried by the next invocation. The key goes to the SDK only.
const deps = initOnce<StripeSenderDeps>(() =>
  resolveStripeKey(stripe.key, ssm)
    .then((apiKey) => ({
      sync: createStripeSyncDeps({ tally: base.tally, stripe, ...(base.webhookQueueUrl === undefined ? {} : { webhookQueueUrl: base.webhookQueueUrl }) }, clients, apiKey, powertoolsLog(logger)),
      visibility: new SqsMessageVisibility({ client: clients.sqs }),
      ...STRIPE_SENDER_DEFAULTS,
      // Refused events: the stripe-events-refused alarm.
      onRefused: (count: number) => {
        metrics.addMetric('StripeEventsFailed', MetricUnit.Count, count);
        metrics.publishStoredMetrics();
      },
      // Totals after their invoice was finalized: the stripe-late-usage alarm.
      onLateUsage: (count: number) => {
        metrics.addMetric('StripeLateUsage', MetricUnit.Count, count);
        metrics.publishStoredMetrics();
      },
    })),
);

/**
 * Stripe send queue -> outbox records -> meter events, one request at a time per customer and
 * meter. The schedule's `{"runningSweep": true}` (every TALLY_STRIPE_RUNNING_MINUTES) hands every
 * linked account to the queue for its open days' running totals. Its hourly `{"meterErrors": true}`
 * (on whatever the running interval, 0 too) records Stripe's new meter error reports (events
 * dropped after their 200) and publishes how many events they drop.
 */
export const handler = async (
  event: SQSEvent | { runningSweep: true } | { meterErrors: true },
  context: Context,
): Promise<SQSBatchResponse | { linked: number; handed: number } | { meterErrors: { read: number; reports: number; dropped: number } }> => {
  logger.addContext(context);
  const ready = await deps();
  if ('runningSweep' in event) {
    const { queue, store, runningMinutes } = ready.sync;
    if (queue === undefined) throw new Error('TALLY_STRIPE_QUEUE_URL is needed for the running sweep');
    const handed = await handRunningAccounts({ store, queue, ...(runningMinutes === undefined ? {} : { runningMinutes }) });
    logger.info('stripe running sweep', handed);
    return handed;
  }
  if ('meterErrors' in event) {
    // Meter events Stripe answered 200 and dropped later: the stripe-meter-errors alarm.
    const meterErrors = await pullMeterErrors(ready.sync);
    if (meterErrors.reports > 0) logger.warn('stripe meter error reports', meterErrors);
    metrics.addMetric('StripeMeterErrors', MetricUnit.Count, meterErrors.dropped);
    metrics.publishStoredMetrics();
    return { meterErrors };
  }
  return sendStripeBatch(event, ready);
};
