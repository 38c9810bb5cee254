/**
 * Every port of Tally in one place: what the application needs from the outside world,
 * as interfaces. Adapters in `src/adapters` implement them against AWS (DynamoDB, S3,
 * SQS, JWT); tests implement them in memory (`test/support`).
 *
 * | port | implemented by |
 * |---|---|
 * | {@link UsageStore} (counters, ledger), {@link UnresolvedLedger} | `DynamoUsageStore`; `MemoryUsageStore` in tests |
 * | {@link UsageReader} (read side) | `DynamoUsageReader` |
 * | {@link UsagePresence} | `DynamoUsageReader` |
 * | {@link AdjustmentStore} | `DynamoAdjustmentStore` |
 * | {@link LogSource}, {@link LogListing} | `S3LogSource`, `S3LogListing` |
 * | {@link NotificationSender}, {@link ReplayQueues}, {@link MessageVisibility} | `SqsNotificationSender`, `SqsReplayQueues`, `SqsMessageVisibility` |
 * | {@link DropRecords} | `DynamoDropRecords` |
 * | {@link LogSink} | `S3LogSink` |
 * | {@link TokenVerifier} | `JoseTokenVerifier` |
 * | {@link CloseStore}, {@link LateUsageMarks} | `DynamoCloseStore`, `DynamoLateUsageMarks` |
 * | {@link RevisionExports} | `S3RevisionExports` |
 * | {@link WebhookOutbox}, {@link WebhookTransport} | `SqsWebhookOutbox`, `FetchWebhookTransport` |
 * | {@link QuotaStore}, {@link ThresholdStore}, {@link MonthRechecks} | `DynamoQuotaStore`, `DynamoThresholdStore`, `DynamoMonthRechecks` |
 * | {@link ActiveAccounts} | `DynamoCloseStore` (the day index) |
 * | {@link StripeStore}, {@link StripeMeterApi}, {@link StripeSendQueue} | `DynamoStripeStore`, `SdkStripeMeterApi`, `SqsStripeSendQueue` |
 * | {@link SourceReader}, {@link LedgerActivityReader}, {@link DayLedger} | `DynamoSourceReader` (the source-day index of the ledger) |
 * | {@link BackfilledHoursStore} | `DynamoBackfilledHours` |
 * | {@link ReconcileRecords} | `DynamoReconcileRecords` |
 * | {@link DeadLetterProbe} | `SqsDeadLetterProbe` |
 */
import type { StripeLink, StripeOutboxRecord } from '../domain/billing/stripe';
import type { AccessGrant } from '../domain/reading/access';
import type { Adjustment, RecordedAdjustment } from '../domain/counters/adjustment';
import type { DeadLetterDrop } from '../domain/counters/dead-letter';
import type { Contribution } from '../domain/counters/contributions';
import type { ExplainedSource } from '../domain/reading/explanation';
import type { BackfilledHours } from '../domain/counters/hours-backfill';
import type { LedgerActivity, ReconcileRecord } from '../domain/reading/health';
import type { ClosedDay, MetricFigures, RevisionRow } from '../domain/billing/day-close';
import type { RevisionExport } from '../domain/billing/revision-export';
import type { LogObjectRef } from '../domain/counters/log-object';
import type { LogContent } from '../domain/logs/log-records';
import type { Quota, QuotaChange, RecordedCrossing, ThresholdCrossing } from '../domain/billing/quota';
import type { UsageRecord } from '../domain/reading/usage-records';

// The counter store's port still lives beside the idempotency core it describes; it is
// named here so that one look finds every port.
export type {
  ApplyOptions,
  AttemptRecord,
  Increment,
  IncrementOutcome,
  LedgerEntry,
  ObjectState,
  UnresolvedObject,
  UsageStore,
} from '../domain/counters/usage-store';
import type { Increment, UnresolvedObject } from '../domain/counters/usage-store';

/**
 * The objects whose ledger lists unresolved increments (`tally reconcile --resolve`
 * settles them), on DynamoDB by `DynamoUsageStore`.
 */
export interface UnresolvedLedger {
  listUnresolved(): Promise<UnresolvedObject[]>;
  /** Records how each of the object's unresolved increments was settled; it leaves the list. */
  settleUnresolved(ref: LogObjectRef, settled: readonly { increment: Increment; outcome: 'applied' | 'already-counted' }[]): Promise<void>;
}

