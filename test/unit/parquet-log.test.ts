import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { parquetMetadata, parquetSchema } from 'hyparquet';
import { logContent, openLogFile } from '../../src/adapters/logs/log-opening';
import { parquetContent, type RandomAccessFile } from '../../src/adapters/logs/parquet-log';
import { parseResolverSpec } from '../../src/domain/logs/account-resolver';
import { PoisonObjectError } from '../../src/domain/errors';
import { countLogContent } from '../../src/domain/logs/log-formats';
import { LogCounter, type CountOptions } from '../../src/domain/logs/log-counter';
import { RecordLines } from '../../src/domain/logs/log-records';
import { validateMetricRules } from '../../src/domain/logs/metric-rules';
import { DEMO_METRICS } from '../../src/local/demo/demo';
import { recountParquetLog, writeParquetLog, type ParquetLogSpec, type Recount } from '../support/parquet-logs';

const options: CountOptions = { resolver: parseResolverSpec('host-label'), metricRules: validateMetricRules(JSON.parse(DEMO_METRICS)), objectKey: 'logs/E2PARQUETTEST.2026-11-21-00.abc.parquet' };
const accounts = ['acme', 'globex', 'initech'];

/** A file in memory, read at random offsets; `ranges` records every slice asked for. */
function memoryFile(file: Uint8Array): RandomAccessFile & { ranges: [number, number][] } {
  const ranges: [number, number][] = [];
  const bytes = new Uint8Array(file); // a Buffer's slice is a view, not a copy
  return {
    byteLength: bytes.length,
    ranges,
    async slice(start: number, end = bytes.length) {
      ranges.push([start, end]);
      return bytes.slice(start, end).buffer;
    },
  };
}

/** What the count must be: DuckDB's recount, as Tally's tally rows. */
function expectedUsage(recount: Recount) {
  return [...recount.usage.entries()]
    .map(([key, metrics]) => {
      const [account, day] = key.split('|');
      return { account, day, metrics: { requests: metrics.requests, bytes: metrics.bytes, authorization_requests: metrics.authorization_requests } };
    })
    .sort((a, b) => `${a.account}|${a.day}`.localeCompare(`${b.account}|${b.day}`));
}

function countedUsage(usage: readonly { account: string; day: string; metrics: Record<string, number> }[]) {
  return usage
    .filter((row) => row.account !== 'unattributed')
    .map((row) => ({ account: row.account, day: row.day, metrics: { requests: row.metrics.requests, bytes: row.metrics.bytes, authorization_requests: row.metrics.authorization_requests } }))
    .sort((a, b) => `${a.account}|${a.day}`.localeCompare(`${b.account}|${b.day}`));
}

/** DuckDB's requests per account, UTC day and UTC hour of a file (from `date` and `time`, `timestamp_ms` or `timestamp`). */
async function hourlyRecount(path: string): Promise<Record<string, number>> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    await connection.run(`SET TimeZone = 'UTC'`);
    const names = new Set((await connection.runAndReadAll(`SELECT name FROM parquet_schema('${path}')`)).getRowObjectsJS().map((row) => String(row.name)));
    const at = names.has('date') ? `strptime("date" || ' ' || "time", '%Y-%m-%d %H:%M:%S')` : names.has('timestamp_ms') ? 'make_timestamp(timestamp_ms::BIGINT * 1000)' : '"timestamp"';
    const rows = (
      await connection.runAndReadAll(`
        SELECT lower(split_part(coalesce(x_host_header, cs_Host), '.', 1)) AS account, strftime(${at}, '%Y-%m-%d') AS day, hour(${at})::INTEGER AS hour, count(*)::INTEGER AS requests
        FROM read_parquet('${path}') WHERE ${at} IS NOT NULL AND coalesce(x_host_header, cs_Host) IS NOT NULL GROUP BY ALL`)
    ).getRowObjectsJS();
    return Object.fromEntries(rows.map((row) => [`${String(row.account)}|${String(row.day)}|${Number(row.hour)}`, Number(row.requests)]));
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** Tally's requests per account, day and UTC hour (unattributed left out, as the recount leaves hostless rows out). */
function countedHours(usage: readonly { account: string; day: string; hours: Readonly<Record<number, Readonly<Record<string, number>>>> }[]): Record<string, number> {
  const hours: Record<string, number> = {};
  for (const row of usage) {
    if (row.account === 'unattributed') continue;
    for (const [hour, metrics] of Object.entries(row.hours)) if ((metrics.requests ?? 0) > 0) hours[`${row.account}|${row.day}|${hour}`] = metrics.requests!;
  }
  return hours;
}

