import fc from 'fast-check';
import { eachDay } from '../../src/domain/days';
import { buildUsageReport, orderMetricNames } from '../../src/domain/reading/usage-report';
import type { UsageRecord } from '../../src/domain/reading/usage-records';

const shard = (day: string, shardNo: number, metrics: Record<string, number>, updatedAt?: string): UsageRecord => ({
  kind: 'usage',
  day,
  shard: shardNo,
  metrics,
  ...(updatedAt === undefined ? {} : { updatedAt }),
});

const adjustment = (day: string, id: string, metric: string, delta: number, createdAt = '2026-11-22T10:00:00.000Z'): UsageRecord => ({
  kind: 'adjustment',
  day,
  adjustmentId: id,
  metric,
  delta,
  reason: `reason ${id}`,
  createdAt,
});

describe('buildUsageReport', () => {
  it('calls a day past its close grace on which the account has nothing closed (no closedAt); a day with usage stays open until closed', () => {
    const closing = { now: new Date('2026-11-27T12:00:00Z'), graceHours: 48 };
    const records: UsageRecord[] = [shard('2025-11-21', 0, { requests: 4, bytes: 40 }), adjustment('2025-11-23', 'A-1', 'requests', 3)];

    const report = buildUsageReport({ accountId: 'acme', from: '2025-11-20', to: '2025-11-23', granularity: 'day', records, closing });
    const recent = buildUsageReport({ accountId: 'acme', from: '2026-11-24', to: '2026-11-26', granularity: 'day', records: [], closing });
    const withoutClock = buildUsageReport({ accountId: 'acme', from: '2025-11-20', to: '2025-11-20', granularity: 'day', records: [] });

    expect(report.days.map(({ day, status, closedAt }) => ({ day, status, closedAt }))).toEqual([
      { day: '2025-11-20', status: 'closed', closedAt: undefined },
      { day: '2025-11-21', status: 'open', closedAt: undefined },
      { day: '2025-11-22', status: 'closed', closedAt: undefined },
      { day: '2025-11-23', status: 'open', closedAt: undefined },
    ]);
    // 2026-11-24 closes at 2026-11-27T00:00Z (end + 48 h); the two days after are still in their grace.
    expect(recent.days.map((day) => day.status)).toEqual(['closed', 'open', 'open']);
    expect(withoutClock.days[0]!.status).toBe('open');
  });

  it('says which days are closed, when, and what reached them after the close', () => {
    const records: UsageRecord[] = [
      shard('2026-11-20', 0, { requests: 7, bytes: 700 }),
      shard('2026-11-21', 0, { requests: 12, bytes: 900 }),
      shard('2026-11-22', 1, { requests: 3, bytes: 30 }),
      { kind: 'closed-day', day: '2026-11-20', closedAt: '2026-11-23T00:01:00.000Z' },
      { kind: 'closed-day', day: '2026-11-21', closedAt: '2026-11-24T00:01:00.000Z' },
      { kind: 'revision', day: '2026-11-20', revision: 1, metrics: { requests: 7, bytes: 700 } },
      { kind: 'revision', day: '2026-11-21', revision: 1, metrics: { requests: 10, bytes: 900 } },
      { kind: 'revision', day: '2026-11-21', revision: 2, metrics: { requests: 1 } },
    ];

    const report = buildUsageReport({ accountId: 'acme', from: '2026-11-20', to: '2026-11-22', granularity: 'day', records });

    expect(report.days.map(({ day, status, closedAt, late }) => ({ day, status, closedAt, late }))).toEqual([
      { day: '2026-11-20', status: 'closed', closedAt: '2026-11-23T00:01:00.000Z', late: undefined },
      { day: '2026-11-21', status: 'closed', closedAt: '2026-11-24T00:01:00.000Z', late: { requests: 2, bytes: 0 } },
      { day: '2026-11-22', status: 'open', closedAt: undefined, late: undefined },
    ]);
  });

  it('counts all usage of a closed day as late for an account that had none at the close', () => {
    const records: UsageRecord[] = [shard('2026-11-20', 2, { requests: 4, bytes: 40 }), { kind: 'closed-day', day: '2026-11-20', closedAt: '2026-11-23T00:01:00.000Z' }];

    const report = buildUsageReport({ accountId: 'acme', from: '2026-11-20', to: '2026-11-20', granularity: 'day', records });

    expect(report.days[0]!.late).toEqual({ requests: 4, bytes: 40 });
  });

  it('sums every shard of a day and keeps every day of the range, zeros included', () => {
    const records = [
      shard('2026-11-21', 0, { requests: 5, bytes: 500 }),
      shard('2026-11-21', 3, { requests: 7, bytes: 2956 }),
      shard('2026-11-23', 1, { requests: 1, bytes: 10 }),
    ];

    const report = buildUsageReport({ accountId: 'acme', from: '2026-11-20', to: '2026-11-23', granularity: 'day', records });

    expect(report.days.map((row) => [row.day, row.metrics])).toEqual([
      ['2026-11-20', { requests: 0, bytes: 0 }],
      ['2026-11-21', { requests: 12, bytes: 3456 }],
      ['2026-11-22', { requests: 0, bytes: 0 }],
      ['2026-11-23', { requests: 1, bytes: 10 }],
    ]);
    expect(report.totals).toEqual({ requests: 13, bytes: 3466 });
    expect(report.measuredTotals).toEqual({ requests: 13, bytes: 3466 });
    expect(report.adjustmentTotals).toEqual({ requests: 0, bytes: 0 });
    expect(report).toMatchObject({ accountId: 'acme', from: '2026-11-20', to: '2026-11-23', granularity: 'day', adjustments: [] });
    expect(report.months).toBeUndefined();
  });

  it('puts every metric on every row: configured ones, and any a shard or adjustment carries', () => {
    const records = [shard('2026-11-21', 0, { requests: 2, bytes: 20, zeta_calls: 1 }), adjustment('2026-11-22', 'a1', 'alpha_units', 4)];

    const report = buildUsageReport({
      accountId: 'acme',
      from: '2026-11-21',
      to: '2026-11-22',
      granularity: 'day',
      records,
      metricNames: ['requests', 'bytes', 'authorization_requests'],
    });

    expect(report.metricNames).toEqual(['requests', 'bytes', 'alpha_units', 'authorization_requests', 'zeta_calls']);
    for (const row of report.days) expect(Object.keys(row.metrics)).toEqual(report.metricNames);
    expect(report.days[1]!.metrics).toEqual({ requests: 0, bytes: 0, alpha_units: 0, authorization_requests: 0, zeta_calls: 0 });
  });

  it('shows adjustments apart from measured usage and includes them in the totals', () => {
    const records = [
      shard('2026-11-21', 0, { requests: 100, bytes: 1000 }),
      adjustment('2026-11-21', 'b', 'requests', -30, '2026-11-22T11:00:00.000Z'),
      adjustment('2026-11-21', 'a', 'requests', 5, '2026-11-22T09:00:00.000Z'),
      adjustment('2026-11-20', 'c', 'bytes', 250),
    ];

    const report = buildUsageReport({ accountId: 'acme', from: '2026-11-20', to: '2026-11-21', granularity: 'day', records });

    expect(report.days[1]).toEqual({
      day: '2026-11-21',
      status: 'open',
      metrics: { requests: 100, bytes: 1000 },
      adjustments: { requests: -25, bytes: 0 },
      totals: { requests: 75, bytes: 1000 },
    });
    expect(report.measuredTotals).toEqual({ requests: 100, bytes: 1000 });
    expect(report.adjustmentTotals).toEqual({ requests: -25, bytes: 250 });
    expect(report.totals).toEqual({ requests: 75, bytes: 1250 });
    expect(report.adjustments).toEqual([
      { id: 'c', day: '2026-11-20', metric: 'bytes', delta: 250, reason: 'reason c', createdAt: '2026-11-22T10:00:00.000Z' },
      { id: 'a', day: '2026-11-21', metric: 'requests', delta: 5, reason: 'reason a', createdAt: '2026-11-22T09:00:00.000Z' },
      { id: 'b', day: '2026-11-21', metric: 'requests', delta: -30, reason: 'reason b', createdAt: '2026-11-22T11:00:00.000Z' },
    ]);
  });

  it('reports the newest write among the items read as updatedAt, null when nothing was read', () => {
    const records = [
      shard('2026-11-21', 0, { requests: 1 }, '2026-11-21T23:10:00.000Z'),
      shard('2026-11-21', 1, { requests: 1 }, '2026-11-22T01:05:00.000Z'),
      shard('2026-11-20', 0, { requests: 1 }),
      adjustment('2026-11-20', 'x', 'requests', 1, '2026-11-22T00:30:00.000Z'),
    ];

    const fresh = buildUsageReport({ accountId: 'acme', from: '2026-11-20', to: '2026-11-21', granularity: 'day', records });
    const empty = buildUsageReport({ accountId: 'acme', from: '2026-11-20', to: '2026-11-21', granularity: 'day', records: [] });

    expect(fresh.updatedAt).toBe('2026-11-22T01:05:00.000Z');
    expect(empty.updatedAt).toBeNull();
  });

  it('ignores records outside the range', () => {
    const records = [shard('2026-11-19', 0, { requests: 9 }), shard('2026-11-20', 0, { requests: 1 }), shard('2026-11-22', 0, { requests: 9 })];

    const report = buildUsageReport({ accountId: 'acme', from: '2026-11-20', to: '2026-11-21', granularity: 'day', records });

    expect(report.totals.requests).toBe(1);
  });

  it('groups by calendar month, cutting the first and last month to the range', () => {
    const records = [
      shard('2026-10-30', 0, { requests: 1, bytes: 10 }),
      shard('2026-10-31', 2, { requests: 2, bytes: 20 }),
      shard('2026-11-01', 0, { requests: 4, bytes: 40 }),
      shard('2026-12-02', 1, { requests: 8, bytes: 80 }),
      adjustment('2026-11-15', 'fix', 'requests', -3),
    ];

    const report = buildUsageReport({ accountId: 'acme', from: '2026-10-30', to: '2026-12-02', granularity: 'month', records });

    expect(report.granularity).toBe('month');
    expect(report.days).toHaveLength(34);
    expect(report.months).toEqual([
      { month: '2026-10', from: '2026-10-30', to: '2026-10-31', days: 2, metrics: { requests: 3, bytes: 30 }, adjustments: { requests: 0, bytes: 0 }, totals: { requests: 3, bytes: 30 } },
      { month: '2026-11', from: '2026-11-01', to: '2026-11-30', days: 30, metrics: { requests: 4, bytes: 40 }, adjustments: { requests: -3, bytes: 0 }, totals: { requests: 1, bytes: 40 } },
      { month: '2026-12', from: '2026-12-01', to: '2026-12-02', days: 2, metrics: { requests: 8, bytes: 80 }, adjustments: { requests: 0, bytes: 0 }, totals: { requests: 8, bytes: 80 } },
    ]);
    expect(report.totals).toEqual({ requests: 12, bytes: 150 });
  });

  it('months of a leap February count 29 days', () => {
    const report = buildUsageReport({ accountId: 'acme', from: '2028-02-01', to: '2028-03-01', granularity: 'month', records: [] });

    expect(report.months!.map((month) => [month.month, month.days])).toEqual([
      ['2028-02', 29],
      ['2028-03', 1],
    ]);
  });

  it('totals always equal the sum of the day rows, and month rows sum to the same totals', () => {
    const day = fc.integer({ min: 0, max: 59 }).map((offset) => eachDay('2026-10-15', '2026-12-13')[offset]!);
    const record = fc.oneof(
      fc.record({ day, shard: fc.integer({ min: 0, max: 3 }), requests: fc.nat(1000), bytes: fc.nat(1_000_000) }).map((r) =>
        shard(r.day, r.shard, { requests: r.requests, bytes: r.bytes }),
      ),
      fc.record({ day, metric: fc.constantFrom('requests', 'bytes'), delta: fc.integer({ min: -500, max: 500 }), id: fc.uuid() }).map((r) =>
        adjustment(r.day, r.id, r.metric, r.delta),
      ),
    );
    fc.assert(
      fc.property(fc.array(record, { maxLength: 40 }), (records) => {
        const report = buildUsageReport({ accountId: 'acme', from: '2026-10-15', to: '2026-12-13', granularity: 'month', records });
        for (const metric of ['requests', 'bytes']) {
          const dayTotal = report.days.reduce((sum, row) => sum + row.totals[metric]!, 0);
          const monthTotal = report.months!.reduce((sum, row) => sum + row.totals[metric]!, 0);
          const direct = records.reduce((sum, r) => sum + (r.kind === 'usage' ? (r.metrics[metric] ?? 0) : r.kind === 'adjustment' && r.metric === metric ? r.delta : 0), 0);
          expect(dayTotal).toBe(direct);
          expect(monthTotal).toBe(direct);
          expect(report.totals[metric]).toBe(direct);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('orderMetricNames', () => {
  it('puts requests and bytes first, then the rest alphabetically, each once', () => {
    expect(orderMetricNames(['zeta', 'bytes', 'alpha', 'requests', 'alpha'])).toEqual(['requests', 'bytes', 'alpha', 'zeta']);
  });
});