/** Reads log objects (S3 in production and locally). */
export interface LogSource {
  /**
   * The object's content, its format told by its first bytes: text (streamed, gunzipped
   * when stored as gzip) or records (Parquet, read by ranges of the version first seen).
   * Throws PoisonObjectError when it no longer exists (and, while read, when it cannot be
   * gunzipped or decoded); ObjectChangedError when it was overwritten while read by ranges.
   * `lastModified`: when S3 last wrote the version read (GetObject's `Last-Modified`), a
   * lower bound of every attempt at it.
   */
  open(ref: LogObjectRef): Promise<{ etag: string; content: LogContent; lastModified?: Date }>;
  /** The current ETag of an object, for notifications that carry none. */
  etagOf(ref: Pick<LogObjectRef, 'bucket' | 'key'>): Promise<string>;
}

/** Lists the objects of a bucket under a prefix (S3 ListObjectsV2). */
export interface LogListing {
  list(bucket: string, prefix: string): AsyncIterable<LogObjectRef>;
}

/** Writes log objects (S3 PutObject, or a multipart upload); `tally put` feeds the local stack with it. */
export interface LogSink {
  /** Puts `body` under `key`, part by part when it has more than one; answers the object's ETag (without quotes). */
  put(bucket: string, key: string, body: LogBody): Promise<{ etag: string }>;
}

