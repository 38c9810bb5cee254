import { DeleteItemCommand, QueryCommand, UpdateItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoBackfilledHours } from '../../src/adapters/dynamodb/dynamodb-hours-backfill';
import { DynamoCloseStore } from '../../src/adapters/dynamodb/dynamodb-close-store';
import { DynamoSourceReader } from '../../src/adapters/dynamodb/dynamodb-sources';
import { DynamoUsageReader } from '../../src/adapters/dynamodb/dynamodb-usage-reader';
import { backfillHours, type HoursBackfillDeps, type HoursBackfillReport } from '../../src/app/ingest/backfill-hours';
import { explainDay } from '../../src/app/reading/explain';
import { ingestBatch } from '../../src/app/ingest/ingest';
import type { AwsClients } from '../../src/adapters/clients';
import { decodeContributions, encodeContributions } from '../../src/domain/counters/contributions';
import { hourFigures } from '../../src/domain/reading/explanation';
import { addHourSums, hoursCoverDay, isHourAttribute, type HourSums } from '../../src/domain/hours';
import type { BackfilledHours } from '../../src/domain/counters/hours-backfill';
import { hoursBackfillKey, ledgerKey } from '../../src/domain/counters/keys';
import { metricNames } from '../../src/domain/logs/metric-rules';
import { readConfig } from '../../src/adapters/config';
import { tallyCommand } from '../support/cli';
import { handoffTable } from '../support/handoff';
import { captureIo, operatorEnv, putLogSet, type LogSet } from '../support/operator';
import { readCounters, s3NotificationMessage, testClients, testIngestDeps, testStackInfo } from '../support/stack';

/**
 * `tally backfill --hours` on DynamoDB Local and the S3 emulator. Two days are counted,
 * then made into days counted before hours existed (the shards' hour attributes and the
 * ledger rows' hours removed). The backfill reads the objects again and writes hours that
 * equal a brute-force count by hour of the generated lines (an hour-00 object holds lines
 * of the day before at 23:59) and cover each day's counters exactly; a second run, a run
 * that crashed half way (SDK middleware) and its rerun, and two runs at once all leave the
 * same items; no counter or history ever moves.
 */
const info = testStackInfo();
const D1 = '2026-05-11';
const D2 = '2026-05-12';
const DAYS = [D1, D2];
const HOURS = [0, 9, 23];
const NOW = new Date('2026-05-20T10:00:00Z');
let table: string;
let env: Record<string, string>;
let set: LogSet;
let dynamodb: DynamoDBClient;
let names: string[];
/** The account partitions' counters and histories, before any backfill. */
let countersBefore: Record<string, Record<string, AttributeValue>>;
/** What each account-day's hours must be: the generator's lines, by the hour of their time. */
const expectedHours = new Map<string, HourSums>();

const accountDays = () => set.accounts.flatMap((account) => DAYS.map((day) => [account, day] as const));

/** Every item of the set's account partitions but the backfilled hours: shards (metrics, hour attributes, histories). */
async function accountItems(): Promise<Record<string, Record<string, AttributeValue>>> {
  const items: Record<string, Record<string, AttributeValue>> = {};
  for (const account of set.accounts) {
    const page = await dynamodb.send(new QueryCommand({ TableName: table, KeyConditionExpression: 'PK = :pk', ExpressionAttributeValues: { ':pk': { S: `ACCT#${account}` } }, ConsistentRead: true }));
    for (const item of page.Items ?? []) if (!item.SK!.S!.includes('#H#')) items[`${item.PK!.S}|${item.SK!.S}`] = item;
  }
  return items;
}

