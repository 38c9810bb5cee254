import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { parquetMetadata, type FileMetaData } from 'hyparquet';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { leanMetadata } from '../../src/adapters/logs/parquet-footer';

/**
 * src/adapters/logs/parquet-footer.ts reads a footer for what counting needs and steps
 * over the rest: what it reads must be what hyparquet reads from the same footer, for
 * files of any writer, codec, row group size, column types and statistics; and no bytes
 * may make it throw or run on (it gives up: hyparquet then reads the footer).
 */
const META_FIELDS = ['type', 'encodings', 'path_in_schema', 'codec', 'num_values', 'total_uncompressed_size', 'total_compressed_size', 'data_page_offset', 'index_page_offset', 'dictionary_page_offset'] as const;

/** What the column reader reads of a footer. */
function used(metadata: FileMetaData) {
  return {
    version: metadata.version,
    schema: metadata.schema,
    num_rows: metadata.num_rows,
    key_value_metadata: metadata.key_value_metadata,
    created_by: metadata.created_by,
    row_groups: metadata.row_groups.map((group) => ({
      num_rows: group.num_rows,
      columns: group.columns.map((column) => ({
        file_path: column.file_path,
        file_offset: column.file_offset,
        meta_data: Object.fromEntries(META_FIELDS.map((field) => [field, column.meta_data?.[field]])),
      })),
    })),
  };
}

const TYPES = ['VARCHAR', 'BIGINT', 'INTEGER', 'DATE', 'TIMESTAMP', 'DOUBLE', 'BOOLEAN', 'DECIMAL(9,3)', 'VARCHAR[]', 'STRUCT(a INTEGER, b VARCHAR)', 'MAP(VARCHAR, INTEGER)', 'UUID', 'BLOB'] as const;

async function duckdbFile(types: readonly string[], rows: number, settings: string): Promise<Uint8Array> {
  const folder = mkdtempSync(join(tmpdir(), 'tally-footer-'));
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    const file = join(folder, 'f.parquet');
    const columns = types.map((type, c) => {
      const value =
        type === 'VARCHAR' ? `'v' || (i % 37)::VARCHAR || repeat('x', (i % 5)::INT)`
        : type === 'VARCHAR[]' ? `[('a' || i::VARCHAR), 'b']`
        : type.startsWith('STRUCT') ? `{'a': i::INT, 'b': 'b' || i::VARCHAR}`
        : type.startsWith('MAP') ? `MAP {'k' || (i % 3)::VARCHAR: i::INT}`
        : type === 'UUID' ? `uuid()`
        : type === 'BLOB' ? `('b' || i::VARCHAR)::BLOB`
        : type === 'BOOLEAN' ? `i % 2 = 0`
        : type === 'DATE' ? `DATE '2026-11-21' + (i % 3)::INT`
        : type === 'TIMESTAMP' ? `TIMESTAMP '2026-11-21 00:00:00' + to_seconds(i)`
        : `(i * 7)::${type}`;
      return `CASE WHEN i % 11 = 5 THEN NULL ELSE ${value} END AS c${c}`;
    });
    await connection.run(`COPY (SELECT ${columns.join(', ')} FROM range(${rows}) t(i)) TO '${file}' (FORMAT parquet, ${settings})`);
    return new Uint8Array(readFileSync(file));
  } finally {
    connection.closeSync();
    instance.closeSync();
    rmSync(folder, { recursive: true, force: true });
  }
}

const tailOf = (bytes: Uint8Array) => new Uint8Array(bytes).buffer;

describe('the lean footer reader', () => {
  it('reads what hyparquet reads from DuckDB files of any columns, codec and row groups', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom(...TYPES), { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 0, max: 5000 }),
        fc.constantFrom('snappy', 'zstd', 'gzip', 'uncompressed'),
        fc.constantFrom('V1', 'V2'),
        fc.integer({ min: 1, max: 3000 }),
        async (types, rows, codec, version, groupRows) => {
          const bytes = await duckdbFile(types, rows, `COMPRESSION ${codec}, PARQUET_VERSION ${version}, ROW_GROUP_SIZE ${groupRows}`);
          const lean = leanMetadata(tailOf(bytes));
          expect(lean).toBeDefined();
          expect(used(lean!)).toEqual(used(parquetMetadata(tailOf(bytes))));
        },
      ),
      { numRuns: 25 },
    );
  });

  it('reads what hyparquet reads from hyparquet-writer files (statistics, key-value metadata)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string(), fc.integer(), fc.option(fc.double({ noNaN: true }), { nil: null })), { minLength: 1, maxLength: 300 }), fc.integer({ min: 1, max: 120 }), (rows, rowGroupSize) => {
        const buffer = parquetWriteBuffer({
          columnData: [
            { name: 'text', data: rows.map((row) => row[0]), type: 'STRING' },
            { name: 'number', data: rows.map((row) => row[1]), type: 'INT32' },
            { name: 'real', data: rows.map((row) => row[2]), type: 'DOUBLE', nullable: true },
          ],
          rowGroupSize,
          kvMetadata: [{ key: 'writer', value: 'test' }],
        });
        const lean = leanMetadata(buffer);
        expect(lean).toBeDefined();
        expect(used(lean!)).toEqual(used(parquetMetadata(buffer)));
      }),
      { numRuns: 60 },
    );
  });

  it('gives up on damaged footers (never throws, never runs on)', async () => {
    const bytes = await duckdbFile(['VARCHAR', 'BIGINT', 'DATE'], 5000, 'ROW_GROUP_SIZE 1000');
    const length = Buffer.from(bytes).readUInt32LE(bytes.length - 8);
    const start = bytes.length - 8 - length;
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: length - 1 }), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }), fc.nat(length), (changes, cut) => {
        const damaged = new Uint8Array(bytes.subarray(start));
        for (const [at, value] of changes) damaged[at] = value;
        // Cut inside the metadata too: its length and PAR1 kept at the end.
        const cutOut = Buffer.concat([damaged.subarray(0, Math.max(0, length - cut)), damaged.subarray(length)]);
        for (const tail of [damaged, cutOut]) {
          const lean = leanMetadata(new Uint8Array(tail).buffer);
          expect(lean === undefined || Array.isArray(lean.row_groups)).toBe(true);
        }
      }),
      { numRuns: 400 },
    );
  });
});
