import { gunzipSync } from 'node:zlib';
import { parquetMetadata, parquetRead, parquetSchema, type AsyncBuffer, type Compressors, type FileMetaData, type ParquetParsers } from 'hyparquet';
import { PoisonObjectError } from '../../domain/errors';
import { prepareColumnSums } from '../../domain/logs/columns/column-sum';
import type { LogContent, RecordSink } from '../../domain/logs/log-records';
import { asFieldValues, BYTES_PARSERS, fetchGroupColumns, flatColumns, readGroupColumns, type ColumnBuffers, type RandomAccessFile } from './parquet-columns';
import { prepareDecoding } from './decoding-memory';
import { footerMetadata, footerTail } from './parquet-footer';
import { PARQUET_PLAIN_WASM_BASE64 } from './parquet-plain-wasm';
import { PARQUET_RLE_WASM_BASE64 } from './parquet-rle-wasm';
import { snappyUncompress } from './parquet-snappy';
import { PARQUET_SNAPPY_WASM_BASE64 } from './parquet-snappy-wasm';

/** A file read at random offsets (see parquet-columns.ts, where the reads are). */
export type { RandomAccessFile } from './parquet-columns';

/**
 * The codecs read. GZIP, the codec AWS's vended-log Parquet (VPC flow logs, CloudFront
 * v2) is described with, goes to Node's native zlib, and Snappy (CloudFront's and DuckDB's)
 * to Tally's own WebAssembly decoder (parquet-snappy.ts); hyparquet-compressors adds
 * ZSTD, Brotli and LZ4, loaded the first time a file needs one: loading it (its
 * WebAssembly compiled, Brotli's dictionary and GZIP's tables built) took about 12 ms of
 * CPU at every fresh process's start, text logs and Snappy Parquet included (issue 34).
 */
const OWN_CODECS: Compressors = {
  GZIP: (input: Uint8Array) => new Uint8Array(gunzipSync(input)),
  SNAPPY: (input: Uint8Array, outputLength: number) => snappyUncompress(input, outputLength),
};
const READ_HERE = new Set(['UNCOMPRESSED', 'GZIP', 'SNAPPY']);
let allCodecs: Promise<Compressors> | undefined;

/** The decompressors a file's column chunks need: hyparquet-compressors only when one is not read here. */
async function compressorsFor(metadata: FileMetaData): Promise<Compressors> {
  const codecs = metadata.row_groups.flatMap((group) => group.columns.map((column) => column.meta_data?.codec));
  const needed = codecs.filter((codec) => codec !== undefined && !READ_HERE.has(codec));
  if (needed.length === 0) return OWN_CODECS;
  allCodecs ??= import('hyparquet-compressors').then(({ compressors }) => ({ ...compressors, ...OWN_CODECS }));
  return allCodecs;
}

/** hyparquet's parser for STRING columns, made to hand over the UTF-8 bytes as they are (RecordLines copies them). */
const KEEP_TEXT_AS_BYTES: Partial<ParquetParsers> = BYTES_PARSERS;

/**
 * The content of a Parquet log (CloudFront standard logging v2): a reader of records,
 * never line text. `read(sink)` reads the footer once, asks the sink which of the
 * file's columns it needs, then reads row group by row group only those columns' chunks.
 * Flat columns (CloudFront's) are decoded page by page into runs of rows for
 * `sink.columnRows` (parquet-columns.ts): memory holds the compressed chunks of one row
 * group and one decoded page per column. Other schemas are read by hyparquet a row group
 * at a time and handed to `sink.rows`.
 *
 * Values are passed on as the writer typed them (AWS writes strings; another writer's
 * int64 is a bigint, a double a number), except dates and times, which are written as
 * the CloudFront field of the column's name says: `date` YYYY-MM-DD, `time` HH:MM:SS,
 * `timestamp` epoch seconds, any other (`timestamp_ms`) epoch milliseconds, all UTC.
 *
 * A file that cannot be decoded (truncated, no `PAR1` footer, a corrupt page, a codec
 * not read) is a {@link PoisonObjectError} naming `objectName`; an error of the file
 * itself (a dropped connection, an S3 object overwritten while it was read) is rethrown
 * as it is, for the caller to retry. Rows of a group read before its failing page may
 * have reached the sink: the object is refused whole, so its counts are never used.
 */
export function parquetContent(file: RandomAccessFile, objectName: string): Extract<LogContent, { kind: 'records' }> {
  return {
    kind: 'records',
    format: 'parquet',
    read: (sink) => readParquet(file, objectName, sink),
  };
}

