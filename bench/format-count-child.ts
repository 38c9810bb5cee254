/**
 * One measured run of one way of answering "requests and bytes per account and day"
 * (host-label accounts) on one log file of any format, in a process of its own, so that
 * its CPU time (every thread) and peak RSS are its alone. Started by format-count.ts as
 * `node CHILD WAY FILE`; prints one JSON line. The clock starts after the modules load.
 *
 * - `tally`: what `tally count --json FILE` runs.
 * - `parse`: the file read and gunzipped into memory and counted untimed until the code
 *   is warm ({@link PARSE_WARM_UPS} counts), then {@link PARSE_TIMED} more counts, each
 *   timed, the median reported: the parser's own CPU per line, as
 *   bench/format-throughput.ts measures it.
 * - `floor`: gunzip alone, tuned (text formats).
 * - `duckdb`: DuckDB on one thread (`SET threads = 1`), the same question in SQL:
 *   `read_csv`, `read_json` or `read_parquet` by the file's name.
 */
import { readFileSync } from 'node:fs';
import { constants, gunzipSync } from 'node:zlib';
import { digest, duckdbCount, gunzipFloor, hostLabelQuery, printMeasure, runChild, tallyCount, type Answer, type MeasuredLines } from './child-measure';

/** Counts untimed before the timed ones of the `parse` way. */
export const PARSE_WARM_UPS = 5;
/**
 * Counts timed by the `parse` way, after the warm-ups; their median is its figure. One was
 * not enough: JSON's CPU per count still falls for a few counts after the fifth (per count,
 * one process: 190 212 163 149 145 143 138 132 135 136 132 132 ms), legacy's sooner.
 */
export const PARSE_TIMED = 5;

export const FORMAT_WAYS = ['tally', 'parse', 'floor', 'duckdb'] as const;
export type FormatWay = (typeof FORMAT_WAYS)[number];

export interface FormatMeasure extends Answer {
  readonly way: FormatWay;
  readonly wallSeconds: number;
  readonly cpuSeconds: number;
  readonly maxRssBytes: number;
  readonly lines?: MeasuredLines;
}

/**
 * The text in 256 KiB slices. A function of the module, as production's sources are: a
 * generator closure made per count has a hidden class of its own and would make V8 throw
 * the counting loop's optimized code away on every count, which no ingest does.
 */
async function* slices(text: Uint8Array): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < text.length; at += 256 * 1024) yield text.subarray(at, at + 256 * 1024);
}

async function parse(path: string) {
  const { countLogContent } = await import('../src/domain/logs/log-formats');
  const { parquetContent } = await import('../src/adapters/logs/parquet-log');
  const { parseResolverSpec } = await import('../src/domain/logs/account-resolver');
  const stored = readFileSync(path);
  const parquet = path.endsWith('.parquet');
  const text = parquet ? stored : gunzipSync(stored);
  const count = async () => {
    const content = parquet
      ? parquetContent({ byteLength: text.length, slice: async (start, end) => text.buffer.slice(text.byteOffset + start, text.byteOffset + (end ?? text.length)) }, path)
      : {
          kind: 'text' as const,
          text: slices(text),
        };
    const result = await countLogContent(content, { resolver: parseResolverSpec('host-label'), metricRules: [], objectKey: path }, path);
    const rows = result.tally.usage().map((row) => [row.account, row.day, row.metrics.requests ?? 0, row.metrics.bytes ?? 0] as const);
    return { answer: digest(rows), rows: rows.length, lines: result.lines };
  };
  // Warm, as bench/format-throughput.ts measures it. One count is not enough: V8 still
  // optimizes the counter's code on its other threads during the second (the Parquet
  // reader's most: 0.55, 0.33, 0.17, 0.13, 0.12 s of CPU for counts one to five, then flat).
  for (let i = 0; i < PARSE_WARM_UPS; i++) await count();
  return async (): Promise<Answer> => {
    const runs: { cpuSeconds: number; wallSeconds: number }[] = [];
    let last: Answer | undefined;
    for (let i = 0; i < PARSE_TIMED; i++) {
      const cpuBefore = process.cpuUsage();
      const started = process.hrtime.bigint();
      last = await count();
      const cpu = process.cpuUsage(cpuBefore);
      runs.push({ cpuSeconds: (cpu.user + cpu.system) / 1e6, wallSeconds: Number(process.hrtime.bigint() - started) / 1e9 });
    }
    const median = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1]!;
    return { ...last!, timed: { cpuSeconds: median(runs.map((r) => r.cpuSeconds)), wallSeconds: median(runs.map((r) => r.wallSeconds)) } };
  };
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
    // A row of no time is rejected, as Tally counts it malformed (and as read_csv's TIME
    // column does for the text formats). try_cast is DuckDB's fastest check found: on the
    // typed 900,000-row shape, median CPU of 7 alternated queries (machine shared): no
    // check 44.1 ms, try_cast 50.9, regexp_full_match 52.0, SIMILAR TO 54.6.
    source = `SELECT "date"::DATE AS day, sc_bytes::BIGINT AS bytes, x_host_header AS xhost, cs_Host AS cshost FROM read_parquet(${file}) WHERE try_cast("time" AS TIME) IS NOT NULL`;
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
  // Parquet against DuckDB's fastest form found (issue 34); the text formats as item 1 asks.
  return hostLabelQuery(source, { grouped: path.endsWith('.parquet') });
}

async function main(): Promise<void> {
  const [way, path] = process.argv.slice(2) as [FormatWay, string];
  const work =
    way === 'floor' ? () => gunzipFloor(path)
    : way === 'tally' ? await tallyCount(path)
    : way === 'parse' ? await parse(path)
    : way === 'duckdb' ? await duckdbCount(formatQuery(path))
    : undefined;
  if (work === undefined || path === undefined) throw new Error(`usage: format-count-child.ts ${FORMAT_WAYS.join('|')} FILE`);
  await printMeasure(way, work);
}

if (require.main === module) runChild(main);
