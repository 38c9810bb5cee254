import { hash } from 'fast-sha256';
import { ValidationError } from '../errors';
import { ACCOUNT_ID_RULE, isValidAccountId } from '../account-id';
import { hoursBackfillSortKey, isHourAttribute } from '../hours';
import type { LogObjectRef } from './log-object';

/**
 * The only place where table keys are spelled. Items of one account share a partition;
 * the sort key orders them by day, so one Query on a day range reads usage shards and
 * adjustments together:
 *
 * ```
 * PK ACCT#acme   SK DAY#2026-11-21#S#03        usage shard 3 of that day
 * PK ACCT#acme   SK DAY#2026-11-21#A#<id>      an adjustment on that day
 * PK ACCT#acme   SK DAY#2026-11-21#R#0001      revision 1 (the closed snapshot) of that day: its figures
 * PK ACCT#acme   SK DAY#2026-11-21#H#00        that day's hours, recomputed by tally backfill --hours (hours.ts)
 * PK ACCT#acme   SK ADJID#<id>                 reserves an adjustment id (any day)
 * PK ACCT#acme   SK ZONE                       acme's billing time zone (tally zone set): after every DAY# range
 * PK CLOSED      SK DAY#2026-11-21             the day's close record: closedAt, its revisions
 * PK CLOSED#2026-11-21  SK R#0001#acme         revision 1's row of acme, for exports and webhooks
 * PK LATE#07     SK 2026-11-21#acme            usage reached a closed day: the closer makes a revision
 * PK OBJ#<bucket>/<key>#<etag>  SK #DONE       object ledger, with the object's contributions (indexed by its main day)
 * PK OBJ#<bucket>/<key>#<etag>  SK #DONE#DAY#2026-11-20  an object's contributions to another day (indexed by that day)
 * PK OBJ#<bucket>/<key>#<etag>  SK #TRY#<id>#<n>  an unfinished attempt's progress (sorts after #DONE)
 * PK UNRESOLVED                 SK OBJ#<bucket>/<key>#<etag>  increments nothing could prove applied or not (tally reconcile --resolve)
 * PK DROPPED#acme#2026-11-21#S#03  SK B#<minute>#<digest>  keys shard 3 of that day drops next, one item for up
 *                                               to 16, by the minute of its newest key (written before the first of them left)
 * PK DROPPED#<key hex>          SK #           one dropped key (versions before the batches; read until they expire)
 * PK HEALTH                    SK RECONCILE          the last tally reconcile over a day range: its result
 * PK DLQ#DROPPED               SK MSG#<messageId>  a dead-lettered message an operator dropped, on record
 * PK SETTINGS                  SK SHARDS#2026-11-21  that day's shard count, fixed by its first increment
 * PK SETTINGS                  SK CAP                the least history cap any writer used
 * PK QUOTA                     SK acme#requests     acme's monthly allowance of requests (tally quota set)
 * PK THRESHOLD#2026-11         SK acme#requests#080#1000 acme crossed 80% of its requests allowance 1000 in 2026-11 (once)
 * PK THRESHOLD#RECHECK         SK 2026-09           usage of 2026-09 changed late: the evaluator looks at it again
 * PK STRIPE#LINK               SK acme              acme is billed in Stripe as customer cus_... (tally stripe link)
 * PK STRIPE#OUT#acme           SK 2026-11-21#requests#R#0002  outbox record of one meter event (written before it is sent)
 * PK STRIPE#OUT#acme           SK 2026-11-21#requests#R#0000#P#000003  the 3rd running total of an open day
 * PK STRIPE#OUT#acme           SK 2026-11-21#requests#H#15#R#0002  TALLY_STRIPE_WINDOW=hour: hour 15 UTC's event of revision 2
 * PK STRIPE#LOCK               SK cus_...#cdn_requests  lease: one Stripe request at a time per customer and meter
 * PK STRIPE#METERERR           SK 2026-11-21T10:30:01.000Z#evt_...  a meter error report of Stripe's, recorded once (ttl 35 days)
 * PK STRIPE#METERERR           SK #CURSOR            the newest report's created: the next read asks from there
 * ```
 *
 * A usage shard holds its metrics (numbers added with `ADD`) and their sums by UTC hour
 * (`05R`, see `hours.ts`) beside the attributes in {@link SHARD_ATTRIBUTES}; one written by an earlier version may also hold pins
 * ({@link pinAttribute}).
 */
