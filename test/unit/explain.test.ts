import fc from 'fast-check';
import { contributionDays, contributionRowPrefix, decodeContributions, encodeContributions, type Contribution } from '../../src/domain/counters/contributions';
import { describeExplanation } from '../../src/cli/commands/reading/explain';
import { buildExplanation, explanationCsv, hourFigures, type ExplainedSource } from '../../src/domain/reading/explanation';
import type { HourSums } from '../../src/domain/hours';
import { readHealth } from '../../src/app/reading/health';
import { ValidationError } from '../../src/domain/errors';
import { buildHealthReport } from '../../src/domain/reading/health';
import { attemptKey, ledgerDayKey, ledgerKey, sourceDayPartition } from '../../src/domain/counters/keys';
import type { UsageRecord } from '../../src/domain/reading/usage-records';

const account = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,11}$/);
const day = fc.constantFrom('2026-11-20', '2026-11-21', '2026-11-22');
const metrics = fc.record({ requests: fc.nat(10_000), bytes: fc.nat(1e9), authorization_requests: fc.nat(100) });
const rows = fc.uniqueArray(fc.record({ account, day, metrics }), { selector: (row) => `${row.day}|${row.account}`, maxLength: 20 });

describe('the keys of contributions', () => {
  const ref = { bucket: 'logs', key: 'cf/E2A.2026-11-21-00.x.gz', etag: 'abc' };

  it("sort an object's other days after #DONE and before every attempt: the ledger's one-item read still meets #DONE first", () => {
    const done = ledgerKey(ref);
    const day = ledgerDayKey(ref, '2026-11-20');
    const attempt = attemptKey(ref, '2026-11-21T00:00:00.000Z-x', 0);

    expect(day.PK).toBe(done.PK);
    expect([attempt.SK, day.SK, done.SK].sort()).toEqual([done.SK, day.SK, attempt.SK]);
  });

  it('spread one day over four index partitions, the same object always in the same one', () => {
    const partitions = new Set(Array.from({ length: 64 }, (_, i) => sourceDayPartition({ ...ref, key: `k${i}` }, '2026-11-21', 4)));
    expect([...partitions].sort()).toEqual(['2026-11-21#0', '2026-11-21#1', '2026-11-21#2', '2026-11-21#3']);
    expect(sourceDayPartition(ref, '2026-11-21', 4)).toBe(sourceDayPartition(ref, '2026-11-21', 4));
  });
});

describe('contributions, as the ledger stores them', () => {
  it('decode what they encode, row for row', () => {
    fc.assert(
      fc.property(rows, (written) => {
        expect(decodeContributions(encodeContributions(written))).toEqual(written);
      }),
    );
  });

  it("find one account-day's row by its prefix, and only that row", () => {
    fc.assert(
      fc.property(rows, account, day, (written, who, when) => {
        const encoded = encodeContributions(written);
        const wanted = written.filter((row) => row.account === who && row.day === when);

        expect(encoded.rows.includes(contributionRowPrefix(when, who))).toBe(wanted.length > 0);
        expect(decodeContributions(encoded, { day: when, account: who })).toEqual(wanted);
      }),
    );
  });

  it('index an object under the day with most rows, the earliest of a tie, then the others', () => {
    const row = (d: string, a: string): Contribution => ({ account: a, day: d, metrics: { requests: 1 } });
    expect(contributionDays([row('2026-11-21', 'a'), row('2026-11-20', 'a'), row('2026-11-21', 'b')])).toEqual(['2026-11-21', '2026-11-20']);
    expect(contributionDays([row('2026-11-21', 'a'), row('2026-11-20', 'b')])).toEqual(['2026-11-20', '2026-11-21']);
    expect(contributionDays([])).toEqual([]);
  });
});

const DAY = '2026-11-21';
const source = (key: string, requests: number, bytes: number, extra: Partial<ExplainedSource> = {}): ExplainedSource => ({
  bucket: 'logs',
  key,
  etag: `e-${key}`,
  format: 'standard',
  processedAt: '2026-11-21T10:00:00.000Z',
  metrics: { requests, bytes },
  ...extra,
});
const records: UsageRecord[] = [
  { kind: 'usage', day: DAY, shard: 0, metrics: { requests: 7, bytes: 700 } },
  { kind: 'usage', day: DAY, shard: 3, metrics: { requests: 5, bytes: 50 } },
  { kind: 'adjustment', day: DAY, adjustmentId: 'INC-1', metric: 'requests', delta: -2, reason: 'refund', createdAt: '2026-11-22T00:00:00.000Z' },
  { kind: 'revision', day: DAY, revision: 2, metrics: { requests: 1, bytes: 50 }, createdAt: '2026-11-24T00:00:00.000Z' },
  { kind: 'revision', day: DAY, revision: 1, metrics: { requests: 11, bytes: 700 }, createdAt: '2026-11-23T12:00:00.000Z' },
  { kind: 'closed-day', day: DAY, closedAt: '2026-11-23T12:00:00.000Z' },
];

