/**
 * Item 3: log objects per second through the local stack, queue -> poller (the local
 * event source mapping) -> ingest handler -> DynamoDB Local, for Tally and for the
 * same pipeline with a plain non-idempotent ADD store (the target's baseline), plus
 * the plain ADD with Tally's object ledger kept (what the rolling history alone costs).
 * Objects are uploaded and their notifications queued before the clock starts; the
 * clock stops when the last object is counted.
 */
import { gzipSync } from 'node:zlib';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { mapWithConcurrency } from '../src/app/concurrency';
import { ingestBatch, type IngestDeps } from '../src/app/ingest/ingest';
import { silentLog } from '../src/app/log';
import { createClients } from '../src/adapters/clients';
import { readConfig } from '../src/adapters/config';
import { createIngestDeps } from '../src/adapters/wiring/ingest-deps';
import { normaliseEtag, type LogObjectRef } from '../src/domain/counters/log-object';
import { s3EventBody } from '../src/domain/counters/notifications';
import { LOCAL_CREDENTIALS } from '../src/local/local-credentials';
import { cloudFrontObjectKey, generateLog } from '../src/local/demo/log-generator';
import { QueuePoller } from '../src/local/pipeline/poller';
import { localEnvironment, type LocalStack } from '../src/local/stack';
import { meterCapacity, totalRequests, type CapacityTotals } from './capacity-meter';
import { readCounters } from './increment-strategies';
import { BENCH_METRICS, countError, usageId, type BenchMetric, type CountError } from './increment-workload';
import { PlainAddStore } from './plain-add';
import { median, rotate } from './stats';
import { DEMO_METRICS } from '../src/local/demo/demo';

export interface EndToEndOptions {
  readonly rounds: number;
  /** Objects per measured run. */
  readonly objects: number;
  readonly linesPerObject: number;
  readonly accounts: number;
  /** Concurrent pollers: Lambda instances working the queue. */
  readonly pollers: number;
}

export const END_TO_END_WAYS = ['tally', 'plain', 'plain-ledger'] as const;
export type EndToEndWay = (typeof END_TO_END_WAYS)[number];
type Way = EndToEndWay;

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

export interface EndToEndWayResult {
  readonly runs: readonly EndToEndRun[];
  /** Median over rounds. */
  readonly objectsPerSecond: number;
  readonly requestsPerObject: number;
  /** Over every object the way counted in this benchmark. */
  readonly error: CountError;
}

export interface EndToEndResult {
  readonly options: EndToEndOptions;
  readonly ways: Record<Way, EndToEndWayResult>;
  readonly incrementsPerObject: number;
}

/** Each pipeline counts its own day, so even their `unattributed` counters stay apart. */
const DAYS: Record<Way, string> = { tally: '2026-11-21', plain: '2026-11-22', 'plain-ledger': '2026-11-23' };
const BODIES = 8;

async function createQueue(stack: LocalStack, name: string): Promise<{ queueUrl: string; queueArn: string }> {
  const { QueueUrl } = await stack.clients.sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '60' } }));
  const attributes = await stack.clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
  return { queueUrl: QueueUrl!, queueArn: attributes.Attributes!.QueueArn! };
}

async function pipelineFor(stack: LocalStack, way: Way, options: EndToEndOptions, runTag: string): Promise<Pipeline> {
  const config = readConfig({
    ...localEnvironment(stack.info),
    TALLY_METRICS: DEMO_METRICS,
    TALLY_HEARTBEAT_SECONDS: '0',
  });
  const clients = createClients(config, LOCAL_CREDENTIALS);
  const meter = meterCapacity(clients.dynamodb);
  const base = createIngestDeps(config, clients, silentLog);
  const plain = (ledger: IngestDeps['store'] | undefined) =>
    new PlainAddStore({ client: clients.dynamodb, tableName: config.tableName, ...(ledger === undefined ? {} : { ledger }) });
  const deps: IngestDeps =
    way === 'tally' ? base : { ...base, store: plain(way === 'plain-ledger' ? base.store : undefined) };
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
  const pipelines = {} as Record<Way, Pipeline>;
  for (const way of END_TO_END_WAYS) pipelines[way] = await pipelineFor(stack, way, options, runTag);
  const measure = async (way: Way, count: number) => {
    await fillQueue(stack, pipelines[way], count, runTag);
    return drain(stack, pipelines[way], count, options.pollers);
  };
  // A warm-up of each way: JIT, SDK connections, DynamoDB Local's first writes.
  for (const way of END_TO_END_WAYS) await measure(way, Math.max(10, Math.floor(options.objects / 4)));
  const runs = await rotate({
    rounds: options.rounds,
    ways: END_TO_END_WAYS,
    run: (way) => measure(way, options.objects),
    onRound: (round, results) =>
      progress(
        `end to end round ${round + 1}/${options.rounds}: ` +
          END_TO_END_WAYS.map((way) => `${way} ${results[way].objectsPerSecond.toFixed(1)} objects/s`).join(', '),
      ),
  });
  const ways = {} as Record<Way, EndToEndWayResult>;
  for (const way of END_TO_END_WAYS) {
    const pipeline = pipelines[way];
    ways[way] = {
      runs: runs[way],
      objectsPerSecond: median(runs[way].map((run) => run.objectsPerSecond)),
      requestsPerObject: median(runs[way].map((run) => totalRequests(run.totals) / options.objects)),
      error: countError(pipeline.expected, await readCounters(stack.clients.dynamodb, stack.info.table, pipeline.accounts, pipeline.day)),
    };
  }
  return {
    options,
    ways,
    incrementsPerObject: median(runs.plain.map((run) => (run.totals.requests.UpdateItem ?? 0) / options.objects)),
  };
}