export interface TableKey {
  readonly PK: string;
  readonly SK: string;
}

function accountPartition(accountId: string): string {
  if (!isValidAccountId(accountId)) throw new ValidationError(`invalid account id: ${ACCOUNT_ID_RULE}`);
  return `ACCT#${accountId}`;
}

/** The account id of an account partition key (`ACCT#acme` -> `acme`). */
export function parseAccountPartition(pk: string): string | undefined {
  return pk.startsWith('ACCT#') ? pk.slice('ACCT#'.length) : undefined;
}

/** Key of usage shard `shard` of `accountId` on `day`. */
export function usageKey({ accountId, day, shard }: ShardRef): TableKey {
  return { PK: accountPartition(accountId), SK: `DAY#${day}#S#${String(shard).padStart(2, '0')}` };
}

/** Key of the adjustment `adjustmentId` of `accountId` on `day`. */
export function adjustmentItemKey({
  accountId,
  day,
  adjustmentId,
}: {
  accountId: string;
  day: string;
  adjustmentId: string;
}): TableKey {
  return { PK: accountPartition(accountId), SK: `DAY#${day}#A#${adjustmentId}` };
}

/**
 * Key of the item that reserves `adjustmentId` for one account, whatever its day: it
 * is written in the same transaction as the adjustment, so an id can never name two
 * corrections. Its sort key is outside every `DAY#` range, so readers never see it.
 */
export function adjustmentIdKey({ accountId, adjustmentId }: { accountId: string; adjustmentId: string }): TableKey {
  return { PK: accountPartition(accountId), SK: `ADJID#${adjustmentId}` };
}

/**
 * Key of `accountId`'s billing time zone (account-zone.ts), one item. `ZONE` sorts after
 * every `DAY#` key, so no day-range Query meets it. It cannot sit where that Query would
 * read it either: the Query reads one contiguous range, `DAY#<from>#` .. `DAY#<to>#~`,
 * and the only keys inside every such range are keys of its days. So the read API
 * reads it with one GetItem, sent at the same time as the Query.
 */
export function accountZoneKey(accountId: string): TableKey {
  return { PK: accountPartition(accountId), SK: 'ZONE' };
}

/** Sort-key bounds that select every item of `accountId` from `from` to `to`, both included. */
export function dayRangeKeys(accountId: string, from: string, to: string): { PK: string; from: string; to: string } {
  return { PK: accountPartition(accountId), from: `DAY#${from}#`, to: `DAY#${to}#~` };
}

/** What a sort key in an account partition names. */
export type AccountItem =
  | { readonly kind: 'usage'; readonly day: string; readonly shard: number }
  | { readonly kind: 'adjustment'; readonly day: string; readonly adjustmentId: string }
  | { readonly kind: 'revision'; readonly day: string; readonly revision: number }
  | { readonly kind: 'hours'; readonly day: string };

/**
 * Reads a sort key written by {@link usageKey}, {@link adjustmentItemKey},
 * {@link revisionKey} or `hoursBackfillSortKey` (hours.ts: `DAY#<day>#H#00`).
 */
export function parseAccountSortKey(sk: string): AccountItem | undefined {
  const match = /^DAY#(\d{4}-\d{2}-\d{2})#([SARH])#(.+)$/.exec(sk);
  if (!match) return undefined;
  const [, day, kind, rest] = match as unknown as [string, string, string, string];
  if (kind === 'S') return { kind: 'usage', day, shard: Number(rest) };
  if (kind === 'H') return rest === '00' ? { kind: 'hours', day } : undefined;
  if (kind === 'R') return /^\d+$/.test(rest) ? { kind: 'revision', day, revision: Number(rest) } : undefined;
  return { kind: 'adjustment', day, adjustmentId: rest };
}

