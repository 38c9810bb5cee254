import { RESOLVER_FORMS } from '../domain/logs/account-resolver';
import type { CountingSetting, OptionDeclaration } from './command';
import type { TargetFlags } from './operator-target';

const TARGET_GROUP = 'Target (flag, else environment variable, else the local stack\'s .tally/local.json):';
const SETTINGS_GROUP = "Counting settings (default: the environment; they must be the consumer's):";

/** The flags naming a target; every command with a `target` takes them. Keys are `TargetFlags` fields. */
export const TARGET_OPTIONS: Readonly<Record<Exclude<keyof TargetFlags, CountingSetting>, OptionDeclaration>> = {
  table: { flags: '--table <name>', help: 'usage table (TALLY_TABLE)', group: TARGET_GROUP },
  queueUrl: { flags: '--queue-url <url>', help: 'ingest queue (TALLY_INGEST_QUEUE_URL)', group: TARGET_GROUP },
  dlqUrl: { flags: '--dlq-url <url>', help: 'dead-letter queue (TALLY_DLQ_URL)', group: TARGET_GROUP },
  bucket: { flags: '--bucket <name>', help: 'log bucket (TALLY_LOG_BUCKET)', group: TARGET_GROUP },
  prefix: { flags: '--prefix <prefix>', help: 'log key prefix (TALLY_LOG_PREFIX)', group: TARGET_GROUP },
  region: { flags: '--region <region>', help: 'AWS region (AWS_REGION)', group: TARGET_GROUP },
  endpoint: {
    flags: '--endpoint <url>',
    help: 'one endpoint for DynamoDB, SQS and S3 (AWS_ENDPOINT_URL_DYNAMODB/_SQS/_S3)',
    group: TARGET_GROUP,
  },
  stack: { flags: '--stack <file>', help: 'a local stack description (default .tally/local.json)', group: TARGET_GROUP },
};

/** The consumer's counting settings as flags, for commands that count or check metric names. */
export const COUNTING_OPTIONS: Readonly<Record<CountingSetting, OptionDeclaration>> = {
  resolver: {
    flags: '--resolver <spec>',
    help: `account resolver: ${RESOLVER_FORMS} (TALLY_RESOLVER)`,
    group: SETTINGS_GROUP,
  },
  metrics: { flags: '--metrics <json>', help: 'metric rules as JSON (TALLY_METRICS)', group: SETTINGS_GROUP },
};

/** The target and counting flags among a command's parsed options. */
export function targetFlagsOf(options: Readonly<Record<string, unknown>>): TargetFlags {
  const flags: Record<string, string> = {};
  for (const name of [...Object.keys(TARGET_OPTIONS), ...Object.keys(COUNTING_OPTIONS)]) {
    const value = options[name];
    if (typeof value === 'string') flags[name] = value;
  }
  return flags as TargetFlags;
}
