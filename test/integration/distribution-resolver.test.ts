import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ingestBatch } from '../../src/app/ingest/ingest';
import { putLogObject, readCounters, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';

const info = testStackInfo();
const { dynamodb } = testClients(info);

/** A distribution id of this test run: `E` and upper-case letters and digits, as CloudFront's are. */
const distributionId = (tag: string) => `E3${tag}${uniqueId('').replace(/[^a-z0-9]/gi, '')}`.toUpperCase();

describe('the distribution resolver through the handler (S3 emulator, DynamoDB Local)', () => {
  it("attributes lines by their DistributionId, else by the key's distribution, once however often an object is delivered", async () => {
    const [acme, globex] = [uniqueId('acme'), uniqueId('globex')];
    const [acmeDist, globexDist] = [distributionId('A'), distributionId('G')];
    const mapFile = join(mkdtempSync(join(tmpdir(), 'tally-dist-')), 'distributions.json');
    writeFileSync(mapFile, JSON.stringify({ [acmeDist]: acme, [globexDist]: globex }));
    const deps = testIngestDeps({ TALLY_RESOLVER: `distribution:${mapFile}` });

    // v2 Hive partitions name the distribution; the lines do not.
    const hive = await putLogObject(
      `AWSLogs/123456789012/CloudFront/DistributionId=${acmeDist}/year=2026/month=11/day=21/hour=07/${uniqueId('part')}.log.gz`,
      '#Fields: date time sc-bytes cs(Host)\n2026-11-21\t07:00:01\t100\ta.example.com\n2026-11-21\t07:00:02\t200\tb.example.com\n',
    );
    // A Firehose object: the key names no distribution, every line does (one line not).
    const firehose = await putLogObject(
      `firehose/2026/11/21/07/cf-logs-1-2026-11-21-07-15-42-0f8fad5b-d9cb-469f-a165-${Date.now().toString(16).padStart(12, '0').slice(-12)}.gz`,
      `#Fields: timestamp DistributionId sc-bytes\n1795245121\t${acmeDist}\t10\n1795245122\t${globexDist}\t20\n1795245123\t-\t40\n`,
    );
    // A legacy name: the distribution is the file name's prefix.
    const legacy = await putLogObject(`cloudfront/${globexDist}.2026-11-21-07.${uniqueId('u')}.gz`, '#Fields: date time sc-bytes\n2026-11-21\t07:59:59\t1000\n');

    const first = await ingestBatch({ Records: [s3NotificationMessage([hive, firehose, legacy])] }, deps);
    const again = await ingestBatch({ Records: [s3NotificationMessage([hive, firehose, legacy])] }, deps);

    expect([first.batchItemFailures, again.batchItemFailures]).toEqual([[], []]);
    expect((await readCounters(dynamodb, info.table, acme, '2026-11-21'))['2026-11-21']).toMatchObject({ requests: 3, bytes: 310 });
    expect((await readCounters(dynamodb, info.table, globex, '2026-11-21'))['2026-11-21']).toMatchObject({ requests: 2, bytes: 1020 });
  });
});