describe('an explanation', () => {
  it('is complete when the sources add up to the counters, and measured + adjustments = totals', () => {
    const explanation = buildExplanation({ accountId: 'acme', day: DAY, records, sources: [source('b', 2, 50), source('a', 10, 700)], metricNames: ['requests', 'bytes'] });

    expect(explanation).toMatchObject({
      status: 'closed',
      closedAt: '2026-11-23T12:00:00.000Z',
      metrics: { requests: 12, bytes: 750 },
      totals: { requests: 10, bytes: 750 },
      sourceTotals: { requests: 12, bytes: 750 },
      complete: true,
      adjustments: [{ id: 'INC-1', metric: 'requests', delta: -2, reason: 'refund', createdAt: '2026-11-22T00:00:00.000Z' }],
      revisions: [
        { revision: 1, createdAt: '2026-11-23T12:00:00.000Z', metrics: { requests: 11, bytes: 700 } },
        { revision: 2, createdAt: '2026-11-24T00:00:00.000Z', metrics: { requests: 1, bytes: 50 } },
      ],
    });
    expect(explanation.sources.map((s) => s.key)).toEqual(['a', 'b']);
    expect(explanation.missing).toBeUndefined();
  });

  it('says what is missing when objects counted before contributions were kept are not listed', () => {
    const explanation = buildExplanation({ accountId: 'acme', day: DAY, records, sources: [source('a', 10, 700)], metricNames: ['requests', 'bytes'] });

    expect(explanation.complete).toBe(false);
    expect(explanation.missing?.metrics).toEqual({ requests: 2, bytes: 50 });
    expect(explanation.missing?.reason).toContain(`tally backfill --from ${DAY} --to ${DAY}`);
  });

  it('is not complete while a source has unresolved increments, even when the sums agree', () => {
    const explanation = buildExplanation({ accountId: 'acme', day: DAY, records, sources: [source('a', 10, 700), source('b', 2, 50, { unresolved: true })], metricNames: ['requests', 'bytes'] });

    expect(explanation.complete).toBe(false);
    expect(explanation.missing?.reason).toContain('tally reconcile --resolve');
  });

  it('writes CSV with a row per source, the sums and each adjustment under its metric', () => {
    const csv = explanationCsv(buildExplanation({ accountId: 'acme', day: DAY, records, sources: [source('=cmd', 12, 750)], metricNames: ['requests', 'bytes'] }));

    expect(csv.split('\r\n')).toEqual([
      'account,day,part,id,detail,created_at,requests,bytes',
      `acme,${DAY},source,s3://logs/=cmd,e-=cmd standard,2026-11-21T10:00:00.000Z,12,750`,
      `acme,${DAY},sources_total,,,,12,750`,
      `acme,${DAY},measured,,closed complete:true,2026-11-23T12:00:00.000Z,12,750`,
      `acme,${DAY},adjustment,INC-1,refund,2026-11-22T00:00:00.000Z,-2,0`,
      `acme,${DAY},total,,,,10,750`,
      `acme,${DAY},revision,1,,2026-11-23T12:00:00.000Z,11,700`,
      `acme,${DAY},revision,2,,2026-11-24T00:00:00.000Z,1,50`,
      `acme,${DAY},hours_unknown,,counted (in part) before hours were kept (tally backfill --hours recomputes them) or from log lines with a date and no time of day (which have none) (\`tally backfill --hours --from ${DAY} --to ${DAY}\`),,,`,
      '',
    ]);
  });
});

