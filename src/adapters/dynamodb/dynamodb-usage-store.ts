import {
  BatchWriteItemCommand,
  DeleteItemCommand,
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
import { queryAll, queryPartition, type TableAccess } from './query-partition';
import { TallyError } from '../../domain/errors';
import { contributionDays, decodeContributions, encodeContributions, SOURCE_DAY_BUCKETS, type Contribution } from '../../domain/counters/contributions';
import {
  ATTEMPT_PREFIX,
  attemptKey,
  droppedKeyItem,
  droppedKeysItem,
  droppedKeysPartition,
  droppedKeysSince,
  DROPPED_KEYS_ATTRIBUTE,
  ledgerDayKey,
  ledgerKey,
  parseAttemptSortKey,
  sourceDayPartition,
  UNRESOLVED_PARTITION,
  unresolvedKey,
  usageKey,
  type ShardRef,
} from '../../domain/counters/keys';
import { HOURS_PER_DAY, type HourSums } from '../../domain/hours';
import type { LogObjectRef } from '../../domain/counters/log-object';
import type {
  ApplyOptions,
  AttemptRecord,
  Increment,
  IncrementOutcome,
  LedgerEntry,
  ObjectState,
  UnresolvedObject,
  UsageStore,
} from '../../domain/counters/usage-store';
import {
  formFor,
  hasOneKeyTombstones,
  historyMinute,
  ROLL_CANDIDATES,
  historyUpdate,
  newestFirst,
  nextForm,
  observeWrite,
  provesAbsence,
  sameBytes,
  tombstonesCover,
  type HistoryObservation,
  type HistoryState,
  type HistoryUpdateOptions,
} from './history-update';

/** Version of the contribution attributes on a ledger item (`cv`); an item without it predates them. */
const CONTRIBUTIONS_VERSION = 1;

/** Keys per attempt item: 20,000 x 16 bytes stays far under the 400 KB item limit. */
const KEYS_PER_ATTEMPT_ITEM = 20_000;

export interface DynamoUsageStoreOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Keys kept per shard item; the default keeps an item under 1 KB. */
  readonly historyCap: number;
  /** Ledger items, attempt records and tombstones expire this many days after they are written. */
  readonly ledgerTtlDays: number;
  readonly clock?: () => Date;
  /**
   * When given, every write asks DynamoDB for its consumed capacity and reports it
   * here (for metrics, `tally plan` checks and benchmarks).
   */
  readonly onCapacity?: (operation: 'increment' | 'tombstone' | 'ledger', writeUnits: number) => void;
  /** Told what each applied increment learned about its shard's history (size, age of a dropped key). */
  readonly onHistory?: (observation: HistoryObservation) => void;
  /** Told of each increment left unresolved (for the `UnresolvedIncrements` metric and its alarm). */
  readonly onUnresolved?: (increment: Increment) => void;
}

/** The state each shard was last seen in is remembered so its next increment usually needs one request. */
const SHAPES_LIMIT = 10_000;
/** Condition failures allowed per increment; more means the item changes under us faster than we can write. */
const MAX_CONDITION_FAILURES = 24;
/**
 * Minutes a writer's clock may be behind the time a proof starts from: batches written
 * that much before `since` are read too.
 */
const CLOCK_MARGIN_MINUTES = 5;

/** Tombstones remembered as written; past this the memory starts over (a repeat costs 1 WCU). */
const TOMBSTONES_REMEMBERED = 50_000;

/**
 * The UsageStore on DynamoDB: one conditional `UpdateItem` per increment (see
 * history-update.ts), one strongly consistent `Query` and one `PutItem` per object.
 * A shard at its cap also pays for tombstones: one item (1 WCU) per 16 keys it drops.
 */
