/**
 * What exactness at volume costs: increments to ONE account-day arriving faster than
 * the retention lets keys go, through the real store on DynamoDB Local, with the
 * deployed defaults (4 shards, cap 48, retention 2400 s, max 480 keys) and with
 * count-based rolling (retention 0, the first build's behaviour) for comparison.
 * Prints requests, WCU per increment and history size. Run: npx tsx bench/hot-shard-cost.ts
 */
import { readConfig } from '../src/adapters/config';
import { createClients } from '../src/adapters/clients';
import { usageStoreFor } from '../src/adapters/ingest-deps';
import { incrementKey } from '../src/domain/idempotency-key';
import { LOCAL_CREDENTIALS } from '../src/local/local-credentials';
import { localEnvironment, startLocalStack } from '../src/local/stack';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

async function main(): Promise<void> {
  const stack = await startLocalStack();
  try {
    for (const [label, retention] of [['count-based rolling (retention 0)', '0'], ['retention 2400 s (default)', '2400']] as const) {
      for (const increments of [192, 400, 2000]) {
        const config = readConfig({ ...localEnvironment(stack.info), TALLY_HISTORY_RETENTION_SECONDS: retention });
        const clients = createClients(config, LOCAL_CREDENTIALS);
        let requests = 0;
        clients.dynamodb.middlewareStack.add((next) => async (args) => ((requests += 1), next(args)), { step: 'initialize', name: 'count' });
        const totals = { wcu: 0, maxKeys: 0, forced: 0 };
        const store = usageStoreFor(config, clients.dynamodb, {
          onCapacity: (_, units) => (totals.wcu += units),
          onHistory: (o) => ((totals.maxKeys = Math.max(totals.maxKeys, o.keys)), (totals.forced += o.forced ? 1 : 0)),
        });
        const account = `hot${retention}x${increments}`;
        for (let i = 0; i < increments; i++) {
          const ref = { bucket: 'b', key: `o${i}`, etag: 'e' };
          const { key, shard } = incrementKey(ref, account, '2026-11-21', config.keyScheme);
          await store.applyIncrement({ account, day: '2026-11-21', shard, key, metrics: { requests: 1, bytes: 1000 } });
        }
        console.log(
          `${label.padEnd(34)} ${String(increments).padStart(5)} increments: ${(requests / increments).toFixed(3)} requests and ` +
            `${(totals.wcu / increments).toFixed(2)} WCU per increment; largest history ${totals.maxKeys} keys; keys dropped early ${totals.forced}`,
        );
        clients.dynamodb.destroy();
      }
    }
  } finally {
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
