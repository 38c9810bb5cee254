import { describeError, PoisonMessageError, PoisonObjectError } from '../../domain/errors';
import { describeObject, type LogObjectRef } from '../../domain/counters/log-object';
import { parseNotification, type Notification } from '../../domain/counters/notifications';
import { inspectDeadLetter, type InspectionDeps } from './dead-letters';
import { ingestBatch, type IngestDeps, type MessageResult } from './ingest';
import type { DeadLetter, ReplayQueues, UsageStore } from '../ports';
import { noProgress, type ProgressReporter } from '../progress';
import { lambdaSqsRecord } from './sqs-record';

/** `queue`: back to the ingest queue, for the consumer. `inline`: the handler's own code, here and now. */
export type ReplayMode = { readonly kind: 'queue' } | { readonly kind: 'inline'; readonly deps: IngestDeps };

export interface ReplayOptions {
  readonly queues: ReplayQueues;
  readonly mode: ReplayMode;
  /** Stop after this many messages. */
  readonly max?: number;
  /** Receive and report what would be done, then make every message visible again. */
  readonly dryRun?: boolean;
  /** For dry runs: says which objects are already counted. */
  readonly ledger?: Pick<UsageStore, 'findLedger'>;
  readonly progress?: ProgressReporter;
  /**
   * Queue mode and dry runs: checks each notification as `tally dlq list` does (ledger, S3,
   * the consumer's parser), so a message it calls poison (its object gone, replaced, no log)
   * stays in the DLQ and is reported, never re-sent to fail again. Absent: bodies alone are checked.
   */
  readonly inspection?: InspectionDeps;
  /** How long a received message stays hidden; inline processing also re-arms it by heartbeat. */
  readonly visibilityTimeoutSeconds?: number;
  /** Empty receives in a row that end the run (each waits the queue's poll time). */
  readonly emptyReceivesToStop?: number;
  readonly region?: string;
}

/** What became of one dead-lettered message. */
export interface ReplayedMessage {
  readonly messageId: string;
  /** `s3://bucket/key` of each object the notification names (empty for poison messages). */
  readonly objects: readonly string[];
  /** Receives before this one: how often it failed before reaching the DLQ. */
  readonly receiveCount: number;
  /**
   * `failed`: attempted and failed again, kept in the DLQ. Dry runs attempt nothing:
   * `would-replay` for a notification, `would-keep` for a poison message a replay would
   * leave in the DLQ (`tally dlq list` says why, `tally dlq drop` removes it on record).
   */
  readonly outcome: 'resent' | 'processed' | 'skipped' | 'failed' | 'would-replay' | 'would-keep';
  /** For `failed` and `would-keep`: the error; the message stays in the DLQ. */
  readonly error?: string;
  /** For `failed` and `would-keep`: retrying cannot help until the message or object is fixed. */
  readonly poison?: boolean;
  /** For dry runs: objects the ledger already knows as counted. */
  readonly alreadyCounted?: readonly string[];
}

export interface ReplayReport {
  readonly mode: 'queue' | 'inline';
  readonly dryRun: boolean;
  received: number;
  resent: number;
  processed: number;
  skipped: number;
  deleted: number;
  /** Messages that failed again and stay in the DLQ (never on a dry run, which attempts nothing). */
  failed: number;
  /** Dry runs: messages a replay would send or process. */
  wouldReplay: number;
  /** Poison messages left in the DLQ: kept (a replay never re-sends them) or, on a dry run, that would be. */
  poisonKept: number;
  /** Processed or re-sent, but the delete from the DLQ failed: a later replay repeats them harmlessly. */
  notDeleted: number;
  /** Inline only: what the objects did. */
  readonly objects: { counted: number; alreadyCounted: number; applied: number; duplicates: number };
  readonly messages: ReplayedMessage[];
}

const DEFAULT_QUEUE_VISIBILITY_SECONDS = 60;

/**
 * Empties the dead-letter queue back into the pipeline. Each message is deleted from
 * the DLQ only after it was re-sent (`queue`) or processed (`inline`); a message
 * that fails again stays, reported with its error. Counting stays exactly-once
 * whatever runs at the same time (the consumer, another replay, a backfill): an
 * object's ledger item skips it once done, and the shard histories catch the
 * increments a half-done object already applied.
 */
