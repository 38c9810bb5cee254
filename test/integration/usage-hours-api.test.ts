import { PutItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { jsonLog } from '../../src/app/log';
import { handleUsageApiRequest, type UsageApiDeps } from '../../src/app/reading/usage-api';
import { mintToken } from '../../src/adapters/http/jwt-tokens';
import { hourAttribute } from '../../src/domain/hours';
import { adjustmentItemKey, hoursBackfillKey, usageKey, type TableKey } from '../../src/domain/counters/keys';
import { createLocalUsageApiDeps } from '../../src/local/serving/local-usage-api';
import { usageApiEvent } from '../support/api-events';
import { testClients, testStackInfo, uniqueId } from '../support/stack';
import { TEST_SECRET } from '../support/tokens';

/**
 * The read API by the hour and in a zone, through DynamoDB Local and the real reader:
 * shard items carry hour attributes (`03R`, `03B`, `05authorization_requests`) as the
 * exactly-once write leaves them, written here directly; one day was counted before
 * hours (no hour attributes), one more has the hours `tally backfill --hours` wrote
 * (`DAY#<day>#H#00`). Each request is still one Query of the day range (and the small
 * one of the close records).
 */

const info = testStackInfo();
const { dynamodb } = testClients(info);
const METRICS = '[{"name":"authorization_requests","path":"/api/authorization/*"}]';
const account = uniqueId('hourly');
const ZERO = { requests: 0, bytes: 0, authorization_requests: 0 };

let deps: UsageApiDeps;
let logLines: string[];

const json = (response: APIGatewayProxyStructuredResultV2) => JSON.parse(response.body!);

/** Hour attributes for `{hour: {metric: amount}}`, named as on a shard. */
function hourItems(hours: Record<number, Record<string, number>>): Record<string, AttributeValue> {
  const items: Record<string, AttributeValue> = {};
  for (const [hour, metrics] of Object.entries(hours)) {
    for (const [metric, amount] of Object.entries(metrics)) items[hourAttribute(Number(hour), metric)] = { N: String(amount) };
  }
  return items;
}

async function put(key: TableKey, attributes: Record<string, AttributeValue>): Promise<void> {
  await dynamodb.send(new PutItemCommand({ TableName: info.table, Item: { PK: { S: key.PK }, SK: { S: key.SK }, ...attributes } }));
}

async function shard(day: string, shardNumber: number, totals: Record<string, number>, hours: Record<number, Record<string, number>>): Promise<void> {
  const figures = Object.fromEntries(Object.entries(totals).map(([name, amount]) => [name, { N: String(amount) }]));
  await put(usageKey({ accountId: account, day, shard: shardNumber }), { ...figures, ...hourItems(hours), updatedAt: { S: `${day}T23:00:00.000Z` } });
}

async function get(query: Record<string, string>) {
  logLines.length = 0;
  const token = await mintToken(TEST_SECRET, { accounts: [account], ttlSeconds: 300, subject: 'integration' });
  const response = await handleUsageApiRequest(usageApiEvent({ accountId: account, query, token }), deps);
  const entry = JSON.parse(logLines.find((line) => line.includes('"usage api request"'))!);
  return { response, entry };
}

beforeAll(async () => {
  // 2026-11-01: counted with hours, over two shards; an adjustment of -2 requests.
  await shard('2026-11-01', 0, { requests: 10, bytes: 1000, authorization_requests: 2 }, {
    3: { requests: 4, bytes: 400 },
    5: { requests: 6, bytes: 600, authorization_requests: 2 },
  });
  await shard('2026-11-01', 1, { requests: 5, bytes: 50 }, { 23: { requests: 5, bytes: 50 } });
  const adjustment = adjustmentItemKey({ accountId: account, day: '2026-11-01', adjustmentId: 'INC-7' });
  await put(adjustment, { metric: { S: 'requests' }, delta: { N: '-2' }, reason: { S: 'test' }, createdAt: { S: '2026-11-05T10:00:00.000Z' } });
  // 2026-11-02: counted before hours existed.
  await shard('2026-11-02', 0, { requests: 7, bytes: 70 }, {});
  // 2026-11-03: partly before hours; tally backfill --hours recomputed the whole day.
  await shard('2026-11-03', 0, { requests: 9, bytes: 90 }, { 1: { requests: 1, bytes: 10 } });
  await put(hoursBackfillKey({ accountId: account, day: '2026-11-03' }), {
    ...hourItems({ 1: { requests: 1, bytes: 10 }, 2: { requests: 8, bytes: 80 } }),
    objects: { N: '3' },
    computedAt: { S: '2026-11-20T00:00:00.000Z' },
  });
  logLines = [];
  deps = await createLocalUsageApiDeps(info, TEST_SECRET, jsonLog((line) => void logLines.push(line), 'info'), { TALLY_METRICS: METRICS });
});

describe('usage API by the hour, against DynamoDB Local', () => {
  it('answers UTC hours from the shards or the backfilled hours, null where counted before hours, in one Query', async () => {
    const { response, entry } = await get({ from: '2026-11-01', to: '2026-11-03', granularity: 'hour' });

    expect(response.statusCode).toBe(200);
    const report = json(response);
    expect([report.granularity, report.timeZone, report.hours.length]).toEqual(['hour', 'UTC', 72]);
    expect(report.hours[0]).toEqual({ start: '2026-11-01T00:00:00+00:00', metrics: ZERO, adjustments: { ...ZERO, requests: -2 }, totals: { ...ZERO, requests: -2 } });
    expect(report.hours[3].metrics).toEqual({ requests: 4, bytes: 400, authorization_requests: 0 });
    expect(report.hours[5].metrics).toEqual({ requests: 6, bytes: 600, authorization_requests: 2 });
    expect(report.hours[23].metrics).toEqual({ requests: 5, bytes: 50, authorization_requests: 0 });
    // The day counted before hours: its figures, hours: null and why; its hour rows null, never zeros.
    expect(report.days[1]).toMatchObject({ day: '2026-11-02', metrics: { requests: 7, bytes: 70, authorization_requests: 0 }, hours: null });
    expect(report.days[1].hoursReason).toContain('tally backfill --hours --from 2026-11-02 --to 2026-11-02');
    expect(report.hours.slice(24, 48).every((hour: { metrics: unknown; totals: unknown }) => hour.metrics === null && hour.totals === null)).toBe(true);
    // The backfilled day.
    expect(report.days[2]).not.toHaveProperty('hours');
    expect([report.hours[49].metrics.requests, report.hours[50].metrics.requests]).toEqual([1, 8]);
    // Hours sum to the days they are known for.
    for (const index of [0, 2]) {
      const hours = report.hours.slice(index * 24, index * 24 + 24);
      for (const metric of Object.keys(ZERO)) {
        expect(hours.reduce((sum: number, hour: { totals: Record<string, number> }) => sum + hour.totals[metric]!, 0)).toBe(report.days[index].totals[metric]);
      }
    }
    expect(entry.queryRequests).toBe(2); // the day range and the close records, as without hours
  });

  it("answers New York's days as sums of UTC hours, reading one more UTC day at each end in the same Query", async () => {
    const { response, entry } = await get({ from: '2026-10-31', to: '2026-11-01', tz: 'America/New_York' });

    expect(response.statusCode).toBe(200);
    const report = json(response);
    expect([report.timeZone, report.from, report.to]).toEqual(['America/New_York', '2026-10-31', '2026-11-01']);
    // New York's 10-31 ends at 04:00 UTC on 11-01: hour 03 (4 requests) and the 00:00 UTC adjustment fall in it.
    expect(report.days[0]).toMatchObject({ day: '2026-10-31', metrics: { requests: 4, bytes: 400, authorization_requests: 0 }, totals: { requests: 2, bytes: 400, authorization_requests: 0 } });
    // Its 11-01 (25 hours) reaches 05:00 UTC on 11-02, a day counted before hours: unknown, never zeros.
    expect(report.days[1]).toMatchObject({ day: '2026-11-01', metrics: null, totals: null, hours: null });
    expect(report.totals).toBeNull();
    expect(report.adjustments.map((a: { id: string }) => a.id)).toEqual(['INC-7']);
    expect(entry.queryRequests).toBe(2);
  });

  it('writes the hours as CSV, unknown figures as empty cells with the reason', async () => {
    const { response } = await get({ from: '2026-11-02', to: '2026-11-03', granularity: 'hour', tz: 'Europe/Berlin', format: 'csv' });

    expect(response.statusCode).toBe(200);
    expect(response.headers!['content-disposition']).toBe(`attachment; filename="tally-${account}-2026-11-02-2026-11-03-hour-Europe-Berlin.csv"`);
    const lines = response.body!.split('\r\n');
    expect(lines[0]).toBe(
      'account,start,requests,bytes,authorization_requests,requests_adjustment,bytes_adjustment,authorization_requests_adjustment,requests_total,bytes_total,authorization_requests_total,hours_reason',
    );
    // Berlin's 11-02 begins at 23:00 UTC on 11-01 (known), then the unknown UTC 11-02.
    expect(lines[1]).toBe(`${account},2026-11-02T00:00:00+01:00,5,50,0,0,0,0,5,50,0,`);
    expect(lines[2]).toMatch(new RegExp(`^${account},2026-11-02T01:00:00\\+01:00,,,,,,,,,,2026-11-02 \\(UTC\\): counted`));
    // Berlin's 11-03 03:00 is 02:00 UTC: 8 requests, from the backfilled hours.
    expect(lines.find((line) => line.includes('2026-11-03T03:00:00+01:00'))).toBe(`${account},2026-11-03T03:00:00+01:00,8,80,0,0,0,0,8,80,0,`);
  });

  it('refuses a zone without whole-hour offsets before reading anything', async () => {
    const { response, entry } = await get({ from: '2026-11-01', to: '2026-11-01', tz: 'Asia/Kathmandu' });

    expect(response.statusCode).toBe(400);
    expect(json(response).message).toContain('time zone Asia/Kathmandu is +05:45 from UTC on 2026-11-01');
    expect(entry.queryRequests).toBeUndefined();
  });
});
