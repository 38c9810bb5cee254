import type { DeadLetterDrop } from '../../../domain/counters/dead-letter';
import { defineCommand, JSON_OPTION } from '../../command';
import { formatTable } from '../../io';
import { DLQ_GROUP } from './dlq-group';

/** `tally dlq dropped`: the records `tally dlq drop` wrote; exit 0. */
export const dlqDroppedCommand = defineCommand<{ json?: boolean }>({
  group: DLQ_GROUP,
  name: 'dropped',
  summary: 'the messages dropped from the dead-letter queue: who, when, why',
  description:
    'Lists the records tally dlq drop wrote into the usage table, oldest first: the message id, ' +
    'when and by whom it was dropped, the reason given, the diagnosis and the objects it named. ' +
    '--json adds each message body (and the queue), so a notification dropped by mistake can be ' +
    'sent to the ingest queue again.',
  options: [JSON_OPTION],
  target: { settings: [] },
  async run({ options, context: { io }, target: open }) {
    const { target, clients } = await open();
    const { DynamoDropRecords } = await import('../../aws-adapters');
    const drops = await new DynamoDropRecords({ client: clients.dynamodb, tableName: target.config.tableName }).list();
    io.out(options.json === true ? `${JSON.stringify({ table: target.config.tableName, dropped: drops })}\n` : describeDropped(drops));
    return 0;
  },
});

/** The human listing of drop records. */
export function describeDropped(drops: readonly DeadLetterDrop[]): string {
  if (drops.length === 0) return 'no message was ever dropped from the dead-letter queue\n';
  return (
    formatTable(
      ['dropped', 'message', 'by', 'reason', 'state', 'verdict', 'objects', 'diagnosis'],
      drops.map((drop) => [
        drop.droppedAt ?? drop.recordedAt,
        drop.messageId,
        drop.actor,
        drop.reason,
        drop.error === undefined ? drop.state : `${drop.state}: ${drop.error}`,
        drop.verdict,
        drop.objects.join(' ') || '-',
        drop.diagnosis,
      ]),
    ) + `\n${drops.length} message(s) dropped; tally dlq dropped --json shows their bodies\n`
  );
}
