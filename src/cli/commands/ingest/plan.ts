import { readMetricRules, readShards } from '../../../adapters/config';
import { CONFIG_LIMITS, historyEntryBytes, planCapacity, type CapacityPlan } from '../../../domain/counters/capacity-plan';
import { addDays, dayOf } from '../../../domain/days';
import { formatShards, type KeyScheme } from '../../../domain/counters/idempotency-key';
import { metricNames } from '../../../domain/logs/metric-rules';
import { defineCommand, JSON_OPTION } from '../../command';
import { finiteNumber } from '../../values';

interface PlanOptions {
  objectsPerAccountDay: number;
  keyBytes?: number;
  shards?: number;
  historyCap?: number;
  accountsPerObject?: number;
  hours?: number;
  accountChars?: number;
  counterDigits?: number;
  metrics?: string;
  json?: boolean;
}

/** 40 minutes: the deployed queue's visibility timeout (30 minutes) and a margin. */
const PLAN_WINDOW_HOURS = 2400 / 3600;

/** `tally plan`: pure arithmetic, no AWS calls; exit 1 when a hard limit is broken. */
export const planCommand = defineCommand<PlanOptions>({
  name: 'plan',
  summary: 'size shards and history cap: item KB, WCU, writes/s, dedup horizon',
  description:
    'Sizes the rolling idempotency history: recommends TALLY_SHARDS and TALLY_HISTORY_CAP so the ' +
    "keys of one account-day's last 40 minutes of objects (or the last H hours) stay in 1 KB items, " +
    'where a redelivery after the queue\'s 30-minute visibility timeout finds them without a read; ' +
    'past that a history tombstones the keys it drops (one 1 WCU item per 16), and counts stay exact. It ' +
    'prints the shard item size, WCU per increment, writes/s per item and the horizon in objects ' +
    'and hours. Warns where a choice breaks a limit (400 KB item, 1,000 WCU/s per partition); ' +
    'exit code 1 when a hard limit is broken. Needs no AWS.',
  options: [
    { flags: '--objects-per-account-day <n>', help: 'log objects with lines for one account on one day', read: finiteNumber, required: true },
    { flags: '--key-bytes <n>', help: 'idempotency key size, 12 or 16 (default 12)', read: finiteNumber },
    { flags: '--shards <n>', help: 'evaluate this shard count instead of recommending one', read: finiteNumber },
    { flags: '--history-cap <n>', help: 'evaluate this history cap instead of recommending one', read: finiteNumber },
    { flags: '--accounts-per-object <n>', help: 'accounts one object has lines for (default 1)', read: finiteNumber },
    { flags: '--hours <n>', help: 'hours of objects the horizon should cover (default 0.67: one visibility timeout and margin)', read: finiteNumber },
    { flags: '--account-chars <n>', help: 'longest account id (default 64, the worst case)', read: finiteNumber },
    { flags: '--counter-digits <n>', help: 'significant digits of the largest counter value, a day total or an hourly sum (default 15, a petabyte: the worst case)', read: finiteNumber },
    { flags: '--metrics <json>', help: 'metric rules as TALLY_METRICS (default: TALLY_METRICS)' },
    JSON_OPTION,
  ],
  async run({ options, context: { io, env, now } }) {
    const optional = (name: string, value: number | undefined) => (value === undefined ? {} : { [name]: value });
    const plan = planCapacity({
      objectsPerAccountDay: options.objectsPerAccountDay,
      ...optional('keyBytes', options.keyBytes),
      ...optional('shards', options.shards),
      ...optional('historyCap', options.historyCap),
      ...optional('accountsPerObject', options.accountsPerObject),
      // Exactness needs no window (every dropped key is tombstoned); the window only buys
      // 1 WCU increments and redeliveries that prove from the history without reading tombstones.
      windowHours: options.hours ?? PLAN_WINDOW_HOURS,
      ...optional('accountIdChars', options.accountChars),
      ...optional('counterDigits', options.counterDigits),
      metricNames: metricNames(readMetricRules(options.metrics ?? env.TALLY_METRICS, options.metrics === undefined ? 'TALLY_METRICS' : '--metrics')),
    });
    const current = readShards(env.TALLY_SHARDS);
    const schedule = shardScheduleLine(current, plan.shards, addDays(dayOf(now()), 2));
    io.out(options.json === true ? `${JSON.stringify({ ...plan, schedule })}\n` : `${describePlan(plan)}${scheduleNote(schedule)}`);
    return plan.breaksLimit ? 1 : 0;
  },
});

