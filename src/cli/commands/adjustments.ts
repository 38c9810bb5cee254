import type { RecordedAdjustment } from '../../domain/adjustment';
import { defineCommand, JSON_OPTION } from '../command';
import { formatTable } from '../io';
import { accountId, checkDayRange, day } from '../values';

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
    const { DynamoAdjustmentStore } = await import('../aws-adapters');
    const store = new DynamoAdjustmentStore({ client: clients.dynamodb, tableName: target.config.tableName });
    const listed = await store.list(options.account, options.from, options.to);
    io.out(
      options.json === true ? `${JSON.stringify({ account: options.account, adjustments: listed })}\n` : describeAdjustments(options.account, listed),
    );
    return 0;
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
