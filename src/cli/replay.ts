import { parseArgs } from 'node:util';
import { jsonLog, silentLog } from '../app/log';
import { replayDeadLetters, type ReplayMode, type ReplayReport } from '../app/replay';
import { createIngestDeps } from '../adapters/ingest-deps';
import { SqsMessageVisibility } from '../adapters/sqs-visibility';
import { SqsReplayQueues, sourceQueueOf } from '../adapters/sqs-replay-queues';
import { ValidationError } from '../domain/errors';
import { withUsageErrors } from './flags';
import { describeIngestSettings } from './describe-settings';
import { formatTable, type CliIo } from './io';
import { progressDisplay } from './progress';
import { closeClients, INGEST_OPTIONS, openTarget, TARGET_OPTIONS, TARGET_USAGE } from './target-options';

type Env = Readonly<Record<string, string | undefined>>;

export const REPLAY_USAGE = `usage: tally replay [--queue DLQ_URL] [--inline] [--max N] [--dry-run] [--json] [target flags]

Moves dead-lettered messages back to the ingest queue (default), or with --inline
processes them here with the ingest handler's own code. A message is deleted from
the dead-letter queue only after it was re-sent or processed; one that fails again
stays there and is reported with its error. Safe to run twice, or while the
consumer runs: counted objects are skipped by the ledger, half-counted ones
complete without counting an increment twice.

  --queue URL      the dead-letter queue to drain (same as --dlq-url)
  --inline         count here instead of re-sending (uses TALLY_SHARDS, TALLY_KEY_BYTES,
                   TALLY_HISTORY_CAP, TALLY_RESOLVER, TALLY_METRICS: they must be the consumer's)
  --max N          stop after N messages
  --dry-run        list what would be replayed; every message stays in the DLQ
  --json           print the report as JSON
  --verbose        the ingest log (JSON lines) on stderr, with --inline

${TARGET_USAGE}`;

/** `tally replay`: exit 0 when every message was replayed, 1 when some failed again. */
export function runReplay(argv: readonly string[], io: CliIo, env: Env = process.env, cwd = process.cwd()): Promise<number> {
  return withUsageErrors('replay', REPLAY_USAGE, io, () => replayCommand(argv, io, env, cwd));
}

async function replayCommand(argv: readonly string[], io: CliIo, env: Env, cwd: string): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      ...TARGET_OPTIONS,
      ...INGEST_OPTIONS,
      queue: { type: 'string' },
      inline: { type: 'boolean', default: false },
      max: { type: 'string' },
      'dry-run': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      verbose: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.out(`${REPLAY_USAGE}\n`);
    return 0;
  }
  const max = values.max === undefined ? undefined : Number(values.max);
  if (max !== undefined && (!Number.isInteger(max) || max < 1)) throw new ValidationError('--max must be a whole number of at least 1');
  const { target, clients } = openTarget({ ...values, 'dlq-url': values.queue ?? values['dlq-url'] }, env, cwd);
  try {
    const dlqUrl = target.dlqUrl;
    if (dlqUrl === undefined) {
      io.err('tally replay: no dead-letter queue: pass --queue (or --dlq-url) or set TALLY_DLQ_URL\n');
      return 2;
    }
    let ingestQueueUrl = target.config.ingestQueueUrl;
    if (!values.inline && ingestQueueUrl === undefined) ingestQueueUrl = await sourceQueueOf(clients.sqs, dlqUrl);
    if (!values.inline && ingestQueueUrl === undefined) {
      io.err('tally replay: no ingest queue to re-send to: pass --queue-url or set TALLY_INGEST_QUEUE_URL (or use --inline)\n');
      return 2;
    }
    const queues = new SqsReplayQueues({ client: clients.sqs, dlqUrl, ...(ingestQueueUrl === undefined ? {} : { ingestQueueUrl }) });
    const log = values.verbose ? jsonLog((line) => io.err(line), 'info', { source: 'tally replay' }) : silentLog;
    const ingest = createIngestDeps(target.config, clients, log);
    // The heartbeat keeps the message hidden in the queue it was received from: the DLQ.
    const deps = { ...ingest, visibility: new SqsMessageVisibility({ client: clients.sqs, queueUrl: dlqUrl }) };
    const mode: ReplayMode = values.inline ? { kind: 'inline', deps } : { kind: 'queue' };

    if (!values.json) {
      io.out(`tally replay: ${target.origin}\n`);
      io.out(`  from ${dlqUrl}\n`);
      io.out(
        values.inline
          ? `  inline into ${target.config.tableName}: ${describeIngestSettings(target.config)}\n`
          : `  to   ${ingestQueueUrl}\n`,
      );
    }
    const progress = progressDisplay(io, 'replay', 'messages');
    let report: ReplayReport;
    try {
      report = await replayDeadLetters({
        queues,
        mode,
        ledger: deps.store,
        region: target.config.region,
        ...(max === undefined ? {} : { max }),
        dryRun: values['dry-run'],
        progress,
      });
    } finally {
      progress.stop();
    }
    if (values.json) io.out(`${JSON.stringify(report)}\n`);
    else io.out(describeReplay(report));
    return report.failed > 0 && !report.dryRun ? 1 : 0;
  } finally {
    closeClients(clients);
  }
}

/** The human summary of a replay. */
export function describeReplay(report: ReplayReport): string {
  const lines: string[] = [];
  if (report.dryRun) {
    lines.push(`dry run: ${report.received} message(s) in the dead-letter queue; nothing was sent, processed or deleted`);
    const rows = report.messages.map((message) => [
      message.messageId,
      String(message.receiveCount),
      message.outcome === 'failed' ? `poison: ${message.error ?? ''}` : message.objects.join(' ') || '(no objects)',
      message.alreadyCounted === undefined ? '' : `${message.alreadyCounted.length}/${message.objects.length}`,
    ]);
    if (rows.length > 0) lines.push('', formatTable(['message', 'receives', 'objects', 'counted'], rows).trimEnd());
    return `${lines.join('\n')}\n`;
  }
  if (report.received === 0) return 'the dead-letter queue is empty: nothing to replay\n';
  const action = report.mode === 'queue' ? `re-sent ${report.resent}` : `processed ${report.processed}`;
  lines.push(
    `received ${report.received} message(s): ${action}, skipped ${report.skipped}, failed ${report.failed} (kept in the DLQ); deleted from the DLQ ${report.deleted}`,
  );
  if (report.mode === 'inline') {
    const o = report.objects;
    lines.push(
      `objects counted ${o.counted} (increments applied ${o.applied}, already applied ${o.duplicates}), already counted before ${o.alreadyCounted}`,
    );
  }
  if (report.notDeleted > 0) {
    lines.push(`${report.notDeleted} message(s) were replayed but could not be deleted: a later replay repeats them without counting twice`);
  }
  const failed = report.messages.filter((message) => message.outcome === 'failed');
  if (failed.length > 0) {
    lines.push('', `failed, kept in the dead-letter queue (${failed.length}):`);
    lines.push(
      formatTable(
        ['message', 'receives', 'kind', 'error'],
        failed.map((message) => [message.messageId, String(message.receiveCount), message.poison ? 'poison' : 'retryable', message.error ?? '']),
      ).trimEnd(),
    );
  }
  return `${lines.join('\n')}\n`;
}
