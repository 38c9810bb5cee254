import fc from 'fast-check';
import { parseResolverSpec } from '../../src/domain/logs/account-resolver';
import { countLogContent, type FormatCount, type FormatOptions } from '../../src/domain/logs/log-formats';
import { validateMetricRules } from '../../src/domain/logs/metric-rules';

/**
 * The JSON scanner (json-scan.wat) reads the lines that fit the key template it learnt
 * and hands every other line to the general reader in its place. Whatever the lines and
 * however the text is cut into chunks, the count must be exactly the general reader's
 * alone (`scanner: 'js'` turns the scanner off): lines, usage and the malformed samples
 * with their line numbers.
 */
const KEYS = ['date', 'time', 'sc-bytes', 'cs-method', 'cs(Host)', 'cs-uri-stem', 'sc-status', 'cs(Cookie)', 'x-host-header', 'x-edge-response-result-type', 'x-custom-field-of-26-chars', 'DistributionId'];
const VALUES: Record<string, string[]> = {
  date: ['2026-11-21', '2026-11-22', '2026-02-30', '', '-', '2026-11-20'],
  time: ['12:00:00', '23:59:60', '24:00:00', ''],
  // Counts up to 15 digits; sums stay below 2^53, under which float64 sums are exact in
  // any order (the scanner sums each part of its text apart; the general reader, line by line).
  'sc-bytes': ['0', '1234', '-', '', '12a', '999999999999', '000000000000017'],
  'cs-method': ['GET', 'POST'],
  'cs(Host)': ['d1.cloudfront.net', '-', ''],
  'cs-uri-stem': ['/api/authorization/check', '/v1/items', '/caf\u00e9/\u00fc', '/a%09b'],
  'sc-status': ['200', '503'],
  'x-host-header': ['acme.example.com', 'Globex.example.com', '10.0.0.1', '-', '', 'a-very-long-host-label-that-goes-on-and-on-past-sixteen-bytes.example.com', 'd111111abcdef8.cloudfront.net', 'acme.CloudFront.net'],
  // Glues (`","key":"`) of exactly one and two 16-byte blocks, and longer than two.
  'cs(Cookie)': ['-', 'a=b'],
  'x-edge-response-result-type': ['Hit', 'Miss', ''],
  'x-custom-field-of-26-chars': ['x', ''],
  DistributionId: ['E3TEST'],
};

/** How a line is written: CloudFront's compact form, or one of the forms the general reader must take. */
const STYLES = ['compact', 'compact', 'compact', 'crlf', 'spaced', 'escaped', 'tab-in-value', 'reordered', 'other-spelling', 'missing-key', 'extra-key', 'blank', 'not-json', 'array', 'number-value', 'duplicate-key', 'trailing-space', 'long'] as const;
type Style = (typeof STYLES)[number];

function render(style: Style, picks: readonly number[]): string {
  const entries: [string, string][] = KEYS.map((key, i) => [key, VALUES[key]![picks[i]! % VALUES[key]!.length]!]);
  const compact = (list: [string, string][]) => `{${list.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`;
  switch (style) {
    case 'compact':
      return compact(entries);
    case 'crlf':
      return `${compact(entries)}\r`;
    case 'spaced':
      return JSON.stringify(Object.fromEntries(entries), null, 1).replace(/\n/g, ' ');
    case 'escaped':
      return compact(entries).replace('"x-host-header":"', '"x-host-header":"\\u0061');
    case 'tab-in-value':
      return compact(entries).replace('"cs-uri-stem":"', '"cs-uri-stem":"\t');
    case 'reordered':
      return compact([...entries.slice(1), entries[0]!]);
    case 'other-spelling':
      return compact(entries.map(([k, v]) => [k === 'DistributionId' ? 'distributionid' : k, v]));
    case 'missing-key':
      return compact(entries.filter(([k]) => k !== 'cs(Host)'));
    case 'extra-key':
      return compact([...entries, ['x-edge-location', 'FRA56-C1']]);
    case 'blank':
      return '   ';
    case 'not-json':
      return '{"date":"2026-11-21","time":';
    case 'array':
      return '["not", "an", "object"]';
    case 'number-value':
      return compact(entries).replace(/"sc-bytes":"([^"]*)"/, '"sc-bytes":17');
    case 'duplicate-key':
      return compact([...entries, ['x-host-header', 'globex.example.com']]);
    case 'trailing-space':
      return `${compact(entries)} `;
    case 'long':
      return compact(entries.map(([k, v]) => [k, k === 'cs-uri-stem' ? `/${'x'.repeat(300)}` : v]));
  }
}

