import { PutObjectCommand } from '@aws-sdk/client-s3';
import { DeleteItemCommand, QueryCommand, ScanCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ChangeMessageVisibilityCommand, DeleteMessageCommand, ReceiveMessageCommand, SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { backfill } from '../../src/app/ingest/backfill';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { silentLog } from '../../src/app/log';
import { replayDeadLetters } from '../../src/app/ingest/replay';
import { createClients } from '../../src/adapters/clients';
import { DEFAULTS, readConfig } from '../../src/adapters/config';
import { createIngestDeps, prepareToWrite } from '../../src/adapters/wiring/ingest-deps';
import { S3LogListing } from '../../src/adapters/s3/s3-log-listing';
import { SqsNotificationSender } from '../../src/adapters/sqs/sqs-notification-sender';
import { SqsReplayQueues } from '../../src/adapters/sqs/sqs-replay-queues';
import { addDays } from '../../src/domain/days';
import { hoursCoverDay } from '../../src/domain/hours';
import { countObject } from '../../src/domain/logs/log-formats';
import { dayRangeKeys, parseAccountSortKey } from '../../src/domain/counters/keys';
import { incrementKey, keyHex } from '../../src/domain/counters/idempotency-key';
import { normaliseEtag, type LogObjectRef } from '../../src/domain/counters/log-object';
import { parseNotification, s3EventBody } from '../../src/domain/counters/notifications';
import { MAX_REDELIVERY_HORIZON_DAYS } from '../../src/domain/counters/redelivery';
import { DynamoUsageStore } from '../../src/adapters/dynamodb/dynamodb-usage-store';
import type { ApplyOptions, Increment, IncrementOutcome } from '../../src/domain/counters/usage-store';
import { LOCAL_CREDENTIALS } from '../../src/local/local-credentials';
import { cloudFrontObjectKey, emptyExpected, generateLog, logObjectBody, mergeExpected, seededRandom } from '../../src/local/demo/log-generator';
import { QueuePoller, queueDepth, waitForEmptyQueue } from '../../src/local/pipeline/poller';
import { localClients, localEnvironment, type LocalStackInfo } from '../../src/local/stack';
import { nonZero, readCounters, readHourCounters } from '../support/stack';
import { ConsumerCrash, Haunting, injectDoomedWrites, injectDynamoFaults, injectS3Faults } from './chaos-faults';
import { FaultSchedule } from './schedule';

export interface ChaosOptions {
  readonly seed: number;
  readonly objects: number;
  /** A stack with fresh queues for this run (queue visibility ~1 s, maxReceiveCount 3). */
  readonly info: LocalStackInfo & { queueUrl: string; queueArn: string; dlqUrl: string; maxReceiveCount: number };
  readonly consumers?: number;
  /**
   * `hot`: two accounts carry most of the traffic on one day, as the busiest customer
   * does, and a crashed batch is held back (invisible until `holdIncrements` other
   * increments reached the hot account-days, or the queue has nothing else) so that many
   * other increments reach that account-day before its redelivery. At a moment the seed
   * picks, an operator tries a schedule that moves the hot day (refused), then the
   * consumers switch to one that gives the next day 16 shards and a cap 8 keys larger,
   * that day's logs arrive after the switch, and a queue-mode backfill of the hot day runs
   * while crashed batches are held back half applied. The DLQ is replayed twice at once:
   * through the queue and inline on an operator's clock up to 4.5 minutes off.
   */
  readonly profile?: 'default' | 'hot';
  /** Hot profile: increments to the hot accounts a crashed batch waits for (default 1,000: 500 per hot account-day). */
  readonly holdIncrements?: number;
  /** Keys a shard's history holds (TALLY_HISTORY_CAP; default DEFAULTS.historyCap). A small cap makes a short run roll its histories. */
  readonly historyCap?: number;
  readonly log?: (line: string) => void;
  /** Share of objects whose S3 notification is sent twice (default 0.15). */
  readonly duplicateRate?: number;
  /**
   * Each consumer's clock is off the store's by a seeded amount up to this many minutes,
   * either way (default 4: inside the 5-minute margin the proof allows; more probes past it).
   */
  readonly clockSkewMinutes?: number;
  /** One object in this many is haunted (see `Haunting`): unseen deaths on every receive, to the DLQ (default 50; 0: none). */
  readonly hauntEvery?: number;
}

export interface ChaosReport {
  readonly seed: number;
  readonly objects: number;
  readonly faults: Record<string, number>;
  readonly totalFaults: number;
  /** Account-day-metric values that differ from the independent recount. */
  readonly drift: { account: string; day: string; metric: string; expected: number; actual: number }[];
  /**
   * Account-day-hour-metric values (`metric` as `05 requests`) that differ from the recount
   * by the hour of each generated line: the shards' hour attributes, summed over a day's
   * shards, against what the lines of each UTC hour add up to.
   */
  readonly hoursDrift: { account: string; day: string; metric: string; expected: number; actual: number }[];
  readonly lines: { expected: Record<string, number>; ledger: Record<string, number> };
  readonly dlqAfterReplay: number;
  /** Hot profile: increments that reached the hot account-days between a crash and its redelivery (fewest, median). */
  readonly heldBack?: { redeliveries: number; fewest: number; median: number };
  /**
   * Increments a store answered `applied` more than once for the same key (a write whose
   * answer was lost is not seen here): each names its account-day and the proof bound
   * (`since`) and clock of every application, so a drift says which path let it in.
   */
  readonly appliedTwice: { account: string; day: string; key: string; applications: { since?: string; at: string; by: string }[] }[];
  /** What the writes learned about the histories: the largest, keys dropped (each tombstoned), increments left unresolved. */
  readonly history: { maxKeys: number; drops: number; unresolved: number };
  /** Hot profile: the shard schedule switched to midway, the shards each day's usage was found on, and the next day's objects with usage on both days. */
  readonly shardChange?: { schedule: string; shardsByDay: Record<string, number>; straddling: number };
  /** Each consumer's clock offset from the store's, in minutes (the inline operators' too). */
  readonly clocks: { consumers: number[]; inlineBackfill: number; inlineReplay: number };
  /** Haunted objects, their unseen deaths in all, and the most one of them went through. */
  readonly haunted: { objects: number; deaths: number; mostDeaths: number };
  /** The inline backfill of the first day run while the consumers ingest it: its runs (each after the last one died) and what they did. */
  readonly inlineBackfill: { runs: number; counted: number; applied: number; duplicates: number; alreadyCounted: number; failed: number };
  /**
   * Records' expiry: the haunted objects' messages left to expire in the DLQ (deleted there),
   * items the TTL sweep deleted when the clock stood near the redelivery horizon, and what the
   * backfill of every day then sent and found counted.
   */
  readonly expiry: { expiredFromDlq: number; swept: number; horizonBackfillSent: number; horizonBackfillAlreadyCounted: number; clockDays: number };
  /** Formats whose counter gave no hours (their objects' hours are not expected; their days are). */
  readonly formatsWithoutHours: readonly string[];
  readonly summary: string;
}

const RATES = { crash: 0.01, throttle: 0.02, lostResponse: 0.02 };
/** Runs of the inline backfill beside the consumers at most: each after the last one died unseen (an operator runs it again). */
const INLINE_BACKFILL_RUNS = 5;
/** One object in this many carries usage for the doomed account: partly applied on every receive until the replay. */
const DOOMED_EVERY = 50;

/**
 * Feeds `objects` generated CloudFront logs through the real handler on DynamoDB
 * Local and the SQS/S3 emulator while a seeded schedule injects faults: duplicate
 * notifications, lost write answers, throttling, consumers dying mid-object (taking
 * their batch down), several consumers on one queue, messages that exhaust their
 * receives and reach the DLQ unread or partly applied (then replayed while the
 * consumers run), and a backfill of days already ingested. Then every account-day counter is compared with an
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
  // Writes to this account fail while curses are on; it sorts after the others in its objects.
  const doomedAccount = { id: `${runId}-zdoomed`, weight: 30 };
  // The hot profile: one hot day, and the next day's logs (1 in 8) arriving after the shard switch.
  const days = hot ? 2 : Math.max(5, Math.ceil(options.objects / 100));
  const firstDay = '2026-09-01';
  const dayOf = (i: number) => (hot ? addDays(firstDay, i % 8 === 7 ? 1 : 0) : addDays(firstDay, i % days));
  const doomed = (i: number) => i % DOOMED_EVERY === DOOMED_EVERY - 3;
  const hauntEvery = options.hauntEvery ?? 50;
  const haunted = (i: number) => hauntEvery > 0 && i % hauntEvery === Math.floor(hauntEvery / 2);
  const haunting = new Haunting(schedule);

  // 1. The logs and their independent recount. Hours are expected of the formats whose
  // counter reads each line's time (a probe of one small object per format says which; all
  // of them do now, Parquet's column reader included): a format counted by day alone would add none.
  const countsHours = await formatsCountingHours(clients, info, runId, consumerSettings(info, options.historyCap));
  const expected = emptyExpected();
  const refs: LogObjectRef[] = [];
  const formats = { legacy: 0, json: 0, parquet: 0 };
  let straddling = 0;
  for (let i = 0; i < options.objects; i++) {
    const day = dayOf(i);
    // Hot: a quarter of the next day's objects are of its first hour and carry lines of the hot day, so one object
    // straddles the shard change (its increments on 4 shards and on 16), and so do its redeliveries.
    const straddles = hot && day !== firstDay && i % 32 === 7;
    const drawn = Math.floor(random() * 24);
    const hour = straddles ? 0 : drawn;
    const key = cloudFrontObjectKey(`${runId}/`, 'E2CHAOS', day, hour, i.toString(36));
    const chosen = hot
      ? [...hotAccounts, ...accounts.slice(2).filter(() => random() < 0.1)]
      : accounts.filter(() => random() < 0.5).concat(accounts[i % accounts.length]!);
    const log = generateLog({
      seed: seed * 100_003 + i,
      day,
      hour,
      distribution: 'E2CHAOS',
      accounts: doomed(i) ? [...chosen, doomedAccount] : chosen,
      lines: 10 + Math.floor(random() * 50),
      unattributedRate: 0.03,
      malformedRate: 0.02,
      previousDayRate: hot ? (straddles ? 0.3 : 0) : 0.2,
    });
    // Every format CloudFront writes goes through the same exactly-once path: a third of the objects each.
    const format = (['legacy', 'json', 'parquet'] as const)[i % 3]!;
    mergeExpected(expected, countsHours[format] ? log.expected : { ...log.expected, hours: new Map() });
    if (straddles && [...log.expected.usage.keys()].some((row) => row.endsWith(`|${firstDay}`))) straddling++;
    formats[format]++;
    const put = await clients.s3.send(new PutObjectCommand({ Bucket: info.bucket, Key: key, Body: logObjectBody(log.text, format) }));
    const ref = { bucket: info.bucket, key, etag: normaliseEtag(put.ETag ?? '') };
    refs.push(ref);
    if (haunted(i)) {
      const keyBytes = consumerSettings(info, options.historyCap).keyScheme.keyBytes;
      haunting.haunt(key, [...log.expected.usage.keys()].map((row) => {
        const [account, rowDay] = row.split('|') as [string, string];
        return keyHex(incrementKey(ref, account, rowDay, { keyBytes, shards: 1 }).key);
      }));
    }
  }
  say(`seed ${seed}: ${refs.length} objects (legacy ${formats.legacy}, JSON ${formats.json}, Parquet ${formats.parquet}) over ${days} days for ${accounts.length} accounts written (${refs.filter((_, i) => doomed(i)).length} with usage for a doomed account, ${haunting.objects} haunted)`);

  // 2. Consumers with faults; some objects are cursed until the replay.
  let faultsOn = true;
  // Hot profile: increments applied to the hot accounts so far, and where each held-back message was crashed.
  let hotIncrements = 0;
  const crashedAt = new Map<string, number>();
  const heldBack: number[] = [];
  const history = { maxKeys: 0, drops: 0, unresolved: 0 };
  // The store's and the flow's clock. Hot: a crashed batch comes back after holdFor hot increments,
  // which is one visibility timeout (30 minutes) of this clock; otherwise a real second is a minute.
  // Before each DLQ replay it jumps two days, as an operator replays the next working day.
  // The emulator's LastModified is real time, months after this clock: consumers whose
  // clocks run far behind S3's (a twin attempt's proof is then bounded by its own start).
  const holdFor = options.holdIncrements ?? 1000;
  const realStart = Date.now();
  let jumpedMs = 0;
  const clockStart = Date.parse(`${firstDay}T06:00:00Z`);
  const virtualNow = () => new Date(clockStart + jumpedMs + (hot ? (hotIncrements * 1_800_000) / holdFor + (Date.now() - realStart) : (Date.now() - realStart) * 60));
  // Every writer's clock is the store's, off by a seeded amount: consumers up to clockSkewMinutes either way, operators' inline runs up to 4.5 minutes (the CLI refuses 5).
  const skewMinutes = options.clockSkewMinutes ?? 4;
  const skewOf = (who: string, most: number) => Math.round((schedule.chance('clockSkew', who) - 0.5) * 2 * most * 60_000);
  const skewedClock = (skewMs: number) => () => new Date(virtualNow().getTime() + skewMs);
  // Consumers alternate behind and ahead, each by half the most or more: two consumers are always minutes apart.
  const consumerSkews = Array.from({ length: options.consumers ?? 3 }, (_, index) => (index % 2 === 0 ? -1 : 1) * Math.round((0.5 + 0.5 * schedule.chance('clockSkew', `consumer ${index}`)) * skewMinutes * 60_000));
  // Crashed messages kept invisible until enough hot traffic passed them (receipt handle, hot increments then).
  const holding = new Map<string, { receiptHandle: string; at: number }>();
  let cursesOn = true;
  const cursed = new Set(refs.filter((ref) => schedule.chance('curse', ref.key) < 0.02).map((ref) => ref.key));
  const consumerEnv = (shards?: string, historyCap = options.historyCap) => consumerSettings(info, historyCap, shards);
  // The shard schedule and cap the consumers run with now (an operator's inline run uses the same).
  const live: { shards?: string; cap?: number } = { ...(options.historyCap === undefined ? {} : { cap: options.historyCap }) };
  const applications = new Map<string, { account: string; day: string; applications: { since?: string; at: string; by: string }[] }>();
  const watched = <D extends { store: ReturnType<typeof createIngestDeps>['store'] }>(deps: D, by: string, clock: () => Date): D =>
    ({ ...deps, store: watchApplications(deps.store, (increment, since) => {
      // The store's clock: every increment applied to a hot account-day, whoever applied it.
      if (hotAccounts.some((h) => h.id === increment.account)) hotIncrements++;
      const key = Buffer.from(increment.key).toString('hex');
      const entry = applications.get(key) ?? { account: increment.account, day: increment.day, applications: [] };
      entry.applications.push({ ...(since === undefined ? {} : { since: since.toISOString() }), at: clock().toISOString(), by });
      applications.set(key, entry);
    }) });
  const consumers = Array.from({ length: options.consumers ?? 3 }, (_, index) => {
    const config = consumerEnv();
    const consumerClients = createClients(config, LOCAL_CREDENTIALS);
    const life = { dead: false };
    injectDynamoFaults(consumerClients.dynamodb, schedule, () => faultsOn, life, (key) => haunting.strikes(key));
    injectDoomedWrites(consumerClients.dynamodb, schedule, (pk) => cursesOn && pk === `ACCT#${doomedAccount.id}`);
    injectS3Faults(consumerClients.s3, schedule, (key) => cursesOn && cursed.has(key));
    const clock = skewedClock(consumerSkews[index]!);
    const consumer = { deps: watched(createIngestDeps(config, consumerClients, silentLog, clock), `consumer ${index}`, clock), clients: consumerClients, clock, poller: undefined as unknown as QueuePoller };
    const handler = async (event: SQSEvent) => {
      for (const record of event.Records) {
        const at = crashedAt.get(record.messageId);
        if (at !== undefined) {
          heldBack.push(hotIncrements - at);
          crashedAt.delete(record.messageId);
        }
      }
      const response = await ingestBatch(event, consumer.deps);
      const learned = consumer.deps.historyGauge.drain();
      history.maxKeys = Math.max(history.maxKeys, learned.maxKeys);
      history.drops += learned.drops;
      history.unresolved += learned.unresolved;
      if (life.dead || response.results.some((r) => r.error instanceof ConsumerCrash)) {
        // A new sandbox takes the next batch; this one's messages come back unacknowledged.
        life.dead = false;
        schedule.record('batchLost');
        if (hot) {
          for (const record of event.Records) {
            crashedAt.set(record.messageId, hotIncrements);
            const at = hotIncrements;
            // Held only once hidden: a release racing ahead of the hiding would leave it hidden for 600 s.
            await clients.sqs
              .send(new ChangeMessageVisibilityCommand({ QueueUrl: info.queueUrl, ReceiptHandle: record.receiptHandle, VisibilityTimeout: 600 }))
              .catch(() => undefined);
            holding.set(record.messageId, { receiptHandle: record.receiptHandle, at });
          }
        }
        throw new ConsumerCrash('consumer died: the whole batch comes back');
      }
      return response;
    };
    consumer.poller = new QueuePoller({ sqs: clients.sqs, queueUrl: info.queueUrl, queueArn: info.queueArn, region: info.region, handler, waitSeconds: 1 });
    return consumer;
  });
  // Each consumer's cold start: its settings checked against what the table records, through
  // the harness's own client (the faults strike the consumers' work, not this check); the
  // least cap it learns goes to the consumer's store.
  const coldStart = async (deps: Parameters<typeof prepareToWrite>[0], config: ReturnType<typeof consumerEnv>): Promise<void> => {
    const check = createIngestDeps(config, clients, silentLog, virtualNow);
    await prepareToWrite({ tableSettings: check.tableSettings, store: deps.store }, config, virtualNow());
  };
  for (const consumer of consumers) await coldStart(consumer.deps, consumerEnv());
  // What the operators' runs found wrong (a refusal that did not come): reported as drift.
  const operatorFaults: string[] = [];

  // 3. Notifications, some duplicated; in the hot profile the next day's only after the shard switch.
  const bodiesOf = (selected: readonly LogObjectRef[]) =>
    selected.flatMap((ref) => {
      // S3 announces an object when it is created: the notification's time is the clock's now.
      const body = s3EventBody([ref], info.region, virtualNow());
      if (schedule.chance('duplicate', ref.key) >= (options.duplicateRate ?? 0.15)) return [body];
      schedule.record('duplicateNotification');
      return [body, body];
    });
  const send = async (bodies: readonly string[]) => {
    for (let i = 0; i < bodies.length; i += 10) {
      await clients.sqs.send(new SendMessageBatchCommand({
        QueueUrl: info.queueUrl,
        Entries: bodies.slice(i, i + 10).map((body, j) => ({ Id: String(j), MessageBody: body })),
      }));
    }
  };
  const nextDay = addDays(firstDay, 1);
  const later = hot ? refs.filter((_, i) => dayOf(i) === nextDay) : [];
  const first = refs.filter((ref) => !later.includes(ref));
  await send(bodiesOf(first));
  consumers.forEach((consumer) => consumer.poller.start());
  // An operator backfills the first day inline while the consumers ingest it (twin attempts of live ones), on a clock
  // a few minutes off the store's (inside the margin the CLI allows), with the consumers' faults; a run that dies unseen
  // (a crash) is run again, up to INLINE_BACKFILL_RUNS in all, and whatever it could not finish is left to the queue.
  const inlineBackfillSkew = skewOf('inline backfill', 4.5);
  const inlineBackfill = { runs: 0, counted: 0, applied: 0, duplicates: 0, alreadyCounted: 0, failed: 0 };
  // The haunted objects are left out: the queue's path to the DLQ and the backfill near the horizon are theirs.
  const listing = new S3LogListing({ client: clients.s3 });
  const withoutHaunted = {
    async *list(bucket: string, prefix: string) {
      for await (const object of listing.list(bucket, prefix)) if (!haunting.haunts(object.key)) yield object;
    },
  };
  const inlineBackfillDone = (async () => {
    for (let run = 1; run <= INLINE_BACKFILL_RUNS; run++) {
      const config = consumerEnv(live.shards, live.cap);
      const operatorClients = createClients(config, LOCAL_CREDENTIALS);
      const life = { dead: false };
      injectDynamoFaults(operatorClients.dynamodb, schedule, () => faultsOn, life);
      injectDoomedWrites(operatorClients.dynamodb, schedule, (pk) => cursesOn && pk === `ACCT#${doomedAccount.id}`);
      injectS3Faults(operatorClients.s3, schedule, (key) => cursesOn && cursed.has(key));
      const clock = skewedClock(inlineBackfillSkew);
      const deps = watched(createIngestDeps(config, operatorClients, silentLog, clock), `inline backfill run ${run}`, clock);
      await coldStart(deps, config);
      const report = await backfill({
        listing: withoutHaunted,
        ledger: deps.store,
        mode: { kind: 'inline', deps },
        bucket: info.bucket,
        prefix: `${runId}/`,
        from: firstDay,
        to: firstDay,
        concurrency: 2,
      });
      operatorClients.dynamodb.destroy();
      inlineBackfill.runs++;
      inlineBackfill.counted += report.counted;
      inlineBackfill.applied += report.applied;
      inlineBackfill.duplicates += report.duplicates;
      inlineBackfill.alreadyCounted += report.alreadyCounted;
      inlineBackfill.failed += report.failed.length;
      say(`seed ${seed}: inline backfill run ${run} of ${firstDay} beside the consumers: counted ${report.counted} (applied ${report.applied}, duplicates ${report.duplicates}), already counted ${report.alreadyCounted}, failed ${report.failed.length}${life.dead ? ' (it died)' : ''}`);
      if (!life.dead) break;
      schedule.record('inlineBackfillDied');
    }
  })();
  let releasing = hot;
  const releaser = (async () => {
    while (releasing) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      // Nothing else left to pass them: release everything held.
      const drained = holding.size > 0 && (await queueDepth(clients.sqs, info.queueUrl)).visible === 0;
      for (const [messageId, held] of holding) {
        if (!drained && hotIncrements - held.at < holdFor) continue;
        holding.delete(messageId);
        await clients.sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: info.queueUrl, ReceiptHandle: held.receiptHandle, VisibilityTimeout: 0 })).catch(() => undefined);
      }
    }
  })();
  say(`seed ${seed}: ${first.length} objects notified to ${consumers.length} consumers`);
  let shardChange: ChaosReport['shardChange'];
  if (hot) {
    // At a moment the seed picks, the operator follows `tally plan`: more shards from the next day on, and a larger cap.
    const moment = 0.3 + 0.4 * schedule.chance('scheduleMoment');
    const switchAt = first.length * hotAccounts.length * moment;
    const deadline = Date.now() + 600_000;
    // Or until nothing more can come before the switch: the rest of the hot day is in the DLQ (cursed, doomed, haunted, batches lost thrice).
    const idle = async () => {
      if (holding.size > 0) return false;
      const depth = await queueDepth(clients.sqs, info.queueUrl);
      return depth.visible + depth.inFlight === 0;
    };
    while (hotIncrements < switchAt && Date.now() < deadline && !(await idle())) await new Promise((resolve) => setTimeout(resolve, 200));
    // A first try moves the hot day itself, which has data: refused at cold start, naming the day.
    const wrong = consumerEnv(`4,16@${firstDay}`);
    const refusal = await prepareToWrite(createIngestDeps(wrong, clients, silentLog, virtualNow), wrong, virtualNow()).then(
      () => undefined,
      (error: Error) => error.message,
    );
    if (refusal === undefined || !refusal.includes(firstDay)) operatorFaults.push(`TALLY_SHARDS=4,16@${firstDay} was not refused naming ${firstDay}: ${refusal ?? 'accepted'}`);
    else schedule.record('scheduleRefused');
    const scheduleSpec = `4,16@${nextDay}`;
    const raisedCap = (options.historyCap ?? DEFAULTS.historyCap) + 8;
    for (const [index, consumer] of consumers.entries()) {
      const config = consumerEnv(scheduleSpec, raisedCap);
      const deps = watched(createIngestDeps(config, consumer.clients, silentLog, consumer.clock), `consumer ${index} (switched)`, consumer.clock);
      await coldStart(deps, config);
      consumer.deps = deps;
    }
    live.shards = scheduleSpec;
    live.cap = raisedCap;
    schedule.record('capRaised');
    shardChange = { schedule: scheduleSpec, shardsByDay: {}, straddling };
    await send(bodiesOf(later));
    say(`seed ${seed}: consumers switched to TALLY_SHARDS=${scheduleSpec} and cap ${raisedCap} after ${hotIncrements} hot increments (${(moment * 100).toFixed(0)}% of the hot day); ${later.length} objects of ${nextDay} notified`);
    // A queue-mode backfill of the hot day while crashed batches are held back, half applied: its notifications are dated now.
    const heldNow = holding.size;
    const early = await backfill({
      listing: new S3LogListing({ client: clients.s3 }),
      ledger: new DynamoUsageStore({ client: clients.dynamodb, tableName: info.table, historyCap: options.historyCap ?? DEFAULTS.historyCap, ledgerTtlDays: 400 }),
      mode: { kind: 'queue', sender: new SqsNotificationSender({ client: clients.sqs, queueUrl: info.queueUrl, region: info.region }) },
      bucket: info.bucket,
      prefix: `${runId}/`,
      from: firstDay,
      to: firstDay,
    });
    schedule.record('backfillOverHalfApplied', early.sent);
    say(`seed ${seed}: queue-mode backfill of ${firstDay} sent ${early.sent} notifications while ${heldNow} crashed messages were held back`);
  }
  await inlineBackfillDone;
  await waitForEmptyQueue(clients.sqs, info.queueUrl, 600_000);

  // 4. Replay the DLQ while the consumers keep running, with faults still on but curses and haunting lifted.
  cursesOn = false;
  haunting.on = false;
  // Nobody replays the haunted objects' messages: they expire in the DLQ (deleted now), and only the backfill near the horizon (4b) counts them.
  const expiredFromDlq = await expireFromDlq(clients.sqs, info.dlqUrl, (key) => haunting.haunts(key));
  const dead = await queueDepth(clients.sqs, info.dlqUrl);
  const replayQueues = () => new SqsReplayQueues({ client: clients.sqs, dlqUrl: info.dlqUrl, ingestQueueUrl: info.queueUrl, waitSeconds: 1 });
  jumpedMs += 2 * 86_400_000;
  // Two copies of the replay at once, one through the queue and one inline on an operator's clock a few minutes off (within the margin the CLI allows).
  const skewMs = skewOf('inline replay', 4.5);
  const inlineConfig = consumerEnv(shardChange?.schedule);
  const inlineClients = createClients(inlineConfig, LOCAL_CREDENTIALS);
  const inlineClock = () => new Date(virtualNow().getTime() + skewMs);
  const inlineDeps = watched(createIngestDeps(inlineConfig, inlineClients, silentLog, inlineClock), 'inline replay', inlineClock);
  await prepareToWrite(inlineDeps, inlineConfig, virtualNow());
  const [replay, inline] = await Promise.all([
    replayDeadLetters({ queues: replayQueues(), mode: { kind: 'queue' } }),
    replayDeadLetters({ queues: replayQueues(), mode: { kind: 'inline', deps: inlineDeps }, visibilityTimeoutSeconds: 30 }),
  ]);
  inlineClients.dynamodb.destroy();
  schedule.record('inlineReplayed', inline.processed);
  say(`seed ${seed}: DLQ held ${dead.visible}; replay re-sent ${replay.resent}, a copy inline on a clock ${(skewMs / 60_000).toFixed(1)} min off processed ${inline.processed}`);
  await waitForEmptyQueue(clients.sqs, info.queueUrl, 600_000);

  // 4b. Records' expiry: the clock jumps to a day before the redelivery horizon of the first attempts (less the 2 days phase 6 may
  // still jump), every record whose TTL has passed is deleted as DynamoDB's TTL deletes it, and the operator backfills every day
  // through the queue (faults on): the haunted objects, their messages expired in the DLQ, are counted once from the attempt records
  // and tombstones their unseen deaths left 55 days before.
  const store = new DynamoUsageStore({ client: clients.dynamodb, tableName: info.table, historyCap: options.historyCap ?? DEFAULTS.historyCap, ledgerTtlDays: 400 });
  jumpedMs += Math.max(0, clockStart + (MAX_REDELIVERY_HORIZON_DAYS - 3) * 86_400_000 - virtualNow().getTime());
  let swept = await sweepExpired(clients.dynamodb, info.table, runId, virtualNow());
  const horizonFill = await backfill({
    listing: new S3LogListing({ client: clients.s3 }),
    ledger: store,
    mode: { kind: 'queue', sender: new SqsNotificationSender({ client: clients.sqs, queueUrl: info.queueUrl, region: info.region }) },
    bucket: info.bucket,
    prefix: `${runId}/`,
    from: firstDay,
    to: addDays(firstDay, days - 1),
  });
  say(`seed ${seed}: ${expiredFromDlq} haunted messages expired in the DLQ; ${((virtualNow().getTime() - clockStart) / 86_400_000).toFixed(1)} days on, ${swept} expired items swept, a backfill of every day sent ${horizonFill.sent} (already counted ${horizonFill.alreadyCounted})`);
  await waitForEmptyQueue(clients.sqs, info.queueUrl, 600_000);

  // 5. Backfill two days that are already ingested, through the queue, faults still on.
  const backfillDay = hot ? firstDay : addDays(firstDay, Math.floor(random() * (days - 1)));
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
    jumpedMs += 2 * 86_400_000;
    swept += await sweepExpired(clients.dynamodb, info.table, runId, virtualNow());
    const late = await replayDeadLetters({ queues: replayQueues(), mode: { kind: 'queue' } });
    say(`seed ${seed}: ${lateDead.visible} more dead-lettered during replay and backfill; replay re-sent ${late.resent}`);
    await waitForEmptyQueue(clients.sqs, info.queueUrl, 600_000);
  }
  releasing = false;
  await releaser;
  await Promise.all(consumers.map((consumer) => consumer.poller.stop()));

  // 7. Compare with the independent recount.
  const drift: ChaosReport['drift'] = operatorFaults.map((fault) => ({ account: '-', day: '-', metric: fault, expected: 0, actual: 1 }));
  const hoursDrift: ChaosReport['hoursDrift'] = [];
  // The unattributed pseudo-account is shared by every run on this table: its lines are checked through the ledger.
  for (const { id } of [...accounts, doomedAccount]) {
    const counters = await readCounters(clients.dynamodb, info.table, id, addDays(firstDay, -1), addDays(firstDay, days));
    const daysSeen = new Set([...Object.keys(counters), ...[...expected.usage.keys()].filter((k) => k.startsWith(`${id}|`)).map((k) => k.split('|')[1]!)]);
    for (const day of daysSeen) {
      const want = nonZero(expected.usage.get(`${id}|${day}`));
      const got = nonZero(counters[day]);
      for (const metric of new Set([...Object.keys(want), ...Object.keys(got)])) {
        if ((want[metric] ?? 0) !== (got[metric] ?? 0)) drift.push({ account: id, day, metric, expected: want[metric] ?? 0, actual: got[metric] ?? 0 });
      }
    }
    const hourCounters = await readHourCounters(clients.dynamodb, info.table, id, addDays(firstDay, -1), addDays(firstDay, days));
    const hourDaysSeen = new Set([...Object.keys(hourCounters), ...[...(expected.hours?.keys() ?? [])].filter((k) => k.startsWith(`${id}|`)).map((k) => k.split('|')[1]!)]);
    for (const day of hourDaysSeen) {
      const wantHours = expected.hours?.get(`${id}|${day}`) ?? {};
      const gotHours = hourCounters[day] ?? {};
      for (let hour = 0; hour < 24; hour++) {
        const want = nonZero(wantHours[hour]);
        const got = nonZero(gotHours[hour]);
        for (const metric of new Set([...Object.keys(want), ...Object.keys(got)])) {
          const label = `${String(hour).padStart(2, '0')} ${metric}`;
          if ((want[metric] ?? 0) !== (got[metric] ?? 0)) hoursDrift.push({ account: id, day, metric: label, expected: want[metric] ?? 0, actual: got[metric] ?? 0 });
        }
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
  if (shardChange !== undefined) {
    for (const day of [firstDay, nextDay]) shardChange.shardsByDay[day] = await shardsUsed(clients.dynamodb, info.table, hotAccounts.map((a) => a.id), day);
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
    hoursDrift,
    formatsWithoutHours: Object.entries(countsHours).filter(([, counts]) => !counts).map(([format]) => format),
    lines: { expected: { ...expected.lines }, ledger: ledgerLines },
    dlqAfterReplay: dlqAfter.visible + dlqAfter.inFlight,
    history,
    clocks: { consumers: consumerSkews.map((ms) => ms / 60_000), inlineBackfill: inlineBackfillSkew / 60_000, inlineReplay: skewMs / 60_000 },
    haunted: { objects: haunting.objects, deaths: faults.hauntedDeath ?? 0, mostDeaths: haunting.mostDeaths },
    inlineBackfill,
    expiry: { expiredFromDlq, swept, horizonBackfillSent: horizonFill.sent, horizonBackfillAlreadyCounted: horizonFill.alreadyCounted, clockDays: (virtualNow().getTime() - clockStart) / 86_400_000 },
    appliedTwice: [...applications].filter(([, entry]) => entry.applications.length > 1).map(([key, entry]) => ({ key, ...entry })),
    ...(shardChange === undefined ? {} : { shardChange }),
    ...(hot && heldBack.length > 0
      ? { heldBack: { redeliveries: heldBack.length, fewest: Math.min(...heldBack), median: [...heldBack].sort((a, b) => a - b)[Math.floor(heldBack.length / 2)]! } }
      : {}),
    summary:
      `seed ${seed}: ${refs.length} objects, ${totalFaults} faults, drift ${drift.length}, hours drift ${hoursDrift.length}` +
      ([...applications.values()].some((entry) => entry.applications.length > 1) ? `, ${[...applications.values()].filter((entry) => entry.applications.length > 1).length} increments applied twice` : '') +
      (Object.values(countsHours).every(Boolean) ? '' : ` (hours not expected of ${Object.entries(countsHours).filter(([, counts]) => !counts).map(([format]) => format).join(', ')}: counted by day only)`),
  };
}


/** The consumers' configuration: the local stack, the chaos metric rule, and the cap and shard schedule asked for. */
function consumerSettings(info: ChaosOptions['info'], historyCap: number | undefined, shards?: string) {
  return readConfig({
    ...localEnvironment(info),
    TALLY_MAX_RECEIVE_COUNT: String(info.maxReceiveCount),
    TALLY_HEARTBEAT_SECONDS: '0',
    TALLY_MAX_ATTEMPTS: '4',
    // The least TTL the consumers accept: records must last exactly the redelivery horizon, which the run's clock reaches.
    TALLY_LEDGER_TTL_DAYS: String(MAX_REDELIVERY_HORIZON_DAYS),
    TALLY_METRICS: '[{"name":"authorization_requests","path":"/api/authorization/*"}]',
    ...(historyCap === undefined ? {} : { TALLY_HISTORY_CAP: String(historyCap) }),
    ...(shards === undefined ? {} : { TALLY_SHARDS: shards }),
  });
}

/**
 * Which formats the consumers' counter gives hours for: one small generated object of
 * each, written to the bucket and counted as ingest counts it (its source, its
 * settings), nothing applied. A format counts hours when every row's hours add up to
 * its day.
 */
async function formatsCountingHours(
  clients: ReturnType<typeof localClients>,
  info: ChaosOptions['info'],
  runId: string,
  config: ReturnType<typeof readConfig>,
): Promise<Record<'legacy' | 'json' | 'parquet', boolean>> {
  const probe = createIngestDeps(config, clients, silentLog);
  const log = generateLog({ seed: 1, day: '2026-08-01', hour: 5, distribution: 'E2PROBE', accounts: [{ id: `${runId}-probe`, weight: 1 }], lines: 20 });
  const counts = async (format: 'legacy' | 'json' | 'parquet'): Promise<boolean> => {
    const key = cloudFrontObjectKey(`${runId}-probe/`, 'E2PROBE', '2026-08-01', 5, format);
    const put = await clients.s3.send(new PutObjectCommand({ Bucket: info.bucket, Key: key, Body: logObjectBody(log.text, format) }));
    const ref = { bucket: info.bucket, key, etag: normaliseEtag(put.ETag ?? '') };
    const opened = await probe.source.open(ref);
    const rows = (await countObject(opened.content, probe.settings, key, key)).tally.usage();
    return rows.length > 0 && rows.every((row) => hoursCoverDay(row.metrics, row.hours));
  };
  return { legacy: await counts('legacy'), json: await counts('json'), parquet: await counts('parquet') };
}

/**
 * Deletes from the DLQ every message whose object `expires` names (as its retention would),
 * leaving the others to the replay. Answers how many were deleted.
 */
async function expireFromDlq(sqs: SQSClient, dlqUrl: string, expires: (key: string) => boolean): Promise<number> {
  let deleted = 0;
  const kept: string[] = [];
  for (;;) {
    const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl: dlqUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, VisibilityTimeout: 60 }));
    const messages = received.Messages ?? [];
    if (messages.length === 0) break;
    for (const message of messages) {
      let keys: string[] = [];
      try {
        const notification = parseNotification(message.Body ?? '', message.MessageId ?? '');
        keys = notification.kind === 'skip' ? [] : notification.objects.map((object) => object.key);
      } catch {
        keys = [];
      }
      if (keys.length > 0 && keys.every(expires)) {
        await sqs.send(new DeleteMessageCommand({ QueueUrl: dlqUrl, ReceiptHandle: message.ReceiptHandle! }));
        deleted++;
      } else kept.push(message.ReceiptHandle!);
    }
  }
  for (const handle of kept) await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: dlqUrl, ReceiptHandle: handle, VisibilityTimeout: 0 }));
  return deleted;
}

