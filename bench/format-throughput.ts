/**
 * Parse throughput of every text format CloudFront writes, next to the legacy log: the
 * same traffic rendered in each format (test/support/log-formats.ts), counted from
 * memory (no gzip, so the figure is the parser's own), in rotating order, several
 * rounds, medians of CPU time. `npx tsx bench/format-throughput.ts [--requests N] [--rounds R]`.
 */
import { parquetContent } from '../src/adapters/logs/parquet-log';
import { parseLogFields } from '../src/domain/logs/log-fields';
import type { LogContent } from '../src/domain/logs/log-records';
import { parquetFromJsonLines } from '../test/support/parquet-logs';
import { countLogContent, type FormatOptions } from '../src/domain/logs/log-formats';
import { jsonLog, legacyLog, PLAIN_FIELDS, plainLog, REALTIME_FIELDS_SETTING, realtimeLog, traffic, w3cLog } from '../test/support/log-formats';
import { median } from './stats';

const args = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
  const at = args.indexOf(name);
  return at === -1 ? fallback : Number(args[at + 1]);
};
const requests = traffic(flag('--requests', 400_000), ['acme', 'globex', 'initech', 'umbrella', 'hooli']);
const rounds = flag('--rounds', 5);

const base: FormatOptions = { resolver: { kind: 'host-label' }, metricRules: [], objectKey: 'bench' };
const FORMATS: { name: string; text: Buffer; options: FormatOptions; parquet?: boolean }[] = [
  { name: 'legacy standard log (tab, #Fields)', text: Buffer.from(legacyLog(requests)), options: base },
  { name: 'v2 w3c, day from timestamp(ms)', text: Buffer.from(w3cLog(requests)), options: base },
  { name: 'v2 JSON lines (and Firehose JSON)', text: Buffer.from(jsonLog(requests, false)), options: base },
  { name: 'v2 plain, | delimiter', text: Buffer.from(plainLog(requests, '|')), options: { ...base, format: { headerless: parseLogFields(PLAIN_FIELDS), delimiter: '|' } } },
  { name: 'v2 plain, tab delimiter', text: Buffer.from(plainLog(requests, '\t')), options: { ...base, format: { headerless: parseLogFields(PLAIN_FIELDS) } } },
  { name: 'real-time records (TSV)', text: Buffer.from(realtimeLog(requests)), options: { ...base, format: { headerless: parseLogFields(REALTIME_FIELDS_SETTING) } } },
];

async function* slices(text: Buffer): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < text.length; at += 256 * 1024) yield text.subarray(at, at + 256 * 1024);
}

function contentOf(format: (typeof FORMATS)[number]): LogContent {
  if (format.parquet !== true) return { kind: 'text', text: slices(format.text) };
  const bytes = format.text;
  return parquetContent({ byteLength: bytes.length, slice: async (start, end) => new Uint8Array(bytes.subarray(start, end ?? bytes.length)).buffer }, 'bench');
}

async function cpuSeconds(format: (typeof FORMATS)[number]): Promise<number> {
  const start = process.cpuUsage();
  const result = await countLogContent(contentOf(format), format.options, 'bench');
  const used = process.cpuUsage(start);
  if (result.lines.read !== requests.length) throw new Error(`${format.name}: read ${result.lines.read} of ${requests.length}`);
  return (used.user + used.system) / 1e6;
}

async function main(): Promise<void> {
  // v2 Parquet of the same requests, written by DuckDB (Snappy, its default row groups).
  FORMATS.push({ name: 'v2 Parquet (Snappy; MB is the file)', text: await parquetFromJsonLines(jsonLog(requests), 'snappy', 122_880), options: base, parquet: true });
  const times = FORMATS.map(() => [] as number[]);
  for (let round = 0; round < rounds + 1; round++) {
    // Rotate the order each round; the first round warms up and is not recorded.
    for (let k = 0; k < FORMATS.length; k++) {
      const i = (k + round) % FORMATS.length;
      const seconds = await cpuSeconds(FORMATS[i]!);
      if (round > 0) times[i]!.push(seconds);
    }
  }
  const legacy = median(times[0]!);
  console.log(`${requests.length} requests, ${rounds} rounds, medians of CPU time (Node ${process.version})\n`);
  console.log('| format | MB | CPU s | MB/s | lines/s | CPU vs legacy |\n|---|---|---|---|---|---|');
  FORMATS.forEach((format, i) => {
    const seconds = median(times[i]!);
    const mb = format.text.length / 1e6;
    console.log(`| ${format.name} | ${mb.toFixed(0)} | ${seconds.toFixed(3)} | ${(mb / seconds).toFixed(0)} | ${Math.round(requests.length / seconds / 1000)}k | ${(seconds / legacy).toFixed(2)}x |`);
  });
}

void main();
