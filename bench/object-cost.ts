/**
 * What one log object costs in DynamoDB: requests by operation and consumed capacity,
 * measured on DynamoDB Local with the demo logs (30 days, 5 accounts) through the
 * real ingest flow. Run: npx tsx bench/object-cost.ts
 */
import type { SQSEvent } from 'aws-lambda';
import { logObjectBody } from '../src/local/log-generator';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { ingestBatch } from '../src/app/ingest';
import { lambdaSqsRecord } from '../src/app/sqs-record';
import { silentLog } from '../src/app/log';
import { createClients } from '../src/adapters/clients';
import { readConfig } from '../src/adapters/config';
import { createIngestDeps, usageStoreFor } from '../src/adapters/ingest-deps';
import { normaliseEtag } from '../src/domain/log-object';
import { s3EventBody } from '../src/domain/notifications';
import { DEMO_METRICS, planDemoLogs } from '../src/local/demo';
import { LOCAL_CREDENTIALS } from '../src/local/local-credentials';
import { localEnvironment, startLocalStack } from '../src/local/stack';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

async function main(): Promise<void> {
  const stack = await startLocalStack();
  try {
    const config = readConfig({ ...localEnvironment(stack.info), TALLY_METRICS: DEMO_METRICS, TALLY_HEARTBEAT_SECONDS: '0' });
    const clients = createClients(config, LOCAL_CREDENTIALS);
    const requests = new Map<string, number>();
    clients.dynamodb.middlewareStack.add(
      (next, context) => async (args) => {
        requests.set(context.commandName!, (requests.get(context.commandName!) ?? 0) + 1);
        return next(args);
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
    console.log(`UpdateItem requests per increment: ${((requests.get('UpdateItemCommand') ?? 0) / increments).toFixed(2)}`);
  } finally {
    await stack.stop();
  }
}

void main();
