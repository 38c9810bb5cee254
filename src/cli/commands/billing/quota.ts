import type { ThresholdReport } from '../../../app/billing/thresholds';
import { SUPPORTED_DAYS } from '../../../domain/days';
import { ValidationError } from '../../../domain/errors';
import { metricNames } from '../../../domain/logs/metric-rules';
import {
  effectiveQuotas,
  isSupportedMonth,
  isValidMonth,
  monthOf,
  parseQuotaLevels,
  quotaInForce,
  validateMetricName,
  quotaAfter,
  type EffectiveQuota,
  type Quota,
  type QuotaChange,
  type QuotaDefaults,
  type QuotaPeriod,
} from '../../../domain/billing/quota';
import { actorOf, ACTOR_OPTION, defineCommand, JSON_OPTION, type CommandGroup, type OptionDeclaration } from '../../command';
import { formatTable } from '../../io';
import { accountId, integerFrom, type ValueReader } from '../../values';

/** `tally quota set|list|remove|check`: monthly allowances and their threshold alerts. */
export const QUOTA_GROUP: CommandGroup = {
  name: 'quota',
  summary: 'monthly allowances per account and metric, and their threshold alerts',
  description:
    'Sets, lists and removes monthly allowances (stored in the usage table; TALLY_QUOTAS gives every ' +
    'other account a default) and evaluates them now (quota check): when month-to-date usage reaches ' +
    'a level (TALLY_QUOTA_LEVELS, 80,100 by default) a usage.threshold webhook fires, once per account, ' +
    'metric, month, level and allowance. See docs/quotas.md.',
};

const levels: ValueReader<number[]> = (text, flag) => {
  try {
    return parseQuotaLevels(text);
  } catch (error) {
    throw new ValidationError(`${flag}: ${(error as Error).message}`);
  }
};

const metric: ValueReader<string> = (text, flag) => {
  try {
    return validateMetricName(text);
  } catch (error) {
    throw new ValidationError(`${flag}: ${(error as Error).message}`);
  }
};

const month: ValueReader<string> = (text, flag) => {
  if (!isValidMonth(text)) throw new ValidationError(`${flag} "${text}" is not a month (YYYY-MM)`);
  if (!isSupportedMonth(text)) throw new ValidationError(`${flag} "${text}" is outside the months Tally supports, ${SUPPORTED_DAYS.first.slice(0, 7)}..${SUPPORTED_DAYS.last.slice(0, 7)}`);
  return text;
};

const ACCOUNT: OptionDeclaration = { flags: '--account <id>', help: 'the account', read: accountId, required: true };
const DRY_RUN: OptionDeclaration = { flags: '--dry-run', help: 'say what would change; write nothing' };
const METRIC: OptionDeclaration = { flags: '--metric <name>', help: 'the metric (requests, bytes, ...)', read: metric, required: true };

