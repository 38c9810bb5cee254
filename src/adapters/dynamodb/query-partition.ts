import { QueryCommand, type AttributeValue, type DynamoDBClient, type QueryCommandInput } from '@aws-sdk/client-dynamodb';

/** One table and the client that reads it. */
export interface TableAccess {
  readonly client: DynamoDBClient;
  readonly tableName: string;
}

/** A store of items in one table: it keeps the client and the table's name it is made with, for its commands. */
export abstract class TableStore {
  protected readonly client: DynamoDBClient;
  protected readonly tableName: string;

  constructor({ client, tableName }: TableAccess) {
    this.client = client;
    this.tableName = tableName;
  }

  /** Every item one Query of this table matches, following pages ({@link queryAll}). */
  protected queryAll(input: Omit<QueryCommandInput, 'TableName' | 'ExclusiveStartKey'>): Promise<Record<string, AttributeValue>[]> {
    return queryAll({ client: this.client, tableName: this.tableName }, input);
  }
}

/** Every item one Query matches, following pages. */
export async function queryAll(table: TableAccess, input: Omit<QueryCommandInput, 'TableName' | 'ExclusiveStartKey'>): Promise<Record<string, AttributeValue>[]> {
  const items: Record<string, AttributeValue>[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await table.client.send(new QueryCommand({ ...input, TableName: table.tableName, ...(start === undefined ? {} : { ExclusiveStartKey: start }) }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return items;
}

/** Every item of one partition (optionally under a sort-key prefix). */
export function queryPartition(table: TableAccess, pk: string, prefix: string | undefined, consistentRead: boolean): Promise<Record<string, AttributeValue>[]> {
  return queryAll(table, {
    KeyConditionExpression: prefix === undefined ? 'PK = :pk' : 'PK = :pk AND begins_with(SK, :prefix)',
    ExpressionAttributeValues: { ':pk': { S: pk }, ...(prefix === undefined ? {} : { ':prefix': { S: prefix } }) },
    ConsistentRead: consistentRead,
  });
}
