import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { ResolverSpec } from '../domain/account-resolver';
import { describeError, PoisonMessageError, PoisonObjectError } from '../domain/errors';
import { incrementKey, type KeyScheme } from '../domain/idempotency-key';
import { countLogStream } from '../domain/log-counter';
import { describeObject, type LogObjectRef } from '../domain/log-object';
import type { MetricRule } from '../domain/metric-rules';
import { parseNotification } from '../domain/notifications';
import type { IncrementOutcome, UsageStore } from '../domain/usage-store';
import type { LineCounts, MalformedSample } from '../domain/usage-tally';
import type { Log } from './log';
import type { LogSource, MessageVisibility } from './ports';
import { mapWithConcurrency } from './concurrency';

export interface IngestSettings {
  readonly resolver: ResolverSpec;
  readonly metricRules: readonly MetricRule[];
  readonly keyScheme: KeyScheme;
  readonly maxLineBytes?: number;
  /** Messages of one batch worked on at once. */
  readonly messageConcurrency: number;
  /** Increments of one object in flight at once. */
  readonly incrementConcurrency: number;
  /** Visibility timeout to re-arm while a message is in progress, and how often. */
  readonly visibilityTimeoutSeconds: number;
  readonly heartbeatSeconds: number;
  /** A message is not started when less Lambda time than this remains; it comes back later. */
  readonly minRemainingMillis: number;
}

export interface IngestDeps {
  readonly store: UsageStore;
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
  /** Accounts (including `unattributed`) the object had usage for; empty when already done. */
  readonly accounts: readonly string[];
  readonly malformedSamples: readonly MalformedSample[];
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
 * (account, day) -> ledger write. A crash anywhere before the ledger write leaves the
 * object to be redone; the increments already applied come back as duplicates.
 */
export async function ingestObject(notified: LogObjectRef, deps: IngestDeps): Promise<ObjectResult> {
  const { store, source, settings } = deps;
  const clock = deps.clock ?? (() => new Date());
  const etag = notified.etag !== '' ? notified.etag : await source.etagOf(notified);
  const ref: LogObjectRef = { ...notified, etag };

  const done = await store.findLedger(ref);
  if (done !== undefined) {
    return { object: ref, status: 'already-done', lines: done.lines, increments: done.increments, applied: 0, duplicates: 0, accounts: [], malformedSamples: [] };
  }

  const opened = await source.open(ref);
  const count = await countLogStream(
    opened.body,
    {
      resolver: settings.resolver,
      metricRules: settings.metricRules,
      objectKey: ref.key,
      ...(settings.maxLineBytes === undefined ? {} : { maxLineBytes: settings.maxLineBytes }),
    },
    describeObject(ref),
  );

  const usage = count.tally.usage();
  const outcomes = await mapWithConcurrency(usage, settings.incrementConcurrency, (row): Promise<IncrementOutcome> => {
    const { key, shard } = incrementKey(ref, row.account, row.day, settings.keyScheme);
    return store.applyIncrement({ account: row.account, day: row.day, shard, key, metrics: row.metrics });
  });
  const applied = outcomes.filter((outcome) => outcome === 'applied').length;
  const result: ObjectResult = {
    object: ref,
    status: 'counted',
    lines: count.lines,
    increments: usage.length,
    applied,
    duplicates: usage.length - applied,
    accounts: [...new Set(usage.map((row) => row.account))],
    malformedSamples: count.malformedSamples,
  };
  await store.writeLedger({
    object: ref,
    lines: count.lines,
    increments: result.increments,
    applied,
    duplicates: result.duplicates,
    processedAt: clock().toISOString(),
  });
  return result;
}

/** Processes one SQS message; throws when it must come back (or go to the DLQ). */
export async function ingestMessage(record: SQSRecord, deps: IngestDeps): Promise<MessageResult> {
  const notification = parseNotification(record.body, record.messageId);
  if (notification.kind === 'skip') {
    deps.log.info('notification skipped', { messageId: record.messageId, reason: notification.reason });
    return { messageId: record.messageId, outcome: 'skipped', objects: [] };
  }
  const stopHeartbeat = startHeartbeat(record, deps);
  try {
    const objects: ObjectResult[] = [];
    for (const object of notification.objects) {
      const result = await ingestObject(object, deps);
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
        ...(result.malformedSamples.length > 0 ? { malformedSamples: result.malformedSamples } : {}),
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
      return await ingestMessage(record, deps);
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
