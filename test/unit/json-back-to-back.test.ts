import fc from 'fast-check';
import { logText } from '../../src/adapters/logs/log-text';
import { countLogContent, type FormatOptions } from '../../src/domain/logs/log-formats';
import { linesBalance } from '../../src/domain/logs/usage-tally';
import { gzip, jsonLog, traffic, type Request } from '../support/log-formats';

/**
 * Amazon Data Firehose writes the records it buffers into one S3 object back to back:
 * "By default, Firehose concatenates data without any delimiters"
 * (https://docs.aws.amazon.com/firehose/latest/dev/basic-deliver.html). A JSON log
 * delivered that way is `{...}{...}{...}`, and must count as its newline-delimited twin.
 */

const base: FormatOptions = { resolver: { kind: 'host-label' }, metricRules: [], objectKey: 'firehose/x' };

async function* chunks(data: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < data.length; at += size) yield data.subarray(at, at + size);
}

function count(data: string | Buffer, size = 4096, options: Partial<FormatOptions> = {}) {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  return countLogContent({ kind: 'text', text: logText(chunks(bytes, size), 'k') }, { ...base, ...options }, 'k');
}

/** The usage a count found, account -> day -> metrics, in a comparable shape. */
async function outcome(data: string | Buffer, size?: number, options: Partial<FormatOptions> = {}) {
  const result = await count(data, size, options);
  const usage = result.tally.usage().map((row) => [row.account, row.day, row.metrics, row.hours] as const);
  return { format: result.format, lines: result.lines, usage };
}

/** JSON records as CloudFront writes them, one per line, with the line breaks taken out (JSON escapes every newline inside a string). */
const backToBack = (text: string) => text.replace(/\n/g, '');

describe('JSON logs delivered by Firehose with records back to back (no delimiter)', () => {
  const requests = traffic(500, ['acme', 'globex', 'initech']);

  it('are counted record by record, as the same records one per line are', async () => {
    const lines = jsonLog(requests);
    const joined = backToBack(lines);
    expect(joined).not.toContain('\n');

    const result = await count(joined, 777);

    expect(result.format).toBe('json');
    expect(result.lines.read).toBe(requests.length);
    expect(result.lines.malformed).toBe(0);
    expect(linesBalance(result.lines)).toBe(true);
    expect(await outcome(joined, 777)).toEqual(await outcome(lines, 777));
    // gzip, and the JavaScript reader (no SIMD scanner), the same.
    expect(await outcome(gzip(joined), 333)).toEqual(await outcome(lines, 333));
    expect(await outcome(joined, 50, { scanner: 'js' })).toEqual(await outcome(lines, 50));
  });

  it('are counted record by record when they go back to back only after the first 64 KB, or after a record longer than that', async () => {
    const lines = jsonLog(requests);
    // Newline-delimited past the opening Tally looks at, then hundreds of records (far more than a line may hold) back to back.
    const switchAt = lines.indexOf('\n', 70_000) + 1;
    const switched = lines.slice(0, switchAt) + backToBack(lines.slice(switchAt));
    const long = jsonLog([{ ...requests[0]!, stem: `/${'l'.repeat(100_000)}` }]).replace(/\n$/, '');
    const afterLong = long + backToBack(lines);
    expect(switched.slice(0, 65_536)).toContain('\n');
    expect(afterLong.slice(0, 65_536)).not.toContain('\n');

    for (const size of [777, 65_536, 1 << 20]) {
      const result = await outcome(switched, size);
      expect(result.lines).toMatchObject({ read: requests.length, malformed: 0 });
      expect(result).toEqual(await outcome(lines, size));
      expect(await outcome(afterLong, size)).toEqual(await outcome(`${long}\n${lines}`, size));
    }
    expect((await outcome(afterLong, 4096)).lines).toMatchObject({ read: requests.length + 1, malformed: 1 });
    expect(await outcome(switched, 333, { scanner: 'js' })).toEqual(await outcome(lines, 333));
  });

  it('are split only at the end of a whole object: braces and escaped quotes inside values stay in their record', async () => {
    const tricky: Request[] = requests.slice(0, 6).map((r, i) => ({ ...r, stem: ['/a}{b', '/"}{"', '/x\\', '/\\"}', '/{{{', '/]}[{'][i]! }));
    const lines = jsonLog(tricky);

    const result = await outcome(backToBack(lines), 7);

    expect(result.lines).toMatchObject({ read: 6, malformed: 0 });
    expect(result).toEqual(await outcome(lines, 7));
  });

  it('are read as JSON even when the first record is no object', async () => {
    const good = jsonLog(requests.slice(0, 3));

    const result = await count(`[1,2]${backToBack(good)}`, 5);

    expect(result.format).toBe('json');
    expect(result.lines).toMatchObject({ read: 4, malformed: 1 });
  });

  it('count a damaged record as malformed and read on past it', async () => {
    const good = jsonLog(requests.slice(0, 3));
    const joined = `${backToBack(good)}[1,2]{"sc-bytes":"5","x-host-header":"acme.example.com"}${backToBack(good)}`;

    const result = await count(joined, 11);

    expect(result.lines).toMatchObject({ read: 8, malformed: 2 });
    expect(linesBalance(result.lines)).toBe(true);
    expect(result.malformedSamples.map((s) => s.reason)).toEqual(['line is not a JSON object: [1,2]', 'the field list has no date, timestamp(ms) or timestamp field']);
  });
});

