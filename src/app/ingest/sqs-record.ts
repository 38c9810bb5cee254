import { createHash } from 'node:crypto';
import type { SQSRecord } from 'aws-lambda';

/** A message as a receiver has it: from ReceiveMessage, the DLQ, or a test. */
export interface ReceivedMessage {
  readonly messageId: string;
  readonly receiptHandle?: string;
  readonly body: string;
  /** SQS system attributes (`ApproximateReceiveCount`, `SentTimestamp`, ...), as far as known. */
  readonly attributes?: Readonly<Record<string, string | undefined>>;
  readonly md5OfBody?: string;
}

/**
 * The record Lambda's SQS event source mapping builds for a message, so that the local
 * poller, an inline replay and the tests call the ingest code with exactly the event
 * the Lambda gets.
 */
export function lambdaSqsRecord(message: ReceivedMessage, queueArn: string, region: string): SQSRecord {
  const attributes = message.attributes ?? {};
  const now = String(Date.now());
  return {
    messageId: message.messageId,
    receiptHandle: message.receiptHandle ?? '',
    body: message.body,
    attributes: {
      ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
      SentTimestamp: attributes.SentTimestamp ?? now,
      SenderId: attributes.SenderId ?? '000000000000',
      ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? now,
    },
    messageAttributes: {},
    md5OfBody: message.md5OfBody ?? createHash('md5').update(message.body).digest('hex'),
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}
