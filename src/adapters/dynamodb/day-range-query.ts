import { QueryCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { dayRangeKeys } from '../../domain/counters/keys';

/** Bounds of every day an account can hold, for "any day" ranges. */
export const FIRST_DAY = '0000-01-01';
export const LAST_DAY = '9999-12-31';

/** One account's day range in the usage table, and how to read it. */
export interface DayRangeQuery {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  readonly accountId: string;
  readonly from: string;
  readonly to: string;
  readonly consistentRead: boolean;
  /** Keeps only items without this attribute (`delta`: usage shards) or with it (adjustments). */
  readonly filter?: { readonly attribute: string; readonly present: boolean };
  /** Attributes to fetch; all when absent. */
  readonly projection?: string;
}

/**
 * The pages of one Query on an account's sort-key range (`DAY#from#` .. `DAY#to#~`),
 * which holds usage shards and adjustments alike: the one read every reader of the
 * table shares, paginated until DynamoDB has no more.
 */
export async function* queryDayRange(query: DayRangeQuery): AsyncIterable<Record<string, AttributeValue>[]> {
  const range = dayRangeKeys(query.accountId, query.from, query.to);
  const filter = query.filter;
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await query.client.send(
      new QueryCommand({
        TableName: query.tableName,
        KeyConditionExpression: 'PK = :pk AND SK BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':pk': { S: range.PK }, ':from': { S: range.from }, ':to': { S: range.to } },
        ConsistentRead: query.consistentRead,
        ...(filter === undefined
          ? {}
          : {
              FilterExpression: filter.present ? 'attribute_exists(#filtered)' : 'attribute_not_exists(#filtered)',
              ExpressionAttributeNames: { '#filtered': filter.attribute },
            }),
        ...(query.projection === undefined ? {} : { ProjectionExpression: query.projection }),
        ...(start === undefined ? {} : { ExclusiveStartKey: start }),
      }),
    );
    yield page.Items ?? [];
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
}
