import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { parquetContent } from '../../src/adapters/logs/parquet-log';
import { parseResolverSpec } from '../../src/domain/logs/account-resolver';
import { countLogContent, type FormatCount, type FormatOptions } from '../../src/domain/logs/log-formats';
import { validateMetricRules } from '../../src/domain/logs/metric-rules';

/**
 * Parquet is read column by column and page by page (src/adapters/logs/parquet-columns.ts).
 * Whatever the writer, codec, page version, encoding (dictionary or plain), row group
 * and page sizes, and whether columns are optional (nulls) or required, a Parquet log
 * must count exactly as the same rows written as a tab-separated standard log: each
 * value as text, none (null or empty) as `-`, a tab, LF or CR as %09, %0A, %0D. Without
 * metric rules, runs of good rows are counted column by column (ColumnCounting): the
 * same counts again.
 */
const COLUMNS = ['date', 'time', 'sc_bytes', 'cs_Host', 'x_host_header', 'cs_uri_stem', 'x_edge_request_id', 'cs_method', 'DistributionId'] as const;
const LEGACY = ['date', 'time', 'sc-bytes', 'cs(Host)', 'x-host-header', 'cs-uri-stem', 'x-edge-request-id', 'cs-method', 'DistributionId'];
const POOLS: Record<(typeof COLUMNS)[number], readonly string[]> = {
  // A byte order mark, and a row whose line would start with `#` (a directive in text).
  date: ['2026-11-21', '2026-11-22', '2026-02-30', '', '-', '\uFEFF2026-11-21', '#2026-11-21'],
  time: ['12:00:00', '23:59:60', '24:00:00', '7:00', '00:00:00', '05:30:12'],
  sc_bytes: ['0', '1234', '-', '12a', '999999999999999', '4096', '-5', '1000000000000000'],
  cs_Host: ['d1.cloudfront.net', '-', 'Globex.example.com'],
  x_host_header: ['acme.example.com', 'acme.example.com', 'initech.example.com', '10.0.0.1', '-', 'tab\there.example.com', 'caf\u00e9.example.com', 'a-very-long-host-label-past-thirty-two-bytes.example.com', 'd111111abcdef8.cloudfront.net', 'acme.CloudFront.net'],
  cs_uri_stem: ['/api/authorization/check', '/v1/items', '/line\nbreak', '/cr\rhere', '/t/acme/x', '/t/Initech/api/authorization/y'],
  x_edge_request_id: ['r1', 'r2'],
  cs_method: ['GET', 'POST', '-'],
  DistributionId: ['E2ACME', 'e2initech', 'E2NOBODY', '-'],
};

/** Typed columns: only values the type holds (`-` none); the text of each is what a standard log would say. */
const TYPED_POOLS: Partial<Record<(typeof COLUMNS)[number], readonly string[]>> = {
  date: ['2026-11-21', '2026-11-22', '1969-12-31'],
  sc_bytes: ['0', '1234', '999999999999999', '4096', '-5', '1000000000000000'],
};

/** Only good days, times and byte counts: runs of rows that can be counted without their lines. */
const CLEAN: Partial<Record<(typeof COLUMNS)[number], readonly string[]>> = {
  date: ['2026-11-21', '2026-11-22'],
  time: ['12:00:00', '23:59:60', '00:00:00', '05:30:12'],
  sc_bytes: ['0', '1234', '-', '999999999999999'],
};

/** Every resolver: the host ones (by x-host-header, else cs(Host)), by path, by the object's key, by DistributionId. */
const RESOLVERS = [
  'host-label',
  'host-map:{"acme.example.com":"acme","d1.cloudfront.net":"globex","caf\u00e9.example.com":"cafe"}',
  'path:^/t/(?<account>[A-Za-z]+)/',
  'key:^(?<account>[a-z]+)/',
  'distribution:{"E2ACME":"acme","E2INITECH":"initech"}',
] as const;
const resolverArb = fc.constantFrom(...RESOLVERS);
/** Columns' types in the DuckDB file: every one VARCHAR (AWS's), or `date` a DATE and `sc_bytes` a BIGINT. */
type Shape = 'strings' | 'typed';

