import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { ReconcileRecords } from '../../app/ports';
import type { ReconcileRecord } from '../../domain/reading/health';
import { lastReconcileKey } from '../../domain/counters/keys';
import { TableStore } from './query-partition';

/** The last `tally reconcile` result, one item (`HEALTH` / `RECONCILE`), rewritten by each run. */
export class DynamoReconcileRecords extends TableStore implements ReconcileRecords {
  async record(result: ReconcileRecord): Promise<void> {
    const key = lastReconcileKey();
    await this.client.send(new PutItemCommand({ TableName: this.tableName, Item: { PK: { S: key.PK }, SK: { S: key.SK }, result: { S: JSON.stringify(result) } } }));
  }

  async last(): Promise<ReconcileRecord | undefined> {
    const key = lastReconcileKey();
    const output = await this.client.send(new GetItemCommand({ TableName: this.tableName, Key: { PK: { S: key.PK }, SK: { S: key.SK } } }));
    const text = output.Item?.result?.S;
    return text === undefined ? undefined : (JSON.parse(text) as ReconcileRecord);
  }
}