function revisionPart(revision: number): string {
  return String(revision).padStart(4, '0');
}

/**
 * Key of revision `revision` of `accountId`'s `day`: its figures (revision 1 is the
 * closed snapshot, later ones the late usage since the one before). It sits in the
 * account's day range, so the read API's one Query reads it with the shards.
 */
export function revisionKey({ accountId, day, revision }: { accountId: string; day: string; revision: number }): TableKey {
  return { PK: accountPartition(accountId), SK: `DAY#${day}#R#${revisionPart(revision)}` };
}

/**
 * Key of the hours `tally backfill --hours` recomputed for `accountId`'s `day` (see
 * hours.ts). It sits in the account's day range, so the read API's one Query reads it
 * with the shards; {@link parseAccountSortKey} names it `hours`, which readers of
 * usage or adjustments pass by.
 */
export function hoursBackfillKey({ accountId, day }: { accountId: string; day: string }): TableKey {
  return { PK: accountPartition(accountId), SK: hoursBackfillSortKey(day) };
}

/** Partition of the close records, one item per closed (or closing) day, in day order. */
export const CLOSED_PARTITION = 'CLOSED';

/** Key of the close record of `day`: when it closed and its revisions. */
export function closedDayKey(day: string): TableKey {
  return { PK: CLOSED_PARTITION, SK: `DAY#${day}` };
}

/** Sort-key bounds of the close records from `from` to `to`, both included. */
export function closedDayRange(from: string, to: string): { PK: string; from: string; to: string } {
  return { PK: CLOSED_PARTITION, from: `DAY#${from}`, to: `DAY#${to}` };
}

/** The day a close record's sort key names. */
export function parseClosedDaySortKey(sk: string): string | undefined {
  return /^DAY#(\d{4}-\d{2}-\d{2})$/.exec(sk)?.[1];
}

/**
 * Key of `accountId`'s row in revision `revision` of `day`, in the day's own partition:
 * a copy of {@link revisionKey}'s figures that one Query reads back for the export and
 * the webhook of that revision.
 */
export function revisionRowKey({ accountId, day, revision }: { accountId: string; day: string; revision: number }): TableKey {
  if (!isValidAccountId(accountId)) throw new ValidationError(`invalid account id: ${ACCOUNT_ID_RULE}`);
  return { PK: `CLOSED#${day}`, SK: `R#${revisionPart(revision)}#${accountId}` };
}

/** Partition and sort-key prefix of every row of revision `revision` of `day`. */
export function revisionRowsPrefix(day: string, revision: number): { PK: string; prefix: string } {
  return { PK: `CLOSED#${day}`, prefix: `R#${revisionPart(revision)}#` };
}

/** Late markers are spread over this many partitions (one Query each finds them all). */
export const LATE_BUCKETS = 16;

/**
 * Key of the marker saying that usage reached `accountId`'s `day` once it was (nearly)
 * closed: ingest writes it before such an increment, the closer turns it into a
 * revision. Its partition is one of {@link LATE_BUCKETS}, from a hash of day and account.
 */
export function lateMarkerKey(day: string, accountId: string): TableKey {
  if (!isValidAccountId(accountId)) throw new ValidationError(`invalid account id: ${ACCOUNT_ID_RULE}`);
  const bucket = hash(new TextEncoder().encode(`${day}#${accountId}`))[0]! % LATE_BUCKETS;
  return { PK: lateBucketPartition(bucket), SK: `${day}#${accountId}` };
}

/** Partition of late-marker bucket `bucket` (0 .. LATE_BUCKETS - 1). */
export function lateBucketPartition(bucket: number): string {
  return `LATE#${String(bucket).padStart(2, '0')}`;
}

/** Day and account of a late marker's sort key. */
export function parseLateMarkerSortKey(sk: string): { day: string; account: string } | undefined {
  const match = /^(\d{4}-\d{2}-\d{2})#(.+)$/.exec(sk);
  return match ? { day: match[1]!, account: match[2]! } : undefined;
}


