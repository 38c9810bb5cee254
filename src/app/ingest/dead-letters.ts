import {
  diagnose,
  MAX_RECORDED_BODY_CHARS,
  type DeadLetterBody,
  type DeadLetterDrop,
  type DeadLetterVerdict,
  type InspectedObject,
  type ObjectFinding,
} from '../../domain/counters/dead-letter';
import { describeError, PoisonObjectError } from '../../domain/errors';
import { countObject } from '../../domain/logs/log-formats';
import { describeObject, type LogObjectRef } from '../../domain/counters/log-object';
import { parseNotification } from '../../domain/counters/notifications';
import { mapWithConcurrency } from '../concurrency';
import type { IngestSettings } from './ingest';
import type { DeadLetter, DropRecords, LogSource, ReplayQueues, UsageStore } from '../ports';

/** What inspecting a dead letter reads: the ledger, S3, and the consumer's parser settings. */
export interface InspectionDeps {
  readonly store: Pick<UsageStore, 'findObject'>;
  readonly source: LogSource;
  readonly settings: Pick<IngestSettings, 'resolver' | 'metricRules' | 'maxLineBytes' | 'logFormat'>;
}

/** One dead-lettered message, as `tally dlq list` shows it. */
export interface InspectedDeadLetter {
  readonly messageId: string;
  /** SQS's `ApproximateReceiveCount`, this inspection's receive included. */
  readonly receiveCount: number;
  /** When the message was first sent to the ingest queue (SQS `SentTimestamp` survives the move to the DLQ). */
  readonly sentAt?: string;
  /** `s3://bucket/key` of each object the body names (empty when it names none). */
  readonly objects: readonly string[];
  readonly verdict: DeadLetterVerdict;
  readonly reason: string;
  /** Per object: what the ledger and S3 say. */
  readonly findings: readonly { readonly object: string; readonly etag: string; readonly finding: ObjectFinding }[];
  readonly body: string;
}

/** How long messages stay hidden while they are read (and, for a drop, inspected and deleted). */
const READ_VISIBILITY_SECONDS = 60;
const DROP_VISIBILITY_SECONDS = 300;

/**
 * Receives every message of the DLQ once (up to `max`), hidden for `visibilityTimeoutSeconds`.
 * A message that comes back during the run keeps its newest receipt handle. On an
 * error, what was received is made visible again before the error is rethrown.
 */
async function receiveAll(queues: ReplayQueues, visibilityTimeoutSeconds: number, max = Number.POSITIVE_INFINITY): Promise<DeadLetter[]> {
  const byId = new Map<string, DeadLetter>();
  let empty = 0;
  try {
    // Two receives in a row with nothing new (each waits the queue's poll time) end the read.
    while (byId.size < max && empty < 2) {
      const batch = await queues.receive(Math.min(10, max - byId.size), visibilityTimeoutSeconds);
      const fresh = batch.filter((message) => !byId.has(message.messageId));
      for (const message of batch) byId.set(message.messageId, message);
      empty = fresh.length === 0 ? empty + 1 : 0;
    }
  } catch (error) {
    if (byId.size > 0) await queues.release([...byId.values()]);
    throw error;
  }
  return [...byId.values()];
}

function sentAtOf(message: DeadLetter): string | undefined {
  const millis = Number(message.attributes.SentTimestamp);
  return Number.isFinite(millis) && millis > 0 ? new Date(millis).toISOString() : undefined;
}

/**
 * What became of one notified object, checked the way the consumer would meet it:
 * the ledger first (a counted object is skipped whatever S3 holds now), then S3 (gone,
 * or other content under the key), then the attempts on record, and last the object
 * itself read through the consumer's parser (only for an object no attempt ever read).
 */
export async function inspectObject(notified: LogObjectRef, deps: InspectionDeps): Promise<ObjectFinding> {
  try {
    let current: string | undefined;
    try {
      current = notified.etag === '' ? await deps.source.etagOf(notified) : undefined;
    } catch (error) {
      if (error instanceof PoisonObjectError) return { kind: 'gone' };
      throw error;
    }
    const ref = { ...notified, etag: notified.etag === '' ? current! : notified.etag };
    const state = await deps.store.findObject(ref);
    if (state.done !== undefined) return { kind: 'counted', processedAt: state.done.processedAt };
    try {
      current ??= await deps.source.etagOf(ref);
    } catch (error) {
      if (error instanceof PoisonObjectError) return { kind: 'gone' };
      throw error;
    }
    if (current !== ref.etag) return { kind: 'replaced', currentEtag: current };
    const attempts = [...state.attempts].sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    const failed = attempts.filter((attempt) => attempt.state === 'failed');
    const last = failed[failed.length - 1];
    if (last !== undefined) return { kind: 'failed', attempts: attempts.length, reason: last.reason ?? 'no reason recorded', at: last.startedAt };
    if (attempts.length > 0) return { kind: 'interrupted', attempts: attempts.length, at: attempts[attempts.length - 1]!.startedAt };
    return await readable(ref, deps);
  } catch (error) {
    return { kind: 'unchecked', error: describeError(error) };
  }
}

