import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { jsonLog } from '../../src/app/log';
import { handleUsageApiRequest, type UsageApiDeps } from '../../src/app/reading/usage-api';
import { FIRST_DAY, LAST_DAY, queryDayRange } from '../../src/adapters/dynamodb/day-range-query';
import { DynamoAccountZones } from '../../src/adapters/dynamodb/dynamodb-account-zones';
import { DynamoUsageReader } from '../../src/adapters/dynamodb/dynamodb-usage-reader';
import { mintToken } from '../../src/adapters/http/jwt-tokens';
import { accountZoneKey, usageKey } from '../../src/domain/counters/keys';
import { createLocalUsageApiDeps } from '../../src/local/serving/local-usage-api';
import { localEnvironment } from '../../src/local/stack';
import { usageApiEvent } from '../support/api-events';
import { captureIo, tallyCommand } from '../support/cli';
import { failGetItems } from '../support/faults';
import { testClients, testStackInfo, uniqueId } from '../support/stack';
import { TEST_SECRET } from '../support/tokens';

/**
 * An account's billing zone through DynamoDB Local: `tally zone set|show|clear` write
 * and read the one item, and the read API names it in the usage report
 * (`accountTimeZone`) with one GetItem beside its day-range Query, which never meets it.
 */

const info = testStackInfo();
const { dynamodb } = testClients(info);
const NOW = () => new Date('2026-11-23T12:00:00Z');
const env = { ...localEnvironment(info), USER: 'ops-tester' };
const runZone = tallyCommand('zone');

const measured = uniqueId('zoned');
const other = uniqueId('other');
let deps: UsageApiDeps;
const logLines: string[] = [];

async function zone(argv: string[]) {
  const io = captureIo();
  const code = await runZone(argv, io, env, process.cwd(), NOW);
  return { code, stdout: io.stdout, stderr: io.stderr };
}

async function report(account: string, query: Record<string, string>, accounts = [account], replaced: Partial<UsageApiDeps> = {}) {
  logLines.length = 0;
  const token = await mintToken(TEST_SECRET, { accounts, ttlSeconds: 300, subject: 'integration' });
  const response = await handleUsageApiRequest(usageApiEvent({ accountId: account, query, token }), { ...deps, ...replaced });
  const entry = JSON.parse(logLines.find((line) => line.includes('"usage api request"'))!);
  return { status: response.statusCode, headers: response.headers ?? {}, body: JSON.parse(response.body!), entry };
}

async function storedItem(account: string) {
  const key = accountZoneKey(account);
  return (await dynamodb.send(new GetItemCommand({ TableName: info.table, Key: { PK: { S: key.PK }, SK: { S: key.SK } }, ConsistentRead: true }))).Item;
}

beforeAll(async () => {
  const key = usageKey({ accountId: measured, day: '2026-11-20', shard: 0 });
  await dynamodb.send(
    new PutItemCommand({ TableName: info.table, Item: { PK: { S: key.PK }, SK: { S: key.SK }, requests: { N: '30' }, bytes: { N: '300' }, updatedAt: { S: '2026-11-20T23:00:00.000Z' } } }),
  );
  deps = await createLocalUsageApiDeps(info, TEST_SECRET, jsonLog((line) => void logLines.push(line), 'info'));
});

