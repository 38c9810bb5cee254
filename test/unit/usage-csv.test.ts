import { csvNumberCell, csvTextCell, usageCsvFileName, usageReportCsv } from '../../src/domain/reading/usage-csv';
import { buildUsageReport } from '../../src/domain/reading/usage-report';

describe('csvTextCell', () => {
  it.each([
    ['acme', 'acme'],
    ['=1+2', "'=1+2"],
    ['+SUM(A1:A9)', "'+SUM(A1:A9)"],
    ['-2+3', "'-2+3"],
    ['@cmd', "'@cmd"],
    ['\tleading tab', "'\tleading tab"],
    ['\rleading cr', `"'\rleading cr"`],
    ['=HYPERLINK("http://evil.example","x")', `"'=HYPERLINK(""http://evil.example"",""x"")"`],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['two\nlines', '"two\nlines"'],
    ['', ''],
  ])('writes %j as %j', (value, cell) => {
    expect(csvTextCell(value)).toBe(cell);
  });
});

describe('csvNumberCell', () => {
  it('keeps negative numbers numeric and refuses non-finite ones', () => {
    expect(csvNumberCell(-5)).toBe('-5');
    expect(csvNumberCell(12345678901)).toBe('12345678901');
    expect(() => csvNumberCell(Number.NaN)).toThrow(RangeError);
    expect(() => csvNumberCell(Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });
});

describe('usageReportCsv', () => {
  const records = [
    { kind: 'usage' as const, day: '2026-11-21', shard: 0, metrics: { requests: 12, bytes: 3456 } },
    { kind: 'adjustment' as const, day: '2026-11-22', adjustmentId: 'x', metric: 'requests', delta: -2, reason: '=bad', createdAt: '2026-11-22T00:00:00Z' },
  ];

  it('writes one line per day with a header, measured, adjustment and total columns, CRLF endings', () => {
    const report = buildUsageReport({ accountId: 'acme', from: '2026-11-20', to: '2026-11-22', granularity: 'day', records });

    expect(usageReportCsv(report)).toBe(
      'account,day,requests,bytes,requests_adjustment,bytes_adjustment,requests_total,bytes_total,status,closed_at,requests_late,bytes_late\r\n' +
        'acme,2026-11-20,0,0,0,0,0,0,open,,0,0\r\n' +
        'acme,2026-11-21,12,3456,0,0,12,3456,open,,0,0\r\n' +
        'acme,2026-11-22,0,0,-2,0,-2,0,open,,0,0\r\n',
    );
  });

  it('writes one line per month with granularity month', () => {
    const report = buildUsageReport({ accountId: 'acme', from: '2026-10-31', to: '2026-11-22', granularity: 'month', records });

    expect(usageReportCsv(report)).toBe(
      'account,month,from,to,days,requests,bytes,requests_adjustment,bytes_adjustment,requests_total,bytes_total\r\n' +
        'acme,2026-10,2026-10-31,2026-10-31,1,0,0,0,0,0,0\r\n' +
        'acme,2026-11,2026-11-01,2026-11-22,22,12,3456,-2,0,10,3456\r\n',
    );
  });

  it('marks closed days with their close time and late usage', () => {
    const report = buildUsageReport({
      accountId: 'acme',
      from: '2026-11-21',
      to: '2026-11-22',
      granularity: 'day',
      records: [
        ...records,
        { kind: 'revision', day: '2026-11-21', revision: 1, metrics: { requests: 10, bytes: 3000 } },
        { kind: 'closed-day', day: '2026-11-21', closedAt: '2026-11-24T00:05:00.000Z' },
      ],
    });

    expect(usageReportCsv(report).split('\r\n').slice(1, 3)).toEqual([
      'acme,2026-11-21,12,3456,0,0,12,3456,closed,2026-11-24T00:05:00.000Z,2,456',
      'acme,2026-11-22,0,0,-2,0,-2,0,open,,0,0',
    ]);
  });

  it('escapes a metric name that a spreadsheet would run', () => {
    const report = buildUsageReport({
      accountId: 'acme',
      from: '2026-11-21',
      to: '2026-11-21',
      granularity: 'day',
      records: [{ kind: 'usage', day: '2026-11-21', shard: 0, metrics: { '=cmd|x': 1 } }],
    });

    expect(usageReportCsv(report).split('\r\n')[0]).toBe(
      "account,day,requests,bytes,'=cmd|x,requests_adjustment,bytes_adjustment,'=cmd|x_adjustment,requests_total,bytes_total,'=cmd|x_total,status,closed_at,requests_late,bytes_late,'=cmd|x_late",
    );
  });

  it('names the download after account, range and granularity', () => {
    expect(usageCsvFileName({ accountId: 'acme', from: '2026-11-01', to: '2026-11-30', granularity: 'day' })).toBe(
      'tally-acme-2026-11-01-2026-11-30-day.csv',
    );
  });
});
