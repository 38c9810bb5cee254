/**
 * One measured run of one way of answering "requests and bytes per account and day"
 * on one gzipped log, in a process of its own so that its CPU time (every thread:
 * zlib's threadpool, DuckDB's) and its peak RSS are its alone. Started by
 * count-floor.ts as `node --import tsx bench/count-floor-child.ts WAY FILE`; prints
 * one JSON line. The clock starts after the modules are loaded: what is timed is the
 * work, not Node's start.
 *
 * - `tally`: what `tally count --json FILE` runs (`countFiles`, host-label resolver).
 * - `floor`: the tuned gunzip, 1 MiB reads into `createGunzip({ chunkSize: 256 KiB })`,
 *   bytes counted and dropped: no program that reads the whole log can do less.
 * - `duckdb`: DuckDB on one thread, `read_csv` of the same file and the same question.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';

export const WAYS = ['tally', 'floor', 'duckdb'] as const;
export type Way = (typeof WAYS)[number];

export interface ChildMeasure {
  readonly way: Way;
  readonly wallSeconds: number;
  readonly cpuSeconds: number;
  readonly maxRssBytes: number;
  /** Bytes out of gunzip (floor), or a digest of the answer (sorted account|day|requests|bytes rows). */
  readonly answer: string;
  readonly rows: number;
  readonly lines?: { read: number; counted: number; unattributed: number; malformed: number };
}

export const FLOOR_READ_BYTES = 1024 * 1024;
export const FLOOR_CHUNK_BYTES = 256 * 1024;

async function floor(path: string): Promise<{ answer: string; rows: number }> {
  const gunzip = createGunzip({ chunkSize: FLOOR_CHUNK_BYTES });
  createReadStream(path, { highWaterMark: FLOOR_READ_BYTES }).pipe(gunzip);
  let bytes = 0;
  for await (const chunk of gunzip) bytes += (chunk as Buffer).length;
  return { answer: String(bytes), rows: 0 };
}

function digest(rows: readonly (readonly [string, string, number, number])[]): string {
  const text = rows
    .map((row) => row.join('|'))
    .sort()
    .join('\n');
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

async function tally(path: string) {
  const { countFiles } = await import('../src/cli/commands/count');
  return async () => {
    const report = await countFiles([path], { resolver: 'host-label' });
    const rows = report.usage.map((row) => [row.account, row.day, row.metrics.requests ?? 0, row.metrics.bytes ?? 0] as const);
    return { answer: digest(rows), rows: rows.length, lines: report.lines };
  };
}

const CLOUDFRONT_33 = [
  'date', 'time', 'x-edge-location', 'sc-bytes', 'c-ip', 'cs-method', 'cs(Host)', 'cs-uri-stem', 'sc-status',
  'cs(Referer)', 'cs(User-Agent)', 'cs-uri-query', 'cs(Cookie)', 'x-edge-result-type', 'x-edge-request-id',
  'x-host-header', 'cs-protocol', 'cs-bytes', 'time-taken', 'x-forwarded-for', 'ssl-protocol', 'ssl-cipher',
  'x-edge-response-result-type', 'cs-protocol-version', 'fle-status', 'fle-encrypted-fields', 'c-port',
  'time-to-first-byte', 'x-edge-detailed-result-type', 'sc-content-type', 'sc-content-len', 'sc-range-start',
  'sc-range-end',
];
const TYPED: Record<string, string> = { date: 'DATE', time: 'TIME', 'sc-bytes': 'BIGINT' };

/**
 * Tally's question in SQL: a line's account is the first DNS label of x-host-header
 * (else cs(Host); `-` and empty count as missing), lowercased, when it is a valid
 * account id and the host is no IP literal; otherwise `unattributed`. Lines whose
 * date, time or sc-bytes do not parse, or with too few fields, are rejected
 * (`ignore_errors`), as Tally counts them malformed.
 */
export function duckdbQuery(path: string): string {
  const columns = CLOUDFRONT_33.map((name) => `'${name}': '${TYPED[name] ?? 'VARCHAR'}'`).join(', ');
  const source = `read_csv('${path.replace(/'/g, "''")}', delim = '\\t', header = false, comment = '#', quote = '', escape = '', auto_detect = false, ignore_errors = true, columns = {${columns}})`;
  return `
    WITH hosts AS (
      SELECT "date" AS day, "sc-bytes" AS bytes,
             coalesce(nullif(nullif("x-host-header", '-'), ''), nullif(nullif("cs(Host)", '-'), '')) AS host
      FROM ${source}
    ), labelled AS (
      SELECT day, bytes, host, lower(split_part(host, '.', 1)) AS label FROM hosts
    )
    SELECT CASE
             WHEN host IS NULL OR starts_with(host, '[') OR regexp_full_match(host, '\\d{1,3}(\\.\\d{1,3}){3}(:\\d+)?') THEN 'unattributed'
             WHEN regexp_full_match(label, '[A-Za-z0-9][A-Za-z0-9._-]{0,63}') AND NOT contains(label, '..') THEN label
             ELSE 'unattributed'
           END AS account,
           strftime(day, '%Y-%m-%d') AS day, count(*) AS requests, sum(bytes) AS bytes
    FROM labelled GROUP BY ALL`;
}

async function duckdb(path: string) {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  return async () => {
    const instance = await DuckDBInstance.create(':memory:', { threads: '1' });
    const connection = await instance.connect();
    const reader = await connection.runAndReadAll(duckdbQuery(path));
    const rows = reader.getRows().map((row) => [String(row[0]), String(row[1]), Number(row[2]), Number(row[3])] as const);
    connection.closeSync();
    instance.closeSync();
    return { answer: digest(rows), rows: rows.length };
  };
}

async function main(): Promise<void> {
  const [way, path] = process.argv.slice(2) as [Way, string];
  const work =
    way === 'floor' ? () => floor(path) : way === 'tally' ? await tally(path) : way === 'duckdb' ? await duckdb(path) : undefined;
  if (work === undefined || path === undefined) throw new Error(`usage: count-floor-child.ts ${WAYS.join('|')} FILE`);
  const cpuBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  const result: { answer: string; rows: number; lines?: ChildMeasure['lines'] } = await work();
  const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  const measure: ChildMeasure = {
    way,
    wallSeconds,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    maxRssBytes: process.resourceUsage().maxRSS * 1024,
    ...result,
  };
  process.stdout.write(`${JSON.stringify(measure)}\n`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  });
}