/**
 * The `TALLY_SHARDS` value that moves a live table to `shards` from `from` on: the
 * days before keep their count (their keys stay on their shards). Undefined when the
 * current setting already ends at that count or more.
 */
export function shardScheduleLine(current: Pick<KeyScheme, 'shards' | 'schedule'>, shards: number, from: string): string | undefined {
  const last = current.schedule?.at(-1)?.shards ?? current.shards;
  // Fewer shards would save nothing worth a change: a quiet shard costs no writes.
  if (last >= shards) return undefined;
  const kept = (current.schedule ?? []).filter((change) => change.from < from);
  return `TALLY_SHARDS=${formatShards({ shards: current.shards, schedule: [...kept, { from, shards }] })}`;
}

function scheduleNote(line: string | undefined): string {
  return line === undefined
    ? ''
    : `on a live table ${line}  (days before keep their count, so no key moves; deploy it before that day)\n`;
}

const round = (value: number, digits = 1) => Number(value.toFixed(digits)).toLocaleString('en-US');

/** The human form of a plan. */
export function describePlan(plan: CapacityPlan): string {
  const chosen = (what: 'shards' | 'historyCap') => (plan.chosen[what] === 'given' ? 'given' : 'recommended');
  // At the ceiling, more shards are not an option: say so rather than let 64 look like a choice.
  const shardsChosen =
    plan.chosen.shards === 'recommended' && plan.shards >= CONFIG_LIMITS.maxShards
      ? `recommended: ${CONFIG_LIMITS.maxShards} is the ceiling, TALLY_SHARDS allows no more`
      : chosen('shards');
  const perHour = plan.objectsPerAccountDay / 24;
  const lines = [
    `tally plan: ${plan.objectsPerAccountDay} objects per account-day, ${plan.keyBytes}-byte keys, ` +
      `${plan.accountsPerObject} account(s) per object, horizon to cover ${round(plan.windowHours, 2)} h (${plan.objectsInWindow} objects)`,
    '',
    `settings       TALLY_SHARDS=${plan.shards} (${shardsChosen})  TALLY_HISTORY_CAP=${plan.historyCap} (${chosen('historyCap')})  TALLY_KEY_BYTES=${plan.keyBytes}`,
    `               each shard must hold ~${plan.keysNeededPerShard} keys for the window (hash spread, 3 sigma); at most ${plan.maxCapAtOneWcu} fit in 1 KB`,
    `shard item     ${plan.itemBytes} bytes full (${round(plan.itemKB, 2)} KB) = ${plan.fixedBytes} fixed (counters and their 24 hourly sums at ${plan.counterDigits}-digit values) + ${plan.historyCap} × ${historyEntryBytes(plan.keyBytes)} history (key and its minute)`,
    `cost           ${plan.wcuPerIncrement} WCU per increment; ~${plan.wcuPerObject} WCU per object (${plan.accountsPerObject} increment(s) + ledger)`,
    `throughput     max writes/s per item: ${plan.maxWritesPerSecondPerItem} (seed: 1000 KB/s / ${round(plan.itemKB, 2)} KB = ${round(plan.seedWritesPerSecondPerItem, 0)}, ` +
      `but writes are billed per started KB)`,
    `               an account's shards and days share one partition (1,000 WCU/s): replay or backfill one account at most ` +
      `${plan.maxObjectsPerSecondPerAccount} objects/s (--rate); average load ${round(plan.accountWcuPerSecond, 3)} WCU/s`,
    `dedup horizon  ${plan.horizonObjects} increments of an account-day (cap × shards) ≈ ${round(plan.horizonHours)} h of objects at ${round(perHour, 2)}/h: ` +
      (plan.horizonHours >= 24 ? 'the whole account-day' : plan.coversWindow ? `covers the ${round(plan.windowHours, 2)} h window` : 'LESS than the window'),
    `               later redeliveries are caught by the object ledger (finished objects) and attempt records and tombstones (failed ones)`,
  ];
  lines.push('', plan.warnings.length === 0 ? 'no warnings' : plan.warnings.map((warning) => `warning: ${warning}`).join('\n'));
  return `${lines.join('\n')}\n`;
}
