import { GetItemCommand, PutItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { DynamoUsageStore } from '../../src/adapters/dynamodb/dynamodb-usage-store';
import { addHourSums, hourSumsOfAttributes, hourTotals, hoursCoverDay, metricCode, type HourSums } from '../../src/domain/hours';
import { usageKey } from '../../src/domain/counters/keys';
import type { Increment } from '../../src/domain/counters/usage-store';
import { readHourCounters, testClients, testStackInfo, uniqueId } from '../support/stack';

const info = testStackInfo();
const { dynamodb } = testClients(info);
const day = '2026-11-21';
const key = (n: number) => new Uint8Array(12).fill(0).map((_, i) => (i === 0 ? n : i === 1 ? n >> 8 : 0xcd));

/** The usage store every test writes through: a history of 3 keys, so a few increments reach the rolling form. */
const usageStore = (client = dynamodb) => new DynamoUsageStore({ client, tableName: info.table, historyCap: 3, ledgerTtlDays: 400 });

/** Puts a shard item of `day` as it stands (as an earlier version of Tally left it), key attributes added. */
async function putItem(account: string, shard: number, attributes: Record<string, AttributeValue>): Promise<void> {
  const k = usageKey({ accountId: account, day, shard });
  await dynamodb.send(new PutItemCommand({ TableName: info.table, Item: { PK: { S: k.PK }, SK: { S: k.SK }, ...attributes } }));
}

async function readItem(account: string, shard: number): Promise<Record<string, AttributeValue>> {
  const k = usageKey({ accountId: account, day, shard });
  const { Item } = await dynamodb.send(new GetItemCommand({ TableName: info.table, Key: { PK: { S: k.PK }, SK: { S: k.SK } }, ConsistentRead: true }));
  return Item ?? {};
}

/** The sums by hour a shard item holds, read back from its flat hour attributes. */
function hoursOf(item: Record<string, AttributeValue>): HourSums {
  return hourSumsOfAttributes(Object.fromEntries(Object.entries(item).flatMap(([name, value]) => (value.N === undefined ? [] : [[name, Number(value.N)]]))));
}

const dayOf = (item: Record<string, AttributeValue>) => ({ requests: Number(item.requests?.N ?? 0), bytes: Number(item.bytes?.N ?? 0) });

/** An increment of `n` requests split over two hours (`n` and `n + 1`, mod 24), `10 n` bytes. */
function increment(account: string, shard: number, n: number): Increment {
  const first = n % 24;
  const second = (n + 1) % 24;
  const hours: Record<number, Record<string, number>> = {};
  addHourSums(hours, { [first]: { requests: 1, bytes: 10 * n - 3 } });
  addHourSums(hours, { [second]: { requests: n - 1, bytes: 3 } });
  return { account, day, shard, key: key(n), metrics: { requests: n, bytes: 10 * n }, hours };
}

/** A client that records the update expression of every write that succeeded. */
function recordingClient(): { client: typeof dynamodb; written: string[] } {
  const { dynamodb: client } = testClients(info);
  const written: string[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (context.commandName === 'UpdateItemCommand') {
        const input = args.input as { UpdateExpression?: string; ConditionExpression?: string };
        written.push(`${input.UpdateExpression ?? ''} | ${input.ConditionExpression ?? ''}`);
      }
      return result;
    },
    { step: 'initialize', name: 'record-writes' },
  );
  return { client, written };
}