async function readParquet(file: RandomAccessFile, objectName: string, sink: RecordSink): Promise<void> {
  // Errors of the source pass through untouched: only decoding errors make a poison object.
  const sourceErrors = new WeakSet<object>();
  const sourceError = (error: unknown): never => {
    if (typeof error === 'object' && error !== null) sourceErrors.add(error);
    throw error;
  };
  const readInto = file.readInto?.bind(file);
  const source: RandomAccessFile = {
    byteLength: file.byteLength,
    slice: async (start, end) => {
      try {
        return await file.slice(start, end);
      } catch (error) {
        return sourceError(error);
      }
    },
    readInto: readInto === undefined ? undefined : (start, end, into) => readInto(start, end, into).catch(sourceError),
  };
  const decoding = async <T>(what: string, work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (typeof error === 'object' && error !== null && sourceErrors.has(error)) throw error;
      throw new PoisonObjectError(objectName, `not a readable Parquet file (${what}): ${(error as Error)?.message ?? String(error)}`, { cause: error });
    }
  };

  // The decoders and the counting module compiled on V8's other threads while the footer is read.
  const preparing = Promise.all([prepareDecoding([PARQUET_SNAPPY_WASM_BASE64, PARQUET_RLE_WASM_BASE64, PARQUET_PLAIN_WASM_BASE64]), prepareColumnSums()]);
  // Awaited below; a module that fails to compile is compiled again (and fails) on first use.
  preparing.catch(() => undefined);
  // The footer read for what counting column by column needs (parquet-footer.ts).
  const tail = await decoding('footer', () => footerTail(source));
  let metadata = await decoding('footer', async () => footerMetadata(tail));
  const names = await decoding('schema', async () => parquetSchema(metadata).children.map((child) => child.element.name));
  const wanted = sink.fields(names);
  const columns = [...wanted];
  if (columns.length > 0 && (await decoding('schema', async () => flatColumns(metadata, columns)))) {
    // Column by column, page by page (parquet-columns.ts); the next row group's chunks
    // read while this one's are counted.
    const groups = [...metadata.row_groups.entries()].filter(([, rowGroup]) => Number(rowGroup.num_rows) > 0);
    // Row groups read into two sets of arrays in turn: one counted, the next read meanwhile.
    const chunkArrays: [Uint8Array[], Uint8Array[]] = [[], []];
    const fetch = (at: number) => {
      const [group, rowGroup] = groups[at]!;
      const fetching = decoding(`row group ${group}`, async () => fetchGroupColumns(source, rowGroup, columns, chunkArrays[at & 1]));
      // Awaited below; a failure while the group before is counted is seen there, never unhandled.
      fetching.catch(() => undefined);
      return fetching;
    };
    const buffers: ColumnBuffers = new Map();
    // The first row group's chunks read while the decompressors load.
    let next = groups.length === 0 ? undefined : fetch(0);
    const compressors = await compressorsFor(metadata);
    await preparing.catch(() => undefined);
    for (let at = 0; at < groups.length; at++) {
      const chunks = await next!;
      next = at + 1 < groups.length ? fetch(at + 1) : undefined;
      const [group, rowGroup] = groups[at]!;
      await decoding(`row group ${group}`, async () => readGroupColumns(chunks, metadata, rowGroup, columns, compressors, (runs, count) => sink.columnRows(runs, count), buffers));
    }
    return;
  }
  // hyparquet's own reader reads the footer whole.
  metadata = await decoding('footer', async () => parquetMetadata(tail));
  const compressors = await compressorsFor(metadata);
  let groupStart = 0;
  for (const [group, rowGroup] of metadata.row_groups.entries()) {
    const rows = Number(rowGroup.num_rows);
    const groupEnd = groupStart + rows;
    if (rows > 0) {
      const data = await decoding(`row group ${group}`, () => readGroup(source, metadata, columns, groupStart, groupEnd, compressors));
      sink.rows(
        columns.map((name) => asFieldValues(name, data.get(name))),
        rows,
      );
    }
    groupStart = groupEnd;
  }
}

/** The columns of rows `[start, end)` (one row group), each as one array. */
async function readGroup(file: AsyncBuffer, metadata: FileMetaData, columns: string[], start: number, end: number, compressors: Compressors): Promise<Map<string, ArrayLike<unknown>>> {
  const pages = new Map<string, { rowStart: number; values: ArrayLike<unknown> }[]>();
  if (columns.length > 0) {
    await parquetRead({
      file,
      metadata,
      columns,
      rowStart: start,
      rowEnd: end,
      compressors,
      // Text stays UTF-8 bytes: the counter reads bytes, so decoding it would only be undone.
      utf8: false,
      parsers: KEEP_TEXT_AS_BYTES,
      onChunk: (chunk) => {
        const list = pages.get(chunk.columnName) ?? [];
        list.push({ rowStart: chunk.rowStart, values: chunk.columnData });
        pages.set(chunk.columnName, list);
      },
    });
  }
  const result = new Map<string, ArrayLike<unknown>>();
  for (const name of columns) {
    const chunks = pages.get(name) ?? [];
    const only = chunks.length === 1 ? chunks[0]! : undefined;
    if (only !== undefined && only.rowStart === start && only.values.length === end - start) {
      // The common case: the column's chunk is the row group, as it is: no copy.
      result.set(name, only.values);
      continue;
    }
    const values = new Array<unknown>(end - start);
    let filled = 0;
    for (const page of chunks) {
      // A chunk may hold rows outside the requested range.
      for (let i = 0; i < page.values.length; i++) {
        const row = page.rowStart + i;
        if (row >= start && row < end) {
          values[row - start] = page.values[i];
          filled++;
        }
      }
    }
    if (filled !== end - start) throw new Error(`column ${name} has ${filled} values for ${end - start} rows`);
    result.set(name, values);
  }
  return result;
}
