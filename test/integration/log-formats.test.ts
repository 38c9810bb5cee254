import type { SQSEvent } from 'aws-lambda';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { silentLog } from '../../src/app/log';
import { handleUsageApiRequest } from '../../src/app/reading/usage-api';
import { mintToken } from '../../src/adapters/http/jwt-tokens';
import { createLocalUsageApiDeps } from '../../src/local/serving/local-usage-api';
import { usageApiEvent } from '../support/api-events';
import { TEST_SECRET } from '../support/tokens';
import { expectedUsage, firehoseKey, gzip, jsonLog, legacyLog, PLAIN_FIELDS, plainLog, REALTIME_FIELDS_SETTING, realtimeLog, traffic, w3cLog, type Request } from '../support/log-formats';
import { parquetFromJsonLines } from '../support/parquet-logs';
import { nonZero, putLogObject, readCounters, s3NotificationMessage, testIngestDeps, testClients, testStackInfo, uniqueId } from '../support/stack';

const info = testStackInfo();
const { dynamodb } = testClients(info);
const batch = (...records: SQSEvent['Records']): SQSEvent => ({ Records: records });

interface Case {
  readonly name: string;
  readonly key: (distribution: string) => string;
  readonly body: (requests: readonly Request[]) => Buffer | Promise<Buffer>;
  readonly env?: Record<string, string>;
}

/** Every output a CloudFront user may have in S3, under the key names AWS gives them. */
const CASES: readonly Case[] = [
  { name: 'legacy standard log', key: (d) => `cloudfront/${d}.2026-11-20-22.a1b2c3d4.gz`, body: (r) => gzip(legacyLog(r)) },
  { name: 'v2 w3c (timestamp(ms) only), plain partitions', key: (d) => `AWSLogs/123456789012/CloudFront/${d}/2026/11/20/22/${d}.2026-11-20-22.e5f6.gz`, body: (r) => gzip(w3cLog(r)) },
  { name: 'v2 JSON, Hive partitions', key: (d) => `AWSLogs/123456789012/CloudFront/DistributionId=${d}/year=2026/month=11/day=20/hour=22/${d}.2026-11-20-22.9a8b.gz`, body: (r) => gzip(jsonLog(r)) },
  { name: 'v2 plain with a | delimiter, not gzipped', key: (d) => `AWSLogs/123456789012/CloudFront/${d}.2026-11-20-22.7c6d.log`, body: (r) => Buffer.from(plainLog(r, '|')), env: { TALLY_LOG_FIELDS: PLAIN_FIELDS, TALLY_LOG_DELIMITER: '|' } },
  { name: 'v2 Parquet (written by DuckDB), Hive partitions', key: (d) => `AWSLogs/123456789012/CloudFront/DistributionId=${d}/year=2026/month=11/day=20/hour=22/${d}.2026-11-20-22.3e4f.parquet`, body: (r) => parquetFromJsonLines(jsonLog(r)) },
  { name: 'Firehose delivery of v2 JSON', key: () => firehoseKey('firehose/', new Date(Date.UTC(2026, 10, 20, 22, 5, 0))), body: (r) => gzip(jsonLog(r)) },
  { name: 'real-time log records via Firehose', key: () => firehoseKey('realtime/', new Date(Date.UTC(2026, 10, 20, 22, 6, 0)), 'tally-rt'), body: (r) => gzip(realtimeLog(r)), env: { TALLY_LOG_FIELDS: REALTIME_FIELDS_SETTING } },
];

/** The counters of `accounts` over the traffic's two days, with each account's place in the list as its name. */
async function countersOf(accounts: readonly string[]) {
  const result: Record<string, Record<string, Record<string, number>>> = {};
  for (const [i, account] of accounts.entries()) {
    const days = await readCounters(dynamodb, info.table, account, '2026-11-20', '2026-11-21');
    result[`account${i}`] = Object.fromEntries(Object.entries(days).map(([day, metrics]) => [day, nonZero(metrics)]));
  }
  return result;
}

