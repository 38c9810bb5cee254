/**
 * What quota checking costs in DynamoDB: requests and consumed capacity of one run of the
 * threshold evaluator, per account with a quota, when crossings fire and when nothing
 * changed, with quotas of their own and with a TALLY_QUOTAS default (which adds the day
 * index reads); and that ingest stays one UpdateItem per increment (the evaluator never
 * runs on that path). Measured on DynamoDB Local, which reports the capacity DynamoDB
 * bills (eventually consistent Queries: 0.5 RCU per started 4 KB read).
 *
 *   npx tsx bench/threshold-cost.ts [--accounts 200] [--days 20]
 */
import { parseArgs } from 'node:util';
import { silentLog } from '../src/app/log';
import { evaluateThresholds } from '../src/app/billing/thresholds';
import { createClients } from '../src/adapters/clients';
import { DynamoQuotaStore } from '../src/adapters/dynamodb/dynamodb-quotas';
import { readThresholdConfig } from '../src/adapters/wiring/handoff-config';
import { createThresholdDeps } from '../src/adapters/wiring/handoff-deps';
import { usageStoreFor } from '../src/adapters/wiring/ingest-deps';
import { ensureUsageTable } from '../src/adapters/dynamodb/usage-table';
import { addDays } from '../src/domain/days';
import { LOCAL_CREDENTIALS } from '../src/local/local-credentials';
import { localEnvironment, startLocalStack } from '../src/local/stack';
import { applyAccountDayIncrements } from './account-day-increments';
import { meterCapacity, totalRequests, type CapacityTotals } from './capacity-meter';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

function describe(label: string, totals: CapacityTotals, per: number, unit: string, ms?: number): string {
  const total = totalRequests(totals);
  const byCommand = Object.entries(totals.requests).map(([name, n]) => `${name.replace('Command', '')} ${n}`).join(', ');
  return (
    `${label}: ${total} requests (${byCommand}); ${totals.readUnits.toFixed(1)} RCU, ${totals.writeUnits.toFixed(1)} WCU${ms === undefined ? '' : `; ${ms} ms on DynamoDB Local`}\n` +
    `  per ${unit}: ${(total / per).toFixed(2)} requests, ${(totals.readUnits / per).toFixed(2)} RCU, ${(totals.writeUnits / per).toFixed(2)} WCU`
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { accounts: { type: 'string', default: '200' }, days: { type: 'string', default: '20' } } });
  const accounts = Array.from({ length: Number(values.accounts) }, (_, i) => `account-${String(i).padStart(4, '0')}`);
  const days = Array.from({ length: Number(values.days) }, (_, i) => addDays('2026-06-01', i));
  const now = new Date(`${days[days.length - 1]}T12:00:00Z`);
  const stack = await startLocalStack();
  try {
    const env = { ...localEnvironment(stack.info), TALLY_TABLE: 'threshold-cost', TALLY_HEARTBEAT_SECONDS: '0' };
    const config = readThresholdConfig(env);
    const clients = createClients(config.tally, LOCAL_CREDENTIALS);
    await ensureUsageTable(clients.dynamodb, config.tally.tableName);
    const meter = meterCapacity(clients.dynamodb);
    const store = usageStoreFor(config.tally, clients.dynamodb, { clock: () => now });

    // 8 objects per account-day (each of the 4 shard items is touched about twice).
    const increments = await applyAccountDayIncrements(store, config.tally.keyScheme, accounts, days);
    console.log(describe(`ingest (${increments} increments; the evaluator adds nothing here)`, meter.reset(), increments, 'increment'));

    // Every account has 24 requests a day: half get an allowance they have used 90% of (80% fires), half one they used 10% of.
    const used = 24 * days.length;
    const quotas = new DynamoQuotaStore({ client: clients.dynamodb, tableName: config.tally.tableName });
    for (const [i, account] of accounts.entries()) await quotas.set({ account, metric: 'requests', period: { from: '2026-06', monthly: Math.ceil(used / (i % 2 === 0 ? 0.9 : 0.1)) }, updatedAt: now.toISOString() });
    meter.reset();

    const deps = createThresholdDeps(config, clients, silentLog, { clock: () => now });
    let started = Date.now();
    const first = await evaluateThresholds(deps);
    console.log(describe(`evaluation, ${accounts.length} accounts with quotas, ${days.length} days of the month, ${first.crossed.length} crossings recorded`, meter.reset(), accounts.length, 'account', Date.now() - started));
    started = Date.now();
    await evaluateThresholds(deps);
    console.log(describe('evaluation again, nothing new (steady state)', meter.reset(), accounts.length, 'account', Date.now() - started));

    const defaults = createThresholdDeps(readThresholdConfig({ ...env, TALLY_QUOTAS: '{"bytes": 100000000}' }), clients, silentLog, { clock: () => now });
    started = Date.now();
    await evaluateThresholds(defaults);
    console.log(describe(`evaluation with a TALLY_QUOTAS default (adds ${days.length} day-index Queries)`, meter.reset(), accounts.length, 'account', Date.now() - started));
  } finally {
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
