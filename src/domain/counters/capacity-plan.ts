import { HOURS_PER_DAY, hourAttribute } from '../hours';
import { SHARD_ATTRIBUTES } from './keys';
import { ValidationError } from '../errors';

/**
 * Sizing of the rolling idempotency history (`tally plan`), after DESIGN.md:
 *
 * ```
 * item bytes   ≈ fixed overhead + hours + cap × (key bytes + 5)   a key (+1) and its minute in t (4 bytes)
 * hours        = 24 × Σ metrics (hour attribute name + value)     a full day of sums by UTC hour (hours.ts)
 * WCU / write  = ceil(item bytes / 1024)                       DynamoDB bills per started KB
 * writes/s     ≈ 1000 KB/s / item KB  (seed)  → 1000 / WCU     one partition: 1,000 WCU/s
 * horizon      ≈ cap × shards increments of one account-day    older keys live on as tombstones (1 WCU per 16)
 * ```
 * One object makes one increment per account-day it has lines for. Counts are exact at
 * any horizon (a key leaves a history only after its tombstone is written); the horizon
 * decides cost: increments past it pay a tombstone, redeliveries past it read one.
 */

/** The DynamoDB limits the plan checks against. */
export const DYNAMODB_LIMITS = {
  maxItemBytes: 400 * 1024,
  writeUnitBytes: 1024,
  partitionWcuPerSecond: 1000,
} as const;

/** Bounds `readConfig` enforces, so a plan never recommends what the consumer refuses. */
export const CONFIG_LIMITS = { maxShards: 64, maxHistoryCap: 25_000, maxHistoryBytes: 350_000, keyBytes: [12, 16] } as const;

/** The cap `DEFAULTS.historyCap` holds, when the window needs no more and the item fits. */
const DEFAULT_CAP = 15;
/** `updatedAt` holds an ISO timestamp: `2026-11-21T10:00:00.000Z`. */
const ISO_TIMESTAMP_CHARS = 24;
/** Digits of a shard's drop counts `x` and `y`: up to a million drops in a day. */
const DROP_COUNT_DIGITS = 7;
/** `DAY#2026-11-21#S#03`. */
const SHARD_SORT_KEY_CHARS = 19;

/** What a full usage shard item holds besides its history. */
export interface ShardItemShape {
  /** Keys in the history `h`. */
  readonly keys: number;
  readonly keyBytes: number;
  /** Length of the account id in `ACCT#<id>` (64 at most). */
  readonly accountIdChars: number;
  /** Counter attributes and how many significant digits their values have. */
  readonly metrics: readonly { readonly name: string; readonly digits: number }[];
  /**
   * UTC hours the item holds sums for (hours.ts: one attribute per hour and metric, such
   * as `05R`); 24 for a full day, 0 for an item counted before hours existed.
   */
  readonly hours?: number;
}

/** DynamoDB's size of a number: about one byte per two significant digits, plus one. */
function numberBytes(digits: number): number {
  return Math.ceil(digits / 2) + 1;
}

/**
 * Bytes one remembered key takes: its list element in `h` (key + 1) and its minute in
 * `t` (a 4-digit number, 3 bytes, + 1): the minutes since its day's start of a write on
 * that day (at most 1,439). A key written 10,000 minutes or more after its day began (6
 * days 22 h 40 min: a replay or backfill a week late) takes a byte more, a full item of
 * 300 keys 300 bytes more: the plan sizes the live day.
 */
export function historyEntryBytes(keyBytes: number): number {
  return keyBytes + 1 + 1 + numberBytes(4);
}

/**
 * Bytes DynamoDB bills for a usage shard item: attribute names plus values, a list
 * costing 3 bytes plus 1 byte per element (DynamoDB's item size rules).
 */
export function shardItemBytes(shape: ShardItemShape): number {
  const pk = 'PK'.length + 'ACCT#'.length + shape.accountIdChars;
  const sk = 'SK'.length + SHARD_SORT_KEY_CHARS;
  const updatedAt = SHARD_ATTRIBUTES.updatedAt.length + ISO_TIMESTAMP_CHARS;
  // The shard's day (`d`: `2026-11-21`), the key of the day index the closer reads.
  const day = SHARD_ATTRIBUTES.day.length + 10;
  // The drop counts `x` and `y` of a history past its cap (up to a million drops a day).
  const drops = SHARD_ATTRIBUTES.drops.length + SHARD_ATTRIBUTES.batchedDrops.length + 2 * numberBytes(DROP_COUNT_DIGITS);
  // The h and t lists.
  const history = SHARD_ATTRIBUTES.keys.length + 3 + SHARD_ATTRIBUTES.minutes.length + 3 + shape.keys * historyEntryBytes(shape.keyBytes);
  const counters = shape.metrics.reduce((sum, metric) => sum + metric.name.length + numberBytes(metric.digits), 0);
  // The day's sums by hour: each as large as the day's (an hour may hold the whole day).
  const hours = (shape.hours ?? 0) * shape.metrics.reduce((sum, metric) => sum + hourAttribute(0, metric.name).length + numberBytes(metric.digits), 0);
  return pk + sk + updatedAt + day + drops + history + counters + hours;
}