describe('every CloudFront log format through S3, the ingest handler and DynamoDB Local', () => {
  it('counts the same traffic the same whichever format and key layout carries it, once however often it is delivered', async () => {
    let reference: unknown;
    for (const format of CASES) {
      const accounts = [uniqueId('fa'), uniqueId('fb'), uniqueId('fc')];
      const requests = traffic(400, accounts, 11);
      const expected = expectedUsage(requests);
      const distribution = uniqueId('E3').toUpperCase().replace(/[^A-Z0-9]/g, '');
      const ref = await putLogObject(format.key(distribution), await format.body(requests));
      const deps = testIngestDeps({ TALLY_METRICS: '[]', ...format.env });

      const first = await ingestBatch(batch(s3NotificationMessage(ref)), deps);
      const again = await ingestBatch(batch(s3NotificationMessage(ref, { receiveCount: 2 }), s3NotificationMessage(ref)), deps);

      expect(first.batchItemFailures).toEqual([]);
      expect(again.batchItemFailures).toEqual([]);
      expect(first.results[0]?.objects[0]).toMatchObject({ status: 'counted', lines: { read: 400, malformed: 0 } });
      const got = await countersOf(accounts);
      // A recount done another way: the traffic summed per host label and UTC day.
      const want = Object.fromEntries(accounts.map((account, i) => [`account${i}`, Object.fromEntries(Object.entries(expected[account] ?? {}).map(([day, m]) => [day, { ...m }]))]));
      expect({ format: format.name, counters: got }).toEqual({ format: format.name, counters: want });
      reference ??= got;
      expect(got).toEqual(reference);
    }
  });

  it('refuses a headerless object when no field list is configured: poison, named, nothing applied', async () => {
    const account = uniqueId('nohdr');
    const ref = await putLogObject(firehoseKey('realtime/', new Date(Date.UTC(2026, 10, 20, 23, 0, 0))), gzip(realtimeLog(traffic(5, [account]))));
    const deps = testIngestDeps();

    const result = await ingestBatch(batch(s3NotificationMessage(ref, { receiveCount: 5 })), deps);

    expect(result.results[0]?.outcome).toBe('failed');
    expect(result.results[0]?.error?.message).toMatch(/not a CloudFront log: 5 data lines and no #Fields header .*TALLY_LOG_FIELDS/);
    expect(await countersOf([account])).toEqual({ account0: {} });
  });

  it('keeps counts of sampled real-time logs apart as estimates, which the API names as such', async () => {
    const account = uniqueId('sampled');
    const requests = traffic(200, [account], 5);
    const exact = expectedUsage(requests)[account]!;
    const env = { TALLY_METRICS: '[]', TALLY_LOG_FIELDS: REALTIME_FIELDS_SETTING, TALLY_SAMPLING_RATE: '25' };
    const ref = await putLogObject(firehoseKey('realtime/', new Date(Date.UTC(2026, 10, 20, 22, 7, 0)), 'tally-rt-sampled'), gzip(realtimeLog(requests)));

    const result = await ingestBatch(batch(s3NotificationMessage(ref)), testIngestDeps(env));
    const api = await createLocalUsageApiDeps(info, TEST_SECRET, silentLog, env);
    const token = await mintToken(TEST_SECRET, { accounts: [account], ttlSeconds: 300, subject: 'formats' });
    const response = await handleUsageApiRequest(usageApiEvent({ accountId: account, token, query: { from: '2026-11-20', to: '2026-11-21' } }), api);
    const report = JSON.parse(response.body!);

    expect(result.batchItemFailures).toEqual([]);
    expect(response.statusCode).toBe(200);
    expect(report.estimatedMetrics).toEqual(['estimated_bytes', 'estimated_requests']);
    for (const day of report.days) {
      expect(day.metrics).toEqual({ requests: 0, bytes: 0, estimated_requests: exact[day.day]!.requests * 4, estimated_bytes: exact[day.day]!.bytes * 4 });
    }
  });
});
