/**
 * What one log object costs in DynamoDB: requests by operation and consumed capacity,
 * measured on DynamoDB Local with the demo logs (30 days, 5 accounts) through the
 * real ingest flow. Run: npx tsx bench/object-cost.ts
 */
import type { SQSEvent } from 'aws-lambda';
import { logObjectBody } from '../src/local/demo/log-generator';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import type { ConsumedCapacity } from '@aws-sdk/client-dynamodb';
import { ingestBatch } from '../src/app/ingest/ingest';
import { lambdaSqsRecord } from '../src/app/ingest/sqs-record';
import { silentLog } from '../src/app/log';
import { createClients } from '../src/adapters/clients';
import { readConfig } from '../src/adapters/config';
import { createIngestDeps, usageStoreFor } from '../src/adapters/wiring/ingest-deps';
import { normaliseEtag } from '../src/domain/counters/log-object';
import { s3EventBody } from '../src/domain/counters/notifications';
import { DEMO_METRICS, planDemoLogs } from '../src/local/demo/demo';
import { LOCAL_CREDENTIALS } from '../src/local/local-credentials';
import { localEnvironment, startLocalStack } from '../src/local/stack';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

async function main(): Promise<void> {
  const stack = await startLocalStack();
  try {
    const config = readConfig({ ...localEnvironment(stack.info), TALLY_METRICS: DEMO_METRICS, TALLY_HEARTBEAT_SECONDS: '0' });
    const clients = createClients(config, LOCAL_CREDENTIALS);
    const requests = new Map<string, number>();
    // Capacity by command, the table apart from its indexes: the store asks for TOTAL, the bench for the breakdown.
    const capacity = new Map<string, { table: number; indexes: number }>();
    clients.dynamodb.middlewareStack.add(
      (next, context) => async (args) => {
        const name = context.commandName!;
        requests.set(name, (requests.get(name) ?? 0) + 1);
        const input = args.input as { ReturnConsumedCapacity?: string };
        if (input.ReturnConsumedCapacity === 'TOTAL') input.ReturnConsumedCapacity = 'INDEXES';
        const result = await next(args);
        const consumed = (result.output as { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] }).ConsumedCapacity;
        for (const entry of Array.isArray(consumed) ? consumed : consumed === undefined ? [] : [consumed]) {
          const sum = capacity.get(name) ?? { table: 0, indexes: 0 };
          sum.table += entry.Table?.CapacityUnits ?? entry.CapacityUnits ?? 0;
          sum.indexes += Object.values(entry.GlobalSecondaryIndexes ?? {}).reduce((a, index) => a + (index.CapacityUnits ?? 0), 0);
          capacity.set(name, sum);
        }
        return result;
      },
      { step: 'initialize', name: 'countRequests' },
    );
    const wcu = { increment: 0, tombstone: 0, ledger: 0, increments: 0 };
    const deps = createIngestDeps(config, clients, silentLog);
    const store = usageStoreFor(config, clients.dynamodb, {
      onCapacity: (operation, units) => {
        wcu[operation] += units;
        if (operation === 'increment') wcu.increments++;
      },
    });
    const logs = planDemoLogs(new Date(), stack.info.logPrefix);
    const records: SQSEvent['Records'] = [];
    for (const [i, log] of logs.entries()) {
      const put = await stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.info.bucket, Key: log.key, Body: logObjectBody(log.text, log.format) }));
      const ref = { bucket: stack.info.bucket, key: log.key, etag: normaliseEtag(put.ETag ?? '') };
      records.push(lambdaSqsRecord({ messageId: `m${i}`, body: s3EventBody([ref]) }, stack.info.queueArn, stack.info.region));
    }
    const response = await ingestBatch({ Records: records }, { ...deps, store });
    const increments = response.results.flatMap((r) => r.objects).reduce((sum, o) => sum + o.increments, 0);
    const objects = logs.length;
    const total = [...requests.values()].reduce((a, b) => a + b, 0);
    console.log(`objects ${objects}, increments ${increments} (${(increments / objects).toFixed(2)} account-days per object)`);
    console.log(`DynamoDB requests: ${JSON.stringify(Object.fromEntries(requests))} = ${total} (${(total / objects).toFixed(2)} per object)`);
    console.log(`WCU: increments ${wcu.increment} over ${wcu.increments} writes (${(wcu.increment / wcu.increments).toFixed(2)} per increment), ledger ${wcu.ledger} (${(wcu.ledger / objects).toFixed(2)} per object)`);
    const updates = capacity.get('UpdateItemCommand') ?? { table: 0, indexes: 0 };
    const ledger = ['PutItemCommand', 'BatchWriteItemCommand'].map((name) => capacity.get(name) ?? { table: 0, indexes: 0 });
    console.log(
      `UpdateItem WCU per increment: table ${(updates.table / wcu.increments).toFixed(3)} + indexes ${(updates.indexes / wcu.increments).toFixed(3)}; ` +
        `ledger writes (PutItem + BatchWriteItem, tombstones included) per object: table ${(ledger.reduce((a, c) => a + c.table, 0) / objects).toFixed(3)} + indexes ${(ledger.reduce((a, c) => a + c.indexes, 0) / objects).toFixed(3)}`,
    );
    console.log(`UpdateItem requests per increment: ${((requests.get('UpdateItemCommand') ?? 0) / increments).toFixed(2)}`);
  } finally {
    await stack.stop();
  }
}

void main();
