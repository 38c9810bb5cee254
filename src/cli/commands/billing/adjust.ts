import type { AdjustmentStore } from '../../../app/ports';
import { inexactTotalProblem, MAX_ADJUSTMENT_DELTA, MAX_REASON_LENGTH, negativeTotalProblem, validateAdjustment, type Adjustment } from '../../../domain/counters/adjustment';
import { dayOf } from '../../../domain/days';
import { monthOf } from '../../../domain/billing/quota';
import { AdjustmentConflictError, ValidationError } from '../../../domain/errors';
import { metricNames } from '../../../domain/logs/metric-rules';
import { ACTOR_OPTION, actorOf, defineCommand, JSON_OPTION, MAX_ACTOR_LENGTH, type CliContext } from '../../command';
import type { OpenTarget } from '../../open-target';
import type { CliIo } from '../../io';
import { accountId, day, recordText, signedInteger } from '../../values';

interface AdjustOptions {
  account: string;
  day: string;
  metric: string;
  delta: number;
  reason: string;
  id: string;
  actor?: string;
  allowNewMetric?: boolean;
  allowNegative?: boolean;
  force?: boolean;
  dryRun?: boolean;
  json?: boolean;
}

/** `tally adjust`: exit 0 when recorded (now or before), 1 on a conflicting id, 2 when refused. */
export const adjustCommand = defineCommand<AdjustOptions>({
  name: 'adjust',
  summary: 'record an idempotent correction to an account-day metric',
  description:
    'Records an idempotent correction to one metric of one account-day, apart from the measured ' +
    'counters (which never change). The read API adds it into totals and shows it separately. ' +
    'Recording the same --id again changes nothing ("already recorded"); the same --id with ' +
    'another day, metric, delta or reason fails (exit 1). A correction that would take the day\'s ' +
    'billable total of the metric below zero is refused (exit 2, saying what the total would be) unless ' +
    '--allow-negative. A future day, or an account with no ' +
    'measured usage (a mistyped id?), is refused (exit 2) unless --force. The day\'s month is marked ' +
    'for the threshold evaluator, so a level the correction reaches fires even in a past month.',
  options: [
    { flags: '--account <id>', help: 'the account to correct', read: accountId, required: true },
    { flags: '--day <day>', help: 'the UTC day to correct (YYYY-MM-DD)', read: day, required: true },
    { flags: '--metric <name>', help: 'the metric to correct (requests, bytes, ...)', required: true },
    { flags: '--delta <n>', help: `whole number to add; negative to take away (--delta -1200); at most ${MAX_ADJUSTMENT_DELTA.toExponential().replace('e+', 'e')} either way`, read: signedInteger, required: true },
    { flags: '--reason <text>', help: `why, shown with the correction (at most ${MAX_REASON_LENGTH} characters)`, required: true, read: recordText(MAX_REASON_LENGTH) },
    { flags: '--id <id>', help: 'your reference for this correction (ticket, credit note)', required: true },
    { ...ACTOR_OPTION, help: `who records it (default $USER, else the system login name; at most ${MAX_ACTOR_LENGTH} characters)` },
    { flags: '--allow-new-metric', help: 'accept a metric the configured TALLY_METRICS does not name' },
    { flags: '--allow-negative', help: "record it even if it takes the day's billable total below zero" },
    { flags: '--force', help: 'record it for a future day, or for an account with no measured usage' },
    { flags: '--dry-run', help: 'say what would happen; write nothing' },
    JSON_OPTION,
  ],
  target: { settings: ['metrics'] },
  async run({ options, context, target: open }) {
    const adjustment = validateAdjustment({
      account: options.account,
      day: options.day,
      adjustmentId: options.id,
      metric: options.metric,
      delta: options.delta,
      reason: options.reason,
    });
    const today = dayOf(context.now());
    if (adjustment.day > today && options.force !== true) {
      throw new ValidationError(`--day ${adjustment.day} is in the future (today is ${today} UTC); pass --force to record it anyway`);
    }
    const { target, clients } = await open();
    const known = metricNames(target.config.metricRules);
    if (!known.includes(adjustment.metric) && options.allowNewMetric !== true) {
      throw new ValidationError(
        `metric "${adjustment.metric}" is not one the consumer measures here (${known.join(', ')}); ` +
          'check the name, set TALLY_METRICS as the consumer has it, or pass --allow-new-metric',
      );
    }
    const { DynamoUsageReader } = await import('../../aws-adapters');
    const tableName = target.config.tableName;
    if (options.force !== true) {
      const presence = new DynamoUsageReader({ client: clients.dynamodb, tableName, consistentRead: true });
      if (!(await presence.hasMeasuredUsage(adjustment.account))) {
        throw new ValidationError(
          `account "${adjustment.account}" has no measured usage in ${tableName}: check the id, or pass --force to record it anyway`,
        );
      }
    }
    return storeCorrection(adjustment, { ...options, command: 'adjust' }, { context, opened: { target, clients } });
  },
});

