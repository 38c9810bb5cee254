/**
 * What exactness costs on the hottest shard: increments to ONE account-day shard,
 * through the real store on DynamoDB Local with the deployed defaults (cap 48), the
 * store's clock driven by the bench. Every dropped key is tombstoned first, so these
 * runs count every request and WCU that exactness takes:
 *
 * - `plain`: increments back to back, no proof asked (the first build's path).
 * - `first receives`: each increment is a first receive proving back to its object's
 *   creation (S3 event time minus 5 minutes), 2,000 objects an hour on the shard.
 * - `retries`: every tenth object of that run comes back 30 minutes later (a visibility
 *   timeout), half of them applied by an attempt that died unseen, half never applied;
 *   their keys left the history long ago, so each proof reads the shard's tombstones.
 *
 * Prints requests, WCU, and tombstone reads and their RCU, per increment. Run: npx tsx bench/hot-shard-cost.ts
 */
import { readConfig } from '../src/adapters/config';
import { createClients } from '../src/adapters/clients';
import { usageStoreFor } from '../src/adapters/wiring/ingest-deps';
import { incrementKey } from '../src/domain/counters/idempotency-key';
import { DROPPED_PREFIX } from '../src/domain/counters/keys';
import type { Increment } from '../src/domain/counters/usage-store';
import { LOCAL_CREDENTIALS } from '../src/local/local-credentials';
import { localEnvironment, startLocalStack, type LocalStackInfo } from '../src/local/stack';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const DAY = '2026-11-21';
const MARGIN_MS = 300_000;

/** A store on its own client that counts requests by operation and capacity, on a clock the caller moves. */
function meteredStore(info: LocalStackInfo, clock: { now: number }) {
  const config = readConfig(localEnvironment(info));
  const clients = createClients(config, LOCAL_CREDENTIALS);
  const meter = { requests: 0, reads: 0, rcu: 0, wcu: 0 };
  clients.dynamodb.middlewareStack.add(
    (next, context) => async (args) => {
      meter.requests += 1;
      const input = args.input as { Key?: { PK?: { S?: string } }; ExpressionAttributeValues?: { ':pk'?: { S?: string } }; ReturnConsumedCapacity?: string };
      const partition = input.Key?.PK?.S ?? input.ExpressionAttributeValues?.[':pk']?.S ?? '';
      // A tombstone read: the shard's batches (Query) or an earlier version's one-key item (GetItem).
      const tombstoneRead = partition.startsWith(DROPPED_PREFIX) && (context.commandName === 'QueryCommand' || context.commandName === 'GetItemCommand');
      if (!tombstoneRead) return next(args);
      meter.reads += 1;
      input.ReturnConsumedCapacity = 'TOTAL';
      const result = await next(args);
      meter.rcu += (result.output as { ConsumedCapacity?: { CapacityUnits?: number } }).ConsumedCapacity?.CapacityUnits ?? 0;
      return result;
    },
    { step: 'initialize', name: 'count' },
  );
  const store = usageStoreFor(config, clients.dynamodb, { onCapacity: (_, units) => (meter.wcu += units), clock: () => new Date(clock.now) });
  return { store, meter, config, close: () => clients.dynamodb.destroy() };
}

/** Objects whose one increment lands on shard 0 of `account`. */
function shardZeroIncrements(account: string, count: number, keyScheme: Parameters<typeof incrementKey>[3], run: string): Increment[] {
  const found: Increment[] = [];
  for (let i = 0; found.length < count; i++) {
    const { key, shard } = incrementKey({ bucket: 'b', key: `${run}/o${i}`, etag: 'e' }, account, DAY, keyScheme);
    if (shard === 0) found.push({ account, day: DAY, shard, key, metrics: { requests: 1, bytes: 1000 } });
  }
  return found;
}

function line(label: string, n: number, meter: { requests: number; reads: number; rcu: number; wcu: number }, note = ''): string {
  return `${label.padEnd(44)} ${String(n).padStart(5)} increments: ${(meter.requests / n).toFixed(3)} requests, ${(meter.wcu / n).toFixed(2)} WCU, ${(meter.reads / n).toFixed(3)} tombstone reads (${(meter.rcu / n).toFixed(2)} RCU) per increment${note}`;
}

async function main(): Promise<void> {
  const stack = await startLocalStack();
  const out: string[] = [];
  try {
    for (const increments of [192, 400, 2000]) {
      const clock = { now: Date.parse(`${DAY}T08:00:00Z`) };
      const { store, meter, config, close } = meteredStore(stack.info, clock);
      const work = shardZeroIncrements(`plain${increments}`, increments, config.keyScheme, 'plain');
      for (const increment of work) await store.applyIncrement(increment);
      out.push(line('plain (no proof asked)', increments, meter));
      close();
    }

    // 2,000 objects an hour on one shard, each a first receive 20 s after S3 created it.
    const clock = { now: Date.parse(`${DAY}T08:00:00Z`) };
    const first = meteredStore(stack.info, clock);
    const account = 'hotproof';
    const work = shardZeroIncrements(account, 2000, first.config.keyScheme, 'proof');
    const createdAt: number[] = [];
    const unseen = new Set<number>();
    for (const [i, increment] of work.entries()) {
      clock.now += 1800;
      createdAt[i] = clock.now - 20_000;
      // Every twentieth object's first receive dies unseen right after its write; every other tenth never writes.
      if (i % 10 === 5) continue;
      if (i % 20 === 0) unseen.add(i);
      await first.store.applyIncrement(increment, { since: new Date(createdAt[i]! - MARGIN_MS) });
    }
    const firstCount = work.length - work.filter((_, i) => i % 10 === 5).length;
    out.push(line('first receives, proof to the S3 event time', firstCount, first.meter, ', 2,000 objects/hour'));

    // Retries of every tenth object, each 30 minutes after its first receive, from a new sandbox.
    const retries = meteredStore(stack.info, clock);
    let applied = 0;
    let duplicates = 0;
    const retried = work.map((_, i) => i).filter((i) => i % 10 === 5 || unseen.has(i));
    clock.now += 1_800_000;
    for (const i of retried) {
      const outcome = await retries.store.applyIncrement(work[i]!, { since: new Date(createdAt[i]! - MARGIN_MS) });
      if (outcome === 'applied') applied++;
      if (outcome === 'duplicate') duplicates++;
    }
    out.push(line('retries 30 min later, keys long dropped', retried.length, retries.meter, ` (${applied} applied, ${duplicates} found by their tombstones)`));
    const exact = applied === work.filter((_, i) => i % 10 === 5).length && duplicates === unseen.size;
    out.push(`retries exact: ${exact ? 'yes' : 'NO'}`);
    const total = { requests: first.meter.requests + retries.meter.requests, reads: first.meter.reads + retries.meter.reads, rcu: first.meter.rcu + retries.meter.rcu, wcu: first.meter.wcu + retries.meter.wcu };
    out.push(line('hot shard, first receives and retries', firstCount + retried.length, total));
    first.close();
    retries.close();
    if (!exact) process.exitCode = 1;
  } finally {
    await stack.stop();
  }
  console.log(out.join('\n'));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
