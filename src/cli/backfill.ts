import { parseArgs } from 'node:util';
import { backfill, type BackfillMode, type BackfillReport } from '../app/backfill';
import { jsonLog, silentLog } from '../app/log';
import { createIngestDeps } from '../adapters/ingest-deps';
import { S3LogListing } from '../adapters/s3-log-listing';
import { SqsNotificationSender } from '../adapters/sqs-notification-sender';
import { addDays } from '../domain/days';
import { describeIngestSettings } from './describe-settings';
import { ValidationError } from '../domain/errors';
import { dayFlag, withUsageErrors } from './flags';
import { formatTable, type CliIo } from './io';
import { progressDisplay } from './progress';
import { closeClients, INGEST_OPTIONS, openTarget, TARGET_OPTIONS, TARGET_USAGE } from './target-options';

type Env = Readonly<Record<string, string | undefined>>;

export const BACKFILL_USAGE = `usage: tally backfill --from DAY --to DAY [--bucket B] [--prefix P] [--inline] [--rate N]
                      [--concurrency N] [--dry-run] [--json] [target flags]

Lists the log objects under the bucket and prefix whose CloudFront name
(<distribution>.YYYY-MM-DD-HH.<id>.gz) falls on a day from --from to --to, skips
those the ledger knows as counted, and sends an S3 notification for each other one
to the ingest queue (or, with --inline, counts it here with the handler's code).
Half-counted objects complete without counting an increment twice.

  --from, --to DAY   days named in the object keys, both included (YYYY-MM-DD)
  --inline           count here instead of notifying the consumer
  --rate N           at most N objects sent or counted per second
  --concurrency N    objects worked on at once (default 4)
  --dry-run          list and check the ledger only; nothing is sent or counted
  --json             print the report as JSON

${TARGET_USAGE}`;

/** `tally backfill`: exit 0 when every selected object was sent or counted, 1 otherwise. */
export function runBackfill(argv: readonly string[], io: CliIo, env: Env = process.env, cwd = process.cwd()): Promise<number> {
  return withUsageErrors('backfill', BACKFILL_USAGE, io, () => backfillCommand(argv, io, env, cwd));
}

async function backfillCommand(argv: readonly string[], io: CliIo, env: Env, cwd: string): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      ...TARGET_OPTIONS,
      ...INGEST_OPTIONS,
      from: { type: 'string' },
      to: { type: 'string' },
      inline: { type: 'boolean', default: false },
      rate: { type: 'string' },
      concurrency: { type: 'string', default: '4' },
      'dry-run': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      verbose: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.out(`${BACKFILL_USAGE}\n`);
    return 0;
  }
  const from = dayFlag(values.from, '--from');
  const to = dayFlag(values.to, '--to');
  if (to < from) throw new ValidationError(`--to ${to} is before --from ${from}`);
  const rate = values.rate === undefined ? undefined : Number(values.rate);
  if (rate !== undefined && !(rate > 0)) throw new ValidationError('--rate must be a positive number of objects per second');
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) throw new ValidationError('--concurrency must be 1 to 64');

  const { target, clients } = openTarget(values, env, cwd);
  try {
    const bucket = target.bucket;
    if (bucket === undefined) {
      io.err('tally backfill: no log bucket: pass --bucket or set TALLY_LOG_BUCKET\n');
      return 2;
    }
    const log = values.verbose ? jsonLog((line) => io.err(line), 'info', { source: 'tally backfill' }) : silentLog;
    const deps = createIngestDeps(target.config, clients, log);
    let mode: BackfillMode;
    if (values.inline) mode = { kind: 'inline', deps };
    else {
      const queueUrl = target.config.ingestQueueUrl;
      if (queueUrl === undefined) {
        io.err('tally backfill: no ingest queue: pass --queue-url or set TALLY_INGEST_QUEUE_URL (or use --inline)\n');
        return 2;
      }
      mode = { kind: 'queue', sender: new SqsNotificationSender({ client: clients.sqs, queueUrl, region: target.config.region }) };
    }
    if (!values.json) {
      io.out(`tally backfill: ${target.origin}\n`);
      io.out(`  objects named ${from}..${to} under s3://${bucket}/${target.logPrefix}\n`);
      io.out(
        values.inline
          ? `  inline into ${target.config.tableName}: ${describeIngestSettings(target.config)}\n`
          : `  notifications to ${target.config.ingestQueueUrl}\n`,
      );
    }
    const progress = progressDisplay(io, 'backfill', 'objects');
    let report: BackfillReport;
    try {
      report = await backfill({
        listing: new S3LogListing({ client: clients.s3 }),
        ledger: deps.store,
        mode,
        bucket,
        prefix: target.logPrefix,
        from,
        to,
        concurrency,
        ...(rate === undefined ? {} : { rate }),
        dryRun: values['dry-run'],
        progress,
      });
    } finally {
      progress.stop();
    }
    if (values.json) io.out(`${JSON.stringify(report)}\n`);
    else io.out(describeBackfill(report, from, to));
    return report.failed.length > 0 ? 1 : 0;
  } finally {
    closeClients(clients);
  }
}

/** The human summary of a backfill. */
export function describeBackfill(report: BackfillReport, from: string, to: string): string {
  const lines = [
    `listed ${report.listed} object(s) under the prefix; ${report.selected} named ${from}..${to}` +
      (report.unnamed > 0 ? ` (${report.unnamed} not named like CloudFront logs, left alone)` : ''),
  ];
  const rest = report.selected - report.alreadyCounted - report.failed.length;
  if (report.dryRun) {
    lines.push(`dry run: already counted ${report.alreadyCounted}; would ${report.mode === 'queue' ? 'send' : 'count'} ${rest}; nothing changed`);
  } else if (report.mode === 'queue') {
    lines.push(`already counted ${report.alreadyCounted} (skipped); notifications sent ${report.sent}; failed ${report.failed.length}`);
  } else {
    lines.push(
      `already counted ${report.alreadyCounted} (skipped); counted now ${report.counted} ` +
        `(increments applied ${report.applied}, already applied by an earlier attempt ${report.duplicates}); failed ${report.failed.length}`,
    );
  }
  if (report.failed.length > 0) {
    lines.push('', formatTable(['object', 'kind', 'error'], report.failed.map((f) => [f.object, f.poison ? 'poison' : 'retryable', f.error])).trimEnd());
  }
  lines.push(
    `note: objects are chosen by the hour in their name and counted whole; late lines of ${to} sit in objects named ` +
      `${addDays(to, 1)}-00 (add that day to include them).`,
  );
  return `${lines.join('\n')}\n`;
}
