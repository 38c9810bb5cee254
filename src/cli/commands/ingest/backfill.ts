import { backfill, type BackfillMode, type BackfillReport } from '../../../app/ingest/backfill';
import { hoursBackfillDays, type HoursBackfillReport } from '../../../app/ingest/backfill-hours';
import { jsonLog, silentLog } from '../../../app/log';
import { addDays, isSupportedDay, SUPPORTED_DAYS_TEXT } from '../../../domain/days';
import { ConfigError, ValidationError } from '../../../domain/errors';
import { MAX_HOURS_BACKFILL_DAYS } from '../../../domain/counters/hours-backfill';
import { concurrencyOption, dayRangeOptions, defineCommand, JSON_OPTION } from '../../command';
import { describeIngestSettings } from '../../describe-settings';
import { formatTable } from '../../io';
import { logBucketOf } from '../../operator-target';
import { progressDisplay } from '../../progress';
import { accountId, checkDayRange, ratePerSecond } from '../../values';
import type { OpenTarget } from '../../open-target';
import type { CliIo } from '../../io';

interface BackfillOptions {
  from: string;
  to: string;
  inline?: boolean;
  rate?: number;
  concurrency: number;
  dryRun?: boolean;
  json?: boolean;
  verbose?: boolean;
  hours?: boolean;
  account?: string;
}

/**
 * `tally backfill`: exit 0 when every selected object was sent or counted, 1 otherwise.
 * With `--hours`: exit 0 when every account-day's hours were written (or already were), 1 when any was reported.
 */
export const backfillCommand = defineCommand<BackfillOptions>({
  name: 'backfill',
  summary: 'feed the log objects of a day range into ingestion again',
  description:
    'Lists the log objects under the bucket and prefix whose key names a day from --from to --to ' +
    '(a CloudFront name <distribution>.YYYY-MM-DD-HH.<id>.gz, v2 partitions .../YYYY/MM/DD/HH/ or ' +
    '.../year=YYYY/month=MM/day=DD/, or a Firehose name <stream>-<version>-YYYY-MM-DD-HH-MM-SS-<uuid>), skips those the ' +
    'ledger knows as counted, and sends an S3 notification for each other one to the ingest queue ' +
    "(or, with --inline, counts it here with the handler's code). Half-counted objects complete " +
    'without counting an increment twice. ' +
    "With --hours, recomputes the hours of days counted before hours were kept: reads each day's log objects (listed by " +
    "the ledger) again with the consumer's counting code and writes each account-day's hours whole, only when they sum to " +
    'its counters exactly; no counter moves, and a rerun writes the same.',
  options: [
    ...dayRangeOptions('days named in the object keys'),
    { flags: '--inline', help: 'count here instead of notifying the consumer' },
    { flags: '--rate <n>', help: 'at most N objects sent or counted per second (0.001 to 1000000)', read: ratePerSecond },
    concurrencyOption('objects'),
    { flags: '--dry-run', help: 'list and check the ledger only; nothing is sent or counted' },
    JSON_OPTION,
    { flags: '--verbose', help: 'the ingest log (JSON lines) on stderr, with --inline' },
    { flags: '--hours', help: `recompute the hours of days counted before hours were kept (UTC days, at most ${MAX_HOURS_BACKFILL_DAYS} a run)` },
    { flags: '--account <id>', help: "with --hours: only this account's days", read: accountId },
  ],
  target: { settings: ['resolver', 'metrics'] },
  check: checkBackfillOptions,
  async run({ options, context: { io, now }, target: open }) {
    if (options.hours === true) return runHoursBackfill(options, io, now, await open());
    const { from, to } = options;
    const { target, clients } = await open();
    const bucket = logBucketOf(target);
    const { checkClock, createIngestDeps, prepareToWrite, S3LogListing, SqsNotificationSender } = await import('../../aws-adapters');
    const inline = options.inline === true;
    const log = options.verbose === true ? jsonLog((line) => io.err(line), 'info', { source: 'tally backfill' }) : silentLog;
    const deps = createIngestDeps(target.config, clients, log, now);
    let mode: BackfillMode;
    if (inline && options.dryRun !== true) {
      // An inline run writes like the consumer: on a clock DynamoDB agrees with, and on the table's shard counts.
      await checkClock(clients.dynamodb, target.config.tableName, now);
      await prepareToWrite(deps, target.config, now());
    }
    if (inline) mode = { kind: 'inline', deps };
    else {
      const queueUrl = target.config.ingestQueueUrl;
      if (queueUrl === undefined) throw new ConfigError('no ingest queue: pass --queue-url or set TALLY_INGEST_QUEUE_URL (or use --inline)');
      mode = { kind: 'queue', sender: new SqsNotificationSender({ client: clients.sqs, queueUrl, region: target.config.region }) };
    }
    if (options.json !== true) {
      io.out(`tally backfill: ${target.origin}\n`);
      io.out(`  objects named ${from}..${to} under s3://${bucket}/${target.logPrefix}\n`);
      io.out(
        inline
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
        concurrency: options.concurrency,
        ...(options.rate === undefined ? {} : { rate: options.rate }),
        dryRun: options.dryRun === true,
        progress,
      });
    } finally {
      progress.stop();
    }
    io.out(options.json === true ? `${JSON.stringify(report)}\n` : describeBackfill(report, from, to));
    return report.failed.length > 0 ? 1 : 0;
  },
});

