import { parseArgs } from 'node:util';
import { reconcileUsage, type ReconcileReport } from '../app/reconcile';
import { DynamoUsageReader } from '../adapters/dynamodb-usage-reader';
import { DynamoUsageStore } from '../adapters/dynamodb-usage-store';
import { S3LogListing } from '../adapters/s3-log-listing';
import { S3LogSource } from '../adapters/s3-log-source';
import { ACCOUNT_ID_RULE, isValidAccountId } from '../domain/account-id';
import { addDays } from '../domain/days';
import { ValidationError } from '../domain/errors';
import type { ReconcileRow } from '../domain/reconciliation';
import { describeIngestSettings } from './describe-settings';
import { dayFlag, withUsageErrors } from './flags';
import { formatTable, type CliIo } from './io';
import { progressDisplay } from './progress';
import { closeClients, INGEST_OPTIONS, openTarget, TARGET_OPTIONS, TARGET_USAGE } from './target-options';

type Env = Readonly<Record<string, string | undefined>>;

export const RECONCILE_USAGE = `usage: tally reconcile --from DAY --to DAY [--account A] [--bucket B] [--prefix P]
                       [--resolver R] [--metrics JSON] [--all] [--json] [target flags]

Recounts the raw CloudFront logs in S3 with the ingest parser, independently of the
counters, and compares every account-day and metric with what the read API serves
(measured usage; adjustments are shown but are not drift). Objects named one day
either side are read too, for the late lines they hold. Exit code 1 on any drift.

  --from, --to DAY   days to compare, both included
  --account A        only this account (otherwise every account found in the logs)
  --resolver, --metrics   attribution rules; default TALLY_RESOLVER / TALLY_METRICS:
                     they must be the consumer's
  --all              print every row, not only drift and adjusted rows
  --json             print the report as JSON

${TARGET_USAGE}`;

/** `tally reconcile`: exit 0 when logs and counters agree, 1 on drift or an incomplete recount. */
export function runReconcile(argv: readonly string[], io: CliIo, env: Env = process.env, cwd = process.cwd()): Promise<number> {
  return withUsageErrors('reconcile', RECONCILE_USAGE, io, () => reconcileCommand(argv, io, env, cwd));
}

async function reconcileCommand(argv: readonly string[], io: CliIo, env: Env, cwd: string): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      ...TARGET_OPTIONS,
      ...INGEST_OPTIONS,
      from: { type: 'string' },
      to: { type: 'string' },
      account: { type: 'string' },
      concurrency: { type: 'string', default: '4' },
      all: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.out(`${RECONCILE_USAGE}\n`);
    return 0;
  }
  const from = dayFlag(values.from, '--from');
  const to = dayFlag(values.to, '--to');
  if (to < from) throw new ValidationError(`--to ${to} is before --from ${from}`);
  if (values.account !== undefined && !isValidAccountId(values.account)) throw new ValidationError(`--account: ${ACCOUNT_ID_RULE}`);
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) throw new ValidationError('--concurrency must be 1 to 64');

  const { target, clients } = openTarget(values, env, cwd);
  try {
    const bucket = target.bucket;
    if (bucket === undefined) {
      io.err('tally reconcile: no log bucket: pass --bucket or set TALLY_LOG_BUCKET\n');
      return 2;
    }
    const { config } = target;
    if (!values.json) {
      io.out(`tally reconcile: ${target.origin}\n`);
      io.out(`  recount s3://${bucket}/${target.logPrefix} (objects named ${addDays(from, -1)}..${addDays(to, 1)}): ${describeIngestSettings(config)}\n`);
      io.out(`  against ${config.tableName}, ${from}..${to}${values.account === undefined ? '' : `, account ${values.account}`}\n`);
    }
    const progress = progressDisplay(io, 'reconcile', 'objects');
    let report: ReconcileReport;
    try {
      report = await reconcileUsage({
        listing: new S3LogListing({ client: clients.s3 }),
        source: new S3LogSource({ client: clients.s3 }),
        reader: new DynamoUsageReader({ client: clients.dynamodb, tableName: config.tableName, consistentRead: true }),
        ledger: new DynamoUsageStore({ client: clients.dynamodb, tableName: config.tableName, historyCap: config.historyCap, ledgerTtlDays: config.ledgerTtlDays }),
        bucket,
        prefix: target.logPrefix,
        from,
        to,
        ...(values.account === undefined ? {} : { account: values.account }),
        resolver: config.resolver,
        metricRules: config.metricRules,
        concurrency,
        progress,
      });
    } finally {
      progress.stop();
    }
    if (values.json) io.out(`${JSON.stringify(report)}\n`);
    else io.out(describeReconcile(report, values.all));
    return report.drifting.length > 0 || report.objects.failed.length > 0 ? 1 : 0;
  } finally {
    closeClients(clients);
  }
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
  lines.push(
    report.drifting.length === 0
      ? 'no drift: the counters match the logs'
      : `DRIFT on ${report.drifting.length} row(s): the counters do not match the logs`,
  );
  return `${lines.join('\n')}\n`;
}