/** Write units one write of an item of `bytes` costs. */
export function writeUnits(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / DYNAMODB_LIMITS.writeUnitBytes));
}

export interface CapacityPlanInput {
  /** Log objects with lines for one account on one day (each makes one increment). */
  readonly objectsPerAccountDay: number;
  readonly keyBytes?: number;
  /** Fix the shard count instead of having one recommended. */
  readonly shards?: number;
  /** Fix the history cap instead of having one recommended. */
  readonly historyCap?: number;
  /** Accounts (account-days) one object has lines for: increments per object. */
  readonly accountsPerObject?: number;
  /** Hours of an account-day's objects the dedup horizon must cover (24 = the whole day). */
  readonly windowHours?: number;
  /** Longest account id (64 at most; the default assumes the worst). */
  readonly accountIdChars?: number;
  /** Counter attributes of a shard item. */
  readonly metricNames?: readonly string[];
  /** Significant digits of the largest counter value (15 covers a petabyte of bytes). */
  readonly counterDigits?: number;
}

export interface CapacityPlan {
  readonly objectsPerAccountDay: number;
  readonly keyBytes: number;
  readonly accountsPerObject: number;
  readonly windowHours: number;
  /** Significant digits every counter value (day total and hourly sum) is sized at. */
  readonly counterDigits: number;
  readonly shards: number;
  readonly historyCap: number;
  /** Whether shards and cap were given or recommended. */
  readonly chosen: { readonly shards: 'given' | 'recommended'; readonly historyCap: 'given' | 'recommended' };
  /** Objects of one account-day that arrive within the window. */
  readonly objectsInWindow: number;
  /** Keys one shard must hold so the window fits on every shard (hash spread, 3 sigma). */
  readonly keysNeededPerShard: number;
  /** Bytes of a shard item without its history keys. */
  readonly fixedBytes: number;
  /** Bytes of a full shard item. */
  readonly itemBytes: number;
  readonly itemKB: number;
  readonly wcuPerIncrement: number;
  /** The largest cap that keeps a full item at 1 WCU. */
  readonly maxCapAtOneWcu: number;
  /** Seed formula: 1000 KB/s / item KB. */
  readonly seedWritesPerSecondPerItem: number;
  /** 1,000 WCU/s / WCU per write: what a partition can take for this item. */
  readonly maxWritesPerSecondPerItem: number;
  /** Increments of one account-day after which a key may be forgotten (cap × shards). */
  readonly horizonObjects: number;
  /** The horizon in hours of arriving objects at the given rate. */
  readonly horizonHours: number;
  readonly coversWindow: boolean;
  /** WCU one object costs: an increment per account-day plus its ledger item. */
  readonly wcuPerObject: number;
  /** Average WCU/s one account's partition takes (every shard and day share `ACCT#<id>`). */
  readonly accountWcuPerSecond: number;
  /** Objects/s of one account a replay or backfill may send before its partition throttles. */
  readonly maxObjectsPerSecondPerAccount: number;
  readonly warnings: readonly string[];
  /** A hard limit is broken (item over 400 KB, or settings the consumer refuses): the plan cannot run. */
  readonly breaksLimit: boolean;
}

function positiveInteger(value: number, name: string, max = Number.MAX_SAFE_INTEGER): number {
  if (!Number.isInteger(value) || value < 1 || value > max) throw new ValidationError(`${name} must be a whole number from 1 to ${max}, got ${value}`);
  return value;
}

/** Keys a shard must hold for `objects` increments spread over `shards` by hash (mean + 3 sigma). */
export function keysNeededPerShard(objects: number, shards: number): number {
  if (shards === 1) return objects;
  const mean = objects / shards;
  return Math.ceil(mean + 3 * Math.sqrt(mean * (1 - 1 / shards)));
}

/**
 * Turns the expected objects per account-day into a shard count and history cap that
 * let the dedup horizon cover the window in 1 KB items (1 WCU per increment), or come as
 * close as 64 shards of 1 KB items can (past the horizon, keys leave tombstones: cheaper
 * than larger items), with the item size, write cost, throughput and warnings where a
 * limit is broken. Pure: the same input gives the same plan.
 *
 * @example planCapacity({ objectsPerAccountDay: 96 })
 *          // { shards: 2, historyCap: 63, itemBytes: 979, wcuPerIncrement: 1, horizonObjects: 126, ... }
 */
