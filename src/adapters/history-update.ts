import type { AttributeValue, UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { SHARD_ATTRIBUTES, usageKey } from '../domain/keys';
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
 * roll   size(h) >= cap and the oldest key is older than the retention:
 *        h = [k1 k2 .. kn]  -> [k2 .. kn k]        t likewise                      SET h[big] REMOVE h[0]
 * force  size(h) >= max and the oldest key younger than the retention: the same write,
 *        after a tombstone for the key it expects to drop was put (DROPPED#<key>)
 * adopt  an item written before `t` existed: grows by one and starts `t`, every key dated now
 * any    k already in h    -> ConditionalCheckFailed: duplicate, nothing applied
 * pinned any form, also SET P#<object> and refused when it exists (see keys.ts pinAttribute)
 * every  SET updatedAt = now, day = <the shard's day> (the day index's key: set once, then unchanged)
 * ```
 * So a key stays in its shard's history for at least the retention (the redelivery
 * window), however busy the shard, until the history reaches `max` keys: only then
 * is a younger key dropped (a "forced" roll, reported so that an alarm can fire), and
 * never without a tombstone, which a retry consults: written before the write for the
 * key it expects to drop, and after it for the key it did drop if another writer
 * moved the history in between.
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
   * Pinned mode (see `pinAttribute`): the write also sets this attribute and is refused
   * when it is already there, so an earlier pinned attempt that died unseen is ruled out
   * exactly, whatever the history forgot since.
   */
  readonly pin?: string;
  /**
   * Proven mode, for a retry that may follow an attempt that died unseen, which started
   * no earlier than this: the write also requires that the history still holds every key
   * added since then (its oldest key is older), so a key missing from it was never
   * applied. When it cannot tell, the key's tombstone decides (see {@link nextForm}).
   */
  readonly since?: Date;
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

/**
 * The forms of the history update; {@link nextForm} picks one from the item's state.
 * `force` drops a key younger than the retention from a history at `max`, after the
 * tombstones of the keys that can be at its head by then were written, and only if
 * one of them is (see `droppedKeyItem` and {@link FORCE_CANDIDATES}).
 */
export type HistoryForm = 'grow' | 'roll' | 'force' | 'adopt';

/**
 * Keys at the front of a full history a forced write tombstones before it drops one of
 * them: concurrent writers move the head by one each, so a few candidates let the write
 * succeed under contention, and whichever it drops already has its tombstone.
 */
export const FORCE_CANDIDATES = 8;

/** An item without `t` (written before it existed) only takes the adopting form, so `h` and `t` stay aligned. */
const TIMED = '(attribute_not_exists(#h) OR attribute_exists(#t))';

const FORM_CONDITIONS: Record<HistoryForm, (timed: boolean) => string> = {
  grow: (timed) =>
    timed
      ? `${TIMED} AND (attribute_not_exists(#h) OR size(#h) < :cap OR (size(#h) < :max AND #t[0] >= :cutoff))`
      : `${TIMED} AND (attribute_not_exists(#h) OR size(#h) < :cap)`,
  roll: (timed) => (timed ? 'attribute_exists(#t) AND size(#h) >= :cap AND #t[0] < :cutoff' : 'attribute_exists(#t) AND size(#h) >= :cap'),
  force: () => 'attribute_exists(#t) AND size(#h) >= :max AND #h[0] IN (:heads)',
  adopt: () => 'attribute_exists(#h) AND attribute_not_exists(#t) AND size(#h) = :n',
};

const FORM_UPDATES: Record<HistoryForm, { set: string[]; remove: string[] }> = {
  grow: { set: ['#h = list_append(if_not_exists(#h, :empty), :kl)', '#t = list_append(if_not_exists(#t, :empty), :tml)'], remove: [] },
  roll: { set: [`#h[${APPEND_INDEX}] = :k`, `#t[${APPEND_INDEX}] = :tm`], remove: ['#h[0]', '#t[0]'] },
  force: { set: [`#h[${APPEND_INDEX}] = :k`, `#t[${APPEND_INDEX}] = :tm`], remove: ['#h[0]', '#t[0]'] },
  // Every key already there is dated now: kept a full retention from here, never less.
  adopt: { set: ['#h = list_append(#h, :kl)', '#t = :tadopt'], remove: [] },
};

/**
 * The `UpdateItem` input that applies `increment` in `form`. The old item comes back
 * on success (`ALL_OLD`, no extra capacity) and with a failed condition, so the writer
 * learns the history's size and age without a read.
 */
export function historyUpdate(
  form: HistoryForm,
  increment: Increment,
  options: HistoryUpdateOptions,
  seen: { size?: number; heads?: readonly Uint8Array[] } = {},
): UpdateItemCommandInput {
  const size = seen.size ?? 0;
  const key = usageKey({ accountId: increment.account, day: increment.day, shard: increment.shard });
  const metrics = metricUpdate(increment.metrics);
  const timed = options.retentionSeconds > 0;
  const minute = historyMinute(increment.day, options.now);
  const cutoff = historyMinute(increment.day, new Date(options.now.getTime() - options.retentionSeconds * 1000));
  const pinned = options.pin !== undefined;
  const proving = options.since !== undefined;
  const conditions = [
    FORM_CONDITIONS[form](timed),
    'NOT contains(#h, :k)',
    ...(pinned ? ['attribute_not_exists(#p)'] : []),
    // A history below the cap never dropped a key (rolls and forced drops keep it at or above).
    ...(proving ? ['(attribute_not_exists(#h) OR size(#h) < :cap OR #t[0] < :since)'] : []),
  ];
  // `d` (the same value on every write) puts a new shard in the day index; rewriting it unchanged costs the index nothing.
  const set = [...FORM_UPDATES[form].set, '#u = :now', '#d = :day', ...(pinned ? ['#p = :tm'] : [])];
  const remove = FORM_UPDATES[form].remove;
  const update = `SET ${set.join(', ')}${remove.length > 0 ? ` REMOVE ${remove.join(', ')}` : ''}${metrics.add}`;
  const heads = (seen.heads ?? []).map((_, i) => `:head${i}`).join(', ');
  const condition = conditions.join(' AND ').replace(':heads', heads);
  const expression = `${update} ${condition}`;
  const uses = (name: string) => new RegExp(`${name}(?![\\w])`).test(expression);
  const values: Record<string, AttributeValue> = {
    ':k': { B: increment.key },
    ':now': { S: options.now.toISOString() },
    ':day': { S: increment.day },
    ':cap': { N: String(options.cap) },
    ':max': { N: String(Math.max(options.cap, options.maxKeys)) },
    ':cutoff': { N: String(cutoff) },
    ':tm': { N: String(minute) },
    ':n': { N: String(size) },
    ...(options.since === undefined ? {} : { ':since': { N: String(historyMinute(increment.day, options.since)) } }),
    ...Object.fromEntries((seen.heads ?? []).map((head, i) => [`:head${i}`, { B: head }])),
    ':empty': { L: [] },
    ':kl': { L: [{ B: increment.key }] },
    ':tml': { L: [{ N: String(minute) }] },
    ':tadopt': { L: Array.from({ length: size + 1 }, () => ({ N: String(minute) })) },
    ...metrics.values,
  };
  const names: Record<string, string> = {
    '#h': SHARD_ATTRIBUTES.keys,
    '#t': SHARD_ATTRIBUTES.minutes,
    '#u': SHARD_ATTRIBUTES.updatedAt,
    '#d': SHARD_ATTRIBUTES.day,
    ...(pinned ? { '#p': options.pin } : {}),
    ...metrics.names,
  };
  return {
    TableName: options.tableName,
    Key: { PK: { S: key.PK }, SK: { S: key.SK } },
    UpdateExpression: update,
    ConditionExpression: condition,
    ExpressionAttributeNames: Object.fromEntries(Object.entries(names).filter(([name]) => uses(name) || name in metrics.names)),
    ExpressionAttributeValues: Object.fromEntries(Object.entries(values).filter(([name]) => uses(name) || name in metrics.values)),
    ReturnValues: 'ALL_OLD',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/** The `UpdateItem` input that removes `pin` from the shard of `increment` (once the object is done). */
export function unpinUpdate(increment: Pick<Increment, 'account' | 'day' | 'shard'>, pin: string, tableName: string): UpdateItemCommandInput {
  const key = usageKey({ accountId: increment.account, day: increment.day, shard: increment.shard });
  return {
    TableName: tableName,
    Key: { PK: { S: key.PK }, SK: { S: key.SK } },
    UpdateExpression: 'REMOVE #p',
    // Without the condition a REMOVE on a missing shard would create an empty one.
    ConditionExpression: 'attribute_exists(#p)',
    ExpressionAttributeNames: { '#p': pin },
  };
}

/**
 * What the item returned with a failed condition says about the next step: a duplicate
 * (the key is in the history, or this object's pin is there); `unproven`: the key is
 * not there but the history no longer reaches back to `since`, so the key's tombstone
 * must decide; or retry in the form that fits the item now.
 */
export type HistoryVerdict =
  | { readonly kind: 'duplicate'; readonly by: 'history' | 'pin' }
  | { readonly kind: 'unproven' | 'retry'; readonly form: HistoryForm; readonly size: number; readonly heads?: readonly Uint8Array[] };

/**
 * Reads the `ALL_OLD` item of a failed condition: the key (or this object's pin) is
 * there, a duplicate; or which form fits the item now (with its history's size, which
 * the adopting form needs, and its oldest key, which the forced form drops).
 */
export function nextForm(
  item: Record<string, AttributeValue> | undefined,
  key: Uint8Array,
  options: Pick<HistoryUpdateOptions, 'cap' | 'maxKeys' | 'retentionSeconds' | 'now' | 'pin' | 'since'> & { day: string },
): HistoryVerdict {
  if (options.pin !== undefined && item?.[options.pin] !== undefined) return { kind: 'duplicate', by: 'pin' };
  const history = item?.[SHARD_ATTRIBUTES.keys]?.L;
  if (history === undefined) return { kind: 'retry', form: 'grow', size: 0 };
  for (const entry of history) {
    if (entry.B !== undefined && sameBytes(entry.B, key)) return { kind: 'duplicate', by: 'history' };
  }
  const size = history.length;
  const times = item?.[SHARD_ATTRIBUTES.minutes]?.L;
  const oldest = Number(times?.[0]?.N ?? Number.NaN);
  const reachesBack = options.since === undefined || size < options.cap || oldest < historyMinute(options.day, options.since);
  const kind = reachesBack ? 'retry' : 'unproven';
  if (times === undefined) return { kind, form: 'adopt', size };
  const form = formFor(size, oldest, options.day, options);
  const heads = frontKeys(history, 0);
  return form === 'force' && heads.length > 0 ? { kind, form, size, heads } : { kind, form: form === 'force' ? 'grow' : form, size };
}

/** The `UpdateItem` input that pins `pin` on a shard whose history holds `increment`'s key (a duplicate met in pinned mode). */
export function pinDuplicateUpdate(increment: Increment, pin: string, options: Pick<HistoryUpdateOptions, 'tableName' | 'now'>): UpdateItemCommandInput {
  const key = usageKey({ accountId: increment.account, day: increment.day, shard: increment.shard });
  return {
    TableName: options.tableName,
    Key: { PK: { S: key.PK }, SK: { S: key.SK } },
    UpdateExpression: 'SET #p = :tm',
    ConditionExpression: 'contains(#h, :k)',
    ExpressionAttributeNames: { '#p': pin, '#h': SHARD_ATTRIBUTES.keys },
    ExpressionAttributeValues: { ':tm': { N: String(historyMinute(increment.day, options.now)) }, ':k': { B: increment.key } },
  };
}

/** The form a history of `size` keys whose oldest was added at minute `oldest` takes next. */
function formFor(size: number, oldest: number, day: string, options: Pick<HistoryUpdateOptions, 'cap' | 'maxKeys' | 'retentionSeconds' | 'now'>): HistoryForm {
  if (size < options.cap) return 'grow';
  if (options.retentionSeconds <= 0) return 'roll';
  const cutoff = historyMinute(day, new Date(options.now.getTime() - options.retentionSeconds * 1000));
  if (oldest < cutoff) return 'roll';
  return size >= Math.max(options.cap, options.maxKeys) ? 'force' : 'grow';
}

/** What a successful write learned from the old item. */
export interface HistoryObservation {
  /** Keys in the history after the write. */
  readonly keys: number;
  /** Seconds the dropped key had been kept, when the write dropped one (minute precision). */
  readonly droppedAgeSeconds?: number;
  /** The write dropped a key younger than the retention because the history was at `max`. */
  readonly forced: boolean;
  /** The form the shard's next write most likely needs (a hint; a wrong one costs a retry). */
  readonly next: HistoryForm;
  /** The oldest keys after this write: the candidates a forced next write tombstones. */
  readonly heads: readonly Uint8Array[];
}

/** Reads the `ALL_OLD` item returned by a successful write in `form` of `key`. */
export function observeWrite(
  form: HistoryForm,
  old: Record<string, AttributeValue> | undefined,
  day: string,
  options: Pick<HistoryUpdateOptions, 'cap' | 'maxKeys' | 'retentionSeconds' | 'now'>,
  key?: Uint8Array,
): HistoryObservation {
  const history = old?.[SHARD_ATTRIBUTES.keys]?.L ?? [];
  const times = old?.[SHARD_ATTRIBUTES.minutes]?.L ?? [];
  const dropping = form === 'roll' || form === 'force';
  const keys = dropping ? history.length : history.length + 1;
  const minuteNow = historyMinute(day, options.now);
  // The oldest key after this write: a roll dropped the first one, an adoption dated them all now.
  const oldestAfter = form === 'adopt' ? minuteNow : Number((dropping ? times[1] : times[0])?.N ?? minuteNow);
  const heads = [...frontKeys(history, dropping ? 1 : 0), ...(history.length === 0 && key !== undefined ? [key] : [])];
  const next = formFor(keys, oldestAfter, day, options);
  const hint = { next, heads };
  const dropped = dropping ? times[0]?.N : undefined;
  if (dropped === undefined) return { keys, forced: false, ...hint };
  const age = Math.max(0, (options.now.getTime() - minuteTime(day, Number(dropped)).getTime()) / 1000);
  return { keys, droppedAgeSeconds: Math.floor(age), forced: form === 'force', ...hint };
}

/** Up to {@link FORCE_CANDIDATES} keys of `history` from position `from`. */
function frontKeys(history: readonly AttributeValue[], from: number): Uint8Array[] {
  return history.slice(from, from + FORCE_CANDIDATES).flatMap((entry) => (entry.B === undefined ? [] : [entry.B]));
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
