import { reconcileUsage, type ReconcileReport } from '../../../app/ingest/reconcile';
import { resolveUnresolved, type Settlement } from '../../../app/ingest/resolve-unresolved';
import { ValidationError } from '../../../domain/errors';
import { addDays, dayOf, daysBetweenInclusive } from '../../../domain/days';
import { MAX_RANGE_DAYS } from '../../../domain/reading/usage-query';
import type { ReconcileRow } from '../../../domain/counters/reconciliation';
import type { ReconcileRecord } from '../../../domain/reading/health';
import { concurrencyOption, dayRangeOptions, defineCommand, JSON_OPTION } from '../../command';
import { describeIngestSettings } from '../../describe-settings';
import { formatTable } from '../../io';
import { logBucketOf } from '../../operator-target';
import { progressDisplay } from '../../progress';
import { accountId, checkDayRange } from '../../values';

interface ReconcileOptions {
  from?: string;
  to?: string;
  resolve?: boolean;
  account?: string;
  force?: boolean;
  concurrency: number;
  all?: boolean;
  json?: boolean;
}

/**
 * The longest range one run reconciles, as the read API answers (a leap year). The served
 * side is built day by day for every account (about 22 MB and 0.4 s an account for
 * 2000-01-01..2099-12-31, measured): a century over a hundred accounts ran out of memory.
 */
export const MAX_RECONCILE_DAYS = MAX_RANGE_DAYS;

/** `tally reconcile`: exit 0 when logs and counters agree, 1 on drift or an incomplete recount. */
export const reconcileCommand = defineCommand<ReconcileOptions>({
  name: 'reconcile',
  summary: 'recount raw logs and compare with the counters; exit 1 on drift',
  description:
    'Recounts the raw CloudFront logs in S3 with the ingest parser, independently of the counters, ' +
    'and compares every account-day and metric with what the read API serves (measured usage; ' +
    'adjustments are shown but are not drift). Objects named one day either side are read too, ' +
    'for the late lines they hold. Exit code 1 on any drift. With --resolve (no day range needed): ' +
    'settles the increments ingest left unresolved (it could not prove whether a crashed attempt ' +
    'applied them): each of their account-days is recounted, and exactly the increments that make ' +
    'up its shortfall are applied; exit code 1 while any is left. A range that starts after today, or ' +
    'an --account with no measured usage (a mistyped id?), is refused (exit 2) unless --force; an ' +
    'object in range that no one can count (poison) is named and exits 1.',
  options: [
    ...dayRangeOptions('days to compare').map((option) => ({ ...option, required: false })),
    { flags: '--resolve', help: 'settle the unresolved increments ingest recorded (the days they name), then exit' },
    { flags: '--account <id>', help: 'only this account (otherwise every account found in the logs)', read: accountId },
    { flags: '--force', help: 'reconcile an --account with no measured usage anyway' },
    concurrencyOption('objects'),
    { flags: '--all', help: 'print every row, not only drift and adjusted rows' },
    JSON_OPTION,
  ],
  target: { settings: ['resolver', 'metrics'] },
  check: (options) => {
    if (options.resolve !== true) {
      // Required unless --resolve, which finds its days itself.
      for (const flag of ['from', 'to'] as const) if (options[flag] === undefined) throw new ValidationError(`--${flag} <day> is required`);
    }
    if (options.resolve === true && options.account !== undefined) throw new ValidationError('--resolve settles every account: leave out --account');
    checkDayRange(options);
    if (options.from !== undefined && options.to !== undefined && daysBetweenInclusive(options.from, options.to) > MAX_RECONCILE_DAYS) {
      throw new ValidationError(
        `--from ${options.from} --to ${options.to} spans ${daysBetweenInclusive(options.from, options.to).toLocaleString('en-US')} days; ` +
          `reconcile at most ${MAX_RECONCILE_DAYS} days a run (e.g. --to ${addDays(options.from, MAX_RECONCILE_DAYS - 1)}), then the next range`,
      );
    }
  },
  async run({ options, context, target: open }) {
    const { io } = context;
    const { account } = options;
    const { target, clients } = await open();
    const bucket = logBucketOf(target);
    const { DynamoReconcileRecords, DynamoUsageReader, S3LogListing, S3LogSource, usageStoreFor } = await import('../../aws-adapters');
    const { config } = target;
    const recount = {
      listing: new S3LogListing({ client: clients.s3 }),
      source: new S3LogSource({ client: clients.s3 }),
      reader: new DynamoUsageReader({ client: clients.dynamodb, tableName: config.tableName, consistentRead: true }),
      ledger: usageStoreFor(config, clients.dynamodb),
      bucket,
      prefix: target.logPrefix,
      resolver: config.resolver,
      metricRules: config.metricRules,
      logFormat: config.logFormat,
      concurrency: options.concurrency,
    };
    if (options.resolve === true) {
      const store = usageStoreFor(config, clients.dynamodb);
      const settlements = await resolveUnresolved({ ...recount, unresolved: store, store });
      io.out(options.json === true ? `${JSON.stringify({ settlements })}\n` : describeSettlements(settlements));
      return settlements.some((settlement) => settlement.outcome === 'left') ? 1 : 0;
    }
    const from = options.from!;
    const to = options.to!;
    const today = dayOf(context.now());
    if (from > today) {
      throw new ValidationError(`nothing was checked: --from ${from} is in the future (today is ${today} UTC), so no log can hold its usage yet`);
    }
    if (account !== undefined && options.force !== true && !(await recount.reader.hasMeasuredUsage(account))) {
      throw new ValidationError(
        `nothing was checked: account "${account}" has no measured usage in ${config.tableName}: check the id, or pass --force to reconcile it anyway`,
      );
    }
    if (options.json !== true) {
      io.out(`tally reconcile: ${target.origin}\n`);
      io.out(`  recount s3://${bucket}/${target.logPrefix} (objects named ${addDays(from, -1)}..${addDays(to, 1)}): ${describeIngestSettings(config)}\n`);
      io.out(`  against ${config.tableName}, ${from}..${to}${account === undefined ? '' : `, account ${account}`}\n`);
    }
    const progress = progressDisplay(io, 'reconcile', 'objects');
    let report: ReconcileReport;
    try {
      report = await reconcileUsage({ ...recount, from, to, ...(account === undefined ? {} : { account }), progress });
    } finally {
      progress.stop();
    }
    // What health shows as the last reconcile (`tally status`, GET /v1/health).
    await new DynamoReconcileRecords({ client: clients.dynamodb, tableName: config.tableName }).record(reconcileRecord(report, context.now()));
    io.out(options.json === true ? `${JSON.stringify(report)}\n` : describeReconcile(report, options.all === true));
    return report.drifting.length > 0 || report.objects.failed.length > 0 || report.objects.poison.length > 0 ? 1 : 0;
  },
});

