import {
  ConditionalCheckFailedException,
  PutItemCommand,
  UpdateItemCommand,
  type AttributeValue,
} from '@aws-sdk/client-dynamodb';
import type { DropOutcome, DropRecords } from '../../app/ports';
import { queryPartition, TableStore } from './query-partition';
import type { DeadLetterDrop, DeadLetterVerdict } from '../../domain/counters/dead-letter';
import { DLQ_DROPS_PARTITION, droppedMessageKey } from '../../domain/counters/keys';

/**
 * Drop records in the usage table, one per dropped message, in a partition of their own:
 *
 * ```
 * PK DLQ#DROPPED  SK MSG#<messageId>   messageId, queueUrl, actor, reason, recordedAt, state,
 *                                      droppedAt | error, verdict, diagnosis, objects,
 *                                      receiveCount, sentAt, body, bodyLength
 * ```
 * No `ttl`: an audit record is kept until someone deletes it. The record is put
 * (`state` dropping) before the message is deleted and completed after; a message that
 * was dropped before (SQS may deliver a copy twice) keeps its first record.
 */
export class DynamoDropRecords extends TableStore implements DropRecords {
  async begin(drop: DeadLetterDrop): Promise<'recorded' | 'already-dropped'> {
    const key = droppedMessageKey(drop.messageId);
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: { PK: { S: key.PK }, SK: { S: key.SK }, ...attributesOf(drop) },
          ConditionExpression: 'attribute_not_exists(PK) OR #state <> :dropped',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':dropped': { S: 'dropped' } },
        }),
      );
      return 'recorded';
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return 'already-dropped';
      throw error;
    }
  }

  async finish(messageId: string, outcome: DropOutcome): Promise<void> {
    const key = droppedMessageKey(messageId);
    const detail = outcome.state === 'dropped' ? { name: 'droppedAt', value: outcome.droppedAt } : { name: 'error', value: outcome.error };
    await this.client.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: { PK: { S: key.PK }, SK: { S: key.SK } },
        UpdateExpression: 'SET #state = :state, #detail = :detail',
        ExpressionAttributeNames: { '#state': 'state', '#detail': detail.name },
        ExpressionAttributeValues: { ':state': { S: outcome.state }, ':detail': { S: detail.value } },
      }),
    );
  }

  async list(): Promise<DeadLetterDrop[]> {
    const drops = (await queryPartition({ client: this.client, tableName: this.tableName }, DLQ_DROPS_PARTITION, undefined, true)).map(fromItem);
    return drops.sort((a, b) => a.recordedAt.localeCompare(b.recordedAt) || a.messageId.localeCompare(b.messageId));
  }
}

function attributesOf(drop: DeadLetterDrop): Record<string, AttributeValue> {
  const optional = (name: string, value: string | undefined): Record<string, AttributeValue> => (value === undefined ? {} : { [name]: { S: value } });
  return {
    messageId: { S: drop.messageId },
    queueUrl: { S: drop.queueUrl },
    actor: { S: drop.actor },
    reason: { S: drop.reason },
    recordedAt: { S: drop.recordedAt },
    state: { S: drop.state },
    ...optional('droppedAt', drop.droppedAt),
    ...optional('error', drop.error),
    verdict: { S: drop.verdict },
    diagnosis: { S: drop.diagnosis },
    objects: { L: drop.objects.map((object) => ({ S: object })) },
    receiveCount: { N: String(drop.receiveCount) },
    ...optional('sentAt', drop.sentAt),
    body: { S: drop.body },
    bodyLength: { N: String(drop.bodyLength) },
  };
}

function fromItem(item: Record<string, AttributeValue>): DeadLetterDrop {
  const text = (name: string) => item[name]?.S;
  const droppedAt = text('droppedAt');
  const error = text('error');
  const sentAt = text('sentAt');
  return {
    messageId: text('messageId') ?? (item.SK?.S ?? '').replace(/^MSG#/, ''),
    queueUrl: text('queueUrl') ?? '',
    actor: text('actor') ?? '',
    reason: text('reason') ?? '',
    recordedAt: text('recordedAt') ?? '',
    state: (text('state') ?? 'dropping') as DeadLetterDrop['state'],
    ...(droppedAt === undefined ? {} : { droppedAt }),
    ...(error === undefined ? {} : { error }),
    verdict: (text('verdict') ?? 'unknown') as DeadLetterVerdict,
    diagnosis: text('diagnosis') ?? '',
    objects: (item.objects?.L ?? []).map((value) => value.S ?? ''),
    receiveCount: Number(item.receiveCount?.N ?? 0),
    ...(sentAt === undefined ? {} : { sentAt }),
    body: text('body') ?? '',
    bodyLength: Number(item.bodyLength?.N ?? 0),
  };
}
