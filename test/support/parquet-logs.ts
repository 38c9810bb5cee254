import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';

/**
 * CloudFront standard logging v2 Parquet files written by an independent writer
 * (DuckDB), with AWS's column names, and a recount of them by DuckDB's own SQL.
 */
export interface ParquetLogSpec {
  /** Account ids: row i is for `accounts[i % n]` (its host `<id>.example.com`). */
  readonly accounts: readonly string[];
  readonly rows: number;
  readonly codec: 'snappy' | 'zstd' | 'gzip' | 'uncompressed';
  readonly rowGroupRows?: number;
  /**
   * `strings`: every column VARCHAR with `date` and `time`, as AWS's Athena DDL shows;
   * `timestamp-ms`: VARCHAR, the day only in `timestamp_ms`; `typed`: `timestamp` a
   * TIMESTAMP, `sc_bytes` a BIGINT, `sc_status` an INTEGER; `no-day`: no day field at all.
   */
  readonly shape: 'strings' | 'timestamp-ms' | 'typed' | 'no-day';
  /** A seed that changes every value (bytes, paths, hosts' order). */
  readonly seed?: number;
}

/** SQL for the rows: deterministic, spread over two UTC days, every 97th row without a host, every 89th with no day (strings only). */
function rowsSql(spec: ParquetLogSpec): string {
  const seed = spec.seed ?? 1;
  const accounts = `[${spec.accounts.map((a) => `'${a}'`).join(', ')}]`;
  const base = `
    SELECT
      i,
      make_timestamp(1795219200000000 + (i * 7919 + ${seed} * 104729) % 172800 * 1000000 + (i % 1000) * 1000) AS ts,
      list_extract(${accounts}, (i % ${spec.accounts.length}) + 1::BIGINT) AS account,
      (hash(i + ${seed}) % 50000)::BIGINT AS bytes,
      CASE WHEN hash(i * 3 + ${seed}) % 5 = 0 THEN '/api/authorization/check' ELSE '/assets/img-' || (i % 40) || '.png' END AS stem,
      i % 97 = 0 AS hostless,
      i % 89 = 0 AS dayless
    FROM range(${spec.rows}) t(i)`;
  const host = `CASE WHEN hostless THEN NULL ELSE account || '.example.com' END`;
  const common = `
      strftime(ts, '%H:%M:%S') AS time,
      'IAD89-P1' AS x_edge_location`;
  const tail = `
      '192.0.2.' || (i % 250) AS c_ip,
      CASE WHEN i % 7 = 0 THEN 'POST' ELSE 'GET' END AS cs_method,
      CASE WHEN hostless THEN NULL ELSE 'd111111abcdef8.cloudfront.net' END AS cs_Host,
      stem AS cs_uri_stem,
      CASE WHEN i % 11 = 0 THEN '404' ELSE '200' END AS sc_status,
      'Mozilla/5.0%20(X11;%20Linux)' AS cs_User_Agent,
      ${host} AS x_host_header,
      md5(i::VARCHAR || '-${seed}') AS x_edge_request_id,
      'E2PARQUETTEST' AS DistributionId`;
  switch (spec.shape) {
    case 'strings':
      return `SELECT CASE WHEN dayless THEN NULL ELSE strftime(ts, '%Y-%m-%d') END AS "date", ${common}, bytes::VARCHAR AS sc_bytes, ${tail} FROM (${base})`;
    case 'timestamp-ms':
      return `SELECT (epoch_ms(ts))::VARCHAR AS timestamp_ms, 'IAD89-P1' AS x_edge_location, bytes::VARCHAR AS sc_bytes, ${tail} FROM (${base})`;
    case 'typed':
      return `SELECT ts AS "timestamp", 'IAD89-P1' AS x_edge_location, bytes AS sc_bytes, ${tail.replace(`CASE WHEN i % 11 = 0 THEN '404' ELSE '200' END`, `CASE WHEN i % 11 = 0 THEN 404 ELSE 200 END::INTEGER`)} FROM (${base})`;
    case 'no-day':
      return `SELECT 'IAD89-P1' AS x_edge_location, bytes::VARCHAR AS sc_bytes, ${tail} FROM (${base})`;
  }
}

/** The usage DuckDB counts in a file: per account and UTC day, with the demo metric rule. */
export interface Recount {
  readonly usage: Map<string, { requests: number; bytes: number; authorization_requests: number }>;
  readonly rows: number;
  readonly hostless: number;
  readonly dayless: number;
}

