import { ConfigError } from '../../domain/errors';
import { keyPrefixProblem } from '../../domain/logs/log-naming';
import { printable } from '../../domain/printable';
import { readConfig, type TallyConfig } from '../config';

type Env = Readonly<Record<string, string | undefined>>;

/** Defaults of the billing handoff (the grace period is `closeGraceHours` in config.ts DEFAULTS). */
export const HANDOFF_DEFAULTS = {
  exportPrefix: 'exports/',
  /** First webhook retry after this many seconds, doubling per receive. */
  webhookBackoffSeconds: 30,
  webhookMaxBackoffSeconds: 3_600,
} as const;

/** What the closer needs besides the table: where exports go, where webhook events are queued. */
export interface CloserConfig {
  readonly tally: TallyConfig;
  readonly exportBucket: string;
  readonly exportPrefix: string;
  /** Events are queued only when this is set (the webhook is configured). */
  readonly webhookQueueUrl?: string;
  /** Each revision is handed to the Stripe sender here when set (`TALLY_STRIPE_QUEUE_URL`). */
  readonly stripeQueueUrl?: string;
}

/** Where the webhook signing secret comes from. */
export type WebhookSecretSource = { readonly kind: 'secret'; readonly secret: string } | { readonly kind: 'secret-parameter'; readonly parameterName: string };

export interface WebhookSenderConfig {
  readonly region: string;
  readonly endpoints: TallyConfig['endpoints'];
  readonly maxAttempts: number;
  readonly logLevel: TallyConfig['logLevel'];
  readonly url: string;
  readonly secret: WebhookSecretSource;
  readonly backoffSeconds: number;
  readonly maxBackoffSeconds: number;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  return value;
}

/**
 * Reads `TALLY_EXPORT_BUCKET`, `TALLY_EXPORT_PREFIX`, `TALLY_WEBHOOK_QUEUE_URL`,
 * `TALLY_STRIPE_QUEUE_URL` and the table settings. With `TALLY_LOG_BUCKET` and
 * `TALLY_LOG_PREFIX` given, refuses an export prefix that overlaps the log prefix in the
 * same bucket (exports would be ingested).
 */
export function readCloserConfig(env: Env): CloserConfig {
  const tally = readConfig(env);
  const exportBucket = env.TALLY_EXPORT_BUCKET;
  if (exportBucket === undefined || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(exportBucket)) {
    throw new ConfigError('TALLY_EXPORT_BUCKET must name the bucket the closed days are exported to');
  }
  const exportPrefix = env.TALLY_EXPORT_PREFIX ?? HANDOFF_DEFAULTS.exportPrefix;
  if (exportPrefix !== '' && !exportPrefix.endsWith('/')) throw new ConfigError(`TALLY_EXPORT_PREFIX must be empty or end with "/", got "${printable(exportPrefix, 80)}"`);
  const problem = keyPrefixProblem(exportPrefix);
  if (problem !== undefined) throw new ConfigError(`TALLY_EXPORT_PREFIX must be an S3 key prefix such as exports/: ${problem}; got "${printable(exportPrefix, 80)}"`);
  const logPrefix = env.TALLY_LOG_PREFIX;
  // Every object under the log prefix is ingested whatever its suffix: an export there would be read as a log.
  if (logPrefix !== undefined && exportBucket === env.TALLY_LOG_BUCKET && (exportPrefix.startsWith(logPrefix) || logPrefix.startsWith(exportPrefix))) {
    throw new ConfigError(`TALLY_EXPORT_PREFIX "${exportPrefix}" and the log prefix "${logPrefix}" overlap in bucket ${exportBucket}: exports would be ingested as logs; choose prefixes apart`);
  }
  const stripeQueueUrl = env.TALLY_STRIPE_QUEUE_URL;
  if (stripeQueueUrl !== undefined && stripeQueueUrl !== '' && !URL.canParse(stripeQueueUrl)) throw new ConfigError(`TALLY_STRIPE_QUEUE_URL must be a URL, got "${stripeQueueUrl}"`);
  return { tally, exportBucket, exportPrefix, ...webhookQueueOf(env), ...(stripeQueueUrl === undefined || stripeQueueUrl === '' ? {} : { stripeQueueUrl }) };
}

