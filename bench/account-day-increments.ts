/**
 * The usage the cost benches start from: `objects` log objects per account-day, each
 * applied as ingest applies an increment (one conditional UpdateItem; the day attribute
 * rides on every update), 3 requests and 3000 bytes each.
 */
import type { UsageStore } from '../src/domain/counters/usage-store';
import { incrementKey, type KeyScheme } from '../src/domain/counters/idempotency-key';

/** Applies the increments; answers how many. */
export async function applyAccountDayIncrements(store: UsageStore, keyScheme: KeyScheme, accounts: readonly string[], days: readonly string[], objects = 8): Promise<number> {
  let increments = 0;
  for (const day of days) {
    for (const account of accounts) {
      for (let object = 0; object < objects; object++) {
        const ref = { bucket: 'logs', key: `cloudfront/E1.${day}-${String(object).padStart(2, '0')}.x.gz`, etag: `e${object}` };
        const { key, shard } = incrementKey(ref, account, day, keyScheme);
        await store.applyIncrement({ account, day, shard, key, metrics: { requests: 3, bytes: 3000 } });
        increments++;
      }
    }
  }
  return increments;
}
