/**
 * Item 3: log objects per second through the local stack, queue -> poller (the local
 * event source mapping) -> ingest handler -> DynamoDB Local, for Tally and for the
 * same pipeline with a plain non-idempotent ADD store. Objects are uploaded and their
 * notifications queued before the clock starts; the clock stops when the last object
 * is counted.
 */
import { gzipSync } from 'node:zlib';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { mapWithConcurrency } from '../src/app/concurrency';
import { ingestBatch, type IngestDeps } from '../src/app/ingest';
import { silentLog } from '../src/app/log';
import { createClients } from '../src/adapters/clients';
import { readConfig } from '../src/adapters/config';
import { createIngestDeps } from '../src/adapters/ingest-deps';
import { normaliseEtag, type LogObjectRef } from '../src/domain/log-object';
import { s3EventBody } from '../src/domain/notifications';
import { LOCAL_CREDENTIALS } from '../src/local/local-credentials';
import { cloudFrontObjectKey, generateLog } from '../src/local/log-generator';
import { QueuePoller } from '../src/local/poller';
import { localEnvironment, type LocalStack } from '../src/local/stack';
import { meterCapacity, totalRequests, type CapacityTotals } from './capacity-meter';
import { readCounters } from './increment-strategies';
import { BENCH_METRICS, countError, usageId, type BenchMetric, type CountError } from './increment-workload';
import { PlainAddStore } from './plain-add';
import { alternate, median, type Comparison } from './stats';

export interface EndToEndOptions {
  readonly rounds: number;
  /** Objects per measured run. */
  readonly objects: number;
  readonly linesPerObject: number;
  readonly accounts: number;
  /** Concurrent pollers: Lambda instances working the queue. */
  readonly pollers: number;
}

type Way = 'tally' | 'plain';

interface Pipeline {
  readonly way: Way;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly deps: IngestDeps;
  readonly meter: ReturnType<typeof meterCapacity>;
  readonly bodies: readonly { gz: Buffer; expected: Map<string, Record<string, number>> }[];
  readonly accounts: readonly string[];
  readonly day: string;
  /** Sum of what every object sent through this pipeline must count to. */
  readonly expected: Map<string, Record<BenchMetric, number>>;
  objectsSent: number;
}

export interface EndToEndRun {
  readonly seconds: number;
  readonly objectsPerSecond: number;
  readonly totals: CapacityTotals;
}

export interface EndToEndResult {
  readonly options: EndToEndOptions;
  readonly comparison: Comparison<EndToEndRun>;
  readonly tallyObjectsPerSecond: number;
  readonly plainObjectsPerSecond: number;
  readonly tallyRequestsPerObject: number;
  readonly plainRequestsPerObject: number;
  readonly incrementsPerObject: number;
  readonly tallyError: CountError;
  readonly plainError: CountError;
}

/** Each pipeline counts its own day, so even their `unattributed` counters stay apart. */
const DAYS: Record<Way, string> = { tally: '2026-11-21', plain: '2026-11-22' };
const BODIES = 8;

async function createQueue(stack: LocalStack, name: string): Promise<{ queueUrl: string; queueArn: string }> {
  const { QueueUrl } = await stack.clients.sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '60' } }));
  const attributes = await stack.clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
  return { queueUrl: QueueUrl!, queueArn: attributes.Attributes!.QueueArn! };
}

async function pipelineFor(stack: LocalStack, way: Way, options: EndToEndOptions, runTag: string): Promise<Pipeline> {
  const config = readConfig({
    ...localEnvironment(stack.info),
    TALLY_METRICS: '[{"name":"authorization_requests","path":"/api/authorization/*"}]',
    TALLY_HEARTBEAT_SECONDS: '0',
  });
  const clients = createClients(config, LOCAL_CREDENTIALS);
  const meter = meterCapacity(clients.dynamodb);
  const base = createIngestDeps(config, clients, silentLog);
  const deps: IngestDeps =
    way === 'tally' ? base : { ...base, store: new PlainAddStore({ client: clients.dynamodb, tableName: config.tableName }) };
  const accounts = Array.from({ length: options.accounts }, (_, i) => `${runTag}-${way}-t${i}`);
  const bodies = Array.from({ length: BODIES }, (_, i) => {
    const log = generateLog({
      seed: 500 + i,
      day: DAYS[way],
      hour: 1 + i,
      distribution: 'E2BENCHE2E',
      accounts: accounts.map((id, j) => ({ id, weight: 1 + (j % 3) })),
      lines: options.linesPerObject,
      unattributedRate: 0.01,
      malformedRate: 0.001,
    });
    return { gz: gzipSync(log.text), expected: log.expected.usage };
  });
  const queue = await createQueue(stack, `${runTag}-${way}`);
  return { way, ...queue, deps, meter, bodies, accounts: [...accounts, 'unattributed'], day: DAYS[way], expected: new Map(), objectsSent: 0 };
}

