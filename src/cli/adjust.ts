import { parseArgs } from 'node:util';
import { DynamoAdjustmentStore } from '../adapters/dynamodb-adjustments';
import { ACCOUNT_ID_RULE, isValidAccountId } from '../domain/account-id';
import { validateAdjustment, type RecordedAdjustment } from '../domain/adjustment';
import { AdjustmentConflictError, ValidationError } from '../domain/errors';
import { metricNames } from '../domain/metric-rules';
import { dayFlag, withUsageErrors } from './flags';
import { formatTable, type CliIo } from './io';
import { closeClients, INGEST_OPTIONS, openTarget, TARGET_OPTIONS, TARGET_USAGE } from './target-options';

type Env = Readonly<Record<string, string | undefined>>;

export const ADJUST_USAGE = `usage: tally adjust --account A --day DAY --metric M --delta N --reason TEXT --id ID
                    [--actor NAME] [--allow-new-metric] [--dry-run] [--json] [target flags]

Records an idempotent correction to one metric of one account-day, apart from the
measured counters (which never change). The read API adds it into totals and shows
it separately. Recording the same --id again changes nothing ("already recorded");
the same --id with another day, metric, delta or reason fails. Exit 1 on a conflict.

  --delta N            whole number to add; negative to take away (--delta -1200)
  --id ID              your reference for this correction (ticket, credit note)
  --actor NAME         who records it (default $USER)
  --allow-new-metric   accept a metric the configured TALLY_METRICS does not name
  --dry-run            say what would happen; write nothing

${TARGET_USAGE}`;

export const ADJUSTMENTS_USAGE = `usage: tally adjustments --account A [--from DAY] [--to DAY] [--json] [target flags]

Lists the adjustments of an account (all days unless --from/--to), oldest day first.

${TARGET_USAGE}`;