async function withFile<T>(spec: ParquetLogSpec, work: (file: { bytes: Buffer; path: string }) => Promise<T>): Promise<T> {
  const file = await writeParquetLog(spec);
  try {
    return await work(file);
  } finally {
    file.cleanup();
  }
}

describe('Parquet logs (CloudFront standard logging v2)', () => {
  it.each([
    ['strings, Snappy', { shape: 'strings', codec: 'snappy' }],
    ['strings, ZSTD', { shape: 'strings', codec: 'zstd' }],
    ['strings, GZIP', { shape: 'strings', codec: 'gzip' }],
    ['timestamp_ms only, ZSTD', { shape: 'timestamp-ms', codec: 'zstd' }],
    ['typed BIGINT and TIMESTAMP columns, Snappy', { shape: 'typed', codec: 'snappy' }],
  ] as const)('counts a file of %s, row group by row group, as DuckDB recounts it', async (_, shape) => {
    await withFile({ accounts, rows: 5000, rowGroupRows: 1000, ...shape }, async ({ path }) => {
      const recount = await recountParquetLog(path);

      const count = await countLogContent(await openLogFile(path), options, path);

      expect(countedUsage(count.tally.usage())).toEqual(expectedUsage(recount));
      // Each row in its UTC hour: the time's, or the timestamp's (issue 35).
      expect(countedHours(count.tally.usage())).toEqual(await hourlyRecount(path));
      expect(count.lines).toEqual({ ...count.lines, read: recount.rows, unattributed: recount.hostless, malformed: recount.dayless });
      expect(count.lines.counted + count.lines.unattributed + count.lines.malformed).toBe(count.lines.read);
      // Every row was counted column by column (malformed ones as their lines): no fallback to say.
      expect(count.readAsLines).toBeUndefined();
    });
  });

  it.each([
    ['a host column that is a list', `['acme.example.com']`, /columns that are not flat/],
    ['a host column of integers', `42`, /a host column that is not text/],
  ])('counts the rows of a file with %s as lines, and says why once', async (_, host, reason) => {
    const folder = mkdtempSync(join(tmpdir(), 'tally-parquet-'));
    try {
      const path = join(folder, 'odd.parquet');
      const instance = await DuckDBInstance.create(':memory:');
      const connection = await instance.connect();
      await connection.run(`COPY (SELECT '2026-11-21' AS "date", '12:00:00' AS "time", i::VARCHAR AS sc_bytes, ${host} AS x_host_header FROM range(3000) t(i)) TO '${path}' (FORMAT parquet, ROW_GROUP_SIZE 1000)`);
      connection.closeSync();
      instance.closeSync();

      const count = await countLogContent(await openLogFile(path), { ...options, metricRules: [] }, path);

      expect(count.lines.read).toBe(3000);
      expect(count.readAsLines).toMatch(reason);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('reads only the column chunks counting needs', async () => {
    await withFile({ accounts, rows: 30_000, rowGroupRows: 10_000, shape: 'strings', codec: 'snappy' }, async ({ bytes }) => {
      const file = memoryFile(bytes);
      const chunks = parquetMetadata(new Uint8Array(bytes).buffer).row_groups.flatMap((group) =>
        group.columns.map((column) => {
          const meta = column.meta_data!;
          const start = Number(meta.dictionary_page_offset ?? meta.data_page_offset);
          return { name: meta.path_in_schema[0]!, start, end: start + Number(meta.total_compressed_size) };
        }),
      );
      let asked: readonly string[] = [];

      const counter = new LogCounter(options);
      const lines = new RecordLines(counter);
      await parquetContent(file, 'log.parquet').read({
        fields: (names) => (asked = lines.fields(names)),
        rows: (columns, count) => lines.rows(columns, count),
        columnRows: (runs, count) => lines.columnRows(runs, count),
        malformed: (reason, rows) => lines.malformed(reason, rows),
      });

      const [, ...columnReads] = file.ranges; // the first read is the footer
      const overlaps = (range: [number, number], chunk: { start: number; end: number }) => range[0] < chunk.end && chunk.start < range[1];
      const readChunks = chunks.filter((chunk) => columnReads.some((range) => overlaps(range, chunk)));
      expect([...new Set(readChunks.filter((chunk) => chunk.end - chunk.start > 8192).map((chunk) => chunk.name))].sort()).toEqual(
        [...new Set(chunks.filter((chunk) => asked.includes(chunk.name) && chunk.end - chunk.start > 8192).map((chunk) => chunk.name))].sort(),
      );
      expect(asked).not.toContain('x_edge_request_id');
      expect(asked).toContain('cs_uri_stem');
      expect(columnReads.length).toBeGreaterThanOrEqual(3); // one read (or a few) per row group, not one for the file
    });
  });

  it('counts a file of zero rows as zero lines', async () => {
    await withFile({ accounts, rows: 0, shape: 'strings', codec: 'snappy' }, async ({ path }) => {
      const count = await countLogContent(await openLogFile(path), options, path);

      expect(count.lines.read).toBe(0);
      expect(count.tally.usage()).toEqual([]);
    });
  });

  it('refuses a truncated file as a poison object naming it', async () => {
    await withFile({ accounts, rows: 2000, rowGroupRows: 500, shape: 'strings', codec: 'zstd' }, async ({ bytes }) => {
      const truncated = bytes.subarray(0, bytes.length - 300);

      const counting = countLogContent(parquetContent(memoryFile(truncated), 's3://logs/cut.parquet'), options, 's3://logs/cut.parquet');

      await expect(counting).rejects.toThrow(PoisonObjectError);
      await expect(counting).rejects.toThrow(/s3:\/\/logs\/cut\.parquet: not a readable Parquet file \(footer\)/);
    });
  });

  it('refuses a file whose pages are corrupt as a poison object', async () => {
    await withFile({ accounts, rows: 2000, rowGroupRows: 500, shape: 'strings', codec: 'zstd' }, async ({ bytes }) => {
      const corrupt = Buffer.from(bytes);
      // Overwrite the data between the magic and the footer (the footer stays intact).
      const footerLength = corrupt.readUInt32LE(corrupt.length - 8);
      corrupt.fill(0xa5, 4, corrupt.length - footerLength - 8);

      const counting = countLogContent(parquetContent(memoryFile(corrupt), 'broken.parquet'), options, 'broken.parquet');

      await expect(counting).rejects.toThrow(PoisonObjectError);
      await expect(counting).rejects.toThrow(/broken\.parquet: not a readable Parquet file \(row group 0\)/);
    });
  });

  it('counts every row of a file without a day column as malformed, then refuses it', async () => {
    await withFile({ accounts, rows: 1234, rowGroupRows: 500, shape: 'no-day', codec: 'snappy' }, async ({ bytes }) => {
      const counter = new LogCounter(options);
      const lines = new RecordLines(counter);

      await parquetContent(memoryFile(bytes), 'no-day.parquet').read(lines);
      lines.flush();

      expect(counter.lines).toEqual({ ...counter.lines, read: 1234, malformed: 1234, counted: 0, unattributed: 0 });
      expect(() => counter.finish('no-day.parquet')).toThrow(/no-day\.parquet: not a CloudFront log: 1234 data lines and no #Fields header with a date/);
    });
  });

  it('passes an error of the source on as it is, not as a poison object', async () => {
    await withFile({ accounts, rows: 2000, rowGroupRows: 500, shape: 'strings', codec: 'snappy' }, async ({ bytes }) => {
      const dropped = new Error('socket hang up');
      const file = memoryFile(bytes);
      let reads = 0;
      const flaky: RandomAccessFile = { byteLength: file.byteLength, slice: (start, end) => (++reads === 2 ? Promise.reject(dropped) : file.slice(start, end)) };

      await expect(countLogContent(parquetContent(flaky, 'flaky.parquet'), options, 'flaky.parquet')).rejects.toBe(dropped);
    });
  });

  it('reads the next row group while counting one, and its read failing is the count\'s error', async () => {
    await withFile({ accounts, rows: 8192, rowGroupRows: 2048, shape: 'strings', codec: 'snappy' }, async ({ bytes }) => {
      const groups = parquetMetadata(new Uint8Array(bytes).buffer).row_groups.map((group) => Math.min(...group.columns.map((column) => Number(column.meta_data!.dictionary_page_offset || column.meta_data!.data_page_offset))));
      const groupOf = (start: number) => groups.filter((first) => first <= start).length - 1;
      const file = memoryFile(bytes);
      const counter = new LogCounter(options);
      const lines = new RecordLines(counter);
      // Per row group: the rows counted when its first chunk was asked for.
      const countedWhenRead = new Map<number, number>();
      const watched: RandomAccessFile = {
        byteLength: file.byteLength,
        slice: (start, end) => {
          const group = groupOf(start);
          if (group >= 0 && !countedWhenRead.has(group)) countedWhenRead.set(group, counter.lines.read);
          return file.slice(start, end);
        },
      };

      await parquetContent(watched, 'prefetch.parquet').read(lines);
      lines.flush();

      expect(groups).toHaveLength(4);
      // Group g + 1 is read before group g is counted (g groups of 2,048 rows counted).
      expect([...countedWhenRead.entries()].sort(([a], [b]) => a - b)).toEqual([
        [0, 0],
        [1, 0],
        [2, 2048],
        [3, 4096],
      ]);
      expect(counter.lines.read).toBe(8192);

      // The last group's read fails while the one before it is counted: that failure is the count's.
      const dropped = new Error('socket hang up');
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on('unhandledRejection', onUnhandled);
      try {
        const flaky: RandomAccessFile = { byteLength: file.byteLength, slice: (start, end) => (groupOf(start) === 3 ? Promise.reject(dropped) : file.slice(start, end)) };
        await expect(countLogContent(parquetContent(flaky, 'flaky.parquet'), options, 'flaky.parquet')).rejects.toBe(dropped);
        await new Promise((resolve) => setImmediate(resolve));
      } finally {
        process.off('unhandledRejection', onUnhandled);
      }
      expect(unhandled).toEqual([]);
    });
  });

  it('reads each row group into the arrays of the one two before it, with the same counts, and passes its read errors on', async () => {
    await withFile({ accounts, rows: 8192, rowGroupRows: 2048, shape: 'strings', codec: 'snappy' }, async ({ bytes }) => {
      const file = memoryFile(bytes);
      const sliceOnly = await countLogContent(parquetContent(file, 'slices.parquet'), options, 'slices.parquet');
      // Per read into an array: the array, and the bytes it was to hold.
      const reads: { into: Uint8Array; start: number; end: number }[] = [];
      const reading = (failAt?: number): RandomAccessFile => ({
        byteLength: file.byteLength,
        slice: (start, end) => file.slice(start, end),
        async readInto(start, end, into) {
          if (reads.length === failAt) throw new Error('socket hang up');
          reads.push({ into, start, end });
          into.set(new Uint8Array(await file.slice(start, end)));
          return into.subarray(0, end - start);
        },
      });

      const intoArrays = await countLogContent(parquetContent(reading(), 'into.parquet'), options, 'into.parquet');

      expect(intoArrays.tally.usage()).toEqual(sliceOnly.tally.usage());
      expect(intoArrays.lines).toEqual(sliceOnly.lines);
      const columns = reads.length / 4;
      expect(Number.isInteger(columns) && columns > 0).toBe(true);
      const arrays = (group: number) => reads.slice(group * columns, (group + 1) * columns).map((read) => read.into);
      expect(new Set([...arrays(0), ...arrays(1)]).size).toBe(2 * columns);
      expect(arrays(2).every((array, c) => array === arrays(0)[c])).toBe(true);
      expect(arrays(3).every((array, c) => array === arrays(1)[c])).toBe(true);

      reads.length = 0;
      const failing = countLogContent(parquetContent(reading(columns + 1), 'flaky.parquet'), options, 'flaky.parquet');
      await expect(failing).rejects.toThrow('socket hang up');
      await expect(failing).rejects.not.toBeInstanceOf(PoisonObjectError);
    });
  });

  it('tells Parquet from text by its first bytes, not by its name', async () => {
    await withFile({ accounts, rows: 10, shape: 'strings', codec: 'snappy' }, async ({ bytes, path }) => {
      const text = gzipSync('#Fields: date time sc-bytes x-host-header\n2026-11-21\t00:00:01\t10\tacme.x.com\n');
      const named = `${path}.txt.parquet`;
      writeFileSync(named, text);

      const parquet = await logContent(Readable.from([bytes.subarray(0, 2), bytes.subarray(2)]), 'a.gz', () => memoryFile(bytes));
      const gzipped = await logContent(Readable.from([text]), 'b.parquet', () => memoryFile(text));
      const fromFile = await countLogContent(await openLogFile(named), options, named);

      expect(parquet.kind).toBe('records');
      expect(gzipped.kind).toBe('text');
      expect(fromFile.tally.usage()).toMatchObject([{ account: 'acme', day: '2026-11-21', metrics: { requests: 1, bytes: 10, authorization_requests: 0 } }]);
      expect(readFileSync(named).subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
      expect(parquetSchema(parquetMetadata(new Uint8Array(bytes).buffer)).children.map((c) => c.element.name)).toContain('cs_Host');
    });
  });
});
