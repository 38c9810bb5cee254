/**
 * What the measured children (count-floor-child.ts, format-count-child.ts) share: the
 * question "requests and bytes per host-label account and day" answered by Tally, by
 * gunzip alone and by DuckDB, a digest of the answer to compare them, and the one JSON
 * line a child prints. No main here: each child is bundled and run on its own.
 */
import { createHash } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { createGunzip } from 'node:zlib';

export const FLOOR_READ_BYTES = 1024 * 1024;
/** The floor's zlib chunk: the best found (0.44 s of CPU at 256 KiB, 0.36 s at 1 MiB, the same at 4 MiB, on the 320 MiB log). */
export const FLOOR_CHUNK_BYTES = 1024 * 1024;

/** Lines read and how each was counted, as `tally count` reports them. */
export interface MeasuredLines {
  readonly read: number;
  readonly counted: number;
  readonly unattributed: number;
  readonly malformed: number;
}

/** One run's answer: bytes out of gunzip (floor), or a digest of the sorted account|day|requests|bytes rows. */
export interface Answer {
  readonly answer: string;
  readonly rows: number;
  readonly lines?: MeasuredLines;
  /** Set by a work that times its own runs (the `parse` way): what it measured, in place of the whole work's time. */
  readonly timed?: { readonly cpuSeconds: number; readonly wallSeconds: number };
}

export function digest(rows: readonly (readonly [string, string, number, number])[]): string {
  const text = rows
    .map((row) => row.join('|'))
    .sort()
    .join('\n');
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/** The tuned gunzip, 1 MiB reads into 1 MiB chunks, bytes counted and dropped: no reader of the whole log does less. */
export async function gunzipFloor(path: string): Promise<Answer> {
  const gunzip = createGunzip({ chunkSize: FLOOR_CHUNK_BYTES });
  createReadStream(path, { highWaterMark: FLOOR_READ_BYTES }).pipe(gunzip);
  let bytes = 0;
  for await (const chunk of gunzip) bytes += (chunk as Buffer).length;
  return { answer: String(bytes), rows: 0 };
}

/** What `tally count --json FILE` runs (`countFiles`, host-label resolver). */
export async function tallyCount(path: string): Promise<() => Promise<Answer>> {
  const { countFiles } = await import('../src/cli/commands/ingest/count');
  return async () => {
    const report = await countFiles([path], { resolver: 'host-label' });
    const rows = report.usage.map((row) => [row.account, row.day, row.metrics.requests ?? 0, row.metrics.bytes ?? 0] as const);
    return { answer: digest(rows), rows: rows.length, lines: report.lines };
  };
}

/**
 * Tally's question in SQL over `source`, a query with columns day (DATE), bytes, xhost
 * (x-host-header) and cshost (cs(Host)): a line's account is the first DNS label of
 * xhost (else cshost; `-` and empty are missing), lowercased, when it is a valid account
 * id and the host no IP literal nor a CloudFront default domain (`*.cloudfront.net`);
 * otherwise `unattributed`. With `grouped`, the rows are first summed per day and host
 * pair and each distinct host classified once: the same answer, and DuckDB's fastest form
 * found (on the 900,000-request Parquet file of bench/format-count.ts, about a fifth of the
 * CPU of classifying every row).
 */
export function hostLabelQuery(source: string, options: { readonly grouped?: boolean } = {}): string {
  const account = `CASE
             WHEN host IS NULL OR starts_with(host, '[') OR regexp_full_match(host, '\\d{1,3}(\\.\\d{1,3}){3}(:\\d+)?') OR regexp_full_match(host, '.*\\.cloudfront\\.net', 'i') THEN 'unattributed'
             WHEN regexp_full_match(label, '[A-Za-z0-9][A-Za-z0-9._-]{0,63}') AND NOT contains(label, '..') THEN label
             ELSE 'unattributed'
           END`;
  const host = `coalesce(nullif(nullif(xhost, '-'), ''), nullif(nullif(cshost, '-'), ''))`;
  if (options.grouped === true) {
    return `
    WITH pairs AS (
      SELECT day, xhost, cshost, count(*) AS requests, sum(bytes) AS bytes FROM (${source}) GROUP BY ALL
    ), labelled AS (
      SELECT day, requests, bytes, host, lower(split_part(host, '.', 1)) AS label FROM (SELECT *, ${host} AS host FROM pairs)
    )
    SELECT ${account} AS account, strftime(day, '%Y-%m-%d') AS day, sum(requests)::BIGINT AS requests, sum(bytes)::BIGINT AS bytes
    FROM labelled GROUP BY ALL`;
  }
  return `
    WITH hosts AS (
      SELECT day, bytes, ${host} AS host FROM (${source})
    ), labelled AS (
      SELECT day, bytes, host, lower(split_part(host, '.', 1)) AS label FROM hosts
    )
    SELECT ${account} AS account,
           strftime(day, '%Y-%m-%d') AS day, count(*) AS requests, sum(bytes) AS bytes
    FROM labelled GROUP BY ALL`;
}

/** DuckDB on one thread answering `sql` (account, day, requests, bytes rows), a fresh instance per run. */
export async function duckdbCount(sql: string): Promise<() => Promise<Answer>> {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  return async () => {
    const instance = await DuckDBInstance.create(':memory:', { threads: '1' });
    const connection = await instance.connect();
    const reader = await connection.runAndReadAll(sql);
    const rows = reader.getRows().map((row) => [String(row[0]), String(row[1]), Number(row[2]), Number(row[3])] as const);
    connection.closeSync();
    instance.closeSync();
    return { answer: digest(rows), rows: rows.length };
  };
}

/** Runs `work` once, timed from here (modules loaded), and prints `{way, wallSeconds, cpuSeconds, maxRssBytes, ...answer}`. */
export async function printMeasure(way: string, work: () => Promise<Answer>): Promise<void> {
  const cpuBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  const { timed, ...result } = await work();
  const cpu = process.cpuUsage(cpuBefore);
  const measured = timed ?? { wallSeconds: Number(process.hrtime.bigint() - started) / 1e9, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
  process.stdout.write(`${JSON.stringify({ way, ...measured, maxRssBytes: peakRssBytes(), ...result })}\n`);
}

/**
 * This process's peak resident set. Linux's `VmHWM` (/proc/self/status), not getrusage's
 * `ru_maxrss`, which a process keeps across execve from the one that forked it (getrusage(2)):
 * a child of a bench that had DuckDB write its files reported the parent's 210 MiB.
 */
export function peakRssBytes(): number {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (match !== null) return Number(match[1]) * 1024;
  } catch {
    // Not Linux: getrusage's figure.
  }
  return process.resourceUsage().maxRSS * 1024;
}

/** A child's main: its failure printed, the exit code set. */
export function runChild(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  });
}
