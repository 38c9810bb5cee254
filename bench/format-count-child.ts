/**
 * One measured run of one way of answering "requests and bytes per account and day"
 * (host-label accounts) on one log file of any format, in a process of its own, so that
 * its CPU time (every thread) and peak RSS are its alone. Started by format-count.ts as
 * `node CHILD WAY FILE`; prints one JSON line. The clock starts after the modules load.
 *
 * - `tally`: what `tally count --json FILE` runs.
 * - `parse`: the file read and gunzipped into memory and counted once untimed (the code
 *   warm), then counted again, timed: the parser's own CPU per line, as
 *   bench/format-throughput.ts measures it.
 * - `floor`: gunzip alone, tuned (text formats).
 * - `duckdb`: DuckDB on one thread (`SET threads = 1`), the same question in SQL:
 *   `read_csv`, `read_json` or `read_parquet` by the file's name.
 */
import { createHash } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { constants, createGunzip, gunzipSync } from 'node:zlib';

export const FORMAT_WAYS = ['tally', 'parse', 'floor', 'duckdb'] as const;
export type FormatWay = (typeof FORMAT_WAYS)[number];

export interface FormatMeasure {
  readonly way: FormatWay;
  readonly wallSeconds: number;
  readonly cpuSeconds: number;
  readonly maxRssBytes: number;
  /** Bytes out of gunzip (floor), or a digest of the answer (sorted account|day|requests|bytes rows). */
  readonly answer: string;
  readonly rows: number;
  readonly lines?: { read: number; counted: number; unattributed: number; malformed: number };
}

function digest(rows: readonly (readonly [string, string, number, number])[]): string {
  const text = rows
    .map((row) => row.join('|'))
    .sort()
    .join('\n');
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

async function floor(path: string) {
  const gunzip = createGunzip({ chunkSize: 256 * 1024 });
  createReadStream(path, { highWaterMark: 1024 * 1024 }).pipe(gunzip);
  let bytes = 0;
  for await (const chunk of gunzip) bytes += (chunk as Buffer).length;
  return { answer: String(bytes), rows: 0 };
}

async function tally(path: string) {
  const { countFiles } = await import('../src/cli/commands/count');
  return async () => {
    const report = await countFiles([path], { resolver: 'host-label' });
    const rows = report.usage.map((row) => [row.account, row.day, row.metrics.requests ?? 0, row.metrics.bytes ?? 0] as const);
    return { answer: digest(rows), rows: rows.length, lines: report.lines };
  };
}

async function parse(path: string) {
  const { countLogContent } = await import('../src/domain/log-formats');
  const { parquetContent } = await import('../src/adapters/parquet-log');
  const { parseResolverSpec } = await import('../src/domain/account-resolver');
  const stored = readFileSync(path);
  const parquet = path.endsWith('.parquet');
  const text = parquet ? stored : gunzipSync(stored);
  const count = async () => {
    const content = parquet
      ? parquetContent({ byteLength: text.length, slice: async (start, end) => text.buffer.slice(text.byteOffset + start, text.byteOffset + (end ?? text.length)) }, path)
      : {
          kind: 'text' as const,
          text: (async function* () {
            for (let at = 0; at < text.length; at += 256 * 1024) yield text.subarray(at, at + 256 * 1024);
          })(),
        };
    const result = await countLogContent(content, { resolver: parseResolverSpec('host-label'), metricRules: [], objectKey: path }, path);
    const rows = result.tally.usage().map((row) => [row.account, row.day, row.metrics.requests ?? 0, row.metrics.bytes ?? 0] as const);
    return { answer: digest(rows), rows: rows.length, lines: result.lines };
  };
  // Warm, as bench/format-throughput.ts measures: the code compiled by a first count, untimed.
  await count();
  return count;
}

/** The `#Fields` of a gzipped standard log, from its first bytes. */
function legacyFields(path: string): string[] {
  const head = readFileSync(path).subarray(0, 64 * 1024);
  const text = gunzipSync(head, { finishFlush: constants.Z_SYNC_FLUSH }).toString('utf8');
  const line = text.split('\n').find((l) => l.startsWith('#Fields:'));
  if (line === undefined) throw new Error(`${path}: no #Fields line`);
  return line.slice('#Fields:'.length).trim().split(/\s+/);
}

/**
 * Tally's question in SQL over any of the three formats: a line's account is the first
 * DNS label of x-host-header (else cs(Host); `-` and empty are missing), lowercased, when
 * it is a valid account id and the host no IP literal; otherwise `unattributed`. Lines
 * whose date, time or sc-bytes do not parse are rejected, as Tally counts them malformed.
 */
export function formatQuery(path: string): string {
  const file = `'${path.replace(/'/g, "''")}'`;
  let source: string;
  if (path.endsWith('.parquet')) {
    source = `SELECT "date"::DATE AS day, sc_bytes::BIGINT AS bytes, x_host_header AS xhost, cs_Host AS cshost FROM read_parquet(${file})`;
  } else {
    const typed: Record<string, string> = { date: 'DATE', time: 'TIME', 'sc-bytes': 'BIGINT' };
    const json = path.endsWith('.json.gz');
    const names = json ? ['date', 'time', 'sc-bytes', 'cs(Host)', 'x-host-header'] : legacyFields(path);
    const columns = names.map((name) => `'${name}': '${typed[name] ?? 'VARCHAR'}'`).join(', ');
    const reader = json
      ? `read_json(${file}, format = 'newline_delimited', ignore_errors = true, columns = {${columns}})`
      : `read_csv(${file}, delim = '\\t', header = false, comment = '#', quote = '', escape = '', auto_detect = false, ignore_errors = true, columns = {${columns}})`;
    source = `SELECT "date" AS day, "sc-bytes" AS bytes, "x-host-header" AS xhost, "cs(Host)" AS cshost FROM ${reader}`;
  }
  return `
    WITH hosts AS (
      SELECT day, bytes, coalesce(nullif(nullif(xhost, '-'), ''), nullif(nullif(cshost, '-'), '')) AS host FROM (${source})
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
    const reader = await connection.runAndReadAll(formatQuery(path));
    const rows = reader.getRows().map((row) => [String(row[0]), String(row[1]), Number(row[2]), Number(row[3])] as const);
    connection.closeSync();
    instance.closeSync();
    return { answer: digest(rows), rows: rows.length };
  };
}

async function main(): Promise<void> {
  const [way, path] = process.argv.slice(2) as [FormatWay, string];
  const work =
    way === 'floor' ? () => floor(path)
    : way === 'tally' ? await tally(path)
    : way === 'parse' ? await parse(path)
    : way === 'duckdb' ? await duckdb(path)
    : undefined;
  if (work === undefined || path === undefined) throw new Error(`usage: format-count-child.ts ${FORMAT_WAYS.join('|')} FILE`);
  const cpuBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  const result: { answer: string; rows: number; lines?: FormatMeasure['lines'] } = await work();
  const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  const measure: FormatMeasure = { way, wallSeconds, cpuSeconds: (cpu.user + cpu.system) / 1e6, maxRssBytes: process.resourceUsage().maxRSS * 1024, ...result };
  process.stdout.write(`${JSON.stringify(measure)}\n`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  });
}
