import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { ResolverSpec } from '../../domain/logs/account-resolver';
import { describeError, PoisonMessageError, PoisonObjectError, TallyError } from '../../domain/errors';
import { incrementKey, keyHex, shardsOn, type KeyScheme } from '../../domain/counters/idempotency-key';
import { countObject } from '../../domain/logs/log-formats';
import type { LogFormatSettings } from '../../domain/logs/log-fields';
import { describeObject, type LogObjectRef } from '../../domain/counters/log-object';
import type { MetricRule } from '../../domain/logs/metric-rules';
import { parseNotification } from '../../domain/counters/notifications';
import { pinAttribute } from '../../domain/counters/keys';
import type { ApplyOptions, AttemptRecord, Increment, IncrementOutcome, LedgerEntry, UsageStore } from '../../domain/counters/usage-store';
import type { AccountDayUsage, LineCounts, MalformedSample } from '../../domain/logs/usage-tally';
import type { Contribution } from '../../domain/counters/contributions';
import { hoursCoverDay } from '../../domain/hours';
import type { Log } from '../log';
import type { LateUsageMarks, LogSource, MessageVisibility } from '../ports';
import { marksLateUsage } from '../../domain/billing/day-close';
import { mapWithConcurrency } from '../concurrency';

/** The attempt ran out of Lambda time before every increment was started; it is retried. */
export class OutOfTimeError extends TallyError {
  constructor(message: string) {
    super(message);
    this.name = 'OutOfTimeError';
  }
}

/** How the current attempt at an object came about. */
export interface AttemptContext {
  /** The SQS receive count; absent for direct calls (inline backfill), which are never redelivered. */
  readonly receiveCount?: number;
  /** True once too little Lambda time is left to start another increment. */
  readonly outOfTime?: () => boolean;
}

export interface IngestSettings {
  readonly resolver: ResolverSpec;
  readonly metricRules: readonly MetricRule[];
  readonly keyScheme: KeyScheme;
  readonly maxLineBytes?: number;
  /** How logs without a header are read (TALLY_LOG_FIELDS, ...). */
  readonly logFormat?: LogFormatSettings;
  /** Messages of one batch worked on at once. */
  readonly messageConcurrency: number;
  /** Increments of one object in flight at once. */
  readonly incrementConcurrency: number;
  /** Visibility timeout to re-arm while a message is in progress, and how often. */
  readonly visibilityTimeoutSeconds: number;
  readonly heartbeatSeconds: number;
  /** A message, or an increment, is not started when less Lambda time than this remains; it comes back later. */
  readonly minRemainingMillis: number;
  /** The queue's maxReceiveCount (checked against the queue at deploy time; every attempt records that it started). */
  readonly maxReceiveCount?: number;
}

/** Each day's shard count as the table records it (fixed by the day's first increment). */
export interface ShardCounts {
  shardsOn(day: string): Promise<number>;
}

export interface IngestDeps {
  readonly store: UsageStore;
  /**
   * Where a day's shard count comes from: the table's record of it, never this writer's
   * own schedule alone (which only fixes a day nothing recorded yet). Without it (tests on
   * the in-memory store), the settings' key scheme.
   */
  readonly shardCounts?: ShardCounts;
  /**
   * Late usage: increments for a day that is (about to be) closed are announced to the
   * closer with a marker first, so they become a revision of that day. Only such
   * increments pay for it; on-time usage is told apart by clock arithmetic alone.
   */
  readonly late?: { readonly marks: LateUsageMarks; readonly graceHours: number };
  readonly source: LogSource;
  readonly visibility?: MessageVisibility;
  readonly settings: IngestSettings;
  readonly log: Log;
  readonly clock?: () => Date;
}

