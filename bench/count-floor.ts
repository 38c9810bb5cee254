/**
 * Item 1: counting a CloudFront log at the decompression floor. Three ways answer the
 * same question (requests and bytes per account and day) on the same gzipped log, in
 * rotating order, each run in a fresh process of its own (count-floor-child.ts, bundled
 * with esbuild and run by plain Node, as Lambda runs the bundle), so that its CPU time
 * counts every thread it used and its peak RSS is its own:
 *
 * - Tally: what `tally count --json FILE` runs;
 * - the floor: the tuned gunzip alone (1 MiB reads, 1 MiB zlib chunks), nothing parsed;
 * - DuckDB on one thread: `read_csv` of the same file and the same GROUP BY.
 *
 * Then Tally once more on a larger log (1 GiB decompressed in full mode) for its peak RSS.
 */
import { bundleChild, measureChild } from './child-process';
import { BENCH_CACHE_DIR, generatedLog, type GeneratedLog } from './cloudfront-log-file';
import { FLOOR_CHUNK_BYTES, FLOOR_READ_BYTES, WAYS, type ChildMeasure, type Way } from './count-floor-child';
import { median, rotate } from './stats';

/** Lambda's price per GB-second of an x86 function in us-east-1 (AWS Lambda pricing page, 2026-11). */
export const LAMBDA_X86_USD_PER_GB_SECOND = 0.0000166667;
/** The ingest function's memory (serverless.yml). */
export const LAMBDA_MEMORY_MB = 1024;
/** Lambda gives a function one full vCPU at 1,769 MB and a proportional share below. */
export const LAMBDA_MB_PER_VCPU = 1769;

export interface WaySummary {
  readonly wallSeconds: number;
  readonly cpuSeconds: number;
  readonly maxRssBytes: number;
  readonly runs: readonly ChildMeasure[];
}

export interface CountFloorResult {
  readonly log: GeneratedLog;
  readonly rounds: number;
  readonly ways: Record<Way, WaySummary>;
  /** Per round, Tally ÷ floor and Tally ÷ DuckDB (rounds paired as they ran). */
  readonly roundRatios: readonly { cpuToFloor: number; wallToFloor: number; wallToDuckdb: number }[];
  readonly sameAnswer: boolean;
  readonly accountDays: number;
  /** Tally once on the larger log, for its peak RSS, and the floor once beside it. */
  readonly memory: {
    readonly log: GeneratedLog;
    readonly maxRssBytes: number;
    readonly cpuSeconds: number;
    readonly wallSeconds: number;
    readonly floorCpuSeconds: number;
    readonly floorWallSeconds: number;
  };
  readonly lambda: {
    readonly usdPerGbSecond: number;
    readonly memoryMb: number;
    /** Tally's CPU seconds per TB (10^12 bytes) of gzipped logs, from the median run. */
    readonly cpuSecondsPerTb: number;
    /** Billed at 1,024 MB for those CPU seconds. */
    readonly usdPerTb: number;
    /** The same, for the floor (what any reader of the logs pays). */
    readonly floorUsdPerTb: number;
  };
}

async function bundledChild(progress: (line: string) => void): Promise<string> {
  const outfile = await bundleChild('count-floor-child');
  progress(`count: bundled the measured child to ${outfile}`);
  return outfile;
}

const measure = (child: string, way: Way, path: string) => measureChild<ChildMeasure>(child, way, path);

function check(log: GeneratedLog, result: ChildMeasure): void {
  if (result.way === 'floor' && Number(result.answer) !== log.uncompressedBytes) {
    throw new Error(`gunzip gave ${result.answer} bytes, the generator wrote ${log.uncompressedBytes}`);
  }
  if (result.way === 'tally' && JSON.stringify(result.lines) !== JSON.stringify(log.lines)) {
    throw new Error(`tally counted ${JSON.stringify(result.lines)}, the generator wrote ${JSON.stringify(log.lines)}`);
  }
}

