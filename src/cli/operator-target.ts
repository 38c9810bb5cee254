import { existsSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import type { AwsCredentialIdentity } from '@aws-sdk/types';
import { readConfig, type TallyConfig } from '../adapters/config';
import { MAX_STACK_FILE_BYTES, readSmallTextFile } from '../adapters/small-file';
import type { Env } from '../adapters/env';
import { ConfigError, LocalStackNotRunningError } from '../domain/errors';
import { keyPrefixProblem } from '../domain/logs/log-naming';
import { printable } from '../domain/printable';
import { LOCAL_CREDENTIALS } from '../local/local-credentials';
import type { LocalStackInfo } from '../local/stack';

/** Target flags every operator command accepts; each overrides its environment variable. */
export interface TargetFlags {
  readonly table?: string;
  readonly queueUrl?: string;
  readonly dlqUrl?: string;
  readonly bucket?: string;
  readonly prefix?: string;
  readonly region?: string;
  /** One endpoint for DynamoDB, S3 and SQS (an emulator such as LocalStack). */
  readonly endpoint?: string;
  /** A `.tally/local.json` to use (default: the one in the working directory, when nothing else is named). */
  readonly stack?: string;
  readonly resolver?: string;
  readonly metrics?: string;
}

/** Where an operator command works, resolved once. */
export interface OperatorTarget {
  readonly config: TallyConfig;
  readonly dlqUrl?: string;
  readonly bucket?: string;
  readonly logPrefix: string;
  /** Where `tally close` exports (`TALLY_EXPORT_BUCKET`, else the log bucket) and under which prefix. */
  readonly exportBucket?: string;
  readonly exportPrefix?: string;
  /** The webhook queue `tally close` hands events to (`TALLY_WEBHOOK_QUEUE_URL`); none: webhooks off. */
  readonly webhookQueueUrl?: string;
  /** The Stripe settings the target names besides the environment (the local stack's sender queue, base, meters). */
  readonly stripe?: { readonly queueUrl?: string; readonly apiBase?: string; readonly meters?: string; readonly window?: string };
  /** The emulators' keys (local stack, or loopback endpoints and no keys), or keys the environment gives. */
  readonly credentials?: AwsCredentialIdentity;
  /** Says where the target came from, for the first line of a command's output. */
  readonly origin: string;
  /** The `.tally/local.json` the target was read from, when it is the local stack. */
  readonly localStack?: string;
  /** Every endpoint (DynamoDB, SQS, S3) is the local stack or an emulator on loopback: not AWS. */
  readonly emulated: boolean;
  /** The flags and environment variables that named the target (empty for the local stack). */
  readonly namedBy: readonly string[];
}

/** Environment variables that name a target; any of them means "not the local stack". */
const TARGET_VARIABLES = [
  'TALLY_TABLE',
  'TALLY_INGEST_QUEUE_URL',
  'TALLY_DLQ_URL',
  'TALLY_LOG_BUCKET',
  'AWS_ENDPOINT_URL',
  'AWS_ENDPOINT_URL_DYNAMODB',
  'AWS_ENDPOINT_URL_SQS',
  'AWS_ENDPOINT_URL_S3',
] as const;


/**
 * The flags whose empty value (`--table ""`, often an unset shell variable) is refused:
 * taken as not given, it would silently fall back to the environment or the local stack.
 * `--prefix ""` (the bucket's root) and `--metrics ""` (no metric rules) mean something.
 */
const NON_EMPTY_FLAGS = {
  table: '--table',
  queueUrl: '--queue-url',
  dlqUrl: '--dlq-url',
  bucket: '--bucket',
  region: '--region',
  endpoint: '--endpoint',
  stack: '--stack',
  resolver: '--resolver',
} as const satisfies Partial<Record<keyof TargetFlags, string>>;

/** Refuses a target flag given with an empty value (exit 2), before anything is resolved. */
function refuseEmptyFlags(flags: TargetFlags): void {
  for (const [key, flag] of Object.entries(NON_EMPTY_FLAGS) as [keyof typeof NON_EMPTY_FLAGS, string][]) {
    if (flags[key] === '') throw new ConfigError(`${flag} is empty: give it a value, or leave it out to use the environment or the local stack`);
  }
}

/**
 * Refuses a target flag whose value cannot name what it names (exit 2, naming the flag),
 * before any client is made: else the SDK takes it and fails later with its own words
 * (`--region ../x`: "Region not accepted", exit 1) or not at all (`--endpoint file:///x`
 * went on to look for credentials). Endpoints and queues are http(s) URLs; a region is
 * lower-case words joined by hyphens (us-east-1); a bucket follows S3's naming rules
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html).
 */
function refuseMalformedFlags(flags: TargetFlags): void {
  for (const [value, flag] of [
    [flags.endpoint, '--endpoint'],
    [flags.queueUrl, '--queue-url'],
    [flags.dlqUrl, '--dlq-url (or --queue)'],
  ] as const) {
    if (value === undefined) continue;
    const url = URL.canParse(value) ? new URL(value) : undefined;
    if (url === undefined || value.trim() !== value || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
      throw new ConfigError(`${flag} must be an http(s) URL, got "${printable(value)}"`);
    }
  }
  if (flags.region !== undefined && !(flags.region.length <= 50 && /^[a-z0-9]+(-[a-z0-9]+){0,9}$/.test(flags.region))) {
    throw new ConfigError(`--region must be an AWS region such as us-east-1, got "${printable(flags.region)}"`);
  }
  if (flags.bucket !== undefined && !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(flags.bucket)) {
    throw new ConfigError(`--bucket must be an S3 bucket name (3 to 63 of a-z 0-9 . -), got "${printable(flags.bucket)}"`);
  }
  if (flags.prefix !== undefined) refuseBadKeyPrefix(flags.prefix, '--prefix');
}

/**
 * Refuses a log key prefix S3 cannot take as typed ({@link keyPrefixProblem}): exit 2,
 * naming where it came from, before any object is listed or written.
 */
function refuseBadKeyPrefix(prefix: string, from: string): void {
  const problem = keyPrefixProblem(prefix);
  if (problem !== undefined) throw new ConfigError(`${from} must be an S3 key prefix such as cloudfront/ (or "" for the bucket's root): ${problem}; got "${printable(prefix, 80)}"`);
}

function given(value: string | undefined): value is string {
  return value !== undefined && value !== '';
}

function isLoopback(url: string | undefined): boolean {
  if (url === undefined) return false;
  try {
    const host = new URL(url).hostname;
    return host === 'localhost' || host === '127.0.0.1' || host === '[::1]' || host.endsWith('.localhost');
  } catch {
    return false;
  }
}

/**
 * The AWS region an SQS queue URL names, `undefined` for one that names none (an emulator's,
 * the legacy `queue.amazonaws.com`). Queue URLs have the form
 * `https://sqs.<region>.amazonaws.com/<account>/<name>` (older ones `https://<region>.queue.amazonaws.com/...`;
 * China `amazonaws.com.cn`): https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-queue-message-identifiers.html
 *
 * @example regionOfQueueUrl('https://sqs.eu-west-1.amazonaws.com/123456789012/tally-dlq')  // 'eu-west-1'
 */
export function regionOfQueueUrl(url: string | undefined): string | undefined {
  if (url === undefined || url.length > 2048) return undefined;
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return undefined;
  }
  const region = /^sqs(?:-fips)?\.([a-z0-9-]{1,50})\.amazonaws\.com(?:\.cn)?$/.exec(host)?.[1] ?? /^([a-z0-9-]{1,50})\.queue\.amazonaws\.com(?:\.cn)?$/.exec(host)?.[1];
  return region !== undefined && /^[a-z0-9]+(-[a-z0-9]+){0,9}$/.test(region) ? region : undefined;
}