/** What became of one log object. */
export interface ObjectResult {
  readonly object: LogObjectRef;
  /** `counted`: increments applied now (some may have been duplicates); `already-done`: ledger said so. */
  readonly status: 'counted' | 'already-done';
  readonly lines: LineCounts;
  readonly increments: number;
  readonly applied: number;
  readonly duplicates: number;
  /** Increments an earlier, failed attempt recorded as applied (skipped now). */
  readonly resumed: number;
  /** Increments left unapplied because nothing could prove whether an unseen attempt applied them. */
  readonly unresolved: number;
  /** Accounts (including `unattributed`) the object had usage for; empty when already done. */
  readonly accounts: readonly string[];
  readonly malformedSamples: readonly MalformedSample[];
  /** Why a Parquet object's rows were counted as text lines rather than column by column (logged once with the object). */
  readonly readAsLines?: string;
  /** Already done, counted before contributions were recorded: they were recorded now (nothing counted again). */
  readonly contributionsFilled?: boolean;
}

/** What became of one SQS message. */
export interface MessageResult {
  readonly messageId: string;
  readonly outcome: 'processed' | 'skipped' | 'failed';
  readonly objects: readonly ObjectResult[];
  readonly error?: Error;
}

/**
 * Counts one log object and applies its increments exactly once:
 * ledger check (one consistent read) -> stream + count -> one conditional update per
 * (account, day) -> ledger write.
 *
 * An attempt that fails where it can see it (an error, throttling past the retry
 * budget, running out of Lambda time) records in the ledger which keys it knows are
 * applied, so the retry skips them. An attempt that dies unseen leaves its keys in the
 * shard histories, and a key leaves a history only after its tombstone is written: every
 * later attempt writes in proven mode (bounded by the object's creation), so a key
 * found in neither was never applied, however late the retry comes, until the
 * tombstones' TTL. An increment nothing can prove either way (a shard that dropped
 * keys untombstoned, under an earlier version) is not applied: the ledger lists it as
 * unresolved. Every attempt records that it started (and since when any attempt can
 * have begun) before its first increment, so any later one, whatever message brings it,
 * knows that an attempt came before it and bounds its proof by that record.
 */
