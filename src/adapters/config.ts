import { MAP_RESOLVERS, parseResolverSpec, type ResolverSpec } from '../domain/logs/account-resolver';
import { ConfigError } from '../domain/errors';
import type { KeyScheme, ShardChange } from '../domain/counters/idempotency-key';
import { isSupportedDay } from '../domain/days';
import { MAX_REDELIVERY_HORIZON_DAYS, REPLAY_WINDOW_DAYS } from '../domain/counters/redelivery';
import { validateMetricRules, type MetricRule } from '../domain/logs/metric-rules';
import { missingFields, parseDelimiter, parseLogFields, type LogFormatSettings } from '../domain/logs/log-fields';
import { DEFAULT_QUOTA_LEVELS, parseQuotaDefaults, parseQuotaLevels, type QuotaDefaults } from '../domain/billing/quota';
import { readSmallTextFile } from './small-file';

/**
 * Defaults sized so that a shard item stays under 1 KB: 15 keys (17 bytes each with their
 * minute) beside the counters and a full day of their sums by hour (`tally plan`: 1018 bytes
 * for a 64-character account id and 15-digit values).
 */
export const DEFAULTS = {
  shards: 4,
  historyCap: 15,
  keyBytes: 12,
  ledgerTtlDays: 400,
  visibilityTimeoutSeconds: 360,
  heartbeatSeconds: 60,
  maxAttempts: 8,
  messageConcurrency: 4,
  incrementConcurrency: 8,
  minRemainingMillis: 10_000,
  /** The ingest queue's maxReceiveCount (the last receive records that it started). */
  maxReceiveCount: 5,
  /** A day closes this many hours after its end (CloudFront delivers some logs up to 24 hours late). */
  closeGraceHours: 48,
  /** An open day's running totals reach Stripe within this many minutes of being counted (0: closed days only). */
  stripeRunningMinutes: 60,
  /** A difference after its invoice was finalized is reported (webhook, alarm); `invoice-item` also bills it. */
  stripeLateUsage: 'webhook',
  /** One meter event per UTC day (`day`) or per UTC hour (`hour`, for meters with an hour window). */
  stripeWindow: 'day',
} as const;

export interface Endpoints {
  readonly dynamodb?: string;
  readonly s3?: string;
  readonly sqs?: string;
}

