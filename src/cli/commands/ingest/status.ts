import { HEALTH_DAYS, MAX_HEALTH_DAYS, type HealthReport } from '../../../domain/reading/health';
import { reconcileVerdict } from '../../../domain/reading/reconcile-verdict';
import { defineCommand, JSON_OPTION } from '../../command';
import { formatTable } from '../../io';
import { integerFrom } from '../../values';

/** `tally status`: ingestion health, as `GET /v1/health` answers it; exit 0 whatever it finds (it changes nothing). */
export const statusCommand = defineCommand<{ json?: boolean; days?: number }>({
  name: 'status',
  summary: 'show how ingestion is doing (what GET /v1/health answers)',
  description:
    'Prints the newest log hour counted per distribution (or key prefix), the objects processed in the last hour and day, ' +
    'the rates of unattributed and malformed lines with the objects that had most, the dead-letter queue (depth, oldest message), ' +
    'the last tally reconcile and the history horizon, and per day of the logs the objects and lines counted. Read from the ' +
    'ledger of yesterday and today (UTC; --days N for the last N days, one query each), the DLQ and the last reconcile record: ' +
    'no scan. --json prints the body of GET /v1/health.',
  options: [
    { flags: '--days <n>', help: `days of the ledger read, up to today (1-${MAX_HEALTH_DAYS}; default ${HEALTH_DAYS})`, read: integerFrom(1, MAX_HEALTH_DAYS) },
    JSON_OPTION,
  ],
  target: { settings: [] },
  async run({ options, context: { io }, target: open }) {
    const { target, clients } = await open();
    const { createHealthDeps, readHealth } = await import('../../aws-adapters');
    const report = await readHealth(
      createHealthDeps({ dynamodb: clients.dynamodb, config: target.config, sqs: clients.sqs, ...(target.dlqUrl === undefined ? {} : { dlqUrl: target.dlqUrl }) }),
      options.days ?? HEALTH_DAYS,
    );
    io.out(options.json === true ? `${JSON.stringify(report)}\n` : `tally status: ${target.origin}\n${describeHealth(report)}`);
    return 0;
  },
});

const percent = (rate: number) => `${(rate * 100).toFixed(2)}%`;

/** The human form of a health report. */
export function describeHealth(h: HealthReport): string {
  const range = h.days.length <= 2 ? h.days.join(' and ') : `${h.days[0]}..${h.days[h.days.length - 1]}`;
  const lines = [`ledger of ${range} (UTC), at ${h.generatedAt}`, ''];
  lines.push(
    h.freshness.length === 0
      ? 'freshness: no log object counted today or yesterday'
      : formatTable(['distribution or prefix', 'newest log hour', 'counted at'], h.freshness.map((f) => [f.source, `${f.newestHour}:00Z`, f.processedAt])).trimEnd(),
    '',
    `objects processed (of those with logs of ${range}): ${h.objects.lastHour} in the last hour, ${h.objects.lastDay} in the last day`,
    `lines (last day): read ${h.lines.read} = counted ${h.lines.counted} + unattributed ${h.lines.unattributed} (${percent(h.lines.unattributedRate)}) + malformed ${h.lines.malformed} (${percent(h.lines.malformedRate)})`,
  );
  if (h.perDay.length > 0) {
    lines.push(
      '',
      formatTable(
        ['day of the logs', 'objects', 'lines read', 'counted', 'unattributed', 'malformed', 'last processed'],
        h.perDay.map((d) => [d.day, String(d.objects), String(d.lines.read), String(d.lines.counted), String(d.lines.unattributed), String(d.lines.malformed), d.lastProcessedAt ?? '-']),
      ).trimEnd(),
    );
  }
  if (h.missedKeys.length > 0) {
    lines.push(`hosts the resolver missed (objects; why): ${h.missedKeys.map((k) => `${k.key} (${k.objects}; ${k.reason})`).join(', ')}`);
  }
  if (h.missed.length > 0) {
    lines.push('', formatTable(['what the resolver or parser missed (most first)', 'unattributed', 'malformed', 'read'], h.missed.map((m) => [m.object, String(m.unattributed), String(m.malformed), String(m.read)])).trimEnd());
  }
  lines.push(
    '',
    h.deadLetters === null
      ? 'dead-letter queue: not configured (TALLY_DLQ_URL)'
      : `dead-letter queue: ${h.deadLetters.depth} message(s)${h.deadLetters.oldestAgeSeconds === null ? '' : `, oldest ${h.deadLetters.oldestAgeSeconds} s old`}`,
    h.lastReconcile === null
      ? 'last reconcile: none recorded'
      : `last reconcile: ${h.lastReconcile.at} over ${h.lastReconcile.from}..${h.lastReconcile.to}${h.lastReconcile.account === undefined ? '' : ` (${h.lastReconcile.account})`}: ` +
          `${reconcileVerdict(h.lastReconcile)}; ${h.lastReconcile.objects} object(s), ${h.lastReconcile.accountDays} account-day(s)`,
    `history horizon: ${h.history.shards} shards x ${h.history.cap} keys = the last ${h.history.keysPerAccountDay} increments of an account-day in its histories; ` +
      `older keys by their tombstones for ${h.history.tombstoneDays} days`,
  );
  return `${lines.join('\n')}\n`;
}
