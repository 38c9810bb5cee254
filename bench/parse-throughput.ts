/**
 * Item 1: parse + aggregate a generated CloudFront log (>= 100 MiB uncompressed, gzip
 * on disk) versus gunzip alone of the same file, alternating the two in one process.
 */
import { createReadStream, createWriteStream, existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import { parseResolverSpec } from '../src/domain/account-resolver';
import { countLogStream, type CountOptions } from '../src/domain/log-counter';
import { validateMetricRules } from '../src/domain/metric-rules';
import { addDays } from '../src/domain/days';
import { emptyExpected, generateLog, mergeExpected, type ExpectedCount } from '../src/local/log-generator';
import { alternate, median, type Comparison } from './stats';

/** Read size for both sides: the same chunking into gunzip. */
export const READ_CHUNK_BYTES = 64 * 1024;
const TARGET_UNCOMPRESSED_BYTES = 100 * 1024 * 1024;
const LINES_PER_PART = 20_000;
const FORMAT_VERSION = 1;

export interface GeneratedLog {
  readonly path: string;
  readonly compressedBytes: number;
  readonly uncompressedBytes: number;
  readonly lines: ExpectedCount['lines'];
}

const ACCOUNTS = Array.from({ length: 24 }, (_, i) => ({ id: `tenant${String(i).padStart(2, '0')}`, weight: 1 + (i % 5) * 3 }));

/**
 * Writes (once; later runs reuse it) a realistic 33-field CloudFront log of at least
 * 100 MiB: 24 accounts, 2% unattributed, 0.2% malformed, a few lines of the
 * previous day, URL-encoded user agents. Parts of 20,000 lines, one header.
 */
export async function generatedLog(cacheDir = join(tmpdir(), 'tally-bench')): Promise<GeneratedLog> {
  mkdirSync(cacheDir, { recursive: true });
  const path = join(cacheDir, `cloudfront-100MiB-v${FORMAT_VERSION}.log.gz`);
  const meta = `${path}.json`;
  if (existsSync(path) && existsSync(meta)) {
    const { readFileSync } = await import('node:fs');
    return JSON.parse(readFileSync(meta, 'utf8')) as GeneratedLog;
  }
  const partial = `${path}.partial`;
  const gzip = createGzip();
  const out = createWriteStream(partial);
  gzip.pipe(out);
  const expected = emptyExpected();
  let uncompressed = 0;
  for (let part = 0; uncompressed < TARGET_UNCOMPRESSED_BYTES; part++) {
    const { text, expected: partExpected } = generateLog({
      seed: 1000 + part,
      day: addDays('2026-11-01', Math.floor(part / 24)),
      hour: part % 24,
      distribution: 'E2BENCHDIST',
      accounts: ACCOUNTS,
      lines: LINES_PER_PART,
      unattributedRate: 0.02,
      malformedRate: 0.002,
      previousDayRate: 0.01,
    });
    // One header for the whole file, as CloudFront writes it.
    const body = part === 0 ? text : text.slice(text.indexOf('\n', text.indexOf('\n') + 1) + 1);
    uncompressed += Buffer.byteLength(body);
    mergeExpected(expected, partExpected);
    if (!gzip.write(body)) await new Promise((resolve) => gzip.once('drain', resolve));
  }
  gzip.end();
  await finished(out);
  renameSync(partial, path);
  const log: GeneratedLog = { path, compressedBytes: statSync(path).size, uncompressedBytes: uncompressed, lines: expected.lines };
  const { writeFileSync } = await import('node:fs');
  writeFileSync(meta, JSON.stringify(log));
  return log;
}

/**
 * Plain gunzip of the file, streamed with the same chunking and plumbing as
 * `countLogStream` (64 KiB reads written into zlib with back-pressure, its output read
 * as it comes): the only difference left is the parsing. Returns the bytes out.
 */
export async function gunzipOnly(path: string): Promise<number> {
  const gunzip = createGunzip();
  const source = createReadStream(path, { highWaterMark: READ_CHUNK_BYTES });
  const feeding = (async () => {
    for await (const chunk of source) {
      if (!gunzip.write(chunk as Buffer)) await once(gunzip, 'drain');
    }
    gunzip.end();
  })();
  let bytes = 0;
  for await (const chunk of gunzip) bytes += (chunk as Buffer).length;
  await feeding;
  return bytes;
}

export const PARSE_OPTIONS: CountOptions = {
  resolver: parseResolverSpec('host-label'),
  metricRules: validateMetricRules([{ name: 'authorization_requests', path: '/api/authorization/*' }]),
  objectKey: 'cloudfront/E2BENCHDIST.2026-11-01-00.bench.gz',
};

/** Tally's parser on the same file: gunzip + split + parse + aggregate per account-day. */
export async function parseAndAggregate(path: string) {
  return countLogStream(createReadStream(path, { highWaterMark: READ_CHUNK_BYTES }), PARSE_OPTIONS, path);
}

export interface ParseResult {
  readonly log: GeneratedLog;
  readonly comparison: Comparison;
  readonly parseSeconds: number;
  readonly gunzipSeconds: number;
  readonly linesPerSecond: number;
  readonly mbPerSecond: number;
  readonly gunzipMbPerSecond: number;
  readonly accountDays: number;
}

/** Alternates gunzip-only and parse+aggregate `rounds` times; checks every parse counted every line. */
export async function runParseBench(rounds: number, progress: (line: string) => void): Promise<ParseResult> {
  const log = await generatedLog();
  progress(`parse: ${(log.uncompressedBytes / 1e6).toFixed(1)} MB uncompressed (${(log.compressedBytes / 1e6).toFixed(1)} MB gzip), ${log.lines.read} lines: ${log.path}`);
  let accountDays = 0;
  const comparison = await alternate({
    rounds,
    warmup: true,
    candidate: async () => {
      const started = process.hrtime.bigint();
      const count = await parseAndAggregate(log.path);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      if (count.lines.read !== log.lines.read || count.lines.malformed !== log.lines.malformed) {
        throw new Error(`parser counted ${JSON.stringify(count.lines)}, the generator wrote ${JSON.stringify(log.lines)}`);
      }
      accountDays = count.tally.size;
      return seconds;
    },
    baseline: async () => {
      const started = process.hrtime.bigint();
      const bytes = await gunzipOnly(log.path);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      if (bytes !== log.uncompressedBytes) throw new Error(`gunzip gave ${bytes} bytes, expected ${log.uncompressedBytes}`);
      return seconds;
    },
    onRound: (round, candidate, baseline) =>
      progress(`parse round ${round + 1}/${rounds}: parse+aggregate ${candidate.toFixed(3)} s, gunzip ${baseline.toFixed(3)} s`),
  });
  const parseSeconds = median(comparison.candidate);
  const gunzipSeconds = median(comparison.baseline);
  return {
    log,
    comparison,
    parseSeconds,
    gunzipSeconds,
    linesPerSecond: log.lines.read / parseSeconds,
    mbPerSecond: log.uncompressedBytes / 1e6 / parseSeconds,
    gunzipMbPerSecond: log.uncompressedBytes / 1e6 / gunzipSeconds,
    accountDays,
  };
}