function summary(runs: ChildMeasure[]): WaySummary {
  return {
    wallSeconds: median(runs.map((r) => r.wallSeconds)),
    cpuSeconds: median(runs.map((r) => r.cpuSeconds)),
    maxRssBytes: Math.max(...runs.map((r) => r.maxRssBytes)),
    runs,
  };
}

export async function runCountFloorBench(
  options: { rounds: number; mebibytes: number; memoryMebibytes: number },
  progress: (line: string) => void,
): Promise<CountFloorResult> {
  const log = await generatedLog(options.mebibytes, BENCH_CACHE_DIR, progress);
  const big = options.memoryMebibytes === options.mebibytes ? log : await generatedLog(options.memoryMebibytes, BENCH_CACHE_DIR, progress);
  const child = await bundledChild(progress);
  progress(
    `count: ${(log.uncompressedBytes / 1e6).toFixed(0)} MB uncompressed (${(log.compressedBytes / 1e6).toFixed(1)} MB gzip), ${log.lines.read} lines; ways ${WAYS.join(', ')}; floor = ${FLOOR_READ_BYTES / 1024} KiB reads into gunzip chunks of ${FLOOR_CHUNK_BYTES / 1024} KiB`,
  );
  // Warm-up: the file in the page cache and each way's code read once.
  for (const way of WAYS) check(log, await measure(child, way, log.path));

  const results = await rotate({
    rounds: options.rounds,
    ways: WAYS,
    run: async (way) => {
      const result = await measure(child, way, log.path);
      check(log, result);
      return result;
    },
    onRound: (round, r) =>
      progress(
        `count round ${round + 1}/${options.rounds}: ${WAYS.map((way) => `${way} ${r[way].wallSeconds.toFixed(2)} s wall ${r[way].cpuSeconds.toFixed(2)} s CPU ${(r[way].maxRssBytes / 2 ** 20).toFixed(0)} MiB`).join(', ')}`,
      ),
  });
  const ways = Object.fromEntries(WAYS.map((way) => [way, summary(results[way])])) as Record<Way, WaySummary>;
  const answers = new Set([...results.tally, ...results.duckdb].map((r) => r.answer));

  const memoryRun = await measure(child, 'tally', big.path);
  check(big, memoryRun);
  const bigFloor = await measure(child, 'floor', big.path);
  check(big, bigFloor);
  progress(`count: ${(big.uncompressedBytes / 2 ** 30).toFixed(2)} GiB log, peak RSS ${(memoryRun.maxRssBytes / 2 ** 20).toFixed(0)} MiB`);

  const cpuSecondsPerTb = (ways.tally.cpuSeconds / log.compressedBytes) * 1e12;
  const gbSeconds = (seconds: number) => seconds * (LAMBDA_MEMORY_MB / 1024);
  return {
    log,
    rounds: options.rounds,
    ways,
    roundRatios: results.tally.map((t, i) => ({
      cpuToFloor: t.cpuSeconds / results.floor[i]!.cpuSeconds,
      wallToFloor: t.wallSeconds / results.floor[i]!.wallSeconds,
      wallToDuckdb: t.wallSeconds / results.duckdb[i]!.wallSeconds,
    })),
    sameAnswer: answers.size === 1,
    accountDays: results.tally[0]?.rows ?? 0,
    memory: {
      log: big,
      maxRssBytes: memoryRun.maxRssBytes,
      cpuSeconds: memoryRun.cpuSeconds,
      wallSeconds: memoryRun.wallSeconds,
      floorCpuSeconds: bigFloor.cpuSeconds,
      floorWallSeconds: bigFloor.wallSeconds,
    },
    lambda: {
      usdPerGbSecond: LAMBDA_X86_USD_PER_GB_SECOND,
      memoryMb: LAMBDA_MEMORY_MB,
      cpuSecondsPerTb,
      usdPerTb: gbSeconds(cpuSecondsPerTb) * LAMBDA_X86_USD_PER_GB_SECOND,
      floorUsdPerTb: gbSeconds((ways.floor.cpuSeconds / log.compressedBytes) * 1e12) * LAMBDA_X86_USD_PER_GB_SECOND,
    },
  };
}