/** Reads the object through the consumer's parser, writing nothing: `unreadable` when it refuses it. */
async function readable(ref: LogObjectRef, deps: InspectionDeps): Promise<ObjectFinding> {
  try {
    const opened = await deps.source.open(ref);
    await countObject(opened.content, deps.settings, ref.key, describeObject(ref));
    return { kind: 'pending' };
  } catch (error) {
    if (!(error instanceof PoisonObjectError)) throw error;
    return /does not exist/.test(error.reason) ? { kind: 'gone' } : { kind: 'unreadable', error: error.reason };
  }
}

/** Reads a dead letter's body and checks every object it names. */
export async function inspectDeadLetter(message: DeadLetter, deps: InspectionDeps): Promise<InspectedDeadLetter> {
  let body: DeadLetterBody;
  try {
    const notification = parseNotification(message.body, message.messageId);
    if (notification.kind === 'skip') body = { kind: 'skip', reason: notification.reason };
    else {
      const objects: InspectedObject[] = [];
      for (const object of notification.objects) objects.push({ object, finding: await inspectObject(object, deps) });
      body = { kind: 'objects', objects };
    }
  } catch (error) {
    // The message id is the row's own; the reason alone reads better next to it.
    body = { kind: 'poison', error: describeError(error).replace(`message ${message.messageId}: `, '') };
  }
  const { verdict, reason } = diagnose(body);
  const sentAt = sentAtOf(message);
  const inspected = body.kind === 'objects' ? body.objects : [];
  return {
    messageId: message.messageId,
    receiveCount: Number(message.attributes.ApproximateReceiveCount ?? 0),
    ...(sentAt === undefined ? {} : { sentAt }),
    objects: inspected.map(({ object }) => describeObject(object)),
    verdict,
    reason,
    findings: inspected.map(({ object, finding }) => ({ object: describeObject(object), etag: object.etag, finding })),
    body: message.body,
  };
}

export interface DeadLetterListing {
  readonly messages: readonly InspectedDeadLetter[];
  /** Messages per verdict. */
  readonly verdicts: Readonly<Record<DeadLetterVerdict, number>>;
}

function countVerdicts(messages: readonly { verdict: DeadLetterVerdict }[]): Record<DeadLetterVerdict, number> {
  const counts: Record<DeadLetterVerdict, number> = { poison: 0, retryable: 0, counted: 0, 'nothing-to-count': 0, unknown: 0 };
  for (const message of messages) counts[message.verdict]++;
  return counts;
}

/**
 * Lists the dead-letter queue without changing any message's fate: every message is
 * received once, made visible again as soon as the whole queue has been read
 * (ChangeMessageVisibility 0), then inspected from what was read. Nothing is deleted
 * or re-sent; the only trace is SQS's receive count, which a DLQ does not act on.
 */
export async function listDeadLetters(options: {
  queues: ReplayQueues;
  deps: InspectionDeps;
  max?: number;
  concurrency?: number;
}): Promise<DeadLetterListing> {
  const received = await receiveAll(options.queues, READ_VISIBILITY_SECONDS, options.max);
  if (received.length > 0) await options.queues.release(received);
  const messages = await mapWithConcurrency(received, options.concurrency ?? 4, (message) => inspectDeadLetter(message, options.deps));
  return { messages, verdicts: countVerdicts(messages) };
}

/** Which messages `tally dlq drop` takes. */
export type DropSelection = { readonly ids: readonly string[] } | { readonly poison: true };

export interface DropOptions {
  readonly queues: ReplayQueues;
  /** The DLQ's URL, written into each record. */
  readonly queueUrl: string;
  readonly deps: InspectionDeps;
  readonly records: DropRecords;
  readonly select: DropSelection;
  readonly reason: string;
  readonly actor: string;
  /** Inspect and report; record and delete nothing. */
  readonly dryRun?: boolean;
  /** Drop messages named by id even when they look retryable or could not be checked. */
  readonly force?: boolean;
  readonly clock?: () => Date;
}

/** One message a drop took (or, on a dry run, would take). */
export interface DroppedMessage {
  readonly messageId: string;
  readonly verdict: DeadLetterVerdict;
  readonly reason: string;
  readonly objects: readonly string[];
  /** `dropped`: deleted and recorded; `would-drop`: dry run; `not-deleted`: recorded, but SQS refused the delete; `not-recorded`: the record failed, so it was not deleted. */
  readonly outcome: 'dropped' | 'would-drop' | 'not-deleted' | 'not-recorded';
  /** A record of an earlier drop of the same message was there already (a copy SQS delivered twice). */
  readonly recordedBefore?: boolean;
  readonly error?: string;
}