export class DynamoUsageStore implements UsageStore {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;
  private readonly table: TableAccess;
  private readonly historyCap: number;
  /** The least cap any writer used on the table (see `TableSettings`): an item of an earlier version under it never dropped a key. */
  private legacyCap: number;
  private readonly ledgerTtlDays: number;
  private readonly clock: () => Date;
  /** Per shard: the history's state when this store last saw it (a hint: a stale one costs a retry). */
  private readonly shapes = new Map<string, HistoryState>();
  /** Keys this store already wrote a tombstone for (hex), so each is written about once. */
  private readonly tombstoned = new Set<string>();
  private readonly onCapacity: DynamoUsageStoreOptions['onCapacity'];
  private readonly onHistory: DynamoUsageStoreOptions['onHistory'];
  private readonly onUnresolved: DynamoUsageStoreOptions['onUnresolved'];

  constructor(options: DynamoUsageStoreOptions) {
    this.client = options.client;
    this.tableName = options.tableName;
    this.table = { client: options.client, tableName: options.tableName };
    this.historyCap = options.historyCap;
    this.legacyCap = options.historyCap;
    this.ledgerTtlDays = options.ledgerTtlDays;
    this.clock = options.clock ?? (() => new Date());
    this.onCapacity = options.onCapacity;
    this.onHistory = options.onHistory;
    this.onUnresolved = options.onUnresolved;
  }

  /**
   * The least history cap ever used on the table, as the table records it: an item from
   * an earlier version (no drop count) proves it never dropped a key only with fewer keys
   * than that, since it may have rolled at that cap before a larger one was set.
   */
  useLeastCap(cap: number): void {
    this.legacyCap = Math.min(cap, this.historyCap);
  }

  private get capacityRequest(): { ReturnConsumedCapacity?: 'TOTAL' } {
    return this.onCapacity === undefined ? {} : { ReturnConsumedCapacity: 'TOTAL' };
  }