describe("an explanation's hours", () => {
  const shard = (shard: number, metrics: Record<string, number>, hours?: HourSums): UsageRecord => ({ kind: 'usage', day: DAY, shard, metrics, ...(hours === undefined ? {} : { hours }) });
  const backfilled = (hours: HourSums): UsageRecord => ({ kind: 'hours', day: DAY, hours });
  const explain = (dayRecords: UsageRecord[], sources: ExplainedSource[] = []) => buildExplanation({ accountId: 'acme', day: DAY, records: dayRecords, sources, metricNames: ['requests', 'bytes'] });
  const hourRow = (hour: number, requests: number, bytes: number) => ({ hour, metrics: { requests, bytes } });

  it("are the shards' hours, every shard added, 24 rows, when they sum to the counters", () => {
    const e = explain([shard(0, { requests: 3, bytes: 30 }, { 5: { requests: 3, bytes: 30 } }), shard(1, { requests: 4, bytes: 40 }, { 5: { requests: 1, bytes: 10 }, 23: { requests: 3, bytes: 30 } })]);

    expect(e.hoursSource).toBe('shards');
    expect(e.hours).toHaveLength(24);
    expect(e.hours!.filter((h) => h.metrics.requests !== 0)).toEqual([hourRow(5, 4, 40), hourRow(23, 3, 30)]);
    expect(e.hours![0]).toEqual(hourRow(0, 0, 0));
    expect(e.hoursReason).toBeUndefined();
  });

  it('are the recomputed ones of tally backfill --hours when the shards were counted without hours', () => {
    const e = explain([shard(0, { requests: 7, bytes: 70 }), backfilled({ 2: { requests: 7, bytes: 70 } })]);

    expect(e.hoursSource).toBe('backfill');
    expect(e.hoursCountedSince).toBeUndefined();
    expect(e.hours![2]).toEqual(hourRow(2, 7, 70));
    expect(describeExplanation(e)).toContain('hours (UTC, recomputed from the log objects by tally backfill --hours; hours without usage left out):');
  });

  it('are the recomputed ones plus a late log in its own hour, when the backfill recorded the shards it saw', () => {
    const e = explain([
      shard(0, { requests: 7, bytes: 70 }),
      shard(1, { requests: 3, bytes: 30 }, { 20: { requests: 3, bytes: 30 } }),
      { kind: 'hours', day: DAY, hours: { 2: { requests: 7, bytes: 70 } }, atShards: {} },
    ]);

    expect(e.hoursSource).toBe('backfill');
    expect(e.hoursCountedSince).toBe(true);
    expect(e.hours!.filter((h) => h.metrics.requests !== 0)).toEqual([hourRow(2, 7, 70), hourRow(20, 3, 30)]);
    expect(describeExplanation(e)).toContain('hours (UTC, recomputed from the log objects by tally backfill --hours, plus usage counted since; hours without usage left out):');
  });

  it('are unknown, never zeros, when neither sums to the counters, and say why', () => {
    const never = explain([shard(0, { requests: 7, bytes: 70 })]);
    const stale = explain([shard(0, { requests: 8, bytes: 70 }), backfilled({ 2: { requests: 7, bytes: 70 } })]);

    expect(never).toMatchObject({ hours: null, hoursReason: expect.stringContaining('tally backfill --hours') });
    expect(never.hoursSource).toBeUndefined();
    expect(stale).toMatchObject({ hours: null, hoursReason: expect.stringContaining('run it again') });
  });

  it("show each source's hours, and unknown (null) for a source recorded before hours", () => {
    const e = explain([shard(0, { requests: 12, bytes: 750 })], [source('a', 10, 700, { hours: [{ hour: 4, metrics: { requests: 10, bytes: 700 } }] }), source('b', 2, 50)]);

    expect(e.sources.map((s) => [s.key, s.hours])).toEqual([
      ['a', [hourRow(4, 10, 700)]],
      ['b', null],
    ]);
  });

  it('write CSV rows for the day by hour and for each source hour', () => {
    const csv = explanationCsv(explain([shard(0, { requests: 10, bytes: 700 }, { 4: { requests: 10, bytes: 700 } })], [source('a', 10, 700, { hours: [{ hour: 4, metrics: { requests: 10, bytes: 700 } }] })])).split('\r\n');

    expect(csv.filter((line) => line.includes(',hour,'))).toHaveLength(24);
    expect(csv).toContain(`acme,${DAY},hour,${DAY}T04:00:00Z,shards,,10,700`);
    expect(csv).toContain(`acme,${DAY},hour,${DAY}T05:00:00Z,shards,,0,0`);
    expect(csv).toContain(`acme,${DAY},source_hour,s3://logs/a,${DAY}T04:00:00Z,,10,700`);
  });

  it('as rows, list the hours with usage in order, or all 24', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.integer({ min: 0, max: 23 }).map(String), fc.record({ requests: fc.nat(100) })), (hours) => {
        const used = hourFigures(hours, ['requests']);
        expect(used.map((row) => row.hour)).toEqual(Object.keys(hours).map(Number).filter((hour) => hours[hour]!.requests !== 0).sort((a, b) => a - b));
        expect(hourFigures(hours, ['requests'], true).map((row) => row.hour)).toEqual(Array.from({ length: 24 }, (_, hour) => hour));
      }),
    );
  });
});