/** What {@link LogSink} puts: the content in parts, read one at a time, so that a file of any size is never held whole. */
export interface LogBody {
  /** Bytes in all. */
  readonly size: number;
  /**
   * The content in parts of `PUT_PART_BYTES` (the last one shorter; one part when the
   * whole is no longer). Fails, after its last part and before it ends, when the content
   * is not what was counted and named (a file changed since): the object must then not be
   * made.
   */
  parts(): AsyncIterable<Uint8Array>;
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

/** How the delete of a dropped message ended. */
export type DropOutcome = { readonly state: 'dropped'; readonly droppedAt: string } | { readonly state: 'not-deleted'; readonly error: string };

/**
 * The record of every dead-lettered message an operator dropped (`tally dlq drop`):
 * written before the message is deleted, so no drop goes unrecorded.
 */
export interface DropRecords {
  /**
   * Records a drop about to happen (state `dropping`). `already-dropped` when a record
   * says the message was dropped before (a copy SQS delivered twice): that record stays.
   */
  begin(drop: DeadLetterDrop): Promise<'recorded' | 'already-dropped'>;
  /** Says how the delete ended. */
  finish(messageId: string, outcome: DropOutcome): Promise<void>;
  /** Every record, oldest first. */
  list(): Promise<DeadLetterDrop[]>;
}

/** What a read of an account's day range includes besides shards and adjustments. */
export interface ReadOptions {
  /** Also read which days are closed (a second Query; default true). Month-to-date sums need none. */
  readonly closedDays?: boolean;
}

/** Reads an account's records for a day range: one Query, paginated. */
export interface UsageReader {
  read(accountId: string, from: string, to: string, options?: ReadOptions): Promise<{ records: UsageRecord[]; requests: number }>;
}

/** Accounts' billing time zones (`tally zone`, account-zone.ts). */
export interface AccountZones {
  /** The zone stored for `accountId`, undefined when none is (or it is no longer a known zone). */
  zoneOf(accountId: string): Promise<string | undefined>;
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

/** Usage that reached a (nearly) closed day, waiting for the closer. */
export interface LateMarker {
  readonly day: string;
  readonly account: string;
  /** When ingest last marked it: the marker is cleared only if unchanged since it was read. */
  readonly markedAt: string;
}

/** Ingest's side of late usage: marks (day, account) pairs before their increments. */
export interface LateUsageMarks {
  mark(entries: readonly { readonly day: string; readonly account: string }[], at: Date): Promise<void>;
}

/** An account-day as the closer reads it: counters (every shard summed) and its recorded revisions. */
export interface AccountDayFigures {
  readonly counters: MetricFigures;
  readonly revisions: readonly { readonly revision: number; readonly metrics: MetricFigures }[];
}

/**
 * Close records, revisions and late markers. Every write is conditional, so closers
 * that overlap or rerun after a crash leave one row per account and revision.
 */
export interface CloseStore {
  /** Close records of `from..to` (strongly consistent), in day order. */
  closedDays(from: string, to: string): Promise<ClosedDay[]>;
  closedDay(day: string): Promise<ClosedDay | undefined>;
  /**
   * Starts writing revision `revision` of `day` at `at`: revision 1 creates the close
   * record (closedAt = `at`), a later one needs revision - 1 complete and nothing being
   * written. Returns the record as it then is (someone else's writing included).
   */
  beginRevision(day: string, revision: number, at: string): Promise<ClosedDay>;
  /** Marks revision `revision` complete with `accounts` rows (a no-op when it already is). */
  completeRevision(day: string, revision: number, createdAt: string, accounts: number): Promise<void>;
  /** Drops a started revision that found nothing to record. */
  abandonRevision(day: string, revision: number): Promise<void>;
  /** Records that a revision was exported or handed to the webhook queue. */
  markPublished(day: string, revision: number, step: 'exportedAt' | 'notifiedAt' | 'stripeQueuedAt', at: string): Promise<void>;
  /** Accounts with usage shards on `day` (the day index), each once, in order. */
  accountsOn(day: string): Promise<string[]>;
  /** One account-day's counters and revisions, strongly consistent (one Query). */
  accountDay(account: string, day: string): Promise<AccountDayFigures>;
  /** Records an account's row of a revision once; returns the row stored (an earlier one wins). */
  recordRevisionRow(row: { day: string; revision: number; account: string; metrics: MetricFigures; createdAt: string }): Promise<RevisionRow>;
  /** Every row of a revision (strongly consistent). */
  revisionRows(day: string, revision: number): Promise<RevisionRow[]>;
  /** Every waiting late marker. */
  lateMarkers(): Promise<LateMarker[]>;
  /** Removes a marker unless ingest marked it again since it was read; true when removed. */
  clearLateMarker(marker: LateMarker): Promise<boolean>;
}

/** Writes a revision's Parquet and CSV files (S3), the same bytes every time. */
export interface RevisionExports {
  write(table: RevisionExport): Promise<{ parquet: string; csv: string }>;
}

/** Hands a webhook event to its delivery queue (SQS). */
export interface WebhookOutbox {
  enqueue(event: { id: string; body: string }): Promise<void>;
}

/** POSTs a webhook body (HTTPS in production); resolves with the status, rejects on a network error. */
export interface WebhookTransport {
  post(url: string, body: string, headers: Readonly<Record<string, string>>): Promise<{ status: number }>;
}

/** Monthly allowances per account and metric (`tally quota set|list|remove`). */
export interface QuotaStore {
  /** Every stored quota, or one account's, by account then metric (one Query). */
  list(account?: string): Promise<Quota[]>;
  /**
   * Applies `change` from its month on (earlier months keep their allowance); answers the
   * quota after and before.
   */
  set(change: QuotaChange): Promise<{ quota: Quota; previous?: Quota }>;
  /** Removes a quota; answers the one removed, undefined when there was none. */
  remove(account: string, metric: string): Promise<Quota | undefined>;
}

/**
 * The once-only records of threshold crossings, which are also the outbox of their
 * webhook events: a record without `notifiedAt` is an event still to be queued.
 */
export interface ThresholdStore {
  /** Every crossing recorded for `month` (one strongly consistent Query), or one account's. */
  crossings(month: string, account?: string): Promise<RecordedCrossing[]>;
  /**
   * Writes the crossing unless one exists for its (account, metric, month, level,
   * allowance) that is not withdrawn:
   * `recorded` when this call wrote it (and holds the lease to send its event from
   * `leaseAt`; none when absent, as a run without a webhook queue sends nothing), `exists`
   * when it was there already.
   */
  record(crossing: ThresholdCrossing, leaseAt: string | undefined): Promise<'recorded' | 'exists'>;
  /** Takes the lease to send a pending crossing's event: true when not yet sent and the lease is free or older than `staleBefore`. */
  claim(crossing: ThresholdCrossing, at: string, staleBefore: string): Promise<boolean>;
  /**
   * Marks a pending crossing withdrawn, never to be sent (its allowance is no longer in
   * force): true when not yet sent nor withdrawn and the lease is free or older than `staleBefore`.
   */
  withdraw(crossing: ThresholdCrossing, at: string, staleBefore: string): Promise<boolean>;
  /** Records that the event was handed to the webhook queue. */
  markNotified(crossing: ThresholdCrossing, at: string): Promise<void>;
}

/** A month whose usage changed after the evaluator may have stopped looking at it. */
export interface RecheckMarker {
  readonly month: string;
  readonly markedAt: string;
}

/**
 * Months to evaluate again (`THRESHOLD#RECHECK`): written on the rare paths that change
 * a past month (a revision of a closed day, an adjustment), never on the ingest path.
 */
export interface MonthRechecks {
  /** Marks `month` to be evaluated again (one PutItem; a later mark replaces an earlier one). */
  mark(month: string, at: string): Promise<void>;
  /** Every marked month (one strongly consistent Query). */
  marked(): Promise<RecheckMarker[]>;
  /** Removes the marker unless it was marked again since it was read; true when removed. */
  clear(marker: RecheckMarker): Promise<boolean>;
}

/** The accounts with usage on a day (the day index). */
export interface ActiveAccounts {
  accountsOn(day: string): Promise<string[]>;
}

/** Links, outbox records and per-customer-meter leases of the Stripe sync (usage table). */
export interface StripeStore {
  /**
   * Records Stripe's meter error reports, each once (by event id); answers those not recorded
   * before. Reads the recorded ones created since the oldest given (one Query), then one
   * conditional put per new report.
   */
  recordMeterErrors?(reports: readonly StripeMeterErrorReport[]): Promise<StripeMeterErrorReport[]>;
  /** The `created` of the newest meter error report read so far (recordMeterErrors moves it forward); undefined before the first. */
  meterErrorCursor?(): Promise<string | undefined>;
  /** Links `account` to `customer` (replacing an earlier link); answers the link before, if any. */
  link(link: StripeLink): Promise<StripeLink | undefined>;
  /** Removes the link; answers the link removed. */
  unlink(account: string): Promise<StripeLink | undefined>;
  /** Every link, by account (one Query). */
  links(): Promise<StripeLink[]>;
  /** `account`'s link, if any (one consistent read). */
  linkOf(account: string): Promise<StripeLink | undefined>;
  /** `account`'s outbox records of `from..to`, by day, metric and revision (strongly consistent). */
  records(account: string, from: string, to: string): Promise<StripeOutboxRecord[]>;
  /** Writes a new record unless one exists for its (account, metric, day, revision): true when written. */
  addRecord(record: StripeOutboxRecord): Promise<boolean>;
  /** Changes a record's state and bookkeeping. */
  updateRecord(record: StripeOutboxRecord, changes: Partial<Pick<StripeOutboxRecord, 'state' | 'attempts' | 'sentAt' | 'firstSentAt' | 'deliveredAt' | 'error' | 'notifiedAt' | 'customer' | 'invoice' | 'billed' | 'item'>>): Promise<void>;
  /** Takes the lease `lease` of `customer` (stripeLeaseName: one per metric) for `owner` until `until`, if free or expired at `now`: true when held. */
  acquireLease(customer: string, lease: string, owner: string, now: Date, until: Date): Promise<boolean>;
  releaseLease(customer: string, lease: string, owner: string): Promise<void>;
}

/** What Stripe answered to one meter event. */
export type MeterEventOutcome =
  | { readonly kind: 'accepted' }
  /** 400 "An event already exists with identifier ...": delivered earlier (a lost answer). */
  | { readonly kind: 'already-exists' }
  /** 429, 5xx or no answer: try again with the same identifier. */
  | { readonly kind: 'retry'; readonly error: string }
  /** Any other 4xx: will not succeed as it is. */
  | { readonly kind: 'refused'; readonly error: string };

/** A Stripe meter as `tally stripe check` and reconcile read it. */
export interface StripeMeterInfo {
  readonly id: string;
  readonly eventName: string;
  readonly status: string;
  readonly eventTimeWindow: string | null;
  readonly formula: string;
  readonly customerKey: string;
  readonly valueKey: string;
}

/** A metered item of a customer's subscription: its price, the price's meter and the current period. */
export interface StripeSubscriptionItemInfo {
  readonly subscription: string;
  readonly priceId: string;
  /** The meter of a metered price (`price.recurring.meter`); null for a licensed price. */
  readonly meterId: string | null;
  readonly billingScheme: string;
  /** `graduated` or `volume` for a tiered price, else null. */
  readonly tiersMode?: string | null;
  /** A package price's `transform_quantity.divide_by`, else null. */
  readonly packageSize?: number | null;
  /** Cents per unit (Stripe's decimal string), null when the price has none. */
  readonly unitAmountDecimal?: string | null;
  readonly currency?: string;
  /** Unix seconds. */
  readonly currentPeriodStart: number;
  readonly currentPeriodEnd: number;
}

/** An invoice of a customer as Tally reads it: its period, its state and its metered lines. */
export interface StripeInvoiceInfo {
  readonly id: string;
  /** Unix seconds; a subscription invoice bills usage of [periodStart, periodEnd). */
  readonly periodStart: number;
  readonly periodEnd: number;
  readonly status: string;
  /** When it was finalized (unix seconds); null while a draft. */
  readonly finalizedAt: number | null;
  /** Every line (not only the handful an invoice embeds); an invoice item's line names the item. */
  readonly lines: readonly { readonly priceId: string | null; readonly quantity: number; readonly invoiceItem?: string | null }[];
}

/** An invoice item of a customer as reconcile reads it (`GET /v1/invoiceitems`). */
export interface StripeInvoiceItemInfo {
  readonly id: string;
  /** `metadata[tally_id]`: the late record's item it bills; null for an item Tally did not create. */
  readonly tallyId: string | null;
  /** The invoice it went on; null while pending. */
  readonly invoice: string | null;
  /** Its quantity, negative for a credit (a negative unit amount). */
  readonly units: number;
}

/** Stripe Billing's meter API (the official SDK). */
export interface StripeMeterApi {
  sendMeterEvent(event: { eventName: string; customer: string; value: string; identifier: string; timestamp: number }): Promise<MeterEventOutcome>;
  meters(): Promise<StripeMeterInfo[]>;
  /** The meter's billed value for `customer` per UTC day of `from..to` (days without events are absent). */
  daySummaries(meterId: string, customer: string, from: string, to: string): Promise<Record<string, number>>;
  /** The meter's billed value for `customer` over [start, end) (unix seconds, whole minutes), without grouping; hour windows' reconcile. */
  summaryOver?(meterId: string, customer: string, start: number, end: number): Promise<number>;
  /** The customer's subscription items (`GET /v1/subscriptions?customer=`); absent: the invoice is not known. */
  subscriptionItems?(customer: string): Promise<StripeSubscriptionItemInfo[]>;
  /** The customer's invoices, newest first (`GET /v1/invoices?customer=`, the first 100). */
  invoices?(customer: string): Promise<StripeInvoiceInfo[]>;
  /**
   * Stripe's meter error reports, newest first (`GET /v2/core/events`): those created at or after
   * `since` (RFC 3339), else of the last 30 days. Absent: not read.
   */
  meterErrorReports?(since?: string): Promise<StripeMeterErrorReport[]>;
  /**
   * `POST /v1/invoiceitems` with `Idempotency-Key: <tallyId>` and `metadata[tally_id]`: an item on
   * the subscription's next invoice. Absent: late usage is reported, never billed.
   */
  createInvoiceItem?(item: InvoiceItemRequest): Promise<InvoiceItemOutcome>;
  /** The customer's invoice items created at or after `since` (unix seconds); absent: not read (reconcile counts none). */
  invoiceItems?(customer: string, since: number): Promise<StripeInvoiceItemInfo[]>;
  /** The id of the customer's invoice item whose `metadata[tally_id]` is `tallyId`, created at or after `since` (unix seconds), if any. */
  findInvoiceItem?(customer: string, tallyId: string, since: number): Promise<string | undefined>;
}

/** One late difference as an invoice item (see `invoiceItemFor` in domain/stripe.ts). */
export interface InvoiceItemRequest {
  readonly customer: string;
  readonly subscription: string;
  readonly currency: string;
  readonly unitAmountDecimal: string;
  readonly quantity: number;
  readonly description: string;
  /** Unix seconds, both inclusive (Stripe's `period`). */
  readonly period: { readonly start: number; readonly end: number };
  /** `metadata[tally_id]` and the Idempotency-Key. */
  readonly tallyId: string;
}

/** What Stripe answered to an invoice item. */
export type InvoiceItemOutcome =
  | { readonly kind: 'created'; readonly id: string }
  /** 409 (the same key in flight), 429, 5xx or no answer: try again with the same key. */
  | { readonly kind: 'retry'; readonly error: string }
  | { readonly kind: 'refused'; readonly error: string };

/**
 * One of Stripe's meter error reports: meter events it accepted (200) and then dropped, summed
 * over a validation window (thin events `v1.billing.meter.error_report_triggered` and
 * `v1.billing.meter.no_meter_found`, https://docs.stripe.com/api/v2/core/events/event-types).
 */
export interface StripeMeterErrorReport {
  readonly id: string;
  readonly type: string;
  /** RFC 3339, as Stripe's v2 API gives it. */
  readonly created: string;
  /** The meter's id; null for no_meter_found. */
  readonly meter: string | null;
  readonly summary: string;
  /** Per error code (`meter_event_customer_not_found`, `meter_event_invalid_value`, `timestamp_too_far_in_past`, ...): how many, and Stripe's samples. */
  readonly errors: readonly { readonly code: string; readonly count: number; readonly samples: readonly { readonly identifier: string; readonly message: string }[] }[];
}

/** Hands the sender what to send: a revision of a day, or an account's pending records. */
export interface StripeSendQueue {
  enqueue(message: StripeSendMessage): Promise<void>;
  /** Many messages in few calls (the running sweep); throws if any could not be queued. */
  enqueueAll(messages: readonly StripeSendMessage[]): Promise<void>;
}

/** A message of the Stripe send queue. */
export type StripeSendMessage =
  | { readonly day: string; readonly revision: number }
  /** An account's closed days planned again (a link, an adjustment), then its pending records sent; with `sendOnly`, only sent (the closer's hand-off). */
  | { readonly account: string; readonly sendOnly?: true }
  /** The running sweep: the account's open days' running totals that changed, then its pending records. */
  | { readonly account: string; readonly running: true };

/** The log objects that contributed to an account-day, each with its whole contribution (explain). */
export interface SourceReader {
  sourcesOf(accountId: string, day: string): Promise<{ sources: ExplainedSource[]; requests: number }>;
}

/** A log object the ledger indexes under a day, with its contributions to that day. */
export interface LedgerObjectOfDay {
  readonly object: LogObjectRef;
  /** Its rows of the day (one per account; only the asked account's when one was named). */
  readonly contributions: readonly Contribution[];
  /** Accounts whose increments of the day it left unresolved. */
  readonly unresolved: readonly string[];
}

/** The log objects that contributed to a day, from the ledger's source-day index: what `tally backfill --hours` recounts. */
export interface DayLedger {
  objectsOn(day: string, accountId?: string): Promise<LedgerObjectOfDay[]>;
}

/** The hours `tally backfill --hours` recomputed, one item per account-day (`DAY#<day>#H#00`). */
export interface BackfilledHoursStore {
  read(accountId: string, day: string): Promise<BackfilledHours | undefined>;
  /**
   * Writes the item whole (a put, never an addition); `superseded` when the item holds
   * hours recomputed from more objects (a later run's), which are kept.
   */
  write(accountId: string, day: string, item: BackfilledHours): Promise<'written' | 'superseded'>;
}

/** The ledger entries indexed under a day (every account): what health reads of recent ingestion. */
export interface LedgerActivityReader {
  entriesOn(day: string): Promise<LedgerActivity[]>;
}

/** The last `tally reconcile` over a day range (one item, rewritten by each run). */
export interface ReconcileRecords {
  record(result: ReconcileRecord): Promise<void>;
  last(): Promise<ReconcileRecord | undefined>;
}

/** The dead-letter queue's depth and the age of its oldest message. */
export interface DeadLetterProbe {
  probe(now: Date): Promise<{ depth: number; oldestAgeSeconds: number | null }>;
}
