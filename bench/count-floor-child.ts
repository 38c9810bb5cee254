/**
 * One measured run of one way of answering "requests and bytes per account and day"
 * on one gzipped log, in a process of its own so that its CPU time (every thread:
 * zlib's threadpool, DuckDB's) and its peak RSS are its alone. Started by
 * count-floor.ts as `node --import tsx bench/count-floor-child.ts WAY FILE`; prints
 * one JSON line. The clock starts after the modules are loaded: what is timed is the
 * work, not Node's start.
 *
 * - `tally`: what `tally count --json FILE` runs (`countFiles`, host-label resolver).
 * - `floor`: the tuned gunzip, 1 MiB reads into `createGunzip({ chunkSize: 1 MiB })`,
 *   bytes counted and dropped: no program that reads the whole log can do less.
 * - `duckdb`: DuckDB on one thread, `read_csv` of the same file and the same question.
 */
import { CLOUDFRONT_FIELDS } from '../src/local/demo/log-generator';
import { duckdbCount, FLOOR_CHUNK_BYTES, FLOOR_READ_BYTES, gunzipFloor, hostLabelQuery, printMeasure, runChild, tallyCount, type Answer, type MeasuredLines } from './child-measure';

export { FLOOR_CHUNK_BYTES, FLOOR_READ_BYTES };
export const WAYS = ['tally', 'floor', 'duckdb'] as const;
export type Way = (typeof WAYS)[number];

export interface ChildMeasure extends Answer {
  readonly way: Way;
  readonly wallSeconds: number;
  readonly cpuSeconds: number;
  readonly maxRssBytes: number;
  readonly lines?: MeasuredLines;
}

const TYPED: Record<string, string> = { date: 'DATE', time: 'TIME', 'sc-bytes': 'BIGINT' };

/**
 * Tally's question in SQL: a line's account is the first DNS label of x-host-header
 * (else cs(Host); `-` and empty count as missing), lowercased, when it is a valid
 * account id and the host is no IP literal; otherwise `unattributed`. Lines whose
 * date, time or sc-bytes do not parse, or with too few fields, are rejected
 * (`ignore_errors`), as Tally counts them malformed.
 */
export function duckdbQuery(path: string): string {
  const columns = CLOUDFRONT_FIELDS.map((name) => `'${name}': '${TYPED[name] ?? 'VARCHAR'}'`).join(', ');
  const reader = `read_csv('${path.replace(/'/g, "''")}', delim = '\\t', header = false, comment = '#', quote = '', escape = '', auto_detect = false, ignore_errors = true, columns = {${columns}})`;
  return hostLabelQuery(`SELECT "date" AS day, "sc-bytes" AS bytes, "x-host-header" AS xhost, "cs(Host)" AS cshost FROM ${reader}`);
}

async function main(): Promise<void> {
  const [way, path] = process.argv.slice(2) as [Way, string];
  const work =
    way === 'floor' ? () => gunzipFloor(path) : way === 'tally' ? await tallyCount(path) : way === 'duckdb' ? await duckdbCount(duckdbQuery(path)) : undefined;
  if (work === undefined || path === undefined) throw new Error(`usage: count-floor-child.ts ${WAYS.join('|')} FILE`);
  await printMeasure(way, work);
}

if (require.main === module) runChild(main);