export interface DropReport {
  readonly dryRun: boolean;
  readonly queueUrl: string;
  /** Messages read from the DLQ. */
  readonly received: number;
  readonly messages: readonly DroppedMessage[];
  /** Ids asked for that are not in the DLQ (or hidden by another reader). */
  readonly notFound: readonly string[];
  /** Messages named by id that were kept: they may still count (retryable, unknown); --force drops them. */
  readonly refused: readonly { readonly messageId: string; readonly verdict: DeadLetterVerdict; readonly reason: string }[];
}

/** Verdicts a drop by id takes only with `force`: the message may still carry usage. */
const GUARDED: ReadonlySet<DeadLetterVerdict> = new Set(['retryable', 'unknown']);

/**
 * Deletes the selected messages from the DLQ, each after writing its record (who, when,
 * why, the body and the diagnosis), so no drop goes unrecorded. The DLQ is read with
 * every message hidden while the drop works; what is not dropped is made visible again
 * at the end. `--poison` takes exactly the messages diagnosed poison; ids take the named
 * ones, refusing (without `force`) those that may still carry usage.
 */
export async function dropDeadLetters(options: DropOptions): Promise<DropReport> {
  const { queues, records } = options;
  const clock = options.clock ?? (() => new Date());
  const received = await receiveAll(queues, DROP_VISIBILITY_SECONDS);
  const deleted = new Set<string>();
  try {
    const wanted = 'ids' in options.select ? new Set(options.select.ids) : undefined;
    const candidates = wanted === undefined ? received : received.filter((message) => wanted.has(message.messageId));
    const inspected = await mapWithConcurrency(candidates, 4, async (message) => ({ message, inspection: await inspectDeadLetter(message, options.deps) }));
    const refused = wanted === undefined || options.force === true ? [] : inspected.filter(({ inspection }) => GUARDED.has(inspection.verdict));
    const chosen = inspected.filter(
      ({ inspection }) => (wanted !== undefined || inspection.verdict === 'poison') && !refused.some((r) => r.inspection === inspection),
    );
    const found = new Set(received.map((message) => message.messageId));
    const report: DropReport = {
      dryRun: options.dryRun === true,
      queueUrl: options.queueUrl,
      received: received.length,
      messages: [],
      notFound: wanted === undefined ? [] : [...wanted].filter((id) => !found.has(id)),
      refused: refused.map(({ inspection }) => ({ messageId: inspection.messageId, verdict: inspection.verdict, reason: inspection.reason })),
    };
    const messages = report.messages as DroppedMessage[];
    const summary = (inspection: InspectedDeadLetter) => ({
      messageId: inspection.messageId,
      verdict: inspection.verdict,
      reason: inspection.reason,
      objects: inspection.objects,
    });
    if (options.dryRun === true) {
      messages.push(...chosen.map(({ inspection }) => ({ ...summary(inspection), outcome: 'would-drop' as const })));
      return report;
    }
    const recorded: { message: DeadLetter; inspection: InspectedDeadLetter; before: boolean }[] = [];
    for (const { message, inspection } of chosen) {
      try {
        const begun = await records.begin(dropRecord(inspection, options, clock()));
        recorded.push({ message, inspection, before: begun === 'already-dropped' });
      } catch (error) {
        messages.push({ ...summary(inspection), outcome: 'not-recorded', error: describeError(error) });
      }
    }
    const deletion = recorded.length === 0 ? { failed: [] } : await queues.delete(recorded.map(({ message }) => message));
    const failures = new Map(deletion.failed.map((failure) => [failure.messageId, failure.error]));
    for (const { inspection, before } of recorded) {
      const error = failures.get(inspection.messageId);
      const outcome = error === undefined ? { state: 'dropped' as const, droppedAt: clock().toISOString() } : { state: 'not-deleted' as const, error };
      if (error === undefined) deleted.add(inspection.messageId);
      // A drop an earlier run recorded keeps its record; only a new one is completed.
      if (!before) await records.finish(inspection.messageId, outcome);
      messages.push({
        ...summary(inspection),
        outcome: error === undefined ? 'dropped' : 'not-deleted',
        ...(before ? { recordedBefore: true } : {}),
        ...(error === undefined ? {} : { error }),
      });
    }
    return report;
  } finally {
    const rest = received.filter((message) => !deleted.has(message.messageId));
    if (rest.length > 0) await queues.release(rest);
  }
}

function dropRecord(inspection: InspectedDeadLetter, options: DropOptions, now: Date): DeadLetterDrop {
  return {
    messageId: inspection.messageId,
    queueUrl: options.queueUrl,
    actor: options.actor,
    reason: options.reason,
    recordedAt: now.toISOString(),
    state: 'dropping',
    verdict: inspection.verdict,
    diagnosis: inspection.reason,
    objects: inspection.objects,
    receiveCount: inspection.receiveCount,
    ...(inspection.sentAt === undefined ? {} : { sentAt: inspection.sentAt }),
    body: inspection.body.slice(0, MAX_RECORDED_BODY_CHARS),
    bodyLength: inspection.body.length,
  };
}