const line = fc.tuple(fc.constantFrom(...STYLES), fc.array(fc.nat(), { minLength: KEYS.length, maxLength: KEYS.length }));

async function* chunked(data: Buffer, sizes: readonly number[]): AsyncGenerator<Uint8Array> {
  let at = 0;
  for (let i = 0; at < data.length; i++) {
    const size = sizes[i % sizes.length]!;
    yield data.subarray(at, at + size);
    at += size;
  }
}

async function count(text: Buffer, sizes: readonly number[], options: FormatOptions): Promise<FormatCount | Error> {
  return countLogContent({ kind: 'text', text: chunked(text, sizes) }, options, 'k').catch((error: Error) => error);
}

const summary = (result: FormatCount | Error) =>
  result instanceof Error ? result.message : { lines: result.lines, usage: result.tally.usage(), samples: result.malformedSamples, format: result.format };

describe('the JSON scanner', () => {
  it('counts any mix of lines, cut anywhere, exactly as the general JSON reader does', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(line, { minLength: 1, maxLength: 40 }),
        fc.array(fc.integer({ min: 1, max: 400 }), { minLength: 1, maxLength: 5 }),
        fc.boolean(),
        fc.constantFrom(64 * 1024, 200),
        async (lines, sizes, rules, maxLineBytes) => {
          const text = Buffer.from(lines.map(([style, picks]) => `${render(style, picks)}\n`).join(''));
          const options: FormatOptions = {
            resolver: parseResolverSpec('host-label'),
            metricRules: rules ? validateMetricRules([{ name: 'authorization_requests', path: '/api/authorization/*' }]) : [],
            objectKey: 'k',
            maxLineBytes,
          };

          const scanned = await count(text, sizes, options);
          const general = await count(text, sizes, { ...options, scanner: 'js' });

          expect(summary(scanned)).toEqual(summary(general));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('reads the two halves of a loaded text at once exactly as the general reader reads them in order', async () => {
    // With no metric rules the scanner reads a line of each half of what it is given side
    // by side (line-scan.wat); a line that does not fit in either half, records filling
    // up and the halves' sums and records joined in order must all come out as before.
    const mostlyCompact = fc.oneof({ arbitrary: fc.constant<Style>('compact'), weight: 30 }, { arbitrary: fc.constantFrom(...STYLES), weight: 1 });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(mostlyCompact, fc.array(fc.nat(), { minLength: KEYS.length, maxLength: KEYS.length })), { minLength: 10, maxLength: 400 }),
        fc.array(fc.integer({ min: 1024, max: 70_000 }), { minLength: 1, maxLength: 4 }),
        fc.constantFrom(64 * 1024, 300),
        async (lines, sizes, maxLineBytes) => {
          const text = Buffer.from(lines.map(([style, picks]) => `${render(style, picks)}\n`).join(''));
          const options: FormatOptions = { resolver: parseResolverSpec('host-label'), metricRules: [], objectKey: 'k', maxLineBytes };

          const scanned = await count(text, sizes, options);
          const general = await count(text, sizes, { ...options, scanner: 'js' });

          expect(summary(scanned)).toEqual(summary(general));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('keeps the line number of a malformed line in either half', async () => {
    // Good lines of one account are summed in the scanner; the one with a bad date is
    // recorded, and its sample names its line: the lines summed before it in both halves count.
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 20, max: 300 }), fc.nat(), fc.integer({ min: 2048, max: 70_000 }), async (total, at, size) => {
        const bad = at % total;
        const text = Buffer.from(
          Array.from({ length: total }, (_, i) => `${render('compact', KEYS.map((key) => (key === 'date' && i === bad ? 2 : 0)))}\n`).join(''),
        );
        const options: FormatOptions = { resolver: parseResolverSpec('host-label'), metricRules: [], objectKey: 'k' };

        const scanned = await count(text, [size], options);
        const general = await count(text, [size], { ...options, scanner: 'js' });

        expect(summary(scanned)).toEqual(summary(general));
        expect((scanned as FormatCount).malformedSamples[0]?.line).toBe(bad + 1);
      }),
      { numRuns: 200 },
    );
  });

  it('fills the records of any of the four parts and reads on exactly as the general reader does', async () => {
    // The scanner reads four parts of what it is given at once, each with a quarter of the
    // records (line-scan.wat, scanJson): lines it cannot sum (a bad date, here) fill a
    // part's quarter long before its end, in whichever part they cluster.
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 10, max: 80 }), fc.constantFrom(256 * 1024, 1024 * 1024), async (part, late, size) => {
        // About 0.95 MB: one load of the scanner's text with 1 MiB chunks, cut in parts of
        // about 1,000 lines, more than a part's quarter of the records holds (819 here).
        const total = 4_000;
        const text = Buffer.from(
          Array.from({ length: total }, (_, i) => {
            // Every line of one part has a bad date; the last few of the next part each name
            // an account not seen before: records too, written after the first part's filled,
            // which must not land on its records (the count would change).
            const quarter = Math.floor((i * 4) / total);
            const bad = quarter === part || i % 97 === 0;
            const fresh = quarter === part + 1 && (i + 1) % (total / 4) > total / 4 - late;
            // Otherwise good lines (summed, no record): three accounts, sc-bytes 1234 or
            // 999999999999, short values elsewhere.
            const pick = (key: string) =>
              key === 'date' ? (bad ? 2 : 0) : key === 'x-host-header' ? (fresh ? 0 : i % 3) : key === 'sc-bytes' ? (i % 2 === 0 ? 1 : 5) : key === 'cs(Host)' || key === 'cs-uri-stem' ? 1 : 0;
            const line = render('compact', KEYS.map(pick));
            return `${fresh ? line.replace('acme.example.com', `late${i}.example.com`) : line}\n`;
          }).join(''),
        );
        const options: FormatOptions = { resolver: parseResolverSpec('host-label'), metricRules: [], objectKey: 'k' };

        // A first chunk of 8 KiB: its lines' accounts are known to the scanner by the time
        // it reads the rest (a line of an account it does not know yet is recorded).
        const scanned = await count(text, [8192, size], options);
        const general = await count(text, [8192, size], { ...options, scanner: 'js' });

        expect(summary(scanned)).toEqual(summary(general));
        expect((scanned as FormatCount).lines.malformed).toBeGreaterThan(total / 4 - 1);
      }),
      { numRuns: 12 },
    );
  });

  it('reads a large log of CloudFront lines the same way, in chunks of zlib size', async () => {
    // (A pick per key: a key without one would be written as no JSON at all.)
    const picks = (i: number) => KEYS.map((_, k) => [i, i >> 1, i >> 2, i, i >> 3, i, i, i >> 4][k] ?? 0);
    const lines = Array.from({ length: 20_000 }, (_, i) => render(i % 500 === 0 ? 'spaced' : 'compact', picks(i)));
    const text = Buffer.from(lines.map((l) => `${l}\n`).join(''));
    const options: FormatOptions = { resolver: parseResolverSpec('host-label'), metricRules: [], objectKey: 'k' };

    const scanned = await count(text, [256 * 1024], options);
    const general = await count(text, [256 * 1024], { ...options, scanner: 'js' });

    expect(summary(scanned)).toEqual(summary(general));
    expect((scanned as FormatCount).lines.read).toBe(20_000);
    // Lines of accounts, not only malformed ones (a key without a pick made every line no JSON).
    expect((scanned as FormatCount).lines.counted).toBeGreaterThan(3_000);
  });
});
