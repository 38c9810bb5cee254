import { csvNumberCell, csvTextCell } from '../reading/usage-csv';
import type { RevisionRow } from './day-close';
import { orderMetricNames } from '../reading/usage-report';

/**
 * The export of one revision of a closed day: one row per account, Hive-partitioned by
 * day and revision so Athena, Glue, DuckDB or Spark read every revision as one table:
 *
 * ```
 * <prefix>day=2026-11-21/revision=1/usage.parquet     (and usage.csv beside it)
 *   account | day        | revision | closed_at                | requests | bytes | ...
 *   acme    | 2026-11-21 | 1        | 2026-11-24T00:05:00.000Z | 155      | 4331584
 * ```
 * The figures are the revision's: the closed snapshot for revision 1, the late usage
 * since the revision before for the others. Rows are sorted by account and nothing
 * depends on the time of writing, so writing a revision again gives the same bytes.
 */
export interface RevisionExport {
  readonly day: string;
  readonly revision: number;
  readonly closedAt: string;
  /** Metric columns in order: `requests`, `bytes`, then the others alphabetically. */
  readonly metricNames: readonly string[];
  /** Sorted by account; every row carries every metric (zeros included). */
  readonly rows: readonly RevisionRow[];
}

/** The columns before the metrics, in order. */
export const EXPORT_KEY_COLUMNS = ['account', 'day', 'revision', 'closed_at'] as const;

/** Shapes a revision for export: every configured metric a column, rows by account. */
export function revisionExport(input: {
  day: string;
  revision: number;
  closedAt: string;
  rows: readonly RevisionRow[];
  metricNames: readonly string[];
}): RevisionExport {
  const metricNames = orderMetricNames([...input.metricNames, ...input.rows.flatMap((row) => Object.keys(row.metrics))]);
  const rows = [...input.rows]
    .sort((a, b) => (a.account < b.account ? -1 : a.account > b.account ? 1 : 0))
    .map((row) => ({ account: row.account, metrics: Object.fromEntries(metricNames.map((name) => [name, row.metrics[name] ?? 0])) }));
  return { day: input.day, revision: input.revision, closedAt: input.closedAt, metricNames, rows };
}

/** Where a revision's files go under `prefix` (e.g. `exports/`). */
export function revisionExportKeys(prefix: string, day: string, revision: number): { parquet: string; csv: string } {
  const folder = `${prefix}day=${day}/revision=${revision}/`;
  return { parquet: `${folder}usage.parquet`, csv: `${folder}usage.csv` };
}

/** The revision as CSV (RFC 4180, CRLF), the same columns and rows as the Parquet file. */
export function revisionCsv(table: RevisionExport): string {
  const header = [...EXPORT_KEY_COLUMNS, ...table.metricNames].map(csvTextCell).join(',');
  const lines = table.rows.map((row) =>
    [
      csvTextCell(row.account),
      csvTextCell(table.day),
      csvNumberCell(table.revision),
      csvTextCell(table.closedAt),
      ...table.metricNames.map((name) => csvNumberCell(row.metrics[name] ?? 0)),
    ].join(','),
  );
  return [header, ...lines].map((line) => `${line}\r\n`).join('');
}
