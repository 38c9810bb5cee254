import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import definition from './usage-table-definition.json';

/**
 * The usage table as deployed: serverless.yml reads the same JSON file, so the local
 * stack and the tests create exactly what CloudFormation creates.
 */
export const usageTableDefinition = definition;

/** Creates the usage table (and its TTL) unless it exists. */
export async function ensureUsageTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
    return;
  } catch (error) {
    if ((error as Error).name !== 'ResourceNotFoundException') throw error;
  }
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        AttributeDefinitions: definition.AttributeDefinitions as never,
        KeySchema: definition.KeySchema as never,
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
