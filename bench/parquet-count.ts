/**
 * Counting a CloudFront standard logging v2 Parquet file against the same traffic as a
 * gzipped legacy log: rows/s, MB/s of the stored file, peak RSS. Each count runs in its
 * own child process (peak RSS is the child's), the two formats alternately, medians.
 *
 *   npx tsx bench/parquet-count.ts [--rows 2000000] [--rounds 5] [--codec snappy|zstd|gzip]
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import { openLogFile } from '../src/adapters/logs/log-opening';
import { parseResolverSpec } from '../src/domain/logs/account-resolver';
import { countLogContent } from '../src/domain/logs/log-formats';
import { validateMetricRules } from '../src/domain/logs/metric-rules';
import { legacyHeader, requestFields, requestsSelect } from './generated-requests';
import { alternate, median } from './stats';

const run = promisify(execFile);

const FIELDS = requestFields({ unattributed: false });

const argument = (name: string, fallback: string) => {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : process.argv[at + 1]!;
};

async function generate(rows: number, codec: string, folder: string): Promise<{ parquet: string; legacy: string }> {
  const parquet = join(folder, `cloudfront-v2-${rows}-${codec}.parquet`);
  const legacy = join(folder, `cloudfront-legacy-${rows}.log.gz`);
  if (existsSync(parquet) && existsSync(legacy)) return { parquet, legacy };
  const select = () => requestsSelect(FIELDS, rows, 'parquet');
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    await connection.run(`COPY (${select()}) TO '${parquet}' (FORMAT parquet, COMPRESSION ${codec})`);
    const body = `${legacy}.body.gz`;
    await connection.run(`COPY (${select()}) TO '${body}' (FORMAT csv, DELIMITER '\t', HEADER false, QUOTE '', ESCAPE '', COMPRESSION gzip)`);
    const header = gzipSync(legacyHeader(FIELDS));
    writeFileSync(legacy, Buffer.concat([header, readFileSync(body)]));
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
  return { parquet, legacy };
}

interface Measure {
  readonly lines: number;
  readonly seconds: number;
  readonly maxRssMb: number;
  readonly requests: number;
}

/** In the child: count one file, print what it took. */
async function child(path: string): Promise<void> {
  const started = process.hrtime.bigint();
  const count = await countLogContent(
    await openLogFile(path),
    { resolver: parseResolverSpec('host-label'), metricRules: validateMetricRules([{ name: 'authorization_requests', path: '/api/authorization/*' }]), objectKey: path },
    path,
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const requests = count.tally.usage().reduce((sum, row) => sum + (row.metrics.requests ?? 0), 0);
  const measure: Measure = { lines: count.lines.read, seconds, maxRssMb: process.resourceUsage().maxRSS / 1024, requests };
  process.stdout.write(JSON.stringify(measure));
}

async function measure(path: string): Promise<Measure> {
  const { stdout } = await run(process.execPath, [...process.execArgv, __filename, '--child', path], { maxBuffer: 1 << 20 });
  return JSON.parse(stdout) as Measure;
}

async function main(): Promise<void> {
  const only = argument('child', '');
  if (only !== '') return child(only);
  const rows = Number(argument('rows', '2000000'));
  const rounds = Number(argument('rounds', '5'));
  const codec = argument('codec', 'snappy');
  const folder = join(__dirname, '..', 'node_modules', '.cache', 'tally-bench');
  mkdirSync(folder, { recursive: true });
  const files = await generate(rows, codec, folder);
  const mb = (path: string) => statSync(path).size / 1e6;
  console.log(`parquet (${codec}): ${mb(files.parquet).toFixed(1)} MB; legacy gzip: ${mb(files.legacy).toFixed(1)} MB; ${rows} rows`);
  const result = await alternate({
    rounds,
    warmup: true,
    candidate: () => measure(files.parquet),
    baseline: () => measure(files.legacy),
    onRound: (round, p, l) => console.log(`round ${round}: parquet ${p.seconds.toFixed(2)} s ${p.maxRssMb.toFixed(0)} MB RSS | legacy ${l.seconds.toFixed(2)} s ${l.maxRssMb.toFixed(0)} MB RSS`),
  });
  const summary = (name: string, path: string, runs: Measure[]) => {
    const seconds = median(runs.map((r) => r.seconds));
    const lines = runs[0]!.lines;
    console.log(
      `${name}: ${lines} lines, ${runs[0]!.requests} requests counted; median ${seconds.toFixed(2)} s = ${(lines / seconds / 1e6).toFixed(2)} M rows/s, ` +
        `${(mb(path) / seconds).toFixed(1)} MB/s of stored file; peak RSS median ${median(runs.map((r) => r.maxRssMb)).toFixed(0)} MB (max ${Math.max(...runs.map((r) => r.maxRssMb)).toFixed(0)})`,
    );
  };
  summary(`parquet ${codec}`, files.parquet, result.candidate);
  summary('legacy gzip', files.legacy, result.baseline);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
