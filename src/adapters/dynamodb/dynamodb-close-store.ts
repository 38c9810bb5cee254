import {
  BatchWriteItemCommand,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  type AttributeValue,
  type UpdateItemCommandInput,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import type { AccountDayFigures, CloseStore, LateMarker, LateUsageMarks } from '../../app/ports';
import { mapWithConcurrency } from '../../app/concurrency';
import type { ClosedDay, MetricFigures, RevisionInfo, RevisionRow } from '../../domain/billing/day-close';
import {
  closedDayKey,
  closedDayRange,
  DAY_INDEX,
  isShardMetric,
  LATE_BUCKETS,
  lateBucketPartition,
  lateMarkerKey,
  parseAccountPartition,
  parseAccountSortKey,
  parseClosedDaySortKey,
  parseLateMarkerSortKey,
  revisionKey,
  revisionRowKey,
  revisionRowsPrefix,
} from '../../domain/counters/keys';
import { conditionally } from './conditional-write';
import { TableStore } from './query-partition';
import { queryDayRange } from './day-range-query';
import { figuresOf } from './dynamodb-usage-reader';

/**
 * The closer's items in the usage table (see keys.ts):
 *
 * ```
 * CLOSED / DAY#<day>            closedAt, revision (newest complete), writing + writingAt (one in progress),
 *                               revisions { "<n>": { createdAt, accounts, exportedAt, notifiedAt } }
 * ACCT#<a> / DAY#<day>#R#<n>    m { metric: n }, createdAt        written once (attribute_not_exists)
 * CLOSED#<day> / R#<n>#<a>      account, m, createdAt             a copy, for one Query per revision
 * LATE#<nn> / <day>#<a>         markedAt                          written by ingest, removed by the closer
 * ```
 */
export class DynamoCloseStore extends TableStore implements CloseStore {
  async closedDays(from: string, to: string): Promise<ClosedDay[]> {
    const range = closedDayRange(from, to);
    const items = await this.queryAll({
      KeyConditionExpression: 'PK = :pk AND SK BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': { S: range.PK }, ':from': { S: range.from }, ':to': { S: range.to } },
      ConsistentRead: true,
    });
    return items.flatMap((item) => {
      const record = closedDayOf(item);
      return record === undefined ? [] : [record];
    });
  }

  async closedDay(day: string): Promise<ClosedDay | undefined> {
    return (await this.closedDays(day, day))[0];
  }

  async beginRevision(day: string, revision: number, at: string): Promise<ClosedDay> {
    const key = closedDayKey(day);
    // When the condition refuses, another closer got there first: carry on from the record as it is.
    if (revision === 1) {
      await conditionally(
        this.client.send(
          new PutItemCommand({
            TableName: this.tableName,
            Item: {
              PK: { S: key.PK },
              SK: { S: key.SK },
              closedAt: { S: at },
              revision: { N: '0' },
              writing: { N: '1' },
              writingAt: { S: at },
              revisions: { M: {} },
            },
            ConditionExpression: 'attribute_not_exists(PK)',
          }),
        ),
      );
    } else {
      await conditionally(
        this.updateCloseRecord(day, {
          UpdateExpression: 'SET writing = :n, writingAt = :at',
          ConditionExpression: 'revision = :previous AND attribute_not_exists(writing)',
          ExpressionAttributeValues: { ':n': { N: String(revision) }, ':at': { S: at }, ':previous': { N: String(revision - 1) } },
        }),
      );
    }
    const record = await this.closedDay(day);
    if (record === undefined) throw new Error(`the close record of ${day} vanished`);
    return record;
  }

  async completeRevision(day: string, revision: number, createdAt: string, accounts: number): Promise<void> {
    // Refused when another closer completed it already.
    await conditionally(
      this.updateCloseRecord(day, {
        UpdateExpression: 'SET revision = :n, revisions.#n = :info REMOVE writing, writingAt',
        ConditionExpression: 'writing = :n',
        ExpressionAttributeNames: { '#n': String(revision) },
        ExpressionAttributeValues: {
          ':n': { N: String(revision) },
          ':info': { M: { createdAt: { S: createdAt }, accounts: { N: String(accounts) } } },
        },
      }),
    );
  }

  async abandonRevision(day: string, revision: number): Promise<void> {
    await conditionally(
      this.updateCloseRecord(day, {
        UpdateExpression: 'REMOVE writing, writingAt',
        ConditionExpression: 'writing = :n',
        ExpressionAttributeValues: { ':n': { N: String(revision) } },
      }),
    );
  }

  async markPublished(day: string, revision: number, step: 'exportedAt' | 'notifiedAt' | 'stripeQueuedAt', at: string): Promise<void> {
    await this.updateCloseRecord(day, {
      UpdateExpression: 'SET revisions.#n.#step = :at',
      ConditionExpression: 'attribute_exists(revisions.#n)',
      ExpressionAttributeNames: { '#n': String(revision), '#step': step },
      ExpressionAttributeValues: { ':at': { S: at } },
    });
  }

  /** An update of the close record of `day` (`CLOSED / DAY#<day>`). */
  private updateCloseRecord(day: string, update: Omit<UpdateItemCommandInput, 'TableName' | 'Key'>): Promise<unknown> {
    const key = closedDayKey(day);
    return this.client.send(new UpdateItemCommand({ ...update, TableName: this.tableName, Key: { PK: { S: key.PK }, SK: { S: key.SK } } }));
  }

  async accountsOn(day: string): Promise<string[]> {
    const items = await this.queryAll({
      IndexName: DAY_INDEX.name,
      KeyConditionExpression: '#day = :day',
      ExpressionAttributeNames: { '#day': DAY_INDEX.partitionKey },
      ExpressionAttributeValues: { ':day': { S: day } },
    });
    const accounts = new Set<string>();
    for (const item of items) {
      const account = parseAccountPartition(item.PK?.S ?? '');
      if (account !== undefined) accounts.add(account);
    }
    return [...accounts].sort();
  }

  async accountDay(account: string, day: string): Promise<AccountDayFigures> {
    const counters: Record<string, number> = {};
    const revisions: { revision: number; metrics: MetricFigures }[] = [];
    const pages = queryDayRange({ client: this.client, tableName: this.tableName, accountId: account, from: day, to: day, consistentRead: true });
    for await (const items of pages) {
      for (const item of items) {
        const parsed = parseAccountSortKey(item.SK?.S ?? '');
        if (parsed?.kind === 'usage') {
          for (const [name, value] of Object.entries(item)) {
            if (isShardMetric(name) && value.N !== undefined) counters[name] = (counters[name] ?? 0) + Number(value.N);
          }
        } else if (parsed?.kind === 'revision') {
          revisions.push({ revision: parsed.revision, metrics: figuresOf(item.m) });
        }
      }
    }
    return { counters, revisions: revisions.sort((a, b) => a.revision - b.revision) };
  }

  async recordRevisionRow(row: { day: string; revision: number; account: string; metrics: MetricFigures; createdAt: string }): Promise<RevisionRow> {
    const key = revisionKey({ accountId: row.account, day: row.day, revision: row.revision });
    let metrics = row.metrics;
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: { PK: { S: key.PK }, SK: { S: key.SK }, m: figuresAttribute(row.metrics), createdAt: { S: row.createdAt } },
          ConditionExpression: 'attribute_not_exists(PK)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // Recorded before (a run that stopped, or another closer): that row stands.
      metrics = figuresOf(error.Item?.m);
    }
    const copy = revisionRowKey({ accountId: row.account, day: row.day, revision: row.revision });
    await this.client.send(
      new PutItemCommand({
        TableName: this.tableName,
        Item: { PK: { S: copy.PK }, SK: { S: copy.SK }, account: { S: row.account }, m: figuresAttribute(metrics), createdAt: { S: row.createdAt } },
      }),
    );
    return { account: row.account, metrics };
  }

  async revisionRows(day: string, revision: number): Promise<RevisionRow[]> {
    const { PK, prefix } = revisionRowsPrefix(day, revision);
    const items = await this.queryAll({
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
      ExpressionAttributeValues: { ':pk': { S: PK }, ':prefix': { S: prefix } },
      ConsistentRead: true,
    });
    return items.map((item) => ({ account: item.account?.S ?? '', metrics: figuresOf(item.m) }));
  }

  async lateMarkers(): Promise<LateMarker[]> {
    const buckets = Array.from({ length: LATE_BUCKETS }, (_, bucket) => lateBucketPartition(bucket));
    const pages = await mapWithConcurrency(buckets, 4, (pk) =>
      this.queryAll({ KeyConditionExpression: 'PK = :pk', ExpressionAttributeValues: { ':pk': { S: pk } }, ConsistentRead: true }),
    );
    return pages.flat().flatMap((item) => {
      const parsed = parseLateMarkerSortKey(item.SK?.S ?? '');
      return parsed === undefined ? [] : [{ ...parsed, markedAt: item.markedAt?.S ?? '' }];
    });
  }

  async clearLateMarker(marker: LateMarker): Promise<boolean> {
    const key = lateMarkerKey(marker.day, marker.account);
    // Refused when marked again since it was read: the next run looks at it.
    return conditionally(
      this.client.send(
        new DeleteItemCommand({
          TableName: this.tableName,
          Key: { PK: { S: key.PK }, SK: { S: key.SK } },
          ConditionExpression: 'markedAt = :seen',
          ExpressionAttributeValues: { ':seen': { S: marker.markedAt } },
        }),
      ),
    );
  }
}

