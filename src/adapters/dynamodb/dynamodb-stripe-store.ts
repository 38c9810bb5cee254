import {
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  type AttributeValue,
} from '@aws-sdk/client-dynamodb';
import type { StripeMeterErrorReport, StripeStore } from '../../app/ports';
import { STRIPE_LINK_PARTITION, STRIPE_METER_ERROR_PARTITION, stripeLinkKey, stripeLockKey, stripeMeterErrorCursorKey, stripeMeterErrorKey, stripeOutboxKey, stripeOutboxRange } from '../../domain/counters/keys';
import { meterErrorExpiry, type InvoiceItemState, type OutboxState, type StripeLink, type StripeOutboxRecord } from '../../domain/billing/stripe';
import { conditionally } from './conditional-write';
import { TableStore } from './query-partition';

/**
 * The Stripe sync's items in the usage table (see keys.ts):
 *
 * ```
 * STRIPE#LINK / <account>                       customer, linkedAt, sendFrom (first day sent), sendFromTime (hour windows: first hour)
 * STRIPE#OUT#<account> / <day>#<metric>[#H#<hh>]#R#<n>[#A#<k>][#P#<p>][#S#<s>]   identifier, customer, eventName, value, ts, state, attempts,
 *                                               createdAt, sentAt, firstSentAt, deliveredAt, error, notifiedAt, invoice, billed, hour and split (hour windows),
 *                                               item (JSON: the late difference's invoice item, TALLY_STRIPE_LATE_USAGE)
 * STRIPE#LOCK / <customer>#metric#<metric>      owner, until (epoch ms)     a lease per metric (stripeLeaseName), not a transaction
 * STRIPE#METERERR / <created>#<event id>        report (JSON of the meter error report), recordedAt, ttl (created + 35 days)
 * STRIPE#METERERR / #CURSOR                     created: the newest report read (the next read asks from there)
 * ```
 */
export class DynamoStripeStore extends TableStore implements StripeStore {
  async link(link: StripeLink): Promise<StripeLink | undefined> {
    const key = stripeLinkKey(link.account);
    const output = await this.client.send(
      new PutItemCommand({
        TableName: this.tableName,
        Item: { PK: { S: key.PK }, SK: { S: key.SK }, customer: { S: link.customer }, linkedAt: { S: link.linkedAt }, ...(link.from === undefined ? {} : { sendFrom: { S: link.from } }), ...(link.fromTime === undefined ? {} : { sendFromTime: { N: String(link.fromTime) } }) },
        ReturnValues: 'ALL_OLD',
      }),
    );
    return output.Attributes === undefined ? undefined : linkOf(output.Attributes);
  }

  async unlink(account: string): Promise<StripeLink | undefined> {
    const key = stripeLinkKey(account);
    const output = await this.client.send(new DeleteItemCommand({ TableName: this.tableName, Key: { PK: { S: key.PK }, SK: { S: key.SK } }, ReturnValues: 'ALL_OLD' }));
    return output.Attributes === undefined ? undefined : linkOf(output.Attributes);
  }

