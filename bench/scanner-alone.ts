/**
 * The line scanner alone (`LineScanner.scan`: the WebAssembly SIMD loop and its `$check`),
 * on item 1's 340 MB legacy log: the text is decompressed once, copied into the scanner's
 * memory in 256 KiB slices as the counter copies it, and only the `scan` calls are timed.
 * What the counter does between calls is done here too, untimed and in brief: new keys
 * are added to the key table, and the day the scanner compares dates with follows the
 * last good recorded line. Prints the median of the passes after the first two.
 *
 * `npx tsx bench/scanner-alone.ts [--passes N] [--file LOG.gz]`. To weigh a change to
 * `src/domain/logs/line-scan.wat`: `node scripts/build-wasm.mjs`, then run this before and
 * after in separate processes, alternately, several times (docs/benchmarks.md, "What
 * 1.3× would take", has the figures this gave).
 */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { LineScanner } from '../src/domain/logs/line-scanner';
import { CLOUDFRONT_FIELDS } from '../src/local/demo/log-generator';
import { generatedLog } from './cloudfront-log-file';
import { median } from './stats';

const FIELDS: readonly string[] = CLOUDFRONT_FIELDS;
const SLICE_BYTES = 256 * 1024;
/** Record words (line-scan.wat): fields, checks, key, where a new key starts and ends, slot 1 (the date). */
const FIELDS_WORD = 2;
const CHECKS_WORD = 3;
const KEY_WORD = 6;
const KEY_START_WORD = 7;
const KEY_END_WORD = 8;
const DATE_START_WORD = 10;

interface Pass {
  readonly ms: number;
  readonly summed: number;
  readonly recorded: number;
}

function scanPasses(text: Buffer, passes: number): Pass[] {
  const body = text.subarray(text.indexOf('\n2') + 1);
  const scanner = new LineScanner(1024 * 1024);
  const column = (name: string) => FIELDS.indexOf(name);
  scanner.setLayout({
    columns: [column('date'), column('time'), column('sc-bytes'), column('cs(Host)'), column('x-host-header')],
    width: FIELDS.length,
    date: column('date'),
    time: column('time'),
    bytes: column('sc-bytes'),
    key: { kind: 'label', columns: [column('x-host-header'), column('cs(Host)')] },
  });
  scanner.setSumming(true, 1 << 20);
  const { words, bytes, textAt } = scanner;
  const dayAt = (at: number) => String.fromCharCode(...bytes.subarray(at, at + 10));
  let day = body.subarray(0, 10).toString('latin1');
  scanner.setDay(day);
  let scanDay = day;
  let keys = 0;
  const results: Pass[] = [];
  for (let pass = 0; pass < passes; pass++) {
    let ms = 0;
    let recorded = 0;
    for (let offset = 0; offset < body.length; ) {
      const count = Math.min(SLICE_BYTES, body.length - offset);
      bytes.set(body.subarray(offset, offset + count), textAt);
      let last = textAt + count - 1;
      while (bytes[last] !== 10) last--;
      offset += last + 1 - textAt;
      for (let pos = textAt; pos <= last; ) {
        const started = performance.now();
        const next = scanner.scan(pos, last + 1);
        ms += performance.now() - started;
        const records = words[0]!;
        recorded += records;
        for (let r = 0, record = scanner.firstRecord; r < records; r++, record += scanner.stride) {
          if (words[record + KEY_WORD] === -1) keys = Math.max(keys, scanner.keyId(words[record + KEY_START_WORD]!, words[record + KEY_END_WORD]!, keys) + 1);
          if ((words[record + CHECKS_WORD]! & 6) === 6 && words[record + FIELDS_WORD]! >= FIELDS.length) day = dayAt(words[record + DATE_START_WORD]!);
        }
        if (day !== scanDay) {
          scanner.setDay(day);
          scanDay = day;
        }
        // A '#' line stops the scanner: passed over here (the generated log has one header).
        pos = next === pos ? bytes.indexOf(10, pos) + 1 : next;
      }
    }
    let summed = 0;
    for (let key = 0; key < keys; key++) summed += scanner.summedLines(key);
    scanner.clearSums(keys);
    results.push({ ms, summed, recorded });
  }
  return results;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const option = (name: string) => {
    const at = args.indexOf(name);
    return at === -1 ? undefined : args[at + 1];
  };
  const passes = Math.max(3, Number(option('--passes') ?? 6));
  const file = option('--file') ?? (await generatedLog(320, undefined, (line) => console.error(line))).path;
  const results = scanPasses(gunzipSync(readFileSync(file)), passes);
  const timed = results.slice(2);
  const first = results[0]!;
  console.log(
    JSON.stringify({ file, medianMs: Number(median(timed.map((pass) => pass.ms)).toFixed(1)), passesMs: timed.map((pass) => Number(pass.ms.toFixed(1))), summed: first.summed, recorded: first.recorded }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
