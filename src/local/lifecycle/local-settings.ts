import { readConfig } from '../../adapters/config';
import type { Env } from '../../adapters/env';
import { readUsageApiConfig } from '../../adapters/wiring/usage-api-config';
import { ConfigError } from '../../domain/errors';
import { DEMO_METRICS } from '../demo/demo';
import { readDynamoDbStartSeconds } from '../services/dynamodb-local';
import { LOCAL_REGION } from '../local-credentials';
import { CONSUMER_SETTINGS, localEnvironment, type LocalStackInfo } from '../stack';

/** What `npm start` takes from its environment, checked before anything starts. */
export interface LocalSettings {
  /** The consumer's counting settings (`TALLY_METRICS` defaults to the demo's rules), recorded in `.tally/local.json`. */
  readonly consumer: Record<string, string>;
  /** The metric rules the consumer and the read API use (`TALLY_METRICS`, else the demo's). */
  readonly metrics: string;
  /** Whether to write the demo logs (`TALLY_DEMO=0` starts an empty stack). */
  readonly demo: boolean;
  /** How long to wait for DynamoDB Local to answer (`TALLY_DYNAMODB_START_SECONDS`). */
  readonly dynamodbStartSeconds: number;
}

/**
 * A target that does not exist yet: the stack's own values are always valid, so
 * reading the configuration against stand-ins checks exactly what the user set.
 */
const STAND_IN: LocalStackInfo = {
  region: LOCAL_REGION,
  endpoints: { dynamodb: 'http://127.0.0.1:1', sqs: 'http://127.0.0.1:1', s3: 'http://127.0.0.1:1' },
  bucket: 'tally-logs',
  logPrefix: 'cloudfront/',
  queueUrl: 'http://127.0.0.1:1/000000000000/tally-ingest',
  queueArn: 'arn:aws:sqs:us-east-1:000000000000:tally-ingest',
  dlqUrl: 'http://127.0.0.1:1/000000000000/tally-ingest-dlq',
  table: 'tally-usage',
};

/**
 * Reads and validates every setting `npm start` uses, with the readers the consumer
 * and the read API use once the stack is up (`readConfig`, `readUsageApiConfig`), so
 * a bad `TALLY_SHARDS` or `TALLY_METRICS` fails before DynamoDB Local is started.
 * Throws ConfigError naming the variable.
 */
export function readLocalSettings(env: Env): LocalSettings {
  const metrics = env.TALLY_METRICS ?? DEMO_METRICS;
  const consumer = {
    ...Object.fromEntries(CONSUMER_SETTINGS.flatMap((name) => (env[name] ? [[name, env[name]!]] : []))),
    TALLY_METRICS: metrics,
  };
  const standIn = { ...env, ...localEnvironment(STAND_IN), ...consumer };
  readConfig(standIn);
  readUsageApiConfig({ ...standIn, TALLY_JWT_SECRET: 'a stand-in for .tally/jwt-secret, 32+ bytes', TALLY_JWT_SECRET_PARAMETER: '', TALLY_JWT_PUBLIC_KEY: '' });
  const demo = env.TALLY_DEMO ?? '';
  if (!['', '0', '1'].includes(demo)) throw new ConfigError(`TALLY_DEMO must be 0 (no demo data) or 1 (the default), got "${demo}"`);
  return { consumer, metrics, demo: demo !== '0', dynamodbStartSeconds: readDynamoDbStartSeconds(env) };
}