  async recordMeterErrors(reports: readonly StripeMeterErrorReport[]): Promise<StripeMeterErrorReport[]> {
    if (reports.length === 0) return [];
    const oldest = reports.reduce((min, report) => (report.created < min ? report.created : min), reports[0]!.created);
    const known = await this.queryAll({
      KeyConditionExpression: 'PK = :pk AND SK >= :from',
      ExpressionAttributeValues: { ':pk': { S: STRIPE_METER_ERROR_PARTITION }, ':from': { S: oldest } },
      ProjectionExpression: 'SK',
      ConsistentRead: true,
    });
    const seen = new Set(known.map((item) => item.SK?.S));
    const recorded: StripeMeterErrorReport[] = [];
    const recordedAt = new Date().toISOString();
    for (const report of reports) {
      const key = stripeMeterErrorKey(report.created, report.id);
      if (seen.has(key.SK)) continue;
      const put = this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: { PK: { S: key.PK }, SK: { S: key.SK }, report: { S: JSON.stringify(report) }, recordedAt: { S: recordedAt }, ttl: { N: String(meterErrorExpiry(report.created)) } },
          ConditionExpression: 'attribute_not_exists(PK)',
        }),
      );
      if (await conditionally(put)) recorded.push(report);
    }
    // After the reports: a failure in between reads them again (recorded once), never skips them.
    const newest = reports.reduce((max, report) => (report.created > max ? report.created : max), reports[0]!.created);
    const cursor = stripeMeterErrorCursorKey();
    await conditionally(
      this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { PK: { S: cursor.PK }, SK: { S: cursor.SK } },
          UpdateExpression: 'SET created = :created',
          ConditionExpression: 'attribute_not_exists(created) OR created < :created',
          ExpressionAttributeValues: { ':created': { S: newest } },
        }),
      ),
    );
    return recorded;
  }

  async meterErrorCursor(): Promise<string | undefined> {
    const key = stripeMeterErrorCursorKey();
    const output = await this.client.send(new GetItemCommand({ TableName: this.tableName, Key: { PK: { S: key.PK }, SK: { S: key.SK } }, ConsistentRead: true }));
    return output.Item?.created?.S;
  }

  async links(): Promise<StripeLink[]> {
    const items = await this.queryAll({ KeyConditionExpression: 'PK = :pk', ExpressionAttributeValues: { ':pk': { S: STRIPE_LINK_PARTITION } }, ConsistentRead: true });
    return items.map(linkOf);
  }

  async linkOf(account: string): Promise<StripeLink | undefined> {
    const key = stripeLinkKey(account);
    const output = await this.client.send(new GetItemCommand({ TableName: this.tableName, Key: { PK: { S: key.PK }, SK: { S: key.SK } }, ConsistentRead: true }));
    return output.Item === undefined ? undefined : linkOf(output.Item);
  }

  async records(account: string, from: string, to: string): Promise<StripeOutboxRecord[]> {
    const range = stripeOutboxRange(account, from, to);
    const items = await this.queryAll({
      KeyConditionExpression: 'PK = :pk AND SK BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': { S: range.PK }, ':from': { S: range.from }, ':to': { S: range.to } },
      ConsistentRead: true,
    });
    return items.map((item) => recordOf(account, item));
  }

  async addRecord(record: StripeOutboxRecord): Promise<boolean> {
    const key = stripeOutboxKey({ accountId: record.account, day: record.day, metric: record.metric, revision: record.revision, adjusted: record.adjusted, running: record.running, hour: record.hour, split: record.split });
    const item: Record<string, AttributeValue> = {
      PK: { S: key.PK },
      SK: { S: key.SK },
      day: { S: record.day },
      metric: { S: record.metric },
      revision: { N: String(record.revision) },
      ...(record.adjusted === undefined || record.adjusted === 0 ? {} : { adjusted: { N: String(record.adjusted) } }),
      ...(record.running === undefined || record.running === 0 ? {} : { running: { N: String(record.running) } }),
      ...(record.hour === undefined ? {} : { hour: { N: String(record.hour) } }),
      ...(record.split === undefined || record.split === 0 ? {} : { split: { N: String(record.split) } }),
      customer: { S: record.customer },
      eventName: { S: record.eventName },
      identifier: { S: record.identifier },
      ts: { N: String(record.timestamp) },
      value: { N: String(record.value) },
      state: { S: record.state },
      attempts: { N: String(record.attempts) },
      createdAt: { S: record.createdAt },
    };
    return conditionally(this.client.send(new PutItemCommand({ TableName: this.tableName, Item: item, ConditionExpression: 'attribute_not_exists(PK)' })));
  }

  async updateRecord(
    record: StripeOutboxRecord,
    changes: Partial<Pick<StripeOutboxRecord, 'state' | 'attempts' | 'sentAt' | 'firstSentAt' | 'deliveredAt' | 'error' | 'notifiedAt' | 'customer' | 'invoice' | 'billed' | 'item'>>,
  ): Promise<void> {
    const key = stripeOutboxKey({ accountId: record.account, day: record.day, metric: record.metric, revision: record.revision, adjusted: record.adjusted, running: record.running, hour: record.hour, split: record.split });
    const names: Record<string, string> = {};
    const values: Record<string, AttributeValue> = {};
    const sets: string[] = [];
    for (const [name, value] of Object.entries(changes)) {
      if (value === undefined) continue;
      names[`#${name}`] = name;
      values[`:${name}`] = typeof value === 'number' ? { N: String(value) } : typeof value === 'object' ? { S: JSON.stringify(value) } : { S: String(value) };
      sets.push(`#${name} = :${name}`);
    }
    if (sets.length === 0) return;
    await this.client.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: { PK: { S: key.PK }, SK: { S: key.SK } },
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: 'attribute_exists(PK)',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
  }

  async acquireLease(customer: string, lease: string, owner: string, now: Date, until: Date): Promise<boolean> {
    const key = stripeLockKey(customer, lease);
    return conditionally(
      this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: { PK: { S: key.PK }, SK: { S: key.SK }, owner: { S: owner }, until: { N: String(until.getTime()) } },
          ConditionExpression: 'attribute_not_exists(PK) OR #until < :now OR #owner = :owner',
          ExpressionAttributeNames: { '#until': 'until', '#owner': 'owner' },
          ExpressionAttributeValues: { ':now': { N: String(now.getTime()) }, ':owner': { S: owner } },
        }),
      ),
    );
  }

  async releaseLease(customer: string, lease: string, owner: string): Promise<void> {
    const key = stripeLockKey(customer, lease);
    await conditionally(
      this.client.send(
        new DeleteItemCommand({
          TableName: this.tableName,
          Key: { PK: { S: key.PK }, SK: { S: key.SK } },
          ConditionExpression: '#owner = :owner',
          ExpressionAttributeNames: { '#owner': 'owner' },
          ExpressionAttributeValues: { ':owner': { S: owner } },
        }),
      ),
    );
  }
}