/**
 * What DynamoDB's TTL does, on the run's clock (DynamoDB Local never expires items): deletes
 * every item of this run (its partition names `runId`) whose `ttl` is before `now`.
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/TTL.html: an item is
 * deleted some time after its `ttl` (epoch seconds) has passed; here, at once.
 */
async function sweepExpired(dynamodb: DynamoDBClient, table: string, runId: string, now: Date): Promise<number> {
  let swept = 0;
  let start: Record<string, import('@aws-sdk/client-dynamodb').AttributeValue> | undefined;
  do {
    const page = await dynamodb.send(
      new ScanCommand({
        TableName: table,
        FilterExpression: '#ttl < :now AND contains(PK, :run)',
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':now': { N: String(Math.floor(now.getTime() / 1000)) }, ':run': { S: runId } },
        ProjectionExpression: 'PK, SK',
        ...(start === undefined ? {} : { ExclusiveStartKey: start }),
      }),
    );
    for (const item of page.Items ?? []) {
      await dynamodb.send(new DeleteItemCommand({ TableName: table, Key: { PK: item.PK!, SK: item.SK! } }));
      swept++;
    }
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return swept;
}

/** The number of distinct usage shards `accounts` have on `day` (read with their sort keys). */
async function shardsUsed(dynamodb: DynamoDBClient, table: string, accounts: readonly string[], day: string): Promise<number> {
  const shards = new Set<number>();
  for (const account of accounts) {
    const { PK, from, to } = dayRangeKeys(account, day, day);
    const page = await dynamodb.send(
      new QueryCommand({
        TableName: table,
        KeyConditionExpression: 'PK = :pk AND SK BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':pk': { S: PK }, ':from': { S: from }, ':to': { S: to } },
        ProjectionExpression: 'SK',
      }),
    );
    for (const item of page.Items ?? []) {
      const parsed = parseAccountSortKey(item.SK?.S ?? '');
      if (parsed?.kind === 'usage') shards.add(parsed.shard);
    }
  }
  return shards.size;
}

/**
 * The store, telling `applied` of every increment it answers applied, with the proof
 * bound it was given (the harness's own view: the store is unchanged).
 */
function watchApplications<S extends { applyIncrement: (increment: Increment, apply?: ApplyOptions) => Promise<IncrementOutcome> }>(
  store: S,
  applied: (increment: Increment, since: Date | undefined) => void,
): S {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property !== 'applyIncrement') {
        const value: unknown = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      }
      return async (increment: Increment, apply: ApplyOptions = {}) => {
        const outcome = await target.applyIncrement(increment, apply);
        if (outcome === 'applied') applied(increment, apply.since);
        return outcome;
      };
    },
  });
}
