import type { AttributeValue, UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { usageKey } from '../domain/keys';
import { BASE_METRICS } from '../domain/metric-rules';
import type { Increment } from '../domain/usage-store';

const ALWAYS_WRITTEN: ReadonlySet<string> = new Set(BASE_METRICS);

/**
 * The two conditional updates that apply an increment exactly once, without a read
 * and without a transaction. Both add the metrics and record the key in the shard's
 * rolling history `h` in the same atomic write:
 *
 * ```
 * growing  (size(h) < cap):  h = [k1 k2 k3]       -> [k1 k2 k3 k]        list_append
 * rolling  (size(h) = cap):  h = [k1 k2 ... kcap] -> [k2 ... kcap k]     SET h[big] REMOVE h[0]
 * either, when k is in h:    ConditionalCheckFailed -> duplicate, nothing applied
 * ```
 * `SET h = list_append(h, :k) REMOVE h[0]` would be simpler, but DynamoDB rejects it
 * ("Two document paths overlap"): setting an index past the end appends instead.
 */
export interface HistoryUpdateOptions {
  readonly tableName: string;
  /** Keys kept per shard item. */
  readonly cap: number;
  readonly now: string;
}

/** Index far past any history length: `SET h[APPEND_INDEX]` appends. */
export const APPEND_INDEX = 100_000;

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

function common(increment: Increment, options: HistoryUpdateOptions) {
  const key = usageKey({ accountId: increment.account, day: increment.day, shard: increment.shard });
  const metrics = metricUpdate(increment.metrics);
  return {
    TableName: options.tableName,
    Key: { PK: { S: key.PK }, SK: { S: key.SK } },
    metrics,
    names: { '#h': 'h', '#u': 'updatedAt', ...metrics.names },
    values: { ':k': { B: increment.key }, ':now': { S: options.now }, ':cap': { N: String(options.cap) }, ...metrics.values },
  };
}

/**
 * The growing form: append to a history that has room. The history comes back
 * (`UPDATED_NEW`, no extra capacity), so the writer that fills it knows to send the
 * rolling form next and never pays a rejected growing write for that shard.
 */
export function growingUpdate(increment: Increment, options: HistoryUpdateOptions): UpdateItemCommandInput {
  const c = common(increment, options);
  return {
    TableName: c.TableName,
    Key: c.Key,
    UpdateExpression: `SET #h = list_append(if_not_exists(#h, :empty), :kl), #u = :now${c.metrics.add}`,
    ConditionExpression: '(attribute_not_exists(#h) OR size(#h) < :cap) AND NOT contains(#h, :k)',
    ExpressionAttributeNames: c.names,
    ExpressionAttributeValues: { ...c.values, ':empty': { L: [] }, ':kl': { L: [{ B: increment.key }] } },
    ReturnValues: 'UPDATED_NEW',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/** The rolling form: drop the oldest key, append the new one, at a fixed length. */
export function rollingUpdate(increment: Increment, options: HistoryUpdateOptions): UpdateItemCommandInput {
  const c = common(increment, options);
  return {
    TableName: c.TableName,
    Key: c.Key,
    UpdateExpression: `SET #h[${APPEND_INDEX}] = :k, #u = :now REMOVE #h[0]${c.metrics.add}`,
    ConditionExpression: 'size(#h) >= :cap AND NOT contains(#h, :k)',
    ExpressionAttributeNames: c.names,
    ExpressionAttributeValues: c.values,
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/** What an `ALL_OLD` item returned with a failed condition says about the next step. */
export type HistoryState = 'duplicate' | 'full' | 'room';

/** Reads the history of the item returned with a `ConditionalCheckFailedException`. */
export function historyState(
  item: Record<string, AttributeValue> | undefined,
  key: Uint8Array,
  cap: number,
): HistoryState {
  const history = item?.h?.L ?? [];
  for (const entry of history) {
    if (entry.B !== undefined && sameBytes(entry.B, key)) return 'duplicate';
  }
  return history.length >= cap ? 'full' : 'room';
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