  /**
   * Applies `increment` once (see history-update.ts for the forms and the proof):
   *
   * ```
   * write (form from the shard's last seen state) --ok--> applied
   *   | condition failed: the old item says
   *   +-- key there -----------------------------------> duplicate
   *   +-- another form fits ----------------------------> write again in it
   *   +-- proof does not hold -> tombstone (consistent read)
   *          +-- there --------------------------------> duplicate
   *          +-- absent, drops all tombstoned ---------> write again, guarded
   *          +-- absent, item dropped keys untombstoned -> an earlier version's pin there? duplicate
   *                                                       otherwise unresolved (nothing applied)
   * ```
   * A state remembered from an earlier write can say beforehand that the proof will
   * not hold: then the tombstone is read first, and the failed write is saved.
   */
  async applyIncrement(increment: Increment, apply: ApplyOptions = {}): Promise<IncrementOutcome> {
    const shardId = `${increment.account}\u0000${increment.day}\u0000${increment.shard}`;
    const since = apply.since;
    let options: HistoryUpdateOptions = {
      tableName: this.tableName,
      cap: this.historyCap,
      legacyCap: this.legacyCap,
      now: this.clock(),
      ...(since === undefined ? {} : { since }),
    };
    let state: HistoryState = this.shapes.get(shardId) ?? { size: 0, drops: 0, heads: [] };
    if (since !== undefined && !provesAbsence(state, increment.day, this.legacyCap, since)) {
      const decided = await this.decideByTombstone(increment, state, since, apply.legacyPin);
      if (decided !== undefined) return decided;
      // A remembered state does not say whether the key was in the history then: had it
      // been, and left after the tombstones were read, a guard allowing that many drops
      // would let the key in again. It does know the keys at the front: the guard allows
      // the drops of those before the key (all of them when the key is not among them),
      // never the key's own (else the old item decides, below).
      const position = state.heads.findIndex((head) => sameBytes(head, increment.key));
      options = { ...options, maxDrops: (state.drops ?? 0) + (position === -1 ? state.heads.length : position) };
    }
    for (let failures = 0; failures <= MAX_CONDITION_FAILURES; failures++) {
      const form = formFor(state, this.historyCap);
      try {
        // A batch is filed under the minute of its newest key: every key it holds was added by then, whatever the clock of the writer that rolls.
        const heads = form === 'roll' ? await this.tombstonedHeads(shardOf(increment), state.heads, state.headsMinute ?? historyMinute(increment.day, this.clock())) : [];
        // The minute a key is dated with is taken as late as possible, never before the item's last write: histories stay in time order.
        options = { ...options, now: newestFirst(this.clock(), state.updatedAt) };
        const output = await this.client.send(new UpdateItemCommand({ ...historyUpdate(form, increment, options, { size: state.size, heads }), ...this.capacityRequest }));
        this.onCapacity?.('increment', output.ConsumedCapacity?.CapacityUnits ?? 0);
        const observation = observeWrite(form, output.Attributes, increment.day, options.now, increment.key);
        this.onHistory?.(observation);
        this.remember(shardId, observation.after);
        return 'applied';
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        const verdict = nextForm(error.Item, increment.key, { ...options, day: increment.day });
        if (verdict.kind === 'duplicate') return 'duplicate';
        state = verdict.state;
        this.remember(shardId, state);
        if (verdict.kind === 'unproven' && since !== undefined) {
          const decided = await this.decideByTombstone(increment, state, since, apply.legacyPin);
          if (decided !== undefined) return decided;
          // Absent now: guarded, the write holds only if no key added since this state was seen can have left.
          options = { ...options, maxDrops: (state.drops ?? 0) + state.size };
        }
        // Concurrent writers move the head of a full history by one each: back off a little before the next try.
        if (form === 'roll' && verdict.form === 'roll') await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * Math.min(failures + 1, 4)));
      }
    }
    const key = usageKey({ accountId: increment.account, day: increment.day, shard: increment.shard });
    throw new TallyError(`increment on ${key.PK} ${key.SK} kept failing its condition; retry later`);
  }

  /**
   * The key is not in a history that cannot prove it never was: its tombstone decides.
   * There: applied before (a duplicate). Absent: undefined (apply it, guarded), unless
   * the shard dropped keys without tombstones since the attempt may have started (an
   * item from an earlier version of Tally): then nothing can prove it, and the increment
   * is left unresolved, for `tally reconcile --resolve` to settle from the raw log.
   *
   * Only there can a pin tell what nothing else does. The versions that pinned (see
   * `pinAttribute`) also dropped keys by age without tombstones: where tombstones cover
   * the drops, a pinned key is in its history or has its tombstone and the pin adds
   * nothing, but on such a shard the pin is the one proof left that the increment was
   * applied. So, for an object with attempt records (`legacyPin`), one consistent read
   * of it comes before an increment is left unresolved: a pinned increment stays a
   * duplicate, as it was, instead of waiting for `tally reconcile --resolve`.
   */
  private async decideByTombstone(increment: Increment, state: HistoryState, since: Date, legacyPin: string | undefined): Promise<IncrementOutcome | undefined> {
    if (await this.hasTombstone(increment, state, since)) return 'duplicate';
    if (tombstonesCover(state, increment.day, since)) return undefined;
    if (legacyPin !== undefined && (await this.hasPin(increment, legacyPin))) return 'duplicate';
    this.onUnresolved?.(increment);
    return 'unresolved';
  }

  /**
   * Whether a tombstone of the increment's key was written: one consistent `Query` of the
   * batches its shard wrote since the attempt may have started (`since`, less
   * {@link CLOCK_MARGIN_MINUTES}: a batch is written after its keys were added, and a key
   * the attempt added was added after `since`), a few hundred bytes per 16 keys dropped;
   * then, only where that finds none and the shard (as `state` saw it) dropped keys before
   * the batches, the one-key item those versions wrote (one consistent read). A drop
   * after `state` was seen is a batch's or is refused by the write's guard (see
   * history-update.ts).
   */
  private async hasTombstone(increment: Increment, state: HistoryState, since: Date): Promise<boolean> {
    const partition = droppedKeysPartition(shardOf(increment));
    const from = droppedKeysSince(historyMinute(increment.day, since) - CLOCK_MARGIN_MINUTES);
    const batches = await queryAll(this.table, {
      KeyConditionExpression: 'PK = :pk AND SK >= :from',
      ExpressionAttributeValues: { ':pk': { S: partition }, ':from': { S: from } },
      ProjectionExpression: '#k',
      ExpressionAttributeNames: { '#k': DROPPED_KEYS_ATTRIBUTE },
      ConsistentRead: true,
    });
    const inBatch = batches.some((batch) => (batch[DROPPED_KEYS_ATTRIBUTE]?.L ?? []).some((entry) => entry.B !== undefined && sameBytes(entry.B, increment.key)));
    if (inBatch) return true;
    if (!hasOneKeyTombstones(state)) return false;
    const legacy = droppedKeyItem(increment.key);
    const output = await this.client.send(new GetItemCommand({ TableName: this.tableName, Key: { PK: { S: legacy.PK }, SK: { S: legacy.SK } }, ConsistentRead: true, ProjectionExpression: 'PK' }));
    return output.Item !== undefined;
  }

  /** Whether the shard of `increment` carries `pin` (consistent: pins were set atomically with the counters). */
  private async hasPin(increment: Increment, pin: string): Promise<boolean> {
    const key = usageKey({ accountId: increment.account, day: increment.day, shard: increment.shard });
    const output = await this.client.send(
      new GetItemCommand({ TableName: this.tableName, Key: { PK: { S: key.PK }, SK: { S: key.SK } }, ConsistentRead: true, ProjectionExpression: '#p', ExpressionAttributeNames: { '#p': pin } }),
    );
    return output.Item?.[pin] !== undefined;
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
    const byId = new Map<string, { startedAt: string; state: AttemptRecord['state']; reason?: string; since?: string; applied: Uint8Array[] }>();
    for (const item of await queryPartition(this.table, pk, ATTEMPT_PREFIX, true)) {
      const parsed = parseAttemptSortKey(item.SK?.S ?? '');
      if (parsed === undefined) continue;
      const record = byId.get(parsed.attemptId) ?? { startedAt: item.startedAt?.S ?? '', state: 'started', applied: [] };
      if (item.state?.S === 'failed') record.state = 'failed';
      if (item.reason?.S !== undefined) record.reason = item.reason.S;
      if (item.since?.S !== undefined) record.since = item.since.S;
      record.applied.push(...(item.applied?.BS ?? []));
      byId.set(parsed.attemptId, record);
    }
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

  /**
   * Writes the `#DONE` item, with the object's contributions (see contributions.ts):
   *
   * ```
   * #DONE             counts, processedAt, cv, fmt, cm, c (every row), sd = <main day>#<0..3>
   * #DONE#DAY#<day>   fmt, cm, c (that day's rows), sd = <day>#<0..3>   one per other day, written first
   * ```
   * An object whose rows fall on one day (nearly all) costs one `PutItem`, as before;
   * its index entry is one more write of the same size.
   */
  async writeLedger(entry: LedgerEntry): Promise<void> {
    // Listed for the operator first: a ledger that says unresolved is always found by `tally reconcile --resolve`.
    if (entry.unresolved !== undefined && entry.unresolved.length > 0) await this.listUnresolvedObject(entry.object, entry.unresolved);
    const key = ledgerKey(entry.object);
    const expires = this.ledgerExpiry();
    const contributions = entry.contributions === undefined ? undefined : await this.writeOtherDays(entry, entry.contributions, expires);
    const output = await this.client.send(
      new PutItemCommand({
        ...this.capacityRequest,
        TableName: this.tableName,
        Item: {
          ...objectItem(key, entry.object),
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
          ...(entry.unresolved === undefined || entry.unresolved.length === 0 ? {} : { unresolved: { L: entry.unresolved.map(incrementItem) } }),
          processedAt: { S: entry.processedAt },
          ...contributions,
          // What the resolver missed (a few hosts), for health; absent when it missed none.
          ...(entry.unattributedSamples === undefined || entry.unattributedSamples.length === 0 ? {} : { us: { SS: [...new Set(entry.unattributedSamples)] } }),
          ttl: { N: String(expires) },
        },
      }),
    );
    this.onCapacity?.('ledger', output.ConsumedCapacity?.CapacityUnits ?? 0);
  }

  /**
   * Adds contributions to the `#DONE` item of an object counted before they were
   * recorded (`tally backfill` over its days): its counts and outcomes stay as they are.
   */
  async recordContributions(entry: LedgerEntry): Promise<void> {
    if (entry.contributions === undefined) return;
    const attributes = await this.writeOtherDays(entry, entry.contributions, this.ledgerExpiry());
    const key = ledgerKey(entry.object);
    const names = Object.keys(attributes);
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { PK: { S: key.PK }, SK: { S: key.SK } },
          UpdateExpression: `SET ${names.map((_, i) => `#a${i} = :a${i}`).join(', ')}`,
          ConditionExpression: 'attribute_exists(PK) AND attribute_not_exists(cv)',
          ExpressionAttributeNames: Object.fromEntries(names.map((name, i) => [`#a${i}`, name])),
          ExpressionAttributeValues: Object.fromEntries(names.map((name, i) => [`:a${i}`, attributes[name]!])),
        }),
      );
    } catch (error) {
      // Recorded meanwhile by another fill: the same rows.
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  /** One `BatchWriteItem` of up to 25 puts, unprocessed ones retried with backoff. */
  private async batchWrite(items: WriteRequest[]): Promise<void> {
    let pending: WriteRequest[] | undefined = items;
    for (let round = 0; pending !== undefined && pending.length > 0; round++) {
      if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 25 * 2 ** round)));
      const output: BatchWriteItemCommandOutput = await this.client.send(new BatchWriteItemCommand({ RequestItems: { [this.tableName]: pending }, ...this.capacityRequest }));
      for (const consumed of output.ConsumedCapacity ?? []) this.onCapacity?.('ledger', consumed.CapacityUnits ?? 0);
      pending = output.UnprocessedItems?.[this.tableName];
    }
  }

  private ledgerExpiry(): number {
    return Math.floor(this.clock().getTime() / 1000) + this.ledgerTtlDays * 86_400;
  }

  /**
   * Writes the index items of every day but the main one (`BatchWriteItem`, none for an
   * object of one day) and answers the contribution attributes of the `#DONE` item.
   */
  private async writeOtherDays(entry: LedgerEntry, rows: readonly Contribution[], expires: number): Promise<Record<string, AttributeValue>> {
    const ref = entry.object;
    const [main, ...others] = contributionDays(rows);
    const format = entry.format ?? 'unknown';
    const unresolvedOn = (day: string | undefined) =>
      [...new Set((entry.unresolved ?? []).filter((inc) => day === undefined || inc.day === day).map((inc) => `${inc.day}\t${inc.account}`))];
    const contributionAttributes = (dayRows: readonly Contribution[], day: string | undefined): Record<string, AttributeValue> => {
      const encoded = encodeContributions(dayRows);
      const unresolved = unresolvedOn(day);
      return {
        fmt: { S: format },
        cm: { S: encoded.metrics },
        c: { S: encoded.rows },
        ...(day === undefined ? {} : { sd: { S: sourceDayPartition(ref, day, SOURCE_DAY_BUCKETS) } }),
        ...(unresolved.length === 0 ? {} : { u: { SS: unresolved } }),
      };
    };
    const items: WriteRequest[] = others.map((day) => {
      const key = ledgerDayKey(ref, day);
      return {
        PutRequest: {
          Item: {
            ...objectItem(key, ref),
            processedAt: { S: entry.processedAt },
            ...contributionAttributes(rows.filter((row) => row.day === day), day),
            ttl: { N: String(expires) },
          },
        },
      };
    });
    for (let start = 0; start < items.length; start += 25) await this.batchWrite(items.slice(start, start + 25));
    // The main day's index entry is the `#DONE` item itself; an object that counted nothing has none.
    return { cv: { N: String(CONTRIBUTIONS_VERSION) }, ...contributionAttributes(rows, main) };
  }

  private async listUnresolvedObject(ref: LogObjectRef, increments: readonly Increment[]): Promise<void> {
    const key = unresolvedKey(ref);
    await this.client.send(
      new PutItemCommand({
        TableName: this.tableName,
        Item: {
          ...objectItem(key, ref),
          increments: { L: increments.map(incrementItem) },
          recordedAt: { S: this.clock().toISOString() },
        },
      }),
    );
  }

  /** Every object whose ledger lists unresolved increments, oldest key first. */
  async listUnresolved(): Promise<UnresolvedObject[]> {
    return (await queryPartition(this.table, UNRESOLVED_PARTITION, undefined, true)).map((item) => ({
      object: { bucket: item.bucket?.S ?? '', key: item.key?.S ?? '', etag: item.etag?.S ?? '' },
      increments: (item.increments?.L ?? []).map((entry) => incrementFromItem(entry.M ?? {})),
      recordedAt: item.recordedAt?.S ?? '',
    }));
  }

  /**
   * Records how an object's unresolved increments were settled: the ledger keeps the
   * outcome of each (`settled`), and the object leaves the unresolved list.
   */
  async settleUnresolved(ref: LogObjectRef, settled: readonly { increment: Increment; outcome: 'applied' | 'already-counted' }[]): Promise<void> {
    const ledger = ledgerKey(ref);
    await this.client.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: { PK: { S: ledger.PK }, SK: { S: ledger.SK } },
        UpdateExpression: 'SET settled = :settled, settledAt = :now REMOVE unresolved, u',
        ConditionExpression: 'attribute_exists(PK)',
        ExpressionAttributeValues: {
          ':settled': { L: settled.map(({ increment, outcome }) => ({ M: { ...(incrementItem(increment).M ?? {}), outcome: { S: outcome } } })) },
          ':now': { S: this.clock().toISOString() },
        },
      }),
    );
    // The other days' index items said the same (explain reads them); the main day's is the item above.
    for (const day of new Set(settled.map(({ increment }) => increment.day))) {
      const item = ledgerDayKey(ref, day);
      try {
        await this.client.send(
          new UpdateItemCommand({ TableName: this.tableName, Key: { PK: { S: item.PK }, SK: { S: item.SK } }, UpdateExpression: 'REMOVE u', ConditionExpression: 'attribute_exists(PK)' }),
        );
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
    }
    const key = unresolvedKey(ref);
    await this.client.send(new DeleteItemCommand({ TableName: this.tableName, Key: { PK: { S: key.PK }, SK: { S: key.SK } } }));
  }

  private remember(shardId: string, state: HistoryState): void {
    if (this.shapes.size >= SHAPES_LIMIT) this.shapes.clear();
    this.shapes.set(shardId, state);
  }

  /**
   * The candidates a roll may drop, each with its tombstone written: while the head is
   * one this store already tombstoned, the tombstoned ones at the front (no request);
   * otherwise all the candidates, in one batch item (`PutItem`, 1 WCU), so a batch serves
   * the next {@link ROLL_CANDIDATES} rolls of the shard. Batches are kept as long as
   * ledger items. The roll's condition names only keys returned here.
   */
  private async tombstonedHeads(shard: ShardRef, candidates: readonly Uint8Array[], minute: number): Promise<readonly Uint8Array[]> {
    const known = (key: Uint8Array) => this.tombstoned.has(Buffer.from(key).toString('hex'));
    const head = candidates[0];
    if (head !== undefined && known(head)) {
      const prefix = candidates.findIndex((key) => !known(key));
      return prefix === -1 ? candidates : candidates.slice(0, prefix);
    }
    if (candidates.length === 0) return candidates;
    const item = droppedKeysItem(shard, candidates, minute);
    const expires = String(Math.floor(this.clock().getTime() / 1000) + this.ledgerTtlDays * 86_400);
    const output = await this.client.send(
      new PutItemCommand({
        TableName: this.tableName,
        Item: { PK: { S: item.PK }, SK: { S: item.SK }, [DROPPED_KEYS_ATTRIBUTE]: { L: candidates.map((key) => ({ B: key })) }, ttl: { N: expires } },
        ...this.capacityRequest,
      }),
    );
    this.onCapacity?.('tombstone', output.ConsumedCapacity?.CapacityUnits ?? 0);
    if (this.tombstoned.size + candidates.length > TOMBSTONES_REMEMBERED) this.tombstoned.clear();
    for (const key of candidates) this.tombstoned.add(Buffer.from(key).toString('hex'));
    return candidates;
  }
}

