import { dropDeadLetters, type DropReport, type DropSelection } from '../../../app/ingest/dead-letters';
import { MAX_REASON_LENGTH } from '../../../domain/counters/adjustment';
import { ValidationError } from '../../../domain/errors';
import { messageId, recordText } from '../../values';
import { ACTOR_OPTION, actorOf, defineCommand, JSON_OPTION } from '../../command';
import { formatTable } from '../../io';
import { DLQ_GROUP } from './dlq-group';
import { DLQ_QUEUE_OPTION, openDeadLetterQueue } from './dlq-list';

interface DlqDropOptions {
  queue?: string;
  id?: string[];
  poison?: boolean;
  reason: string;
  actor?: string;
  force?: boolean;
  dryRun?: boolean;
  json?: boolean;
}

/** `tally dlq drop`: exit 0 when every selected message was dropped on record, 1 when one was not (or not found). */
export const dlqDropCommand = defineCommand<DlqDropOptions>({
  group: DLQ_GROUP,
  name: 'drop',
  summary: 'delete messages from the dead-letter queue, each with a record of who, when and why',
  description:
    'Deletes dead-lettered messages: those named with --id, or every message tally dlq list ' +
    'diagnoses as poison (--poison). Before each delete it writes a record into the usage table ' +
    '(who, when, --reason, the diagnosis, the objects, the message id and its body), so a dropped ' +
    'notification can be read, and re-sent, later: tally dlq dropped lists them. A message named ' +
    'by --id that may still carry usage (retryable, or its checks failed) is kept unless --force. ' +
    'Messages not dropped stay in the DLQ, visible again when the command ends.',
  options: [
    DLQ_QUEUE_OPTION,
    { flags: '--id <message-id>', help: 'a message to drop (repeat for more)', repeatable: true, read: messageId },
    { flags: '--poison', help: 'drop every message diagnosed poison' },
    { flags: '--reason <text>', help: `why, kept in each record (at most ${MAX_REASON_LENGTH} characters)`, required: true, read: recordText(MAX_REASON_LENGTH) },
    ACTOR_OPTION,
    { flags: '--force', help: 'with --id: drop messages that may still carry usage (retryable, unknown)' },
    { flags: '--dry-run', help: 'say what would be dropped; record and delete nothing' },
    JSON_OPTION,
  ],
  target: { settings: ['resolver', 'metrics'] },
  check(options) {
    if ((options.id === undefined) === (options.poison !== true)) throw new ValidationError('name the messages: --id ID (repeatable) or --poison, not both');
    if (options.force === true && options.id === undefined) throw new ValidationError('--force goes with --id: --poison drops poison messages only');
  },
  async run({ options, context: { io, env }, target }) {
    const dlq = await openDeadLetterQueue(() => target(options.queue === undefined ? {} : { dlqUrl: options.queue }));
    const { DynamoDropRecords } = await import('../../aws-adapters');
    const tableName = dlq.target.config.tableName;
    if (options.json !== true) io.out(`tally dlq drop: ${dlq.target.origin}\n  dead-letter queue ${dlq.dlqUrl}\n  records into ${tableName}\n`);
    const select: DropSelection = options.id === undefined ? { poison: true } : { ids: options.id };
    const report = await dropDeadLetters({
      queues: dlq.queues,
      queueUrl: dlq.dlqUrl,
      deps: dlq.deps,
      records: new DynamoDropRecords({ client: dlq.clients.dynamodb, tableName }),
      select,
      reason: options.reason.trim(),
      actor: actorOf(options.actor, env),
      dryRun: options.dryRun === true,
      force: options.force === true,
    });
    io.out(options.json === true ? `${JSON.stringify(report)}\n` : describeDrop(report, 'poison' in select));
    return succeeded(report) ? 0 : 1;
  },
});

/** Every selected message was dropped (or, on a dry run, would be) and every id was found. */
function succeeded(report: DropReport): boolean {
  return (
    report.notFound.length === 0 &&
    report.refused.length === 0 &&
    report.messages.every((message) => message.outcome === 'dropped' || message.outcome === 'would-drop')
  );
}

/** The human account of a drop. */
export function describeDrop(report: DropReport, poison: boolean): string {
  const lines: string[] = [];
  const taken = report.messages.filter((message) => message.outcome === 'dropped' || message.outcome === 'would-drop');
  if (report.messages.length === 0 && report.refused.length === 0 && report.notFound.length === 0) {
    lines.push(poison ? `no poison message among the ${report.received} in the DLQ: nothing to drop` : 'nothing to drop');
  } else if (report.dryRun) {
    lines.push(`dry run: would drop ${taken.length} of the ${report.received} message(s) in the DLQ; nothing was recorded or deleted`);
  } else {
    lines.push(`dropped ${taken.length} of the ${report.received} message(s) in the DLQ, each on record (tally dlq dropped lists them)`);
  }
  if (report.messages.length > 0) {
    lines.push(
      '',
      formatTable(
        ['message', 'outcome', 'verdict', 'objects', 'reason'],
        report.messages.map((message) => [
          message.messageId,
          message.recordedBefore === true ? `${message.outcome} (recorded before)` : message.outcome,
          message.verdict,
          message.objects.join(' ') || '-',
          message.error === undefined ? message.reason : `${message.reason}; ${message.error}`,
        ]),
      ).trimEnd(),
    );
  }
  for (const refused of report.refused) {
    lines.push(`kept ${refused.messageId}: ${refused.verdict}, it may still carry usage (${refused.reason}); tally replay counts it, --force drops it anyway`);
  }
  if (report.notFound.length > 0) {
    lines.push(`not in the dead-letter queue (or hidden by another reader, such as a running replay): ${report.notFound.join(', ')}`);
  }
  if (report.messages.some((message) => message.outcome === 'not-deleted' || message.outcome === 'not-recorded')) {
    lines.push('messages not deleted stay in the DLQ; run the drop again');
  }
  return `${lines.join('\n')}\n`;
}
