import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { jsonLog } from '../app/log';
import { describeError, StackAlreadyRunningError } from '../domain/errors';
import { setDemoQuota, uploadDemoLogs } from './demo/demo';
import { prepareLocalHandoff } from './pipeline/handoff';
import { IngestProgress, IngestSummary } from './pipeline/ingest-summary';
import { createLocalIngest } from './pipeline/local-ingest';
import { readLocalSettings } from './lifecycle/local-settings';
import { startLocalUsageApi } from './serving/local-usage-api';
import { QueuePoller, queueDepth } from './pipeline/poller';
import { Shutdown } from './lifecycle/shutdown';
import { acquireStackLock, STACK_LOCK_FILE } from './lifecycle/stack-lock';
import { startLocalStack, writeStackInfo } from './stack';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/**
 * How long `npm start` waits for the demo's notifications to be counted before it says
 * that counting goes on (it does: the totals are printed again as they change).
 */
const DEMO_DRAIN_MS = 120_000;

/**
 * `npm start`: the whole pipeline on this machine. DynamoDB Local and the SQS/S3
 * emulator (tables and log objects kept under .tally/data, so a restart keeps both),
 * demo logs for the last 30 days, and a poller feeding the queue to the ingest handler.
 *
 * Order matters for what a failure leaves behind: every setting is checked before
 * anything starts, the `.tally` folder is locked before anything is written there, and
 * each thing started registers its stop with `shutdown`, which runs on any error,
 * signal or crash. `.tally/local.json` exists only while the stack is up.
 */
async function main(shutdown: Shutdown): Promise<void> {
  const root = process.cwd();
  const started = Date.now();
  const settings = readLocalSettings(process.env);
  const lock = acquireStackLock(join(root, STACK_LOCK_FILE));
  shutdown.add(() => lock.release());
  const infoPath = join(root, '.tally', 'local.json');
  // Left by a stack that was killed: it names endpoints nothing listens on any more.
  rmSync(infoPath, { force: true });

  console.log('tally: starting DynamoDB Local and the SQS/S3 emulator...');
  const data = join(root, '.tally', 'data');
  const stack = await startLocalStack({
    dataDir: join(data, 'dynamodb'),
    objectsDir: join(data, 's3'),
    visibilityTimeoutSeconds: 20,
    dynamodbStartSeconds: settings.dynamodbStartSeconds,
  });
  shutdown.add(() => stack.stop());
  const { info, clients } = stack;

  const summary = new IngestSummary();
  const log = jsonLog((line) => process.stderr.write(line), 'warn');
  info.consumer = settings.consumer;
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
  shutdown.add(() => poller.stop());
  const progress = new IngestProgress(summary, () => queueDepth(clients.sqs, info.queueUrl), (text) => console.log(text));
  const api = await startLocalUsageApi({ root, info, log, metrics: settings.metrics });
  shutdown.add(() => api.stop());
  if (api.portNote !== undefined) console.log(api.portNote);
  info.api = api.server.url;
  const handoff = await prepareLocalHandoff(stack, log, (line) => console.log(line));
  // Registered after the stack: its pollers (webhook sender, closer, evaluator) stop before the emulator they poll.
  shutdown.add(() => handoff.stop());
  writeStackInfo(infoPath, info);
  shutdown.add(() => rmSync(infoPath, { force: true }));
  lock.update({ dashboard: `${api.server.url}/` });
  console.log(`tally: stack ready in ${((Date.now() - started) / 1000).toFixed(1)} s; wrote ${infoPath}`);
  console.log(`  dynamodb ${info.endpoints.dynamodb}  sqs/s3 ${info.endpoints.sqs}  table ${info.table}`);
  console.log(`  bucket s3://${info.bucket}/${info.logPrefix}  queue ${info.queueUrl}`);

  if (settings.demo) {
    const demo = await uploadDemoLogs({ ...clients, bucket: info.bucket, logPrefix: info.logPrefix, queueUrl: info.queueUrl, region: info.region });
    console.log(
      `tally: demo wrote ${demo.objects.length} CloudFront log objects (last 30 days: ${demo.formats}) and sent ${demo.notificationsSent} notifications ` +
        `(${demo.notificationsSent - demo.objects.length} objects notified twice, as S3 sometimes does)`,
    );
    summary.expect({ objects: demo.objects.length, notifications: demo.notificationsSent });
    await progress.awaitDrained(DEMO_DRAIN_MS);
    const dlq = await queueDepth(clients.sqs, info.dlqUrl);
    console.log(`  dead-letter queue: ${dlq.visible} message(s)`);
    const quota = await setDemoQuota({ dynamodb: clients.dynamodb, tableName: info.table });
    console.log(
      quota.created
        ? `tally: demo quota ${quota.account} ${quota.metric} ${quota.monthly} a month (npx tally quota list); thresholds are evaluated every minute`
        : `tally: ${quota.account} keeps its ${quota.metric} quota (${quota.monthly ?? 'not in force yet'} a month; the demo sets one only when there is none); thresholds are evaluated every minute`,
    );
  }
  await handoff.start();
  console.log(api.describe());
  console.log('tally: running; put logs under the prefix and send their notifications to the queue. Ctrl-C stops.');

  const ticker = setInterval(() => {
    progress.tick().catch((error: unknown) => console.error(`tally: could not read the ingest queue: ${describeError(error)}`));
  }, 2_000);
  shutdown.add(() => clearInterval(ticker));
}

const shutdown = new Shutdown();
shutdown.exitOnSignalsAndCrashes(() => console.log('tally: stopping...'));
main(shutdown).catch((error: unknown) => {
  // Stopped while starting (Ctrl-C during the demo): what failed failed because it was stopped; the stop is underway.
  if (shutdown.stopAsked) return;
  console.error(error instanceof StackAlreadyRunningError ? `tally: ${error.message}` : `tally: could not start: ${describeError(error)}`);
  void shutdown.exit(1);
});
