import { gzipSync } from 'node:zlib';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { lambdaSqsRecord } from '../../src/app/ingest/sqs-record';
import { silentLog, type Log } from '../../src/app/log';
import { createClients, type AwsClients } from '../../src/adapters/clients';
import { readConfig } from '../../src/adapters/config';
import { createIngestDeps } from '../../src/adapters/wiring/ingest-deps';
import { DynamoUsageReader } from '../../src/adapters/dynamodb/dynamodb-usage-reader';
import { addHourSums, hourTotals } from '../../src/domain/hours';
import { normaliseEtag, type LogObjectRef } from '../../src/domain/counters/log-object';
import { s3EventBody } from '../../src/domain/counters/notifications';
import { DEMO_METRICS } from '../../src/local/demo/demo';
import { LOCAL_CREDENTIALS } from '../../src/local/local-credentials';
import { localClients, localEnvironment, type LocalStackInfo } from '../../src/local/stack';

/** The stack the global setup started. */
export function testStackInfo(): LocalStackInfo {
  const raw = process.env.TALLY_TEST_STACK;
  if (raw === undefined) throw new Error('TALLY_TEST_STACK is not set: run the tests through jest (global setup starts the stack)');
  return JSON.parse(raw) as LocalStackInfo;
}

let sequence = 0;
/** An id no other test uses: valid as an account id and in object keys. */
export function uniqueId(prefix: string): string {
  sequence++;
  return `${prefix}-${process.pid.toString(36)}${Date.now().toString(36)}${sequence}`;
}

/** Clients made for a test file; destroyed after its tests (test/support/after-tests.ts) so no socket keeps a worker alive. */
const created: { destroy(): void }[] = [];

export function destroyTestClients(): void {
  for (const client of created.splice(0)) client.destroy();
  s3Clients.clear();
}

export function testClients(info = testStackInfo()) {
  const clients = localClients(info);
  created.push(clients.dynamodb, clients.sqs, clients.s3);
  return clients;
}

/** Creates a queue with a DLQ just for one test. */
export async function createTestQueues(
  info: LocalStackInfo,
  options: { visibilityTimeoutSeconds?: number; maxReceiveCount?: number } = {},
): Promise<{ queueUrl: string; queueArn: string; dlqUrl: string; maxReceiveCount: number }> {
  const { sqs } = testClients(info);
  const name = uniqueId('q');
  const maxReceiveCount = options.maxReceiveCount ?? 2;
  const dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }))).QueueUrl!;
  const arnOf = async (url: string) =>
    (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
  const queueUrl = (
    await sqs.send(
      new CreateQueueCommand({
        QueueName: name,
        Attributes: {
          VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? 2),
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: await arnOf(dlqUrl), maxReceiveCount }),
        },
      }),
    )
  ).QueueUrl!;
  return { queueUrl, queueArn: await arnOf(queueUrl), dlqUrl, maxReceiveCount };
}

const s3Clients = new Map<string, ReturnType<typeof localClients>['s3']>();
function s3For(info: LocalStackInfo) {
  let client = s3Clients.get(info.endpoints.s3);
  if (client === undefined) {
    client = testClients(info).s3;
    s3Clients.set(info.endpoints.s3, client);
  }
  return client;
}

/** Puts a log object (gzipped unless told otherwise) and returns its reference. */
export async function putLogObject(
  key: string,
  content: string | Buffer,
  options: { gzip?: boolean; info?: LocalStackInfo } = {},
): Promise<LogObjectRef> {
  const info = options.info ?? testStackInfo();
  const body = typeof content === 'string' ? (options.gzip === false ? Buffer.from(content) : gzipSync(content)) : content;
  const put = await s3For(info).send(new PutObjectCommand({ Bucket: info.bucket, Key: key, Body: body }));
  return { bucket: info.bucket, key, etag: normaliseEtag(put.ETag ?? ''), size: body.length };
}

/** Puts a legacy log object with one request (100 bytes) for each of `accounts` on `day`. */
export async function putRequestsObject(accounts: readonly string[], day: string): Promise<LogObjectRef> {
  const text = [
    '#Version: 1.0',
    '#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status',
    ...accounts.map((account) => `${day}\t00:00:01\tIAD89-C1\t100\t192.0.2.1\tGET\t${account}.example.com\t/x\t200`),
  ].join('\n');
  return putLogObject(`cloudfront/${uniqueId('E2MANY')}.${day}-00.x.gz`, `${text}\n`);
}