describe('tally zone through DynamoDB Local', () => {
  it('sets, shows, replaces and clears an account zone; the report names it while it is set', async () => {
    const before = await report(measured, { from: '2026-11-19', to: '2026-11-21' });
    const set = await zone(['set', '--account', measured, '--zone', 'america/new_york']);
    const shown = await zone(['show', '--account', measured]);
    const shownJson = await zone(['show', '--account', measured, '--json']);
    const during = await report(measured, { from: '2026-11-19', to: '2026-11-21' });
    const zoned = await report(measured, { from: '2026-11-19', to: '2026-11-21', tz: 'America/New_York' });
    const replaced = await zone(['set', '--account', measured, '--zone', 'Europe/Berlin', '--actor', 'alice']);
    const afterReplace = await report(measured, { from: '2026-11-19', to: '2026-11-21' });
    const cleared = await zone(['clear', '--account', measured]);
    const after = await report(measured, { from: '2026-11-19', to: '2026-11-21' });
    const clearedAgain = await zone(['clear', '--account', measured]);
    const shownNone = await zone(['show', '--account', measured]);

    expect([set, shown, shownJson, replaced, cleared, clearedAgain, shownNone].map((r) => [r.code, r.stderr])).toEqual(Array(7).fill([0, '']));
    expect(set.stdout).toBe(`zone set: ${measured} America/New_York\n`);
    expect(shown.stdout).toBe(`${measured} America/New_York (set 2026-11-23T12:00:00.000Z by ops-tester)\n`);
    expect(JSON.parse(shownJson.stdout)).toEqual({ account: measured, zone: { account: measured, zone: 'America/New_York', updatedAt: '2026-11-23T12:00:00.000Z', updatedBy: 'ops-tester' } });
    expect(replaced.stdout).toBe(`zone set: ${measured} Europe/Berlin (was America/New_York)\n`);
    expect(cleared.stdout).toBe(`zone cleared: ${measured} (was Europe/Berlin)\n`);
    expect(clearedAgain.stdout).toBe(`${measured} has no zone: nothing removed\n`);
    expect(shownNone.stdout).toMatch(new RegExp(`^${measured} has no zone`));

    // Named while set, and nothing else changes: tz still defaults to UTC, the same UTC days and figures.
    expect('accountTimeZone' in before.body).toBe(false);
    expect(during.body.accountTimeZone).toBe('America/New_York');
    expect(during.body.timeZone).toBe('UTC');
    const { accountTimeZone: _named, ...rest } = during.body;
    expect(rest).toEqual(before.body);
    expect(during.body.days[1]).toMatchObject({ day: '2026-11-20', metrics: { requests: 30, bytes: 300 } });
    expect([zoned.body.timeZone, zoned.body.accountTimeZone]).toEqual(['America/New_York', 'America/New_York']);
    expect(afterReplace.body.accountTimeZone).toBe('Europe/Berlin');
    expect('accountTimeZone' in after.body).toBe(false);
    expect(after.body).toEqual(before.body);

    // Still the day range and the close records as Queries; the zone is one GetItem beside them.
    expect([during.entry.queryRequests, during.entry.zoneReads]).toEqual([2, 1]);
  });

  it('the zone item is outside every day range: a Query of all days never returns it, and it makes no account measured', async () => {
    const bare = uniqueId('bare');
    const set = await zone(['set', '--account', bare, '--zone', 'Asia/Tokyo', '--force']);
    const items = [];
    for await (const page of queryDayRange({ client: dynamodb, tableName: info.table, accountId: bare, from: FIRST_DAY, to: LAST_DAY, consistentRead: true })) items.push(...page);
    const reader = new DynamoUsageReader({ client: dynamodb, tableName: info.table, consistentRead: true });

    expect(set.code).toBe(0);
    expect((await storedItem(bare))?.zone).toEqual({ S: 'Asia/Tokyo' });
    expect(items).toEqual([]);
    expect(await reader.hasMeasuredUsage(bare)).toBe(false);
    expect((await report(bare, { from: '2026-11-20', to: '2026-11-20' })).body.accountTimeZone).toBe('Asia/Tokyo');
  });

  it('refuses an account never measured (exit 2) unless --force, and a sub-hour or unknown zone (exit 2), writing nothing', async () => {
    const unmeasured = await zone(['set', '--account', other, '--zone', 'Europe/Berlin']);
    const kolkata = await zone(['set', '--account', measured, '--zone', 'Asia/Kolkata']);
    const unknown = await zone(['set', '--account', measured, '--zone', 'Mars/Base']);
    const dryRun = await zone(['set', '--account', measured, '--zone', 'Asia/Tokyo', '--dry-run']);

    expect([unmeasured.code, kolkata.code, unknown.code, dryRun.code]).toEqual([2, 2, 2, 0]);
    expect(unmeasured.stderr).toMatch(new RegExp(`account "${other}" has no measured usage in ${info.table}: .* --force`));
    expect(kolkata.stderr).toMatch(/time zone Asia\/Kolkata is \+05:30 from UTC on \d{4}-\d{2}-\d{2}: Tally keeps usage by whole UTC hours/);
    expect(unknown.stderr).toMatch(/--zone: unknown time zone "Mars\/Base"/);
    expect(dryRun.stdout).toBe(`dry run: would set ${measured}'s zone to Asia/Tokyo in ${info.table}; nothing written\n`);
    expect([await storedItem(other), await storedItem(measured)]).toEqual([undefined, undefined]);
  });

  it("a tenant reads its own account's zone, never another's (404, as for usage)", async () => {
    const set = await zone(['set', '--account', measured, '--zone', 'Europe/Berlin']);
    const foreign = await report(measured, { from: '2026-11-20', to: '2026-11-20' }, [other]);
    const own = await report(measured, { from: '2026-11-20', to: '2026-11-20' });
    await zone(['clear', '--account', measured]);

    expect(set.code).toBe(0);
    expect([foreign.status, foreign.body.accountTimeZone]).toEqual([404, undefined]);
    expect([own.status, own.body.accountTimeZone]).toEqual([200, 'Europe/Berlin']);
  });

  it.each([
    ['throttled past the SDK retries', 'ProvisionedThroughputExceededException', 400],
    ['failing (500)', 'InternalServerError', 500],
  ] as const)('answers the usage without accountTimeZone, logging a warning, when the zone read is %s', async (_what, name, httpStatusCode) => {
    const set = await zone(['set', '--account', measured, '--zone', 'Europe/Berlin']);
    // A client of its own (the same DynamoDB Local), whose every GetItem fails: the Query still answers.
    const client = testClients(info).dynamodb;
    const failures = failGetItems(client, name, httpStatusCode);
    const healthy = await report(measured, { from: '2026-11-19', to: '2026-11-21' });
    const failing = await report(measured, { from: '2026-11-19', to: '2026-11-21' }, [measured], { zones: new DynamoAccountZones({ client, tableName: info.table }) });
    const warning = logLines.map((line) => JSON.parse(line) as Record<string, unknown>).find((entry) => entry.message === 'account zone unreadable');
    await zone(['clear', '--account', measured]);

    expect(set.code).toBe(0);
    expect(failures.fired).toBeGreaterThan(0);
    expect([healthy.status, healthy.body.accountTimeZone]).toEqual([200, 'Europe/Berlin']);
    expect(failing.status).toBe(200);
    expect(failing.body.accountTimeZone).toBeUndefined();
    // The usage is all there: only the zone's name is missing.
    expect(failing.body.totals).toEqual(healthy.body.totals);
    expect(failing.body.days).toEqual(healthy.body.days);
    expect(failing.headers['cache-control']).toBe('no-store');
    expect(failing.entry).toMatchObject({ status: 200, zoneRead: 'failed' });
    expect(warning).toMatchObject({ level: 'WARN', accountId: measured, error: expect.stringContaining(name) });
  });
});
