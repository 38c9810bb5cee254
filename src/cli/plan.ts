import { parseArgs } from 'node:util';
import { readMetricRules } from '../adapters/config';
import { planCapacity, type CapacityPlan } from '../domain/capacity-plan';
import { ValidationError } from '../domain/errors';
import { metricNames } from '../domain/metric-rules';
import { withUsageErrors } from './flags';
import type { CliIo } from './io';

type Env = Readonly<Record<string, string | undefined>>;

export const PLAN_USAGE = `usage: tally plan --objects-per-account-day N [--key-bytes 12] [--shards S] [--history-cap C]
                  [--accounts-per-object K] [--hours H] [--account-chars 64] [--metrics JSON] [--json]

Sizes the rolling idempotency history: recommends TALLY_SHARDS and TALLY_HISTORY_CAP
so the dedup horizon covers the log objects of one account-day (or the last H hours
of them), and prints the shard item size, WCU per increment, writes/s per item and
the horizon in objects and hours. Warns where a choice breaks a limit (400 KB item,
1,000 WCU/s per partition); exit code 1 when a hard limit is broken. Needs no AWS.

  --objects-per-account-day N   log objects with lines for one account on one day
  --shards S, --history-cap C   evaluate these instead of recommending them
  --accounts-per-object K       accounts one object has lines for (default 1)
  --hours H                     hours of objects the horizon must cover (default 24)
  --account-chars N             longest account id (default 64, the worst case)
  --metrics JSON                metric rules as TALLY_METRICS (default: TALLY_METRICS)`;

function numberFlag(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (!Number.isFinite(parsed)) throw new ValidationError(`${name} must be a number, got "${value}"`);
  return parsed;
}

/** `tally plan`: pure arithmetic, no AWS calls. */
export function runPlan(argv: readonly string[], io: CliIo, env: Env = process.env): Promise<number> {
  return withUsageErrors('plan', PLAN_USAGE, io, async () => {
    const { values } = parseArgs({
      args: [...argv],
      options: {
        'objects-per-account-day': { type: 'string' },
        'key-bytes': { type: 'string' },
        shards: { type: 'string' },
        'history-cap': { type: 'string' },
        'accounts-per-object': { type: 'string' },
        hours: { type: 'string' },
        'account-chars': { type: 'string' },
        metrics: { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
    if (values.help) {
      io.out(`${PLAN_USAGE}\n`);
      return 0;
    }
    const objects = numberFlag(values['objects-per-account-day'], '--objects-per-account-day');
    if (objects === undefined) throw new ValidationError('--objects-per-account-day N is required');
    const optional = (name: string, value: number | undefined) => (value === undefined ? {} : { [name]: value });
    const plan = planCapacity({
      objectsPerAccountDay: objects,
      ...optional('keyBytes', numberFlag(values['key-bytes'], '--key-bytes')),
      ...optional('shards', numberFlag(values.shards, '--shards')),
      ...optional('historyCap', numberFlag(values['history-cap'], '--history-cap')),
      ...optional('accountsPerObject', numberFlag(values['accounts-per-object'], '--accounts-per-object')),
      ...optional('windowHours', numberFlag(values.hours, '--hours')),
      ...optional('accountIdChars', numberFlag(values['account-chars'], '--account-chars')),
      metricNames: metricNames(readMetricRules(values.metrics ?? env.TALLY_METRICS, values.metrics === undefined ? 'TALLY_METRICS' : '--metrics')),
    });
    io.out(values.json ? `${JSON.stringify(plan)}\n` : describePlan(plan));
    return plan.breaksLimit ? 1 : 0;
  });
}

const round = (value: number, digits = 1) => Number(value.toFixed(digits)).toLocaleString('en-US');

/** The human form of a plan. */
export function describePlan(plan: CapacityPlan): string {
  const chosen = (what: 'shards' | 'historyCap') => (plan.chosen[what] === 'given' ? 'given' : 'recommended');
  const perHour = plan.objectsPerAccountDay / 24;
  const lines = [
    `tally plan: ${plan.objectsPerAccountDay} objects per account-day, ${plan.keyBytes}-byte keys, ` +
      `${plan.accountsPerObject} account(s) per object, horizon to cover ${plan.windowHours} h (${plan.objectsInWindow} objects)`,
    '',
    `settings       TALLY_SHARDS=${plan.shards} (${chosen('shards')})  TALLY_HISTORY_CAP=${plan.historyCap} (${chosen('historyCap')})  TALLY_KEY_BYTES=${plan.keyBytes}`,
    `               each shard must hold ~${plan.keysNeededPerShard} keys for the window (hash spread, 3 sigma); at most ${plan.maxCapAtOneWcu} fit in 1 KB`,
    `shard item     ${plan.itemBytes} bytes full (${round(plan.itemKB, 2)} KB) = ${plan.fixedBytes} fixed + ${plan.historyCap} × ${plan.keyBytes + 1} history`,
    `cost           ${plan.wcuPerIncrement} WCU per increment; ~${plan.wcuPerObject} WCU per object (${plan.accountsPerObject} increment(s) + ledger)`,
    `throughput     max writes/s per item: ${plan.maxWritesPerSecondPerItem} (seed: 1000 KB/s / ${round(plan.itemKB, 2)} KB = ${round(plan.seedWritesPerSecondPerItem, 0)}, ` +
      `but writes are billed per started KB)`,
    `               an account's shards and days share one partition (1,000 WCU/s): replay or backfill one account at most ` +
      `${plan.maxObjectsPerSecondPerAccount} objects/s (--rate); average load ${round(plan.accountWcuPerSecond, 3)} WCU/s`,
    `dedup horizon  ${plan.horizonObjects} increments of an account-day (cap × shards) ≈ ${round(plan.horizonHours)} h of objects at ${round(perHour, 2)}/h: ` +
      (plan.horizonHours >= 24 ? 'the whole account-day' : plan.coversWindow ? `covers the ${plan.windowHours} h window` : 'LESS than the window'),
    `               later redeliveries of finished objects are caught by the object ledger`,
  ];
  lines.push('', plan.warnings.length === 0 ? 'no warnings' : plan.warnings.map((warning) => `warning: ${warning}`).join('\n'));
  return `${lines.join('\n')}\n`;
}