function shardOf(increment: Increment): ShardRef {
  return { accountId: increment.account, day: increment.day, shard: increment.shard };
}

function incrementItem(increment: Increment): AttributeValue {
  return {
    M: {
      account: { S: increment.account },
      day: { S: increment.day },
      shard: { N: String(increment.shard) },
      key: { B: increment.key },
      metrics: { M: Object.fromEntries(Object.entries(increment.metrics).map(([metric, amount]) => [metric, { N: String(amount) }])) },
      // Its hours go with it, so settling it later (`tally reconcile --resolve`) adds them too.
      ...(increment.hours === undefined
        ? {}
        : {
            hours: {
              M: Object.fromEntries(
                Object.entries(increment.hours).map(([hour, sums]) => [hour, { M: Object.fromEntries(Object.entries(sums).map(([metric, amount]) => [metric, { N: String(amount) }])) }]),
              ),
            },
          }),
    },
  };
}

function incrementFromItem(item: Record<string, AttributeValue>): Increment {
  return {
    account: item.account?.S ?? '',
    day: item.day?.S ?? '',
    shard: numberOf(item.shard),
    key: item.key?.B ?? new Uint8Array(),
    metrics: Object.fromEntries(Object.entries(item.metrics?.M ?? {}).map(([metric, value]) => [metric, numberOf(value)])),
    // Recorded before hours existed: none (applying it adds to the day only, see `Increment.hours`).
    ...(item.hours?.M === undefined ? {} : { hours: hoursFromItem(item.hours.M) }),
  };
}

