import { hash } from 'fast-sha256';
import type { LogObjectRef } from './log-object';

/**
 * The idempotency key of one increment and the shard it lands on.
 *
 * ```
 * sha256(["tally/v1", bucket, key, etag, account, day])
 *   bytes 0..keyBytes-1  -> key, stored as a DynamoDB binary in the shard's history
 *   bytes 28..31         -> shard = uint32 % shards
 * ```
 * The same object, account and day always give the same key and shard, so a
 * redelivery, a replay or a backfill meets its own key on the same item.
 */
export interface IncrementKey {
  readonly key: Uint8Array;
  readonly shard: number;
}

export interface KeyScheme {
  /** Bytes of the digest kept as the key (12-16). */
  readonly keyBytes: number;
  /** Shards per account-day, for days before the first scheduled change. */
  readonly shards: number;
  /**
   * Later shard counts, each from its day on (ascending). A day's count never changes
   * once it has data, so a change is only ever scheduled for days still to come:
   * `TALLY_SHARDS=4,16@2027-01-01`.
   */
  readonly schedule?: readonly ShardChange[];
}

export interface ShardChange {
  readonly from: string;
  readonly shards: number;
}

/** The shard count of `day` under `scheme`. */
export function shardsOn(scheme: KeyScheme, day: string): number {
  let shards = scheme.shards;
  for (const change of scheme.schedule ?? []) if (change.from <= day) shards = change.shards;
  return shards;
}

/** The scheme's shards as `TALLY_SHARDS` spells them: `4` or `4,16@2027-01-01`. */
export function formatShards(scheme: Pick<KeyScheme, 'shards' | 'schedule'>): string {
  return [String(scheme.shards), ...(scheme.schedule ?? []).map((c) => `${c.shards}@${c.from}`)].join(',');
}

const encoder = new TextEncoder();

function digestToKey(canonical: string, scheme: KeyScheme, shards = scheme.shards): IncrementKey {
  const digest = hash(encoder.encode(canonical));
  const view = new DataView(digest.buffer, digest.byteOffset, digest.byteLength);
  return {
    key: digest.slice(0, scheme.keyBytes),
    shard: view.getUint32(28) % shards,
  };
}

/** Key of the increment that object `ref` makes to `account` on `day`. */
export function incrementKey(ref: LogObjectRef, account: string, day: string, scheme: KeyScheme): IncrementKey {
  return digestToKey(JSON.stringify(['tally/v1', ref.bucket, ref.key, ref.etag, account, day]), scheme, shardsOn(scheme, day));
}

/** Key of an operator adjustment; the same id always names the same adjustment. */
export function adjustmentKey(account: string, adjustmentId: string, scheme: KeyScheme): IncrementKey {
  return digestToKey(JSON.stringify(['tally/adjustment/v1', account, adjustmentId]), scheme);
}

/** Hex form of a key, for logs and tests. */
export function keyHex(key: Uint8Array): string {
  return Buffer.from(key).toString('hex');
}