describe('sums by UTC hour in the conditional write (DynamoDB Local)', () => {
  it('adds each increment to its hours in the one write that adds it to the day, in the growing, rolling, proven and guarded forms, and a duplicate adds to neither', async () => {
    const account = uniqueId('hrs');
    const { client, written } = recordingClient();
    const usage = usageStore(client);
    const expected: Record<number, Record<string, number>> = {};
    const apply = async (n: number, since?: Date) => {
      const inc = increment(account, 2, n);
      const outcome = await usage.applyIncrement(inc, since === undefined ? {} : { since });
      if (outcome === 'applied') addHourSums(expected, inc.hours!);
      return outcome;
    };

    const outcomes = [];
    for (const n of [1, 2, 3, 4, 5]) outcomes.push(await apply(n));
    outcomes.push(await apply(5), await apply(4));
    // A retry after an attempt that may have died unseen long ago: proven by the tombstones, then a guarded write.
    const longAgo = new Date('2026-11-20T00:00:00Z');
    outcomes.push(await apply(1, longAgo), await apply(30, longAgo));
    const item = await readItem(account, 2);

    expect(outcomes).toEqual(['applied', 'applied', 'applied', 'applied', 'applied', 'duplicate', 'duplicate', 'duplicate', 'applied']);
    expect(written.some((w) => w.includes('list_append(if_not_exists'))).toBe(true);
    expect(written.some((w) => w.includes('REMOVE #h[0]'))).toBe(true);
    expect(written.some((w) => w.includes('#x <= :xmax'))).toBe(true);
    // Every write of an increment carries its hours: no request without them.
    expect(written.every((w) => w.includes('#o0 :o0'))).toBe(true);
    expect(hoursOf(item)).toEqual(expected);
    expect(dayOf(item)).toEqual({ requests: 1 + 2 + 3 + 4 + 5 + 30, bytes: 10 * (1 + 2 + 3 + 4 + 5 + 30) });
    expect(hoursCoverDay(dayOf(item), hoursOf(item))).toBe(true);
  });

  it('adds the hours when it adopts an item an earlier version wrote, and with a proof the history gives alone', async () => {
    const account = uniqueId('hra');
    // As a version before tombstones left it: a history without a drop count, no hours.
    await putItem(account, 0, { h: { L: [{ B: key(200) }] }, requests: { N: '7' }, bytes: { N: '70' }, updatedAt: { S: '2026-11-21T01:00:00.000Z' } });
    const { client, written } = recordingClient();
    const usage = usageStore(client);
    const adopted = increment(account, 0, 6);
    const proven = increment(account, 0, 7);

    const outcomes = [await usage.applyIncrement(adopted), await usage.applyIncrement(proven, { since: new Date('2026-11-21T00:00:00Z') })];
    const item = await readItem(account, 0);

    expect(outcomes).toEqual(['applied', 'applied']);
    expect(written.some((w) => w.includes('#a = :tm'))).toBe(true);
    expect(written.some((w) => w.includes(':since'))).toBe(true);
    expect(hoursOf(item)).toEqual(addHourSums(addHourSums({}, adopted.hours!), proven.hours!));
    // The day holds 7 requests counted before hours: its hours do not cover it.
    expect(hourTotals(hoursOf(item))).toEqual({ requests: 13, bytes: 130 });
    expect(dayOf(item)).toEqual({ requests: 20, bytes: 200 });
    expect(hoursCoverDay(dayOf(item), hoursOf(item))).toBe(false);
  });

  it("names a configured metric's hours by its code, and reads a shard written before the codes (whole names) and after alike", async () => {
    const account = uniqueId('hrc');
    // As the version before the codes left it: hours of authorization_requests under its whole name.
    await putItem(account, 0, {
      d: { S: day },
      h: { L: [{ B: key(300) }] },
      t: { L: [{ N: '60' }] },
      x: { N: '0' },
      requests: { N: '5' },
      bytes: { N: '50' },
      authorization_requests: { N: '3' },
      '01R': { N: '5' },
      '01B': { N: '50' },
      '01authorization_requests': { N: '3' },
      updatedAt: { S: '2026-11-21T01:00:00.000Z' },
    });
    const usage = usageStore();
    const hours = { 1: { requests: 2, bytes: 20, authorization_requests: 1 }, 2: { requests: 4, bytes: 40, authorization_requests: 2 } };
    const outcome = await usage.applyIncrement({ account, day, shard: 0, key: key(301), metrics: { requests: 6, bytes: 60, authorization_requests: 3 }, hours });
    const item = await readItem(account, 0);

    expect(outcome).toBe('applied');
    expect(Object.keys(item).filter((name) => name.includes('authorization_requests')).sort()).toEqual(['01authorization_requests', 'authorization_requests']);
    expect(item[`01${metricCode('authorization_requests')}`]?.N).toBe('1');
    expect(item[`02${metricCode('authorization_requests')}`]?.N).toBe('2');
    const read = (await readHourCounters(dynamodb, info.table, account, day))[day];
    expect(read).toEqual({ 1: { requests: 7, bytes: 70, authorization_requests: 4 }, 2: { requests: 4, bytes: 40, authorization_requests: 2 } });
    expect(hoursCoverDay({ requests: 11, bytes: 110, authorization_requests: 6 }, read!)).toBe(true);
  });

  it('applies an increment recorded without hours to the day alone, so the day says its hours do not cover it', async () => {
    const account = uniqueId('hrn');
    const usage = usageStore();
    const withHours = increment(account, 1, 3);
    const { hours: _dropped, ...withoutHours } = increment(account, 1, 4);

    await usage.applyIncrement(withHours);
    await usage.applyIncrement(withoutHours);
    const item = await readItem(account, 1);

    expect(hoursOf(item)).toEqual(withHours.hours);
    expect(dayOf(item)).toEqual({ requests: 7, bytes: 70 });
    expect(hoursCoverDay(dayOf(item), hoursOf(item))).toBe(false);
  });

  it('applies an increment whose hours would pass the 4 KB expression limit to the day alone, never failing it', async () => {
    const account = uniqueId('hrx');
    const usage = usageStore();
    const metrics: Record<string, number> = { requests: 24, bytes: 240 };
    const hours: Record<number, Record<string, number>> = {};
    for (let m = 0; m < 30; m++) metrics[`rule_${m}`] = 24;
    for (let hour = 0; hour < 24; hour++) hours[hour] = Object.fromEntries(Object.keys(metrics).map((name) => [name, name === 'bytes' ? 10 : 1]));

    const outcome = await usage.applyIncrement({ account, day, shard: 0, key: key(1), metrics, hours });
    const item = await readItem(account, 0);

    expect(outcome).toBe('applied');
    expect(dayOf(item)).toEqual({ requests: 24, bytes: 240 });
    expect(item.rule_29?.N).toBe('24');
    expect(hoursOf(item)).toEqual({});
  });

  it("keeps an unresolved increment's hours in the ledger and the unresolved list, so settling it adds them", async () => {
    const account = uniqueId('hru');
    const usage = usageStore();
    const object = { bucket: 'logs', key: `${account}/E1.2026-11-21-05.a.gz`, etag: 'e1' };
    const unresolved = increment(account, 0, 5);

    await usage.writeLedger({
      object,
      lines: { read: 5, counted: 5, unattributed: 0, malformed: 0 },
      increments: 1,
      applied: 0,
      duplicates: 0,
      unresolved: [unresolved],
      processedAt: '2026-11-21T06:00:00.000Z',
      contributions: [{ account, day, metrics: unresolved.metrics, hours: unresolved.hours! }],
    });
    const ledger = await usage.findLedger(object);
    const listed = (await usage.listUnresolved()).find((entry) => entry.object.key === object.key);

    expect(ledger?.unresolved?.[0]?.hours).toEqual(unresolved.hours);
    expect(listed?.increments[0]?.hours).toEqual(unresolved.hours);
    expect(ledger?.contributions).toEqual([{ account, day, metrics: unresolved.metrics, hours: unresolved.hours }]);
  });
});
