/**
 * Item 6: the same requests in the three formats CloudFront writes to S3 (legacy TSV
 * gzip, standard logging v2 JSON lines gzip, v2 Parquet Snappy with DuckDB's default row
 * groups), each counted by Tally (`tally count`), by DuckDB on one thread answering the
 * same question, and for the text formats by gunzip alone (the floor); plus the parser's
 * own CPU per line with the text already in memory (`parse`), against legacy. Each run
 * is a fresh process (bundled with esbuild, run by Node as Lambda runs its bundle), the
 * ways rotating every round; medians. Then Tally once on Parquet written with row groups
 * of a million rows, for its peak RSS.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { bundleChild, measureChild } from './child-process';
import { legacyHeader, requestFields, requestsSelect } from './generated-requests';
import { BENCH_CACHE_DIR } from './cloudfront-log-file';
import type { FormatMeasure, FormatWay } from './format-count-child';
import { median, rotate } from './stats';

export const FORMAT_NAMES = ['legacy', 'json', 'parquet'] as const;
export type FormatName = (typeof FORMAT_NAMES)[number];

const FIELDS = requestFields({ unattributed: true });

export interface FormatFiles {
  readonly rows: number;
  readonly paths: Record<FormatName, string>;
  readonly bytes: Record<FormatName, number>;
  /** Parquet with every row in one group (ROW_GROUP_SIZE 1,000,000). */
  readonly bigGroups: string;
}