/** An SQS record as Lambda delivers it, carrying `body`. */
export function sqsRecord(
  body: string,
  options: { messageId?: string; receiveCount?: number; receiptHandle?: string; firstReceivedAt?: Date } = {},
): SQSRecord {
  return lambdaSqsRecord(
    {
      messageId: options.messageId ?? uniqueId('msg'),
      receiptHandle: options.receiptHandle ?? '',
      body,
      attributes: {
        ApproximateReceiveCount: String(options.receiveCount ?? 1),
        ...(options.firstReceivedAt === undefined ? {} : { ApproximateFirstReceiveTimestamp: String(options.firstReceivedAt.getTime()) }),
      },
    },
    'arn:aws:sqs:us-east-1:000000000000:tally-ingest',
    'us-east-1',
  );
}

/** The SQS record of an S3 notification for `refs`. */
export function s3NotificationMessage(
  refs: LogObjectRef | LogObjectRef[],
  options: { messageId?: string; receiveCount?: number; firstReceivedAt?: Date; createdAt?: Date } = {},
): SQSRecord {
  return sqsRecord(s3EventBody(Array.isArray(refs) ? refs : [refs], 'us-east-1', options.createdAt), options);
}

/**
 * Ingest dependencies on the test stack, built the way the Lambda builds them, with
 * fresh SDK clients (so middleware added by one test stays in that test).
 */
export function testIngestDeps(
  overrides: Record<string, string> = {},
  options: { log?: Log; info?: LocalStackInfo; clients?: (clients: AwsClients) => void; clock?: () => Date } = {},
): ReturnType<typeof createIngestDeps> & { clients: AwsClients } {
  const info = options.info ?? testStackInfo();
  const config = readConfig({
    ...localEnvironment(info),
    TALLY_HEARTBEAT_SECONDS: '0',
    TALLY_METRICS: DEMO_METRICS,
    ...overrides,
  });
  const clients = createClients(config, LOCAL_CREDENTIALS);
  created.push(clients.dynamodb, clients.sqs, clients.s3);
  options.clients?.(clients);
  return { ...createIngestDeps(config, clients, options.log ?? silentLog, options.clock), clients };
}

/**
 * An account's measured counters per day (every shard summed), read with consistent
 * reads through the same Query the API uses; adjustments are left out.
 */
export async function readCounters(
  dynamodb: DynamoDBClient,
  table: string,
  account: string,
  from: string,
  to = from,
): Promise<Record<string, Record<string, number>>> {
  const { records } = await new DynamoUsageReader({ client: dynamodb, tableName: table, consistentRead: true }).read(account, from, to);
  const days: Record<string, Record<string, number>> = {};
  for (const record of records) {
    if (record.kind !== 'usage') continue;
    const day = (days[record.day] ??= {});
    for (const [metric, value] of Object.entries(record.metrics)) day[metric] = (day[metric] ?? 0) + value;
  }
  return days;
}

/**
 * The sums by UTC hour of every usage shard of `account`, by day, read strongly
 * consistent: what the increments' conditional writes added to the hour attributes
 * (`05R`, hours.ts), summed over the day's shards. A backfilled-hours item is not
 * included: this is what the exactly-once writes did.
 */
export async function readHourCounters(
  dynamodb: DynamoDBClient,
  table: string,
  account: string,
  from: string,
  to = from,
): Promise<Record<string, Record<number, Record<string, number>>>> {
  const { records } = await new DynamoUsageReader({ client: dynamodb, tableName: table, consistentRead: true }).read(account, from, to);
  const days: Record<string, Record<number, Record<string, number>>> = {};
  for (const record of records) {
    if (record.kind !== 'usage') continue;
    addHourSums((days[record.day] ??= {}), record.hours ?? {});
  }
  return days;
}

/**
 * The requests `account` counted on `day`, when the day's sums by UTC hour add up to
 * them too (hours are exactly once when the day is); otherwise a text that says both,
 * so an expectation of the day's count fails on drift in either.
 */
export async function exactRequests(dynamodb: DynamoDBClient, table: string, account: string, day: string): Promise<number | string> {
  const requests = (await readCounters(dynamodb, table, account, day, day))[day]?.requests ?? 0;
  const inHours = hourTotals((await readHourCounters(dynamodb, table, account, day, day))[day] ?? {}).requests ?? 0;
  return inHours === requests ? requests : `${requests} requests, ${inHours} in its hours`;
}

/**
 * Metrics without zero entries: a metric never incremented is absent from an item
 * (the API reports it as 0), so counters are compared with zeros dropped.
 */
export function nonZero(metrics: Record<string, number> | undefined): Record<string, number> {
  return Object.fromEntries(Object.entries(metrics ?? {}).filter(([, value]) => value !== 0));
}
