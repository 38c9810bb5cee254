import { ledgerKey, usageKey } from '../../src/domain/keys';
import type { LogObjectRef } from '../../src/domain/log-object';
import type { ApplyOptions, AttemptRecord, Increment, IncrementOutcome, LedgerEntry, ObjectState, UsageStore } from '../../src/app/ports';

interface ShardItem {
  history: Uint8Array[];
  metrics: Record<string, number>;
  pins: Set<string>;
}

/**
 * A UsageStore in memory with the same rolling-history semantics as DynamoDB
 * (a key older than `historyCap` increments on its shard is forgotten) and pins, for tests of
 * the domain and the ingest flow that need no network.
 */
export class MemoryUsageStore implements UsageStore {
  readonly shards = new Map<string, ShardItem>();
  readonly ledger = new Map<string, LedgerEntry>();
  readonly attempts = new Map<string, Map<string, AttemptRecord>>();

  constructor(private readonly historyCap = 48) {}

  async applyIncrement(increment: Increment, options: ApplyOptions = {}): Promise<IncrementOutcome> {
    const item = this.shardOf(increment);
    const hex = Buffer.from(increment.key).toString('hex');
    if (item.history.some((seen) => Buffer.from(seen).toString('hex') === hex)) return 'duplicate';
    if (options.pin !== undefined && item.pins.has(options.pin)) return 'duplicate';
    if (options.pin !== undefined) item.pins.add(options.pin);
    item.history.push(increment.key);
    if (item.history.length > this.historyCap) item.history.shift();
    for (const [metric, amount] of Object.entries(increment.metrics)) {
      item.metrics[metric] = (item.metrics[metric] ?? 0) + amount;
    }
    return 'applied';
  }

  async unpin(increment: Increment, pin: string): Promise<void> {
    this.shardOf(increment).pins.delete(pin);
  }

  private shardOf(increment: Increment): ShardItem {
    const key = usageKey({ accountId: increment.account, day: increment.day, shard: increment.shard });
    const id = `${key.PK}|${key.SK}`;
    const item = this.shards.get(id) ?? { history: [], metrics: {}, pins: new Set<string>() };
    this.shards.set(id, item);
    return item;
  }

  async findLedger(ref: LogObjectRef): Promise<LedgerEntry | undefined> {
    return this.ledger.get(ledgerKey(ref).PK);
  }

  async findObject(ref: LogObjectRef): Promise<ObjectState> {
    const done = this.ledger.get(ledgerKey(ref).PK);
    return done !== undefined ? { done, attempts: [] } : { attempts: [...(this.attempts.get(ledgerKey(ref).PK)?.values() ?? [])] };
  }

  async recordAttempt(ref: LogObjectRef, attempt: AttemptRecord): Promise<void> {
    const id = ledgerKey(ref).PK;
    const attempts = this.attempts.get(id) ?? new Map<string, AttemptRecord>();
    attempts.set(attempt.id, attempt);
    this.attempts.set(id, attempts);
  }

  async writeLedger(entry: LedgerEntry): Promise<void> {
    this.ledger.set(ledgerKey(entry.object).PK, entry);
  }

  async recordContributions(entry: LedgerEntry): Promise<void> {
    const stored = this.ledger.get(ledgerKey(entry.object).PK);
    if (stored === undefined || stored.contributions !== undefined || entry.contributions === undefined) return;
    this.ledger.set(ledgerKey(entry.object).PK, { ...stored, contributions: entry.contributions, ...(entry.format === undefined ? {} : { format: entry.format }) });
  }

  /** Sum of every shard of `account` on `day`. */
  usageOf(account: string, day: string): Record<string, number> {
    const prefix = `${usageKey({ accountId: account, day, shard: 0 }).PK}|DAY#${day}#`;
    const total: Record<string, number> = {};
    for (const [id, item] of this.shards) {
      if (!id.startsWith(prefix)) continue;
      for (const [metric, amount] of Object.entries(item.metrics)) total[metric] = (total[metric] ?? 0) + amount;
    }
    return total;
  }
}
