/**
 * What closing and exporting cost in DynamoDB: requests by operation and consumed
 * capacity, per account-day closed and per account-day revised, and what the day index
 * and late markers add to ingest. Measured on DynamoDB Local (which reports table
 * capacity; the index's writes follow DynamoDB's documented rule: one write when a
 * shard is created, none when an update leaves its keys unchanged).
 *
 *   npx tsx bench/close-cost.ts [--accounts 200] [--days 3] [--late 20]
 */
import { parseArgs } from 'node:util';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { closeDays } from '../src/app/billing/close-days';
import { silentLog } from '../src/app/log';
import { createClients } from '../src/adapters/clients';
import { readCloserConfig } from '../src/adapters/wiring/handoff-config';
import { createCloserDeps } from '../src/adapters/wiring/handoff-deps';
import { DynamoLateUsageMarks } from '../src/adapters/dynamodb/dynamodb-close-store';
import { usageStoreFor } from '../src/adapters/wiring/ingest-deps';
import { ensureUsageTable } from '../src/adapters/dynamodb/usage-table';
import { addDays } from '../src/domain/days';
import { incrementKey } from '../src/domain/counters/idempotency-key';
import { LOCAL_CREDENTIALS } from '../src/local/local-credentials';
import { applyAccountDayIncrements } from './account-day-increments';
import { localEnvironment, startLocalStack } from '../src/local/stack';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

interface Tally {
  requests: Map<string, number>;
  /** Write units of the table and of the day index (GSI) apart. */
  wcu: number;
  indexWcu: number;
  rcu: number;
}

/** Counts every request of `client` by command, and the capacity each consumed (asking for it). */
function meter(client: DynamoDBClient): { take(): Tally } {
  let tally: Tally = { requests: new Map(), wcu: 0, indexWcu: 0, rcu: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { ReturnConsumedCapacity?: string };
      input.ReturnConsumedCapacity ??= 'INDEXES';
      tally.requests.set(context.commandName!, (tally.requests.get(context.commandName!) ?? 0) + 1);
      try {
        const result = await next(args);
        const consumed = (result.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
        const writes = /Put|Update|Delete|BatchWrite/.test(context.commandName!);
        for (const entry of Array.isArray(consumed) ? consumed : consumed === undefined ? [] : [consumed]) {
          const { CapacityUnits = 0, Table, GlobalSecondaryIndexes } = entry as { CapacityUnits?: number; Table?: { CapacityUnits?: number }; GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }> };
          const index = Object.values(GlobalSecondaryIndexes ?? {}).reduce((sum, g) => sum + (g.CapacityUnits ?? 0), 0);
          const table = Table?.CapacityUnits ?? CapacityUnits - index;
          if (writes) {
            tally.wcu += table;
            tally.indexWcu += index;
          } else tally.rcu += table + index;
        }
        return result;
      } catch (error) {
        const item = (error as { $metadata?: unknown; ConsumedCapacity?: { CapacityUnits?: number } }).ConsumedCapacity;
        if (item?.CapacityUnits !== undefined) tally.wcu += item.CapacityUnits;
        throw error;
      }
    },
    { step: 'initialize', name: 'meterCapacity' },
  );
  return {
    take() {
      const taken = tally;
      tally = { requests: new Map(), wcu: 0, indexWcu: 0, rcu: 0 };
      return taken;
    },
  };
}

