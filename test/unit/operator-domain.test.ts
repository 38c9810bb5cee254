import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveTarget } from '../../src/cli/operator-target';
import { pacer } from '../../src/app/progress';
import { adjustmentDifferences, validateAdjustment } from '../../src/domain/counters/adjustment';
import { parseCloudFrontKey } from '../../src/domain/logs/cloudfront-key';
import { ConfigError, ValidationError } from '../../src/domain/errors';
import { adjustmentIdKey, dayRangeKeys, parseAccountSortKey } from '../../src/domain/counters/keys';
import { reconcile, type ServedDay } from '../../src/domain/counters/reconciliation';

describe('CloudFront object names', () => {
  it('reads distribution, day, hour and id from a key under any prefix', () => {
    expect(parseCloudFrontKey('logs/cf/E2ABC.2026-11-21-07.a1b2c3.gz')).toEqual({ layout: 'name', distribution: 'E2ABC', day: '2026-11-21', hour: 7, uniqueId: 'a1b2c3' });
    expect(parseCloudFrontKey('E2ABC.2026-11-21-23.x')).toMatchObject({ day: '2026-11-21', hour: 23 });
  });

  it('refuses names that are not CloudFront logs or name no real hour', () => {
    expect(parseCloudFrontKey('logs/readme.txt')).toBeUndefined();
    expect(parseCloudFrontKey('E2ABC.2026-02-30-01.x.gz')).toBeUndefined();
    expect(parseCloudFrontKey('E2ABC.2026-11-21-24.x.gz')).toBeUndefined();
    expect(parseCloudFrontKey('E2ABC.2026-11-21-07.x.gz/')).toBeUndefined();
  });
});

describe('adjustments', () => {
  const valid = { account: 'acme', day: '2026-11-21', adjustmentId: 'INC-2041', metric: 'requests', delta: -1200, reason: ' load test ' };

  it('accepts a correction and trims its reason', () => {
    expect(validateAdjustment(valid)).toEqual({ ...valid, reason: 'load test' });
  });

  it.each([
    [{ delta: 0 }, /non-zero/],
    [{ delta: 1.5 }, /whole number/],
    [{ adjustmentId: 'a#b' }, /invalid id/],
    [{ metric: 'Requests' }, /not a metric name/],
    [{ day: '2026-13-01' }, /not a calendar day/],
    [{ reason: '  ' }, /reason is required/],
    [{ account: '../x' }, /invalid account id/],
  ])('refuses %o', (change, message) => {
    expect(() => validateAdjustment({ ...valid, ...change })).toThrow(ValidationError);
    expect(() => validateAdjustment({ ...valid, ...change })).toThrow(message);
  });

  it('names every field in which a reused id differs', () => {
    expect(adjustmentDifferences(valid, valid)).toEqual([]);
    expect(adjustmentDifferences(valid, { ...valid, delta: 5, day: '2026-11-22' })).toEqual(['day 2026-11-21 vs 2026-11-22', 'delta -1200 vs 5']);
  });

  it("keeps the id reservation outside every day range, so readers never see it", () => {
    const reservation = adjustmentIdKey({ accountId: 'acme', adjustmentId: 'INC-1' });
    const all = dayRangeKeys('acme', '0000-01-01', '9999-12-31');

    expect(reservation.PK).toBe(all.PK);
    expect(reservation.SK >= all.from && reservation.SK <= all.to).toBe(false);
    expect(parseAccountSortKey(reservation.SK)).toBeUndefined();
  });
});

describe('reconciliation', () => {
  const served = new Map<string, ServedDay>([
    ['acme|2026-11-21', { metrics: { requests: 10, bytes: 100 }, adjustments: { requests: -2, bytes: 0 } }],
    ['acme|2026-11-22', { metrics: { requests: 5, bytes: 50, extra: 3 }, adjustments: {} }],
  ]);

  it('reports drift per account-day and metric, keeping adjustments apart', () => {
    const result = reconcile({
      recounted: [
        { account: 'acme', day: '2026-11-21', metrics: { requests: 10, bytes: 100 } },
        { account: 'acme', day: '2026-11-22', metrics: { requests: 6, bytes: 50 } },
      ],
      served,
      metrics: ['requests', 'bytes'],
      from: '2026-11-21',
      to: '2026-11-22',
    });

    expect(result.rows.filter((row) => row.drift !== 0)).toEqual([
      { account: 'acme', day: '2026-11-22', metric: 'requests', logs: 6, served: 5, adjustments: 0, drift: -1 },
    ]);
    expect(result.rows.find((row) => row.day === '2026-11-21' && row.metric === 'requests')).toMatchObject({ adjustments: -2, drift: 0 });
    expect(result.unchecked).toEqual(['extra']);
  });

  it('compares only the requested days, though neighbouring days were recounted', () => {
    const result = reconcile({
      recounted: [{ account: 'acme', day: '2026-11-20', metrics: { requests: 99, bytes: 1 } }],
      served,
      metrics: ['requests', 'bytes'],
      from: '2026-11-21',
      to: '2026-11-21',
    });

    expect(result.rows.map((row) => row.day)).toEqual(['2026-11-21', '2026-11-21']);
    expect(result.rows.every((row) => row.drift === 10 || row.drift === 100)).toBe(true);
  });
});

