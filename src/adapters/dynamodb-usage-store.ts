import {
  BatchWriteItemCommand,
  ConditionalCheckFailedException,
  type BatchWriteItemCommandOutput,
  type WriteRequest,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { TallyError } from '../domain/errors';
import { ATTEMPT_PREFIX, attemptKey, droppedKeyItem, ledgerKey, parseAttemptSortKey, usageKey } from '../domain/keys';
import type { LogObjectRef } from '../domain/log-object';
import type {
  ApplyOptions,
  AttemptRecord,
  Increment,
  IncrementOutcome,
  LedgerEntry,
  ObjectState,
  UsageStore,
} from '../domain/usage-store';
import { historyUpdate, nextForm, observeWrite, pinDuplicateUpdate, unpinUpdate, type HistoryForm, type HistoryObservation, type HistoryUpdateOptions } from './history-update';

/** Keys per attempt item: 20,000 x 16 bytes stays far under the 400 KB item limit. */
const KEYS_PER_ATTEMPT_ITEM = 20_000;

export interface DynamoUsageStoreOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Keys kept per shard item; the default keeps an item under 1 KB. */
  readonly historyCap: number;
  /** Keys a shard's history may grow to while its oldest key is younger than the retention (default: the cap). */
  readonly historyMaxKeys?: number;
  /** Seconds every key is kept at least, below `historyMaxKeys` (default 0: roll at the cap). */
  readonly retentionSeconds?: number;
  /** Ledger items expire this many days after they are written. */
  readonly ledgerTtlDays: number;
  readonly clock?: () => Date;
  /**
   * When given, every write asks DynamoDB for its consumed capacity and reports it
   * here (for metrics, `tally plan` checks and benchmarks).
   */
  readonly onCapacity?: (operation: 'increment' | 'ledger', writeUnits: number) => void;
  /** Told what each applied increment learned about its shard's history (size, age of a dropped key). */
  readonly onHistory?: (observation: HistoryObservation) => void;
}

/** The form each shard last took is remembered so its next increment usually needs one request. */
const FULL_HINTS_LIMIT = 10_000;
/** Form switches allowed per increment; more means the item changes under us faster than we can write. */
const MAX_FORM_SWITCHES = 4;
/** Forced writes that found the head moved past all their candidates, per increment. */
const MAX_FORCE_RACES = 16;
/** Tombstones remembered as written; past this the memory starts over (a repeat costs 1 WCU). */
const TOMBSTONES_REMEMBERED = 50_000;

/**
 * The UsageStore on DynamoDB: one conditional `UpdateItem` per increment (see
 * history-update.ts), one strongly consistent `Query` and one `PutItem` per object.
 */
export class DynamoUsageStore implements UsageStore {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;
  private readonly historyCap: number;
  private readonly historyMaxKeys: number;
  private readonly retentionSeconds: number;
  private readonly ledgerTtlDays: number;
  private readonly clock: () => Date;
  /** Per shard: the form its next write likely needs, and for a forced one the key it drops. */
  private readonly shapes = new Map<string, { form: HistoryForm; heads?: readonly Uint8Array[] }>();
  /** Keys this store already wrote a tombstone for (hex), so each is written about once. */
  private readonly tombstoned = new Set<string>();
  private readonly onCapacity: DynamoUsageStoreOptions['onCapacity'];
  private readonly onHistory: DynamoUsageStoreOptions['onHistory'];

  constructor(options: DynamoUsageStoreOptions) {
    this.client = options.client;
    this.tableName = options.tableName;
    this.historyCap = options.historyCap;
    this.historyMaxKeys = Math.max(options.historyCap, options.historyMaxKeys ?? options.historyCap);
    this.retentionSeconds = options.retentionSeconds ?? 0;
    this.ledgerTtlDays = options.ledgerTtlDays;
    this.clock = options.clock ?? (() => new Date());
    this.onCapacity = options.onCapacity;
    this.onHistory = options.onHistory;
  }

