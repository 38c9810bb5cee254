import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { WebhookOutbox } from '../../app/ports';

/** Puts webhook events on the webhook queue: one message per event, its body the event's raw JSON. */
export class SqsWebhookOutbox implements WebhookOutbox {
  private readonly client: SQSClient;
  private readonly queueUrl: string;

  constructor({ client, queueUrl }: { client: SQSClient; queueUrl: string }) {
    this.client = client;
    this.queueUrl = queueUrl;
  }

  async enqueue(event: { id: string; body: string }): Promise<void> {
    await this.client.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: event.body,
        MessageAttributes: { eventId: { DataType: 'String', StringValue: event.id } },
      }),
    );
  }
}
