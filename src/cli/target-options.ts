import { createClients, type AwsClients } from '../adapters/clients';
import { resolveTarget, type OperatorTarget, type TargetFlags } from '../adapters/operator-target';

type Env = Readonly<Record<string, string | undefined>>;

/** `parseArgs` options naming the target; every operator command takes them. */
export const TARGET_OPTIONS = {
  table: { type: 'string' },
  'queue-url': { type: 'string' },
  'dlq-url': { type: 'string' },
  bucket: { type: 'string' },
  prefix: { type: 'string' },
  region: { type: 'string' },
  endpoint: { type: 'string' },
  stack: { type: 'string' },
} as const;

/** `parseArgs` options for the consumer's attribution rules (recounts, inline ingestion). */
export const INGEST_OPTIONS = {
  resolver: { type: 'string' },
  metrics: { type: 'string' },
} as const;

export const TARGET_USAGE = `target (flags, else environment, else the local stack's .tally/local.json):
  --table NAME          usage table                 TALLY_TABLE
  --queue-url URL       ingest queue                TALLY_INGEST_QUEUE_URL
  --dlq-url URL         dead-letter queue           TALLY_DLQ_URL
  --bucket NAME         log bucket                  TALLY_LOG_BUCKET
  --prefix P            log key prefix              TALLY_LOG_PREFIX
  --region R            AWS region                  AWS_REGION
  --endpoint URL        one endpoint for all three  AWS_ENDPOINT_URL_DYNAMODB/_SQS/_S3
  --stack FILE          a local stack description   (default .tally/local.json)`;

type Values = Partial<Record<keyof typeof TARGET_OPTIONS | keyof typeof INGEST_OPTIONS, string | boolean | undefined>>;

function text(value: string | boolean | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** The target flags among parsed values. */
export function targetFlagsOf(values: Values): TargetFlags {
  const flags: Record<string, string> = {};
  const map: Record<string, keyof TargetFlags> = {
    table: 'table',
    'queue-url': 'queueUrl',
    'dlq-url': 'dlqUrl',
    bucket: 'bucket',
    prefix: 'prefix',
    region: 'region',
    endpoint: 'endpoint',
    stack: 'stack',
    resolver: 'resolver',
    metrics: 'metrics',
  };
  for (const [option, field] of Object.entries(map)) {
    const value = text(values[option as keyof Values]);
    if (value !== undefined) flags[field] = value;
  }
  return flags as TargetFlags;
}

/** Resolves the target and builds its SDK clients. */
export function openTarget(values: Values, env: Env, cwd: string): { target: OperatorTarget; clients: AwsClients } {
  const target = resolveTarget(targetFlagsOf(values), env, cwd);
  return { target, clients: createClients(target.config, target.credentials) };
}

/** Releases the SDK clients' sockets so the process can exit at once. */
export function closeClients(clients: AwsClients): void {
  clients.dynamodb.destroy();
  clients.sqs.destroy();
  clients.s3.destroy();
}
