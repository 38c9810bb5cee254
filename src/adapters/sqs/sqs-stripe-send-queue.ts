import { SendMessageBatchCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { StripeSendMessage, StripeSendQueue } from '../../app/ports';
import { mapWithConcurrency } from '../../app/concurrency';

/**
 * SQS takes at most 10 entries per `SendMessageBatch` and answers each failed entry in `Failed`
 * of a 200 answer (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessageBatch.html).
 */
const BATCH_ENTRIES = 10;
/** Calls per batch: the first, then the entries it reported `Failed` twice more. */
const BATCH_ATTEMPTS = 3;
/** Batches in flight at once: 10,000 linked accounts are 1,000 calls, a few seconds. */
const BATCH_CONCURRENCY = 4;

/** Puts work on the Stripe sender's queue: one message per closed-day revision, or per linked account. */
export class SqsStripeSendQueue implements StripeSendQueue {
  private readonly client: SQSClient;
  private readonly queueUrl: string;

  constructor({ client, queueUrl }: { client: SQSClient; queueUrl: string }) {
    this.client = client;
    this.queueUrl = queueUrl;
  }

  async enqueue(message: StripeSendMessage): Promise<void> {
    await this.client.send(new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: JSON.stringify(message) }));
  }

  /**
   * Sends `messages` ten to a `SendMessageBatch` call. A batch call can succeed while some of
   * its entries fail (its `Failed` list; HTTP 200): those entries alone are sent again, up to
   * {@link BATCH_ATTEMPTS} calls in all, and any still failing make this throw, naming how
   * many and SQS's code, so no account of a sweep is dropped unseen.
   */
  async enqueueAll(messages: readonly StripeSendMessage[]): Promise<void> {
    const batches: StripeSendMessage[][] = [];
    for (let i = 0; i < messages.length; i += BATCH_ENTRIES) batches.push(messages.slice(i, i + BATCH_ENTRIES));
    const failures = await mapWithConcurrency(batches, BATCH_CONCURRENCY, (batch) => this.sendBatch(batch));
    const failed = failures.flat();
    if (failed.length > 0) {
      const first = failed[0]!;
      throw new Error(
        `could not queue ${failed.length} of ${messages.length} Stripe send message(s) on ${this.queueUrl} after ${BATCH_ATTEMPTS} attempts: ${first.code} ${first.message} (${first.body})`,
      );
    }
  }

  /** One batch of at most ten, its failed entries retried; returns the entries that still failed. */
  private async sendBatch(batch: readonly StripeSendMessage[]): Promise<{ body: string; code: string; message: string }[]> {
    let pending = batch.map((message) => JSON.stringify(message));
    for (let attempt = 1; ; attempt++) {
      const output = await this.client.send(
        new SendMessageBatchCommand({ QueueUrl: this.queueUrl, Entries: pending.map((body, i) => ({ Id: String(i), MessageBody: body })) }),
      );
      const failed = (output.Failed ?? []).map((entry) => ({ body: pending[Number(entry.Id)]!, code: entry.Code ?? 'SendFailed', message: entry.Message ?? '' }));
      if (failed.length === 0 || attempt >= BATCH_ATTEMPTS) return failed;
      pending = failed.map((entry) => entry.body);
    }
  }
}