/** The one partition of quotas: one Query lists them all, or one account's (sort-key prefix). */
export const QUOTA_PARTITION = 'QUOTA';

/** Key of `accountId`'s monthly allowance of `metric`. */
export function quotaKey(accountId: string, metric: string): TableKey {
  return { PK: QUOTA_PARTITION, SK: `${quotaAccountPrefix(accountId)}${metric}` };
}

/** Sort-key prefix of every quota of `accountId` (ids carry no `#`, so no other account shares it). */
export function quotaAccountPrefix(accountId: string): string {
  if (!isValidAccountId(accountId)) throw new ValidationError(`invalid account id: ${ACCOUNT_ID_RULE}`);
  return `${accountId}#`;
}

/**
 * Key of the record that `accountId` crossed `level` percent of its `metric` allowance
 * `allowance` in `month`: written once with `attribute_not_exists`, the guard that makes
 * each (account, metric, month, level, allowance) fire one event, so a level reached
 * again under an allowance changed mid-month is a new record. One partition per month,
 * so one Query reads every crossing of the month (sent, pending and withdrawn).
 */
export function thresholdKey(month: string, accountId: string, metric: string, level: number, allowance: number): TableKey {
  return { PK: thresholdMonthPartition(month), SK: `${quotaAccountPrefix(accountId)}${metric}#${String(level).padStart(3, '0')}#${allowance}` };
}

/** Partition of the crossings of `month` (`YYYY-MM`). */
export function thresholdMonthPartition(month: string): string {
  return `THRESHOLD#${month}`;
}

/**
 * The partition of months to evaluate again: a late revision (closer) or an adjustment
 * (`tally adjust`) of a day of a month writes that month's marker; the evaluator reads
 * them all with one Query. Apart from every `THRESHOLD#<YYYY-MM>` month partition.
 */
export const RECHECK_PARTITION = 'THRESHOLD#RECHECK';

/** Key of the marker that `month` (`YYYY-MM`) is to be evaluated again. */
export function recheckKey(month: string): TableKey {
  return { PK: RECHECK_PARTITION, SK: month };
}

/** Key of the ledger item that says every increment of `ref` was applied. */
export function ledgerKey(ref: LogObjectRef): TableKey {
  return { PK: `OBJ#${ref.bucket}/${ref.key}#${ref.etag}`, SK: '#DONE' };
}

/**
 * Key of the item that indexes `ref`'s contributions to `day` when that day is not the
 * one its ledger item is indexed under (see contributions.ts). It sorts after `#DONE`
 * and before every `#TRY#` item, so the ledger's one-item read still meets `#DONE` first.
 */
export function ledgerDayKey(ref: LogObjectRef, day: string): TableKey {
  return { PK: ledgerKey(ref).PK, SK: `#DONE#DAY#${day}` };
}

/**
 * The global secondary index of ledger items by the day of their contributions
 * (partition `sd` = `<day>#<bucket>`, sort key `PK`), all attributes projected: explain
 * finds every object that contributed to an account-day with one Query per bucket, and
 * health reads what was processed lately from it. Only ledger items carry `sd`.
 */
export const SOURCE_DAY_INDEX = { name: 'bySourceDay', partitionKey: 'sd', sortKey: 'PK' } as const;

/** The `sd` value of `ref`'s contributions to `day`: the day and one of `buckets` from a hash of the object. */
export function sourceDayPartition(ref: LogObjectRef, day: string, buckets: number): string {
  return sourceDayBucket(day, hash(new TextEncoder().encode(ledgerKey(ref).PK))[0]! % buckets);
}

/** The `sd` value of bucket `bucket` of `day`. */
export function sourceDayBucket(day: string, bucket: number): string {
  return `${day}#${bucket}`;
}

/**
 * The one partition that lists objects with unresolved increments (one item each, sort
 * key the object's ledger key): `tally reconcile --resolve` reads it with one Query.
 */
export const UNRESOLVED_PARTITION = 'UNRESOLVED';