type Row = (string | null)[];
type Clean = 'any' | 'clean' | 'bad-time';
const cleanArb = fc.constantFrom<Clean>('any', 'clean', 'bad-time');

/**
 * Rows: each column's value picked from its pool, or null (when the column may be null);
 * `clean` rows have good days, times and byte counts, and nulls only where a null is good.
 */
const rowsArb = (nullable: boolean, clean: Clean = 'any', shape: Shape = 'strings', minLength = 1) =>
  fc.array(
    fc.tuple(
      ...COLUMNS.map((column) => {
        // `bad-time`: rows whose only fault can be the time.
        const strict = clean === 'clean' || (clean === 'bad-time' && column !== 'time');
        const typed = shape === 'typed' ? TYPED_POOLS[column] : undefined;
        const pool = fc.constantFrom(...((strict ? CLEAN[column] : undefined)?.filter((value) => typed === undefined || typed.includes(value)) ?? typed ?? POOLS[column]));
        return nullable && !(strict && (column === 'date' || column === 'time')) ? fc.option(pool, { freq: 6 }) : pool;
      }),
    ),
    { minLength, maxLength: Math.max(120, minLength) },
  ) as fc.Arbitrary<Row[]>;

/** With a metric rule, rows are counted as lines; without, column by column where they can be (ColumnCounting). */
const WITH_RULE: FormatOptions = {
  resolver: parseResolverSpec('host-label'),
  metricRules: validateMetricRules([
    { name: 'authorization_requests', path: '/api/authorization/*' },
    { name: 'post_bytes', method: 'POST', value: 'bytes' },
  ]),
  objectKey: 'acme/k',
};
const NO_RULE: FormatOptions = { ...WITH_RULE, metricRules: [] };
let options = WITH_RULE;
const optionsOf = (rule: boolean, resolver: string = RESOLVERS[0]): FormatOptions => ({ ...(rule ? WITH_RULE : NO_RULE), resolver: parseResolverSpec(resolver) });

/** The same rows as a standard log, counted by the counter as text. */
async function asText(rows: readonly Row[], legacy: readonly string[] = LEGACY): Promise<ReturnType<typeof summary>> {
  const text = `#Fields: ${legacy.join(' ')}\n${rows
    .map((row) => row.map((value) => (value === null || value === '' ? '-' : value.replace(/\t/g, '%09').replace(/\n/g, '%0A').replace(/\r/g, '%0D'))).join('\t'))
    .join('\n')}\n`;
  const result = await countLogContent(
    {
      kind: 'text',
      text: (async function* () {
        yield Buffer.from(text);
      })(),
    },
    options,
    'k',
  );
  // The #Fields line is line 1 of the text: the rows' numbers are one more than in Parquet.
  return summary({ ...result, malformedSamples: result.malformedSamples.map((sample) => ({ ...sample, line: sample.line - 1 })) });
}

async function asParquet(bytes: Uint8Array): Promise<ReturnType<typeof summary>> {
  const file = { byteLength: bytes.length, slice: async (start: number, end?: number) => new Uint8Array(bytes.subarray(start, end ?? bytes.length)).buffer };
  return summary(await countLogContent(parquetContent(file, 'k'), options, 'k'));
}

// Usage with its hours: Parquet's rows fall in the UTC hours their lines would (issue 35).
const summary = (result: FormatCount) => ({ lines: result.lines, usage: result.tally.usage(), samples: result.malformedSamples, unattributed: [...(result.unattributedSamples ?? [])].sort() });

/** A count's result, or the message it was refused with. */
const settled = <T>(count: Promise<T>): Promise<T | { refused: string }> => count.catch((error: unknown) => ({ refused: String(error) }));

const sql = (value: string | null) => (value === null ? 'NULL' : `'${value.replace(/'/g, "''")}'`);

