import { countsEstimates } from '../../domain/logs/log-fields';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { AwsCredentialIdentity } from '@aws-sdk/types';
import type { CloserDeps } from '../../app/billing/close-days';
import type { ThresholdDeps } from '../../app/billing/thresholds';
import type { Log } from '../../app/log';
import type { WebhookSenderDeps } from '../../app/billing/webhook-sender';
import { ConfigError } from '../../domain/errors';
import { metricNames } from '../../domain/logs/metric-rules';
import type { AwsClients } from '../clients';
import { DynamoCloseStore } from '../dynamodb/dynamodb-close-store';
import { DynamoStripeStore } from '../dynamodb/dynamodb-stripe-store';
import { FetchWebhookTransport } from '../http/fetch-webhook-transport';
import { DynamoMonthRechecks, DynamoQuotaStore, DynamoThresholdStore } from '../dynamodb/dynamodb-quotas';
import { DynamoUsageReader } from '../dynamodb/dynamodb-usage-reader';
import type { CloserConfig, ThresholdConfig, WebhookSecretSource, WebhookSenderConfig } from './handoff-config';
import { S3RevisionExports } from '../s3/s3-revision-exports';
import { SqsMessageVisibility } from '../sqs/sqs-visibility';
import { SqsStripeSendQueue } from '../sqs/sqs-stripe-send-queue';
import { SqsWebhookOutbox } from '../sqs/sqs-webhook-outbox';

/** Wires the closer to DynamoDB, S3 (exports) and SQS (webhook events). Built once per cold start. */
export function createCloserDeps(config: CloserConfig, clients: AwsClients, log: Log, extra: Pick<CloserDeps, 'clock'> = {}): CloserDeps {
  return {
    store: new DynamoCloseStore({ client: clients.dynamodb, tableName: config.tally.tableName }),
    exports: new S3RevisionExports({ client: clients.s3, bucket: config.exportBucket, prefix: config.exportPrefix }),
    rechecks: new DynamoMonthRechecks({ client: clients.dynamodb, tableName: config.tally.tableName }),
    ...(config.webhookQueueUrl === undefined ? {} : { outbox: new SqsWebhookOutbox({ client: clients.sqs, queueUrl: config.webhookQueueUrl }) }),
    ...(config.stripeQueueUrl === undefined ? {} : { stripeQueue: new SqsStripeSendQueue({ client: clients.sqs, queueUrl: config.stripeQueueUrl }) }),
    log,
    graceHours: config.tally.closeGraceHours,
    metricNames: metricNames(config.tally.metricRules, { estimates: countsEstimates(config.tally.logFormat) }),
    scope: config.tally.tableName,
    // An ingest attempt holds its message at most this long (function timeout plus one heartbeat).
    settleSeconds: config.tally.visibilityTimeoutSeconds,
    ...extra,
  };
}

/** What the closer hands the Stripe sender its pending accounts with, each run (see handPendingAccounts); undefined without Stripe. */
export function createStripeHandOff(config: CloserConfig, clients: Pick<AwsClients, 'dynamodb' | 'sqs'>): { store: DynamoStripeStore; queue: SqsStripeSendQueue } | undefined {
  if (config.stripeQueueUrl === undefined) return undefined;
  return {
    store: new DynamoStripeStore({ client: clients.dynamodb, tableName: config.tally.tableName }),
    queue: new SqsStripeSendQueue({ client: clients.sqs, queueUrl: config.stripeQueueUrl }),
  };
}

/** Wires the threshold evaluator to DynamoDB (quotas, crossings, month-to-date, day index) and SQS. */
export function createThresholdDeps(config: ThresholdConfig, clients: Pick<AwsClients, 'dynamodb' | 'sqs'>, log: Log, extra: Pick<ThresholdDeps, 'clock'> = {}): ThresholdDeps {
  const table = { client: clients.dynamodb, tableName: config.tally.tableName };
  return {
    quotas: new DynamoQuotaStore(table),
    thresholds: new DynamoThresholdStore(table),
    rechecks: new DynamoMonthRechecks(table),
    reader: new DynamoUsageReader(table),
    accounts: new DynamoCloseStore(table),
    ...(config.webhookQueueUrl === undefined ? {} : { outbox: new SqsWebhookOutbox({ client: clients.sqs, queueUrl: config.webhookQueueUrl }) }),
    defaults: config.tally.quotaDefaults,
    levels: config.tally.quotaLevels,
    scope: config.tally.tableName,
    graceHours: config.tally.closeGraceHours,
    log,
    ...extra,
  };
}

/** Reads the webhook secret: as given, or once per cold start from SSM (the error names the parameter, never the value). */
export async function resolveWebhookSecret(source: WebhookSecretSource, ssm: SSMClient | undefined): Promise<string> {
  if (source.kind === 'secret') return source.secret;
  if (ssm === undefined) throw new ConfigError('an SSM client is needed to read TALLY_WEBHOOK_SECRET_PARAMETER');
  let value: string | undefined;
  try {
    value = (await ssm.send(new GetParameterCommand({ Name: source.parameterName, WithDecryption: true }))).Parameter?.Value;
  } catch (error) {
    throw new ConfigError(`could not read SSM parameter ${source.parameterName} (TALLY_WEBHOOK_SECRET_PARAMETER): ${(error as Error).name}`, { cause: error });
  }
  if (value === undefined || value === '') throw new ConfigError(`SSM parameter ${source.parameterName} is empty`);
  return value;
}

/** The SDK clients of the webhook sender: SQS (backoff) and, when the secret lives there, SSM. */
export function createWebhookSenderClients(config: WebhookSenderConfig, credentials?: AwsCredentialIdentity): { sqs: SQSClient; ssm?: SSMClient } {
  const common = { region: config.region, maxAttempts: config.maxAttempts, retryMode: 'standard', ...(credentials === undefined ? {} : { credentials }) };
  return {
    sqs: new SQSClient({ ...common, ...(config.endpoints.sqs ? { endpoint: config.endpoints.sqs } : {}) }),
    ...(config.secret.kind === 'secret-parameter' ? { ssm: new SSMClient(common) } : {}),
  };
}

/** Wires the webhook sender. */
export async function createWebhookSenderDeps(
  config: WebhookSenderConfig,
  clients: { sqs: SQSClient; ssm?: SSMClient },
  log: Log,
): Promise<WebhookSenderDeps> {
  return {
    url: config.url,
    secret: await resolveWebhookSecret(config.secret, clients.ssm),
    transport: new FetchWebhookTransport(),
    visibility: new SqsMessageVisibility({ client: clients.sqs, ...(config.endpoints.sqs ? { endpoint: config.endpoints.sqs } : {}) }),
    backoffSeconds: config.backoffSeconds,
    maxBackoffSeconds: config.maxBackoffSeconds,
    log,
  };
}