  private get capacityRequest(): { ReturnConsumedCapacity?: 'TOTAL' } {
    return this.onCapacity === undefined ? {} : { ReturnConsumedCapacity: 'TOTAL' };
  }

  async applyIncrement(increment: Increment, apply: ApplyOptions = {}): Promise<IncrementOutcome> {
    const shardId = `${increment.account}\u0000${increment.day}\u0000${increment.shard}`;
    let options: HistoryUpdateOptions = {
      tableName: this.tableName,
      cap: this.historyCap,
      maxKeys: this.historyMaxKeys,
      retentionSeconds: this.retentionSeconds,
      now: this.clock(),
      ...(apply.pin === undefined ? {} : { pin: apply.pin }),
      ...(apply.since === undefined ? {} : { since: apply.since }),
    };
    const hint = this.shapes.get(shardId);
    let form: HistoryForm = hint?.form ?? 'grow';
    let seen: { size?: number; heads?: readonly Uint8Array[] } = hint?.heads === undefined ? {} : { heads: hint.heads };
    let switches = 0;
    let races = 0;
    while (switches <= MAX_FORM_SWITCHES && races <= MAX_FORCE_RACES) {
      try {
        if (form === 'force') await this.putTombstones(seen.heads ?? []);
        // The minute a key is dated with is taken as late as possible: histories stay in time order.
        options = { ...options, now: this.clock() };
        const output = await this.client.send(new UpdateItemCommand({ ...historyUpdate(form, increment, options, seen), ...this.capacityRequest }));
        this.onCapacity?.('increment', output.ConsumedCapacity?.CapacityUnits ?? 0);
        const observation = observeWrite(form, output.Attributes, increment.day, options, increment.key);
        this.onHistory?.(observation);
        this.rememberShape(shardId, observation.next, observation.heads);
        return 'applied';
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        const verdict = nextForm(error.Item, increment.key, { ...options, day: increment.day });
        if (verdict.kind === 'duplicate') {
          if (verdict.by === 'history' && apply.pin !== undefined) await this.pinDuplicate(increment, apply.pin);
          return 'duplicate';
        }
        if (verdict.kind === 'unproven') {
          // The history forgot keys added since the unseen attempt: a young one only after its tombstone.
          if (await this.hasTombstone(increment.key)) return 'duplicate';
          const { since: _proven, ...rest } = options;
          options = rest;
        }
        if (form === 'force' && verdict.form === 'force') {
          // Other writers moved the head past every candidate: take the new front and go again.
          races++;
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * Math.min(races, 4)));
        } else {
          switches++;
        }
        form = verdict.form;
        seen = { size: verdict.size, ...(verdict.heads === undefined ? {} : { heads: verdict.heads }) };
        if (form !== 'adopt') this.rememberShape(shardId, form, verdict.heads);
      }
    }
    const key = usageKey({ accountId: increment.account, day: increment.day, shard: increment.shard });
    throw new TallyError(`increment on ${key.PK} ${key.SK} kept failing its condition (last form ${form}); retry later`);
  }

  /**
   * Pins a duplicate met in pinned mode: its key may roll out of the history before
   * this object is done, the pin stays. If the key left meanwhile, its tombstone or its
   * age (older than the retention) answers any later retry as the history would have.
   */
  private async pinDuplicate(increment: Increment, pin: string): Promise<void> {
    try {
      const output = await this.client.send(new UpdateItemCommand({ ...pinDuplicateUpdate(increment, pin, { tableName: this.tableName, now: this.clock() }), ...this.capacityRequest }));
      this.onCapacity?.('increment', output.ConsumedCapacity?.CapacityUnits ?? 0);
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  private async hasTombstone(key: Uint8Array): Promise<boolean> {
    const item = droppedKeyItem(key);
    const output = await this.client.send(new GetItemCommand({ TableName: this.tableName, Key: { PK: { S: item.PK }, SK: { S: item.SK } }, ConsistentRead: true, ProjectionExpression: 'PK' }));
    return output.Item !== undefined;
  }

  async unpin(increment: Increment, pin: string): Promise<void> {
    try {
      const output = await this.client.send(new UpdateItemCommand({ ...unpinUpdate(increment, pin, this.tableName), ...this.capacityRequest }));
      this.onCapacity?.('increment', output.ConsumedCapacity?.CapacityUnits ?? 0);
    } catch (error) {
      // Nothing pinned on that shard (this attempt found the increment in the history).
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  async findObject(ref: LogObjectRef): Promise<ObjectState> {
    const pk = ledgerKey(ref).PK;
    // `#DONE` sorts before every `#TRY#` item: one item read answers "new" or "done".
    const first = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': { S: pk } },
        ConsistentRead: true,
        Limit: 1,
      }),
    );
    const head = first.Items?.[0];
    if (head === undefined) return { attempts: [] };
    if (head.SK?.S === ledgerKey(ref).SK) return { done: ledgerFromItem(head, ref), attempts: [] };
    return { attempts: await this.readAttempts(pk) };
  }

  private async readAttempts(pk: string): Promise<AttemptRecord[]> {
    const byId = new Map<string, { startedAt: string; state: AttemptRecord['state']; reason?: string; pinned?: boolean; since?: string; applied: Uint8Array[] }>();
    let exclusiveStartKey: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :try)',
          ExpressionAttributeValues: { ':pk': { S: pk }, ':try': { S: ATTEMPT_PREFIX } },
          ConsistentRead: true,
          ...(exclusiveStartKey === undefined ? {} : { ExclusiveStartKey: exclusiveStartKey }),
        }),
      );
      for (const item of page.Items ?? []) {
        const parsed = parseAttemptSortKey(item.SK?.S ?? '');
        if (parsed === undefined) continue;
        const record = byId.get(parsed.attemptId) ?? { startedAt: item.startedAt?.S ?? '', state: 'started', applied: [] };
        if (item.state?.S === 'failed') record.state = 'failed';
        if (item.reason?.S !== undefined) record.reason = item.reason.S;
        if (item.pinned?.BOOL === true) record.pinned = true;
        if (item.since?.S !== undefined) record.since = item.since.S;
        record.applied.push(...(item.applied?.BS ?? []));
        byId.set(parsed.attemptId, record);
      }
      exclusiveStartKey = page.LastEvaluatedKey;
    } while (exclusiveStartKey !== undefined);
    return [...byId].map(([id, record]) => ({ id, ...record }));
  }

  async recordAttempt(ref: LogObjectRef, attempt: AttemptRecord): Promise<void> {
    const expires = Math.floor(this.clock().getTime() / 1000) + this.ledgerTtlDays * 86_400;
    const parts = Math.max(1, Math.ceil(attempt.applied.length / KEYS_PER_ATTEMPT_ITEM));
    for (let part = 0; part < parts; part++) {
      const key = attemptKey(ref, attempt.id, part);
      const keys = attempt.applied.slice(part * KEYS_PER_ATTEMPT_ITEM, (part + 1) * KEYS_PER_ATTEMPT_ITEM);
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: {
            PK: { S: key.PK },
            SK: { S: key.SK },
            startedAt: { S: attempt.startedAt },
            state: { S: attempt.state },
            ...(attempt.reason === undefined ? {} : { reason: { S: attempt.reason.slice(0, 1000) } }),
            ...(attempt.pinned === true ? { pinned: { BOOL: true } } : {}),
            ...(attempt.since === undefined ? {} : { since: { S: attempt.since } }),
            // A binary set: DynamoDB refuses an empty one, and duplicates collapse.
            ...(keys.length === 0 ? {} : { applied: { BS: keys as Uint8Array[] } }),
            ttl: { N: String(expires) },
          },
        }),
      );
    }
  }

  async findLedger(ref: LogObjectRef): Promise<LedgerEntry | undefined> {
    const key = ledgerKey(ref);
    const result = await this.client.send(
      new GetItemCommand({
        TableName: this.tableName,
        Key: { PK: { S: key.PK }, SK: { S: key.SK } },
        ConsistentRead: true,
      }),
    );
    return result.Item === undefined ? undefined : ledgerFromItem(result.Item, ref);
  }

  async writeLedger(entry: LedgerEntry): Promise<void> {
    const key = ledgerKey(entry.object);
    const expires = Math.floor(this.clock().getTime() / 1000) + this.ledgerTtlDays * 86_400;
    const output = await this.client.send(
      new PutItemCommand({
        ...this.capacityRequest,
        TableName: this.tableName,
        Item: {
          PK: { S: key.PK },
          SK: { S: key.SK },
          bucket: { S: entry.object.bucket },
          key: { S: entry.object.key },
          etag: { S: entry.object.etag },
          lines: {
            M: {
              read: { N: String(entry.lines.read) },
              counted: { N: String(entry.lines.counted) },
              unattributed: { N: String(entry.lines.unattributed) },
              malformed: { N: String(entry.lines.malformed) },
            },
          },
          increments: { N: String(entry.increments) },
          applied: { N: String(entry.applied) },
          duplicates: { N: String(entry.duplicates) },
          ...(entry.resumed ? { resumed: { N: String(entry.resumed) } } : {}),
          ...(entry.pinned ? { pinned: { BOOL: true } } : {}),
          processedAt: { S: entry.processedAt },
          ttl: { N: String(expires) },
        },
      }),
    );
    this.onCapacity?.('ledger', output.ConsumedCapacity?.CapacityUnits ?? 0);
  }

  private rememberShape(shardId: string, form: HistoryForm, heads: readonly Uint8Array[] | undefined): void {
    if (form === 'grow' || (form === 'force' && (heads === undefined || heads.length === 0))) {
      this.shapes.delete(shardId);
      return;
    }
    if (this.shapes.size >= FULL_HINTS_LIMIT) this.shapes.clear();
    this.shapes.set(shardId, { form, ...(heads === undefined ? {} : { heads }) });
  }

  /** Tombstones for keys a forced write may drop, kept as long as ledger items; each written about once. */
  private async putTombstones(keys: readonly Uint8Array[]): Promise<void> {
    const fresh = keys.filter((key) => !this.tombstoned.has(Buffer.from(key).toString('hex')));
    if (fresh.length === 0) return;
    const expires = String(Math.floor(this.clock().getTime() / 1000) + this.ledgerTtlDays * 86_400);
    let pending: WriteRequest[] | undefined = fresh.map((key) => {
      const item = droppedKeyItem(key);
      return { PutRequest: { Item: { PK: { S: item.PK }, SK: { S: item.SK }, ttl: { N: expires } } } };
    });
    for (let round = 0; pending !== undefined && pending.length > 0; round++) {
      if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 25 * 2 ** round)));
      const output: BatchWriteItemCommandOutput = await this.client.send(new BatchWriteItemCommand({ RequestItems: { [this.tableName]: pending }, ...this.capacityRequest }));
      for (const consumed of output.ConsumedCapacity ?? []) this.onCapacity?.('increment', consumed.CapacityUnits ?? 0);
      pending = output.UnprocessedItems?.[this.tableName];
    }
    if (this.tombstoned.size + fresh.length > TOMBSTONES_REMEMBERED) this.tombstoned.clear();
    for (const key of fresh) this.tombstoned.add(Buffer.from(key).toString('hex'));
  }



}

function numberOf(value: AttributeValue | undefined): number {
  return value?.N === undefined ? 0 : Number(value.N);
}

function ledgerFromItem(item: Record<string, AttributeValue>, ref: LogObjectRef): LedgerEntry {
  const lines = item.lines?.M ?? {};
  return {
    object: ref,
    lines: {
      read: numberOf(lines.read),
      counted: numberOf(lines.counted),
      unattributed: numberOf(lines.unattributed),
      malformed: numberOf(lines.malformed),
    },
    increments: numberOf(item.increments),
    applied: numberOf(item.applied),
    duplicates: numberOf(item.duplicates),
    ...(item.resumed === undefined ? {} : { resumed: numberOf(item.resumed) }),
    ...(item.pinned?.BOOL === true ? { pinned: true } : {}),
    processedAt: item.processedAt?.S ?? '',
  };
}