describe('operator targets', () => {
  const cwd = mkdtempSync(join(tmpdir(), 'tally-target-'));
  mkdirSync(join(cwd, '.tally'));
  writeFileSync(
    join(cwd, '.tally', 'local.json'),
    JSON.stringify({
      region: 'us-east-1',
      endpoints: { dynamodb: 'http://127.0.0.1:1111', sqs: 'http://127.0.0.1:2222', s3: 'http://127.0.0.1:2222' },
      bucket: 'tally-logs',
      logPrefix: 'cloudfront/',
      queueUrl: 'http://127.0.0.1:2222/000000000000/tally-ingest',
      dlqUrl: 'http://127.0.0.1:2222/000000000000/tally-ingest-dlq',
      table: 'tally-usage',
    }),
  );

  it('uses the local stack when nothing names a target', () => {
    const target = resolveTarget({}, { AWS_REGION: 'eu-west-1' }, cwd);

    expect(target.config.tableName).toBe('tally-usage');
    expect(target.config.endpoints.dynamodb).toBe('http://127.0.0.1:1111');
    expect(target.dlqUrl).toMatch(/tally-ingest-dlq$/);
    expect(target).toMatchObject({ bucket: 'tally-logs', logPrefix: 'cloudfront/' });
    expect(target.credentials).toBeDefined();
    expect(target.origin).toMatch(/local stack/);
  });

  it('lets flags narrow the local stack (another prefix)', () => {
    expect(resolveTarget({ prefix: 'other/' }, {}, cwd).logPrefix).toBe('other/');
  });

  it('never mixes the local stack into a target the environment names', () => {
    const target = resolveTarget({}, { TALLY_TABLE: 'prod-usage', AWS_REGION: 'eu-west-1', TALLY_DLQ_URL: 'https://sqs.eu-west-1.amazonaws.com/1/dlq' }, cwd);

    expect(target.config).toMatchObject({ tableName: 'prod-usage', region: 'eu-west-1', endpoints: {} });
    expect(target.credentials).toBeUndefined();
    expect(resolveTarget({}, { TALLY_TABLE: 't-1', AWS_ACCESS_KEY_ID: 'AKIA1', AWS_SECRET_ACCESS_KEY: 's' }, cwd).credentials).toEqual({
      accessKeyId: 'AKIA1',
      secretAccessKey: 's',
    });
    expect(target.origin).toBe('flags and environment');
  });

  it('lets flags win over the environment and --endpoint point every client at one emulator', () => {
    const target = resolveTarget({ table: 'flag-table', endpoint: 'http://localhost:4566' }, { TALLY_TABLE: 'env-table' }, cwd);

    expect(target.config.tableName).toBe('flag-table');
    expect(target.config.endpoints).toEqual({ dynamodb: 'http://localhost:4566', sqs: 'http://localhost:4566', s3: 'http://localhost:4566' });
    expect(target.credentials).toBeDefined();
  });

  it('says how to name a target when there is none', () => {
    expect(() => resolveTarget({}, {}, tmpdir())).toThrow(ConfigError);
    expect(() => resolveTarget({}, {}, tmpdir())).toThrow(/npm start/);
  });
});

describe('pacing', () => {
  it('spaces starts to the rate across concurrent callers', async () => {
    const waits: number[] = [];
    const next = pacer(10, async (ms) => {
      waits.push(ms);
    });

    await Promise.all([next(), next(), next()]);

    expect(waits).toHaveLength(2);
    expect(waits[1]! - waits[0]!).toBeGreaterThanOrEqual(99);
  });
});
