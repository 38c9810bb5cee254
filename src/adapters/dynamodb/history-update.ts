import type { AttributeValue, UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { SHARD_ATTRIBUTES, usageKey } from '../../domain/counters/keys';
import { hourAttribute, type HourSums } from '../../domain/hours';
import { BASE_METRICS } from '../../domain/logs/metric-rules';
import type { Increment } from '../../domain/counters/usage-store';

const ALWAYS_WRITTEN: ReadonlySet<string> = new Set(BASE_METRICS);

/**
 * The conditional updates that apply an increment exactly once, without a read and
 * without a transaction. Each adds the metrics and records the key in the shard's
 * history `h` (and the minute it was added in `t`, same position) in one atomic write:
 *
 * ```
 * grow   size(h) < cap:  h = [k1 .. kn] -> [k1 .. kn k]                list_append
 * roll   size(h) >= cap: h = [k1 k2 .. kn] -> [k2 .. kn k], x = x + 1  SET h[big] REMOVE h[0]
 *        and only if k1 is one of the keys whose tombstone the writer wrote first (a batch of
 *        up to 16 keys in one item of the shard's DROPPED# partition)
 * adopt  an item written before every drop was tombstoned (no `x`): grows by one, starts
 *        `x` at 0 and remembers the minute in `a`; every key it holds is dated now
 * any    k already in h -> ConditionalCheckFailed: a duplicate, nothing applied
 * every  SET updatedAt = now, d = <the shard's day> (the day index's key: set once, then unchanged)
 * ```
 *
 * **The invariant.** A key leaves a history only after its tombstone was written. So
 * from the moment an increment is applied until the tombstones expire (the ledger's
 * TTL), its key is in its shard's history or has a tombstone: "absent from both" means
 * "never applied", however long ago and however busy the shard. No time enters it.
 *
 * **Proving absence in one write.** A retry that may follow an attempt that died
 * unseen (see `ApplyOptions.since`) adds a proof to its condition: the history never
 * dropped a key (`x = 0`), or its oldest key is older than the earliest the unseen
 * attempt can have started (histories drop from the front, so every younger key is
 * still there). When neither holds, the key's tombstones decide (one consistent read of
 * the shard's batches): there, the increment was applied; absent, it was not applied
 * before the item was last seen without the key, and the write is then *guarded*: it
 * also requires that the history dropped at most as many keys since it was seen as it
 * held then (`x <= :xmax`), so no key added after that read can have left it either.
 * Seen without the key means read from the item (`ALL_OLD`); a state the writer only
 * remembers from its own earlier write may have held the key, which could leave after
 * the tombstones were read: such a guard allows only the drops of the keys it knows were
 * at the front (`heads`) before the key, so the key itself cannot leave unnoticed.
 *
 * `SET h = list_append(h, :k) REMOVE h[0]` would be simpler, but DynamoDB rejects it
 * ("Two document paths overlap"): setting an index past the end appends instead.
 *
 * Times in `t` are whole minutes from the start of the shard's day (UTC), which keeps
 * each entry at 4 bytes: a default item (15 keys, beside a full day of hourly sums) stays
 * under 1 KB.
 */
export interface HistoryUpdateOptions {
  readonly tableName: string;
  /** Keys a shard's history holds; past it, each increment drops the oldest (tombstoned first). */
  readonly cap: number;
  /** The least cap any writer used on the table: an item of an earlier version below it never dropped a key (default `cap`). */
  readonly legacyCap?: number;
  readonly now: Date;
  /**
   * Proven mode, for an attempt that may follow one that died unseen, which started no
   * earlier than this: the write also requires that a key absent from the history was
   * provably never applied (see the invariant above).
   */
  readonly since?: Date;
  /**
   * Guarded mode, after the key's tombstone was found absent: the write requires that
   * the history dropped at most this many keys in all (`x`), instead of the proof.
   */
  readonly maxDrops?: number;
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

/**
 * The `ADD` clauses of an increment: its day totals (`#m<i>`) and its sums by UTC hour
 * (`#o<i>`, the flat attributes of hours.ts, `05R`). An hour attribute starts with a
 * digit, so it is always named through a placeholder. Hours with nothing in a metric
 * add nothing (an absent hour attribute reads as 0); the base metrics' day totals are
 * always written, so a day with usage has both.
 */
function metricUpdate(
  metrics: Readonly<Record<string, number>>,
  hours: HourSums | undefined,
): {
  add: string[];
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
  let i = 0;
  for (const [hour, sums] of Object.entries(hours ?? {})) {
    for (const [metric, amount] of Object.entries(sums)) {
      if (amount === 0) continue;
      names[`#o${i}`] = hourAttribute(Number(hour), metric);
      values[`:o${i}`] = { N: String(amount) };
      parts.push(`#o${i} :o${i}`);
      i++;
    }
  }
  return { add: parts, names, values };
}

/** The forms of the history update; {@link nextForm} picks one from the item's state. */
export type HistoryForm = 'grow' | 'roll' | 'adopt';

/**
 * Keys at the front of a full history whose tombstones a roll writes first (one
 * `BatchWriteItem`): the next rolls on the shard drop them one by one, so a batch
 * serves that many increments, and concurrent writers, which move the head by one
 * each, still find the head among them.
 */
export const ROLL_CANDIDATES = 16;

const FORM_CONDITIONS: Record<HistoryForm, string> = {
  grow: '(attribute_not_exists(#h) OR (attribute_exists(#x) AND size(#h) < :cap))',
  roll: 'attribute_exists(#x) AND size(#h) >= :cap AND #h[0] IN (:heads)',
  adopt: 'attribute_exists(#h) AND attribute_not_exists(#x) AND size(#h) = :n',
};

const FORM_UPDATES: Record<HistoryForm, { set: string[]; remove: string[]; add: string[] }> = {
  grow: {
    set: ['#h = list_append(if_not_exists(#h, :empty), :kl)', '#t = list_append(if_not_exists(#t, :empty), :tml)', '#x = if_not_exists(#x, :zero)'],
    remove: [],
    add: [],
  },
  roll: { set: [`#h[${APPEND_INDEX}] = :k`, `#t[${APPEND_INDEX}] = :tm`], remove: ['#h[0]', '#t[0]'], add: ['#x :one', '#y :one'] },
  // Every key already there is dated now: a proof by age never reaches back past the adoption.
  adopt: { set: ['#h = list_append(#h, :kl)', '#t = :tadopt', '#x = :zero', '#a = :tm'], remove: [], add: [] },
};

/**
 * The longest expression DynamoDB accepts, in bytes ("Expression parameters" in
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Constraints.html).
 * Placeholders and ASCII names only, so characters are bytes.
 */
export const MAX_EXPRESSION_BYTES = 4096;

/** The update expression of `form` adding `metrics`. */
function updateExpression(form: HistoryForm, metrics: { add: readonly string[] }): string {
  // `d` (the same value on every write) puts a new shard in the day index; rewriting it unchanged costs the index nothing.
  const set = [...FORM_UPDATES[form].set, '#u = :now', '#d = :day'];
  const remove = FORM_UPDATES[form].remove;
  const add = [...FORM_UPDATES[form].add, ...metrics.add];
  return `SET ${set.join(', ')}${remove.length > 0 ? ` REMOVE ${remove.join(', ')}` : ''}${add.length > 0 ? ` ADD ${add.join(', ')}` : ''}`;
}

function updateLength(form: HistoryForm, metrics: { add: readonly string[] }): number {
  return updateExpression(form, metrics).length;
}

/**
 * The history never dropped a key (new since every drop is tombstoned and `x = 0`, or
 * from before and below the cap, which a history written then never fell under once
 * it had dropped one), or its oldest key is older than `:since`.
 */
const PROOF =
  '(attribute_not_exists(#h) OR (#x = :zero AND attribute_not_exists(#a)) OR ((attribute_not_exists(#x) OR attribute_exists(#a)) AND size(#h) < :legacyCap) OR #t[0] < :since)';

/**
 * The `UpdateItem` input that applies `increment` in `form`. The old item comes back
 * on success (`ALL_OLD`, no extra capacity) and with a failed condition, so the writer
 * learns the history's size, head and drops without a read.
 */
export function historyUpdate(
  form: HistoryForm,
  increment: Increment,
  options: HistoryUpdateOptions,
  seen: { size?: number; heads?: readonly Uint8Array[] } = {},
): UpdateItemCommandInput {
  const size = seen.size ?? 0;
  const key = usageKey({ accountId: increment.account, day: increment.day, shard: increment.shard });
  const withHours = metricUpdate(increment.metrics, increment.hours);
  // An increment over many hours with many metrics could pass DynamoDB's 4 KB expression
  // limit: it then adds to the day alone, whose hours readers then call unknown (never a
  // failing write: the same increment always takes the same path).
  const metrics = updateLength(form, withHours) <= MAX_EXPRESSION_BYTES ? withHours : metricUpdate(increment.metrics, undefined);
  const minute = historyMinute(increment.day, options.now);
  const conditions = [
    FORM_CONDITIONS[form],
    // The key's minute is never earlier than one already in the item (see {@link newestFirst}).
    '(attribute_not_exists(#u) OR #u < :nextMinute)',
    'NOT contains(#h, :k)',
    ...(options.maxDrops !== undefined ? ['#x <= :xmax'] : options.since !== undefined ? [PROOF] : []),
  ];
  const update = updateExpression(form, metrics);
  const heads = (seen.heads ?? []).map((_, i) => `:head${i}`).join(', ');
  const condition = conditions.join(' AND ').replace(':heads', heads);
  const expression = `${update} ${condition}`;
  const uses = (name: string) => new RegExp(`${name}(?![\\w])`).test(expression);
  const values: Record<string, AttributeValue> = {
    ':k': { B: increment.key },
    ':now': { S: options.now.toISOString() },
    ':nextMinute': { S: new Date((Math.floor(options.now.getTime() / MS_PER_MINUTE) + 1) * MS_PER_MINUTE).toISOString() },
    ':day': { S: increment.day },
    ':cap': { N: String(options.cap) },
    ':legacyCap': { N: String(options.legacyCap ?? options.cap) },
    ':tm': { N: String(minute) },
    ':n': { N: String(size) },
    ':zero': { N: '0' },
    ':one': { N: '1' },
    ...(options.since === undefined ? {} : { ':since': { N: String(historyMinute(increment.day, options.since)) } }),
    ...(options.maxDrops === undefined ? {} : { ':xmax': { N: String(options.maxDrops) } }),
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
    '#x': SHARD_ATTRIBUTES.drops,
    '#y': SHARD_ATTRIBUTES.batchedDrops,
    '#a': SHARD_ATTRIBUTES.adoptedAt,
    '#u': SHARD_ATTRIBUTES.updatedAt,
    '#d': SHARD_ATTRIBUTES.day,
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

/** What an item said about its history when it was last seen (from `ALL_OLD`). */
export interface HistoryState {
  /** Keys in the history. */
  readonly size: number;
  /** Keys dropped since every drop was tombstoned (`x`); absent on an item from before. */
  readonly drops?: number;
  /** Of those, the ones tombstoned in a batch (`y`, absent: none); the others have a one-key tombstone. */
  readonly batched?: number;
  /** Minute of the day the item was adopted (`a`): drops before it may have no tombstone. */
  readonly adoptedAt?: number;
  /** Minute of the day its oldest key was added. */
  readonly oldest?: number;
  /** The keys at its front: the candidates a roll tombstones. */
  readonly heads: readonly Uint8Array[];
  /** Minute of the day the newest of `heads` was added: a tombstone batch of them is filed under it. */
  readonly headsMinute?: number;
  /** When the item was last written (`updatedAt`): no key it holds is dated in a later minute. */
  readonly updatedAt?: string;
}

/** Reads the history state of an item (undefined: no item, or no history yet). */
export function historyState(item: Record<string, AttributeValue> | undefined): HistoryState {
  const history = item?.[SHARD_ATTRIBUTES.keys]?.L ?? [];
  const drops = item?.[SHARD_ATTRIBUTES.drops]?.N;
  const batched = item?.[SHARD_ATTRIBUTES.batchedDrops]?.N;
  const adoptedAt = item?.[SHARD_ATTRIBUTES.adoptedAt]?.N;
  const oldest = item?.[SHARD_ATTRIBUTES.minutes]?.L?.[0]?.N;
  const headsMinute = newestMinute(item?.[SHARD_ATTRIBUTES.minutes]?.L ?? [], 0);
  const updatedAt = item?.[SHARD_ATTRIBUTES.updatedAt]?.S;
  return {
    size: history.length,
    ...(drops === undefined ? {} : { drops: Number(drops) }),
    ...(batched === undefined ? {} : { batched: Number(batched) }),
    ...(adoptedAt === undefined ? {} : { adoptedAt: Number(adoptedAt) }),
    ...(oldest === undefined ? {} : { oldest: Number(oldest) }),
    heads: frontKeys(history, 0),
    ...(headsMinute === undefined ? {} : { headsMinute }),
    ...(updatedAt === undefined ? {} : { updatedAt }),
  };
}

/**
 * Whether some of the keys `state` dropped have a one-key tombstone instead of a batch
 * (dropped by a version before the batches): a proof then reads those too.
 */
export function hasOneKeyTombstones(state: Pick<HistoryState, 'drops' | 'batched'>): boolean {
  return (state.drops ?? 0) > (state.batched ?? 0);
}

/** The form a history in `state` takes next. */
export function formFor(state: Pick<HistoryState, 'size' | 'drops'>, cap: number): HistoryForm {
  if (state.size === 0) return 'grow';
  if (state.drops === undefined) return 'adopt';
  return state.size < cap ? 'grow' : 'roll';
}

/**
 * Whether `state` proves that a key absent from its history was never applied by an
 * attempt that started no earlier than `since`: the same test as the write's proof.
 */
export function provesAbsence(state: HistoryState, day: string, legacyCap: number, since: Date): boolean {
  if (state.size === 0) return true;
  if (state.drops === 0 && state.adoptedAt === undefined) return true;
  if ((state.drops === undefined || state.adoptedAt !== undefined) && state.size < legacyCap) return true;
  return state.oldest !== undefined && state.oldest < historyMinute(day, since);
}

/**
 * Whether a tombstone's absence decides for `state`: every key added to it since `since`
 * that left it left a tombstone. Not so for an item from before (no `x`), nor for one
 * adopted after the unseen attempt may have started: its earlier drops had none.
 */
export function tombstonesCover(state: HistoryState, day: string, since: Date): boolean {
  if (state.drops === undefined) return state.size === 0;
  return state.adoptedAt === undefined || state.adoptedAt < historyMinute(day, since);
}

/**
 * What the item returned with a failed condition says about the next step: a duplicate
 * (the key is in the history); `unproven`: the key is not there but the write's proof
 * (or guard) does not hold, so the key's tombstone must decide; or retry in the form
 * that fits the item now.
 */
export type HistoryVerdict =
  | { readonly kind: 'duplicate' }
  | { readonly kind: 'unproven' | 'retry'; readonly form: HistoryForm; readonly state: HistoryState };

/** Reads the `ALL_OLD` item of a failed condition (see {@link HistoryVerdict}). */
export function nextForm(
  item: Record<string, AttributeValue> | undefined,
  key: Uint8Array,
  options: Pick<HistoryUpdateOptions, 'cap' | 'legacyCap' | 'since' | 'maxDrops'> & { day: string },
): HistoryVerdict {
  for (const entry of item?.[SHARD_ATTRIBUTES.keys]?.L ?? []) {
    if (entry.B !== undefined && sameBytes(entry.B, key)) return { kind: 'duplicate' };
  }
  const state = historyState(item);
  const form = formFor(state, options.cap);
  const holds =
    options.maxDrops !== undefined
      ? state.size === 0 || (state.drops ?? 0) <= options.maxDrops
      : options.since === undefined || provesAbsence(state, options.day, options.legacyCap ?? options.cap, options.since);
  return { kind: holds ? 'retry' : 'unproven', form, state };
}

/** What a successful write learned from the old item. */
export interface HistoryObservation {
  /** Keys in the history after the write. */
  readonly keys: number;
  /** Seconds the dropped key had been kept, when the write dropped one (minute precision). */
  readonly droppedAgeSeconds?: number;
  /** The write dropped a key (after writing its tombstone). */
  readonly dropped: boolean;
  /** The history's state after this write, as far as the old item tells (a hint for the shard's next write). */
  readonly after: HistoryState;
}

/** Reads the `ALL_OLD` item returned by a successful write in `form` of `key`. */
export function observeWrite(form: HistoryForm, old: Record<string, AttributeValue> | undefined, day: string, now: Date, key?: Uint8Array): HistoryObservation {
  const history = old?.[SHARD_ATTRIBUTES.keys]?.L ?? [];
  const times = old?.[SHARD_ATTRIBUTES.minutes]?.L ?? [];
  const before = historyState(old);
  const dropping = form === 'roll';
  const keys = dropping ? history.length : history.length + 1;
  const minuteNow = historyMinute(day, now);
  // The oldest key after this write: a roll dropped the first one, an adoption dated them all now.
  const oldest = form === 'adopt' ? minuteNow : Number((dropping ? times[1] : times[0])?.N ?? minuteNow);
  const heads = [...frontKeys(history, dropping ? 1 : 0), ...(history.length === 0 && key !== undefined ? [key] : [])];
  const headsMinute = form === 'adopt' || history.length === 0 ? minuteNow : newestMinute(times, dropping ? 1 : 0);
  const after: HistoryState = {
    size: keys,
    drops: form === 'adopt' ? 0 : (before.drops ?? 0) + (dropping ? 1 : 0),
    batched: (before.batched ?? 0) + (dropping ? 1 : 0),
    ...(form === 'adopt' ? { adoptedAt: minuteNow } : before.adoptedAt === undefined ? {} : { adoptedAt: before.adoptedAt }),
    oldest,
    heads,
    ...(headsMinute === undefined ? {} : { headsMinute }),
    updatedAt: now.toISOString(),
  };
  const dropped = dropping ? times[0]?.N : undefined;
  if (dropped === undefined) return { keys, dropped: dropping, after };
  const age = Math.max(0, (now.getTime() - minuteTime(day, Number(dropped)).getTime()) / 1000);
  return { keys, droppedAgeSeconds: Math.floor(age), dropped: true, after };
}

/** The latest minute among the {@link ROLL_CANDIDATES} entries of `times` from position `from` (undefined: none). */
function newestMinute(times: readonly AttributeValue[], from: number): number | undefined {
  const minutes = times.slice(from, from + ROLL_CANDIDATES).map((entry) => Number(entry.N)).filter(Number.isFinite);
  return minutes.length === 0 ? undefined : Math.max(...minutes);
}

/**
 * The time a write to an item last written at `updatedAt` dates its key with: the
 * writer's clock, or the item's last write when that is later (a clock behind another
 * writer's). Every write also requires the item's `updatedAt` to fall before the minute
 * after it: so no key is dated earlier than a key before it in the history, whatever the
 * writers' clocks, and "the oldest key is older than X" means every key added since X is
 * still there.
 */
export function newestFirst(clock: Date, updatedAt: string | undefined): Date {
  const last = updatedAt === undefined ? Number.NaN : Date.parse(updatedAt);
  return Number.isFinite(last) && last > clock.getTime() ? new Date(last) : clock;
}

/** Up to {@link ROLL_CANDIDATES} keys of `history` from position `from`. */
function frontKeys(history: readonly AttributeValue[], from: number): Uint8Array[] {
  return history.slice(from, from + ROLL_CANDIDATES).flatMap((entry) => (entry.B === undefined ? [] : [entry.B]));
}

/** Whether two keys are the same bytes. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
