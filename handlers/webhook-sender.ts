import { Logger } from '@aws-lambda-powertools/logger';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { sendWebhooks, type WebhookSenderDeps } from '../src/app/billing/webhook-sender';
import { readWebhookSenderConfig } from '../src/adapters/wiring/handoff-config';
import { createWebhookSenderClients, createWebhookSenderDeps } from '../src/adapters/wiring/handoff-deps';
import { powertoolsLog } from '../src/adapters/powertools-log';
import { initOnce } from '../src/adapters/init-once';

const config = readWebhookSenderConfig(process.env);
const logger = new Logger({ serviceName: 'tally-webhooks', logLevel: config.logLevel.toUpperCase() as 'INFO' });
const clients = createWebhookSenderClients(config);

// The SSM read starts during init; a failure is retried by the next invocation.
const deps = initOnce<WebhookSenderDeps>(() => createWebhookSenderDeps(config, clients, powertoolsLog(logger)));

/** Webhook queue -> signed POSTs; failed events come back after a doubling backoff, then reach the webhook DLQ. */
export const handler = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
  logger.addContext(context);
  return sendWebhooks(event, await deps());
};