/** `tally quota set`: exit 0 when stored, 2 when refused (as `tally adjust`). */
export const quotaSetCommand = defineCommand<{
  account: string;
  metric: string;
  monthly: number;
  levels?: number[];
  from?: string;
  actor?: string;
  allowNewMetric?: boolean;
  force?: boolean;
  dryRun?: boolean;
  json?: boolean;
}>({
  name: 'set',
  group: QUOTA_GROUP,
  summary: "set an account's monthly allowance of a metric",
  description:
    "Sets an account's monthly allowance of one metric from this UTC month on (or from --from): " +
    'earlier months keep the allowance they had, so a past month is never judged by a later one. ' +
    'Levels already fired this month stay fired; the next evaluation compares month-to-date with the ' +
    'new allowance and fires the levels it reaches that have not fired yet. An account with no ' +
    'measured usage (a mistyped id, or another case than the resolver gives?) is refused (exit 2) unless --force.',
  options: [
    ACCOUNT,
    METRIC,
    { flags: '--monthly <n>', help: 'the allowance per UTC month, a whole number of at least 1', read: integerFrom(1, Number.MAX_SAFE_INTEGER), required: true },
    { flags: '--levels <list>', help: 'percentages that fire an alert, e.g. 50,80,100 (default TALLY_QUOTA_LEVELS, else 80,100)', read: levels },
    { flags: '--from <month>', help: 'first UTC month it applies to (YYYY-MM; default this month); later entries are replaced', read: month },
    ACTOR_OPTION,
    { flags: '--allow-new-metric', help: 'accept a metric the configured TALLY_METRICS does not name' },
    { flags: '--force', help: 'set it for an account with no measured usage' },
    DRY_RUN,
    JSON_OPTION,
  ],
  target: { settings: ['metrics'] },
  async run({ options, context: { io, env, now }, target: open }) {
    const { target, clients } = await open();
    const known = metricNames(target.config.metricRules);
    if (!known.includes(options.metric) && options.allowNewMetric !== true) {
      throw new ValidationError(`metric "${options.metric}" is not one the consumer measures here (${known.join(', ')}); check the name or pass --allow-new-metric`);
    }
    const tableName = target.config.tableName;
    if (options.force !== true) {
      const { DynamoUsageReader } = await import('../../aws-adapters');
      if (!(await new DynamoUsageReader({ client: clients.dynamodb, tableName, consistentRead: true }).hasMeasuredUsage(options.account))) {
        throw new ValidationError(
          `account "${options.account}" has no measured usage in ${tableName}, so its quota could never fire: ` +
            'check the id (account ids are compared exactly, as the resolver gives them), or pass --force to set it anyway',
        );
      }
    }
    const period: QuotaPeriod = {
      from: options.from ?? monthOf(now()),
      monthly: options.monthly,
      ...(options.levels === undefined ? {} : { levels: options.levels }),
    };
    const store = await quotaStore(clients.dynamodb, tableName);
    const change = { account: options.account, metric: options.metric, period, updatedAt: now().toISOString(), updatedBy: actorOf(options.actor, env) };
    const { quota, previous } =
      options.dryRun === true ? previewSet(change, await storedQuota(store, options.account, options.metric)) : await store.set(change);
    if (options.json === true) {
      io.out(`${JSON.stringify({ quota, ...(previous === undefined ? {} : { previous }), ...(options.dryRun === true ? { dryRun: true } : {}) })}\n`);
    } else {
      const before = previous === undefined ? undefined : quotaInForce(previous, period.from);
      const was = before === undefined ? '' : ` (was ${before.monthly})`;
      const what = `${quota.account} ${quota.metric} ${period.monthly} a month from ${period.from}${was}, alerts at ${(period.levels ?? target.config.quotaLevels).join('%, ')}%`;
      io.out(options.dryRun === true ? `dry run: would set quota ${what} in ${tableName}; nothing written\n` : `quota set: ${what}\n`);
    }
    return 0;
  },
});

const LIST_MONTH: OptionDeclaration = { flags: '--month <month>', help: 'the allowances in force in this UTC month (YYYY-MM; default this month)', read: month };
const HISTORY: OptionDeclaration = { flags: '--history', help: 'every allowance each quota has had, with the month it applies from' };

/** `tally quota list`: stored quotas (and the defaults), or every allowance one account has. */
export const quotaListCommand = defineCommand<{ account?: string; month?: string; history?: boolean; json?: boolean }>({
  name: 'list',
  group: QUOTA_GROUP,
  summary: 'list monthly allowances',
  description:
    'Lists the allowance of every stored quota in force this UTC month (or --month) and the defaults TALLY_QUOTAS ' +
    'gives every other account; with --account, the allowances that apply to that account (its own, else the default) ' +
    "and where each comes from. --history lists every entry of each quota's history (--json always carries it).",
  options: [{ flags: '--account <id>', help: 'only this account, defaults included', read: accountId }, LIST_MONTH, HISTORY, JSON_OPTION],
  target: { settings: [] },
  async run({ options, context: { io, now }, target: open }) {
    const { target, clients } = await open();
    const store = await quotaStore(clients.dynamodb, target.config.tableName);
    const stored = await store.list(options.account);
    const { quotaDefaults: defaults, quotaLevels } = target.config;
    const inMonth = options.month ?? monthOf(now());
    if (options.account !== undefined) {
      const quotas = effectiveQuotas(stored, defaults, quotaLevels, inMonth);
      io.out(
        options.json === true
          ? `${JSON.stringify({ account: options.account, month: inMonth, quotas, history: stored })}\n`
          : `${describeAccountQuotas(options.account, inMonth, quotas)}${options.history === true ? describeHistory(stored, quotaLevels) : ''}`,
      );
      return 0;
    }
    io.out(
      options.json === true
        ? `${JSON.stringify({ month: inMonth, quotas: stored, defaults, levels: quotaLevels })}\n`
        : options.history === true
          ? `${describeHistory(stored, quotaLevels)}${describeDefaults(defaults, quotaLevels)}`
          : describeQuotas(stored, inMonth, defaults, quotaLevels),
    );
    return 0;
  },
});

