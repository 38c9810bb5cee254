import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { ingestBatch, type IngestDeps } from '../../src/app/ingest/ingest';
import type { LogObjectRef } from '../../src/domain/counters/log-object';
import { s3EventBody } from '../../src/domain/counters/notifications';
import { cloudFrontObjectKey, emptyExpected, generateLog, mergeExpected, type ExpectedCount } from '../../src/local/demo/log-generator';
import { QueuePoller, queueDepth } from '../../src/local/pipeline/poller';
import { localEnvironment, type LocalStackInfo } from '../../src/local/stack';
import { crashAfterUpdates } from './faults';
import { putLogObject, readCounters, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from './stack';
import { SHORT_WAIT_MS } from './time-limits';
import { DEMO_METRICS } from '../../src/local/demo/demo';

/** The metric rule the local stack's consumer counts with. */
export const AUTH_METRICS = DEMO_METRICS;

export { captureIo } from './cli';

/** The environment an operator points the CLI at the test stack with (queues and prefix of one test). */
export function operatorEnv(
  info: LocalStackInfo,
  target: { queueUrl?: string; dlqUrl?: string; prefix?: string },
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    ...localEnvironment(info),
    ...(target.queueUrl === undefined ? {} : { TALLY_INGEST_QUEUE_URL: target.queueUrl }),
    ...(target.dlqUrl === undefined ? {} : { TALLY_DLQ_URL: target.dlqUrl }),
    TALLY_LOG_BUCKET: info.bucket,
    TALLY_LOG_PREFIX: target.prefix ?? '',
    TALLY_METRICS: AUTH_METRICS,
    TALLY_HEARTBEAT_SECONDS: '0',
    ...extra,
  };
}

export interface LogSet {
  readonly prefix: string;
  readonly accounts: string[];
  readonly refs: LogObjectRef[];
  /** What all objects count to. */
  readonly expected: ExpectedCount;
  /** What each object counts to, by key. */
  readonly expectedByKey: Map<string, ExpectedCount>;
}

/** What the given objects of a set count to together. */
export function expectedOf(set: LogSet, refs: readonly LogObjectRef[]): ExpectedCount {
  const total = emptyExpected();
  for (const ref of refs) mergeExpected(total, set.expectedByKey.get(ref.key)!);
  return total;
}

/**
 * Realistic CloudFront logs for fresh accounts under a fresh prefix: one object per
 * (day, hour); first-hour objects hold lines of the day before. No unattributed
 * lines: the `unattributed` pseudo-account is shared by every test.
 */
export async function putLogSet(options: {
  days: string[];
  hours?: number[];
  accounts?: number;
  lines?: number;
  info?: LocalStackInfo;
  /** The key of each object (default: a legacy CloudFront name under the prefix). */
  keyOf?: (prefix: string, day: string, hour: number, unique: string) => string;
}): Promise<LogSet> {
  const info = options.info ?? testStackInfo();
  const prefix = `cloudfront/${uniqueId('op')}/`;
  const accounts = Array.from({ length: options.accounts ?? 3 }, (_, i) => uniqueId(`acct${i}`));
  const expected = emptyExpected();
  const refs: LogObjectRef[] = [];
  const expectedByKey = new Map<string, ExpectedCount>();
  let seed = 7;
  for (const day of options.days) {
    for (const hour of options.hours ?? [0, 12]) {
      const log = generateLog({
        seed: seed++,
        day,
        hour,
        distribution: 'E2OPS',
        accounts: accounts.map((id, i) => ({ id, weight: i + 1 })),
        lines: options.lines ?? 120,
        malformedRate: 0.02,
        previousDayRate: 0.2,
      });
      mergeExpected(expected, log.expected);
      const keyOf = options.keyOf ?? ((at, d, h, unique) => cloudFrontObjectKey(at, 'E2OPS', d, h, unique));
      const ref = await putLogObject(keyOf(prefix, day, hour, uniqueId('u')), log.text, { info });
      refs.push(ref);
      expectedByKey.set(ref.key, log.expected);
    }
  }
  return { prefix, accounts, refs, expected, expectedByKey };
}

