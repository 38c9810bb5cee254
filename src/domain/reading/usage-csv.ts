import { HOURS_PER_DAY } from '../hours';
import { UTC_ZONE } from './time-zones';
import type { ZonedUsageReport } from './usage-hours';

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

/** The report the CSV is written from: the read API's, or the UTC report of usage-report.ts. */
export type CsvReport = Omit<ZonedUsageReport, 'timeZone'> & { readonly timeZone?: string };

/**
 * The report as CSV, one row per day (or per month with granularity `month`, per hour
 * with granularity `hour`), with a header line. Columns are stable for a given set of
 * metrics and parameters:
 *
 * ```
 * account,day,requests,bytes,requests_adjustment,bytes_adjustment,requests_total,bytes_total,status,closed_at,requests_late,bytes_late
 * account,month,from,to,days,requests,...            (granularity=month)
 * account,start,requests,...,hours_reason            (granularity=hour: one row per hour)
 * account,day,requests,...,status,closed_at,hours_reason,hours_in_day   (a zone other than UTC: no late columns)
 * account,month,from,to,days,requests,...,hours_reason       (granularity=month in such a zone)
 * ```
 *
 * `<metric>` is measured usage, `<metric>_adjustment` the adjustments of the row and
 * `<metric>_total` their sum, the billable figure. Day rows then say whether the day
 * is `open` or `closed`, when it closed (empty while open) and `<metric>_late`, the
 * usage that reached it after the close (0 when none; UTC days only: late usage is
 * counted per UTC day). A row whose hours are unknown (usage-hours.ts) has empty
 * figures and the reason in `hours_reason`, never zeros. A zone's day rows end with
 * `hours_in_day`: 24, or 23 / 25 on daylight-saving days, 0 on a day the zone skipped
 * (usage-hours.ts). Lines end with CRLF (RFC 4180).
 */
export function usageReportCsv(report: CsvReport): string {
  const names = report.metricNames;
  const usageHeader = [...names, ...names.map((n) => `${n}_adjustment`), ...names.map((n) => `${n}_total`)];
  const figures = (values: Readonly<Record<string, number>> | null) => names.map((n) => (values === null ? '' : csvNumberCell(values[n] ?? 0)));
  const usageCells = (row: { metrics: Figures; adjustments: Figures; totals: Figures }) => [
    ...figures(row.metrics),
    ...figures(row.adjustments),
    ...figures(row.totals),
  ];
  const zoned = report.timeZone !== undefined && report.timeZone !== UTC_ZONE;
  const unknown = (row: { hoursReason?: string }) => csvTextCell(row.hoursReason ?? '');
  const account = csvTextCell(report.accountId);
  const lines =
    report.granularity === 'hour'
      ? [
          ['account', 'start', ...usageHeader, 'hours_reason'].map(csvTextCell),
          ...(report.hours ?? []).map((row) => [account, csvTextCell(row.start), ...usageCells(row), unknown(row)]),
        ]
      : report.months !== undefined
        ? [
            ['account', 'month', 'from', 'to', 'days', ...usageHeader, ...(zoned ? ['hours_reason'] : [])].map(csvTextCell),
            ...report.months.map((row) => [
              account,
              csvTextCell(row.month),
              csvTextCell(row.from),
              csvTextCell(row.to),
              csvNumberCell(row.days),
              ...usageCells(row),
              ...(zoned ? [unknown(row)] : []),
            ]),
          ]
        : [
            ['account', 'day', ...usageHeader, 'status', 'closed_at', ...(zoned ? ['hours_reason', 'hours_in_day'] : names.map((n) => `${n}_late`))].map(csvTextCell),
            ...report.days.map((row) => [
              account,
              csvTextCell(row.day),
              ...usageCells(row),
              csvTextCell(row.status),
              csvTextCell(row.closedAt ?? ''),
              ...(zoned ? [unknown(row), csvNumberCell(row.hoursInDay ?? HOURS_PER_DAY)] : names.map((n) => csvNumberCell(row.late?.[n] ?? 0))),
            ]),
          ];
  return lines.map((cells) => `${cells.join(',')}\r\n`).join('');
}

type Figures = Readonly<Record<string, number>> | null;

/**
 * A download name such as `tally-acme-2026-11-01-2026-11-30-day.csv`, with the zone
 * (`/` as `-`) when it is not UTC: `tally-acme-2026-11-01-2026-11-07-hour-America-New_York.csv`.
 */
export function usageCsvFileName(report: Pick<CsvReport, 'accountId' | 'from' | 'to' | 'granularity' | 'timeZone'>): string {
  const zone = report.timeZone === undefined || report.timeZone === UTC_ZONE ? '' : `-${report.timeZone.replace(/\//g, '-')}`;
  return `tally-${report.accountId}-${report.from}-${report.to}-${report.granularity}${zone}.csv`;
}
