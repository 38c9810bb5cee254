import { Logger } from '@aws-lambda-powertools/logger';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { sendStripeBatch, type StripeSenderDeps } from '../src/app/stripe-sender';
import { createClients } from '../src/adapters/clients';
import { readThresholdConfig } from '../src/adapters/handoff-config';
import { powertoolsLog } from '../src/adapters/powertools-log';
import { SqsMessageVisibility } from '../src/adapters/sqs-visibility';
import { readStripeConfig, resolveStripeKey, STRIPE_SENDER_DEFAULTS } from '../src/adapters/stripe-config';
import { createStripeSyncDeps } from '../src/adapters/stripe-deps';

// The table settings and the webhook queue (stripe.adjustment_required) as the evaluator reads them.
const base = readThresholdConfig(process.env);
const stripe = readStripeConfig(process.env);
const logger = new Logger({ serviceName: 'tally-stripe', logLevel: base.tally.logLevel.toUpperCase() as 'INFO' });
const clients = createClients(base.tally);
const ssm = stripe.key.kind === 'key-parameter' ? new SSMClient({ region: base.tally.region }) : undefined;

// The SSM read starts during init; a failure is retried by the next invocation. The key goes to the SDK only.
let ready: Promise<StripeSenderDeps> | undefined;
function deps(): Promise<StripeSenderDeps> {
  ready ??= resolveStripeKey(stripe.key, ssm)
    .then((apiKey) => ({
      sync: createStripeSyncDeps({ tally: base.tally, stripe, ...(base.webhookQueueUrl === undefined ? {} : { webhookQueueUrl: base.webhookQueueUrl }) }, clients, apiKey, powertoolsLog(logger)),
      visibility: new SqsMessageVisibility({ client: clients.sqs }),
      ...STRIPE_SENDER_DEFAULTS,
    }))
    .catch((error: unknown) => {
      ready = undefined;
      throw error;
    });
  return ready;
}
deps().catch(() => undefined);

/** Stripe send queue -> outbox records -> meter events, one request at a time per customer and meter. */
export const handler = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
  logger.addContext(context);
  return sendStripeBatch(event, await deps());
};