/** `tally quota remove`: exit 0 whether or not there was one (the outcome says which). */
export const quotaRemoveCommand = defineCommand<{ account: string; metric: string; dryRun?: boolean; json?: boolean }>({
  name: 'remove',
  group: QUOTA_GROUP,
  summary: "remove an account's own allowance of a metric",
  description:
    "Removes an account's own allowance of one metric: the TALLY_QUOTAS default applies again, or none. " +
    'Crossings already recorded stay on record.',
  options: [ACCOUNT, METRIC, DRY_RUN, JSON_OPTION],
  target: { settings: [] },
  async run({ options, context: { io, now }, target: open }) {
    const { target, clients } = await open();
    const store = await quotaStore(clients.dynamodb, target.config.tableName);
    const dryRun = options.dryRun === true;
    const removed = dryRun ? await storedQuota(store, options.account, options.metric) : await store.remove(options.account, options.metric);
    const fallback = target.config.quotaDefaults[options.metric];
    const prefix = dryRun ? 'dry run: ' : '';
    if (options.json === true) io.out(`${JSON.stringify({ removed: removed ?? null, default: fallback ?? null, ...(dryRun ? { dryRun: true } : {}) })}\n`);
    else if (removed === undefined) io.out(`${prefix}no quota of ${options.metric} for ${options.account}: nothing ${dryRun ? 'to remove' : 'removed'}\n`);
    else {
      io.out(
        `${prefix}${dryRun ? 'would remove quota' : 'quota removed:'} ${options.account} ${options.metric} (was ${quotaInForce(removed, monthOf(now()))?.monthly ?? 'not yet in force'}); ` +
          `${dryRun ? 'then' : 'now'} ${fallback === undefined ? 'no allowance' : `the default ${fallback} (TALLY_QUOTAS)`}${dryRun ? '; nothing written' : ''}\n`,
      );
    }
    return 0;
  },
});

/** `tally quota check`: one evaluation now; exit 1 when an account or event failed. */
export const quotaCheckCommand = defineCommand<{ month?: string; account?: string; json?: boolean }>({
  name: 'check',
  group: QUOTA_GROUP,
  summary: 'evaluate quotas now and fire the thresholds reached',
  description:
    'Does on demand what the scheduled evaluator does every few minutes: reads month-to-date usage of every ' +
    'account with a quota (judged by the allowance in force that month), records each level reached once and ' +
    'queues its usage.threshold event (TALLY_WEBHOOK_QUEUE_URL; without it the crossings are recorded and wait). ' +
    'Besides this month it evaluates the last while it has open days and every month a late revision or ' +
    'tally adjust marked. Running it again, or at the same time as the schedule, fires nothing twice.',
  options: [
    { flags: '--month <month>', help: 'only this UTC month (YYYY-MM); default this month, the last while it has open days, and marked months', read: month },
    { flags: '--account <id>', help: 'only this account', read: accountId },
    JSON_OPTION,
  ],
  target: { settings: [] },
  async run({ options, context: { io, now }, target: open }) {
    const { target, clients } = await open();
    const { createThresholdDeps } = await import('../../../adapters/wiring/handoff-deps');
    const { evaluateThresholds } = await import('../../../app/billing/thresholds');
    const { silentLog } = await import('../../../app/log');
    const deps = createThresholdDeps(
      { tally: target.config, ...(target.webhookQueueUrl === undefined ? {} : { webhookQueueUrl: target.webhookQueueUrl }) },
      clients,
      silentLog,
      { clock: now },
    );
    const report = await evaluateThresholds(deps, {
      ...(options.month === undefined ? {} : { month: options.month }),
      ...(options.account === undefined ? {} : { accounts: [options.account] }),
    });
    io.out(options.json === true ? `${JSON.stringify(report)}\n` : describeCheck(report, target.origin, target.webhookQueueUrl));
    return report.failed > 0 ? 1 : 0;
  },
});

