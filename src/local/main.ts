import { join } from 'node:path';
import { jsonLog } from '../app/log';
import { describeError } from '../domain/errors';
import { DEMO_METRICS, uploadDemoLogs } from './demo';
import { prepareLocalHandoff } from './handoff';
import { IngestSummary } from './ingest-summary';
import { createLocalIngest } from './local-ingest';
import { startLocalUsageApi } from './local-usage-api';
import { QueuePoller, queueDepth, waitForEmptyQueue } from './poller';
import { CONSUMER_SETTINGS, startLocalStack, writeStackInfo } from './stack';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/**
 * `npm start`: the whole pipeline on this machine. DynamoDB Local (kept under
 * .tally/data so a restart keeps the counts) and the SQS/S3 emulator, demo logs for
 * the last 30 days, and a poller feeding the queue to the ingest handler.
 */
async function main(): Promise<void> {
  const root = process.cwd();
  const started = Date.now();
  console.log('tally: starting DynamoDB Local and the SQS/S3 emulator...');
  const stack = await startLocalStack({ dataDir: join(root, '.tally', 'data', 'dynamodb'), visibilityTimeoutSeconds: 20 });
  const { info, clients } = stack;
  const infoPath = join(root, '.tally', 'local.json');

  const summary = new IngestSummary();
  const log = jsonLog((line) => process.stderr.write(line), 'warn');
  info.consumer = {
    ...Object.fromEntries(CONSUMER_SETTINGS.flatMap((name) => (process.env[name] ? [[name, process.env[name]!]] : []))),
    TALLY_METRICS: process.env.TALLY_METRICS ?? DEMO_METRICS,
  };
  const { handler } = createLocalIngest(info, log, info.consumer, (results) => summary.record(results));
  const poller = new QueuePoller({
    sqs: clients.sqs,
    queueUrl: info.queueUrl,
    queueArn: info.queueArn,
    region: info.region,
    handler,
    onError: (error) => console.error(`tally: poller error: ${describeError(error)}`),
  });
  poller.start();
  const api = await startLocalUsageApi({ root, info, log, metrics: process.env.TALLY_METRICS ?? DEMO_METRICS });
  info.api = api.server.url;
  const handoff = await prepareLocalHandoff(stack, log, (line) => console.log(line));
  writeStackInfo(infoPath, info);
  console.log(`tally: stack ready in ${((Date.now() - started) / 1000).toFixed(1)} s; wrote ${infoPath}`);
  console.log(`  dynamodb ${info.endpoints.dynamodb}  sqs/s3 ${info.endpoints.sqs}  table ${info.table}`);
  console.log(`  bucket s3://${info.bucket}/${info.logPrefix}  queue ${info.queueUrl}`);

  if (process.env.TALLY_DEMO !== '0') {
    const demo = await uploadDemoLogs({ ...clients, bucket: info.bucket, logPrefix: info.logPrefix, queueUrl: info.queueUrl, region: info.region });
    console.log(`tally: demo wrote ${demo.objects.length} CloudFront log objects (last 30 days) and sent ${demo.notificationsSent} notifications`);
    await waitForEmptyQueue(clients.sqs, info.queueUrl, 120_000);
    const dlq = await queueDepth(clients.sqs, info.dlqUrl);
    console.log(summary.describe());
    console.log(`  dead-letter queue: ${dlq.visible} message(s)`);
  }
  await handoff.start();
  console.log(api.describe());
  console.log('tally: running; put logs under the prefix and send their notifications to the queue. Ctrl-C stops.');

  let last = summary.notifications;
  const ticker = setInterval(() => {
    const now = summary.notifications;
    if (now !== last) {
      last = now;
      console.log(summary.describe());
    }
  }, 2_000);

  const shutdown = async () => {
    clearInterval(ticker);
    console.log('tally: stopping...');
    await handoff.stop();
    await poller.stop();
    await api.stop();
    await stack.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown());
  process.once('SIGTERM', () => void shutdown());
}

main().catch((error: unknown) => {
  console.error(`tally: could not start: ${describeError(error)}`);
  process.exit(1);
});
