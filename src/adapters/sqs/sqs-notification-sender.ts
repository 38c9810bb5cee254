import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { NotificationSender } from '../../app/ports';
import type { LogObjectRef } from '../../domain/counters/log-object';
import { s3EventBody } from '../../domain/counters/notifications';

const ATTEMPTS = 3;

/**
 * Sends S3 `ObjectCreated` notifications to the ingest queue, one object per message
 * as S3 does, so the consumer cannot tell a backfill from the original delivery.
 */
export class SqsNotificationSender implements NotificationSender {
  private readonly client: SQSClient;
  private readonly queueUrl: string;
  private readonly region: string;

  constructor({ client, queueUrl, region }: { client: SQSClient; queueUrl: string; region: string }) {
    this.client = client;
    this.queueUrl = queueUrl;
    this.region = region;
  }

  async send(objects: readonly LogObjectRef[]): Promise<void> {
    let pending = objects.slice(0, 10);
    if (objects.length > 10) throw new Error('at most 10 notifications per call');
    for (let attempt = 1; pending.length > 0; attempt++) {
      const output = await this.client.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: pending.map((object, i) => ({ Id: String(i), MessageBody: s3EventBody([object], this.region) })),
        }),
      );
      const failed = output.Failed ?? [];
      if (failed.length === 0) return;
      if (attempt >= ATTEMPTS) {
        throw new Error(`could not send ${failed.length} notification(s) to ${this.queueUrl}: ${failed[0]?.Code ?? ''} ${failed[0]?.Message ?? ''}`);
      }
      pending = failed.map((entry) => pending[Number(entry.Id)]!);
    }
  }
}
