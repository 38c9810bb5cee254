import {
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { conditionally } from './conditional-write';
import { queryPartition, type TableAccess } from './query-partition';
import type { MonthRechecks, QuotaStore, RecheckMarker, ThresholdStore } from '../../app/ports';
import { TallyError } from '../../domain/errors';
import { quotaAfter, type Quota, type QuotaChange, type QuotaPeriod, type RecordedCrossing, type ThresholdCrossing } from '../../domain/billing/quota';
import { QUOTA_PARTITION, quotaAccountPrefix, quotaKey, RECHECK_PARTITION, recheckKey, thresholdKey, thresholdMonthPartition } from '../../domain/counters/keys';

function keyOf(key: { PK: string; SK: string }): Record<string, AttributeValue> {
  return { PK: { S: key.PK }, SK: { S: key.SK } };
}

/** A quota set meets a concurrent set this many times before giving up. */
const SET_ATTEMPTS = 5;

/**
 * Quotas in the usage table, all in one partition (a few items per account), each with
 * its history of allowances:
 *
 * ```
 * QUOTA / acme#requests    account, metric, history [{from: YYYY-MM, monthly, levels?}, ...], updatedAt, updatedBy
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

  /** Read, then write on the condition that nobody wrote in between (`updatedAt` unchanged); again on a race. */
  async set(change: QuotaChange): Promise<{ quota: Quota; previous?: Quota }> {
    const key = keyOf(quotaKey(change.account, change.metric));
    for (let attempt = 0; attempt < SET_ATTEMPTS; attempt++) {
      const found = (await this.table.client.send(new GetItemCommand({ TableName: this.table.tableName, Key: key, ConsistentRead: true }))).Item;
      const previous = found === undefined ? undefined : quotaOf(found);
      const quota: Quota = quotaAfter(change, previous);
      const written = await conditionally(
        this.table.client.send(
          new PutItemCommand({
            TableName: this.table.tableName,
            Item: {
              ...key,
              account: { S: quota.account },
              metric: { S: quota.metric },
              history: { L: quota.history.map(periodItem) },
              updatedAt: { S: change.updatedAt },
              ...(change.updatedBy === undefined ? {} : { updatedBy: { S: change.updatedBy } }),
            },
            ...(found === undefined
              ? { ConditionExpression: 'attribute_not_exists(PK)' }
              : { ConditionExpression: 'updatedAt = :seen', ExpressionAttributeValues: { ':seen': found.updatedAt ?? { S: '' } } }),
          }),
        ),
      );
      if (written) return { quota, ...(previous === undefined ? {} : { previous }) };
    }
    throw new TallyError(`the quota of ${change.account} ${change.metric} kept changing while it was set; try again`);
  }

  async remove(account: string, metric: string): Promise<Quota | undefined> {
    const output = await this.table.client.send(
      new DeleteItemCommand({ TableName: this.table.tableName, Key: keyOf(quotaKey(account, metric)), ReturnValues: 'ALL_OLD' }),
    );
    return output.Attributes === undefined ? undefined : quotaOf(output.Attributes);
  }
}

function periodItem(period: QuotaPeriod): AttributeValue {
  return {
    M: {
      from: { S: period.from },
      monthly: { N: String(period.monthly) },
      ...(period.levels === undefined ? {} : { levels: { L: period.levels.map((level) => ({ N: String(level) })) } }),
    },
  };
}

function periodOf(value: AttributeValue): QuotaPeriod {
  const levels = value.M?.levels?.L?.map((level) => Number(level.N));
  return { from: value.M?.from?.S ?? '', monthly: Number(value.M?.monthly?.N ?? 0), ...(levels === undefined ? {} : { levels }) };
}

/** A quota written before quotas had a history (`monthly`, `levels?` on the item): in force for every month, as it then was. */
const SINCE_EVER = '0000-01';

function quotaOf(item: Record<string, AttributeValue>): Quota {
  const legacy = item.history === undefined && item.monthly?.N !== undefined ? [periodOf({ M: { ...item, from: { S: SINCE_EVER } } })] : undefined;
  return {
    account: item.account?.S ?? '',
    metric: item.metric?.S ?? '',
    history: legacy ?? (item.history?.L ?? []).map(periodOf),
    ...(item.updatedAt?.S === undefined ? {} : { updatedAt: item.updatedAt.S }),
    ...(item.updatedBy?.S === undefined ? {} : { updatedBy: item.updatedBy.S }),
  };
}

/**
 * Months to evaluate again, one small item each:
 *
 * ```
 * THRESHOLD#RECHECK / 2026-09    markedAt
 * ```
 */
