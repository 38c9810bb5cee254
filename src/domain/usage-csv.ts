import type { PeriodUsage, UsageReport } from './usage-report';

/**
 * Characters that make a spreadsheet read a cell as a formula (OWASP "CSV injection"):
 * `=`, `+`, `-`, `@`, and tab or carriage return, which some programs skip first.
 */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One text cell of a CSV line (RFC 4180): a cell that a spreadsheet would run as a
 * formula is prefixed with `'`, and a cell holding a comma, quote or line break is
 * quoted with inner quotes doubled.
 *
 * @example csvTextCell('=HYPERLINK("http://x")')   // "'=HYPERLINK(""http://x"")"
 */
export function csvTextCell(value: string): string {
  const safe = FORMULA_START.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/**
 * One numeric cell. Numbers are written as numbers (a negative adjustment stays `-5`,
 * which spreadsheets read as a number, not a formula); anything that is not a finite
 * number would be text, so it is refused rather than written unescaped.
 */
export function csvNumberCell(value: number): string {
  if (!Number.isFinite(value)) throw new RangeError(`not a finite number: ${value}`);
  return String(value);
}

/**
 * The report as CSV, one row per day (or per month with granularity `month`), with a
 * header line. Columns are stable for a given set of metrics:
 *
 * ```
 * account,day,requests,bytes,requests_adjustment,bytes_adjustment,requests_total,bytes_total,status,closed_at,requests_late,bytes_late
 * account,month,from,to,days,requests,...            (granularity=month)
 * ```
 *
 * `<metric>` is measured usage, `<metric>_adjustment` the adjustments of the row and
 * `<metric>_total` their sum, the billable figure. Day rows then say whether the day
 * is `open` or `closed`, when it closed (empty while open) and `<metric>_late`, the
 * usage that reached it after the close (0 when none). Lines end with CRLF (RFC 4180).
 */
export function usageReportCsv(report: UsageReport): string {
  const names = report.metricNames;
  const usageHeader = [...names, ...names.map((n) => `${n}_adjustment`), ...names.map((n) => `${n}_total`)];
  const usageCells = (row: PeriodUsage) => [
    ...names.map((n) => csvNumberCell(row.metrics[n] ?? 0)),
    ...names.map((n) => csvNumberCell(row.adjustments[n] ?? 0)),
    ...names.map((n) => csvNumberCell(row.totals[n] ?? 0)),
  ];
  const account = csvTextCell(report.accountId);
  const lines =
    report.months === undefined
      ? [
          ['account', 'day', ...usageHeader, 'status', 'closed_at', ...names.map((n) => `${n}_late`)].map(csvTextCell),
          ...report.days.map((row) => [
            account,
            csvTextCell(row.day),
            ...usageCells(row),
            csvTextCell(row.status),
            csvTextCell(row.closedAt ?? ''),
            ...names.map((n) => csvNumberCell(row.late?.[n] ?? 0)),
          ]),
        ]
      : [
          ['account', 'month', 'from', 'to', 'days', ...usageHeader].map(csvTextCell),
          ...report.months.map((row) => [
            account,
            csvTextCell(row.month),
            csvTextCell(row.from),
            csvTextCell(row.to),
            csvNumberCell(row.days),
            ...usageCells(row),
          ]),
        ];
  return lines.map((cells) => `${cells.join(',')}\r\n`).join('');
}

/** A download name such as `tally-acme-2026-11-01-2026-11-30-day.csv`. */
export function usageCsvFileName(report: Pick<UsageReport, 'accountId' | 'from' | 'to' | 'granularity'>): string {
  return `tally-${report.accountId}-${report.from}-${report.to}-${report.granularity}.csv`;
}