export function planCapacity(input: CapacityPlanInput): CapacityPlan {
  const objects = positiveInteger(input.objectsPerAccountDay, 'objects per account-day');
  const keyBytes = input.keyBytes ?? 12;
  if (!Number.isInteger(keyBytes) || keyBytes < CONFIG_LIMITS.keyBytes[0] || keyBytes > CONFIG_LIMITS.keyBytes[1]) {
    throw new ValidationError(`key bytes must be ${CONFIG_LIMITS.keyBytes[0]} to ${CONFIG_LIMITS.keyBytes[1]}, got ${keyBytes}`);
  }
  const accountsPerObject = positiveInteger(input.accountsPerObject ?? 1, 'accounts per object');
  const windowHours = input.windowHours ?? 24;
  if (!(windowHours > 0 && windowHours <= 24)) throw new ValidationError(`window hours must be more than 0 and at most 24, got ${windowHours}`);
  const accountIdChars = positiveInteger(input.accountIdChars ?? 64, 'account id length', 64);
  const digits = positiveInteger(input.counterDigits ?? 15, 'counter digits', 38);
  const metrics = (input.metricNames ?? ['requests', 'bytes']).map((name) => ({ name, digits }));
  // Only what the consumer accepts can be evaluated: a plan for 1,000 shards would print a TALLY_SHARDS line nobody can deploy.
  if (input.shards !== undefined) positiveInteger(input.shards, "shards (TALLY_SHARDS' limit)", CONFIG_LIMITS.maxShards);
  if (input.historyCap !== undefined) {
    const byBytes = Math.floor(CONFIG_LIMITS.maxHistoryBytes / (keyBytes + 1));
    positiveInteger(
      input.historyCap,
      `history cap (TALLY_HISTORY_CAP's limit: ${CONFIG_LIMITS.maxHistoryCap}, and cap × (key bytes + 1) ≤ ${CONFIG_LIMITS.maxHistoryBytes})`,
      Math.min(CONFIG_LIMITS.maxHistoryCap, byBytes),
    );
  }

  // A full day of hours: every increment adds to the hours its requests fall in.
  const shape = { keyBytes, accountIdChars, metrics, hours: HOURS_PER_DAY };
  const fixedBytes = shardItemBytes({ ...shape, keys: 0 });
  const maxCapAtOneWcu = Math.max(0, Math.floor((DYNAMODB_LIMITS.writeUnitBytes - fixedBytes) / historyEntryBytes(keyBytes)));
  // Where the rest of the item alone passes 1 KB (many metrics, each with 24 hours), the keys fill the KB it already started.
  const maxCapInStartedUnits = Math.floor((writeUnits(fixedBytes) * DYNAMODB_LIMITS.writeUnitBytes - fixedBytes) / historyEntryBytes(keyBytes));
  const objectsInWindow = Math.ceil((objects * windowHours) / 24);

  let shards = input.shards;
  if (shards === undefined) {
    const fitsIn = input.historyCap ?? Math.max(1, maxCapInStartedUnits);
    shards = CONFIG_LIMITS.maxShards;
    for (let s = 1; s <= CONFIG_LIMITS.maxShards; s++) {
      if (keysNeededPerShard(objectsInWindow, s) <= fitsIn) {
        shards = s;
        break;
      }
    }
  }
  const needed = keysNeededPerShard(objectsInWindow, shards);
  // Keys up to the 1 WCU size cost nothing more; the default leaves room for more metrics.
  // Never more: a key past the horizon costs 1/16 WCU (its share of a tombstone item) and,
  // for a late redelivery, a read of the shard's recent tombstones, where a larger item
  // costs a WCU more per started KB on every increment.
  const historyCap = input.historyCap ?? Math.min(Math.max(1, maxCapInStartedUnits), Math.max(needed, DEFAULT_CAP));

  const itemBytes = shardItemBytes({ ...shape, keys: historyCap });
  const itemKB = itemBytes / DYNAMODB_LIMITS.writeUnitBytes;
  const wcuPerIncrement = writeUnits(itemBytes);
  const horizonObjects = historyCap * shards;
  const perHour = objects / 24;
  const horizonHours = horizonObjects / perHour;
  const accountWcuPerSecond = (objects * wcuPerIncrement) / 86_400;
  const plan = {
    objectsPerAccountDay: objects,
    keyBytes,
    accountsPerObject,
    windowHours,
    counterDigits: digits,
    shards,
    historyCap,
    chosen: {
      shards: input.shards === undefined ? ('recommended' as const) : ('given' as const),
      historyCap: input.historyCap === undefined ? ('recommended' as const) : ('given' as const),
    },
    objectsInWindow,
    keysNeededPerShard: needed,
    fixedBytes,
    itemBytes,
    itemKB,
    wcuPerIncrement,
    maxCapAtOneWcu,
    seedWritesPerSecondPerItem: DYNAMODB_LIMITS.partitionWcuPerSecond / itemKB,
    maxWritesPerSecondPerItem: Math.floor(DYNAMODB_LIMITS.partitionWcuPerSecond / wcuPerIncrement),
    horizonObjects,
    horizonHours,
    coversWindow: historyCap >= needed,
    wcuPerObject: accountsPerObject * wcuPerIncrement + 1,
    accountWcuPerSecond,
    maxObjectsPerSecondPerAccount: Math.floor(DYNAMODB_LIMITS.partitionWcuPerSecond / wcuPerIncrement),
  };
  const breaksLimit =
    plan.itemBytes > DYNAMODB_LIMITS.maxItemBytes ||
    plan.shards > CONFIG_LIMITS.maxShards ||
    plan.historyCap > CONFIG_LIMITS.maxHistoryCap ||
    plan.historyCap * historyEntryBytes(plan.keyBytes) > CONFIG_LIMITS.maxHistoryBytes;
  return { ...plan, warnings: planWarnings(plan), breaksLimit };
}