/** Batch writes accept 25 items per request. */
const BATCH = 25;
const BATCH_ATTEMPTS = 8;

/**
 * Ingest's late markers: one `BatchWriteItem` per 25 (day, account) pairs of an object
 * whose usage reaches a closed day. Each put overwrites `markedAt`, which tells a
 * closer that read the older value not to remove the marker yet.
 */
export class DynamoLateUsageMarks extends TableStore implements LateUsageMarks {
  async mark(entries: readonly { day: string; account: string }[], at: Date): Promise<void> {
    for (let start = 0; start < entries.length; start += BATCH) {
      let requests: WriteRequest[] = entries.slice(start, start + BATCH).map(({ day, account }) => {
        const key = lateMarkerKey(day, account);
        return { PutRequest: { Item: { PK: { S: key.PK }, SK: { S: key.SK }, markedAt: { S: at.toISOString() } } } };
      });
      for (let attempt = 1; requests.length > 0; attempt++) {
        if (attempt > BATCH_ATTEMPTS) throw new Error(`could not write ${requests.length} late marker(s) after ${BATCH_ATTEMPTS} attempts`);
        if (attempt > 1) await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** attempt));
        const output = await this.client.send(new BatchWriteItemCommand({ RequestItems: { [this.tableName]: requests } }));
        requests = output.UnprocessedItems?.[this.tableName] ?? [];
      }
    }
  }
}

