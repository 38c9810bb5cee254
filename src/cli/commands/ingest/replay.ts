import { jsonLog, silentLog } from '../../../app/log';
import { replayDeadLetters, type ReplayMode, type ReplayReport } from '../../../app/ingest/replay';
import { ConfigError } from '../../../domain/errors';
import { defineCommand, JSON_OPTION } from '../../command';
import { describeIngestSettings } from '../../describe-settings';
import { formatTable } from '../../io';
import { progressDisplay } from '../../progress';
import { integerFrom } from '../../values';

interface ReplayOptions {
  queue?: string;
  inline?: boolean;
  max?: number;
  dryRun?: boolean;
  json?: boolean;
  verbose?: boolean;
}

/** `tally replay`: exit 0 when every message was replayed, 1 when some failed again. */
export const replayCommand = defineCommand<ReplayOptions>({
  name: 'replay',
  summary: 'move dead-lettered messages back to ingestion (or count them inline)',
  description:
    'Moves dead-lettered messages back to the ingest queue (default), or with --inline processes ' +
    "them here with the ingest handler's own code. A message is deleted from the dead-letter queue " +
    'only after it was re-sent or processed; one that fails again stays there and is reported with ' +
    'its error. A poison message (a body that is no S3 notification, or one whose object is gone, ' +
    'replaced or no log: what tally dlq list calls poison) is never re-sent: it stays, named, and ' +
    'replay exits 1, until tally dlq drop removes it on record (tally dlq list says why each message ' +
    'failed). Safe to run twice, or while the consumer runs: counted objects are skipped by the ' +
    'ledger, half-counted ones complete without counting an increment twice.',
  options: [
    { flags: '--queue <url>', help: 'the dead-letter queue to drain (same as --dlq-url)' },
    {
      flags: '--inline',
      help: "count here instead of re-sending (with TALLY_KEY_BYTES and TALLY_HISTORY_CAP: they must be the consumer's; a TALLY_SHARDS that disagrees with the table's shard counts is refused)",
    },
    { flags: '--max <n>', help: 'stop after N messages', read: integerFrom(1) },
    { flags: '--dry-run', help: 'list what would be replayed or kept; attempts nothing, every message stays in the DLQ' },
    JSON_OPTION,
    { flags: '--verbose', help: 'the ingest log (JSON lines) on stderr, with --inline' },
  ],
  target: { settings: ['resolver', 'metrics'] },
  async run({ options, context: { io, now }, target: open }) {
    if (options.queue === '') throw new ConfigError('--queue is empty: give the dead-letter queue URL, or leave it out to use TALLY_DLQ_URL or the local stack');
    const { target, clients } = await open(options.queue === undefined ? {} : { dlqUrl: options.queue });
    const { checkClock, createIngestDeps, prepareToWrite, SqsMessageVisibility, SqsReplayQueues, sourceQueueOf } = await import('../../aws-adapters');
    const dlqUrl = target.dlqUrl;
    if (dlqUrl === undefined) throw new ConfigError('no dead-letter queue: pass --queue (or --dlq-url) or set TALLY_DLQ_URL');
    const inline = options.inline === true;
    let ingestQueueUrl = target.config.ingestQueueUrl;
    if (!inline && ingestQueueUrl === undefined) ingestQueueUrl = await sourceQueueOf(clients.sqs, dlqUrl);
    if (!inline && ingestQueueUrl === undefined) {
      throw new ConfigError('no ingest queue to re-send to: pass --queue-url or set TALLY_INGEST_QUEUE_URL (or use --inline)');
    }
    const queues = new SqsReplayQueues({ client: clients.sqs, dlqUrl, ...(ingestQueueUrl === undefined ? {} : { ingestQueueUrl }) });
    const log = options.verbose === true ? jsonLog((line) => io.err(line), 'info', { source: 'tally replay' }) : silentLog;
    const ingest = createIngestDeps(target.config, clients, log, now);
    if (inline && options.dryRun !== true) {
      // An inline run writes like the consumer: on a clock DynamoDB agrees with, and on the table's shard counts.
      await checkClock(clients.dynamodb, target.config.tableName, now);
      await prepareToWrite(ingest, target.config, now());
    }
    // The heartbeat keeps the message hidden in the queue it was received from: the DLQ.
    const deps = { ...ingest, visibility: new SqsMessageVisibility({ client: clients.sqs, queueUrl: dlqUrl }) };
    const mode: ReplayMode = inline ? { kind: 'inline', deps } : { kind: 'queue' };

    if (options.json !== true) {
      io.out(`tally replay: ${target.origin}\n`);
      io.out(`  from ${dlqUrl}\n`);
      io.out(inline ? `  inline into ${target.config.tableName}: ${describeIngestSettings(target.config)}\n` : `  to   ${ingestQueueUrl}\n`);
    }
    const progress = progressDisplay(io, 'replay', 'messages');
    let report: ReplayReport;
    try {
      report = await replayDeadLetters({
        queues,
        mode,
        ledger: deps.store,
        // What tally dlq list calls poison stays in the DLQ (inline, the consumer's own code finds it by failing).
        inspection: { store: ingest.store, source: ingest.source, settings: ingest.settings },
        region: target.config.region,
        ...(options.max === undefined ? {} : { max: options.max }),
        dryRun: options.dryRun === true,
        progress,
      });
    } finally {
      progress.stop();
    }
    io.out(options.json === true ? `${JSON.stringify(report)}\n` : describeReplay(report));
    return report.failed > 0 && !report.dryRun ? 1 : 0;
  },
});

const DROP_HINT = 'tally dlq list says why; tally dlq drop --poison --reason TEXT removes them, on record';

/** The human summary of a replay. */
export function describeReplay(report: ReplayReport): string {
  const lines: string[] = [];
  if (report.dryRun) {
    lines.push(`dry run: ${report.received} message(s) in the dead-letter queue; nothing was sent, processed or deleted`);
    if (report.poisonKept > 0) {
      lines.push(`a replay would take ${report.wouldReplay} and leave ${report.poisonKept} poison message(s) in the DLQ (${DROP_HINT})`);
    }
    const rows = report.messages.map((message) => [
      message.messageId,
      String(message.receiveCount),
      message.outcome === 'would-keep' ? 'keep (poison)' : 'replay',
      message.outcome === 'would-keep' ? (message.error ?? '') : message.objects.join(' ') || '(no objects)',
      message.alreadyCounted === undefined ? '' : `${message.alreadyCounted.length}/${message.objects.length}`,
    ]);
    if (rows.length > 0) lines.push('', formatTable(['message', 'receives', 'would', 'objects', 'counted'], rows).trimEnd());
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
    if (report.poisonKept > 0) lines.push(`poison messages stay in the DLQ until dropped (${DROP_HINT})`);
  }
  return `${lines.join('\n')}\n`;
}
