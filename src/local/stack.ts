import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { ensureUsageTable } from '../adapters/dynamodb/usage-table';
import { startDynamoDbLocal, type DynamoDbLocal } from './services/dynamodb-local';
import { startSqsS3Emulator, type SqsS3Emulator } from './services/emulator';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from './local-credentials';

/**
 * What a running local stack offers: the shape of `.tally/local.json`, so any AWS
 * client can feed it exactly as AWS would (put a log under `logPrefix`, send its S3
 * notification to `queueUrl`).
 */
export interface LocalStackInfo {
  region: string;
  endpoints: { dynamodb: string; sqs: string; s3: string };
  bucket: string;
  logPrefix: string;
  queueUrl: string;
  queueArn: string;
  dlqUrl: string;
  table: string;
  /** The ingest queue's maxReceiveCount: its consumer must know which receive is the last. */
  maxReceiveCount?: number;
  api?: string;
  /** Where closed days are exported, in `bucket` (billing handoff). */
  exportPrefix?: string;
  /** The webhook queue and its DLQ, when `npm start` runs with TALLY_WEBHOOK_URL and TALLY_WEBHOOK_SECRET. */
  webhookQueueUrl?: string;
  /** The Stripe sender's queue and settings when `npm start` runs it (never the API key). */
  stripe?: { queueUrl: string; apiBase: string; meters: string; window?: string };
  webhookDlqUrl?: string;
  /**
   * The consumer's counting settings (`TALLY_METRICS`, `TALLY_RESOLVER`, `TALLY_SHARDS`,
   * ...), so operator commands that count inline or reconcile count the same way.
   */
  consumer?: Record<string, string>;
}

/** Receives before a local message goes to the DLQ (the deployed queue's is in serverless.yml). */
export const LOCAL_MAX_RECEIVE_COUNT = 3;

/** Settings that decide what the consumer counts and which keys it writes. */
export const CONSUMER_SETTINGS = ['TALLY_METRICS', 'TALLY_RESOLVER', 'TALLY_SHARDS', 'TALLY_HISTORY_CAP', 'TALLY_KEY_BYTES', 'TALLY_QUOTAS', 'TALLY_QUOTA_LEVELS'] as const;

export interface LocalStackOptions {
  /** Keep DynamoDB tables here across restarts; in memory when absent. */
  readonly dataDir?: string;
  /** Keep the emulated S3's buckets and objects here across restarts; in memory when absent. */
  readonly objectsDir?: string;
  readonly bucket?: string;
  readonly logPrefix?: string;
  readonly table?: string;
  readonly queueName?: string;
  /** Seconds a received message stays hidden before it comes back. */
  readonly visibilityTimeoutSeconds?: number;
  /** Receives before a message moves to the DLQ. */
  readonly maxReceiveCount?: number;
  readonly dynamodbPort?: number;
  readonly emulatorPort?: number;
  /** Seconds to wait for DynamoDB Local to answer (`TALLY_DYNAMODB_START_SECONDS`, read by the entry point). */
  readonly dynamodbStartSeconds?: number;
}

export interface LocalStack {
  readonly info: LocalStackInfo;
  readonly clients: { dynamodb: DynamoDBClient; sqs: SQSClient; s3: S3Client };
  stop(): Promise<void>;
}

/** Clients for a running stack, with the credentials the emulators accept. */
export function localClients(info: Pick<LocalStackInfo, 'region' | 'endpoints'>) {
  const common = { region: info.region, credentials: LOCAL_CREDENTIALS };
  return {
    dynamodb: new DynamoDBClient({ ...common, endpoint: info.endpoints.dynamodb }),
    sqs: new SQSClient({ ...common, endpoint: info.endpoints.sqs }),
    s3: new S3Client({ ...common, endpoint: info.endpoints.s3, forcePathStyle: true }),
  };
}

/**
 * Creates the ingest queue with its DLQ and redrive policy, the log bucket and the
 * usage table on running emulators.
 */
