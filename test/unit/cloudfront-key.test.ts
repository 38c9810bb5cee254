import { parseCloudFrontKey } from '../../src/domain/logs/cloudfront-key';

const UUID = '0f8fad5b-d9cb-469f-a165-70867728950e';

describe('CloudFront log keys of every layout', () => {
  it.each([
    ['legacy name under a prefix', 'cloudfront/E2ABC.2026-11-21-07.a1b2c3.gz', { layout: 'name', distribution: 'E2ABC', day: '2026-11-21', hour: 7, uniqueId: 'a1b2c3' }],
    ['v2 legacy-style name of a Parquet file', 'AWSLogs/123456789012/CloudFront/E2ABC.2026-11-21-07.a1b2c3.parquet', { layout: 'name', distribution: 'E2ABC', day: '2026-11-21', hour: 7 }],
    ['v2 legacy-style name with two extensions', 'AWSLogs/123456789012/CloudFront/E2ABC.2026-11-21-07.a1b2c3.log.gz', { layout: 'name', day: '2026-11-21', hour: 7 }],
    [
      'v2 {DistributionId}/{yyyy}/{MM}/{dd}/{HH} partitions, any file name',
      'AWSLogs/123456789012/CloudFront/E3ACME01/2025/02/16/10/part-0001.json.gz',
      { layout: 'partitioned', distribution: 'E3ACME01', day: '2025-02-16', hour: 10 },
    ],
    [
      'v2 partitions with the distribution after the hour',
      'logs/2025/02/16/10/E3ACME01/f.parquet',
      { layout: 'partitioned', distribution: 'E3ACME01', day: '2025-02-16', hour: 10 },
    ],
    ['v2 day partitions without an hour', 'logs/2025/02/16/f.parquet', { layout: 'partitioned', day: '2025-02-16' }],
    [
      'v2 partitions and a legacy-style name',
      'AWSLogs/123456789012/CloudFront/E3ACME01/2025/02/16/10/E3ACME01.2025-02-16-10.abc123.gz',
      { layout: 'partitioned', distribution: 'E3ACME01', day: '2025-02-16', hour: 10, uniqueId: 'abc123' },
    ],
    [
      'v2 Hive-compatible partitions',
      'AWSLogs/123456789012/CloudFront/DistributionId=E3ACME01/year=2025/month=02/day=16/hour=10/f.log.gz',
      { layout: 'hive', distribution: 'E3ACME01', day: '2025-02-16', hour: 10 },
    ],
    [
      'v2 Hive distribution only, day from the name',
      'cf/DistributionId=E3ACME01/E3ACME01.2025-02-16-23.abc123.parquet',
      { layout: 'hive', distribution: 'E3ACME01', day: '2025-02-16', hour: 23 },
    ],
    ['Firehose name under its default YYYY/MM/DD/HH prefix', `cf/2026/11/21/07/cf-std-logs-1-2026-11-21-07-15-42-${UUID}.gz`, { layout: 'firehose', day: '2026-11-21', hour: 7, uniqueId: UUID }],
    ['uncompressed Firehose name with hyphens in the stream name', `realtime/cdn-rt-logs-to-s3-12-2026-11-21-23-59-59-${UUID}`, { layout: 'firehose', day: '2026-11-21', hour: 23 }],
    ['Firehose name under Hive partitions', `rt/DistributionId=E3ACME01/rt-1-2026-11-21-07-00-01-${UUID}.parquet`, { layout: 'firehose', distribution: 'E3ACME01', day: '2026-11-21' }],
  ])('reads a %s', (_layout, key, expected) => {
    expect(parseCloudFrontKey(key)).toMatchObject(expected);
  });

  it.each([
    ['a hyphen', 'logs-E2ABC.2026-11-21-07.a1b2c3.gz'],
    ['a lower-case word', 'cloudfrontE2ABC.2026-11-21-07.a1b2c3.gz'],
    ['a folder and a word', 'cf/site-a_E2ABC.2026-11-21-07.a1b2c3.gz'],
  ])('reads the distribution of a legacy name whose log prefix ends without a slash (%s), as CloudFront writes the prefix verbatim', (_how, key) => {
    // tryout: 'logs-E2ABC' was taken for the distribution, so the distribution resolver attributed none of its lines.
    expect(parseCloudFrontKey(key)).toMatchObject({ layout: 'name', distribution: 'E2ABC', day: '2026-11-21', hour: 7, uniqueId: 'a1b2c3' });
  });

  it('keeps a name whose text before the date is no distribution id after a prefix as it is', () => {
    expect(parseCloudFrontKey('cf/my-site.2026-11-21-07.a1b2c3.gz')).toMatchObject({ distribution: 'my-site' });
    expect(parseCloudFrontKey('cf/LOGSE2ABC.2026-11-21-07.a1b2c3.gz')).toMatchObject({ distribution: 'LOGSE2ABC' });
  });

  it('prefers the hour in the file name to the partition folders', () => {
    expect(parseCloudFrontKey(`2026/11/21/06/s-1-2026-11-21-07-00-00-${UUID}.gz`)).toMatchObject({ day: '2026-11-21', hour: 7 });
  });

  it.each([
    ['a key that names no day', 'AWSLogs/123456789012/CloudFront/E3ACME01/f.parquet'],
    ['a folder marker', 'logs/2025/02/16/10/'],
    ['an impossible partition day', 'logs/2025/02/30/10/f.gz'],
    ['an impossible Hive hour', 'DistributionId=E3ACME01/year=2025/month=02/day=16/hour=24/f.gz'],
    ['an impossible Firehose hour', `s-1-2026-11-21-24-00-00-${UUID}.gz`],
    ["Tally's own revision exports", 'exports/day=2026-11-21/revision=3/usage.parquet'],
  ])('names no day for %s', (_what, key) => {
    expect(parseCloudFrontKey(key)).toBeUndefined();
  });
});
