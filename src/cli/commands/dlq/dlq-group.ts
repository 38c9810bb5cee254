import type { CommandGroup } from '../../command';

/** `tally dlq list|drop|dropped`: the dead-letter queue, inspected and cleared on record. */
export const DLQ_GROUP: CommandGroup = {
  name: 'dlq',
  summary: 'inspect the dead-letter queue; drop poison messages, on record',
  description:
    'What is in the dead-letter queue and why (dlq list), deleting messages that can never ' +
    'succeed with a record of who, when and why (dlq drop), and those records (dlq dropped). ' +
    'tally replay moves everything else back to ingestion.',
};
