import { GetItemCommand, PutItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import type { BackfilledHoursStore } from '../../app/ports';
import { hourSumsOfAttributes, hourSumsToAttributes, type HourSums } from '../../domain/hours';
import type { BackfilledHours } from '../../domain/counters/hours-backfill';
import { hoursBackfillKey } from '../../domain/counters/keys';
import { conditionally } from './conditional-write';
import { TableStore } from './query-partition';

/**
 * The hours `tally backfill --hours` recomputed, one item per account-day in the
 * account's day range:
 *
 * ```
 * PK ACCT#acme  SK DAY#2026-11-21#H#00   05R 311  05B 17733020  06R 1209 ...  objects 14  computedAt 2026-11-27T12:00:00Z
 *                                        atShards { 06R 40  06B 2210 }   the shards' hours when the counters were read
 * ```
 *
 * `atShards` (a map, so no reader takes its entries for the day's hours) holds the
 * shards' hour sums, every shard added, read in the same Query as the counters the hours
 * cover: readers add what the shards gained since to the recomputed hours (`dayHours`,
 * hours.ts). An item without it (written before) reads as before: its hours alone.
 *
 * Written with one PutItem, which replaces the whole item atomically (never an
 * addition: https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html),
 * on the condition that no item recomputed from more objects is there
 * (`attribute_not_exists(PK) OR objects <= :objects`): of two runs that raced over a day
 * that was still receiving objects, the one that saw more stays. It carries no `day`
 * attribute, so the day index (the closer's list of a day's accounts) never lists it.
 */
export class DynamoBackfilledHours extends TableStore implements BackfilledHoursStore {
  async read(accountId: string, day: string): Promise<BackfilledHours | undefined> {
    const key = hoursBackfillKey({ accountId, day });
    const { Item } = await this.client.send(
      new GetItemCommand({ TableName: this.tableName, Key: { PK: { S: key.PK }, SK: { S: key.SK } }, ConsistentRead: true }),
    );
    return Item === undefined ? undefined : backfilledHoursOf(Item);
  }

  async write(accountId: string, day: string, item: BackfilledHours): Promise<'written' | 'superseded'> {
    const key = hoursBackfillKey({ accountId, day });
    const hours = Object.entries(hourSumsToAttributes(item.hours)).map(([name, amount]) => [name, { N: String(amount) }] as const);
    const written = await conditionally(
      this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: {
            PK: { S: key.PK },
            SK: { S: key.SK },
            ...Object.fromEntries(hours),
            objects: { N: String(item.objects) },
            computedAt: { S: item.computedAt },
            ...(item.atShards === undefined ? {} : { atShards: { M: hourMapOf(item.atShards) } }),
          },
          ConditionExpression: 'attribute_not_exists(PK) OR #objects <= :objects',
          ExpressionAttributeNames: { '#objects': 'objects' },
          ExpressionAttributeValues: { ':objects': { N: String(item.objects) } },
        }),
      ),
    );
    return written ? 'written' : 'superseded';
  }
}

/** The backfilled hours an item holds (its hour attributes, object count, time and the shards' hours then). */
export function backfilledHoursOf(item: Record<string, AttributeValue>): BackfilledHours {
  const atShards = item.atShards?.M;
  return {
    hours: hourSumsOfAttributes(numbersOf(item)),
    objects: Number(item.objects?.N ?? 0),
    computedAt: item.computedAt?.S ?? '',
    ...(atShards === undefined ? {} : { atShards: hourSumsOfAttributes(numbersOf(atShards)) }),
  };
}

/** Hour sums as a DynamoDB map of whole-named hour attributes (`{ 06R: { N: '40' } }`). */
function hourMapOf(hours: HourSums): Record<string, AttributeValue> {
  return Object.fromEntries(Object.entries(hourSumsToAttributes(hours)).map(([name, amount]) => [name, { N: String(amount) }]));
}

function numbersOf(attributes: Record<string, AttributeValue>): Record<string, number> {
  return Object.fromEntries(Object.entries(attributes).flatMap(([name, value]) => (value.N === undefined ? [] : [[name, Number(value.N)]])));
}
