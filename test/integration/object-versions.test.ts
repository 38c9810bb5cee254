import type { SQSEvent } from 'aws-lambda';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { PoisonObjectError } from '../../src/domain/errors';
import { nonZero, putLogObject, readCounters, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';

const info = testStackInfo();
const { dynamodb } = testClients(info);
const batch = (...records: SQSEvent['Records']): SQSEvent => ({ Records: records });
const log = (account: string, lines: number) =>
  `#Fields: date time sc-bytes x-host-header\n${`2026-11-21\t00:00:01\t10\t${account}.x.com\n`.repeat(lines)}`;

describe('one S3 key written twice', () => {
  it('counts each version from its own notification: a notification whose version was replaced is refused, never counted as the new one', async () => {
    const account = uniqueId('versions');
    const key = `cloudfront/${uniqueId('E2V')}.2026-11-21-00.same.gz`;
    const first = await putLogObject(key, log(account, 2));
    const second = await putLogObject(key, log(account, 5));
    const deps = testIngestDeps({ TALLY_METRICS: '[]' });

    // S3 announced both versions; the first one's notification comes after the overwrite.
    const stale = await ingestBatch(batch(s3NotificationMessage(first)), deps);
    const current = await ingestBatch(batch(s3NotificationMessage(second)), deps);

    expect(first.etag).not.toBe(second.etag);
    expect(stale.results[0]?.error).toBeInstanceOf(PoisonObjectError);
    expect(stale.results[0]?.error?.message).toContain(`replaced before it was read: S3 no longer holds the version announced (ETag ${first.etag})`);
    expect(current.results[0]?.objects[0]).toMatchObject({ status: 'counted', lines: { read: 5 } });
    expect(nonZero((await readCounters(dynamodb, info.table, account, '2026-11-21'))['2026-11-21'])).toEqual({ requests: 5, bytes: 50 });
  });
});
