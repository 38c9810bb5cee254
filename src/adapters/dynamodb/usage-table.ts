import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
  type DynamoDBClient,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';
import definition from './usage-table-definition.json';

/**
 * The usage table as deployed: serverless.yml reads the same JSON file, so the local
 * stack and the tests create exactly what CloudFormation creates.
 */
export const usageTableDefinition = definition;

/**
 * Creates the usage table (and its TTL) unless it exists; a table created before the
 * day index existed (a local stack's kept data) gets the index added.
 */
export async function ensureUsageTable(client: DynamoDBClient, tableName: string): Promise<void> {
  let existing: TableDescription | undefined;
  try {
    existing = (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
  } catch (error) {
    if ((error as Error).name !== 'ResourceNotFoundException') throw error;
  }
  if (existing !== undefined) {
    await addMissingIndexes(client, tableName, existing);
    return;
  }
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        AttributeDefinitions: definition.AttributeDefinitions as never,
        KeySchema: definition.KeySchema as never,
        GlobalSecondaryIndexes: definition.GlobalSecondaryIndexes as never,
        BillingMode: definition.BillingMode as never,
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  await waitUntilTableExists({ client, maxWaitTime: 30 }, { TableName: tableName });
  await client.send(
    new UpdateTimeToLiveCommand({ TableName: tableName, TimeToLiveSpecification: definition.TimeToLiveSpecification }),
  );
}

async function addMissingIndexes(client: DynamoDBClient, tableName: string, table: TableDescription): Promise<void> {
  const present = new Set((table.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName));
  for (const index of definition.GlobalSecondaryIndexes) {
    if (present.has(index.IndexName)) continue;
    await client.send(
      new UpdateTableCommand({
        TableName: tableName,
        AttributeDefinitions: definition.AttributeDefinitions as never,
        GlobalSecondaryIndexUpdates: [{ Create: index as never }],
      }),
    );
  }
}