/** Key of the item that lists `ref`'s unresolved increments until they are settled. */
export function unresolvedKey(ref: LogObjectRef): TableKey {
  return { PK: UNRESOLVED_PARTITION, SK: ledgerKey(ref).PK };
}

/** Sort-key prefix of the attempt items of an object (after `#DONE` in key order). */
export const ATTEMPT_PREFIX = '#TRY#';

/** Key of part `part` of attempt `attemptId`'s progress on `ref`. */
export function attemptKey(ref: LogObjectRef, attemptId: string, part: number): TableKey {
  return { PK: ledgerKey(ref).PK, SK: `${ATTEMPT_PREFIX}${attemptId}#${part}` };
}

/** Reads the attempt id and part of a sort key written by {@link attemptKey}. */
export function parseAttemptSortKey(sk: string): { attemptId: string; part: number } | undefined {
  const match = /^#TRY#(.+)#(\d+)$/.exec(sk);
  return match ? { attemptId: match[1]!, part: Number(match[2]) } : undefined;
}

/** The attributes of a usage shard item that are not metrics. */
export const SHARD_ATTRIBUTES = {
  /** The rolling history of idempotency keys (a list of binary keys). */
  keys: 'h',
  /** The minute (from the start of the day) each history key was added, same positions. */
  minutes: 't',
  /** Keys dropped from the history so far, each after its tombstone was written. */
  drops: 'x',
  /**
   * Of those, the ones whose tombstone is in a batch of the shard ({@link droppedKeysItem}).
   * Versions before the batches wrote one item per key and did not count here: while
   * `x` exceeds it, a proof also reads those ({@link droppedKeyItem}).
   */
  batchedDrops: 'y',
  /** Minute of the day an item from before tombstoned drops was adopted; earlier drops may have no tombstone. */
  adoptedAt: 'a',
  updatedAt: 'updatedAt',
  /** The shard's day (`2026-11-21`), the key of {@link DAY_INDEX}: written with every increment, never changed. */
  day: 'd',
} as const;

/**
 * The global secondary index that lists the usage shards of a day (partition key the
 * shard's `day` attribute, sort key its `PK`), keys only: the closer finds every
 * account of a day without a scan. A shard enters it when it is created; later
 * increments leave its keys unchanged, so they cost the index nothing.
 */
export const DAY_INDEX = { name: 'byDay', partitionKey: SHARD_ATTRIBUTES.day, sortKey: 'PK' } as const;

/** Every pin attribute starts with this; no metric name can (metrics are lower case). */
export const PIN_PREFIX = 'P#';

const NOT_METRICS: ReadonlySet<string> = new Set(['PK', 'SK', 'ttl', ...Object.values(SHARD_ATTRIBUTES)]);

/**
 * True when `attribute` of a usage shard item is a metric (not a key, history, time or
 * pin): pins that earlier versions left on shards are never read as usage.
 */
export function isShardMetric(attribute: string): boolean {
  return !NOT_METRICS.has(attribute) && !attribute.startsWith(PIN_PREFIX) && !isHourAttribute(attribute);
}

/**
 * The pin attribute of `ref` on a usage shard. Versions of Tally before tombstones
 * covered every drop (and for a while after) set it on the last receive, inline runs
 * and their retries, atomically with the counters, and removed it once the object was
 * done; Tally no longer writes it. A pin still on a shard says that `ref`'s increment
 * there was applied, however far the history rolled since, so it is read (never
 * written) where nothing else can prove it: see `DynamoUsageStore.decideByTombstone`.
 * 12 bytes of SHA-256 of the object's ledger key.
 */
export function pinAttribute(ref: LogObjectRef): string {
  const digest = hash(new TextEncoder().encode(ledgerKey(ref).PK)).subarray(0, 12);
  return `${PIN_PREFIX}${Buffer.from(digest).toString('base64url')}`;
}

/**
 * Key of a tombstone as versions before {@link droppedKeysItem} wrote it, one item per
 * dropped key. Nothing writes it now; a proof still reads it until those expire (the
 * ledger's TTL after the upgrade).
 */
