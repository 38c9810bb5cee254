import { DeleteItemCommand, GetItemCommand, PutItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import type { AccountZones } from '../../app/ports';
import { storedZone, type AccountZone } from '../../domain/reading/account-zone';
import { accountZoneKey } from '../../domain/counters/keys';
import type { TableAccess } from './query-partition';

/**
 * Accounts' billing time zones in the usage table, one item per account in its own
 * partition, outside every day range (keys.ts):
 *
 * ```
 * ACCT#acme / ZONE    zone, updatedAt, updatedBy
 * ```
 *
 * The read API reads it with one eventually consistent GetItem (half a read capacity
 * unit for an item under 4 KB, https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html),
 * sent beside the day-range Query; `tally zone` reads and writes it strongly.
 */
export class DynamoAccountZones implements AccountZones {
  private readonly table: TableAccess;
  private readonly consistentRead: boolean;

  constructor({ client, tableName, consistentRead = false }: TableAccess & { consistentRead?: boolean }) {
    this.table = { client, tableName };
    this.consistentRead = consistentRead;
  }

  async zoneOf(accountId: string): Promise<string | undefined> {
    return storedZone((await this.get(accountId))?.zone);
  }

  /** The stored item as written, whatever its zone says (`tally zone show` shows it as it is). */
  async get(accountId: string): Promise<AccountZone | undefined> {
    const { Item } = await this.table.client.send(
      new GetItemCommand({ TableName: this.table.tableName, Key: keyOf(accountId), ConsistentRead: this.consistentRead }),
    );
    return Item === undefined ? undefined : zoneOf(accountId, Item);
  }

  /** Stores `zone` (replacing any earlier one); returns the one it replaced. */
  async set(change: AccountZone): Promise<AccountZone | undefined> {
    const { Attributes } = await this.table.client.send(
      new PutItemCommand({
        TableName: this.table.tableName,
        Item: {
          ...keyOf(change.account),
          zone: { S: change.zone },
          updatedAt: { S: change.updatedAt },
          ...(change.updatedBy === undefined ? {} : { updatedBy: { S: change.updatedBy } }),
        },
        ReturnValues: 'ALL_OLD',
      }),
    );
    return Attributes === undefined ? undefined : zoneOf(change.account, Attributes);
  }

  /** Removes the account's zone; returns the one removed, if any. */
  async clear(accountId: string): Promise<AccountZone | undefined> {
    const { Attributes } = await this.table.client.send(
      new DeleteItemCommand({ TableName: this.table.tableName, Key: keyOf(accountId), ReturnValues: 'ALL_OLD' }),
    );
    return Attributes === undefined ? undefined : zoneOf(accountId, Attributes);
  }
}

function keyOf(accountId: string): Record<string, AttributeValue> {
  const key = accountZoneKey(accountId);
  return { PK: { S: key.PK }, SK: { S: key.SK } };
}

function zoneOf(account: string, item: Record<string, AttributeValue>): AccountZone {
  return {
    account,
    zone: item.zone?.S ?? '',
    updatedAt: item.updatedAt?.S ?? '',
    ...(item.updatedBy?.S === undefined ? {} : { updatedBy: item.updatedBy.S }),
  };
}
