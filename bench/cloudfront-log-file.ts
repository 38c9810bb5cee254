/**
 * The generated CloudFront logs the counting benchmarks read: written once into a
 * temporary folder (never into git) and reused by later runs.
 */
import { createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { addDays } from '../src/domain/days';
import { emptyExpected, generateLog, mergeExpected, type ExpectedCount } from '../src/local/demo/log-generator';

export interface GeneratedLog {
  readonly path: string;
  readonly compressedBytes: number;
  readonly uncompressedBytes: number;
  readonly lines: ExpectedCount['lines'];
}

const LINES_PER_PART = 20_000;
const FORMAT_VERSION = 1;
const ACCOUNTS = Array.from({ length: 24 }, (_, i) => ({ id: `tenant${String(i).padStart(2, '0')}`, weight: 1 + (i % 5) * 3 }));

export const BENCH_CACHE_DIR = join(tmpdir(), 'tally-bench');

/** Where a log of about `mebibytes` MiB lives in the cache. */
export function logPath(mebibytes: number, cacheDir = BENCH_CACHE_DIR): string {
  return join(cacheDir, `cloudfront-${mebibytes}MiB-v${FORMAT_VERSION}.log.gz`);
}

/**
 * Writes (once; later runs reuse it) a realistic 33-field CloudFront log of at least
 * `mebibytes` MiB uncompressed: 24 accounts, 2% unattributed, 0.2% malformed, a few
 * lines of the previous day, URL-encoded user agents. Parts of 20,000 lines (one hour
 * each, days in order), one header, gzip at the default level as CloudFront writes it.
 */
export async function generatedLog(mebibytes: number, cacheDir = BENCH_CACHE_DIR, progress?: (line: string) => void): Promise<GeneratedLog> {
  mkdirSync(cacheDir, { recursive: true });
  const path = logPath(mebibytes, cacheDir);
  const meta = `${path}.json`;
  if (existsSync(path) && existsSync(meta)) return JSON.parse(readFileSync(meta, 'utf8')) as GeneratedLog;
  progress?.(`writing a ${mebibytes} MiB CloudFront log (once) to ${path}`);
  const partial = `${path}.partial`;
  const gzip = createGzip();
  const out = createWriteStream(partial);
  gzip.pipe(out);
  const expected = emptyExpected();
  let uncompressed = 0;
  for (let part = 0; uncompressed < mebibytes * 1024 * 1024; part++) {
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
  writeFileSync(meta, JSON.stringify(log));
  return log;
}