export async function ingestObject(notified: LogObjectRef, deps: IngestDeps, attempt: AttemptContext = {}): Promise<ObjectResult> {
  const { store, source, settings } = deps;
  const clock = deps.clock ?? (() => new Date());
  // Before the ledger is read: a twin attempt this read cannot see yet began no earlier, on a clock like ours.
  const begun = clock();
  const etag = notified.etag !== '' ? notified.etag : await source.etagOf(notified);
  const ref: LogObjectRef = { ...notified, etag };

  const state = await store.findObject(ref);
  if (state.done !== undefined) {
    const done = state.done;
    const filled = done.contributions === undefined && (await fillContributions(done, deps));
    return {
      object: ref,
      status: 'already-done',
      lines: done.lines,
      increments: done.increments,
      applied: 0,
      duplicates: 0,
      resumed: 0,
      unresolved: 0,
      accounts: [],
      malformedSamples: [],
      ...(filled ? { contributionsFilled: true } : {}),
    };
  }
  const recorded = new Set(state.attempts.flatMap((a) => a.applied.map(keyHex)));

  const opened = await source.open(ref);
  const count = await countObject(opened.content, settings, ref.key, describeObject(ref));

  const usage = count.tally.usage();
  const shardsByDay = await recordedShards(usage.map((row) => row.day), deps);
  const increments: Increment[] = usage.map((row) => {
    const { key, shard } = incrementKey(ref, row.account, row.day, { keyBytes: settings.keyScheme.keyBytes, shards: shardsByDay.get(row.day)! });
    return { account: row.account, day: row.day, shard, key, metrics: row.metrics, hours: row.hours };
  });
  const startedAt = clock().toISOString();
  const attemptId = `${startedAt}-${Math.random().toString(36).slice(2, 8)}`;
  const earliest = new Date(earliestAttempt(state.attempts, opened.lastModified, begun)).toISOString();
  // Every attempt that may apply something says so first: a later one, whichever message
  // brings it, learns that it came and since when, on the clock that dated its keys.
  if (increments.length > 0) await store.recordAttempt(ref, { id: attemptId, startedAt, state: 'started', applied: [], since: earliest });
  // Earlier versions pinned only in attempts that recorded themselves first: no record, no pin to look for.
  const legacyPin = state.attempts.length > 0 ? pinAttribute(ref) : undefined;

  await markLateUsage(increments, deps, clock());
  const since = new Date(Math.max(0, Date.parse(earliest) - CLOCK_MARGIN_MS));
  const outcomes = await applyAll(increments, recorded, deps, attempt, { since, ...(legacyPin === undefined ? {} : { legacyPin }) });
  if (outcomes.failure !== undefined) {
    const known = increments.filter((_, i) => outcomes.results[i] === 'applied' || outcomes.results[i] === 'duplicate').map((inc) => inc.key);
    try {
      await store.recordAttempt(ref, { id: attemptId, startedAt, state: 'failed', applied: known, reason: describeError(outcomes.failure), since: earliest });
    } catch (error) {
      deps.log.error('could not record the progress of a failed object; its retry relies on the shard histories', {
        object: describeObject(ref),
        error: describeError(error),
      });
    }
    throw outcomes.failure;
  }

  const tallyOf = (outcome: ApplyResult) => outcomes.results.filter((r) => r === outcome).length;
  const unresolved = increments.filter((_, i) => outcomes.results[i] === 'unresolved');
  if (unresolved.length > 0) {
    deps.log.warn('increments left unresolved: nothing proves whether an earlier attempt applied them; run tally reconcile --resolve', {
      object: describeObject(ref),
      unresolved: unresolved.map((inc) => ({ account: inc.account, day: inc.day, metrics: inc.metrics })),
    });
  }
  const result: ObjectResult = {
    object: ref,
    status: 'counted',
    lines: count.lines,
    increments: usage.length,
    applied: tallyOf('applied'),
    duplicates: tallyOf('duplicate'),
    resumed: tallyOf('resumed'),
    unresolved: unresolved.length,
    accounts: [...new Set(usage.map((row) => row.account))],
    malformedSamples: count.malformedSamples,
    ...(count.readAsLines === undefined ? {} : { readAsLines: count.readAsLines }),
  };
  await store.writeLedger({
    object: ref,
    lines: count.lines,
    increments: result.increments,
    applied: result.applied,
    duplicates: result.duplicates + result.resumed,
    ...(result.resumed > 0 ? { resumed: result.resumed } : {}),
    ...(unresolved.length > 0 ? { unresolved } : {}),
    processedAt: clock().toISOString(),
    contributions: usage.map(contributionOf),
    format: count.format,
    ...(count.unattributedSamples === undefined ? {} : { unattributedSamples: count.unattributedSamples }),
  });
  return result;
}

/**
 * Records the contributions of an object counted before they were kept (a redelivery,
 * or `tally backfill` over its days): the object is read and counted again, nothing is
 * applied, and the ledger gains its rows. False when the object is gone from the bucket.
 */
async function fillContributions(done: LedgerEntry, deps: IngestDeps): Promise<boolean> {
  let opened;
  try {
    opened = await deps.source.open(done.object);
  } catch (error) {
    if (!(error instanceof PoisonObjectError)) throw error;
    deps.log.warn('counted before contributions were recorded, and no longer readable: explain cannot list it', { object: describeObject(done.object), error: describeError(error) });
    return false;
  }
  const count = await countObject(opened.content, deps.settings, done.object.key, describeObject(done.object));
  const contributions = count.tally.usage().map(contributionOf);
  await deps.store.recordContributions({ ...done, contributions, format: count.format });
  return true;
}

/**
 * What an object contributed to one account-day (see contributions.ts), with its sums by
 * UTC hour when they account for all of it: a row whose lines were partly counted
 * without a time (a log with no time field) says nothing of its hours, so explain and
 * `tally backfill --hours` treat it as counted before hours (and read the object again).
 */
function contributionOf({ account, day, metrics, hours }: AccountDayUsage): Contribution {
  return { account, day, metrics, ...(hoursCoverDay(metrics, hours) ? { hours } : {}) };
}

/** The shard count of each of `days`, as the table records it (or the settings say, without a record keeper). */
async function recordedShards(days: readonly string[], deps: IngestDeps): Promise<Map<string, number>> {
  const unique = [...new Set(days)];
  const counts = await Promise.all(unique.map((day) => deps.shardCounts?.shardsOn(day) ?? Promise.resolve(shardsOn(deps.settings.keyScheme, day))));
  return new Map(unique.map((day, i) => [day, counts[i]!]));
}