export function droppedKeyItem(key: Uint8Array): TableKey {
  return { PK: `${DROPPED_PREFIX}${Buffer.from(key).toString('hex')}`, SK: '#' };
}

/** The shard a tombstone batch belongs to: the usage shard whose history drops its keys. */
export interface ShardRef {
  readonly accountId: string;
  readonly day: string;
  readonly shard: number;
}

/**
 * Partition of the tombstones of one usage shard: every batch its history wrote before
 * dropping keys. A proof reads those written since its bound (one consistent `Query`,
 * see {@link droppedKeysSince}). Outside every account
 * partition, so the read API never meets it; no account id holds '#', so no two shards
 * share it, and no legacy tombstone (hex after the prefix) falls in it.
 */
export function droppedKeysPartition(shard: ShardRef): string {
  return `${DROPPED_PREFIX}${shard.accountId}#${shard.day}#S#${String(shard.shard).padStart(2, '0')}`;
}

/**
 * Key of a tombstone batch, written at `minute` (of the shard's day, see `historyMinute`)
 * before the shard's history drops any of `keys`, so that a retry that may follow an
 * unseen attempt can still learn, until the batch's TTL, that the increment was applied.
 * One item for a run of keys (up to 16, a few hundred bytes: 1 WCU) instead of one per
 * key. The sort key orders batches by the minute of the newest key they hold (its `t`:
 * no writer dates a key before one already in the history, so this is never earlier than
 * any key in the batch, whatever the clock of the writer that rolls), so a proof reads
 * only those holding keys added since its attempt may have started ({@link droppedKeysSince}); then
 * a digest of the keys: two writers that tombstone the same run in the same minute write
 * the same item, and different runs never overwrite each other.
 */
export function droppedKeysItem(shard: ShardRef, keys: readonly Uint8Array[], minute: number): TableKey {
  const joined = new Uint8Array(keys.reduce((sum, key) => sum + key.length + 1, 0));
  let at = 0;
  for (const key of keys) {
    joined[at++] = key.length;
    joined.set(key, at);
    at += key.length;
  }
  return { PK: droppedKeysPartition(shard), SK: `${droppedKeysSince(minute)}#${Buffer.from(hash(joined).subarray(0, 16)).toString('hex')}` };
}

/**
 * The least sort key of a batch written at `minute` or later: minutes as 8 digits after
 * adding a million (about two years before the day's start stay positive), so that the
 * sort keys order as the minutes do.
 */
export function droppedKeysSince(minute: number): string {
  return `B#${String(Math.max(0, Math.floor(minute) + 1_000_000)).padStart(8, '0')}`;
}

/** Attribute of a tombstone batch holding its keys (a list of binary values). */
export const DROPPED_KEYS_ATTRIBUTE = 'k';

/** Partition-key prefix of tombstones; what follows is the key in hex. */
export const DROPPED_PREFIX = 'DROPPED#';

/**
 * The one partition of drop records. No account (`ACCT#`), object (`OBJ#`) or
 * tombstone (`DROPPED#`) partition can have this name, and nothing reads the table by
 * Scan, so usage readers never meet it; `tally dlq dropped` reads it with one Query.
 */
export const DLQ_DROPS_PARTITION = 'DLQ#DROPPED';

/**
 * Key of the record of the dead-lettered message `messageId` an operator dropped: one
 * item per message, so recording a drop again (after a delete that failed) rewrites it.
 */
export function droppedMessageKey(messageId: string): TableKey {
  if (messageId.length === 0) throw new ValidationError('empty message id');
  return { PK: DLQ_DROPS_PARTITION, SK: `MSG#${messageId}` };
}

/** The one partition of Stripe links: one Query lists every linked account. */
export const STRIPE_LINK_PARTITION = 'STRIPE#LINK';

/** Key of `accountId`'s link to a Stripe customer. */
export function stripeLinkKey(accountId: string): TableKey {
  if (!isValidAccountId(accountId)) throw new ValidationError(`invalid account id: ${ACCOUNT_ID_RULE}`);
  return { PK: STRIPE_LINK_PARTITION, SK: accountId };
}

