import { listDeadLetters, type DeadLetterListing } from '../../../app/ingest/dead-letters';
import { silentLog } from '../../../app/log';
import { ConfigError } from '../../../domain/errors';
import { defineCommand, JSON_OPTION } from '../../command';
import { formatTable } from '../../io';
import type { OpenTarget } from '../../open-target';
import { integerFrom } from '../../values';
import { DLQ_GROUP } from './dlq-group';

interface DlqListOptions {
  queue?: string;
  max?: number;
  json?: boolean;
}

/** The `--queue` option every dlq subcommand takes. */
export const DLQ_QUEUE_OPTION = { flags: '--queue <url>', help: 'the dead-letter queue (same as --dlq-url)' } as const;

/** The target's dead-letter queue, its SQS client and what inspecting a message reads. */
export async function openDeadLetterQueue(open: () => Promise<OpenTarget>) {
  const { target, clients } = await open();
  const dlqUrl = target.dlqUrl;
  if (dlqUrl === undefined) throw new ConfigError('no dead-letter queue: pass --queue (or --dlq-url) or set TALLY_DLQ_URL');
  const { createIngestDeps, SqsReplayQueues } = await import('../../aws-adapters');
  const { store, source, settings } = createIngestDeps(target.config, clients, silentLog);
  return { target, clients, dlqUrl, queues: new SqsReplayQueues({ client: clients.sqs, dlqUrl }), deps: { store, source, settings } };
}

/** `tally dlq list`: exit 0 whatever it finds (it changes nothing). */
export const dlqListCommand = defineCommand<DlqListOptions>({
  group: DLQ_GROUP,
  name: 'list',
  summary: 'what is in the dead-letter queue, and why each message failed',
  description:
    'Lists the dead-letter queue: per message its id, receive count, first sent time, the objects ' +
    'it names and a verdict with its reason. poison: it can never succeed (the body is no S3 ' +
    'notification, or an object is gone, replaced or no log the consumer can read); retryable: a ' +
    'replay counts it (the reason is the failed attempt on record, if any); counted: every object ' +
    'is already counted; unknown: a check failed. It reads the ledger and S3 (and, for an object no ' +
    'attempt ever read, the object itself) and writes nothing. Every message is visible again as ' +
    'soon as the queue has been read (the receive count shown includes this read).',
  options: [DLQ_QUEUE_OPTION, { flags: '--max <n>', help: 'read at most N messages', read: integerFrom(1) }, JSON_OPTION],
  target: { settings: ['resolver', 'metrics'] },
  async run({ options, context: { io }, target }) {
    const dlq = await openDeadLetterQueue(() => target(options.queue === undefined ? {} : { dlqUrl: options.queue }));
    if (options.json !== true) io.out(`tally dlq list: ${dlq.target.origin}\n  dead-letter queue ${dlq.dlqUrl}\n`);
    const listing = await listDeadLetters({ queues: dlq.queues, deps: dlq.deps, ...(options.max === undefined ? {} : { max: options.max }) });
    io.out(options.json === true ? `${JSON.stringify({ queueUrl: dlq.dlqUrl, ...listing })}\n` : describeListing(listing));
    return 0;
  },
});

/** The human listing: a summary line, one row per message, and what to do next. */
export function describeListing(listing: DeadLetterListing): string {
  if (listing.messages.length === 0) return 'the dead-letter queue is empty\n';
  const counts = Object.entries(listing.verdicts)
    .filter(([, count]) => count > 0)
    .map(([verdict, count]) => `${count} ${verdict}`)
    .join(', ');
  const lines = [`${listing.messages.length} message(s): ${counts}; all visible again, nothing deleted`, ''];
  lines.push(
    formatTable(
      ['message', 'receives', 'first sent', 'verdict', 'objects', 'reason'],
      listing.messages.map((message) => [
        message.messageId,
        String(message.receiveCount),
        message.sentAt ?? '',
        message.verdict,
        message.objects.join(' ') || '-',
        message.reason,
      ]),
    ).trimEnd(),
  );
  if (listing.verdicts.poison > 0) {
    lines.push('', 'poison messages never succeed and stay in the DLQ: once nothing in them is owed, tally dlq drop --poison --reason TEXT deletes them, on record');
  }
  if (listing.verdicts.retryable + listing.verdicts.counted + listing.verdicts['nothing-to-count'] > 0) {
    lines.push('tally replay takes the other messages back to ingestion');
  }
  return `${lines.join('\n')}\n`;
}
