import { gzipSync } from 'node:zlib';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { ChangeMessageVisibilityCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { backfill } from '../../src/app/backfill';
import { ingestBatch } from '../../src/app/ingest';
import { silentLog } from '../../src/app/log';
import { replayDeadLetters } from '../../src/app/replay';
import { createClients } from '../../src/adapters/clients';
import { readConfig } from '../../src/adapters/config';
import { createIngestDeps } from '../../src/adapters/ingest-deps';
import { S3LogListing } from '../../src/adapters/s3-log-listing';
import { SqsNotificationSender } from '../../src/adapters/sqs-notification-sender';
import { SqsReplayQueues } from '../../src/adapters/sqs-replay-queues';
import { addDays } from '../../src/domain/days';
import { normaliseEtag, type LogObjectRef } from '../../src/domain/log-object';
import { s3EventBody } from '../../src/domain/notifications';
import { DynamoUsageStore } from '../../src/adapters/dynamodb-usage-store';
import { LOCAL_CREDENTIALS } from '../../src/local/local-credentials';
import { cloudFrontObjectKey, emptyExpected, generateLog, mergeExpected, seededRandom } from '../../src/local/log-generator';
import { QueuePoller, queueDepth, waitForEmptyQueue } from '../../src/local/poller';
import { localClients, localEnvironment, type LocalStackInfo } from '../../src/local/stack';
import { nonZero, readCounters } from '../support/stack';
import { ConsumerCrash, injectDynamoFaults, injectS3Faults } from './chaos-faults';
import { FaultSchedule } from './schedule';

export interface ChaosOptions {
  readonly seed: number;
  readonly objects: number;
  /** A stack with fresh queues for this run (queue visibility ~1 s, maxReceiveCount 3). */
  readonly info: LocalStackInfo & { queueUrl: string; queueArn: string; dlqUrl: string };
  readonly consumers?: number;
  /**
   * `hot`: two accounts carry most of the traffic on one day, as the busiest customer
   * does, and a crashed batch is held back (invisible for `holdSeconds`) so that many
   * other increments reach that account-day before its redelivery.
   */
  readonly profile?: 'default' | 'hot';
  readonly holdSeconds?: number;
  readonly log?: (line: string) => void;
}

export interface ChaosReport {
  readonly seed: number;
  readonly objects: number;
  readonly faults: Record<string, number>;
  readonly totalFaults: number;
  /** Account-day-metric values that differ from the independent recount. */
  readonly drift: { account: string; day: string; metric: string; expected: number; actual: number }[];
  readonly lines: { expected: Record<string, number>; ledger: Record<string, number> };
  readonly dlqAfterReplay: number;
  /** Hot profile: increments that reached the hot account-days between a crash and its redelivery (fewest, median). */
  readonly heldBack?: { redeliveries: number; fewest: number; median: number };
  readonly summary: string;
}

const RATES = { crash: 0.01, throttle: 0.02, lostResponse: 0.02 };

/**
 * Feeds `objects` generated CloudFront logs through the real handler on DynamoDB
 * Local and the SQS/S3 emulator while a seeded schedule injects faults: duplicate
 * notifications, lost write answers, throttling, consumers dying mid-object (taking
 * their batch down), several consumers on one queue, messages that exhaust their
 * receives and reach the DLQ (then replayed while the consumers run), and a backfill
 * of days already ingested. Then every account-day counter is compared with an
 * independent recount of the generated logs.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const { seed, info } = options;
  const say = options.log ?? (() => undefined);
  const schedule = new FaultSchedule(seed, RATES);
  const random = seededRandom(seed);
  const clients = localClients(info);
  // Names depend only on the seed, so a seed strikes the same requests again (each run has a fresh table).
  const runId = `chaos${seed.toString(36)}`;
  const hot = options.profile === 'hot';
  const accounts = Array.from({ length: 24 }, (_, i) => ({ id: `${runId}-acct${i}`, weight: hot && i < 2 ? 60 : 1 + (i % 5) }));
  const hotAccounts = hot ? accounts.slice(0, 2) : [];
  const days = hot ? 1 : Math.max(5, Math.ceil(options.objects / 100));
  const firstDay = '2026-09-01';

  // 1. The logs and their independent recount.
  const expected = emptyExpected();
  const refs: LogObjectRef[] = [];
  for (let i = 0; i < options.objects; i++) {
    const day = addDays(firstDay, i % days);
    const hour = Math.floor(random() * 24);
    const log = generateLog({
      seed: seed * 100_003 + i,
      day,
      hour,
      distribution: 'E2CHAOS',
      accounts: hot
        ? [...hotAccounts, ...accounts.slice(2).filter(() => random() < 0.1)]
        : accounts.filter(() => random() < 0.5).concat(accounts[i % accounts.length]!),
      lines: 10 + Math.floor(random() * 50),
      unattributedRate: 0.03,
      malformedRate: 0.02,
      previousDayRate: hot ? 0 : 0.2,
    });
    mergeExpected(expected, log.expected);
    const key = cloudFrontObjectKey(`${runId}/`, 'E2CHAOS', day, hour, i.toString(36));
    const put = await clients.s3.send(new PutObjectCommand({ Bucket: info.bucket, Key: key, Body: gzipSync(log.text) }));
    refs.push({ bucket: info.bucket, key, etag: normaliseEtag(put.ETag ?? '') });
  }
  say(`seed ${seed}: ${refs.length} objects over ${days} days for ${accounts.length} accounts written`);

  // 2. Consumers with faults; some objects are cursed until the replay.
  let faultsOn = true;
  // Hot profile: increments applied to the hot accounts so far, and where each held-back message was crashed.
  let hotIncrements = 0;
  const crashedAt = new Map<string, number>();
  const heldBack: number[] = [];
  let cursesOn = true;
  const cursed = new Set(refs.filter((ref) => schedule.chance('curse', ref.key) < 0.02).map((ref) => ref.key));
  const consumers = Array.from({ length: options.consumers ?? 3 }, () => {
    const config = readConfig({ ...localEnvironment(info), TALLY_HEARTBEAT_SECONDS: '0', TALLY_MAX_ATTEMPTS: '4', TALLY_METRICS: '[{"name":"authorization_requests","path":"/api/authorization/*"}]' });
    const consumerClients = createClients(config, LOCAL_CREDENTIALS);
    const life = { dead: false };
    injectDynamoFaults(consumerClients.dynamodb, schedule, () => faultsOn, life);
    injectS3Faults(consumerClients.s3, schedule, (key) => cursesOn && cursed.has(key));
    const deps = createIngestDeps(config, consumerClients, silentLog);
    const handler = async (event: SQSEvent) => {
      for (const record of event.Records) {
        const at = crashedAt.get(record.messageId);
        if (at !== undefined) {
          heldBack.push(hotIncrements - at);
          crashedAt.delete(record.messageId);
        }
      }
      const response = await ingestBatch(event, deps);
      for (const result of response.results) {
        for (const object of result.objects) hotIncrements += object.applied > 0 ? object.accounts.filter((a) => hotAccounts.some((h) => h.id === a)).length : 0;
      }
      if (life.dead || response.results.some((r) => r.error instanceof ConsumerCrash)) {
        // A new sandbox takes the next batch; this one's messages come back unacknowledged.
        life.dead = false;
        schedule.record('batchLost');
        if (hot) {
          for (const record of event.Records) {
            crashedAt.set(record.messageId, hotIncrements);
            await clients.sqs
              .send(new ChangeMessageVisibilityCommand({ QueueUrl: info.queueUrl, ReceiptHandle: record.receiptHandle, VisibilityTimeout: options.holdSeconds ?? 20 }))
              .catch(() => undefined);
          }
        }
        throw new ConsumerCrash('consumer died: the whole batch comes back');
      }
      return response;
    };
    return {
      clients: consumerClients,
      poller: new QueuePoller({ sqs: clients.sqs, queueUrl: info.queueUrl, queueArn: info.queueArn, region: info.region, handler, waitSeconds: 1 }),
    };
  });

  // 3. Notifications, some duplicated.
  const bodies: string[] = [];
  for (const ref of refs) {
    bodies.push(s3EventBody([ref]));
    if (schedule.chance('duplicate', ref.key) < 0.15) {
      bodies.push(s3EventBody([ref]));
      schedule.record('duplicateNotification');
    }
  }
  for (let i = 0; i < bodies.length; i += 10) {
    await clients.sqs.send(new SendMessageBatchCommand({
      QueueUrl: info.queueUrl,
      Entries: bodies.slice(i, i + 10).map((body, j) => ({ Id: String(j), MessageBody: body })),
    }));
  }
  consumers.forEach((consumer) => consumer.poller.start());
  say(`seed ${seed}: ${bodies.length} notifications sent to ${consumers.length} consumers`);
  await waitForEmptyQueue(clients.sqs, info.queueUrl, 600_000);

  // 4. Replay the DLQ while the consumers keep running, with faults still on but curses lifted.
  cursesOn = false;
  const dead = await queueDepth(clients.sqs, info.dlqUrl);
  const replayQueues = () => new SqsReplayQueues({ client: clients.sqs, dlqUrl: info.dlqUrl, ingestQueueUrl: info.queueUrl, waitSeconds: 1 });
  const replay = await replayDeadLetters({ queues: replayQueues(), mode: { kind: 'queue' } });
  say(`seed ${seed}: DLQ held ${dead.visible}; replay re-sent ${replay.resent}`);
  await waitForEmptyQueue(clients.sqs, info.queueUrl, 600_000);

  // 5. Backfill two days that are already ingested, through the queue, faults still on.
  const backfillDay = addDays(firstDay, Math.floor(random() * (days - 1)));
  const store = new DynamoUsageStore({ client: clients.dynamodb, tableName: info.table, historyCap: 48, ledgerTtlDays: 400 });
  const refill = await backfill({
    listing: new S3LogListing({ client: clients.s3 }),
    ledger: store,
    mode: { kind: 'queue', sender: new SqsNotificationSender({ client: clients.sqs, queueUrl: info.queueUrl, region: info.region }) },
    bucket: info.bucket,
    prefix: `${runId}/`,
    from: backfillDay,
    to: addDays(backfillDay, 1),
  });
  schedule.record('backfilledObjects', refill.selected);
  await waitForEmptyQueue(clients.sqs, info.queueUrl, 600_000);

  // 6. Faults end; whatever the later phases dead-lettered is replayed too, as an operator would.
  faultsOn = false;
  const lateDead = await queueDepth(clients.sqs, info.dlqUrl);
  if (lateDead.visible > 0) {
    const late = await replayDeadLetters({ queues: replayQueues(), mode: { kind: 'queue' } });
    say(`seed ${seed}: ${lateDead.visible} more dead-lettered during replay and backfill; replay re-sent ${late.resent}`);
    await waitForEmptyQueue(clients.sqs, info.queueUrl, 600_000);
  }
  await Promise.all(consumers.map((consumer) => consumer.poller.stop()));

  // 7. Compare with the independent recount.
  const drift: ChaosReport['drift'] = [];
  // The unattributed pseudo-account is shared by every run on this table: its lines are checked through the ledger.
  for (const { id } of accounts) {
    const counters = await readCounters(clients.dynamodb, info.table, id, addDays(firstDay, -1), addDays(firstDay, days));
    const daysSeen = new Set([...Object.keys(counters), ...[...expected.usage.keys()].filter((k) => k.startsWith(`${id}|`)).map((k) => k.split('|')[1]!)]);
    for (const day of daysSeen) {
      const want = nonZero(expected.usage.get(`${id}|${day}`));
      const got = nonZero(counters[day]);
      for (const metric of new Set([...Object.keys(want), ...Object.keys(got)])) {
        if ((want[metric] ?? 0) !== (got[metric] ?? 0)) drift.push({ account: id, day, metric, expected: want[metric] ?? 0, actual: got[metric] ?? 0 });
      }
    }
  }
  const ledgerLines = { read: 0, counted: 0, unattributed: 0, malformed: 0 };
  for (const ref of refs) {
    const entry = await store.findLedger(ref);
    if (entry === undefined) {
      drift.push({ account: '-', day: '-', metric: `ledger missing for ${ref.key}`, expected: 1, actual: 0 });
      continue;
    }
    for (const name of ['read', 'counted', 'unattributed', 'malformed'] as const) ledgerLines[name] += entry.lines[name];
  }
  for (const name of ['read', 'counted', 'unattributed', 'malformed'] as const) {
    if (ledgerLines[name] !== expected.lines[name]) drift.push({ account: '*', day: '*', metric: `lines.${name}`, expected: expected.lines[name], actual: ledgerLines[name] });
  }
  if (ledgerLines.read !== ledgerLines.counted + ledgerLines.unattributed + ledgerLines.malformed) {
    drift.push({ account: '*', day: '*', metric: 'lines balance', expected: ledgerLines.read, actual: ledgerLines.counted + ledgerLines.unattributed + ledgerLines.malformed });
  }
  const dlqAfter = await queueDepth(clients.sqs, info.dlqUrl);
  consumers.forEach((consumer) => consumer.clients.dynamodb.destroy());
  const faults = Object.fromEntries([...schedule.fired.entries()].sort());
  faults.deadLettered = dead.visible + lateDead.visible;
  const totalFaults = Object.entries(faults)
    .filter(([kind]) => kind !== 'backfilledObjects')
    .reduce((sum, [, n]) => sum + n, 0);
  return {
    seed,
    objects: refs.length,
    faults,
    totalFaults,
    drift,
    lines: { expected: { ...expected.lines }, ledger: ledgerLines },
    dlqAfterReplay: dlqAfter.visible + dlqAfter.inFlight,
    ...(hot && heldBack.length > 0
      ? { heldBack: { redeliveries: heldBack.length, fewest: Math.min(...heldBack), median: [...heldBack].sort((a, b) => a - b)[Math.floor(heldBack.length / 2)]! } }
      : {}),
    summary: `seed ${seed}: ${refs.length} objects, ${totalFaults} faults, drift ${drift.length}`,
  };
}