/** Runs `work` with a DuckDB connection (UTC) and closes it. */
async function withDuckDb<T>(work: (run: (sql: string) => Promise<Record<string, unknown>[]>) => Promise<T>): Promise<T> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    await connection.run(`SET TimeZone = 'UTC'`);
    return await work(async (sql) => (await connection.runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[]);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** Writes a Parquet log; returns its bytes and the path (in a folder `cleanup` removes). */
export async function writeParquetLog(spec: ParquetLogSpec, path?: string): Promise<{ bytes: Buffer; path: string; cleanup: () => void }> {
  const folder = path === undefined ? mkdtempSync(join(tmpdir(), 'tally-parquet-')) : undefined;
  const file = path ?? join(folder!, 'log.parquet');
  await withDuckDb(async (run) => {
    await run(`COPY (${rowsSql(spec)} ORDER BY i) TO '${file}' (FORMAT parquet, COMPRESSION ${spec.codec}${spec.rowGroupRows === undefined ? '' : `, ROW_GROUP_SIZE ${spec.rowGroupRows}`})`);
  });
  return { bytes: readFileSync(file), path: file, cleanup: () => folder !== undefined && rmSync(folder, { recursive: true, force: true }) };
}

/**
 * DuckDB's own count of a CloudFront Parquet log, the way Tally's host-label resolver
 * and the demo rule (`authorization_requests`: `/api/authorization/*`) define usage.
 */
export async function recountParquetLog(file: string): Promise<Recount> {
  return withDuckDb(async (run) => {
    const columns = new Set((await run(`SELECT name FROM parquet_schema('${file}')`)).map((row) => String(row.name).toLowerCase()));
    const day = columns.has('date') ? '"date"' : columns.has('timestamp_ms') ? `strftime(make_timestamp(timestamp_ms::BIGINT * 1000), '%Y-%m-%d')` : `strftime("timestamp", '%Y-%m-%d')`;
    const rows = await run(`
      SELECT lower(split_part(coalesce(x_host_header, cs_Host), '.', 1)) AS account, ${day} AS day,
             count(*)::INTEGER AS requests, sum(sc_bytes::BIGINT)::BIGINT AS bytes,
             (count(*) FILTER (WHERE cs_uri_stem LIKE '/api/authorization/%'))::INTEGER AS authorization_requests
      FROM read_parquet('${file}')
      WHERE ${day} IS NOT NULL AND coalesce(x_host_header, cs_Host) IS NOT NULL
      GROUP BY ALL`);
    const [totals] = await run(`
      SELECT count(*)::INTEGER AS rows,
             (count(*) FILTER (WHERE coalesce(x_host_header, cs_Host) IS NULL AND ${day} IS NOT NULL))::INTEGER AS hostless,
             (count(*) FILTER (WHERE ${day} IS NULL))::INTEGER AS dayless
      FROM read_parquet('${file}')`);
    const usage = new Map<string, { requests: number; bytes: number; authorization_requests: number }>();
    for (const row of rows) {
      usage.set(`${String(row.account)}|${String(row.day)}`, { requests: Number(row.requests), bytes: Number(row.bytes), authorization_requests: Number(row.authorization_requests) });
    }
    return { usage, rows: Number(totals!.rows), hostless: Number(totals!.hostless), dayless: Number(totals!.dayless) };
  });
}

/**
 * The requests of `jsonLines` (v2 JSON log text, see log-formats.ts) as a v2 Parquet
 * log: DuckDB reads the JSON and writes its columns under AWS's Parquet names
 * (`cs_Host`, `x_host_header`, `sc_bytes`, `DistributionId`, ...), all VARCHAR.
 */
export async function parquetFromJsonLines(jsonLines: string, codec: ParquetLogSpec['codec'] = 'snappy', rowGroupRows = 2048): Promise<Buffer> {
  const folder = mkdtempSync(join(tmpdir(), 'tally-parquet-'));
  try {
    const source = join(folder, 'log.json');
    const file = join(folder, 'log.parquet');
    writeFileSync(source, jsonLines.replace(/"distributionid":/g, '"DistributionId":'));
    await withDuckDb(async (run) => {
      await run(`COPY (
        SELECT "date", "time", "x-edge-location" AS x_edge_location, "sc-bytes" AS sc_bytes, "cs-method" AS cs_method,
               "cs(Host)" AS cs_Host, "cs-uri-stem" AS cs_uri_stem, "sc-status" AS sc_status, "x-host-header" AS x_host_header,
               "DistributionId"
        FROM read_json('${source}', format = 'newline_delimited', columns = {
          "date": 'VARCHAR', "time": 'VARCHAR', "x-edge-location": 'VARCHAR', "sc-bytes": 'VARCHAR', "cs-method": 'VARCHAR',
          "cs(Host)": 'VARCHAR', "cs-uri-stem": 'VARCHAR', "sc-status": 'VARCHAR', "cs(Referer)": 'VARCHAR',
          "x-host-header": 'VARCHAR', "DistributionId": 'VARCHAR'
        })) TO '${file}' (FORMAT parquet, COMPRESSION ${codec}, ROW_GROUP_SIZE ${rowGroupRows})`);
    });
    return readFileSync(file);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/** A Parquet file of the rows a DuckDB `SELECT` gives, with its column types (DATE, TIMESTAMP, ...), UTC. */
export async function parquetFromSelect(select: string): Promise<Buffer> {
  const folder = mkdtempSync(join(tmpdir(), 'tally-parquet-'));
  try {
    const file = join(folder, 'log.parquet');
    await withDuckDb((run) => run(`COPY (${select}) TO '${file}' (FORMAT parquet)`));
    return readFileSync(file);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
