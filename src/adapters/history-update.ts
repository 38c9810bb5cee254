import type { AttributeValue, UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { usageKey } from '../domain/keys';
import { BASE_METRICS } from '../domain/metric-rules';
import type { Increment } from '../domain/usage-store';

const ALWAYS_WRITTEN: ReadonlySet<string> = new Set(BASE_METRICS);

/**
 * The conditional updates that apply an increment exactly once, without a read and
 * without a transaction. Each adds the metrics and records the key in the shard's
 * history `h`, and the minute it was added in `t` (same position), in one atomic write:
 *
 * ```
 * grow   size(h) < cap, or the oldest key is younger than the retention:
 *        h = [k1 .. kn]     -> [k1 .. kn k]        t = [m1 .. mn] -> [m1 .. mn m]   list_append
 * roll   size(h) >= cap and the oldest key is older than the retention (or size(h) >= max):
 *        h = [k1 k2 .. kn]  -> [k2 .. kn k]        t likewise                      SET h[big] REMOVE h[0]
 * adopt  an item written before `t` existed: grows by one and starts `t`, marked as rolled
 * any    k already in h    -> ConditionalCheckFailed: duplicate, nothing applied
 * ```
 * So a key stays in its shard's history for at least the retention (the redelivery
 * window), however busy the shard, until the history reaches `max` keys: only then
 * is a younger key dropped (a "forced" roll, reported so that an alarm can fire).
 *
 * `SET h = list_append(h, :k) REMOVE h[0]` would be simpler, but DynamoDB rejects it
 * ("Two document paths overlap"): setting an index past the end appends instead.
 *
 * Times in `t` are whole minutes from the start of the shard's day (UTC), which keeps
 * each entry at 4 bytes: a default item (48 keys) stays under 1 KB.
 */
export interface HistoryUpdateOptions {
  readonly tableName: string;
  /** Keys kept per shard item while they are older than the retention. */
  readonly cap: number;
  /** Keys a history may grow to while its oldest key is younger than the retention. */
  readonly maxKeys: number;
  /** Seconds a key is kept at least (below `maxKeys`); 0 rolls at `cap` whatever the age. */
  readonly retentionSeconds: number;
  readonly now: Date;
  /**
   * Verified mode, for increments that an unobserved earlier attempt (started at this
   * time) may have applied: the write is only made when the history provably still
   * holds every key added since then, so a missing key means "never applied".
   */
  readonly verifySince?: Date;
}

/** Index far past any history length: `SET h[APPEND_INDEX]` appends. */
export const APPEND_INDEX = 100_000;

const MS_PER_MINUTE = 60_000;

/** Whole minutes from the start of `day` (UTC) to `at`, rounded down; negative before the day. */
export function historyMinute(day: string, at: Date): number {
  return Math.floor((at.getTime() - Date.parse(`${day}T00:00:00Z`)) / MS_PER_MINUTE);
}

/** The start of minute `minute` of `day`, as a time. */
export function minuteTime(day: string, minute: number): Date {
  return new Date(Date.parse(`${day}T00:00:00Z`) + minute * MS_PER_MINUTE);
}

function metricUpdate(metrics: Readonly<Record<string, number>>): {
  add: string;
  names: Record<string, string>;
  values: Record<string, AttributeValue>;
} {
  const names: Record<string, string> = {};
  const values: Record<string, AttributeValue> = {};
  const parts: string[] = [];
  Object.entries(metrics).forEach(([metric, amount], i) => {
    if (amount === 0 && !ALWAYS_WRITTEN.has(metric)) return;
    names[`#m${i}`] = metric;
    values[`:m${i}`] = { N: String(amount) };
    parts.push(`#m${i} :m${i}`);
  });
  return { add: parts.length > 0 ? ` ADD ${parts.join(', ')}` : '', names, values };
}

/** The forms of the history update; {@link nextForm} picks one from the item's state. */
export type HistoryForm = 'grow' | 'roll' | 'adopt';

const FORM_CONDITIONS: Record<HistoryForm, (timed: boolean) => string> = {
  grow: (timed) =>
    timed
      ? '(attribute_not_exists(#h) OR size(#h) < :cap OR (size(#h) < :max AND #t[0] >= :cutoff))'
      : '(attribute_not_exists(#h) OR size(#h) < :cap)',
  roll: (timed) => (timed ? 'size(#h) >= :cap AND (#t[0] < :cutoff OR size(#h) >= :max)' : 'size(#h) >= :cap'),
  adopt: () => 'attribute_exists(#h) AND attribute_not_exists(#t)',
};

const FORM_UPDATES: Record<HistoryForm, string> = {
  grow: 'SET #h = list_append(if_not_exists(#h, :empty), :kl), #t = list_append(if_not_exists(#t, :empty), :tml), #u = :now',
  roll: `SET #h[${APPEND_INDEX}] = :k, #t[${APPEND_INDEX}] = :tm, #r = :tm, #u = :now REMOVE #h[0], #t[0]`,
  adopt: 'SET #h = list_append(#h, :kl), #t = :tml, #r = :tm, #u = :now',
};

/**
 * The history still reaches back to `:since`: nothing was ever dropped, or the
 * oldest key kept is older than it (everything dropped was older still). An item
 * from before `t` existed cannot prove it and fails.
 */
const VERIFIED = '(attribute_not_exists(#h) OR (attribute_exists(#t) AND attribute_not_exists(#r)) OR #t[0] < :since)';

/**
 * The `UpdateItem` input that applies `increment` in `form`. The old item comes back
 * on success (`ALL_OLD`, no extra capacity) and with a failed condition, so the writer
 * learns the history's size and age without a read.
 */
export function historyUpdate(form: HistoryForm, increment: Increment, options: HistoryUpdateOptions): UpdateItemCommandInput {
  const key = usageKey({ accountId: increment.account, day: increment.day, shard: increment.shard });
  const metrics = metricUpdate(increment.metrics);
  const timed = options.retentionSeconds > 0;
  const minute = historyMinute(increment.day, options.now);
  const cutoff = historyMinute(increment.day, new Date(options.now.getTime() - options.retentionSeconds * 1000));
  const conditions = [FORM_CONDITIONS[form](timed), 'NOT contains(#h, :k)'];
  if (options.verifySince !== undefined) conditions.push(VERIFIED);
  const expression = `${FORM_UPDATES[form]} ${conditions.join(' ')}`;
  const uses = (name: string) => new RegExp(`${name}(?![\\w])`).test(expression);
  const values: Record<string, AttributeValue> = {
    ':k': { B: increment.key },
    ':now': { S: options.now.toISOString() },
    ':cap': { N: String(options.cap) },
    ':max': { N: String(Math.max(options.cap, options.maxKeys)) },
    ':cutoff': { N: String(cutoff) },
    ':tm': { N: String(minute) },
    ':empty': { L: [] },
    ':kl': { L: [{ B: increment.key }] },
    ':tml': { L: [{ N: String(minute) }] },
    ...(options.verifySince === undefined ? {} : { ':since': { N: String(historyMinute(increment.day, options.verifySince)) } }),
    ...metrics.values,
  };
  const names: Record<string, string> = { '#h': 'h', '#t': 't', '#r': 'r', '#u': 'updatedAt', ...metrics.names };
  return {
    TableName: options.tableName,
    Key: { PK: { S: key.PK }, SK: { S: key.SK } },
    UpdateExpression: `${FORM_UPDATES[form]}${metrics.add}`,
    ConditionExpression: conditions.join(' AND '),
    ExpressionAttributeNames: Object.fromEntries(Object.entries(names).filter(([name]) => uses(name) || name in metrics.names)),
    ExpressionAttributeValues: Object.fromEntries(Object.entries(values).filter(([name]) => uses(name) || name in metrics.values)),
    ReturnValues: 'ALL_OLD',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/** What the item returned with a failed condition says about the next step. */
export type HistoryVerdict =
  | { readonly kind: 'duplicate' }
  | { readonly kind: 'unverifiable' }
  | { readonly kind: 'retry'; readonly form: HistoryForm };

/**
 * Reads the `ALL_OLD` item of a failed condition: the key is there (a duplicate), the
 * history cannot vouch for a verified write, or which form fits the item now.
 */
export function nextForm(
  item: Record<string, AttributeValue> | undefined,
  key: Uint8Array,
  options: Pick<HistoryUpdateOptions, 'cap' | 'maxKeys' | 'retentionSeconds' | 'now' | 'verifySince'> & { day: string },
): HistoryVerdict {
  const history = item?.h?.L;
  if (history === undefined) return { kind: 'retry', form: 'grow' };
  for (const entry of history) {
    if (entry.B !== undefined && sameBytes(entry.B, key)) return { kind: 'duplicate' };
  }
  const times = item?.t?.L;
  if (options.verifySince !== undefined && !reachesBack(item, options.day, options.verifySince)) return { kind: 'unverifiable' };
  if (times === undefined) return { kind: 'retry', form: 'adopt' };
  if (history.length < options.cap) return { kind: 'retry', form: 'grow' };
  if (history.length >= Math.max(options.cap, options.maxKeys) || options.retentionSeconds <= 0) return { kind: 'retry', form: 'roll' };
  const cutoff = historyMinute(options.day, new Date(options.now.getTime() - options.retentionSeconds * 1000));
  return { kind: 'retry', form: Number(times[0]?.N ?? cutoff) < cutoff ? 'roll' : 'grow' };
}

/** The history of `item` still holds every key added since `since` (see {@link VERIFIED}). */
function reachesBack(item: Record<string, AttributeValue> | undefined, day: string, since: Date): boolean {
  if (item?.h === undefined) return true;
  if (item.t === undefined) return false;
  if (item.r === undefined) return true;
  const oldest = item.t.L?.[0]?.N;
  return oldest !== undefined && Number(oldest) < historyMinute(day, since);
}

/** What a successful write learned from the old item: how long the dropped key was kept. */
export interface HistoryObservation {
  /** Keys in the history after the write. */
  readonly keys: number;
  /** Seconds the dropped key had been kept, when the write dropped one (minute precision). */
  readonly droppedAgeSeconds?: number;
  /** The write dropped a key younger than the retention because the history was at `max`. */
  readonly forced: boolean;
}

/** Reads the `ALL_OLD` item returned by a successful write in `form`. */
export function observeWrite(
  form: HistoryForm,
  old: Record<string, AttributeValue> | undefined,
  day: string,
  options: Pick<HistoryUpdateOptions, 'retentionSeconds' | 'now'>,
): HistoryObservation {
  const before = old?.h?.L?.length ?? 0;
  if (form !== 'roll') return { keys: before + 1, forced: false };
  const oldest = old?.t?.L?.[0]?.N;
  if (oldest === undefined) return { keys: before, forced: false };
  const age = Math.max(0, (options.now.getTime() - minuteTime(day, Number(oldest)).getTime()) / 1000);
  return { keys: before, droppedAgeSeconds: Math.floor(age), forced: options.retentionSeconds > 0 && age < options.retentionSeconds };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
