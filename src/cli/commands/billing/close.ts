import type { CloseReport, DayCloseResult } from '../../../app/billing/close-days';
import { ConfigError } from '../../../domain/errors';
import { defineCommand, JSON_OPTION } from '../../command';
import { formatTable } from '../../io';
import { day } from '../../values';

interface CloseOptions {
  day?: string;
  dryRun?: boolean;
  json?: boolean;
}

/** `tally close`: exit 0 when every day was handled, 1 when one failed (a rerun resumes it). */
export const closeCommand = defineCommand<CloseOptions>({
  name: 'close',
  summary: 'close the days that are due, record late usage as revisions, export and notify',
  description:
    'Does on demand what the scheduled closer does every hour: closes each day whose end plus the ' +
    'grace period (TALLY_CLOSE_GRACE_HOURS) has passed, recording every account\'s totals once ' +
    '(revision 1, the closed snapshot); turns usage that reached a closed day since into a new ' +
    'revision; writes each revision to S3 as Parquet and CSV (TALLY_EXPORT_BUCKET, else the log ' +
    'bucket, under TALLY_EXPORT_PREFIX) and queues its webhook event (TALLY_WEBHOOK_QUEUE_URL). ' +
    'Running it again changes nothing. With --day, only that day: closed if due, else every ' +
    'account of it is compared with its revisions.',
  options: [
    { flags: '--day <day>', help: 'only this day (YYYY-MM-DD); it must be past its grace period', read: day },
    { flags: '--dry-run', help: 'say what would be closed or revised; write nothing' },
    JSON_OPTION,
  ],
  target: { settings: ['metrics'] },
  notes: 'Cost: see docs/operations.md (closing: about 3 requests per account-day; late usage: 3 per changed account-day).',
  async run({ options, context: { io, env }, target: open }) {
    const { target, clients } = await open();
    const exportBucket = target.exportBucket;
    if (exportBucket === undefined) throw new ConfigError('no export bucket: set TALLY_EXPORT_BUCKET or TALLY_LOG_BUCKET (or pass --bucket)');
    const exportPrefix = target.exportPrefix ?? env.TALLY_EXPORT_PREFIX ?? 'exports/';
    const { createCloserDeps } = await import('../../../adapters/wiring/handoff-deps');
    const { closeDays } = await import('../../../app/billing/close-days');
    const { silentLog } = await import('../../../app/log');
    const deps = createCloserDeps(
      { tally: target.config, exportBucket, exportPrefix, ...(target.webhookQueueUrl === undefined ? {} : { webhookQueueUrl: target.webhookQueueUrl }) },
      clients,
      silentLog,
    );
    if (options.json !== true) {
      io.out(`tally close: ${target.origin}\n`);
      io.out(
        `  table ${target.config.tableName}, grace ${target.config.closeGraceHours} h; exports s3://${exportBucket}/${exportPrefix}; ` +
          `webhooks ${target.webhookQueueUrl === undefined ? 'off (no TALLY_WEBHOOK_QUEUE_URL)' : `queued to ${target.webhookQueueUrl}`}${options.dryRun === true ? '; dry run' : ''}\n`,
      );
    }
    const report = await closeDays(deps, { ...(options.day === undefined ? {} : { day: options.day }), dryRun: options.dryRun === true });
    io.out(options.json === true ? `${JSON.stringify(report)}\n` : describeClose(report));
    return report.failed > 0 ? 1 : 0;
  },
});

function describeWritten(result: DayCloseResult): string {
  return (result.written ?? []).map((w) => `revision ${w.revision}: ${w.accounts} account(s)`).join(', ');
}

/** The human summary of a closer run. */
export function describeClose(report: CloseReport): string {
  const lines = [`days up to ${report.lastClosableDay} can be closed (now ${report.now})`];
  const { found, cleared, waiting } = report.markers;
  if (report.days.length === 0) {
    // No day listed: every marked day is closed and its revisions already hold what its markers point at.
    lines.push(
      found === 0
        ? 'nothing to do: every due day is closed and no late usage is waiting'
        : `nothing to do: every due day is closed and its revisions already hold the late usage its ${found} late marker(s) point at`,
    );
  } else {
    lines.push(
      '',
      formatTable(
        ['day', 'action', 'revisions written', 'closed at', 'exported', 'events'],
        report.days.map((result) => [
          result.day,
          result.action,
          describeWritten(result) || '-',
          result.closedAt ?? '-',
          String(result.exports?.length ?? 0),
          String(result.events?.length ?? 0),
        ]),
      ).trimEnd(),
      '',
    );
  }
  for (const result of report.days.filter((r) => r.error !== undefined)) lines.push(`FAILED ${result.day}: ${result.error} (rerun to resume it)`);
  lines.push(
    report.dryRun
      ? `late markers: ${found} found; a dry run clears none (a run clears those its revisions hold and that have settled)`
      : `late markers: ${found} found, ${cleared} cleared, ${waiting} kept for the next run`,
  );
  for (const reason of report.skipped) lines.push(reason);
  return `${lines.join('\n')}\n`;
}
