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
import { awsParquetFields, legacyHeader, requestFields, requestsSelect } from './generated-requests';
import { BENCH_CACHE_DIR } from './cloudfront-log-file';
import type { FormatMeasure, FormatWay } from './format-count-child';
import { median, rotate } from './stats';

export const FORMAT_NAMES = ['legacy', 'json', 'parquet'] as const;
export type FormatName = (typeof FORMAT_NAMES)[number];

const FIELDS = requestFields({ unattributed: true });

/**
 * The Parquet shapes CloudFront can write, beyond the 19-field file above: every one of
 * the 33 columns a string (AWS's Athena DDL), and the same typed (`date` DATE, `sc_bytes`
 * BIGINT). 900,000 requests of 200 hosts over two UTC days, about 50,000 distinct sizes.
 */
export const PARQUET_SHAPES = ['aws-strings', 'aws-typed'] as const;
export type ParquetShape = (typeof PARQUET_SHAPES)[number];
const SHAPE_SPREAD = { accounts: 200, hours: 48 };

interface ShapeFiles {
  readonly paths: Record<ParquetShape, string>;
  readonly bytes: Record<ParquetShape, number>;
  /** The same requests as a gzipped legacy log: its count is the answer every shape must give. */
  readonly legacy: string;
}

/** Writes the shapes' files once (DuckDB, Snappy, default row groups), into the bench cache. */
async function shapeFiles(rows: number, progress: (line: string) => void): Promise<ShapeFiles> {
  mkdirSync(BENCH_CACHE_DIR, { recursive: true });
  const base = join(BENCH_CACHE_DIR, `shapes-${rows}-v1`);
  const paths: Record<ParquetShape, string> = { 'aws-strings': `${base}-aws-strings.parquet`, 'aws-typed': `${base}-aws-typed.parquet` };
  const legacy = `${base}-aws.log.gz`;
  if (![...Object.values(paths), legacy].every((path) => existsSync(path))) {
    progress(`formats: writing ${rows} requests as the Parquet shapes AWS documents and a legacy log (once) under ${BENCH_CACHE_DIR}`);
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      for (const shape of PARQUET_SHAPES) {
        const select = requestsSelect(awsParquetFields({ typed: shape === 'aws-typed' }), rows, 'parquet', SHAPE_SPREAD);
        await connection.run(`COPY (${select}) TO '${paths[shape]}.partial' (FORMAT parquet, COMPRESSION snappy)`);
      }
      const fields = awsParquetFields({ typed: false });
      const body = `${legacy}.body.gz`;
      await connection.run(`COPY (${requestsSelect(fields, rows, 'legacy', SHAPE_SPREAD)}) TO '${body}' (FORMAT csv, DELIMITER '\t', HEADER false, QUOTE '', ESCAPE '', COMPRESSION gzip)`);
      writeFileSync(`${legacy}.partial`, Buffer.concat([gzipSync(legacyHeader(fields)), readFileSync(body)]));
      rmSync(body);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
    for (const path of [...Object.values(paths), legacy]) renameSync(`${path}.partial`, path);
  }
  const bytes = Object.fromEntries(PARQUET_SHAPES.map((shape) => [shape, statSync(paths[shape]).size])) as Record<ParquetShape, number>;
  return { paths, bytes, legacy };
}

export interface ShapeResult {
  readonly shape: ParquetShape;
  readonly fileBytes: number;
  readonly tally: WayRuns;
  readonly duckdb: WayRuns;
  /** Tally warm, the file in memory (what a Lambda counting object after object does): see the `parse` way. */
  readonly parse: WayRuns;
  /** Tally and DuckDB, every run, gave the answer Tally gives for the same requests as a legacy log. */
  readonly sameAnswer: boolean;
  readonly wallToDuckdb: readonly number[];
  readonly cpuToDuckdb: readonly number[];
}

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
  readonly shapes: Record<ParquetShape, ShapeResult>;
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
  const shapes = await runShapes(options, child, progress);
  const big = await measure(child, 'tally', files.bigGroups);
  progress(`formats: Parquet with 1M-row groups: ${big.wallSeconds.toFixed(2)} s, peak RSS ${(big.maxRssBytes / 2 ** 20).toFixed(0)} MiB`);
  const legacyParse = formats.legacy.parse.cpuSeconds;
  return {
    rows: files.rows,
    rounds: options.rounds,
    formats,
    parseToLegacy: Object.fromEntries(FORMAT_NAMES.map((name) => [name, formats[name].parse.cpuSeconds / legacyParse])) as Record<FormatName, number>,
    bigGroups: { maxRssBytes: big.maxRssBytes, wallSeconds: big.wallSeconds, rowGroupRows: Math.min(1_000_000, files.rows) },
    shapes,
  };
}