describe('a health report', () => {
  const now = new Date('2026-11-25T12:30:00.000Z');
  const lines = (read: number, unattributed: number, malformed: number) => ({ read, counted: read - unattributed - malformed, unattributed, malformed });

  it('takes the newest hour per distribution, counts objects once, and rates the lines of the last day', () => {
    const report = buildHealthReport({
      now,
      days: ['2026-11-24', '2026-11-25'],
      entries: [
        { day: '2026-11-25', bucket: 'b', key: 'cf/E2A.2026-11-25-11.x1.gz', etag: '1', processedAt: '2026-11-25T12:10:00.000Z', lines: lines(100, 5, 1), unattributedSamples: ['203.0.113.7', 'new.example.com'] },
        // The same object's item of another day: no lines, not a second object.
        { day: '2026-11-24', bucket: 'b', key: 'cf/E2A.2026-11-25-11.x1.gz', etag: '1', processedAt: '2026-11-25T12:10:00.000Z' },
        { day: '2026-11-25', bucket: 'b', key: 'cf/E2A.2026-11-25-09.x2.gz', etag: '2', processedAt: '2026-11-25T10:00:00.000Z', lines: lines(50, 2, 0), unattributedSamples: ['new.example.com', 'd111111abcdef8.cloudfront.net'] },
        { day: '2026-11-24', bucket: 'b', key: 'cf/E2B.2026-11-24-02.x3.gz', etag: '3', processedAt: '2026-11-24T03:00:00.000Z', lines: lines(10, 10, 0) },
      ],
      deadLetters: { depth: 0, oldestAgeSeconds: null },
      lastReconcile: null,
      history: { shards: 4, cap: 48, keysPerAccountDay: 192, tombstoneDays: 400 },
    });

    expect(report.freshness).toEqual([
      { source: 'E2A', newestHour: '2026-11-25T11', processedAt: '2026-11-25T12:10:00.000Z' },
      { source: 'E2B', newestHour: '2026-11-24T02', processedAt: '2026-11-24T03:00:00.000Z' },
    ]);
    expect(report.objects).toEqual({ lastHour: 1, lastDay: 2 });
    expect(report.lines).toEqual({ read: 150, counted: 142, unattributed: 7, malformed: 1, unattributedRate: 0.0467, malformedRate: 0.0067 });
    expect(report.missed).toEqual([
      { object: 's3://b/cf/E2A.2026-11-25-11.x1.gz', unattributed: 5, malformed: 1, read: 100, samples: ['203.0.113.7', 'new.example.com'] },
      { object: 's3://b/cf/E2A.2026-11-25-09.x2.gz', unattributed: 2, malformed: 0, read: 50, samples: ['new.example.com', 'd111111abcdef8.cloudfront.net'] },
    ]);
    expect(report.missedKeys).toEqual([
      { key: 'new.example.com', objects: 2, reason: 'not an account (no valid account id, or not in the host map)' },
      { key: '203.0.113.7', objects: 1, reason: 'an IP address, not a host name' },
      { key: 'd111111abcdef8.cloudfront.net', objects: 1, reason: 'the CloudFront default domain: it names a distribution, not an account' },
    ]);
    // Per day of the logs: an object counts on every day it has lines, its lines on its first day only.
    expect(report.perDay).toEqual([
      { day: '2026-11-24', objects: 2, lines: { read: 10, counted: 0, unattributed: 10, malformed: 0 }, lastProcessedAt: '2026-11-25T12:10:00.000Z' },
      { day: '2026-11-25', objects: 2, lines: { read: 150, counted: 142, unattributed: 7, malformed: 1 }, lastProcessedAt: '2026-11-25T12:10:00.000Z' },
    ]);
  });

  it('reads the last N days of the ledger, one query each, oldest first', async () => {
    const asked: string[] = [];
    const activity = {
      entriesOn: async (day: string) => {
        asked.push(day);
        return day === '2026-11-20' ? [{ bucket: 'b', key: 'cf/E2A.2026-11-20-01.x.gz', etag: '9', processedAt: '2026-11-21T01:00:00.000Z', lines: lines(4, 0, 1) }] : [];
      },
    };
    const deps = { activity, reconciles: { last: async () => undefined, record: async () => undefined }, history: { shards: 4, cap: 48, keysPerAccountDay: 192, tombstoneDays: 400 }, clock: () => now };

    const week = await readHealth(deps, 7);

    expect(asked.sort()).toEqual(['2026-11-19', '2026-11-20', '2026-11-21', '2026-11-22', '2026-11-23', '2026-11-24', '2026-11-25']);
    expect(week.days).toEqual(asked);
    expect(week.perDay.map((d) => [d.day, d.objects, d.lines.read])).toEqual(asked.map((day) => [day, day === '2026-11-20' ? 1 : 0, day === '2026-11-20' ? 4 : 0]));
    expect((await readHealth(deps)).days).toEqual(['2026-11-24', '2026-11-25']);
    await expect(readHealth(deps, 32)).rejects.toThrow('days must be a whole number from 1 to 31');
    await expect(readHealth(deps, 0)).rejects.toThrow(ValidationError);
  });
});