/** Counts `ref` with a consumer that dies after `k` increments (the message fails). */
export async function halfIngest(ref: LogObjectRef, k: number, overrides: Record<string, string> = {}): Promise<void> {
  const dying = testIngestDeps({ TALLY_INCREMENT_CONCURRENCY: '1', ...overrides }, { clients: (clients) => crashAfterUpdates(clients.dynamodb, k) });
  const response = await ingestBatch({ Records: [s3NotificationMessage(ref)] }, dying);
  if (response.batchItemFailures.length !== 1) throw new Error(`the consumer was to die after ${k} increments, but ${ref.key} has no more`);
}

/** Counts `ref` completely, as a healthy consumer. */
export async function ingestFully(ref: LogObjectRef, deps: IngestDeps = testIngestDeps()): Promise<void> {
  const response = await ingestBatch({ Records: [s3NotificationMessage(ref)] }, deps);
  if (response.batchItemFailures.length !== 0) throw new Error(`ingest failed: ${String(response.results[0]?.error)}`);
}

/** Puts S3 notification bodies (or any text) straight into a queue. */
export async function sendBodies(queueUrl: string, bodies: readonly string[], info = testStackInfo()): Promise<void> {
  const { sqs } = testClients(info);
  for (const body of bodies) await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
}

export const notificationBody = (ref: LogObjectRef): string => s3EventBody([ref]);

/** Every account-day of the set, read from the table, against the generator's own count. */
export async function countersOf(set: LogSet, days: string[], expected: ExpectedCount = set.expected, info = testStackInfo()) {
  const { dynamodb } = testClients(info);
  const got: Record<string, Record<string, number>> = {};
  const want: Record<string, Record<string, number>> = {};
  const sorted = [...days].sort();
  for (const account of set.accounts) {
    const counters = await readCounters(dynamodb, info.table, account, sorted[0]!, sorted[sorted.length - 1]!);
    for (const day of sorted) {
      const key = `${account}|${day}`;
      if (counters[day] !== undefined) got[key] = nonZero(counters[day]!);
      const wanted = expected.usage.get(key);
      if (wanted !== undefined) want[key] = nonZero(wanted);
    }
  }
  return { got, want };
}

/** A metric that never occurred is absent from a counter item and zero in the generator's count. */
function nonZero(metrics: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(metrics).filter(([, value]) => value !== 0));
}

/** A consumer on a test queue, as Lambda's event source mapping would run it. */
export function startConsumer(queue: { queueUrl: string; queueArn: string }, deps: IngestDeps = testIngestDeps(), info = testStackInfo()): QueuePoller {
  const poller = new QueuePoller({
    sqs: testClients(info).sqs,
    queueUrl: queue.queueUrl,
    queueArn: queue.queueArn,
    region: info.region,
    handler: (event: SQSEvent) => ingestBatch(event, deps),
    waitSeconds: 1,
  });
  poller.start();
  return poller;
}

/**
 * Runs a consumer on `queue` until the queue holds no message, visible or in flight (each
 * one counted or dead-lettered), then stops it; fails the test after `timeoutMs`.
 */
export async function consumeUntilDrained(queue: { queueUrl: string; queueArn: string }, timeoutMs = SHORT_WAIT_MS, info = testStackInfo()): Promise<void> {
  const { sqs } = testClients(info);
  const consumer = startConsumer(queue, testIngestDeps(), info);
  try {
    await eventually(async () => {
      const depth = await queueDepth(sqs, queue.queueUrl);
      return depth.visible + depth.inFlight === 0;
    }, timeoutMs, 'the ingest queue to drain');
  } finally {
    await consumer.stop();
  }
}

/** Waits until `check` holds (or fails the test after `timeoutMs`). */
export async function eventually(check: () => Promise<boolean>, timeoutMs = SHORT_WAIT_MS, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}