/** A request in the supported days, its URI stem possibly full of JSON's special characters. */
const request: fc.Arbitrary<Request> = fc.record({
  at: fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2026, 11, 31) }),
  host: fc.constantFrom('acme.x.com', 'globex.x.com', '10.0.0.1'),
  method: fc.constantFrom('GET', 'POST'),
  stem: fc.oneof(fc.constantFrom('/a', '/b%20c'), fc.string({ unit: fc.constantFrom('{', '}', '[', ']', '"', '\\', '/', 'a', '\n', '\t', 'é') })),
  status: fc.constantFrom(200, 404),
  bytes: fc.nat({ max: 10_000_000 }),
  distribution: fc.constant('E3PROP'),
});

/** A record that is no usable log line, as an object or not. */
const badRecord = fc.constantFrom('[1,2]', '{"sc-bytes":"5","x-host-header":"acme.x.com"}', '{"date":"someday","time":"00:00:00","sc-bytes":"1","x-host-header":"acme.x.com"}');

/** Bytes of an object Tally looks at to tell its format (SNIFF_BYTES in log-formats.ts). */
const OPENING_BYTES = 64 * 1024;

/**
 * What comes before the records under test, one per line, the last one followed
 * directly by the first record when they are back to back: nothing; more than the
 * opening's 64 KB of newline-delimited records (the switch to back to back comes after
 * it); or one record longer than the opening (and than the default line limit).
 */
const OPENINGS: Record<string, readonly string[]> = {
  none: [],
  'lines past 64 KB': jsonLog(traffic(Math.ceil(OPENING_BYTES / 150), ['acme', 'globex'])).replace(/\n$/, '').split('\n'),
  'one record past 64 KB': [jsonLog([{ ...traffic(1, ['acme'])[0]!, stem: `/${'l'.repeat(OPENING_BYTES + 5_000)}` }]).replace(/\n$/, '')],
};
const opening = fc.constantFrom(...Object.keys(OPENINGS));

describe('property: the same records with and without line breaks count the same', () => {
  it('back to back, or with spaces between them, a record counts as it does on its own line, wherever in the object the records go back to back', async () => {
    await fc.assert(
      fc.asyncProperty(
        opening,
        fc.array(fc.oneof({ weight: 4, arbitrary: request.map((r) => jsonLog([r]).replace(/\n$/, '')) }, { weight: 1, arbitrary: badRecord }), { minLength: 1, maxLength: 25 }),
        fc.array(fc.constantFrom('', '', '', ' ', '\t', '\r\n', '\n'), { minLength: 25, maxLength: 25 }),
        fc.integer({ min: 1, max: 400 }),
        fc.boolean(),
        fc.constantFrom<Partial<FormatOptions>>({}, { maxLineBytes: 2 * OPENING_BYTES }, { scanner: 'js' }),
        async (openingName, records, gaps, size, zipped, options) => {
          const before = OPENINGS[openingName]!;
          // A JSON log: at least one record is an object (arrays alone are no JSON log in either shape).
          fc.pre(records.some((r) => r.startsWith('{')));
          const head = before.join('\n');
          const lines = head + (head === '' ? '' : '\n') + records.map((r) => `${r}\n`).join('');
          const joined = head + records.map((r, i) => r + gaps[i]!).join('');
          const data = (text: string) => (zipped ? gzip(text) : text);
          // Long texts in chunks of 163 bytes to 64 KB, so that a run stays quick.
          const chunk = head === '' ? size : size * 163;

          const newlines = await outcome(data(lines), chunk, options).catch((error: Error) => error.message);
          const together = await outcome(data(joined), chunk, options).catch((error: Error) => error.message);

          expect(together).toEqual(newlines);
          if (typeof newlines !== 'string') {
            expect(newlines.lines.read).toBe(before.length + records.length);
            expect(linesBalance(newlines.lines)).toBe(true);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