/** `TALLY_WEBHOOK_QUEUE_URL`, checked: events are queued only when it is set. */
function webhookQueueOf(env: Env): { webhookQueueUrl?: string } {
  const queue = env.TALLY_WEBHOOK_QUEUE_URL;
  if (queue === undefined || queue === '') return {};
  try {
    new URL(queue);
  } catch (error) {
    throw new ConfigError(`TALLY_WEBHOOK_QUEUE_URL must be a URL, got "${queue}"`, { cause: error });
  }
  return { webhookQueueUrl: queue };
}

/** What the threshold evaluator needs: the table settings (quotas and levels included) and the webhook queue. */
export interface ThresholdConfig {
  readonly tally: TallyConfig;
  /** Events are queued only when this is set. */
  readonly webhookQueueUrl?: string;
}

/** Reads the evaluator's settings: `readConfig`'s (with `TALLY_QUOTAS`, `TALLY_QUOTA_LEVELS`) and `TALLY_WEBHOOK_QUEUE_URL`. */
export function readThresholdConfig(env: Env): ThresholdConfig {
  return { tally: readConfig(env), ...webhookQueueOf(env) };
}

function isLoopback(url: URL): boolean {
  return url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]';
}

/**
 * Reads the webhook sender's settings: `TALLY_WEBHOOK_URL` (https, or http on this
 * machine), and the signing secret as `TALLY_WEBHOOK_SECRET` or, on AWS, the SSM
 * SecureString named by `TALLY_WEBHOOK_SECRET_PARAMETER` (exactly one of the two).
 */
export function readWebhookSenderConfig(env: Env): WebhookSenderConfig {
  const raw = env.TALLY_WEBHOOK_URL ?? '';
  let url: URL;
  try {
    url = new URL(raw);
  } catch (error) {
    throw new ConfigError(`TALLY_WEBHOOK_URL must be the receiver's URL, got "${raw}"`, { cause: error });
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url))) {
    throw new ConfigError('TALLY_WEBHOOK_URL must be https (plain http only to this machine)');
  }
  const secret = env.TALLY_WEBHOOK_SECRET;
  const parameter = env.TALLY_WEBHOOK_SECRET_PARAMETER;
  const given = [secret, parameter].filter((value) => value !== undefined && value !== '');
  if (given.length !== 1) throw new ConfigError('set exactly one of TALLY_WEBHOOK_SECRET and TALLY_WEBHOOK_SECRET_PARAMETER');
  if (secret !== undefined && secret !== '' && secret.length < 16) throw new ConfigError('TALLY_WEBHOOK_SECRET must be at least 16 characters');
  const logLevel = (env.LOG_LEVEL ?? 'info').toLowerCase() as TallyConfig['logLevel'];
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be debug, info, warn or error, got "${env.LOG_LEVEL}"`);
  const url_ = (name: string) => (env[name] ? env[name] : undefined);
  return {
    region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
    endpoints: {
      ...(url_('AWS_ENDPOINT_URL_SQS') ? { sqs: url_('AWS_ENDPOINT_URL_SQS')! } : {}),
    },
    maxAttempts: integer(env, 'TALLY_MAX_ATTEMPTS', 8, 1, 20),
    logLevel,
    url: url.toString(),
    secret: secret !== undefined && secret !== '' ? { kind: 'secret', secret } : { kind: 'secret-parameter', parameterName: parameter! },
    backoffSeconds: integer(env, 'TALLY_WEBHOOK_BACKOFF_SECONDS', HANDOFF_DEFAULTS.webhookBackoffSeconds, 1, 43_200),
    maxBackoffSeconds: integer(env, 'TALLY_WEBHOOK_MAX_BACKOFF_SECONDS', HANDOFF_DEFAULTS.webhookMaxBackoffSeconds, 1, 43_200),
  };
}