/**
 * Records a correction (`tally adjust`, `tally adjustments revert`) after the negative-total
 * guard, then marks its month for the threshold evaluator and asks the Stripe sender to
 * plan the account again. Exit 0 recorded (now or before), 1 on a conflicting id, 2 refused.
 */
export async function storeCorrection(
  adjustment: Adjustment,
  options: { command: string; actor?: string; allowNegative?: boolean; dryRun?: boolean; json?: boolean },
  { context, opened: { target, clients } }: { context: CliContext; opened: OpenTarget },
): Promise<number> {
  const { io, env } = context;
  const { DynamoAdjustmentStore, DynamoMonthRechecks, DynamoUsageReader } = await import('../../aws-adapters');
  const tableName = target.config.tableName;
  const store = new DynamoAdjustmentStore({ client: clients.dynamodb, tableName });
  // A rerun of a recorded id is already in the total: only a new correction is checked. The total is read
  // before the id is looked up: a twin run that records the same id in between is then found (a rerun), and
  // one that records it later is not in the total read, so the twin's own correction is never counted twice.
  // A total past Number.MAX_SAFE_INTEGER is refused whatever the flags; one below zero unless --allow-negative.
  {
    const { billableTotal } = await import('../../../app/billing/billable-total');
    const reader = new DynamoUsageReader({ client: clients.dynamodb, tableName, consistentRead: true });
    const total = await billableTotal(reader, adjustment.account, adjustment.day, adjustment.metric);
    const problem = inexactTotalProblem(adjustment, total) ?? (options.allowNegative === true ? undefined : negativeTotalProblem(adjustment, total));
    if (problem !== undefined && (await store.find(adjustment.account, adjustment.adjustmentId)) === undefined) throw new ValidationError(problem);
  }
  const rechecks = new DynamoMonthRechecks({ client: clients.dynamodb, tableName });
  try {
    const code = await recordAdjustment(store, adjustment, { ...options, actor: actorOf(options.actor, env), tableName }, io);
    // The threshold evaluator may have stopped looking at a past month: mark it (again, on a rerun: a crash may have come between).
    if (options.dryRun !== true) await rechecks.mark(monthOf(adjustment.day), context.now().toISOString());
    // With a Stripe sender (TALLY_STRIPE_QUEUE_URL, or npm start's): it plans the account's closed days again, so an
    // adjustment to a day already sent reaches the meter as that day's new total. Unlinked accounts: nothing happens.
    const stripeQueue = env.TALLY_STRIPE_QUEUE_URL ?? target.stripe?.queueUrl;
    if (options.dryRun !== true && code === 0 && stripeQueue !== undefined && stripeQueue !== '') {
      const { SqsStripeSendQueue } = await import('../../../adapters/sqs/sqs-stripe-send-queue');
      await new SqsStripeSendQueue({ client: clients.sqs, queueUrl: stripeQueue }).enqueue({ account: adjustment.account });
    }
    return code;
  } catch (error) {
    if (!(error instanceof AdjustmentConflictError)) throw error;
    io.err(`tally ${options.command}: ${error.message}\n`);
    return 1;
  }
}

/** Records (or, on a dry run, previews) one adjustment and prints what happened. */
async function recordAdjustment(
  store: AdjustmentStore,
  adjustment: Adjustment,
  options: { actor: string; tableName: string; dryRun?: boolean; json?: boolean },
  io: CliIo,
): Promise<number> {
  const where = `${adjustment.account} ${adjustment.day} ${adjustment.metric} ${adjustment.delta > 0 ? '+' : ''}${adjustment.delta}`;
  if (options.dryRun === true) {
    const outcome = await store.preview(adjustment);
    io.out(
      options.json === true
        ? `${JSON.stringify({ outcome, dryRun: true, adjustment })}\n`
        : outcome === 'recorded'
          ? `dry run: would record adjustment ${adjustment.adjustmentId}: ${where} in ${options.tableName}\n`
          : `dry run: adjustment ${adjustment.adjustmentId} is already recorded with this content: nothing to do\n`,
    );
    return 0;
  }
  const result = await store.record(adjustment, options.actor);
  if (options.json === true) io.out(`${JSON.stringify(result)}\n`);
  else if (result.outcome === 'recorded') {
    io.out(`recorded adjustment ${adjustment.adjustmentId}: ${where} (${result.adjustment.actor}, ${result.adjustment.createdAt})\n`);
  } else {
    io.out(
      `adjustment ${adjustment.adjustmentId} was already recorded (${result.adjustment.actor}, ${result.adjustment.createdAt}): ` +
        'nothing changed, it applies once\n',
    );
  }
  return 0;
}
