import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ListDeadLetterSourceQueuesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { DeadLetter, ReplayQueues } from '../../app/ports';

/** SQS takes at most 10 entries per batch call. */
const BATCH = 10;

function chunks<T>(items: readonly T[], size = BATCH): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * The dead-letter queue and the ingest queue as `tally replay` uses them: receive from
 * the DLQ (hidden while worked on), send copies to the ingest queue, delete from the
 * DLQ what was re-sent or processed, and make the rest visible again at the end.
 */
export class SqsReplayQueues implements ReplayQueues {
  private readonly client: SQSClient;
  readonly dlqUrl: string;
  readonly ingestQueueUrl: string | undefined;
  private readonly waitSeconds: number;
  private dlqArn: string | undefined;

  constructor(options: { client: SQSClient; dlqUrl: string; ingestQueueUrl?: string; waitSeconds?: number }) {
    this.client = options.client;
    this.dlqUrl = options.dlqUrl;
    this.ingestQueueUrl = options.ingestQueueUrl;
    this.waitSeconds = options.waitSeconds ?? 1;
  }

  async depth(): Promise<number> {
    const { Attributes } = await this.client.send(
      new GetQueueAttributesCommand({ QueueUrl: this.dlqUrl, AttributeNames: ['ApproximateNumberOfMessages', 'QueueArn'] }),
    );
    this.dlqArn ??= Attributes?.QueueArn;
    return Number(Attributes?.ApproximateNumberOfMessages ?? 0);
  }

  async receive(max: number, visibilityTimeoutSeconds: number): Promise<DeadLetter[]> {
    const { Messages } = await this.client.send(
      new ReceiveMessageCommand({
        QueueUrl: this.dlqUrl,
        MaxNumberOfMessages: Math.max(1, Math.min(BATCH, max)),
        WaitTimeSeconds: this.waitSeconds,
        VisibilityTimeout: visibilityTimeoutSeconds,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    return (Messages ?? []).map((message) => ({
      messageId: message.MessageId!,
      receiptHandle: message.ReceiptHandle!,
      body: message.Body ?? '',
      attributes: { ...(message.Attributes ?? {}) },
      ...(message.MessageAttributes === undefined ? {} : { messageAttributes: message.MessageAttributes }),
    }));
  }

  async resend(messages: readonly DeadLetter[]): Promise<{ sent: string[]; failed: { messageId: string; error: string }[] }> {
    const target = this.ingestQueueUrl;
    if (target === undefined) throw new Error('no ingest queue to re-send to');
    const sent: string[] = [];
    const failed: { messageId: string; error: string }[] = [];
    for (const batch of chunks(messages)) {
      const output = await this.client.send(
        new SendMessageBatchCommand({
          QueueUrl: target,
          Entries: batch.map((message, i) => ({
            Id: String(i),
            MessageBody: message.body,
            ...(message.messageAttributes === undefined || Object.keys(message.messageAttributes).length === 0
              ? {}
              : { MessageAttributes: message.messageAttributes as Record<string, MessageAttributeValue> }),
          })),
        }),
      );
      for (const ok of output.Successful ?? []) sent.push(batch[Number(ok.Id)]!.messageId);
      for (const bad of output.Failed ?? []) {
        failed.push({ messageId: batch[Number(bad.Id)]!.messageId, error: `${bad.Code ?? 'SendFailed'}: ${bad.Message ?? ''}` });
      }
    }
    return { sent, failed };
  }

  async delete(messages: readonly DeadLetter[]): Promise<{ failed: { messageId: string; error: string }[] }> {
    const failed: { messageId: string; error: string }[] = [];
    for (const batch of chunks(messages)) {
      const output = await this.client.send(
        new DeleteMessageBatchCommand({
          QueueUrl: this.dlqUrl,
          Entries: batch.map((message, i) => ({ Id: String(i), ReceiptHandle: message.receiptHandle })),
        }),
      );
      for (const bad of output.Failed ?? []) {
        failed.push({ messageId: batch[Number(bad.Id)]!.messageId, error: `${bad.Code ?? 'DeleteFailed'}: ${bad.Message ?? ''}` });
      }
    }
    return { failed };
  }

  async release(messages: readonly DeadLetter[]): Promise<void> {
    for (const batch of chunks(messages)) {
      await this.client.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: this.dlqUrl,
          Entries: batch.map((message, i) => ({ Id: String(i), ReceiptHandle: message.receiptHandle, VisibilityTimeout: 0 })),
        }),
      );
    }
  }

  /** The DLQ's ARN, for the `eventSourceARN` of records processed inline. */
  async arn(): Promise<string | undefined> {
    if (this.dlqArn === undefined) await this.depth();
    return this.dlqArn;
  }
}

/**
 * The queue whose redrive policy names `dlqUrl`, when exactly one does (AWS only; the
 * local emulator does not implement the call, and the local stack names its queue).
 */
export async function sourceQueueOf(client: SQSClient, dlqUrl: string): Promise<string | undefined> {
  try {
    const { queueUrls } = await client.send(new ListDeadLetterSourceQueuesCommand({ QueueUrl: dlqUrl }));
    return queueUrls?.length === 1 ? queueUrls[0] : undefined;
  } catch {
    return undefined;
  }
}