export async function replayDeadLetters(options: ReplayOptions): Promise<ReplayReport> {
  const { queues, mode } = options;
  const progress = options.progress ?? noProgress;
  const limit = options.max ?? Number.POSITIVE_INFINITY;
  const visibility =
    options.visibilityTimeoutSeconds ??
    (mode.kind === 'inline' ? mode.deps.settings.visibilityTimeoutSeconds : DEFAULT_QUEUE_VISIBILITY_SECONDS);
  const report: ReplayReport = {
    mode: mode.kind,
    dryRun: options.dryRun === true,
    received: 0,
    resent: 0,
    processed: 0,
    skipped: 0,
    deleted: 0,
    failed: 0,
    wouldReplay: 0,
    poisonKept: 0,
    notDeleted: 0,
    objects: { counted: 0, alreadyCounted: 0, applied: 0, duplicates: 0 },
    messages: [],
  };
  let total = Math.min(limit, await queues.depth());
  progress.setTotal(total);

  const seen = new Set<string>();
  const kept: DeadLetter[] = [];
  const stopAfter = options.emptyReceivesToStop ?? 2;
  let empty = 0;
  try {
    while (report.received < limit && empty < stopAfter) {
      const batch = await queues.receive(Math.min(10, limit - report.received), visibility);
      const fresh = batch.filter((message) => !seen.has(message.messageId));
      // A message seen earlier in this run came back (its visibility ran out): keep its newest handle.
      kept.push(...batch.filter((message) => seen.has(message.messageId)));
      if (fresh.length === 0) {
        empty++;
        continue;
      }
      empty = 0;
      fresh.forEach((message) => seen.add(message.messageId));
      report.received += fresh.length;
      if (report.received > total) progress.setTotal((total = report.received));

      const outcomes = options.dryRun
        ? await preview(fresh, options)
        : mode.kind === 'queue'
          ? await resend(fresh, queues, options.inspection)
          : await processInline(fresh, mode.deps, queues, options.region, report);
      const done = fresh.filter((message) => !STAYS.has(outcomeOf(outcomes, message)!));
      kept.push(...fresh.filter((message) => !done.includes(message)));
      if (done.length > 0) {
        const deletion = await queues.delete(done);
        report.deleted += done.length - deletion.failed.length;
        report.notDeleted += deletion.failed.length;
      }
      for (const message of fresh) {
        const outcome = outcomes.get(message.messageId)!;
        report.messages.push(outcome);
        if (outcome.outcome === 'resent') report.resent++;
        if (outcome.outcome === 'processed') report.processed++;
        if (outcome.outcome === 'skipped') report.skipped++;
        if (outcome.outcome === 'failed') report.failed++;
        if (outcome.outcome === 'would-replay') report.wouldReplay++;
        if (outcome.poison === true) report.poisonKept++;
      }
      progress.advance(fresh.length, { failed: report.failed });
    }
  } finally {
    if (kept.length > 0) await queues.release(kept);
  }
  return report;
}

type Outcomes = Map<string, ReplayedMessage>;

/** Outcomes that leave the message in the DLQ. */
const STAYS: ReadonlySet<ReplayedMessage['outcome']> = new Set(['failed', 'would-replay', 'would-keep']);

function outcomeOf(outcomes: Outcomes, message: DeadLetter): ReplayedMessage['outcome'] | undefined {
  return outcomes.get(message.messageId)?.outcome;
}

function receiveCountOf(message: DeadLetter): number {
  return Number(message.attributes.ApproximateReceiveCount ?? 0);
}

/** A dead letter that is not a notification: reported and kept in the DLQ, never re-sent. */
function poisonOutcome(message: DeadLetter, error: Error): ReplayedMessage {
  return { messageId: message.messageId, receiveCount: receiveCountOf(message), objects: [], outcome: 'failed', error: describeError(error), poison: true };
}

function readNotification(message: DeadLetter): { notification: Notification } | { error: Error } {
  try {
    return { notification: parseNotification(message.body, message.messageId) };
  } catch (error) {
    return { error: error instanceof Error ? error : new Error(String(error)) };
  }
}

function objectsOf(notification: Notification): LogObjectRef[] {
  return notification.kind === 'objects' ? [...notification.objects] : [];
}

/**
 * Why `message`, a notification, can never succeed, as `tally dlq list` would say it
 * (its object gone, replaced by other content, or no log the consumer reads); undefined
 * when it may, or when there is nothing to inspect with.
 */