async function duckdbParquet(rows: readonly Row[], settings: string, shape: Shape = 'strings', columns: readonly string[] = COLUMNS): Promise<Uint8Array> {
  const folder = mkdtempSync(join(tmpdir(), 'tally-columns-'));
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    const file = join(folder, 'log.parquet');
    await connection.run(`CREATE TABLE t (${columns.map((c) => `"${c}" VARCHAR`).join(', ')})`);
    await connection.run(`INSERT INTO t VALUES ${rows.map((row) => `(${row.map(sql).join(', ')})`).join(', ')}`);
    const typed = (column: string) => (shape === 'typed' && column === 'date' ? `"date"::DATE AS "date"` : shape === 'typed' && column === 'sc_bytes' ? `sc_bytes::BIGINT AS sc_bytes` : `"${column}"`);
    await connection.run(`COPY (SELECT ${columns.map(typed).join(', ')} FROM t) TO '${file}' (FORMAT parquet, ${settings})`);
    return new Uint8Array(readFileSync(file));
  } finally {
    connection.closeSync();
    instance.closeSync();
    rmSync(folder, { recursive: true, force: true });
  }
}

describe('Parquet read column by column', () => {
  /** DuckDB files of the rows in `shape`, written with every codec, page version, dictionary choice and row-group size given, count as the text. */
  const duckdbFilesCountAsText = (shape: Shape, codecs: readonly string[]) =>
    fc.assert(
      fc.asyncProperty(
        cleanArb.chain((clean) => rowsArb(true, clean, shape)),
        fc.constantFrom(...codecs),
        fc.constantFrom('V1', 'V2'),
        fc.boolean(),
        fc.integer({ min: 1, max: 60 }),
        fc.boolean(),
        resolverArb,
        async (rows, codec, version, plain, groupRows, rule, resolver) => {
          options = optionsOf(rule, resolver);
          const settings = `COMPRESSION ${codec}, PARQUET_VERSION ${version}, ROW_GROUP_SIZE ${groupRows}${plain ? ', DICTIONARY_SIZE_LIMIT 1' : ''}`;
          const bytes = await duckdbParquet(rows, settings, shape);

          expect(await asParquet(bytes)).toEqual(await asText(rows));
        },
      ),
      { numRuns: 40 },
    );

  it('counts DuckDB files (Snappy, ZSTD, GZIP; page v1 and v2; dictionary and plain pages; nulls) as the same rows in text', async () => {
    await duckdbFilesCountAsText('strings', ['snappy', 'zstd', 'gzip', 'uncompressed']);
  });

  it('counts typed columns (date a DATE, sc_bytes a BIGINT; nulls) as the same rows in text, with every resolver, with and without rules', async () => {
    await duckdbFilesCountAsText('typed', ['snappy', 'zstd', 'uncompressed']);
  });

  it('counts hyparquet-writer files (required and optional columns, PLAIN and RLE_DICTIONARY, small pages, GZIP) as the same rows in text', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(fc.boolean(), cleanArb).chain(([nullable, clean]) => fc.tuple(fc.constant(nullable), rowsArb(nullable, clean))),
        fc.array(fc.constantFrom('PLAIN', 'RLE_DICTIONARY') as fc.Arbitrary<'PLAIN' | 'RLE_DICTIONARY'>, { minLength: COLUMNS.length, maxLength: COLUMNS.length }),
        fc.constantFrom('SNAPPY', 'GZIP', 'UNCOMPRESSED') as fc.Arbitrary<'SNAPPY' | 'GZIP' | 'UNCOMPRESSED'>,
        fc.integer({ min: 16, max: 400 }),
        fc.integer({ min: 1, max: 80 }),
        fc.boolean(),
        resolverArb,
        async ([nullable, rows], encodings, codec, pageSize, rowGroupSize, rule, resolver) => {
          options = optionsOf(rule, resolver);
          const buffer = parquetWriteBuffer({
            columnData: COLUMNS.map((name, c) => ({ name, data: rows.map((row) => row[c]!), type: 'STRING' as const, nullable, encoding: encodings[c]! })),
            codec,
            compressors: { GZIP: (input: Uint8Array) => new Uint8Array(gzipSync(input)) },
            pageSize,
            rowGroupSize,
          });

          expect(await asParquet(new Uint8Array(buffer))).toEqual(await asText(rows));
        },
      ),
      { numRuns: 80 },
    );
  });

  // Counted in WebAssembly (column-sum.wat): typed dates of many days in any order (eight
  // are looked up at once; past the 64th a row is its line), nulls among them, and more
  // account-days than the sums' first room (256) holds.
  it('counts typed dates of many days and hosts in any order as the same rows in text', async () => {
    const days = Array.from({ length: 70 }, (_, i) => new Date(Date.UTC(2026, 8, 1 + i)).toISOString().slice(0, 10));
    // Forty hosts: few enough that DuckDB writes x_host_header as a dictionary (host pairs).
    const hosts = Array.from({ length: 40 }, (_, i) => `h${i}.example.com`);
    const rowArb = fc.tuple(
      fc.option(fc.constantFrom(...days), { freq: 20 }),
      fc.constantFrom('12:00:00', '23:59:60', '00:00:00', '24:00:00'),
      fc.option(fc.constantFrom('0', '1234', '-5', '999999999999999'), { freq: 10 }),
      fc.constantFrom('d1.cloudfront.net', '-'),
      fc.option(fc.constantFrom(...hosts), { freq: 30 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(rowArb, { minLength: 300, maxLength: 1500 }), fc.boolean(), async (picked, shuffled) => {
        options = optionsOf(false);
        // In order of day (as CloudFront writes), or as picked.
        const ordered = shuffled ? picked : [...picked].sort((a, b) => String(a[0]).localeCompare(String(b[0])));
        const rows: Row[] = ordered.map(([date, time, bytes, cs, x]) => [date, time, bytes, cs, x, '/v1/items', 'r1', 'GET', 'E2ACME']);
        const bytes = await duckdbParquet(rows, 'COMPRESSION snappy', 'typed');

        expect(await asParquet(bytes)).toEqual(await asText(rows));
      }),
      { numRuns: 12 },
    );
  });

  // A log need not have every field: with no time (the hour not known), no sc-bytes (0
  // bytes) or one host column, column-sum.wat reads the absent column as a constant.
  it('counts files that lack the time, the sc-bytes or a host column as the same rows in text', async () => {
    const optional = ['time', 'sc_bytes', 'cs_Host', 'x_host_header'];
    await fc.assert(
      fc.asyncProperty(
        cleanArb.chain((clean) => rowsArb(true, clean, 'typed')),
        fc.array(fc.tuple(fc.nat(29), fc.nat(29)), { minLength: 120, maxLength: 120 }),
        fc.subarray(optional, { minLength: 1 }),
        fc.constantFrom<Shape>('strings', 'typed'),
        fc.constantFrom(...RESOLVERS.slice(0, 2)),
        async (rows, hostPicks, dropped, shape, resolver) => {
          options = optionsOf(false, resolver);
          // Twenty hosts more in each host column (many accounts, each its own host pair).
          const host = (pick: number, value: string | null) => (pick < 20 ? `h${pick}.example.com` : value);
          const withHosts = rows.map((row, r) => row.map((value, c) => (COLUMNS[c] === 'cs_Host' ? host(hostPicks[r]![0], value) : COLUMNS[c] === 'x_host_header' ? host(hostPicks[r]![1], value) : value)));
          const kept = COLUMNS.map((column, c) => ({ column, c })).filter(({ column }) => !dropped.includes(column));
          // Eight times over: values repeat enough that DuckDB writes dictionaries (host pairs, column-sum.wat).
          const trimmed = Array.from({ length: 8 }, () => withHosts.map((row) => kept.map(({ c }) => row[c]!))).flat();
          const bytes = await duckdbParquet(trimmed, 'COMPRESSION snappy', shape, kept.map(({ column }) => column));

          // Eight times over, 15-digit byte counts may pass exact sums: both refuse the object alike.
          expect(await settled(asParquet(bytes))).toEqual(await settled(asText(trimmed, kept.map(({ c }) => LEGACY[c]!))));
        },
      ),
      { numRuns: 30 },
    );
  });

  // Each row group has dictionaries of its own, so each of its host pairs is new; a pair
  // whose viewer host (x-host-header's, else cs(Host)'s) was met in an earlier row group is
  // filled in at once (ColumnSumKernel.prefillPairs), the rest found as rows meet them.
  it('counts the host pairs of later row groups, their hosts met before, as the same rows in text', async () => {
    const xHosts = Array.from({ length: 12 }, (_, i) => `x${i}.example.com`);
    const cHosts = [...Array.from({ length: 12 }, (_, i) => `c${i}.example.com`), 'd1.cloudfront.net', '-'];
    const rowArb = fc.tuple(
      fc.constantFrom('2026-11-21', '2026-11-22'),
      fc.constantFrom('12:00:00', '00:00:00', '24:00:00'),
      fc.option(fc.constantFrom('0', '1234', '99'), { freq: 6 }),
      fc.option(fc.constantFrom(...cHosts), { freq: 4 }),
      fc.option(fc.constantFrom(...xHosts, '-', ''), { freq: 2 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(rowArb, { minLength: 100, maxLength: 400 }), fc.nat(99), fc.constantFrom(...RESOLVERS.slice(0, 2)), async (picked, turn, resolver) => {
        options = optionsOf(false, resolver);
        // Row groups of 2,048 rows (DuckDB's least), the rows picked over and over, each
        // time from another place: each group's dictionaries list the hosts in another order.
        const rows: Row[] = Array.from({ length: 6000 }, (_, i) => picked[(i + Math.floor(i / picked.length) * (turn + 1)) % picked.length]!).map(([date, time, bytes, cs, x]) => [date, time, bytes, cs, x, '/v1/items', 'r1', 'GET', 'E2ACME']);
        const bytes = await duckdbParquet(rows, 'COMPRESSION snappy, ROW_GROUP_SIZE 2048', 'typed');

        expect(await asParquet(bytes)).toEqual(await asText(rows));
      }),
      { numRuns: 10 },
    );
  });

  it('counts two files at once each as it counts alone (each count has sums of its own)', async () => {
    options = optionsOf(false);
    const rowsOf = (host: string, count: number): Row[] =>
      Array.from({ length: count }, (_, i) => ['2026-11-21', `0${i % 10}:00:00`, String(i), 'd1.cloudfront.net', host, '/v1/items', 'r1', 'GET', 'E2ACME']);
    // Row groups of 2,048 rows: the counts await between groups, and take turns.
    const files = await Promise.all([rowsOf('acme.example.com', 9000), rowsOf('initech.example.com', 7000)].map((rows) => duckdbParquet(rows, 'COMPRESSION snappy, ROW_GROUP_SIZE 2048')));
    const alone = [await asParquet(files[0]!), await asParquet(files[1]!)];

    expect(await Promise.all(files.map((file) => asParquet(file)))).toEqual(alone);
    expect(alone.map((count) => count.usage.map((row) => [row.account, row.metrics.requests]))).toEqual([[['acme', 9000]], [['initech', 7000]]]);
  });

  // Pages after a row group's first meet host pairs already resolved: their good rows are
  // summed by the short loop (ColumnCounting's knownCells, sumCells), their bad rows must
  // still be handed over as lines, in their place.
  it('counts the later pages of a row group (host pairs known) as the same rows in text, bad rows among them', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(fc.boolean(), fc.constantFrom<Clean>('any', 'bad-time')).chain(([nullable, clean]) => fc.tuple(fc.constant(nullable), rowsArb(nullable, clean, 'strings', 40))),
        fc.constantFrom('PLAIN', 'RLE_DICTIONARY') as fc.Arbitrary<'PLAIN' | 'RLE_DICTIONARY'>,
        fc.integer({ min: 16, max: 120 }),
        fc.constantFrom(...RESOLVERS.slice(0, 2)),
        async ([nullable, rows], otherEncoding, pageSize, resolver) => {
          options = optionsOf(false, resolver);
          const hosts = new Set(['cs_Host', 'x_host_header']);
          const buffer = parquetWriteBuffer({
            columnData: COLUMNS.map((name, c) => ({ name, data: rows.map((row) => row[c]!), type: 'STRING' as const, nullable, encoding: hosts.has(name) ? 'RLE_DICTIONARY' : otherEncoding })),
            codec: 'UNCOMPRESSED',
            pageSize,
            rowGroupSize: rows.length,
          });

          expect(await asParquet(new Uint8Array(buffer))).toEqual(await asText(rows));
        },
      ),
      // Rows of 40 and more shrink slowly: the first counterexample is reported as found.
      { numRuns: 40, endOnFailure: true },
    );
  });
});
