import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { lambdaSqsRecord } from '../../app/ingest/sqs-record';

/** A function with the ingest Lambda's contract. */
export type BatchHandler = (event: SQSEvent) => Promise<SQSBatchResponse>;

export interface PollerOptions {
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly region: string;
  readonly handler: BatchHandler;
  readonly batchSize?: number;
  readonly waitSeconds?: number;
  /** Called after each batch with what was deleted and what was left to come back. */
  readonly onBatch?: (report: { received: number; deleted: number; failed: number; response?: SQSBatchResponse }) => void;
  readonly onError?: (error: unknown) => void;
}

/** The record Lambda's SQS event source mapping would build from a received message. */
export function toSqsRecord(message: Message, queueArn: string, region: string): SQSRecord {
  return lambdaSqsRecord(
    {
      messageId: message.MessageId!,
      receiptHandle: message.ReceiptHandle!,
      body: message.Body ?? '',
      attributes: message.Attributes ?? {},
      ...(message.MD5OfBody === undefined ? {} : { md5OfBody: message.MD5OfBody }),
    },
    queueArn,
    region,
  );
}

/**
 * Plays the part of Lambda's SQS event source mapping locally: receives batches,
 * calls the handler with the same event shape, deletes what succeeded and leaves
 * reported failures (or the whole batch, if the handler throws) to come back after
 * the visibility timeout and, past `maxReceiveCount`, to reach the DLQ.
 */
export class QueuePoller {
  private running = false;
  private loop: Promise<void> | undefined;

  constructor(private readonly options: PollerOptions) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        try {
          await this.pollOnce();
        } catch (error) {
          this.options.onError?.(error);
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  /** Receives and handles one batch; returns how many messages it received. */
  async pollOnce(): Promise<number> {
    const { sqs, queueUrl } = this.options;
    const received = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: this.options.batchSize ?? 10,
        WaitTimeSeconds: this.options.waitSeconds ?? 1,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    const messages = received.Messages ?? [];
    if (messages.length === 0) return 0;
    const event: SQSEvent = { Records: messages.map((m) => toSqsRecord(m, this.options.queueArn, this.options.region)) };
    let response: SQSBatchResponse | undefined;
    let failedIds: Set<string>;
    try {
      response = await this.options.handler(event);
      failedIds = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
    } catch (error) {
      this.options.onError?.(error);
      failedIds = new Set(event.Records.map((record) => record.messageId));
    }
    const done = messages.filter((message) => !failedIds.has(message.MessageId!));
    if (done.length > 0) {
      await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: done.map((message, i) => ({ Id: String(i), ReceiptHandle: message.ReceiptHandle! })),
        }),
      );
    }
    this.options.onBatch?.({
      received: messages.length,
      deleted: done.length,
      failed: messages.length - done.length,
      ...(response === undefined ? {} : { response }),
    });
    return messages.length;
  }
}

/** Messages waiting plus in flight on a queue. */
export async function queueDepth(sqs: SQSClient, queueUrl: string): Promise<{ visible: number; inFlight: number }> {
  const attributes = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return {
    visible: Number(attributes.Attributes?.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(attributes.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0),
  };
}

/** Waits until a queue has nothing waiting and nothing in flight (or the deadline passes). */
export async function waitForEmptyQueue(sqs: SQSClient, queueUrl: string, timeoutMs = 60_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const depth = await queueDepth(sqs, queueUrl);
    if (depth.visible === 0 && depth.inFlight === 0) return true;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return false;
}
