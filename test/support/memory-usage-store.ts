import { addHourSums, type HourSums } from '../../src/domain/hours';
import { ledgerKey, usageKey } from '../../src/domain/counters/keys';
import type { LogObjectRef } from '../../src/domain/counters/log-object';
import type { AttemptRecord, Increment, IncrementOutcome, LedgerEntry, ObjectState, UsageStore } from '../../src/app/ports';

interface ShardItem {
  history: Uint8Array[];
  metrics: Record<string, number>;
  hours: Record<number, Record<string, number>>;
}

/**
 * A UsageStore in memory with a rolling history per shard (a key older than
 * `historyCap` increments on its shard is forgotten), for tests of the ingest flow that
 * need no network. It keeps no tombstones and ignores `since`, so it cannot rule out an
 * attempt that died unseen: those cases are tested on DynamoDB Local.
 */
export class MemoryUsageStore implements UsageStore {
  readonly shards = new Map<string, ShardItem>();
  readonly ledger = new Map<string, LedgerEntry>();
  readonly attempts = new Map<string, Map<string, AttemptRecord>>();

  constructor(private readonly historyCap = 48) {}

  async applyIncrement(increment: Increment): Promise<IncrementOutcome> {
    const item = this.shardOf(increment);
    const hex = Buffer.from(increment.key).toString('hex');
    if (item.history.some((seen) => Buffer.from(seen).toString('hex') === hex)) return 'duplicate';
    item.history.push(increment.key);
    if (item.history.length > this.historyCap) item.history.shift();
    for (const [metric, amount] of Object.entries(increment.metrics)) {
      item.metrics[metric] = (item.metrics[metric] ?? 0) + amount;
    }
    addHourSums(item.hours, increment.hours ?? {});
    return 'applied';
  }

  private shardOf(increment: Increment): ShardItem {
    const key = usageKey({ accountId: increment.account, day: increment.day, shard: increment.shard });
    const id = `${key.PK}|${key.SK}`;
    const item = this.shards.get(id) ?? { history: [], metrics: {}, hours: {} };
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

  /** Sums by UTC hour of every shard of `account` on `day`. */
  hoursOf(account: string, day: string): HourSums {
    const prefix = `${usageKey({ accountId: account, day, shard: 0 }).PK}|DAY#${day}#`;
    const total: Record<number, Record<string, number>> = {};
    for (const [id, item] of this.shards) if (id.startsWith(prefix)) addHourSums(total, item.hours);
    return total;
  }
}
