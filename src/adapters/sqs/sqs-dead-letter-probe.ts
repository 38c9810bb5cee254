import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DeadLetterProbe } from '../../app/ports';
import { SqsReplayQueues } from './sqs-replay-queues';

/** Seconds a peeked message stays hidden if its release fails (it is released at once otherwise). */
const PEEK_HIDDEN_SECONDS = 30;

/**
 * The DLQ's depth (`ApproximateNumberOfMessages`) and the age of its oldest message:
 * up to 10 messages are peeked (their `SentTimestamp`, the time the message entered the
 * DLQ) and made visible again at once. On a deep queue the age is that of the oldest
 * of the ten it returned; the CloudWatch metric `ApproximateAgeOfOldestMessage` is exact.
 */
export class SqsDeadLetterProbe implements DeadLetterProbe {
  private readonly queues: SqsReplayQueues;
  private readonly client: SQSClient;
  private readonly dlqUrl: string;

  constructor(options: { client: SQSClient; dlqUrl: string }) {
    this.client = options.client;
    this.dlqUrl = options.dlqUrl;
    this.queues = new SqsReplayQueues({ client: options.client, dlqUrl: options.dlqUrl, waitSeconds: 0 });
  }

  async probe(now: Date): Promise<{ depth: number; oldestAgeSeconds: number | null }> {
    const { Attributes } = await this.client.send(
      new GetQueueAttributesCommand({ QueueUrl: this.dlqUrl, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
    );
    const depth = Number(Attributes?.ApproximateNumberOfMessages ?? 0) + Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
    if (depth === 0) return { depth, oldestAgeSeconds: null };
    const peeked = await this.queues.receive(10, PEEK_HIDDEN_SECONDS);
    try {
      const sent = peeked.map((message) => Number(message.attributes.SentTimestamp)).filter(Number.isFinite);
      return { depth, oldestAgeSeconds: sent.length === 0 ? null : Math.max(0, Math.floor((now.getTime() - Math.min(...sent)) / 1000)) };
    } finally {
      if (peeked.length > 0) await this.queues.release(peeked);
    }
  }
}
