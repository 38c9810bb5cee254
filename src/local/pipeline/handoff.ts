import { CreateQueueCommand, GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { closeDays, type CloseReport } from '../../app/billing/close-days';
import { evaluateThresholds, type ThresholdReport } from '../../app/billing/thresholds';
import { withoutSkippedRecords, type Log } from '../../app/log';
import { sendWebhooks } from '../../app/billing/webhook-sender';
import { createClients } from '../../adapters/clients';
import { HANDOFF_DEFAULTS, readCloserConfig, readWebhookSenderConfig } from '../../adapters/wiring/handoff-config';
import { createCloserDeps, createThresholdDeps, createWebhookSenderClients, createWebhookSenderDeps } from '../../adapters/wiring/handoff-deps';
import { SqsMessageVisibility } from '../../adapters/sqs/sqs-visibility';
import { readStripeConfig, resolveStripeKey, stripeConfigured } from '../../adapters/stripe/stripe-config';
import { createStripeSyncDeps } from '../../adapters/wiring/stripe-deps';
import { sendStripeBatch } from '../../app/billing/stripe-sender';
import { planLinked, planRunningTotals, pullMeterErrors, sendableWindow, sendPending, type StripeSyncDeps } from '../../app/billing/stripe-sync';
import { describeError } from '../../domain/errors';
import { LOCAL_CREDENTIALS } from '../local-credentials';
import { QueuePoller } from './poller';
import { localEnvironment, type LocalStack, type LocalStackInfo } from '../stack';

/** How often `npm start` closes what is due (the deployed schedule is hourly). */
export const LOCAL_CLOSE_INTERVAL_MS = 60_000;

/** Receives before a webhook event moves to the local webhook DLQ. */
const LOCAL_WEBHOOK_MAX_RECEIVE_COUNT = 8;

/** Receives before a Stripe send message moves to the local Stripe DLQ (backoff 2 s doubling to 30 s: about 4 minutes). */
const LOCAL_STRIPE_MAX_RECEIVE_COUNT = 10;

export interface LocalHandoff {
  /**
   * Closes what is due now and evaluates quotas, then both every minute; says what each
   * run did that is worth saying.
   */
  start(): Promise<CloseReport>;
  stop(): Promise<void>;
}

/**
 * The billing handoff of `npm start` (the closer and the threshold evaluator, every
 * minute; hourly and every 5 minutes on AWS): exports under `exportPrefix` in the log bucket,
 * and, with `TALLY_WEBHOOK_URL` and `TALLY_WEBHOOK_SECRET` set, a webhook queue with
 * its DLQ fed to the same sender the Lambda runs. Records both in `info` (so
 * `.tally/local.json` names them for `tally close`).
 */
export async function prepareLocalHandoff(stack: LocalStack, log: Log, say: (line: string) => void): Promise<LocalHandoff> {
  const { info, clients } = stack;
  const env = process.env;
  info.exportPrefix = env.TALLY_EXPORT_PREFIX ?? HANDOFF_DEFAULTS.exportPrefix;
  const webhooks = env.TALLY_WEBHOOK_URL !== undefined && env.TALLY_WEBHOOK_URL !== '';
  let poller: QueuePoller | undefined;
  if (webhooks) {
    const queues = await createWebhookQueues(stack);
    Object.assign(info, { webhookQueueUrl: queues.queueUrl, webhookDlqUrl: queues.dlqUrl });
    const senderConfig = readWebhookSenderConfig({
      TALLY_WEBHOOK_BACKOFF_SECONDS: '2',
      TALLY_WEBHOOK_MAX_BACKOFF_SECONDS: '60',
      ...env,
      ...localEnvironment(info),
    });
    const senderDeps = await createWebhookSenderDeps(senderConfig, createWebhookSenderClients(senderConfig, LOCAL_CREDENTIALS), log);
    poller = new QueuePoller({
      sqs: clients.sqs,
      queueUrl: queues.queueUrl,
      queueArn: queues.queueArn,
      region: info.region,
      // The emulator's queue URL is not the one an ARN implies on AWS: name it.
      handler: (event) => sendWebhooks(event, { ...senderDeps, visibility: new SqsMessageVisibility({ client: clients.sqs, queueUrl: queues.queueUrl }) }),
      onError: (error) => say(`tally: webhook poller error: ${describeError(error)}`),
    });
  }
  // The Stripe sender, in process, when the key and the meters are set (TALLY_STRIPE_API_BASE: a test server).
  let stripePoller: QueuePoller | undefined;
  let stripeSync: StripeSyncDeps | undefined;
  const stripeOn = stripeConfigured(env);
  if (stripeOn) {
    const stripe = readStripeConfig(env);
    const queues = await createQueuePair(stack, 'tally-stripe', LOCAL_STRIPE_MAX_RECEIVE_COUNT);
    info.stripe = { queueUrl: queues.queueUrl, apiBase: stripe.apiBase, meters: JSON.stringify(stripe.meters), window: stripe.window };
    Object.assign(info, { stripeDlqUrl: queues.dlqUrl });
  }
  const closerConfig = readCloserConfig({
    ...env,
    ...localEnvironment(info),
    ...(info.consumer ?? {}),
    TALLY_EXPORT_BUCKET: info.bucket,
    TALLY_EXPORT_PREFIX: info.exportPrefix,
    TALLY_LOG_BUCKET: info.bucket,
    TALLY_LOG_PREFIX: info.logPrefix,
    ...(info.webhookQueueUrl === undefined ? {} : { TALLY_WEBHOOK_QUEUE_URL: info.webhookQueueUrl }),
    ...(info.stripe === undefined ? {} : { TALLY_STRIPE_QUEUE_URL: info.stripe.queueUrl }),
  });
  const handoffClients = createClients(closerConfig.tally, LOCAL_CREDENTIALS);
  // Skipped stored records are said once by saySkipped below, not logged every minute.
  const deps = createCloserDeps(closerConfig, handoffClients, withoutSkippedRecords(log));
  // The same table settings (TALLY_QUOTAS and TALLY_QUOTA_LEVELS among them) and webhook queue as the closer.
  const thresholds = createThresholdDeps({ tally: closerConfig.tally, ...(closerConfig.webhookQueueUrl === undefined ? {} : { webhookQueueUrl: closerConfig.webhookQueueUrl }) }, handoffClients, withoutSkippedRecords(log));
  if (stripeOn && info.stripe !== undefined) {
    const stripe = readStripeConfig({ ...env, TALLY_STRIPE_QUEUE_URL: info.stripe.queueUrl });
    const apiKey = await resolveStripeKey(stripe.key, undefined);
    stripeSync = createStripeSyncDeps(
      { tally: closerConfig.tally, stripe, ...(closerConfig.webhookQueueUrl === undefined ? {} : { webhookQueueUrl: closerConfig.webhookQueueUrl }) },
      handoffClients,
      apiKey,
      log,
    );
    const sync = stripeSync;
    const queueUrl = info.stripe.queueUrl;
    stripePoller = new QueuePoller({
      sqs: clients.sqs,
      queueUrl,
      queueArn: (await clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!,
      region: info.region,
      handler: async (event) => {
        const result = await sendStripeBatch(event, {
          sync,
          visibility: new SqsMessageVisibility({ client: clients.sqs, queueUrl }),
          backoffSeconds: 2,
          maxBackoffSeconds: 30,
          onReport: (outcomes) => {
            for (const line of describeStripeSweep(outcomes)) say(line);
          },
        });
        for (const line of describeStripeBatch(event.Records.length, result.batchItemFailures.length)) say(line);
        return result;
      },
      onError: (error) => say(`tally: stripe poller error: ${describeError(error)}`),
    });
  }
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  /** When the last running sweep started (ms): one every TALLY_STRIPE_RUNNING_MINUTES, as on AWS. */
  let lastRunningSweep = Number.NEGATIVE_INFINITY;

  // A skipped stored record is named once per start, not every minute.
  const skippedSaid = new Set<string>();
  const saySkipped = (skipped: readonly string[]) => {
    for (const reason of skipped.filter((reason) => !skippedSaid.has(reason))) {
      skippedSaid.add(reason);
      say(`tally: ${reason}`);
    }
  };
  const runOnce = async (): Promise<CloseReport> => {
    const report = await closeDays(deps);
    for (const line of describeLocalRun(report, info)) say(line);
    saySkipped(report.skipped);
    const evaluated = await evaluateThresholds(thresholds);
    for (const line of describeThresholdRun(evaluated, webhooks)) say(line);
    saySkipped(evaluated.skipped);
    if (stripeSync !== undefined) {
      // Adjustments made to closed days since their last event become events of their own; what the
      // queue could not finish (Stripe was down longer than its receives) is sent again each minute.
      // Two attempts each: with Stripe down, the sweep must not hold the closer's minute.
      const at = (stripeSync.clock ?? (() => new Date()))();
      await planLinked(stripeSync, sendableWindow(at, stripeSync.graceHours));
      const interval = (stripeSync.runningMinutes ?? 0) * 60_000;
      if (interval > 0 && at.getTime() - lastRunningSweep >= interval) {
        // Open days' running totals that changed since the last sweep (sent below, with the rest).
        lastRunningSweep = at.getTime();
        for (const link of await stripeSync.store.links()) await planRunningTotals(stripeSync, link);
      }
      const sent = await sendPending({ ...stripeSync, retry: { attempts: 2, baseMs: 500, maxMs: 2_000 } });
      for (const line of describeStripeSweep(sent.outcomes)) say(line);
      // Events Stripe answered 200 and dropped later (its meter error reports), each report said once.
      const meterErrors = await pullMeterErrors(stripeSync);
      if (meterErrors.reports > 0) say(`tally: Stripe dropped ${meterErrors.dropped} meter event(s) after accepting them (its meter error reports): npx tally stripe status`);
    }
    return report;
  };

  return {
    async start() {
      poller?.start();
      stripePoller?.start();
      const first = await runOnce();
      if (!webhooks) say('  webhooks off: set TALLY_WEBHOOK_URL and TALLY_WEBHOOK_SECRET before npm start to send signed events');
      say(
        info.stripe === undefined
          ? '  stripe off: set TALLY_STRIPE_API_KEY and TALLY_STRIPE_METERS (and TALLY_STRIPE_API_BASE for a test server) to send closed days to Stripe meters'
          : `  stripe on: closed days of linked accounts go to ${info.stripe.apiBase}, one event per UTC ${info.stripe.window ?? 'day'} (TALLY_STRIPE_WINDOW) (link with npx tally stripe link --account A --customer cus_...)`,
      );
      timer = setInterval(() => {
        running = runOnce().catch((error: unknown) => say(`tally: closer error: ${describeError(error)}`));
      }, LOCAL_CLOSE_INTERVAL_MS);
      timer.unref();
      return first;
    },
    async stop() {
      if (timer !== undefined) clearInterval(timer);
      await running;
      await poller?.stop();
      await stripePoller?.stop();
    },
  };
}

/** A queue and its DLQ for an in-process consumer (visibility 30 s). */
async function createQueuePair(stack: LocalStack, name: string, maxReceiveCount: number): Promise<{ queueUrl: string; dlqUrl: string }> {
  const { sqs } = stack.clients;
  const dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq`, Attributes: { MessageRetentionPeriod: '1209600' } }))).QueueUrl!;
  const dlqArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
  const queueUrl = (
    await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '30', RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount }) } }))
  ).QueueUrl!;
  return { queueUrl, dlqUrl };
}

/** What `npm start` prints after the sender handled a batch: nothing when all went through quietly. */
function describeStripeBatch(messages: number, failures: number): string[] {
  return failures === 0 ? [] : [`tally: stripe: ${failures} of ${messages} message(s) left work (Stripe busy or down); they come back`];
}

/** What the minute's sweep of pending Stripe records did. */
function describeStripeSweep(outcomes: readonly { account: string; metric: string; day: string; hour?: number; revision: number; value: number; outcome: string }[]): string[] {
  return outcomes
    .filter((o) => o.outcome !== 'superseded')
    .map((o) => `tally: stripe ${o.outcome}: ${o.account} ${o.metric} ${o.day}${o.hour === undefined ? '' : ` ${String(o.hour).padStart(2, '0')}:00 UTC`} revision ${o.revision} = ${o.value}`);
}

async function createWebhookQueues(stack: LocalStack): Promise<{ queueUrl: string; queueArn: string; dlqUrl: string }> {
  const { sqs } = stack.clients;
  const arnOf = async (url: string) => (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
  const dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'tally-webhooks-dlq', Attributes: { MessageRetentionPeriod: '1209600' } }))).QueueUrl!;
  const queueUrl = (
    await sqs.send(
      new CreateQueueCommand({
        QueueName: 'tally-webhooks',
        Attributes: { VisibilityTimeout: '30', RedrivePolicy: JSON.stringify({ deadLetterTargetArn: await arnOf(dlqUrl), maxReceiveCount: LOCAL_WEBHOOK_MAX_RECEIVE_COUNT }) },
      }),
    )
  ).QueueUrl!;
  return { queueUrl, queueArn: await arnOf(queueUrl), dlqUrl };
}

/** What `npm start` prints after a closer run: closed days, revisions, nothing when nothing happened. */
export function describeLocalRun(report: CloseReport, info: Pick<LocalStackInfo, 'bucket' | 'exportPrefix'>): string[] {
  const closed = report.days.filter((day) => day.written?.some((w) => w.revision === 1));
  const revised = report.days.flatMap((day) => (day.written ?? []).filter((w) => w.revision > 1).map((w) => ({ day: day.day, ...w })));
  const lines: string[] = [];
  if (closed.length > 0) {
    const first = closed[0]!.day;
    const last = closed[closed.length - 1]!.day;
    const accountDays = closed.reduce((sum, day) => sum + (day.written?.find((w) => w.revision === 1)?.accounts ?? 0), 0);
    lines.push(
      `tally: closed ${closed.length} day(s) ${first === last ? first : `${first}..${last}`} (${accountDays} account-day snapshot(s)); exports s3://${info.bucket}/${info.exportPrefix}day=<day>/revision=<n>/usage.parquet (and .csv)`,
    );
  }
  for (const revision of revised) {
    lines.push(`tally: late usage on closed day ${revision.day}: revision ${revision.revision} for ${revision.accounts} account(s), exported to s3://${info.bucket}/${info.exportPrefix}day=${revision.day}/revision=${revision.revision}/`);
  }
  for (const failed of report.days.filter((day) => day.error !== undefined)) lines.push(`tally: closing ${failed.day} failed (the next run resumes it): ${failed.error}`);
  return lines;
}

/** What `npm start` prints after a threshold run: each level crossed, nothing when none. */
export function describeThresholdRun(report: ThresholdReport, webhooks: boolean): string[] {
  const lines = report.crossed.map(
    (c) =>
      `tally: usage.threshold ${c.account} ${c.metric} ${c.month}: ${c.level}% reached (${c.used} of ${c.allowance})${webhooks ? '; event queued' : '; recorded (webhooks off), shown in the dashboard'}`,
  );
  if (report.failed > 0) lines.push(`tally: ${report.failed} threshold evaluation(s) failed; the next run retries them`);
  return lines;
}