export async function provisionLocalResources(
  clients: ReturnType<typeof localClients>,
  options: LocalStackOptions,
): Promise<Pick<LocalStackInfo, 'bucket' | 'logPrefix' | 'queueUrl' | 'queueArn' | 'dlqUrl' | 'table' | 'maxReceiveCount'>> {
  const bucket = options.bucket ?? 'tally-logs';
  const table = options.table ?? 'tally-usage';
  const queueName = options.queueName ?? 'tally-ingest';
  await clients.s3.send(new CreateBucketCommand({ Bucket: bucket }));
  const dlq = await clients.sqs.send(
    new CreateQueueCommand({ QueueName: `${queueName}-dlq`, Attributes: { MessageRetentionPeriod: '1209600' } }),
  );
  const dlqUrl = dlq.QueueUrl!;
  const dlqArn = await queueArnOf(clients.sqs, dlqUrl);
  const queue = await clients.sqs.send(
    new CreateQueueCommand({
      QueueName: queueName,
      Attributes: {
        VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? 30),
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: options.maxReceiveCount ?? LOCAL_MAX_RECEIVE_COUNT }),
      },
    }),
  );
  const queueUrl = queue.QueueUrl!;
  await ensureUsageTable(clients.dynamodb, table);
  return {
    bucket,
    logPrefix: options.logPrefix ?? 'cloudfront/',
    queueUrl,
    queueArn: await queueArnOf(clients.sqs, queueUrl),
    dlqUrl,
    table,
    maxReceiveCount: options.maxReceiveCount ?? LOCAL_MAX_RECEIVE_COUNT,
  };
}

async function queueArnOf(sqs: SQSClient, queueUrl: string): Promise<string> {
  const attributes = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
  return attributes.Attributes!.QueueArn!;
}

/**
 * Starts DynamoDB Local and the SQS/S3 emulator and provisions Tally's resources.
 * No Docker, no AWS account: the same SDK clients talk the real wire protocols.
 */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  let dynamodb: DynamoDbLocal | undefined;
  let emulator: SqsS3Emulator | undefined;
  try {
    // Both settle before a failure is thrown, so the one that did start is stopped too.
    const [startedDynamoDb, startedEmulator] = await Promise.allSettled([
      startDynamoDbLocal({
        ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
        ...(options.dynamodbPort === undefined ? {} : { port: options.dynamodbPort }),
        ...(options.dynamodbStartSeconds === undefined ? {} : { startSeconds: options.dynamodbStartSeconds }),
      }),
      startSqsS3Emulator({
        ...(options.objectsDir === undefined ? {} : { objectsDir: options.objectsDir }),
        ...(options.emulatorPort === undefined ? {} : { port: options.emulatorPort }),
      }),
    ]);
    if (startedDynamoDb.status === 'fulfilled') dynamodb = startedDynamoDb.value;
    if (startedEmulator.status === 'fulfilled') emulator = startedEmulator.value;
    if (startedDynamoDb.status === 'rejected') throw startedDynamoDb.reason;
    if (startedEmulator.status === 'rejected') throw startedEmulator.reason;
    const started = { dynamodb: startedDynamoDb.value, emulator: startedEmulator.value };
    const endpoints = { dynamodb: started.dynamodb.endpoint, sqs: started.emulator.endpoint, s3: started.emulator.endpoint };
    const clients = localClients({ region: LOCAL_REGION, endpoints });
    const resources = await provisionLocalResources(clients, options);
    return {
      info: { region: LOCAL_REGION, endpoints, ...resources },
      clients,
      async stop() {
        clients.dynamodb.destroy();
        clients.sqs.destroy();
        clients.s3.destroy();
        await Promise.all([started.dynamodb.stop(), started.emulator.stop()]);
      },
    };
  } catch (error) {
    await Promise.allSettled([dynamodb?.stop(), emulator?.stop()]);
    throw error;
  }
}

/** Writes `.tally/local.json` (or another path) for other tools to find the stack. */
export function writeStackInfo(path: string, info: LocalStackInfo): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(info, null, 2)}\n`);
}

/** The environment that points Tally's own configuration at a local stack. */
export function localEnvironment(info: LocalStackInfo): Record<string, string> {
  return {
    AWS_REGION: info.region,
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: info.endpoints.dynamodb,
    AWS_ENDPOINT_URL_SQS: info.endpoints.sqs,
    AWS_ENDPOINT_URL_S3: info.endpoints.s3,
    TALLY_TABLE: info.table,
    TALLY_INGEST_QUEUE_URL: info.queueUrl,
    ...(info.maxReceiveCount === undefined ? {} : { TALLY_MAX_RECEIVE_COUNT: String(info.maxReceiveCount) }),
  };
}
