import {
  DeleteItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
  type QueryCommandInput,
} from '@aws-sdk/client-dynamodb';
import { conditionally } from './conditional-write';
import type { QuotaStore, ThresholdStore } from '../app/ports';
import type { Quota, RecordedCrossing, ThresholdCrossing } from '../domain/quota';
import { QUOTA_PARTITION, quotaAccountPrefix, quotaKey, thresholdKey, thresholdMonthPartition } from '../domain/keys';

/** One table and client, shared by both stores of this file. */
interface TableAccess {
  readonly client: DynamoDBClient;
  readonly tableName: string;
}

/** Every item of one partition (optionally under a sort-key prefix), following pages. */
async function queryPartition(table: TableAccess, pk: string, prefix: string | undefined, consistentRead: boolean): Promise<Record<string, AttributeValue>[]> {
  const items: Record<string, AttributeValue>[] = [];
  const input: Omit<QueryCommandInput, 'ExclusiveStartKey'> = {
    TableName: table.tableName,
    KeyConditionExpression: prefix === undefined ? 'PK = :pk' : 'PK = :pk AND begins_with(SK, :prefix)',
    ExpressionAttributeValues: { ':pk': { S: pk }, ...(prefix === undefined ? {} : { ':prefix': { S: prefix } }) },
    ConsistentRead: consistentRead,
  };
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await table.client.send(new QueryCommand({ ...input, ...(start === undefined ? {} : { ExclusiveStartKey: start }) }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return items;
}

function keyOf(key: { PK: string; SK: string }): Record<string, AttributeValue> {
  return { PK: { S: key.PK }, SK: { S: key.SK } };
}

/**
 * Quotas in the usage table, all in one partition (a few items per account):
 *
 * ```
 * QUOTA / acme#requests    account, metric, monthly, levels?, updatedAt, updatedBy
 * ```
 */
export class DynamoQuotaStore implements QuotaStore {
  private readonly table: TableAccess;

  constructor(table: TableAccess) {
    this.table = { client: table.client, tableName: table.tableName };
  }

  async list(account?: string): Promise<Quota[]> {
    const items = await queryPartition(this.table, QUOTA_PARTITION, account === undefined ? undefined : quotaAccountPrefix(account), true);
    return items.map(quotaOf);
  }

  async set(quota: Quota): Promise<Quota | undefined> {
    const key = quotaKey(quota.account, quota.metric);
    const output = await this.table.client.send(
      new PutItemCommand({
        TableName: this.table.tableName,
        Item: {
          ...keyOf(key),
          account: { S: quota.account },
          metric: { S: quota.metric },
          monthly: { N: String(quota.monthly) },
          ...(quota.levels === undefined ? {} : { levels: { L: quota.levels.map((level) => ({ N: String(level) })) } }),
          updatedAt: { S: quota.updatedAt ?? new Date().toISOString() },
          ...(quota.updatedBy === undefined ? {} : { updatedBy: { S: quota.updatedBy } }),
        },
        ReturnValues: 'ALL_OLD',
      }),
    );
    return output.Attributes === undefined ? undefined : quotaOf(output.Attributes);
  }

  async remove(account: string, metric: string): Promise<Quota | undefined> {
    const output = await this.table.client.send(
      new DeleteItemCommand({ TableName: this.table.tableName, Key: keyOf(quotaKey(account, metric)), ReturnValues: 'ALL_OLD' }),
    );
    return output.Attributes === undefined ? undefined : quotaOf(output.Attributes);
  }
}

function quotaOf(item: Record<string, AttributeValue>): Quota {
  const levels = item.levels?.L?.map((value) => Number(value.N));
  return {
    account: item.account?.S ?? '',
    metric: item.metric?.S ?? '',
    monthly: Number(item.monthly?.N ?? 0),
    ...(levels === undefined ? {} : { levels }),
    ...(item.updatedAt?.S === undefined ? {} : { updatedAt: item.updatedAt.S }),
    ...(item.updatedBy?.S === undefined ? {} : { updatedBy: item.updatedBy.S }),
  };
}

/**
 * Threshold crossings, one partition per month; each item is written once and is its
 * event's outbox entry:
 *
 * ```
 * THRESHOLD#2026-11 / acme#requests#080   account, metric, month, level, allowance, used, crossedAt,
 *                                          sendingAt (lease of the run sending it), notifiedAt (queued)
 * ```
 */
export class DynamoThresholdStore implements ThresholdStore {
  private readonly table: TableAccess;

  constructor(table: TableAccess) {
    this.table = { client: table.client, tableName: table.tableName };
  }

  async crossings(month: string, account?: string): Promise<RecordedCrossing[]> {
    const items = await queryPartition(this.table, thresholdMonthPartition(month), account === undefined ? undefined : quotaAccountPrefix(account), true);
    return items.map(crossingOf);
  }

  async record(crossing: ThresholdCrossing, at: string): Promise<'recorded' | 'exists'> {
    const written = await conditionally(
      this.table.client.send(
        new PutItemCommand({
          TableName: this.table.tableName,
          Item: {
            ...keyOf(this.keyOf(crossing)),
            account: { S: crossing.account },
            metric: { S: crossing.metric },
            month: { S: crossing.month },
            level: { N: String(crossing.level) },
            allowance: { N: String(crossing.allowance) },
            used: { N: String(crossing.used) },
            crossedAt: { S: crossing.crossedAt },
            sendingAt: { S: at },
          },
          ConditionExpression: 'attribute_not_exists(PK)',
        }),
      ),
    );
    return written ? 'recorded' : 'exists';
  }

  async claim(crossing: ThresholdCrossing, at: string, staleBefore: string): Promise<boolean> {
    return conditionally(
      this.table.client.send(
        new UpdateItemCommand({
          TableName: this.table.tableName,
          Key: keyOf(this.keyOf(crossing)),
          UpdateExpression: 'SET sendingAt = :at',
          ConditionExpression: 'attribute_exists(PK) AND attribute_not_exists(notifiedAt) AND (attribute_not_exists(sendingAt) OR sendingAt < :stale)',
          ExpressionAttributeValues: { ':at': { S: at }, ':stale': { S: staleBefore } },
        }),
      ),
    );
  }

  async markNotified(crossing: ThresholdCrossing, at: string): Promise<void> {
    await this.table.client.send(
      new UpdateItemCommand({
        TableName: this.table.tableName,
        Key: keyOf(this.keyOf(crossing)),
        UpdateExpression: 'SET notifiedAt = if_not_exists(notifiedAt, :at)',
        ConditionExpression: 'attribute_exists(PK)',
        ExpressionAttributeValues: { ':at': { S: at } },
      }),
    );
  }

  private keyOf(crossing: ThresholdCrossing): { PK: string; SK: string } {
    return thresholdKey(crossing.month, crossing.account, crossing.metric, crossing.level);
  }
}
function crossingOf(item: Record<string, AttributeValue>): RecordedCrossing {
  return {
    account: item.account?.S ?? '',
    metric: item.metric?.S ?? '',
    month: item.month?.S ?? '',
    level: Number(item.level?.N ?? 0),
    allowance: Number(item.allowance?.N ?? 0),
    used: Number(item.used?.N ?? 0),
    crossedAt: item.crossedAt?.S ?? '',
    ...(item.notifiedAt?.S === undefined ? {} : { notifiedAt: item.notifiedAt.S }),
    ...(item.sendingAt?.S === undefined ? {} : { sendingAt: item.sendingAt.S }),
  };
}