/** The hours of a recorded increment; entries that are not an hour 0..23 are skipped. */
function hoursFromItem(item: Record<string, AttributeValue>): HourSums {
  const hours: Record<number, Record<string, number>> = {};
  for (const [hour, sums] of Object.entries(item)) {
    const at = Number(hour);
    if (!Number.isInteger(at) || at < 0 || at >= HOURS_PER_DAY) continue;
    hours[at] = Object.fromEntries(Object.entries(sums.M ?? {}).map(([metric, value]) => [metric, numberOf(value)]));
  }
  return hours;
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
    ...(item.unresolved?.L === undefined ? {} : { unresolved: item.unresolved.L.map((entry) => incrementFromItem(entry.M ?? {})) }),
    processedAt: item.processedAt?.S ?? '',
    ...(item.cv === undefined ? {} : { contributions: decodeContributions({ metrics: item.cm?.S ?? '', rows: item.c?.S ?? '' }) }),
    ...(item.fmt?.S === undefined ? {} : { format: item.fmt.S }),
  };
}

/** The item key of a record about one log object, and the object it is about. */
function objectItem(key: { PK: string; SK: string }, ref: LogObjectRef): Record<string, AttributeValue> {
  return { PK: { S: key.PK }, SK: { S: key.SK }, bucket: { S: ref.bucket }, key: { S: ref.key }, etag: { S: ref.etag } };
}
