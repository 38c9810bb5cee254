import type { SQSEvent } from 'aws-lambda';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { generateLog, type ExpectedCount } from '../../src/local/demo/log-generator';
import { crashAfterUpdates, loseUpdateResponses, throttleUpdates } from '../support/faults';
import { nonZero, putLogObject, readCounters, readHourCounters, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';

const info = testStackInfo();
const { dynamodb } = testClients(info);

/** A log object for fresh accounts over two days, and what it must count to. */
async function freshObject(lines = 200) {
  const accounts = [uniqueId('a'), uniqueId('b'), uniqueId('c')];
  const log = generateLog({
    seed: lines,
    day: '2026-11-21',
    hour: 0,
    distribution: 'E2TEST',
    accounts: accounts.map((id, i) => ({ id, weight: i + 1 })),
    lines,
    previousDayRate: 0.3,
    malformedRate: 0.02,
  });
  const ref = await putLogObject(`cloudfront/${uniqueId('E2TEST')}.2026-11-21-00.x.gz`, log.text);
  return { ref, accounts, expected: log.expected };
}

/** Every account-day counter, and each of its UTC hours, equals the generator's own count. */
async function expectExactCounts(accounts: string[], expected: ExpectedCount) {
  for (const account of accounts) {
    const counters = await readCounters(dynamodb, info.table, account, '2026-11-20', '2026-11-21');
    const hours = await readHourCounters(dynamodb, info.table, account, '2026-11-20', '2026-11-21');
    for (const day of ['2026-11-20', '2026-11-21']) {
      const want = expected.usage.get(`${account}|${day}`);
      const got = counters[day];
      expect({ account, day, ...nonZero(got) }).toEqual({ account, day, ...nonZero(want) });
      const byHour = (sums: Readonly<Record<number, Record<string, number>>> | undefined) =>
        Object.fromEntries(Array.from({ length: 24 }, (_, hour) => [hour, nonZero(sums?.[hour])]).filter(([, metrics]) => Object.keys(metrics as object).length > 0));
      expect({ account, day, hours: byHour(hours[day]) }).toEqual({ account, day, hours: byHour(expected.hours?.get(`${account}|${day}`)) });
    }
  }
}

const batch = (...records: SQSEvent['Records']): SQSEvent => ({ Records: records });

describe('exactly-once ingestion against DynamoDB Local and the S3 emulator', () => {
  it('counts an object delivered twice once', async () => {
    const { ref, accounts, expected } = await freshObject();
    const deps = testIngestDeps();

    const first = await ingestBatch(batch(s3NotificationMessage(ref)), deps);
    const second = await ingestBatch(batch(s3NotificationMessage(ref, { receiveCount: 2 })), deps);

    expect(first.batchItemFailures).toEqual([]);
    expect(second.results[0]?.objects[0]?.status).toBe('already-done');
    await expectExactCounts(accounts, expected);
  });

  it('counts an object delivered five times, three of them in one batch, once', async () => {
    const { ref, accounts, expected } = await freshObject(150);
    const deps = testIngestDeps({ TALLY_MESSAGE_CONCURRENCY: '4' });

    const together = await ingestBatch(batch(s3NotificationMessage(ref), s3NotificationMessage(ref), s3NotificationMessage(ref)), deps);
    await ingestBatch(batch(s3NotificationMessage(ref)), deps);
    await ingestBatch(batch(s3NotificationMessage(ref)), deps);

    const applied = together.results.flatMap((r) => r.objects).reduce((sum, o) => sum + o.applied, 0);
    expect(applied).toBe(expected.usage.size);
    await expectExactCounts(accounts, expected);
  });

  it('counts an object delivered to two consumers at the same moment once', async () => {
    const { ref, accounts, expected } = await freshObject(300);
    const consumerA = testIngestDeps();
    const consumerB = testIngestDeps();

    const [a, b] = await Promise.all([
      ingestBatch(batch(s3NotificationMessage(ref)), consumerA),
      ingestBatch(batch(s3NotificationMessage(ref)), consumerB),
    ]);

    const applied = [a, b].flatMap((r) => r.results).flatMap((r) => r.objects).reduce((sum, o) => sum + o.applied, 0);
    expect(applied).toBe(expected.usage.size);
    await expectExactCounts(accounts, expected);
  });

  it('retries a write whose response was lost after DynamoDB applied it, and counts it once', async () => {
    const { ref, accounts, expected } = await freshObject();
    let lost = { fired: 0 };
    const deps = testIngestDeps({}, { clients: (clients) => (lost = loseUpdateResponses(clients.dynamodb, 3)) });

    const response = await ingestBatch(batch(s3NotificationMessage(ref)), deps);

    expect(lost.fired).toBe(3);
    expect(response.batchItemFailures).toEqual([]);
    expect(response.results[0]?.objects[0]?.duplicates).toBe(3);
    await expectExactCounts(accounts, expected);
  });

  it('rides out throttling with backoff and counts once', async () => {
    const { ref, accounts, expected } = await freshObject();
    let throttled = { fired: 0 };
    const deps = testIngestDeps({}, { clients: (clients) => (throttled = throttleUpdates(clients.dynamodb, 4)) });

    const response = await ingestBatch(batch(s3NotificationMessage(ref)), deps);

    expect(throttled.fired).toBe(4);
    expect(response.batchItemFailures).toEqual([]);
    await expectExactCounts(accounts, expected);
  });

  it('fails the message back when throttling outlasts the retry budget; the redelivery completes it exactly', async () => {
    const { ref, accounts, expected } = await freshObject();
    const starved = testIngestDeps({ TALLY_MAX_ATTEMPTS: '2', TALLY_INCREMENT_CONCURRENCY: '1' }, {
      clients: (clients) => throttleUpdates(clients.dynamodb, Number.MAX_SAFE_INTEGER),
    });

    const failed = await ingestBatch(batch(s3NotificationMessage(ref, { messageId: 'starved' })), starved);
    const redelivered = await ingestBatch(batch(s3NotificationMessage(ref, { receiveCount: 2 })), testIngestDeps());

    expect(failed.batchItemFailures).toEqual([{ itemIdentifier: 'starved' }]);
    expect(failed.results[0]?.error?.name).toBe('ProvisionedThroughputExceededException');
    expect(redelivered.batchItemFailures).toEqual([]);
    await expectExactCounts(accounts, expected);
  });

  it.each([1, 3])('recovers a consumer that died after %i increments: the redelivery counts everything exactly once', async (k) => {
    const { ref, accounts, expected } = await freshObject();
    const n = expected.usage.size;
    const dying = testIngestDeps({ TALLY_INCREMENT_CONCURRENCY: '1' }, { clients: (clients) => crashAfterUpdates(clients.dynamodb, k) });

    const crashed = await ingestBatch(batch(s3NotificationMessage(ref, { messageId: 'crashed' })), dying);
    const redelivered = await ingestBatch(batch(s3NotificationMessage(ref, { receiveCount: 2 })), testIngestDeps());

    expect(n).toBeGreaterThan(k);
    expect(crashed.batchItemFailures).toEqual([{ itemIdentifier: 'crashed' }]);
    expect(redelivered.results[0]?.objects[0]).toMatchObject({ status: 'counted', increments: n, applied: n - k, duplicates: 0, resumed: k });
    await expectExactCounts(accounts, expected);
  });
});