/**
 * Key of the outbox record of one meter event: an account's records share a partition,
 * ordered by day, so one Query reads an account's day range.
 */
export function stripeOutboxKey({
  accountId,
  day,
  metric,
  revision,
  adjusted,
  running,
  hour,
  split,
}: {
  accountId: string;
  day: string;
  metric: string;
  revision: number;
  adjusted?: number;
  running?: number;
  hour?: number;
  split?: number;
}): TableKey {
  if (!isValidAccountId(accountId)) throw new ValidationError(`invalid account id: ${ACCOUNT_ID_RULE}`);
  const adjustments = adjusted === undefined || adjusted === 0 ? '' : `#A#${revisionPart(adjusted)}`;
  // A running total of an open day (revision 0): sorts before the day's closed revisions.
  const runningPart = running === undefined || running === 0 ? '' : `#P#${String(running).padStart(6, '0')}`;
  // TALLY_STRIPE_WINDOW=hour: the UTC hour's own window, inside the day's range.
  const hourPart = hour === undefined ? '' : `#H#${String(hour).padStart(2, '0')}`;
  // An hour's re-split at the same step (its day's hours backfilled after they were sent): after the step's first event.
  const splitPart = split === undefined || split === 0 ? '' : `#S#${String(split).padStart(6, '0')}`;
  return { PK: `STRIPE#OUT#${accountId}`, SK: `${day}#${metric}${hourPart}#R#${revisionPart(revision)}${adjustments}${runningPart}${splitPart}` };
}

/** Partition and sort-key bounds of `accountId`'s outbox records from `from` to `to`, both included. */
export function stripeOutboxRange(accountId: string, from: string, to: string): { PK: string; from: string; to: string } {
  if (!isValidAccountId(accountId)) throw new ValidationError(`invalid account id: ${ACCOUNT_ID_RULE}`);
  return { PK: `STRIPE#OUT#${accountId}`, from: `${from}#`, to: `${to}#~` };
}

/** Key of the lease that lets one sender at a time send a customer's metric (`lease`: stripeLeaseName, domain/billing/stripe.ts). */
export function stripeLockKey(customer: string, lease: string): TableKey {
  return { PK: 'STRIPE#LOCK', SK: `${customer}#${lease}` };
}

/** Key of the record of the last `tally reconcile` (read by health); outside every account, object and day partition. */
export function lastReconcileKey(): TableKey {
  return { PK: 'HEALTH', SK: 'RECONCILE' };
}

/**
 * The partition of the settings every writer of the table must share (see
 * `TableSettings`): one item per day that has data, with its shard count, and the
 * least history cap used. Outside every account, object and tombstone partition.
 */
export const SETTINGS_PARTITION = 'SETTINGS';

/** Key of the record of `day`'s shard count, put before the day's first increment and never changed. */
export function dayShardsKey(day: string): TableKey {
  return { PK: SETTINGS_PARTITION, SK: `SHARDS#${day}` };
}

/** The day a shard-count record's sort key names. */
export function parseDayShardsSortKey(sk: string): string | undefined {
  return /^SHARDS#(\d{4}-\d{2}-\d{2})$/.exec(sk)?.[1];
}

/** Key of the record of the least history cap any writer used on the table. */
export const HISTORY_CAP_KEY: TableKey = { PK: SETTINGS_PARTITION, SK: 'CAP' };

/** Stripe's meter error reports (events it dropped after its 200), one item each, by creation time then id. */
export const STRIPE_METER_ERROR_PARTITION = 'STRIPE#METERERR';

/** The read cursor of Stripe's meter error reports ('#' sorts before every report's date). */
export function stripeMeterErrorCursorKey(): TableKey {
  return { PK: STRIPE_METER_ERROR_PARTITION, SK: '#CURSOR' };
}

/** The key of one meter error report: ordered by when Stripe created it. */
export function stripeMeterErrorKey(created: string, eventId: string): TableKey {
  return { PK: STRIPE_METER_ERROR_PARTITION, SK: `${created}#${eventId}` };
}