/** Refuses a backwards range, and flags that do not go together with `--hours` (or need it). */
function checkBackfillOptions(options: BackfillOptions): void {
  checkDayRange(options);
  if (options.hours === true) {
    for (const [flag, given] of [['--inline', options.inline], ['--rate', options.rate], ['--verbose', options.verbose]] as const) {
      if (given !== undefined) throw new ValidationError(`${flag} does not go with --hours (it reads the objects here, and counts nothing)`);
    }
    hoursBackfillDays(options.from, options.to);
  } else if (options.account !== undefined) {
    throw new ValidationError('--account goes with --hours only (a backfill of objects counts every account they hold)');
  }
}

/** `tally backfill --hours`: recomputes the hours of the days, reports the ones it could not write. */
async function runHoursBackfill(options: BackfillOptions, io: CliIo, now: () => Date, { target, clients }: OpenTarget): Promise<number> {
  const { from, to } = options;
  const { backfillHours, createIngestDeps, DynamoBackfilledHours, DynamoCloseStore, DynamoSourceReader, DynamoUsageReader } = await import('../../aws-adapters');
  const table = { client: clients.dynamodb, tableName: target.config.tableName };
  const { source, settings } = createIngestDeps(target.config, clients, silentLog, now);
  if (options.json !== true) {
    io.out(`tally backfill --hours: ${target.origin}\n`);
    io.out(`  ${options.account === undefined ? 'every account' : `account ${options.account}`}, days ${from}..${to}, table ${target.config.tableName}: ${describeIngestSettings(target.config)}\n`);
  }
  const progress = progressDisplay(io, 'backfill --hours', 'objects');
  let report: HoursBackfillReport;
  try {
    report = await backfillHours(
      {
        ledger: new DynamoSourceReader(table),
        reader: new DynamoUsageReader({ ...table, consistentRead: true }),
        store: new DynamoBackfilledHours(table),
        accounts: new DynamoCloseStore(table),
        source,
        settings,
        clock: now,
      },
      { from, to, concurrency: options.concurrency, dryRun: options.dryRun === true, progress, ...(options.account === undefined ? {} : { account: options.account }) },
    );
  } finally {
    progress.stop();
  }
  io.out(options.json === true ? `${JSON.stringify(report)}\n` : describeHoursBackfill(report));
  return report.reported.length > 0 ? 1 : 0;
}

/** The human summary of a backfill of hours. */
export function describeHoursBackfill(report: HoursBackfillReport): string {
  const lines = [
    `${report.days} day(s), ${report.objects} log object(s) in the ledger (${report.objectsRead} read again), ${report.accountDays} account-day(s), ${report.covered} already covered by their counters' own hours`,
    report.dryRun
      ? `dry run: would write ${report.written}; already written ${report.unchanged}; not covered ${report.reported.length}; nothing changed`
      : `hours written ${report.written}; already written ${report.unchanged} (unchanged)` +
        (report.superseded > 0 ? `; kept another run's, from more objects, ${report.superseded}` : '') +
        `; not written ${report.reported.length}`,
  ];
  if (report.reported.length > 0) {
    lines.push(
      '',
      formatTable(
        ['day', 'account', 'objects', 'counters - hours', 'why not written'],
        report.reported.map((r) => [
          r.day,
          r.account,
          String(r.objects),
          Object.entries(r.gap)
            .filter(([, value]) => value !== 0)
            .map(([name, value]) => `${name} ${value}`)
            .join(', ') || '0',
          r.reason,
        ]),
      ).trimEnd(),
    );
  }
  lines.push('no counter was changed; the hours of a day are shown only where they sum to its counters.');
  return `${lines.join('\n')}\n`;
}

/** The human summary of a backfill. */
export function describeBackfill(report: BackfillReport, from: string, to: string): string {
  const lines = [
    `listed ${report.listed} object(s) under the prefix; ${report.selected} named ${from}..${to}` +
      (report.unnamed > 0 ? ` (${report.unnamed} not named like CloudFront logs, left alone)` : ''),
  ];
  const rest = report.selected - report.alreadyCounted - report.contributionsFilled - report.failed.length;
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
  if (report.contributionsFilled > 0) {
    lines.push(
      `counted before contributions were recorded: ${report.contributionsFilled} ` +
        `(${report.dryRun ? 'would be' : report.mode === 'queue' ? 'sent' : 'read'} again only to record them for tally explain; nothing is counted again)`,
    );
  }
  if (report.failed.length > 0) {
    lines.push('', formatTable(['object', 'kind', 'error'], report.failed.map((f) => [f.object, f.poison ? 'poison' : 'retryable', f.error])).trimEnd());
  }
  // The day after the last supported day cannot be added: say so rather than advise it.
  const next = addDays(to, 1);
  lines.push(
    `note: objects are chosen by the hour in their name and counted whole; late lines of ${to} sit in objects named ` +
      (isSupportedDay(next) ? `${next}-00 (add that day to include them).` : `${next}-00, past the days Tally supports (${SUPPORTED_DAYS_TEXT}).`),
  );
  return `${lines.join('\n')}\n`;
}