type ApplyResult = IncrementOutcome | 'resumed' | 'not-started';

/** Clocks of consumers may differ a little, and histories count in whole minutes. */
const CLOCK_MARGIN_MS = 300_000;

/**
 * The earliest any attempt at this object can have begun, in epoch milliseconds, from
 * facts nothing later can move: the attempt records (every attempt writes one, with its
 * start on the clock that dates its keys, before its first increment), the object's own
 * `LastModified` (no attempt predates the object; it bounds attempts of versions that
 * recorded only some of theirs) and the moment this attempt began, before it read the
 * records (`begun`, on this consumer's clock). The last two bound a twin that the records
 * cannot show yet: one that read the ledger before this one and records after (a
 * duplicate S3 notification on another consumer). S3's clock alone would not do when the
 * consumers' clocks run behind it by more than the margin: the twin's keys would be dated
 * before the bound, and a proof by age would take a rolled-out key for one never applied
 * (a test drives exactly that). Never a message's event time: Tally sends some itself
 * (backfill), and a copy of the object onto itself announces a later one. A record of an
 * earlier version without a bound, or neither records nor `LastModified`: the epoch (every
 * proof then rests on tombstones).
 */
export function earliestAttempt(attempts: readonly AttemptRecord[], lastModified: Date | undefined, begun?: Date): number {
  const bounds = [
    ...attempts.flatMap((a) => [Date.parse(a.startedAt), a.since === undefined ? 0 : Date.parse(a.since)]),
    ...(lastModified === undefined ? [] : [lastModified.getTime()]),
  ].filter(Number.isFinite);
  // This attempt's own start bounds only twins: with nothing else known, an earlier one may have gone unrecorded.
  if (bounds.length === 0) return 0;
  return Math.max(0, Math.min(...bounds, ...(begun === undefined ? [] : [begun.getTime()])));
}

/**
 * Writes a late marker for every (day, account) of `increments` whose day is closed or
 * about to be, before any of them is applied: a marker without its increment (the
 * attempt died) changes nothing, an increment without its marker cannot happen.
 */
async function markLateUsage(increments: readonly Increment[], deps: IngestDeps, now: Date): Promise<void> {
  const late = deps.late;
  if (late === undefined) return;
  const entries = new Map<string, { day: string; account: string }>();
  for (const increment of increments) {
    if (marksLateUsage(increment.day, now, late.graceHours)) entries.set(`${increment.day}#${increment.account}`, { day: increment.day, account: increment.account });
  }
  if (entries.size > 0) await late.marks.mark([...entries.values()], now);
}

/**
 * Applies `increments` with bounded concurrency, skipping the keys an earlier attempt
 * recorded. On the first failure, or when time runs out, no further increment starts;
 * the ones in flight settle, so every outcome is known when this returns.
 */
async function applyAll(
  increments: readonly Increment[],
  recorded: ReadonlySet<string>,
  deps: IngestDeps,
  attempt: AttemptContext,
  apply: ApplyOptions,
): Promise<{ results: ApplyResult[]; failure?: Error }> {
  const results: ApplyResult[] = increments.map(() => 'not-started');
  let failure: Error | undefined;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < increments.length) {
      if (attempt.outOfTime?.() === true) {
        failure ??= new OutOfTimeError(`out of Lambda time after ${next} of ${increments.length} increments; the rest are applied on retry`);
        return;
      }
      const index = next++;
      const increment = increments[index]!;
      if (recorded.has(keyHex(increment.key))) {
        results[index] = 'resumed';
        continue;
      }
      try {
        results[index] = await deps.store.applyIncrement(increment, apply);
      } catch (error) {
        failure ??= error instanceof Error ? error : new Error(String(error));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(deps.settings.incrementConcurrency, increments.length)) }, worker));
  return failure === undefined ? { results } : { results, failure };
}