/** Writes the files once (DuckDB), into the bench cache; later runs reuse them. */
async function formatFiles(rows: number, progress: (line: string) => void): Promise<FormatFiles> {
  mkdirSync(BENCH_CACHE_DIR, { recursive: true });
  const base = join(BENCH_CACHE_DIR, `formats-${rows}-v1`);
  const paths: Record<FormatName, string> = { legacy: `${base}.log.gz`, json: `${base}.json.gz`, parquet: `${base}.parquet` };
  const bigGroups = `${base}-1m-groups.parquet`;
  if (![...Object.values(paths), bigGroups].every((path) => existsSync(path))) {
    progress(`formats: writing ${rows} requests as legacy, JSON lines and Parquet (once) under ${BENCH_CACHE_DIR}`);
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    const select = (names: 'legacy' | 'parquet') => requestsSelect(FIELDS, rows, names);
    try {
      await connection.run(`COPY (${select('parquet')}) TO '${paths.parquet}.partial' (FORMAT parquet, COMPRESSION snappy)`);
      await connection.run(`COPY (${select('parquet')}) TO '${bigGroups}.partial' (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE 1000000)`);
      await connection.run(`COPY (${select('legacy')}) TO '${paths.json}.partial' (FORMAT json, COMPRESSION gzip)`);
      const body = `${paths.legacy}.body.gz`;
      await connection.run(`COPY (${select('legacy')}) TO '${body}' (FORMAT csv, DELIMITER '\t', HEADER false, QUOTE '', ESCAPE '', COMPRESSION gzip)`);
      const header = gzipSync(legacyHeader(FIELDS));
      writeFileSync(`${paths.legacy}.partial`, Buffer.concat([header, readFileSync(body)]));
      rmSync(body);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
    for (const path of [...Object.values(paths), bigGroups]) renameSync(`${path}.partial`, path);
  }
  const bytes = Object.fromEntries(FORMAT_NAMES.map((name) => [name, statSync(paths[name]).size])) as Record<FormatName, number>;
  return { rows, paths, bytes, bigGroups };
}

const bundledChild = () => bundleChild('format-count-child');
const measure = (child: string, way: FormatWay, path: string) => measureChild<FormatMeasure>(child, way, path);

export interface WayRuns {
  readonly wallSeconds: number;
  readonly cpuSeconds: number;
  readonly maxRssBytes: number;
  readonly runs: readonly FormatMeasure[];
}

export interface FormatResult {
  readonly name: FormatName;
  readonly fileBytes: number;
  readonly tally: WayRuns;
  readonly duckdb: WayRuns;
  readonly floor?: WayRuns;
  readonly parse: WayRuns;
  readonly sameAnswer: boolean;
  /** Per round, Tally ÷ DuckDB wall (rounds paired as they ran). */
  readonly wallToDuckdb: readonly number[];
}

export interface FormatCountResult {
  readonly rows: number;
  readonly rounds: number;
  readonly formats: Record<FormatName, FormatResult>;
  /** Parsing CPU per line of each format ÷ legacy's (medians; text already in memory). */
  readonly parseToLegacy: Record<FormatName, number>;
  readonly bigGroups: { readonly maxRssBytes: number; readonly wallSeconds: number; readonly rowGroupRows: number };
}

function summary(runs: FormatMeasure[]): WayRuns {
  return {
    wallSeconds: median(runs.map((r) => r.wallSeconds)),
    cpuSeconds: median(runs.map((r) => r.cpuSeconds)),
    maxRssBytes: median(runs.map((r) => r.maxRssBytes)),
    runs,
  };
}

export async function runFormatCountBench(options: { rounds: number; rows: number }, progress: (line: string) => void): Promise<FormatCountResult> {
  const files = await formatFiles(options.rows, progress);
  const child = await bundledChild();
  const formats = {} as Record<FormatName, FormatResult>;
  let answer: string | undefined;
  for (const name of FORMAT_NAMES) {
    const path = files.paths[name];
    const ways: FormatWay[] = name === 'parquet' ? ['tally', 'duckdb', 'parse'] : ['tally', 'duckdb', 'floor', 'parse'];
    // Warm-up: the file in the page cache, each way's code read once.
    for (const way of ways) await measure(child, way, path);
    const results = await rotate({
      rounds: options.rounds,
      ways,
      run: (way) => measure(child, way, path),
      onRound: (round, r) =>
        progress(`formats ${name} round ${round + 1}/${options.rounds}: ${ways.map((way) => `${way} ${r[way].wallSeconds.toFixed(2)} s wall ${r[way].cpuSeconds.toFixed(2)} s CPU ${(r[way].maxRssBytes / 2 ** 20).toFixed(0)} MiB`).join(', ')}`),
    });
    const answers = new Set([...results.tally, ...results.duckdb, ...results.parse].map((r) => r.answer));
    const lines = results.tally[0]!.lines!;
    if (lines.read !== files.rows || lines.malformed !== 0) throw new Error(`${name}: Tally read ${JSON.stringify(lines)} of ${files.rows} rows`);
    answer ??= results.tally[0]!.answer;
    formats[name] = {
      name,
      fileBytes: files.bytes[name],
      tally: summary(results.tally),
      duckdb: summary(results.duckdb),
      ...(results.floor === undefined ? {} : { floor: summary(results.floor) }),
      parse: summary(results.parse),
      // The same answer in every format and from every way.
      sameAnswer: answers.size === 1 && answers.has(answer),
      wallToDuckdb: results.tally.map((t, i) => t.wallSeconds / results.duckdb[i]!.wallSeconds),
    };
  }
  const big = await measure(child, 'tally', files.bigGroups);
  progress(`formats: Parquet with 1M-row groups: ${big.wallSeconds.toFixed(2)} s, peak RSS ${(big.maxRssBytes / 2 ** 20).toFixed(0)} MiB`);
  const legacyParse = formats.legacy.parse.cpuSeconds;
  return {
    rows: files.rows,
    rounds: options.rounds,
    formats,
    parseToLegacy: Object.fromEntries(FORMAT_NAMES.map((name) => [name, formats[name].parse.cpuSeconds / legacyParse])) as Record<FormatName, number>,
    bigGroups: { maxRssBytes: big.maxRssBytes, wallSeconds: big.wallSeconds, rowGroupRows: Math.min(1_000_000, files.rows) },
  };
}

/** `npx tsx bench/format-count.ts [--rows N] [--rounds R]`: item 6 alone, printed as JSON lines of medians. */
if (require.main === module) {
  const flag = (name: string, fallback: number) => {
    const at = process.argv.indexOf(name);
    return at === -1 ? fallback : Number(process.argv[at + 1]);
  };
  runFormatCountBench({ rows: flag('--rows', 900_000), rounds: flag('--rounds', 5) }, (line) => process.stderr.write(`${line}\n`))
    .then((result) => {
      for (const name of FORMAT_NAMES) {
        const f = result.formats[name];
        const w = (r: WayRuns | undefined) => (r === undefined ? '—' : `${r.wallSeconds.toFixed(3)} s wall, ${r.cpuSeconds.toFixed(3)} s CPU, ${(r.maxRssBytes / 2 ** 20).toFixed(0)} MiB`);
        process.stdout.write(
          `${name} (${(f.fileBytes / 1e6).toFixed(1)} MB): tally ${w(f.tally)} | duckdb ${w(f.duckdb)} | floor ${w(f.floor)} | parse CPU ${f.parse.cpuSeconds.toFixed(3)} s (${result.parseToLegacy[name].toFixed(2)}x legacy) | wall/duckdb ${(f.tally.wallSeconds / f.duckdb.wallSeconds).toFixed(2)}x, same answer ${f.sameAnswer}\n`,
        );
      }
      process.stdout.write(`parquet 1M-row groups: peak RSS ${(result.bigGroups.maxRssBytes / 2 ** 20).toFixed(0)} MiB\n`);
    })
    .catch((error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 1;
    });
}