async function poisonReason(message: DeadLetter, inspection: InspectionDeps | undefined): Promise<string | undefined> {
  if (inspection === undefined) return undefined;
  const inspected = await inspectDeadLetter(message, inspection);
  return inspected.verdict === 'poison' ? inspected.reason : undefined;
}

/** A message that is not a notification, or whose objects can never be counted, is not re-sent: it would only fail again. */
async function resend(messages: readonly DeadLetter[], queues: ReplayQueues, inspection: InspectionDeps | undefined): Promise<Outcomes> {
  const outcomes: Outcomes = new Map();
  const sendable: DeadLetter[] = [];
  for (const message of messages) {
    const read = readNotification(message);
    const base = { messageId: message.messageId, receiveCount: receiveCountOf(message) };
    if ('error' in read) {
      outcomes.set(message.messageId, poisonOutcome(message, read.error));
      continue;
    }
    const poison = await poisonReason(message, inspection);
    if (poison !== undefined) {
      outcomes.set(message.messageId, { ...base, objects: objectsOf(read.notification).map(describeObject), outcome: 'failed', error: poison, poison: true });
      continue;
    }
    outcomes.set(message.messageId, { ...base, objects: objectsOf(read.notification).map(describeObject), outcome: 'resent' });
    sendable.push(message);
  }
  if (sendable.length > 0) {
    const { failed } = await queues.resend(sendable);
    for (const failure of failed) {
      const outcome = outcomes.get(failure.messageId)!;
      outcomes.set(failure.messageId, { ...outcome, outcome: 'failed', error: failure.error, poison: false });
    }
  }
  return outcomes;
}

async function processInline(
  messages: readonly DeadLetter[],
  deps: IngestDeps,
  queues: ReplayQueues,
  region: string | undefined,
  report: ReplayReport,
): Promise<Outcomes> {
  const arn = (await queues.arn()) ?? '';
  const { results } = await ingestBatch({ Records: messages.map((message) => lambdaSqsRecord(message, arn, region ?? 'us-east-1')) }, deps);
  const outcomes: Outcomes = new Map();
  results.forEach((result: MessageResult, i) => {
    const message = messages[i]!;
    const read = readNotification(message);
    const objects = 'notification' in read ? objectsOf(read.notification).map(describeObject) : [];
    const base = { messageId: message.messageId, receiveCount: receiveCountOf(message), objects };
    if (result.outcome === 'failed') {
      const error = result.error ?? new Error('failed');
      outcomes.set(message.messageId, {
        ...base,
        outcome: 'failed',
        error: describeError(error),
        poison: error instanceof PoisonMessageError || error instanceof PoisonObjectError,
      });
      return;
    }
    for (const object of result.objects) {
      if (object.status === 'already-done') report.objects.alreadyCounted++;
      else report.objects.counted++;
      report.objects.applied += object.applied;
      report.objects.duplicates += object.duplicates + object.resumed;
    }
    outcomes.set(message.messageId, { ...base, outcome: result.outcome === 'skipped' ? 'skipped' : 'processed' });
  });
  return outcomes;
}

/** A dry run attempts nothing: a poison message is one a replay would keep, not one that failed. */
async function preview(messages: readonly DeadLetter[], options: ReplayOptions): Promise<Outcomes> {
  const outcomes: Outcomes = new Map();
  for (const message of messages) {
    const read = readNotification(message);
    const base = { messageId: message.messageId, receiveCount: receiveCountOf(message) };
    if ('error' in read) {
      outcomes.set(message.messageId, { ...poisonOutcome(message, read.error), outcome: 'would-keep' });
      continue;
    }
    const objects = objectsOf(read.notification);
    const poison = await poisonReason(message, options.inspection);
    if (poison !== undefined) {
      outcomes.set(message.messageId, { ...base, objects: objects.map(describeObject), outcome: 'would-keep', error: poison, poison: true });
      continue;
    }
    const alreadyCounted: string[] = [];
    if (options.ledger !== undefined) {
      for (const object of objects) {
        if (object.etag !== '' && (await options.ledger.findLedger(object)) !== undefined) alreadyCounted.push(describeObject(object));
      }
    }
    outcomes.set(message.messageId, { ...base, objects: objects.map(describeObject), outcome: 'would-replay', alreadyCounted });
  }
  return outcomes;
}
