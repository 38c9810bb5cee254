/**
 * Every port of Tally in one place: what the application needs from the outside world,
 * as interfaces. Adapters in `src/adapters` implement them against AWS (DynamoDB, S3,
 * SQS, JWT); tests implement them in memory (`test/support`).
 *
 * | port | implemented by |
 * |---|---|
 * | {@link UsageStore} (counters, ledger) | `DynamoUsageStore`; `MemoryUsageStore` in tests |
 * | {@link UsageReader} (read side) | `DynamoUsageReader` |
 * | {@link UsagePresence} | `DynamoUsageReader` |
 * | {@link AdjustmentStore} | `DynamoAdjustmentStore` |
 * | {@link LogSource}, {@link LogListing} | `S3LogSource`, `S3LogListing` |
 * | {@link NotificationSender}, {@link ReplayQueues}, {@link MessageVisibility} | `SqsNotificationSender`, `SqsReplayQueues`, `SqsMessageVisibility` |
 * | {@link TokenVerifier} | `JoseTokenVerifier` |
 */
import type { AccessGrant } from '../domain/access';
import type { Adjustment, RecordedAdjustment } from '../domain/adjustment';
import type { LogObjectRef } from '../domain/log-object';
import type { UsageRecord } from '../domain/usage-records';

// The counter store's port still lives beside the idempotency core it describes; it is
// named here so that one look finds every port.
export type {
  ApplyOptions,
  AttemptRecord,
  Increment,
  IncrementOutcome,
  LedgerEntry,
  ObjectState,
  UsageStore,
} from '../domain/usage-store';

/** Reads log objects (S3 in production and locally). */
export interface LogSource {
  /**
   * Streams the object's log text, gunzipped when it is stored as gzip; throws
   * PoisonObjectError when it no longer exists (and, while streaming, when it cannot be gunzipped).
   */
  open(ref: LogObjectRef): Promise<{ etag: string; body: AsyncIterable<Uint8Array> }>;
  /** The current ETag of an object, for notifications that carry none. */
  etagOf(ref: Pick<LogObjectRef, 'bucket' | 'key'>): Promise<string>;
}

/** Lists the objects of a bucket under a prefix (S3 ListObjectsV2). */
export interface LogListing {
  list(bucket: string, prefix: string): AsyncIterable<LogObjectRef>;
}

/** Puts S3 notifications for objects on the ingest queue (at most 10 per call). */
export interface NotificationSender {
  send(objects: readonly LogObjectRef[]): Promise<void>;
}

/** Keeps an in-flight SQS message hidden while it is being worked on. */
export interface MessageVisibility {
  extend(message: { receiptHandle: string; eventSourceARN?: string }, seconds: number): Promise<void>;
}

/** A message received from the dead-letter queue. */
export interface DeadLetter {
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly body: string;
  /** SQS system attributes (`ApproximateReceiveCount`, `SentTimestamp`, ...). */
  readonly attributes: Readonly<Record<string, string>>;
  /** Message attributes, carried over when the message is re-sent. */
  readonly messageAttributes?: Readonly<Record<string, unknown>>;
}

/** The two queues of a replay (SQS in production and locally). */
export interface ReplayQueues {
  /** Messages waiting in the DLQ (approximate). */
  depth(): Promise<number>;
  /** Up to `max` (at most 10) messages, hidden from other receivers for `visibilityTimeoutSeconds`. */
  receive(max: number, visibilityTimeoutSeconds: number): Promise<DeadLetter[]>;
  /** Sends copies to the ingest queue; says which were accepted. */
  resend(messages: readonly DeadLetter[]): Promise<{ sent: string[]; failed: { messageId: string; error: string }[] }>;
  delete(messages: readonly DeadLetter[]): Promise<{ failed: { messageId: string; error: string }[] }>;
  /** Makes messages visible again at once (they stay in the DLQ). */
  release(messages: readonly DeadLetter[]): Promise<void>;
  /** The DLQ's ARN, for the records of messages processed inline. */
  arn(): Promise<string | undefined>;
}

/** Reads an account's records for a day range: one Query, paginated. */
export interface UsageReader {
  read(accountId: string, from: string, to: string): Promise<{ records: UsageRecord[]; requests: number }>;
}

/** Says whether an account was ever measured: guards corrections against a mistyped account. */
export interface UsagePresence {
  /** True when any day of the account holds measured usage (adjustments do not count). */
  hasMeasuredUsage(accountId: string): Promise<boolean>;
}

/** What recording an adjustment did. */
export type RecordOutcome =
  /** Written now. */
  | { readonly outcome: 'recorded'; readonly adjustment: RecordedAdjustment }
  /** The same id with the same content was recorded before; nothing changed. */
  | { readonly outcome: 'already-recorded'; readonly adjustment: RecordedAdjustment };

/**
 * Operator corrections, kept apart from measured counters. An id is one correction per
 * account: recording it again with the same content is a no-op, with other content an
 * `AdjustmentConflictError`.
 */
export interface AdjustmentStore {
  /** Records `adjustment` once, by `actor`. */
  record(adjustment: Adjustment, actor: string): Promise<RecordOutcome>;
  /** What {@link record} would do, without writing; a conflict throws as `record` would. */
  preview(adjustment: Adjustment): Promise<'recorded' | 'already-recorded'>;
  /** The adjustment recorded under `adjustmentId` for `account`, whatever its day. */
  find(account: string, adjustmentId: string): Promise<RecordedAdjustment | undefined>;
  /** Adjustments of `account` dated `from..to` (all days when absent), by day then creation time. */
  list(account: string, from?: string, to?: string): Promise<RecordedAdjustment[]>;
}

/** Turns a bearer token into what it may read; refuses with an AuthenticationError. */
export interface TokenVerifier {
  verify(token: string): Promise<AccessGrant>;
}