/** `--delta -1200` reads as a value, not as an unknown option. */
function joinNegativeValues(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const next = argv[i + 1];
    if (arg === '--delta' && next !== undefined && /^-\d/.test(next)) {
      out.push(`--delta=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

function actorOf(flag: string | undefined, env: Env): string {
  return flag ?? env.USER ?? env.USERNAME ?? env.LOGNAME ?? 'unknown';
}

/** `tally adjust`: exit 0 when recorded (now or before), 1 on a conflicting id. */
export function runAdjust(argv: readonly string[], io: CliIo, env: Env = process.env, cwd = process.cwd()): Promise<number> {
  return withUsageErrors('adjust', ADJUST_USAGE, io, () => adjustCommand(argv, io, env, cwd));
}

async function adjustCommand(argv: readonly string[], io: CliIo, env: Env, cwd: string): Promise<number> {
  const { values } = parseArgs({
    args: joinNegativeValues(argv),
    options: {
      ...TARGET_OPTIONS,
      ...INGEST_OPTIONS,
      account: { type: 'string' },
      day: { type: 'string' },
      metric: { type: 'string' },
      delta: { type: 'string' },
      reason: { type: 'string' },
      id: { type: 'string' },
      actor: { type: 'string' },
      'allow-new-metric': { type: 'boolean', default: false },
      'dry-run': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.out(`${ADJUST_USAGE}\n`);
    return 0;
  }
  for (const name of ['account', 'metric', 'delta', 'reason', 'id'] as const) {
    if (values[name] === undefined) throw new ValidationError(`--${name} is required`);
  }
  if (!/^[+-]?\d+$/.test(values.delta!)) throw new ValidationError(`--delta must be a whole number, got "${values.delta}"`);
  const adjustment = validateAdjustment({
    account: values.account!,
    day: dayFlag(values.day, '--day'),
    adjustmentId: values.id!,
    metric: values.metric!,
    delta: Number(values.delta),
    reason: values.reason!,
  });

  const { target, clients } = openTarget(values, env, cwd);
  try {
    const known = metricNames(target.config.metricRules);
    if (!known.includes(adjustment.metric) && !values['allow-new-metric']) {
      throw new ValidationError(
        `metric "${adjustment.metric}" is not one the consumer measures here (${known.join(', ')}); ` +
          'check the name, set TALLY_METRICS as the consumer has it, or pass --allow-new-metric',
      );
    }
    const store = new DynamoAdjustmentStore({ client: clients.dynamodb, tableName: target.config.tableName });
    const where = `${adjustment.account} ${adjustment.day} ${adjustment.metric} ${adjustment.delta > 0 ? '+' : ''}${adjustment.delta}`;
    try {
      if (values['dry-run']) {
        const outcome = await store.preview(adjustment);
        io.out(
          values.json
            ? `${JSON.stringify({ outcome, dryRun: true, adjustment })}\n`
            : outcome === 'recorded'
              ? `dry run: would record adjustment ${adjustment.adjustmentId}: ${where} in ${target.config.tableName}\n`
              : `dry run: adjustment ${adjustment.adjustmentId} is already recorded with this content: nothing to do\n`,
        );
        return 0;
      }
      const result = await store.record(adjustment, actorOf(values.actor, env));
      if (values.json) io.out(`${JSON.stringify(result)}\n`);
      else if (result.outcome === 'recorded') io.out(`recorded adjustment ${adjustment.adjustmentId}: ${where} (${result.adjustment.actor}, ${result.adjustment.createdAt})\n`);
      else {
        io.out(
          `adjustment ${adjustment.adjustmentId} was already recorded (${result.adjustment.actor}, ${result.adjustment.createdAt}): ` +
            'nothing changed, it applies once\n',
        );
      }
      return 0;
    } catch (error) {
      if (!(error instanceof AdjustmentConflictError)) throw error;
      io.err(`tally adjust: ${error.message}\n`);
      return 1;
    }
  } finally {
    closeClients(clients);
  }
}

/** `tally adjustments`: lists an account's adjustments. */
export function runAdjustments(argv: readonly string[], io: CliIo, env: Env = process.env, cwd = process.cwd()): Promise<number> {
  return withUsageErrors('adjustments', ADJUSTMENTS_USAGE, io, () => adjustmentsCommand(argv, io, env, cwd));
}

async function adjustmentsCommand(argv: readonly string[], io: CliIo, env: Env, cwd: string): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      ...TARGET_OPTIONS,
      account: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.out(`${ADJUSTMENTS_USAGE}\n`);
    return 0;
  }
  if (values.account === undefined) throw new ValidationError('--account is required');
  if (!isValidAccountId(values.account)) throw new ValidationError(`--account: ${ACCOUNT_ID_RULE}`);
  const from = values.from === undefined ? undefined : dayFlag(values.from, '--from');
  const to = values.to === undefined ? undefined : dayFlag(values.to, '--to');

  const { target, clients } = openTarget(values, env, cwd);
  try {
    const store = new DynamoAdjustmentStore({ client: clients.dynamodb, tableName: target.config.tableName });
    const listed = await store.list(values.account, from, to);
    if (values.json) {
      io.out(`${JSON.stringify({ account: values.account, adjustments: listed })}\n`);
      return 0;
    }
    io.out(describeAdjustments(values.account, listed));
    return 0;
  } finally {
    closeClients(clients);
  }
}

/** The human listing of adjustments, with a net total per metric. */
export function describeAdjustments(account: string, adjustments: readonly RecordedAdjustment[]): string {
  if (adjustments.length === 0) return `no adjustments for ${account}\n`;
  const net = new Map<string, number>();
  for (const adjustment of adjustments) net.set(adjustment.metric, (net.get(adjustment.metric) ?? 0) + adjustment.delta);
  return (
    formatTable(
      ['day', 'id', 'metric', 'delta', 'reason', 'by', 'recorded'],
      adjustments.map((a) => [a.day, a.adjustmentId, a.metric, a.delta > 0 ? `+${a.delta}` : String(a.delta), a.reason, a.actor, a.createdAt]),
    ) +
    `\n${adjustments.length} adjustment(s); net ${[...net].map(([metric, value]) => `${metric} ${value > 0 ? '+' : ''}${value}`).join(', ')}\n`
  );
}