function figuresAttribute(metrics: MetricFigures): AttributeValue {
  return { M: Object.fromEntries(Object.entries(metrics).map(([name, value]) => [name, { N: String(value) }])) };
}

function closedDayOf(item: Record<string, AttributeValue>): ClosedDay | undefined {
  const day = parseClosedDaySortKey(item.SK?.S ?? '');
  if (day === undefined) return undefined;
  const revisions: RevisionInfo[] = Object.entries(item.revisions?.M ?? {})
    .map(([revision, value]) => {
      const info = value.M ?? {};
      return {
        revision: Number(revision),
        createdAt: info.createdAt?.S ?? '',
        accounts: Number(info.accounts?.N ?? 0),
        ...(info.exportedAt?.S === undefined ? {} : { exportedAt: info.exportedAt.S }),
        ...(info.notifiedAt?.S === undefined ? {} : { notifiedAt: info.notifiedAt.S }),
        ...(info.stripeQueuedAt?.S === undefined ? {} : { stripeQueuedAt: info.stripeQueuedAt.S }),
      };
    })
    .sort((a, b) => a.revision - b.revision);
  const writing = item.writing?.N;
  return {
    day,
    closedAt: item.closedAt?.S ?? '',
    revision: Number(item.revision?.N ?? 0),
    ...(writing === undefined ? {} : { writing: { revision: Number(writing), createdAt: item.writingAt?.S ?? '' } }),
    revisions,
  };
}