/** Processes one SQS message; throws when it must come back (or go to the DLQ). */
export async function ingestMessage(
  record: SQSRecord,
  deps: IngestDeps,
  context?: Pick<Context, 'getRemainingTimeInMillis'>,
): Promise<MessageResult> {
  const notification = parseNotification(record.body, record.messageId);
  if (notification.kind === 'skip') {
    deps.log.info('notification skipped', { messageId: record.messageId, reason: notification.reason });
    return { messageId: record.messageId, outcome: 'skipped', objects: [] };
  }
  const stopHeartbeat = startHeartbeat(record, deps);
  try {
    const objects: ObjectResult[] = [];
    const receiveCount = Number(record.attributes?.ApproximateReceiveCount ?? 1);
    const outOfTime = context === undefined ? undefined : () => context.getRemainingTimeInMillis() < deps.settings.minRemainingMillis;
    for (const object of notification.objects) {
      const result = await ingestObject(object, deps, {
        receiveCount,
        ...(outOfTime === undefined ? {} : { outOfTime }),
      });
      objects.push(result);
      deps.log.info(result.status === 'already-done' ? 'object already counted' : 'object counted', {
        messageId: record.messageId,
        receiveCount: Number(record.attributes?.ApproximateReceiveCount ?? 1),
        object: describeObject(result.object),
        etag: result.object.etag,
        lines: result.lines,
        increments: result.increments,
        applied: result.applied,
        duplicates: result.duplicates,
        ...(result.resumed > 0 ? { resumed: result.resumed } : {}),
        ...(result.unresolved > 0 ? { unresolved: result.unresolved } : {}),
        ...(result.malformedSamples.length > 0 ? { malformedSamples: result.malformedSamples } : {}),
        ...(result.readAsLines === undefined ? {} : { readAsLines: result.readAsLines }),
      });
    }
    return { messageId: record.messageId, outcome: 'processed', objects };
  } finally {
    stopHeartbeat();
  }
}

function startHeartbeat(record: SQSRecord, deps: IngestDeps): () => void {
  const { visibility, settings } = deps;
  if (visibility === undefined || settings.heartbeatSeconds <= 0 || !record.receiptHandle) return () => undefined;
  const timer = setInterval(() => {
    visibility
      .extend({ receiptHandle: record.receiptHandle, eventSourceARN: record.eventSourceARN }, settings.visibilityTimeoutSeconds)
      .catch((error: unknown) =>
        deps.log.warn('could not extend message visibility', { messageId: record.messageId, error: describeError(error) }),
      );
  }, settings.heartbeatSeconds * 1000);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * The ingest Lambda's work: every message is processed on its own; the ones that fail
 * are reported in `batchItemFailures` so that only they come back (and, after
 * `maxReceiveCount`, reach the DLQ). A poison message never blocks the others.
 */
export async function ingestBatch(
  event: SQSEvent,
  deps: IngestDeps,
  context?: Pick<Context, 'getRemainingTimeInMillis'>,
): Promise<SQSBatchResponse & { results: MessageResult[] }> {
  const results = await mapWithConcurrency(event.Records, deps.settings.messageConcurrency, async (record) => {
    if (context !== undefined && context.getRemainingTimeInMillis() < deps.settings.minRemainingMillis) {
      deps.log.warn('not enough time left; message returned to the queue', { messageId: record.messageId });
      return { messageId: record.messageId, outcome: 'failed' as const, objects: [], error: new Error('out of time') };
    }
    try {
      return await ingestMessage(record, deps, context);
    } catch (error) {
      const failure = error instanceof Error ? error : new Error(String(error));
      deps.log.error('message failed', {
        messageId: record.messageId,
        receiveCount: Number(record.attributes?.ApproximateReceiveCount ?? 1),
        poison: failure instanceof PoisonMessageError || failure instanceof PoisonObjectError,
        error: describeError(failure),
      });
      return { messageId: record.messageId, outcome: 'failed' as const, objects: [], error: failure };
    }
  });
  return {
    batchItemFailures: results
      .filter((result) => result.outcome === 'failed')
      .map((result) => ({ itemIdentifier: result.messageId })),
    results,
  };
}
