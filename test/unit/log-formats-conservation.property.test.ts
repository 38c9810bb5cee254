import fc from 'fast-check';
import { logText } from '../../src/adapters/logs/log-text';
import { parquetContent, type RandomAccessFile } from '../../src/adapters/logs/parquet-log';
import { parseLogFields } from '../../src/domain/logs/log-fields';
import { countLogContent, type FormatOptions } from '../../src/domain/logs/log-formats';
import { parquetFromJsonLines } from '../support/parquet-logs';
import { gzip, jsonLog, legacyLog, PLAIN_FIELDS, plainLog, REALTIME_FIELDS_SETTING, realtimeLog, w3cLog, type Request } from '../support/log-formats';

/** Per format: render good requests, and one bad record (a line every reader must count as malformed). */
const FORMATS = {
  legacy: { render: legacyLog, bad: '2026-11-21\tnot-a-time\n', options: {} },
  w3c: { render: w3cLog, bad: '200\tacme.x.com\tsoon\t/a\t1\tGET\tE3\n', options: {} },
  json: { render: jsonLog, bad: '["not", "an", "object"]\n', options: {} },
  plain: { render: (r: readonly Request[]) => plainLog(r, '|'), bad: '1763683200|7\n', options: { format: { headerless: parseLogFields(PLAIN_FIELDS), delimiter: '|' } } },
  plainMulti: { render: (r: readonly Request[]) => plainLog(r, '<|>'), bad: '1763683200<|>7\n', options: { format: { headerless: parseLogFields(PLAIN_FIELDS), delimiter: '<|>' } } },
  realtime: { render: realtimeLog, bad: 'x.y\t200\t1\tGET\th\t/a\tacme.x.com\n', options: { format: { headerless: parseLogFields(REALTIME_FIELDS_SETTING) } } },
} as const;

/** The first and last instants Tally counts: the supported days, 2000-01-01..2099-12-31. */
const FIRST_AT = Date.UTC(2000, 0, 1);
const LAST_AT = Date.UTC(2099, 11, 31, 23, 59, 59, 999);
const supported = (r: Request) => r.at >= FIRST_AT && r.at <= LAST_AT;

/**
 * When a request was made: mostly in one year; else any instant from 1970 (epoch 0) to
 * 9999-12-31, or one at an edge of the supported days. A request outside them is a
 * malformed record in every format (no one could read or bill its day).
 */
const instant = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2026, 11, 31) }) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: Date.UTC(9999, 11, 31, 23, 59, 59) }) },
  { weight: 1, arbitrary: fc.constantFrom(0, FIRST_AT - 1000, FIRST_AT, LAST_AT - 999, LAST_AT + 1, Date.UTC(9999, 11, 31, 23, 59, 59)) },
);

const request: fc.Arbitrary<Request> = fc.record({
  at: instant,
  host: fc.constantFrom('acme.x.com', 'globex.x.com', '10.0.0.1', 'bad#one.x.com'),
  method: fc.constantFrom('GET', 'POST'),
  stem: fc.constantFrom('/a', '/api/authorization/x', '/b%20c'),
  status: fc.constantFrom(200, 404),
  bytes: fc.nat({ max: 10_000_000 }),
  distribution: fc.constant('E3PROP'),
});

/** A run of good requests, or one bad record. */
const piece = fc.oneof(fc.array(request, { minLength: 1, maxLength: 5 }), fc.constant('bad' as const));

async function* chunked(data: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < data.length; at += size) yield data.subarray(at, at + size);
}

describe('the conservation law holds in every format', () => {
  it('every record read is counted, unattributed or malformed, and the bytes of counted records add up', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...(Object.keys(FORMATS) as (keyof typeof FORMATS)[])),
        fc.array(piece, { minLength: 1, maxLength: 30 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 300 }),
        async (name, pieces, zipped, size) => {
          const format = FORMATS[name];
          // A standard log's header comes once, first; the other formats have none or one per line.
          const made = pieces.filter((p): p is Request[] => p !== 'bad').flat();
          const good = made.filter(supported);
          const body = pieces.map((p) => (p === 'bad' ? format.bad : format.render(p).replace(/^#.*\n/gm, ''))).join('');
          const header = format.render([]).match(/^(#.*\n)*/)?.[0] ?? '';
          const text = Buffer.from(header + body);
          const options: FormatOptions = { resolver: { kind: 'host-label' }, metricRules: [], objectKey: 'k', ...format.options };
          const bad = pieces.length - pieces.filter((p) => p !== 'bad').length + made.length - good.length;

          const result = await countLogContent({ kind: 'text', text: logText(chunked(zipped ? gzip(text.toString()) : text, size), 'k') }, options, 'k').catch((error: Error) => error);
          if (made.length === 0) {
            // Nothing in it can be read as a log at all: the object is refused whole, not lost.
            if (result instanceof Error) return expect(result.message).toMatch(/not a CloudFront log/);
          }
          if (result instanceof Error) throw result;
          const { lines, tally } = result;
          const bytes = tally.usage().reduce((sum, row) => sum + row.metrics.bytes!, 0);
          const requests = tally.usage().reduce((sum, row) => sum + row.metrics.requests!, 0);

          expect(lines.read).toBe(good.length + bad);
          expect(lines.read).toBe(lines.counted + lines.unattributed + lines.malformed);
          expect(lines.malformed).toBe(bad);
          expect(requests).toBe(lines.counted + lines.unattributed);
          expect(bytes).toBe(good.reduce((sum, r) => sum + r.bytes, 0));
          expect(tally.usage().filter((row) => row.day < '2000-01-01' || row.day > '2099-12-31')).toEqual([]);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('the conservation law holds in Parquet logs too', () => {
  it('every row read is counted, unattributed or malformed, and the bytes of counted rows add up', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(piece, { minLength: 1, maxLength: 12 }), async (pieces) => {
        const made = pieces.filter((p): p is Request[] => p !== 'bad').flat();
        const good = made.filter(supported);
        const bad = pieces.length - pieces.filter((p) => p !== 'bad').length + made.length - good.length;
        // A row whose date is no day (DuckDB writes what the JSON line says, as text).
        const badRow = '{"date":"someday","time":"00:00:00","sc-bytes":"1","x-host-header":"acme.x.com","DistributionId":"E3PROP"}\n';
        const bytes = await parquetFromJsonLines(pieces.map((p) => (p === 'bad' ? badRow : jsonLog(p))).join(''));
        const file: RandomAccessFile = { byteLength: bytes.length, slice: async (start, end) => new Uint8Array(bytes.subarray(start, end ?? bytes.length)).buffer };
        const options: FormatOptions = { resolver: { kind: 'host-label' }, metricRules: [], objectKey: 'k' };

        const result = await countLogContent(parquetContent(file, 'k'), options, 'k');
        const requests = result.tally.usage().reduce((sum, row) => sum + row.metrics.requests!, 0);
        const counted = result.tally.usage().reduce((sum, row) => sum + row.metrics.bytes!, 0);

        expect(result.lines.read).toBe(good.length + bad);
        expect(result.lines.read).toBe(result.lines.counted + result.lines.unattributed + result.lines.malformed);
        expect(result.lines.malformed).toBe(bad);
        expect(requests).toBe(result.lines.counted + result.lines.unattributed);
        expect(counted).toBe(good.reduce((sum, r) => sum + r.bytes, 0));
        expect(result.tally.usage().filter((row) => row.day < '2000-01-01' || row.day > '2099-12-31')).toEqual([]);
      }),
      { numRuns: 12 },
    );
  });
});