/** Each Parquet shape: Tally and DuckDB alternating, after a warm-up of each; medians. */
export async function runShapes(options: { rounds: number; rows: number }, child: string, progress: (line: string) => void): Promise<Record<ParquetShape, ShapeResult>> {
  const files = await shapeFiles(options.rows, progress);
  const reference = await measure(child, 'tally', files.legacy);
  const shapes = {} as Record<ParquetShape, ShapeResult>;
  for (const shape of PARQUET_SHAPES) {
    const path = files.paths[shape];
    const ways: FormatWay[] = ['tally', 'duckdb', 'parse'];
    for (const way of ways) await measure(child, way, path);
    const results = await rotate({
      rounds: options.rounds,
      ways,
      run: (way) => measure(child, way, path),
      onRound: (round, r) => progress(`formats ${shape} round ${round + 1}/${options.rounds}: ${ways.map((way) => `${way} ${r[way].wallSeconds.toFixed(2)} s wall ${r[way].cpuSeconds.toFixed(2)} s CPU ${(r[way].maxRssBytes / 2 ** 20).toFixed(0)} MiB`).join(', ')}`),
    });
    const answers = new Set([...results.tally, ...results.duckdb, ...results.parse].map((r) => r.answer));
    shapes[shape] = {
      shape,
      fileBytes: files.bytes[shape],
      tally: summary(results.tally),
      duckdb: summary(results.duckdb),
      parse: summary(results.parse),
      sameAnswer: answers.size === 1 && answers.has(reference.answer),
      wallToDuckdb: results.tally.map((t, i) => t.wallSeconds / results.duckdb[i]!.wallSeconds),
      cpuToDuckdb: results.tally.map((t, i) => t.cpuSeconds / results.duckdb[i]!.cpuSeconds),
    };
  }
  return shapes;
}

/** `npx tsx bench/format-count.ts [--rows N] [--rounds R]`: item 6 alone, printed as JSON lines of medians. */
if (require.main === module) {
  const flag = (name: string, fallback: number) => {
    const at = process.argv.indexOf(name);
    return at === -1 ? fallback : Number(process.argv[at + 1]);
  };
  const progress = (line: string) => process.stderr.write(`${line}\n`);
  const settings = { rows: flag('--rows', 900_000), rounds: flag('--rounds', 5) };
  // `--shapes`: the Parquet shapes only.
  const running: Promise<Pick<FormatCountResult, 'shapes'> & Partial<FormatCountResult>> = process.argv.includes('--shapes')
    ? bundledChild().then(async (child) => ({ shapes: await runShapes(settings, child, progress) }))
    : runFormatCountBench(settings, progress);
  running
    .then((result) => {
      for (const name of result.formats === undefined ? [] : FORMAT_NAMES) {
        const f = result.formats![name];
        const w = (r: WayRuns | undefined) => (r === undefined ? '—' : `${r.wallSeconds.toFixed(3)} s wall, ${r.cpuSeconds.toFixed(3)} s CPU, ${(r.maxRssBytes / 2 ** 20).toFixed(0)} MiB`);
        process.stdout.write(
          `${name} (${(f.fileBytes / 1e6).toFixed(1)} MB): tally ${w(f.tally)} | duckdb ${w(f.duckdb)} | floor ${w(f.floor)} | parse CPU ${f.parse.cpuSeconds.toFixed(3)} s (${result.parseToLegacy![name].toFixed(2)}x legacy) | wall/duckdb ${(f.tally.wallSeconds / f.duckdb.wallSeconds).toFixed(2)}x, same answer ${f.sameAnswer}\n`,
        );
      }
      if (result.bigGroups !== undefined) process.stdout.write(`parquet 1M-row groups: peak RSS ${(result.bigGroups.maxRssBytes / 2 ** 20).toFixed(0)} MiB\n`);
      for (const shape of PARQUET_SHAPES) {
        const f = result.shapes[shape];
        process.stdout.write(
          `${shape} (${(f.fileBytes / 1e6).toFixed(1)} MB): tally ${f.tally.wallSeconds.toFixed(3)} s wall, ${f.tally.cpuSeconds.toFixed(3)} s CPU, ${(f.tally.maxRssBytes / 2 ** 20).toFixed(0)} MiB | duckdb ${f.duckdb.wallSeconds.toFixed(3)} s wall, ${f.duckdb.cpuSeconds.toFixed(3)} s CPU | warm parse CPU ${f.parse.cpuSeconds.toFixed(3)} s | wall/duckdb ${(f.tally.wallSeconds / f.duckdb.wallSeconds).toFixed(2)}x (per round ${f.wallToDuckdb.map((r) => r.toFixed(2)).join(', ')}), CPU/duckdb ${(f.tally.cpuSeconds / f.duckdb.cpuSeconds).toFixed(2)}x, same answer ${f.sameAnswer}\n`,
        );
      }
    })
    .catch((error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 1;
    });
}
