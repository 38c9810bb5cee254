import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { StripeSendMessage, StripeSendQueue } from '../app/ports';

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
}
