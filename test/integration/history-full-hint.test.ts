import { DynamoUsageStore } from '../../src/adapters/dynamodb/dynamodb-usage-store';
import { meterCapacity } from '../../bench/capacity-meter';
import { testClients, testStackInfo, uniqueId } from '../support/stack';

const info = testStackInfo();
const key = (n: number) => new Uint8Array(12).fill(0xcd).map((byte, i) => (i === 0 ? n : byte));

describe('a store that fills a shard history itself', () => {
  it('sends the rolling form next, without a rejected growing write, tombstoning the front of the history in one batch', async () => {
    const { dynamodb } = testClients(info);
    const meter = meterCapacity(dynamodb);
    const store = new DynamoUsageStore({ client: dynamodb, tableName: info.table, historyCap: 3, ledgerTtlDays: 400 });
    const account = uniqueId('hint');
    const inc = (n: number) => store.applyIncrement({ account, day: '2026-11-21', shard: 0, key: key(n), metrics: { requests: 1, bytes: 1 } });

    for (const n of [1, 2, 3, 4, 5]) await inc(n);
    const totals = meter.reset();

    expect(totals.requests).toEqual({ UpdateItem: 5, PutItem: 1 });
    expect(totals.failedWrites).toBe(0);
  });

  it('still switches forms when another writer filled the history', async () => {
    const { dynamodb } = testClients(info);
    const account = uniqueId('hint2');
    const options = { client: dynamodb, tableName: info.table, historyCap: 3, ledgerTtlDays: 400 };
    const inc = (store: DynamoUsageStore, n: number) =>
      store.applyIncrement({ account, day: '2026-11-21', shard: 0, key: key(n), metrics: { requests: 1, bytes: 1 } });
    const filler = new DynamoUsageStore(options);
    for (const n of [1, 2, 3]) await inc(filler, n);
    const meter = meterCapacity(dynamodb);

    const outcome = await inc(new DynamoUsageStore(options), 4);

    expect(outcome).toBe('applied');
    expect(meter.reset()).toMatchObject({ requests: { UpdateItem: 2, PutItem: 1 }, failedWrites: 1 });
  });
});