/** Turns the counted days into days counted before hours existed: no hour attribute on a shard, no hours in a ledger row. */
async function forgetHours(): Promise<void> {
  for (const [id, item] of Object.entries(await accountItems())) {
    const hourNames = Object.keys(item).filter(isHourAttribute);
    if (hourNames.length === 0) continue;
    const [PK, SK] = id.split('|');
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: table,
        Key: { PK: { S: PK! }, SK: { S: SK! } },
        UpdateExpression: `REMOVE ${hourNames.map((_, i) => `#h${i}`).join(', ')}`,
        ExpressionAttributeNames: Object.fromEntries(hourNames.map((name, i) => [`#h${i}`, name])),
      }),
    );
  }
  for (const ref of set.refs) {
    const page = await dynamodb.send(
      new QueryCommand({ TableName: table, KeyConditionExpression: 'PK = :pk AND begins_with(SK, :done)', ExpressionAttributeValues: { ':pk': { S: ledgerKey(ref).PK }, ':done': { S: '#DONE' } } }),
    );
    for (const item of page.Items ?? []) {
      if (item.c?.S === undefined) continue;
      const rows = decodeContributions({ metrics: item.cm?.S ?? '', rows: item.c.S }).map(({ account, day, metrics }) => ({ account, day, metrics }));
      const encoded = encodeContributions(rows);
      await dynamodb.send(
        new UpdateItemCommand({
          TableName: table,
          Key: { PK: item.PK!, SK: item.SK! },
          UpdateExpression: 'SET c = :c, cm = :cm',
          ExpressionAttributeValues: { ':c': { S: encoded.rows }, ':cm': { S: encoded.metrics } },
        }),
      );
    }
  }
}

async function backfilledItem(account: string, day: string): Promise<BackfilledHours | undefined> {
  return new DynamoBackfilledHours({ client: dynamodb, tableName: table }).read(account, day);
}

async function deleteBackfilledHours(): Promise<void> {
  for (const [account, day] of accountDays()) {
    const key = hoursBackfillKey({ accountId: account, day });
    await dynamodb.send(new DeleteItemCommand({ TableName: table, Key: { PK: { S: key.PK }, SK: { S: key.SK } } }));
  }
}

/** The backfill's ports on the test stack, with fresh clients (`clients` adds fault middleware). */
function hoursDeps(clients?: (clients: AwsClients) => void): HoursBackfillDeps {
  const ingest = testIngestDeps({ TALLY_TABLE: table }, { ...(clients === undefined ? {} : { clients }) });
  const t = { client: ingest.clients.dynamodb, tableName: table };
  return {
    ledger: new DynamoSourceReader(t),
    reader: new DynamoUsageReader({ ...t, consistentRead: true }),
    store: new DynamoBackfilledHours(t),
    accounts: new DynamoCloseStore(t),
    source: ingest.source,
    settings: ingest.settings,
    clock: () => NOW,
  };
}

/** Every account-day's item holds exactly the expected hours, from all its objects, covering its counters. */
async function expectHoursEverywhere(): Promise<void> {
  for (const [account, day] of accountDays()) {
    const item = await backfilledItem(account, day);
    const counters = (await readCounters(dynamodb, table, account, day))[day] ?? {};
    expect({ account, day, hours: item?.hours }).toEqual({ account, day, hours: expectedHours.get(`${account}|${day}`) });
    expect(hoursCoverDay(counters, item!.hours)).toBe(true);
    // The shards' own hours as the backfill read them with the counters: none (counted before hours).
    expect(item!.atShards).toEqual({});
  }
}

beforeAll(async () => {
  ({ table, env } = await handoffTable(info));
  dynamodb = testClients(info).dynamodb;
  names = metricNames(readConfig(env).metricRules);
  set = await putLogSet({ days: DAYS, hours: HOURS, accounts: 3, lines: 150 });
  set.refs.forEach((ref, i) => {
    const objectDay = DAYS[Math.floor(i / HOURS.length)]!;
    const objectHour = HOURS[i % HOURS.length]!;
    for (const [key, metrics] of set.expectedByKey.get(ref.key)!.usage) {
      const day = key.split('|')[1]!;
      if (!DAYS.includes(day)) continue;
      const sums = (expectedHours.get(key) ?? {}) as Record<number, Record<string, number>>;
      const nonZero = Object.fromEntries(Object.entries(metrics).filter(([, value]) => value !== 0));
      // A line of another day in an hour-00 object is at 23:59 of the day before.
      expectedHours.set(key, addHourSums(sums, { [day === objectDay ? objectHour : 23]: nonZero }));
    }
  });
  const response = await ingestBatch({ Records: set.refs.map((ref) => s3NotificationMessage(ref)) }, testIngestDeps({ TALLY_TABLE: table }));
  expect(response.batchItemFailures).toEqual([]);
  await forgetHours();
  countersBefore = await accountItems();
}, 120_000);