/** Uploads `count` objects and queues their notifications; nothing is timed here. */
async function fillQueue(stack: LocalStack, pipeline: Pipeline, count: number, runTag: string): Promise<void> {
  const refs = await mapWithConcurrency(Array.from({ length: count }, (_, i) => i), 8, async (i): Promise<LogObjectRef> => {
    const n = pipeline.objectsSent + i;
    const body = pipeline.bodies[n % pipeline.bodies.length]!;
    const key = cloudFrontObjectKey(stack.info.logPrefix, 'E2BENCHE2E', pipeline.day, 1 + (n % BODIES), `${runTag}-${pipeline.way}-${n}`);
    const put = await stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.info.bucket, Key: key, Body: body.gz }));
    for (const [id, metrics] of body.expected) {
      const [account] = id.split('|');
      const total = pipeline.expected.get(usageId(account!, pipeline.day)) ?? { requests: 0, bytes: 0, authorization_requests: 0 };
      for (const metric of BENCH_METRICS) total[metric] += metrics[metric] ?? 0;
      pipeline.expected.set(usageId(account!, pipeline.day), total);
    }
    return { bucket: stack.info.bucket, key, etag: normaliseEtag(put.ETag ?? ''), size: body.gz.length };
  });
  pipeline.objectsSent += count;
  for (let i = 0; i < refs.length; i += 10) {
    await stack.clients.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: pipeline.queueUrl,
        Entries: refs.slice(i, i + 10).map((ref, j) => ({ Id: String(j), MessageBody: s3EventBody([ref], stack.info.region) })),
      }),
    );
  }
}

/** Starts the pollers on a full queue and times until `count` objects are counted. */
async function drain(stack: LocalStack, pipeline: Pipeline, count: number, pollers: number): Promise<EndToEndRun> {
  let counted = 0;
  let failed = 0;
  let resolveDone: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    resolveDone = resolve;
  });
  const handler = async (event: SQSEvent) => {
    const response = await ingestBatch(event, pipeline.deps);
    for (const result of response.results) {
      if (result.outcome === 'failed') failed++;
      counted += result.objects.length;
    }
    if (counted >= count) resolveDone();
    return { batchItemFailures: response.batchItemFailures };
  };
  const workers = Array.from(
    { length: pollers },
    () =>
      new QueuePoller({
        sqs: stack.clients.sqs,
        queueUrl: pipeline.queueUrl,
        queueArn: pipeline.queueArn,
        region: stack.info.region,
        handler,
        batchSize: 10,
        waitSeconds: 1,
      }),
  );
  pipeline.meter.reset();
  const started = process.hrtime.bigint();
  for (const worker of workers) worker.start();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      done,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`end to end (${pipeline.way}): ${counted}/${count} objects after 180 s`)), 180_000);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const totals = pipeline.meter.reset();
  await Promise.all(workers.map((worker) => worker.stop()));
  if (failed > 0) throw new Error(`end to end (${pipeline.way}): ${failed} messages failed`);
  return { seconds, objectsPerSecond: count / seconds, totals };
}

export async function runEndToEnd(stack: LocalStack, options: EndToEndOptions, progress: (line: string) => void): Promise<EndToEndResult> {
  const runTag = `e2e${Date.now().toString(36)}`;
  const tally = await pipelineFor(stack, 'tally', options, runTag);
  const plain = await pipelineFor(stack, 'plain', options, runTag);
  const measure = async (pipeline: Pipeline, count: number) => {
    await fillQueue(stack, pipeline, count, runTag);
    return drain(stack, pipeline, count, options.pollers);
  };
  const warmup = Math.max(10, Math.floor(options.objects / 4));
  const comparison = await alternate({
    rounds: options.rounds,
    candidate: async (round) => measure(tally, round < 0 ? warmup : options.objects),
    baseline: async (round) => measure(plain, round < 0 ? warmup : options.objects),
    warmup: true,
    onRound: (round, t, p) =>
      progress(`end to end round ${round + 1}/${options.rounds}: Tally ${t.objectsPerSecond.toFixed(1)} objects/s, plain ADD ${p.objectsPerSecond.toFixed(1)} objects/s`),
  });
  const errorOf = async (pipeline: Pipeline) =>
    countError(pipeline.expected, await readCounters(stack.clients.dynamodb, stack.info.table, pipeline.accounts, pipeline.day));
  const perObject = (runs: readonly EndToEndRun[], value: (totals: CapacityTotals) => number) =>
    median(runs.map((run) => value(run.totals) / options.objects));
  return {
    options,
    comparison,
    tallyObjectsPerSecond: median(comparison.candidate.map((run) => run.objectsPerSecond)),
    plainObjectsPerSecond: median(comparison.baseline.map((run) => run.objectsPerSecond)),
    tallyRequestsPerObject: perObject(comparison.candidate, totalRequests),
    plainRequestsPerObject: perObject(comparison.baseline, totalRequests),
    incrementsPerObject: perObject(comparison.baseline, (totals) => totals.requests.UpdateItem ?? 0),
    tallyError: await errorOf(tally),
    plainError: await errorOf(plain),
  };
}