export interface TallyConfig {
  readonly region: string;
  readonly tableName: string;
  readonly endpoints: Endpoints;
  readonly resolver: ResolverSpec;
  readonly metricRules: readonly MetricRule[];
  /** How logs without a header, or with another delimiter, are read (`TALLY_LOG_FIELDS`, ...). */
  readonly logFormat: LogFormatSettings;
  readonly keyScheme: KeyScheme;
  readonly historyCap: number;
  readonly maxReceiveCount: number;
  readonly ledgerTtlDays: number;
  /** Hours after its end that a day closes; ingest marks usage that reaches a day after that. */
  readonly closeGraceHours: number;
  readonly ingestQueueUrl?: string;
  readonly visibilityTimeoutSeconds: number;
  readonly heartbeatSeconds: number;
  /** SDK attempts per request (throttling and transient errors back off between them). */
  readonly maxAttempts: number;
  readonly messageConcurrency: number;
  readonly incrementConcurrency: number;
  readonly minRemainingMillis: number;
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** Default monthly allowances for every account (`TALLY_QUOTAS`); an account's own quota wins. */
  readonly quotaDefaults: QuotaDefaults;
  /** Percentages of an allowance that fire `usage.threshold` (`TALLY_QUOTA_LEVELS`), unless a quota names its own. */
  readonly quotaLevels: readonly number[];
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Settings of earlier versions that no longer mean anything: histories used to keep keys
 * for a time; now a key leaves a history only after its tombstone is written, so no time
 * is assumed. A deployment that still sets one is told, rather than silently ignored.
 */
const REMOVED_SETTINGS: Readonly<Record<string, string>> = {
  TALLY_HISTORY_RETENTION_SECONDS: 'histories keep no time window any more (every dropped key leaves a tombstone)',
  TALLY_HISTORY_MAX_KEYS: 'histories hold TALLY_HISTORY_CAP keys at most (every dropped key leaves a tombstone)',
};

function refuseRemovedSettings(env: Env): void {
  for (const [name, why] of Object.entries(REMOVED_SETTINGS)) {
    if (env[name] !== undefined && env[name] !== '') throw new ConfigError(`${name} is no longer used: ${why}; remove it`);
  }
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  return integerValue(env[name], name, fallback, min, max);
}

/** `raw` as an integer from `min` to `max` (`fallback` when unset); `name` is what messages call it. */
function integerValue(raw: string | undefined, name: string, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function url(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  try {
    new URL(raw);
  } catch (error) {
    throw new ConfigError(`${name} must be a URL, got "${raw}"`, { cause: error });
  }
  return raw;
}

/** The largest `host-map:FILE` or `distribution:FILE` read: far above any real map, far below what fills memory. */
export const MAX_MAP_FILE_BYTES = 16 * 1024 * 1024;

/**
 * Reads the resolver flag or variable; `host-map:FILE` and `distribution:FILE` read the
 * file here so the domain never touches the file system. A FILE that is a device, pipe,
 * folder or over {@link MAX_MAP_FILE_BYTES} is refused (`host-map:/dev/zero` read forever).
 */
export function readResolver(text: string, variable = 'TALLY_RESOLVER'): ResolverSpec {
  try {
    const colon = text.indexOf(':');
    const kind = text.slice(0, colon);
    const argument = text.slice(colon + 1);
    if (colon !== -1 && MAP_RESOLVERS.includes(kind) && !argument.trimStart().startsWith('{')) {
      return parseResolverSpec(`${kind}:${readSmallTextFile(argument, MAX_MAP_FILE_BYTES)}`);
    }
    return parseResolverSpec(text);
  } catch (error) {
    throw new ConfigError(`${variable}: ${(error as Error).message}`, { cause: error });
  }
}

/** Parses `TALLY_METRICS` (a JSON array of metric rules). */
export function readMetricRules(text: string | undefined, variable = 'TALLY_METRICS'): MetricRule[] {
  if (text === undefined || text.trim() === '') return [];
  try {
    return validateMetricRules(JSON.parse(text));
  } catch (error) {
    throw new ConfigError(`${variable}: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Validates the whole configuration once per cold start and fails fast, naming the
 * variable at fault. Adapters receive values from here and never read the environment.
 */
export function readConfig(env: Env): TallyConfig {
  const tableName = env.TALLY_TABLE;
  if (tableName === undefined || !/^[A-Za-z0-9_.-]{3,255}$/.test(tableName)) {
    throw new ConfigError('TALLY_TABLE must name the usage table (3-255 of A-Z a-z 0-9 _ . -)');
  }
  refuseRemovedSettings(env);
  const keyBytes = integer(env, 'TALLY_KEY_BYTES', DEFAULTS.keyBytes, 12, 16);
  const historyCap = integer(env, 'TALLY_HISTORY_CAP', DEFAULTS.historyCap, 1, 25_000);
  if (historyCap * (keyBytes + 1) > 350_000) {
    throw new ConfigError('TALLY_HISTORY_CAP x (TALLY_KEY_BYTES + 1) must stay well under the 400 KB item limit');
  }
  const logLevel = (env.LOG_LEVEL ?? 'info').toLowerCase();
  if (logLevel !== 'debug' && logLevel !== 'info' && logLevel !== 'warn' && logLevel !== 'error') {
    throw new ConfigError(`LOG_LEVEL must be debug, info, warn or error, got "${env.LOG_LEVEL}"`);
  }
  const ingestQueueUrl = url(env, 'TALLY_INGEST_QUEUE_URL');
  const resolver = readResolver(env.TALLY_RESOLVER ?? 'host-label');
  const metricRules = readMetricRules(env.TALLY_METRICS);
  return {
    region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
    tableName,
    endpoints: {
      ...optional('dynamodb', url(env, 'AWS_ENDPOINT_URL_DYNAMODB')),
      ...optional('s3', url(env, 'AWS_ENDPOINT_URL_S3')),
      ...optional('sqs', url(env, 'AWS_ENDPOINT_URL_SQS')),
    },
    resolver,
    metricRules,
    logFormat: readLogFormat({ fields: env.TALLY_LOG_FIELDS, delimiter: env.TALLY_LOG_DELIMITER, samplingRate: env.TALLY_SAMPLING_RATE }, resolver, metricRules),
    keyScheme: { keyBytes, ...readShards(env.TALLY_SHARDS) },
    historyCap,
    maxReceiveCount: integer(env, 'TALLY_MAX_RECEIVE_COUNT', DEFAULTS.maxReceiveCount, 1, 1000),
    ledgerTtlDays: ledgerTtlDays(env),
    closeGraceHours: integer(env, 'TALLY_CLOSE_GRACE_HOURS', DEFAULTS.closeGraceHours, 0, 8760),
    ...(ingestQueueUrl === undefined ? {} : { ingestQueueUrl }),
    visibilityTimeoutSeconds: integer(env, 'TALLY_VISIBILITY_TIMEOUT', DEFAULTS.visibilityTimeoutSeconds, 1, 43_200),
    heartbeatSeconds: integer(env, 'TALLY_HEARTBEAT_SECONDS', DEFAULTS.heartbeatSeconds, 0, 43_200),
    maxAttempts: integer(env, 'TALLY_MAX_ATTEMPTS', DEFAULTS.maxAttempts, 1, 20),
    messageConcurrency: integer(env, 'TALLY_MESSAGE_CONCURRENCY', DEFAULTS.messageConcurrency, 1, 64),
    incrementConcurrency: integer(env, 'TALLY_INCREMENT_CONCURRENCY', DEFAULTS.incrementConcurrency, 1, 64),
    minRemainingMillis: integer(env, 'TALLY_MIN_REMAINING_MS', DEFAULTS.minRemainingMillis, 0, 900_000),
    logLevel,
    quotaDefaults: readQuotaDefaults(env.TALLY_QUOTAS),
    quotaLevels: readQuotaLevels(env.TALLY_QUOTA_LEVELS),
  };
}

/**
 * `TALLY_LEDGER_TTL_DAYS`: records that prove an increment applied (ledger items, attempt
 * records, tombstones) must outlive every redelivery the queues allow, or a late retry
 * finds them expired and counts again. Refused here, at cold start and in the CLI.
 */
function ledgerTtlDays(env: Env): number {
  const days = integer(env, 'TALLY_LEDGER_TTL_DAYS', DEFAULTS.ledgerTtlDays, 1, 3650);
  if (days < MAX_REDELIVERY_HORIZON_DAYS) {
    throw new ConfigError(
      `TALLY_LEDGER_TTL_DAYS (${days}) is shorter than the redelivery horizon of ${MAX_REDELIVERY_HORIZON_DAYS} days (14 days in the ingest queue, 14 in the DLQ, ${REPLAY_WINDOW_DAYS} to replay): a late retry could find its records expired and count again`,
    );
  }
  return days;
}

/** Parses `TALLY_QUOTAS` (a JSON object of monthly allowances per metric). */
export function readQuotaDefaults(text: string | undefined, variable = 'TALLY_QUOTAS'): QuotaDefaults {
  try {
    return parseQuotaDefaults(text);
  } catch (error) {
    throw new ConfigError(`${variable}: ${(error as Error).message}`, { cause: error });
  }
}

/** Parses `TALLY_QUOTA_LEVELS` (percentages, default `80,100`). */
export function readQuotaLevels(text: string | undefined, variable = 'TALLY_QUOTA_LEVELS'): readonly number[] {
  if (text === undefined || text.trim() === '') return DEFAULT_QUOTA_LEVELS;
  try {
    return parseQuotaLevels(text);
  } catch (error) {
    throw new ConfigError(`${variable}: ${(error as Error).message}`, { cause: error });
  }
}

/** Where the log-format settings come from, as messages name them: variables, or `tally count`'s flags. */
export interface LogFormatNames {
  readonly fields: string;
  readonly delimiter: string;
  readonly samplingRate: string;
}

const LOG_FORMAT_VARIABLES: LogFormatNames = { fields: 'TALLY_LOG_FIELDS', delimiter: 'TALLY_LOG_DELIMITER', samplingRate: 'TALLY_SAMPLING_RATE' };

/**
 * `TALLY_LOG_FIELDS`, `TALLY_LOG_DELIMITER` and `TALLY_SAMPLING_RATE` (or `names`' flags
 * with `values`): how text logs that do not say their fields are read. A field list
 * that lacks what Tally reads (a day, sc-bytes, the resolver's and the metric rules'
 * fields) is refused here, at cold start, not discovered as unattributed usage.
 */
export function readLogFormat(
  values: { readonly fields?: string | undefined; readonly delimiter?: string | undefined; readonly samplingRate?: string | undefined },
  resolver: ResolverSpec,
  metricRules: readonly MetricRule[],
  names: LogFormatNames = LOG_FORMAT_VARIABLES,
): LogFormatSettings {
  const headerless = values.fields === undefined || values.fields.trim() === '' ? undefined : parseLogFields(values.fields, names.fields);
  if (headerless !== undefined) {
    const missing = missingFields(headerless.fields, resolver, metricRules);
    if (missing.length > 0) {
      throw new ConfigError(`${names.fields} lacks ${missing.join('; ')}: add them to the log's fields (see docs/log-formats.md)`);
    }
  }
  const delimiter = values.delimiter === undefined || values.delimiter === '' ? undefined : parseDelimiter(values.delimiter, names.delimiter);
  const samplingRate = values.samplingRate === undefined || values.samplingRate === '' ? undefined : integerValue(values.samplingRate, names.samplingRate, 100, 1, 100);
  if (samplingRate !== undefined && samplingRate < 100 && headerless?.preset !== 'realtime') {
    throw new ConfigError(`${names.samplingRate} is the sampling rate of real-time logs: give ${names.fields} realtime:<fields> too`);
  }
  return {
    ...(headerless === undefined ? {} : { headerless }),
    ...(delimiter === undefined ? {} : { delimiter }),
    ...(samplingRate === undefined ? {} : { samplingRate }),
  };
}

/**
 * Parses `TALLY_SHARDS`: a count (`4`), optionally followed by dated changes for days
 * still to come (`4,16@2027-01-01,32@2027-06-01`), ascending.
 */
export function readShards(text: string | undefined, variable = 'TALLY_SHARDS'): Pick<KeyScheme, 'shards' | 'schedule'> {
  const raw = text === undefined || text.trim() === '' ? String(DEFAULTS.shards) : text.trim();
  const count = (value: string) => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < 1 || n > 64) throw new ConfigError(`${variable} must give shard counts from 1 to 64, got "${value}" in "${raw}"`);
    return n;
  };
  const [first, ...changes] = raw.split(',').map((part) => part.trim());
  const schedule: ShardChange[] = changes.map((change) => {
    const match = /^(\d+)@(\d{4}-\d{2}-\d{2})$/.exec(change);
    if (!match || !isSupportedDay(match[2]!)) {
      throw new ConfigError(`${variable}: a change is COUNT@YYYY-MM-DD (e.g. 4,16@2027-01-01), got "${change}"`);
    }
    return { from: match[2]!, shards: count(match[1]!) };
  });
  schedule.forEach((change, i) => {
    if (i > 0 && change.from <= schedule[i - 1]!.from) throw new ConfigError(`${variable}: dated changes must be in ascending order of day, got "${raw}"`);
  });
  return { shards: count(first ?? ''), ...(schedule.length > 0 ? { schedule } : {}) };
}

function optional<K extends string>(key: K, value: string | undefined): Partial<Record<K, string>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, string>);
}