describe('tally backfill --hours (DynamoDB Local, S3 emulator)', () => {
  it('starts from days whose hours are unknown: explain says so, never zeros', async () => {
    const [account, day] = accountDays()[0]!;
    const explanation = await explainDay({ reader: new DynamoUsageReader({ client: dynamodb, tableName: table }), sources: new DynamoSourceReader({ client: dynamodb, tableName: table }), metricNames: names }, account, day);

    expect(explanation).toMatchObject({ hours: null, hoursReason: expect.stringContaining(`tally backfill --hours --from ${day} --to ${day}`) });
    expect(explanation.sources.every((source) => source.hours === null)).toBe(true);
  });

  it('writes hours that equal a count by hour of the log lines and cover each day exactly; no counter moves', async () => {
    const io = captureIo();
    const code = await tallyCommand('backfill')(['--hours', '--from', D1, '--to', D2, '--json'], io, operatorEnv(info, { prefix: set.prefix }, { TALLY_TABLE: table }));
    const report = JSON.parse(io.stdout) as HoursBackfillReport;

    expect({ code, err: io.stderr }).toEqual({ code: 0, err: '' });
    // D1: its three objects and D2's hour-00 object (lines of D1 23:59); D2: its three.
    expect(report).toMatchObject({ days: 2, objects: 7, objectsRead: 7, accountDays: 6, written: 6, unchanged: 0, superseded: 0, reported: [] });
    await expectHoursEverywhere();
    expect((await backfilledItem(set.accounts[0]!, D1))!.objects).toBe(4);
    expect(await accountItems()).toEqual(countersBefore);
  });

  it('explain then shows the day by hour from the backfill', async () => {
    const [account, day] = accountDays()[1]!;
    const explanation = await explainDay({ reader: new DynamoUsageReader({ client: dynamodb, tableName: table }), sources: new DynamoSourceReader({ client: dynamodb, tableName: table }), metricNames: names }, account, day);

    expect(explanation.hoursSource).toBe('backfill');
    expect(explanation.hours).toEqual(hourFigures(expectedHours.get(`${account}|${day}`)!, explanation.metricNames, true));
  });

  it('a second run changes nothing', async () => {
    const before = await Promise.all(accountDays().map(([account, day]) => backfilledItem(account, day)));
    const io = captureIo();
    const code = await tallyCommand('backfill')(['--hours', '--from', D1, '--to', D2], io, operatorEnv(info, { prefix: set.prefix }, { TALLY_TABLE: table }), process.cwd(), () => new Date(NOW.getTime() + 3_600_000));

    expect({ code, err: io.stderr }).toEqual({ code: 0, err: '' });
    expect(io.stdout).toContain('hours written 0; already written 6 (unchanged); not written 0');
    expect(await Promise.all(accountDays().map(([account, day]) => backfilledItem(account, day)))).toEqual(before);
    expect(await accountItems()).toEqual(countersBefore);
  });

  it('a run that crashed half way (and lost the answer of a write), run again, ends the same', async () => {
    await deleteBackfilledHours();
    let puts = 0;
    let lost = false;
    const crashing = hoursDeps((clients) =>
      clients.dynamodb.middlewareStack.add(
        (next, context) => async (args) => {
          if (context.commandName !== 'PutItemCommand') return next(args);
          if (++puts > 3) throw Object.assign(new Error('backfill crashed'), { name: 'BackfillCrash' });
          const result = await next(args);
          if (!lost) {
            lost = true; // Applied, then the answer is lost: the SDK sends it again.
            throw Object.assign(new Error('socket hang up (response lost after DynamoDB applied the write)'), { code: 'ECONNRESET' });
          }
          return result;
        },
        { step: 'deserialize', name: 'crashBackfill' },
      ),
    );

    await expect(backfillHours(crashing, { from: D1, to: D2, concurrency: 1 })).rejects.toThrow('backfill crashed');
    const written = (await Promise.all(accountDays().map(([account, day]) => backfilledItem(account, day)))).filter((item) => item !== undefined);
    expect(written.length).toBeGreaterThan(0);
    expect(written.length).toBeLessThan(6);

    const rerun = await backfillHours(hoursDeps(), { from: D1, to: D2 });

    expect(rerun).toMatchObject({ written: 6 - written.length, unchanged: written.length, reported: [] });
    await expectHoursEverywhere();
    expect(await accountItems()).toEqual(countersBefore);
  });

  it('two runs at once end the same', async () => {
    await deleteBackfilledHours();

    const reports = await Promise.all([backfillHours(hoursDeps(), { from: D1, to: D2 }), backfillHours(hoursDeps(), { from: D1, to: D2 })]);

    expect(reports.map((report) => report.reported)).toEqual([[], []]);
    await expectHoursEverywhere();
    expect(await accountItems()).toEqual(countersBefore);
  });

  it('reports (exit 1) and leaves as it was a day whose objects no longer add up to its counters', async () => {
    const before = await backfilledItem(set.accounts[0]!, D2);
    // An object whose ledger forgot its contributions (counted before they were recorded).
    const forgotten = set.refs[HOURS.length + 1]!;
    await dynamodb.send(new UpdateItemCommand({ TableName: table, Key: { PK: { S: ledgerKey(forgotten).PK }, SK: { S: '#DONE' } }, UpdateExpression: 'REMOVE cv, c, cm, sd, fmt' }));
    const io = captureIo();

    const code = await tallyCommand('backfill')(['--hours', '--from', D2, '--to', D2, '--account', set.accounts[0]!], io, operatorEnv(info, { prefix: set.prefix }, { TALLY_TABLE: table }));

    expect(code).toBe(1);
    expect(io.stdout).toMatch(/not written 1/);
    expect(io.stdout).toContain('the counters hold more than its 2 log object(s) in the ledger');
    expect(await backfilledItem(set.accounts[0]!, D2)).toEqual(before);
    expect(await accountItems()).toEqual(countersBefore);
  });

  it('writes that day again once tally backfill has recorded the missing contributions (with their hours, so that object is not read again)', async () => {
    const account = set.accounts[0]!;
    const before = await backfilledItem(account, D2);
    const target = operatorEnv(info, { prefix: set.prefix }, { TALLY_TABLE: table });
    const fill = captureIo();
    expect(await tallyCommand('backfill')(['--from', D2, '--to', D2, '--inline', '--json'], fill, target)).toBe(0);
    expect(JSON.parse(fill.stdout)).toMatchObject({ contributionsFilled: 1, counted: 0, applied: 0 });
    const io = captureIo();

    const code = await tallyCommand('backfill')(['--hours', '--from', D2, '--to', D2, '--account', account, '--json'], io, target);

    expect({ code, err: io.stderr }).toEqual({ code: 0, err: '' });
    expect(JSON.parse(io.stdout)).toMatchObject({ objects: 3, objectsRead: 2, unchanged: 1, written: 0, reported: [] });
    expect(await backfilledItem(account, D2)).toEqual(before);
    expect(await accountItems()).toEqual(countersBefore);
  });
  it('leaves alone a day counted with hours: its shards already cover it, so nothing is read or written', async () => {
    const D3 = '2026-05-14';
    const counted = await putLogSet({ days: [D3], hours: [1, 13], accounts: 2, lines: 40 });
    const response = await ingestBatch({ Records: counted.refs.map((ref) => s3NotificationMessage(ref)) }, testIngestDeps({ TALLY_TABLE: table }));
    expect(response.batchItemFailures).toEqual([]);
    const io = captureIo();

    const code = await tallyCommand('backfill')(['--hours', '--from', D3, '--to', D3, '--json'], io, operatorEnv(info, { prefix: counted.prefix }, { TALLY_TABLE: table }));

    expect({ code, err: io.stderr }).toEqual({ code: 0, err: '' });
    expect(JSON.parse(io.stdout)).toMatchObject({ objectsRead: 0, accountDays: 2, covered: 2, written: 0, unchanged: 0, reported: [] });
    for (const account of counted.accounts) expect(await backfilledItem(account, D3)).toBeUndefined();
  });
});