function linkOf(item: Record<string, AttributeValue>): StripeLink {
  return { account: item.SK?.S ?? '', customer: item.customer?.S ?? '', linkedAt: item.linkedAt?.S ?? '', ...(item.sendFrom?.S === undefined ? {} : { from: item.sendFrom.S }), ...(item.sendFromTime?.N === undefined ? {} : { fromTime: Number(item.sendFromTime.N) }) };
}

function recordOf(account: string, item: Record<string, AttributeValue>): StripeOutboxRecord {
  const optional = (name: 'sentAt' | 'firstSentAt' | 'deliveredAt' | 'error' | 'notifiedAt' | 'invoice') => (item[name]?.S === undefined ? {} : { [name]: item[name]!.S });
  return {
    account,
    day: item.day?.S ?? '',
    metric: item.metric?.S ?? '',
    revision: Number(item.revision?.N ?? 0),
    ...(item.adjusted?.N === undefined ? {} : { adjusted: Number(item.adjusted.N) }),
    ...(item.running?.N === undefined ? {} : { running: Number(item.running.N) }),
    ...(item.hour?.N === undefined ? {} : { hour: Number(item.hour.N) }),
    ...(item.split?.N === undefined ? {} : { split: Number(item.split.N) }),
    customer: item.customer?.S ?? '',
    eventName: item.eventName?.S ?? '',
    identifier: item.identifier?.S ?? '',
    timestamp: Number(item.ts?.N ?? 0),
    value: Number(item.value?.N ?? 0),
    state: (item.state?.S ?? 'pending') as OutboxState,
    attempts: Number(item.attempts?.N ?? 0),
    createdAt: item.createdAt?.S ?? '',
    ...optional('sentAt'),
    ...optional('firstSentAt'),
    ...optional('deliveredAt'),
    ...optional('error'),
    ...optional('notifiedAt'),
    ...optional('invoice'),
    ...(item.billed?.N === undefined ? {} : { billed: Number(item.billed.N) }),
    ...(item.item?.S === undefined ? {} : { item: JSON.parse(item.item.S) as InvoiceItemState }),
  };
}