export class DynamoMonthRechecks implements MonthRechecks {
  private readonly table: TableAccess;

  constructor(table: TableAccess) {
    this.table = { client: table.client, tableName: table.tableName };
  }

  async mark(month: string, at: string): Promise<void> {
    await this.table.client.send(
      new PutItemCommand({ TableName: this.table.tableName, Item: { ...keyOf(recheckKey(month)), markedAt: { S: at } } }),
    );
  }

  async marked(): Promise<RecheckMarker[]> {
    const items = await queryPartition(this.table, RECHECK_PARTITION, undefined, true);
    return items.map((item) => ({ month: item.SK?.S ?? '', markedAt: item.markedAt?.S ?? '' }));
  }

  async clear(marker: RecheckMarker): Promise<boolean> {
    return conditionally(
      this.table.client.send(
        new DeleteItemCommand({
          TableName: this.table.tableName,
          Key: keyOf(recheckKey(marker.month)),
          ConditionExpression: 'markedAt = :seen',
          ExpressionAttributeValues: { ':seen': { S: marker.markedAt } },
        }),
      ),
    );
  }
}

/**
 * Threshold crossings, one partition per month; each item is written once and is its
 * event's outbox entry:
 *
 * ```
 * THRESHOLD#2026-11 / acme#requests#080#1000   account, metric, month, level, allowance, used, crossedAt,
 *                                               sendingAt (lease of the run sending it), notifiedAt (queued),
 *                                               withdrawnAt (never to be sent: its allowance is no longer in force)
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

  async record(crossing: ThresholdCrossing, leaseAt: string | undefined): Promise<'recorded' | 'exists'> {
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
            ...(leaseAt === undefined ? {} : { sendingAt: { S: leaseAt } }),
          },
          // A withdrawn record was never sent: its allowance back in force, it is written anew.
          ConditionExpression: 'attribute_not_exists(PK) OR attribute_exists(withdrawnAt)',
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
          ConditionExpression: 'attribute_exists(PK) AND attribute_not_exists(notifiedAt) AND attribute_not_exists(withdrawnAt) AND (attribute_not_exists(sendingAt) OR sendingAt < :stale)',
          ExpressionAttributeValues: { ':at': { S: at }, ':stale': { S: staleBefore } },
        }),
      ),
    );
  }

  async withdraw(crossing: ThresholdCrossing, at: string, staleBefore: string): Promise<boolean> {
    // Same condition as a claim: a run holding a fresh lease may be sending it right now.
    return conditionally(
      this.table.client.send(
        new UpdateItemCommand({
          TableName: this.table.tableName,
          Key: keyOf(this.keyOf(crossing)),
          UpdateExpression: 'SET withdrawnAt = :at REMOVE sendingAt',
          ConditionExpression: 'attribute_exists(PK) AND attribute_not_exists(notifiedAt) AND attribute_not_exists(withdrawnAt) AND (attribute_not_exists(sendingAt) OR sendingAt < :stale)',
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

  private keyOf(crossing: ThresholdCrossing & Pick<RecordedCrossing, 'levelKeyed'>): { PK: string; SK: string } {
    return crossing.levelKeyed === true ? levelKeyedThresholdKey(crossing) : thresholdKey(crossing.month, crossing.account, crossing.metric, crossing.level, crossing.allowance);
  }
}
/** The key crossings had before they were keyed by allowance too: one per (account, metric, month, level). */
function levelKeyedThresholdKey(crossing: Pick<ThresholdCrossing, 'month' | 'account' | 'metric' | 'level'>): { PK: string; SK: string } {
  return { PK: thresholdMonthPartition(crossing.month), SK: `${quotaAccountPrefix(crossing.account)}${crossing.metric}#${String(crossing.level).padStart(3, '0')}` };
}

function crossingOf(item: Record<string, AttributeValue>): RecordedCrossing {
  const crossing = {
    account: item.account?.S ?? '',
    metric: item.metric?.S ?? '',
    month: item.month?.S ?? '',
    level: Number(item.level?.N ?? 0),
    allowance: Number(item.allowance?.N ?? 0),
    used: Number(item.used?.N ?? 0),
    crossedAt: item.crossedAt?.S ?? '',
    ...(item.notifiedAt?.S === undefined ? {} : { notifiedAt: item.notifiedAt.S }),
    ...(item.sendingAt?.S === undefined ? {} : { sendingAt: item.sendingAt.S }),
    ...(item.withdrawnAt?.S === undefined ? {} : { withdrawnAt: item.withdrawnAt.S }),
  };
  return item.SK?.S === levelKeyedThresholdKey(crossing).SK ? { ...crossing, levelKeyed: true } : crossing;
}
