import { ChangeMessageVisibilityCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { MessageVisibility } from '../../app/ports';

/** `arn:aws:sqs:us-east-1:123456789012:ingest` -> its queue URL. */
export function queueUrlFromArn(arn: string, endpoint?: string): string | undefined {
  const parts = arn.split(':');
  if (parts.length !== 6 || parts[2] !== 'sqs') return undefined;
  const [, partition, , region, account, name] = parts;
  const base = endpoint ?? `https://sqs.${region}.${partition === 'aws-cn' ? 'amazonaws.com.cn' : 'amazonaws.com'}`;
  return `${base.replace(/\/$/, '')}/${account}/${name}`;
}

/** Extends the visibility of an in-flight message with ChangeMessageVisibility. */
export class SqsMessageVisibility implements MessageVisibility {
  private readonly client: SQSClient;
  private readonly queueUrl: string | undefined;
  private readonly endpoint: string | undefined;

  constructor({ client, queueUrl, endpoint }: { client: SQSClient; queueUrl?: string; endpoint?: string }) {
    this.client = client;
    this.queueUrl = queueUrl;
    this.endpoint = endpoint;
  }

  async extend(message: { receiptHandle: string; eventSourceARN?: string }, seconds: number): Promise<void> {
    const queueUrl = this.queueUrl ?? (message.eventSourceARN ? queueUrlFromArn(message.eventSourceARN, this.endpoint) : undefined);
    if (queueUrl === undefined) return;
    await this.client.send(
      new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: message.receiptHandle, VisibilityTimeout: seconds }),
    );
  }
}
