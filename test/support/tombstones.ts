import { QueryCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DROPPED_KEYS_ATTRIBUTE, droppedKeysPartition, type ShardRef } from '../../src/domain/counters/keys';

export interface TombstoneBatch {
  readonly SK: string;
  readonly keys: readonly Uint8Array[];
}

/** The tombstone batches a usage shard wrote (consistent read of its `DROPPED#` partition). */
export async function tombstoneBatches(client: DynamoDBClient, tableName: string, shard: ShardRef): Promise<TombstoneBatch[]> {
  const output = await client.send(
    new QueryCommand({
      TableName: tableName,
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': { S: droppedKeysPartition(shard) } },
      ConsistentRead: true,
    }),
  );
  return (output.Items ?? []).map((item) => ({ SK: item.SK?.S ?? '', keys: (item[DROPPED_KEYS_ATTRIBUTE]?.L ?? []).map((entry) => entry.B ?? new Uint8Array()) }));
}

/** Whether any batch of the shard holds `key`. */
export function tombstoned(batches: readonly TombstoneBatch[], key: Uint8Array): boolean {
  return batches.some((batch) => batch.keys.some((kept) => Buffer.from(kept).equals(Buffer.from(key))));
}
