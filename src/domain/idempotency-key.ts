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
  /** Shards per account-day; never change it for a day that already has data. */
  readonly shards: number;
}

const encoder = new TextEncoder();

function digestToKey(canonical: string, scheme: KeyScheme): IncrementKey {
  const digest = hash(encoder.encode(canonical));
  const view = new DataView(digest.buffer, digest.byteOffset, digest.byteLength);
  return {
    key: digest.slice(0, scheme.keyBytes),
    shard: view.getUint32(28) % scheme.shards,
  };
}

/** Key of the increment that object `ref` makes to `account` on `day`. */
export function incrementKey(ref: LogObjectRef, account: string, day: string, scheme: KeyScheme): IncrementKey {
  return digestToKey(JSON.stringify(['tally/v1', ref.bucket, ref.key, ref.etag, account, day]), scheme);
}

/** Key of an operator adjustment; the same id always names the same adjustment. */
export function adjustmentKey(account: string, adjustmentId: string, scheme: KeyScheme): IncrementKey {
  return digestToKey(JSON.stringify(['tally/adjustment/v1', account, adjustmentId]), scheme);
}

/** Hex form of a key, for logs and tests. */
export function keyHex(key: Uint8Array): string {
  return Buffer.from(key).toString('hex');
}
