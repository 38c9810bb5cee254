import { ADJUSTMENT_ID_RULE, isValidAdjustmentId, MAX_REASON_LENGTH, revertOf, type RecordedAdjustment } from '../../../domain/counters/adjustment';
import { ValidationError } from '../../../domain/errors';
import { printable } from '../../../domain/printable';
import { ACTOR_OPTION, defineCommand, JSON_OPTION, type CommandGroup } from '../../command';
import { formatTable } from '../../io';
import { accountId, checkDayRange, day, recordText } from '../../values';
import { storeCorrection } from './adjust';

/** `tally adjustments`: lists an account's adjustments. */
export const adjustmentsCommand = defineCommand<{ account: string; from?: string; to?: string; json?: boolean }>({
  name: 'adjustments',
  summary: "list an account's adjustments",
  description: 'Lists the adjustments of an account (all days unless --from/--to), oldest day first, with a net total per metric.',
  options: [
    { flags: '--account <id>', help: 'the account', read: accountId, required: true },
    { flags: '--from <day>', help: 'first day (default: the first)', read: day },
    { flags: '--to <day>', help: 'last day, included (default: the last)', read: day },
    JSON_OPTION,
  ],
  target: { settings: [] },
  check: checkDayRange,
  async run({ options, context: { io }, target: open }) {
    const { target, clients } = await open();
    const { DynamoAdjustmentStore } = await import('../../aws-adapters');
    const store = new DynamoAdjustmentStore({ client: clients.dynamodb, tableName: target.config.tableName });
    const listed = await store.list(options.account, options.from, options.to);
    io.out(
      options.json === true ? `${JSON.stringify({ account: options.account, adjustments: listed })}\n` : describeAdjustments(options.account, listed),
    );
    return 0;
  },
});

/** `tally adjustments revert`: a subcommand under the listing command of the same word. */
export const ADJUSTMENTS_GROUP: CommandGroup = {
  name: 'adjustments',
  summary: "list an account's adjustments; revert one",
  description: 'Lists adjustments (tally adjustments --account A) and takes one back (tally adjustments revert ID --account A).',
};

interface RevertOptions {
  account: string;
  reason?: string;
  actor?: string;
  allowNegative?: boolean;
  dryRun?: boolean;
  json?: boolean;
}

/** `tally adjustments revert ID`: exit 0 reverted (now or before), 1 on a conflicting id, 2 refused or unknown. */
export const adjustmentsRevertCommand = defineCommand<RevertOptions>({
  name: 'revert',
  group: ADJUSTMENTS_GROUP,
  summary: 'take an adjustment back with one compensating adjustment, once',
  description:
    'Records the compensating adjustment of adjustment ID of --account: same day and metric, the opposite ' +
    'delta, id revert:ID, recorded as a revert of ID. Its id is derived from ID, so running it again, or ' +
    'after an answer was lost, finds it recorded and changes nothing (exit 0): an adjustment is reverted at ' +
    'most once. A revert cannot be reverted (record a new correction). Like tally adjust, it is refused ' +
    "(exit 2) when it would take the day's billable total below zero, unless --allow-negative.",
  arguments: [{ name: '<id>', help: 'the id of the adjustment to take back' }],
  options: [
    { flags: '--account <id>', help: 'the account the adjustment belongs to', read: accountId, required: true },
    { flags: '--reason <text>', help: 'why, added to the revert\'s reason ("revert of ID: ...")', read: recordText(MAX_REASON_LENGTH) },
    ACTOR_OPTION,
    { flags: '--allow-negative', help: "record it even if it takes the day's billable total below zero" },
    { flags: '--dry-run', help: 'say what would happen; write nothing' },
    JSON_OPTION,
  ],
  target: { settings: [] },
  async run({ options, args, context, target: open }) {
    const id = args[0] ?? '';
    if (!isValidAdjustmentId(id)) throw new ValidationError(`invalid id "${printable(id, 140)}": ${ADJUSTMENT_ID_RULE}`);
    const opened = await open();
    const { DynamoAdjustmentStore } = await import('../../aws-adapters');
    const store = new DynamoAdjustmentStore({ client: opened.clients.dynamodb, tableName: opened.target.config.tableName });
    const original = await store.find(options.account, id);
    if (original === undefined) {
      throw new ValidationError(`no adjustment "${id}" for account ${options.account}: tally adjustments --account ${options.account} lists them`);
    }
    const revert = revertOf(original, options.reason);
    const existing = await store.find(options.account, revert.adjustmentId);
    if (existing !== undefined) {
      // Reverted before (this run repeated, or its answer lost): whatever reason was given then, it holds.
      context.io.out(
        options.json === true
          ? `${JSON.stringify({ outcome: 'already-recorded', adjustment: existing })}\n`
          : `${id} was already reverted by ${existing.adjustmentId} (${existing.actor}, ${existing.createdAt}): nothing changed, it applies once\n`,
      );
      return 0;
    }
    return storeCorrection(revert, { ...options, command: 'adjustments revert' }, { context, opened });
  },
});

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