/** The stored quota of one account and metric, if any (a dry run reads what a change would replace). */
async function storedQuota(store: Awaited<ReturnType<typeof quotaStore>>, account: string, metric: string): Promise<Quota | undefined> {
  return (await store.list(account)).find((quota) => quota.account === account && quota.metric === metric);
}

/** What `store.set(change)` would store (the store's own rule), without writing. */
function previewSet(change: QuotaChange, previous: Quota | undefined): { quota: Quota; previous?: Quota } {
  return { quota: quotaAfter(change, previous), ...(previous === undefined ? {} : { previous }) };
}

async function quotaStore(client: import('@aws-sdk/client-dynamodb').DynamoDBClient, tableName: string) {
  const { DynamoQuotaStore } = await import('../../aws-adapters');
  return new DynamoQuotaStore({ client, tableName });
}

function describeDefaults(defaults: QuotaDefaults, levels: readonly number[]): string {
  const entries = Object.entries(defaults);
  return entries.length === 0
    ? 'no default (TALLY_QUOTAS unset): accounts without a quota of their own never fire\n'
    : `default for every other account (TALLY_QUOTAS): ${entries.map(([name, value]) => `${name} ${value}`).join(', ')}; levels ${levels.join(',')}\n`;
}

/** The human listing of every stored quota as in force in `month` (`-` before its first entry), then the defaults. */
export function describeQuotas(stored: readonly Quota[], month: string, defaults: QuotaDefaults, levels: readonly number[]): string {
  const table =
    stored.length === 0
      ? 'no quotas set\n'
      : formatTable(
          ['account', 'metric', 'monthly', 'levels', 'from', 'updated', 'by'],
          stored.map((quota) => {
            const period = quotaInForce(quota, month);
            const later = period === undefined ? ` (${quota.history[0]?.monthly ?? '-'} from ${quota.history[0]?.from ?? '-'})` : '';
            return [quota.account, quota.metric, period === undefined ? `-${later}` : String(period.monthly), (period?.levels ?? levels).join(','), period?.from ?? '-', quota.updatedAt ?? '-', quota.updatedBy ?? '-'];
          }),
        );
  return `${table}${describeDefaults(defaults, levels)}`;
}

/** The human listing of every entry of each quota's history. */
export function describeHistory(stored: readonly Quota[], levels: readonly number[]): string {
  if (stored.length === 0) return 'no quotas set\n';
  return formatTable(
    ['account', 'metric', 'from', 'monthly', 'levels'],
    stored.flatMap((quota) => quota.history.map((period) => [quota.account, quota.metric, period.from, String(period.monthly), (period.levels ?? levels).join(',')])),
  );
}

/** The human listing of the allowances one account has in `month`. */
export function describeAccountQuotas(account: string, month: string, quotas: readonly EffectiveQuota[]): string {
  if (quotas.length === 0) return `${account} has no allowance in ${month}: it never fires a threshold\n`;
  return formatTable(
    ['account', 'metric', 'monthly', 'levels', 'source'],
    quotas.map((quota) => [account, quota.metric, String(quota.monthly), quota.levels.join(','), quota.source === 'account' ? 'own' : 'default (TALLY_QUOTAS)']),
  );
}

/** The human summary of an evaluation. */
export function describeCheck(report: ThresholdReport, origin: string, queue: string | undefined): string {
  const lines = [
    `tally quota check: ${origin}`,
    `  months ${report.months.join(', ')}; ${report.evaluated} account-month(s) read; webhooks ${queue === undefined ? 'off (no TALLY_WEBHOOK_QUEUE_URL): crossings wait' : `queued to ${queue}`}`,
  ];
  if (report.crossed.length === 0) lines.push('no new crossing');
  else {
    lines.push(
      formatTable(
        ['account', 'metric', 'month', 'level', 'used', 'allowance'],
        report.crossed.map((c) => [c.account, c.metric, c.month, `${c.level}%`, String(c.used), String(c.allowance)]),
      ).trimEnd(),
    );
  }
  lines.push(`events queued ${report.sent.length}; pending ${report.pending}; failed ${report.failed}`);
  for (const c of report.withdrawn) {
    lines.push(`withdrawn unsent: ${c.account} ${c.metric} ${c.month} ${c.level}% of ${c.allowance} (that allowance is no longer in force)`);
  }
  for (const reason of report.skipped) lines.push(reason);
  return `${lines.join('\n')}\n`;
}