function describe(label: string, tally: Tally, per: number, unit: string): string {
  const total = [...tally.requests.values()].reduce((a, b) => a + b, 0);
  const byCommand = [...tally.requests].map(([name, n]) => `${name.replace('Command', '')} ${n}`).join(', ');
  return (
    `${label}: ${total} requests (${byCommand}); ${tally.wcu.toFixed(1)} WCU table + ${tally.indexWcu.toFixed(1)} WCU day index, ${tally.rcu.toFixed(1)} RCU\n` +
    `  per ${unit}: ${(total / per).toFixed(2)} requests, ${(tally.wcu / per).toFixed(2)} WCU table + ${(tally.indexWcu / per).toFixed(2)} WCU index, ${(tally.rcu / per).toFixed(2)} RCU`
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { accounts: { type: 'string', default: '200' }, days: { type: 'string', default: '3' }, late: { type: 'string', default: '20' } } });
  const accounts = Array.from({ length: Number(values.accounts) }, (_, i) => `account-${String(i).padStart(4, '0')}`);
  const days = Array.from({ length: Number(values.days) }, (_, i) => addDays('2026-06-01', i));
  const lateAccounts = accounts.slice(0, Number(values.late));
  const stack = await startLocalStack();
  try {
    const env = { ...localEnvironment(stack.info), TALLY_TABLE: 'close-cost', TALLY_HEARTBEAT_SECONDS: '0', TALLY_EXPORT_BUCKET: stack.info.bucket, TALLY_EXPORT_PREFIX: 'exports/' };
    const config = readCloserConfig(env);
    const clients = createClients(config.tally, LOCAL_CREDENTIALS);
    await ensureUsageTable(clients.dynamodb, config.tally.tableName);
    const metered = meter(clients.dynamodb);
    const store = usageStoreFor(config.tally, clients.dynamodb, { clock: () => new Date('2026-06-01T12:00:00Z') });
    const marks = new DynamoLateUsageMarks({ client: clients.dynamodb, tableName: config.tally.tableName });

    // 8 objects per account-day, as ingest would apply them (the day attribute rides on every update).
    const increments = await applyAccountDayIncrements(store, config.tally.keyScheme, accounts, days);
    const ingest = metered.take();
    console.log(describe(`ingest (${increments} increments, ${accounts.length} accounts x ${days.length} days x 8 objects)`, ingest, increments, 'increment'));
    console.log(`  day index writes per shard item created: ${(ingest.indexWcu / (accounts.length * days.length * config.tally.keyScheme.shards)).toFixed(2)} (at most ${config.tally.keyScheme.shards} shards per account-day)`);

    const closer = createCloserDeps(config, clients, silentLog, { clock: () => new Date('2026-06-10T00:00:00Z') });
    const accountDays = accounts.length * days.length;
    const first = await closeDays(closer);
    const closedDays = first.days.filter((d) => d.written !== undefined).length;
    console.log(describe(`close (${closedDays} days in the 35-day window, ${accountDays} account-days with usage, exports included)`, metered.take(), accountDays, 'account-day closed'));
    await closeDays(closer);
    console.log(describe('close again (nothing due)', metered.take(), 1, 'run'));

    const lateAt = new Date('2026-06-11T00:00:00Z');
    const lateStore = usageStoreFor(config.tally, clients.dynamodb, { clock: () => lateAt });
    for (const account of lateAccounts) {
      const ref = { bucket: 'logs', key: `cloudfront/E1.${days[0]}-23.late.gz`, etag: 'late' };
      const { key, shard } = incrementKey(ref, account, days[0]!, config.tally.keyScheme);
      await lateStore.applyIncrement({ account, day: days[0]!, shard, key, metrics: { requests: 1, bytes: 100 } });
    }
    const lateIngest = metered.take();
    await marks.mark(lateAccounts.map((account) => ({ day: days[0]!, account })), lateAt);
    console.log(describe(`late ingest markers (${lateAccounts.length} late account-days, one object)`, metered.take(), lateAccounts.length, 'late account-day'));
    void lateIngest;
    const revised = createCloserDeps(config, clients, silentLog, { clock: () => new Date('2026-06-11T01:00:00Z') });
    await closeDays(revised);
    console.log(describe(`revise (${lateAccounts.length} account-days of one day, markers cleared, export included)`, metered.take(), lateAccounts.length, 'account-day revised'));
  } finally {
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