function planWarnings(plan: Omit<CapacityPlan, 'warnings' | 'breaksLimit'>): string[] {
  const warnings: string[] = [];
  if (plan.itemBytes > DYNAMODB_LIMITS.maxItemBytes) {
    warnings.push(`a full shard item would be ${plan.itemBytes} bytes, over DynamoDB's 400 KB item limit: every write to it would fail; use more shards`);
  }
  if (plan.shards > CONFIG_LIMITS.maxShards) warnings.push(`${plan.shards} shards is over TALLY_SHARDS' limit of ${CONFIG_LIMITS.maxShards}`);
  if (plan.historyCap > CONFIG_LIMITS.maxHistoryCap || plan.historyCap * historyEntryBytes(plan.keyBytes) > CONFIG_LIMITS.maxHistoryBytes) {
    warnings.push(`a cap of ${plan.historyCap} is over what TALLY_HISTORY_CAP accepts (at most ${CONFIG_LIMITS.maxHistoryCap}, and cap × (key bytes + 1) ≤ ${CONFIG_LIMITS.maxHistoryBytes})`);
  }
  if (plan.wcuPerIncrement > 1 && plan.maxCapAtOneWcu > 0) {
    warnings.push(
      `every increment costs ${plan.wcuPerIncrement} WCU (a full item is ${plan.itemBytes} bytes); ` +
        `at most ${plan.maxCapAtOneWcu} keys fit in 1 KB: use more shards for 1 WCU per increment`,
    );
  } else if (plan.wcuPerIncrement > 1) {
    // More shards do not help: the counters and their hours alone fill the first KB.
    warnings.push(
      `every increment costs ${plan.wcuPerIncrement} WCU (a full item is ${plan.itemBytes} bytes): the counters and their 24 hourly sums alone are ` +
        `${plan.fixedBytes} bytes at ${plan.counterDigits}-digit values, so no shard count or cap gives 1 WCU` +
        (plan.counterDigits > 11
          ? `; values that size are the worst case (a petabyte): bench item 7's busy shard (thousands of requests and millions of bytes an hour) ` +
            `is 989 bytes with one configured metric at cap 15, and --counter-digits sizes the item for your values`
          : ''),
    );
  }
  if (!plan.coversWindow) {
    warnings.push(
      `the horizon of ${plan.horizonObjects} increments covers about ${plan.horizonHours.toFixed(1)} h of objects, ` +
        `less than the ${Number(plan.windowHours.toFixed(2))} h asked for: past it increments also write tombstones (1 WCU per 16 increments), ` +
        `and a redelivery of a half-done object later than that reads the shard's recent tombstones (one Query); counts stay exact`,
    );
  }
  if (plan.accountWcuPerSecond > DYNAMODB_LIMITS.partitionWcuPerSecond) {
    warnings.push(
      `one account needs ${plan.accountWcuPerSecond.toFixed(0)} WCU/s on average, over the 1,000 WCU/s of a partition ` +
        `(all shards and days of an account share ACCT#<id>): writes will be throttled`,
    );
  }
  const perItem = plan.objectsPerAccountDay / plan.shards / 86_400;
  if (perItem > plan.maxWritesPerSecondPerItem) {
    warnings.push(`each shard item takes ${perItem.toFixed(perItem < 10 ? 2 : 0)} writes/s on average, over its ${plan.maxWritesPerSecondPerItem} writes/s`);
  }
  return warnings;
}