/** What a run leaves for health to show. */
export function reconcileRecord(report: ReconcileReport, at: Date): ReconcileRecord {
  const failed = report.objects.failed.length;
  return {
    at: at.toISOString(),
    from: report.from,
    to: report.to,
    ...(report.account === undefined ? {} : { account: report.account }),
    objects: report.objects.read,
    accountDays: new Set(report.rows.map((row) => `${row.account}|${row.day}`)).size,
    drifting: report.drifting.length,
    notCounted: report.objects.notCounted.length,
    failed,
    poison: report.objects.poison.length,
    clean: report.drifting.length === 0 && failed === 0 && report.objects.poison.length === 0,
  };
}

/** The human summary of `tally reconcile --resolve`. */
export function describeSettlements(settlements: readonly Settlement[]): string {
  if (settlements.length === 0) return 'no unresolved increments: nothing to settle\n';
  const rows = settlements.map((s) => [s.object, s.account, s.day, JSON.stringify(s.metrics), s.outcome, s.reason ?? '']);
  const left = settlements.filter((s) => s.outcome === 'left').length;
  return (
    `${formatTable(['object', 'account', 'day', 'metrics', 'outcome', 'reason'], rows).trimEnd()}\n` +
    (left === 0 ? `settled all ${settlements.length} unresolved increment(s)\n` : `${left} of ${settlements.length} unresolved increment(s) left: see the reasons\n`)
  );
}

function signed(value: number): string {
  return value > 0 ? `+${value}` : String(value);
}

function table(rows: readonly ReconcileRow[]): string {
  return formatTable(
    ['account', 'day', 'metric', 'logs', 'served', 'drift', 'adjustments'],
    rows.map((row) => [row.account, row.day, row.metric, String(row.logs), String(row.served), row.drift === 0 ? '0' : signed(row.drift), signed(row.adjustments)]),
  ).trimEnd();
}

/** The last line of a reconciliation: what was found, never "no drift" for what was not looked at. */
function verdictOf(report: ReconcileReport): string {
  if (report.drifting.length > 0) return `DRIFT on ${report.drifting.length} row(s): the counters do not match the logs`;
  const poison = report.objects.poison.length;
  if (poison > 0) {
    return `no drift in what could be counted, but ${poison} poison object(s) in range could not be counted (by the consumer either): see above`;
  }
  if (report.objects.read === 0 && report.rows.length === 0) {
    return `nothing was checked: no log object in range was read and no counter holds usage for ${report.from}..${report.to}`;
  }
  return 'no drift: the counters match the logs';
}

/** The human summary of a reconciliation. */
export function describeReconcile(report: ReconcileReport, all = false): string {
  const accountDays = new Set(report.rows.map((row) => `${row.account}|${row.day}`)).size;
  const lines = [
    `read ${report.objects.read} object(s); compared ${accountDays} account-day(s) of ${report.accounts} account(s) on ${report.metrics.length} metric(s)`,
  ];
  const shown = all ? report.rows : report.rows.filter((row) => row.drift !== 0 || row.adjustments !== 0);
  if (shown.length > 0) lines.push('', table(shown), '');
  const adjusted = report.rows.filter((row) => row.adjustments !== 0).length;
  if (adjusted > 0) lines.push(`adjustments on ${adjusted} row(s) are shown apart: they are corrections, not drift`);
  if (report.objects.notCounted.length > 0) {
    lines.push(
      `${report.objects.notCounted.length} object(s) with lines in the range are not (fully) counted yet (no ledger item): ` +
        `in flight, dead-lettered, or never notified; tally backfill completes them`,
      ...report.objects.notCounted.slice(0, 10).map((object) => `  ${object}`),
    );
  }
  for (const poison of report.objects.poison) lines.push(`poison object (the consumer cannot count it either): ${poison.object}: ${poison.error}`);
  for (const failure of report.objects.failed) lines.push(`could not read ${failure.object}: ${failure.error}`);
  if (report.objects.failed.length > 0) lines.push('the recount is incomplete: rerun when every object can be read');
  if (report.unchecked.length > 0) {
    lines.push(`not checked: ${report.unchecked.join(', ')} (in the table, not computed by this recount: pass --metrics or set TALLY_METRICS as the consumer has it)`);
  }
  lines.push(verdictOf(report));
  return `${lines.join('\n')}\n`;
}
