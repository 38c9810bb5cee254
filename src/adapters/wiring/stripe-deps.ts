import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Log } from '../../app/log';
import { SubscriptionCache, type StripeSyncDeps } from '../../app/billing/stripe-sync';
import type { TallyConfig } from '../config';
import { DynamoAdjustmentStore } from '../dynamodb/dynamodb-adjustments';
import { DynamoCloseStore } from '../dynamodb/dynamodb-close-store';
import { DynamoStripeStore } from '../dynamodb/dynamodb-stripe-store';
import { DynamoUsageReader } from '../dynamodb/dynamodb-usage-reader';
import { SqsStripeSendQueue } from '../sqs/sqs-stripe-send-queue';
import { SqsWebhookOutbox } from '../sqs/sqs-webhook-outbox';
import type { StripeConfig } from '../stripe/stripe-config';
import { SdkStripeMeterApi } from '../stripe/stripe-meter-api';

/**
 * Wires the Stripe sync: the usage table (links, outbox, leases, closed days, adjustments),
 * Stripe through the official SDK, the sender's queue and the webhook queue (adjustment
 * required). `apiKey` is resolved by the caller (SSM on AWS) and goes to the SDK only.
 */
export function createStripeSyncDeps(
  config: { tally: TallyConfig; stripe: StripeConfig; webhookQueueUrl?: string },
  clients: { dynamodb: DynamoDBClient; sqs: SQSClient },
  apiKey: string,
  log: Log,
  extra: Partial<Pick<StripeSyncDeps, 'clock' | 'retry' | 'sleep' | 'leaseSeconds'>> = {},
): StripeSyncDeps {
  const table = { client: clients.dynamodb, tableName: config.tally.tableName };
  return {
    store: new DynamoStripeStore(table),
    api: new SdkStripeMeterApi({ apiKey, apiBase: config.stripe.apiBase }),
    closeStore: new DynamoCloseStore(table),
    adjustments: new DynamoAdjustmentStore(table),
    meters: config.stripe.meters,
    ...(config.webhookQueueUrl === undefined ? {} : { outbox: new SqsWebhookOutbox({ client: clients.sqs, queueUrl: config.webhookQueueUrl }) }),
    ...(config.stripe.queueUrl === undefined ? {} : { queue: new SqsStripeSendQueue({ client: clients.sqs, queueUrl: config.stripe.queueUrl }) }),
    scope: config.tally.tableName,
    graceHours: config.tally.closeGraceHours,
    runningMinutes: config.stripe.runningMinutes,
    lateUsage: config.stripe.lateUsage,
    window: config.stripe.window,
    // Hour windows read the account's usage items with their hours (one Query per account and run).
    ...(config.stripe.window === 'hour' ? { usage: new DynamoUsageReader({ ...table, consistentRead: true }) } : {}),
    subscriptions: new SubscriptionCache(),
    log,
    ...extra,
  };
}