/**
 * Resolves the table, queues, bucket and endpoints an operator command works on, the
 * same way locally and on AWS:
 *
 * 1. flags (`--table`, `--queue-url`, `--dlq-url`, `--bucket`, `--prefix`, `--region`, `--endpoint`),
 * 2. else the environment (`TALLY_TABLE`, `TALLY_INGEST_QUEUE_URL`, `TALLY_DLQ_URL`,
 *    `TALLY_LOG_BUCKET`, `TALLY_LOG_PREFIX`, `AWS_REGION`, `AWS_ENDPOINT_URL_*`); with no
 *    region named, the one the dead-letter (else ingest) queue's URL names,
 * 3. else, when neither names a table, queue or endpoint, the running local stack's
 *    `.tally/local.json` (or the file `--stack` names).
 *
 * Ingest settings (`TALLY_SHARDS`, `TALLY_KEY_BYTES`, `TALLY_HISTORY_CAP`,
 * `TALLY_RESOLVER`, `TALLY_METRICS`) come from flags, else the environment, else (for
 * the local stack) the consumer settings `npm start` recorded in `.tally/local.json`:
 * for `--inline` work and reconciliation they must be the consumer's own.
 */
export function resolveTarget(flags: TargetFlags, env: Env, cwd: string): OperatorTarget {
  refuseEmptyFlags(flags);
  refuseMalformedFlags(flags);
  const namedBy = [
    ...(Object.entries({ '--table': flags.table, '--queue-url': flags.queueUrl, '--dlq-url': flags.dlqUrl, '--endpoint': flags.endpoint }) as [string, string | undefined][])
      .filter(([, value]) => given(value))
      .map(([flag]) => flag),
    ...TARGET_VARIABLES.filter((name) => given(env[name])),
  ];
  const namesTarget = namedBy.length > 0;
  const stackPath = flags.stack ?? env.TALLY_LOCAL_STACK ?? join(cwd, '.tally', 'local.json');
  const useStack = given(flags.stack) || !namesTarget;

  let merged: Record<string, string | undefined> = { ...env };
  let origin = 'flags and environment';
  let local: string | undefined;
  if (useStack) {
    const path = isAbsolute(stackPath) ? stackPath : join(cwd, stackPath);
    if (!existsSync(path)) {
      // `npm start` removes local.json when it stops; its data folder says it ran here.
      if (!given(flags.stack) && !given(env.TALLY_LOCAL_STACK) && existsSync(join(cwd, '.tally', 'data'))) throw new LocalStackNotRunningError();
      throw new ConfigError(
        `no target: name one with --table/--queue-url/--dlq-url/--bucket (or TALLY_TABLE and friends), or start the local stack with npm start (looked for ${path})`,
      );
    }
    const info = readStackInfo(path);
    const targetFree = Object.fromEntries(Object.entries(env).filter(([name]) => !(TARGET_VARIABLES as readonly string[]).includes(name)));
    merged = {
      ...targetFree,
      AWS_REGION: info.region,
      AWS_ENDPOINT_URL_DYNAMODB: info.endpoints.dynamodb,
      AWS_ENDPOINT_URL_SQS: info.endpoints.sqs,
      AWS_ENDPOINT_URL_S3: info.endpoints.s3,
      TALLY_TABLE: info.table,
      TALLY_INGEST_QUEUE_URL: info.queueUrl,
      TALLY_DLQ_URL: info.dlqUrl,
      TALLY_LOG_BUCKET: info.bucket,
      TALLY_LOG_PREFIX: env.TALLY_LOG_PREFIX ?? info.logPrefix,
      TALLY_EXPORT_PREFIX: env.TALLY_EXPORT_PREFIX ?? info.exportPrefix,
      TALLY_WEBHOOK_QUEUE_URL: info.webhookQueueUrl,
      TALLY_STRIPE_QUEUE_URL: env.TALLY_STRIPE_QUEUE_URL ?? info.stripe?.queueUrl,
      TALLY_STRIPE_API_BASE: env.TALLY_STRIPE_API_BASE ?? info.stripe?.apiBase,
      TALLY_STRIPE_METERS: env.TALLY_STRIPE_METERS ?? info.stripe?.meters,
      TALLY_STRIPE_WINDOW: env.TALLY_STRIPE_WINDOW ?? info.stripe?.window,
      // The consumer's own counting settings, as `npm start` recorded them; the environment wins.
      ...Object.fromEntries(Object.entries(info.consumer ?? {}).filter(([name]) => env[name] === undefined)),
    };
    const shown = relative(cwd, path);
    origin = `local stack (${shown.startsWith('..') || isAbsolute(shown) ? path : shown})`;
    local = path;
  }
  const endpoint = flags.endpoint ?? merged.AWS_ENDPOINT_URL;
  const overlay: Record<string, string | undefined> = {
    ...merged,
    ...(given(endpoint)
      ? {
          AWS_ENDPOINT_URL_DYNAMODB: flags.endpoint ?? merged.AWS_ENDPOINT_URL_DYNAMODB ?? endpoint,
          AWS_ENDPOINT_URL_SQS: flags.endpoint ?? merged.AWS_ENDPOINT_URL_SQS ?? endpoint,
          AWS_ENDPOINT_URL_S3: flags.endpoint ?? merged.AWS_ENDPOINT_URL_S3 ?? endpoint,
        }
      : {}),
    ...(given(flags.table) ? { TALLY_TABLE: flags.table } : {}),
    ...(given(flags.queueUrl) ? { TALLY_INGEST_QUEUE_URL: flags.queueUrl } : {}),
    ...(given(flags.dlqUrl) ? { TALLY_DLQ_URL: flags.dlqUrl } : {}),
    ...(given(flags.bucket) ? { TALLY_LOG_BUCKET: flags.bucket } : {}),
    ...(flags.prefix !== undefined ? { TALLY_LOG_PREFIX: flags.prefix } : {}),
    ...(given(flags.region) ? { AWS_REGION: flags.region } : {}),
    ...(given(flags.resolver) ? { TALLY_RESOLVER: flags.resolver } : {}),
    ...(flags.metrics !== undefined ? { TALLY_METRICS: flags.metrics } : {}),
  };
  if (!given(overlay.AWS_REGION) && !given(overlay.AWS_DEFAULT_REGION)) {
    // No region named: a queue URL names the queue's own (`tally dlq list --queue https://sqs.eu-west-1...`).
    const queueRegion = regionOfQueueUrl(overlay.TALLY_DLQ_URL) ?? regionOfQueueUrl(overlay.TALLY_INGEST_QUEUE_URL);
    if (queueRegion !== undefined) overlay.AWS_REGION = queueRegion;
  }
  if (!given(overlay.TALLY_TABLE)) {
    throw new ConfigError('no usage table: pass --table or set TALLY_TABLE (or run against the local stack started by npm start)');
  }
  const config = readConfig(overlay);
  if (flags.prefix === undefined && overlay.TALLY_LOG_PREFIX !== undefined) {
    refuseBadKeyPrefix(overlay.TALLY_LOG_PREFIX, env.TALLY_LOG_PREFIX !== undefined ? 'TALLY_LOG_PREFIX' : `the log prefix of ${local ?? 'the local stack'}`);
  }
  const endpoints = [config.endpoints.dynamodb, config.endpoints.sqs, config.endpoints.s3].filter(given);
  const fromEnv = given(env.AWS_ACCESS_KEY_ID) && given(env.AWS_SECRET_ACCESS_KEY);
  const emulated = local !== undefined || (endpoints.length > 0 && endpoints.every(isLoopback) && !fromEnv && !given(env.AWS_PROFILE));
  // Keys in the given environment are used as given (it need not be process.env);
  // otherwise the SDK's default chain finds profiles, SSO or the instance role.
  const credentials: AwsCredentialIdentity | undefined = emulated
    ? LOCAL_CREDENTIALS
    : fromEnv
      ? {
          accessKeyId: env.AWS_ACCESS_KEY_ID!,
          secretAccessKey: env.AWS_SECRET_ACCESS_KEY!,
          ...(given(env.AWS_SESSION_TOKEN) ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
        }
      : undefined;
  const dlqUrl = overlay.TALLY_DLQ_URL;
  const bucket = overlay.TALLY_LOG_BUCKET;
  const exportBucket = overlay.TALLY_EXPORT_BUCKET ?? bucket;
  return {
    config,
    ...(given(dlqUrl) ? { dlqUrl } : {}),
    ...(given(bucket) ? { bucket } : {}),
    ...(given(exportBucket) ? { exportBucket } : {}),
    ...(overlay.TALLY_EXPORT_PREFIX !== undefined ? { exportPrefix: overlay.TALLY_EXPORT_PREFIX } : {}),
    ...(given(overlay.TALLY_WEBHOOK_QUEUE_URL) ? { webhookQueueUrl: overlay.TALLY_WEBHOOK_QUEUE_URL } : {}),
    stripe: {
      ...(given(overlay.TALLY_STRIPE_QUEUE_URL) ? { queueUrl: overlay.TALLY_STRIPE_QUEUE_URL } : {}),
      ...(given(overlay.TALLY_STRIPE_API_BASE) ? { apiBase: overlay.TALLY_STRIPE_API_BASE } : {}),
      ...(given(overlay.TALLY_STRIPE_METERS) ? { meters: overlay.TALLY_STRIPE_METERS } : {}),
      ...(given(overlay.TALLY_STRIPE_WINDOW) ? { window: overlay.TALLY_STRIPE_WINDOW } : {}),
    },
    logPrefix: overlay.TALLY_LOG_PREFIX ?? '',
    ...(credentials === undefined ? {} : { credentials }),
    origin,
    ...(local === undefined ? {} : { localStack: local }),
    emulated: local !== undefined || [config.endpoints.dynamodb, config.endpoints.sqs, config.endpoints.s3].every((url) => given(url) && isLoopback(url)),
    namedBy: local === undefined ? namedBy : [],
  };
}

/**
 * The first line of a command's output: where it works, and for a target the flags or
 * environment named, which of them did (a `TALLY_TABLE` left set switches every command
 * from the local stack to AWS).
 *
 * @example describeTarget(target)  // "AWS us-east-1, table nope (named by TALLY_TABLE; not the local stack)"
 */
export function describeTarget(target: OperatorTarget): string {
  if (target.localStack !== undefined) return target.origin;
  const where = target.emulated ? 'an emulator' : `AWS ${target.config.region}`;
  return `${where}, table ${target.config.tableName} (named by ${target.namedBy.join(', ') || 'flags and environment'}; not the local stack)`;
}

/**
 * What to do when the SDK found no credentials for a target (its message alone, "Could
 * not load credentials from any providers", names neither the target nor a way out).
 */
export function missingCredentialsMessage(target: OperatorTarget, error: Error): string {
  const variables = target.namedBy.filter((name) => !name.startsWith('--'));
  return (
    `no AWS credentials for ${describeTarget(target)}: ${error.message}. ` +
    'Give credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or aws sso login)' +
    (variables.length > 0 ? `, or unset ${variables.join(', ')} to work on the local stack started by npm start` : '')
  );
}

/** True for the SDK's "no credentials found" error (`CredentialsProviderError`, whatever its provider). */
export function isMissingCredentials(error: unknown): error is Error {
  return error instanceof Error && error.name === 'CredentialsProviderError';
}

function readStackInfo(path: string): LocalStackInfo {
  try {
    const info = JSON.parse(readSmallTextFile(path, MAX_STACK_FILE_BYTES)) as LocalStackInfo;
    if (typeof info.table !== 'string' || typeof info.endpoints?.dynamodb !== 'string') throw new Error('no table or endpoints');
    return info;
  } catch (error) {
    throw new ConfigError(`${path} is not a local stack description: ${(error as Error).message}`, { cause: error });
  }
}

/** The target's log bucket, or a ConfigError saying how to name one. */
export function logBucketOf(target: OperatorTarget): string {
  if (target.bucket === undefined) throw new ConfigError('no log bucket: pass --bucket or set TALLY_LOG_BUCKET');
  return target.bucket;
}
