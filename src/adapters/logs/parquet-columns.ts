import type { AsyncBuffer, ColumnChunk, Compressors, DecodedArray, FileMetaData, PageHeader, RowGroup } from 'hyparquet';
import type { ColumnDecoder } from 'hyparquet/src/types.js';
import { parquetSchema } from 'hyparquet';
import { parquetHeader, readPage } from 'hyparquet/src/column.js';
import { convert, DEFAULT_PARSERS } from 'hyparquet/src/convert.js';
import { decompressPage } from 'hyparquet/src/datapage.js';
import { getMaxDefinitionLevel, getTreePath, isFlatColumn } from 'hyparquet/src/schema.js';
import { fieldKey } from '../../domain/logs/cloudfront-log';
import type { ColumnRun } from '../../domain/logs/columns/column-run';
import { decodingBuffer } from './decoding-memory';
import { placePlainValues, plainNumbers, plainNumbersInMemory, type NumberUnit } from './parquet-plain';
import { snappyIntoMemory, snappyUncompress } from './parquet-snappy';
import { HybridDecoder } from './parquet-rle';

/**
 * Parquet read column by column, page by page, straight into the bytes of the counter's
 * lines: no object per value and no row group held whole. Each column chunk of a row
 * group is fetched (compressed, only the columns counting reads) and its pages decoded
 * one at a time: a dictionary page becomes its entries' text once, a data page an array
 * of where each row's text is (a dictionary entry, a span of a plain page) so that rows
 * are written by copying bytes. Memory is the compressed chunks of two row groups (the
 * one counted and the next, read meanwhile) and one decoded page per column, whatever
 * the row group's size.
 *
 * Text columns (BYTE_ARRAY, no logical type or STRING) with PLAIN or dictionary pages
 * take this path; any other column or encoding is decoded by hyparquet's own page
 * reader, page by page, and its values written as text as {@link valueText} says:
 * the same text either way.
 */

/** hyparquet's parsers, with text kept as its UTF-8 bytes (the counter reads bytes). */
export const BYTES_PARSERS = { ...DEFAULT_PARSERS, stringFromBytes: (bytes: Uint8Array): unknown => bytes };

/** Whether every one of `columns` is a flat column (no list, map or group), which this reader reads. */
export function flatColumns(metadata: FileMetaData, columns: readonly string[]): boolean {
  const tree = parquetSchema(metadata);
  return columns.every((name) => {
    const path = getTreePath(tree, [name]);
    return path.length === 2 && isFlatColumn(path);
  });
}

/**
 * A file read at random offsets (S3 ranged GETs, a local file): hyparquet's `AsyncBuffer`.
 * `slice(start, end)` resolves with bytes `[start, end)`; `readInto(start, end, into)`,
 * where a file has it, reads them into `into` (at least `end - start` long) and resolves
 * with that part of it, so that a reader can read row group after row group into the same
 * memory.
 */
export interface RandomAccessFile extends AsyncBuffer {
  readInto?(start: number, end: number, into: Uint8Array): Promise<Uint8Array>;
}

/** Where a row group's chunk of column `name` is in the file, and its metadata. */
function chunkOf(rowGroup: RowGroup, name: string): { meta: NonNullable<ColumnChunk['meta_data']>; start: number; end: number } {
  const chunk = rowGroup.columns.find((column: ColumnChunk) => column.meta_data?.path_in_schema.length === 1 && column.meta_data.path_in_schema[0] === name);
  const meta = chunk?.meta_data;
  if (meta === undefined) throw new Error(`row group has no column chunk for ${name}`);
  // As hyparquet plans it: a dictionary page offset of 0 means none.
  const start = Number(meta.dictionary_page_offset || meta.data_page_offset);
  return { meta, start, end: start + Number(meta.total_compressed_size) };
}

/**
 * The compressed chunks of `columns` in one row group, read from the file: started when
 * called, so that the next row group's are read while this one's are counted (the reads
 * run on libuv's threads, the counting on this one). A file that reads into a given array
 * (a local file) reads each column's chunk into `into[c]`, made or grown here and kept by
 * the caller for a later row group: new memory is paid for in page faults (about 2 µs a
 * 4 KiB page on these machines), and a file's chunks were most of the memory its count
 * touched after its first row group (issue 34).
 */
export function fetchGroupColumns(file: RandomAccessFile, rowGroup: RowGroup, columns: readonly string[], into?: Uint8Array[]): Promise<Uint8Array[]> {
  return Promise.all(
    columns.map(async (name, c) => {
      const { start, end } = chunkOf(rowGroup, name);
      if (into === undefined || file.readInto === undefined) return new Uint8Array(await file.slice(start, end));
      let buffer = into[c];
      // A quarter more than asked: a later row group's chunk is often a little larger.
      if (buffer === undefined || buffer.length < end - start) into[c] = buffer = new Uint8Array(Math.ceil((end - start) * 1.25));
      return file.readInto(start, end, buffer);
    }),
  );
}

/** Per column, the typed arrays its pages are decoded into, kept from row group to row group of a file. */
export type ColumnBuffers = Map<string, PageBuffers>;

/**
 * Reads rows `[0, rows)` of one row group from its chunks of `columns` (fetched by
 * {@link fetchGroupColumns}), and hands them over in runs (`onRows(runs, count)`: row i
 * of the run is `runs[c]`'s value at `runs[c].at + i`).
 */
export function readGroupColumns(
  chunks: readonly Uint8Array[],
  metadata: FileMetaData,
  rowGroup: RowGroup,
  columns: readonly string[],
  compressors: Compressors,
  onRows: (runs: readonly ColumnRun[], count: number) => void,
  buffers: ColumnBuffers = new Map(),
): void {
  const rows = Number(rowGroup.num_rows);
  const tree = parquetSchema(metadata);
  const readers = columns.map((name, c) => {
    const { meta } = chunkOf(rowGroup, name);
    const schemaPath = getTreePath(tree, [name]);
    const decoder: ColumnDecoder = {
      pathInSchema: meta.path_in_schema,
      element: schemaPath[schemaPath.length - 1]!.element,
      schemaPath,
      type: meta.type,
      codec: meta.codec,
      compressors,
      utf8: false,
      parsers: BYTES_PARSERS,
    };
    let columnBuffers = buffers.get(name);
    if (columnBuffers === undefined) buffers.set(name, (columnBuffers = new PageBuffers()));
    return new ColumnPages(name, chunks[c]!, decoder, columnBuffers);
  });
  const runs = readers.map((reader) => reader.run);
  for (let done = 0; done < rows; ) {
    let count = rows - done;
    for (const reader of readers) count = Math.min(count, reader.ready());
    onRows(runs, count);
    for (const reader of readers) reader.run.at += count;
    done += count;
  }
}

/** The pages of one column chunk, decoded one at a time. */
class ColumnPages {
  readonly run: ColumnRun = {
    bytes: new Uint8Array(0),
    starts: new Int32Array(0),
    ends: new Int32Array(0),
    at: 0,
    longest: 0,
    entries: undefined,
    dictionary: undefined,
    dictionarySize: 0,
    numbers: undefined,
    numberKind: undefined,
    numberText: undefined,
    byteCounts: undefined,
  };
  private length = 0;
  private readonly reader: { view: DataView; offset: number };
  private readonly maxDefinition: number;
  /** Text columns: pages read here. Any other: by hyparquet's page reader. */
  private readonly text: boolean;
  private dictionary: Rendered | undefined;
  /** The dictionary as hyparquet's page reader wants it (for columns it reads). */
  private values: DecodedArray | undefined;
  /** A typed column's dictionary, as numbers (when this reader decodes its pages). */
  private numericEntries: Float64Array | undefined;
  private readonly hybrid = new HybridDecoder();
  /** Typed integer, date and timestamp columns: read as numbers (see {@link numberKind}). */
  private readonly numeric: NumericColumn | undefined;
  /** The sc-bytes column: its PLAIN text pages' values are read as byte counts too. */
  private readonly byteCountColumn: boolean;

  constructor(
    private readonly name: string,
    chunk: Uint8Array,
    private readonly decoder: ColumnDecoder,
    private readonly buffers: PageBuffers,
  ) {
    this.reader = { view: new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength), offset: 0 };
    this.maxDefinition = getMaxDefinitionLevel(decoder.schemaPath);
    const { element } = decoder;
    const logical = element.logical_type?.type;
    this.text = decoder.type === 'BYTE_ARRAY' && (element.converted_type === undefined || element.converted_type === 'UTF8') && (logical === undefined || logical === 'STRING');
    this.byteCountColumn = fieldKey(name) === fieldKey('sc-bytes');
    const kind = numberKind(decoder);
    this.numeric = kind === undefined ? undefined : { kind, unit: numberUnit(decoder, kind), decoder: { ...decoder, parsers: NUMBER_PARSERS }, text: numberText(kind, name) };
  }

  /** Values of the current page not yet handed over; reads the next page when none are left. */
  ready(): number {
    while (this.length - this.run.at <= 0) this.nextPage();
    return this.length - this.run.at;
  }

  private nextPage(): void {
    const reader = this.reader;
    if (reader.offset >= reader.view.byteLength - 1) throw new Error(`column ${this.name} ends before its row group's last row`);
    const header = parquetHeader(reader);
    if (header.type === 'DICTIONARY_PAGE') {
      if (this.text) {
        this.dictionary = this.textDictionary(header);
        return;
      }
      const start = reader.offset;
      if (this.numeric?.unit !== undefined && this.numericDictionary(header)) return;
      reader.offset = start;
      this.numericEntries = undefined;
      const { data } = readPage(reader, header, this.decoder, undefined, undefined, 0);
      if (data === undefined) return;
      if (this.text) this.dictionary = renderValues(data as ArrayLike<unknown>, this.name);
      else this.values = convert(data, this.numeric?.decoder ?? this.decoder);
      return;
    }
    const encoding = header.data_page_header?.encoding ?? header.data_page_header_v2?.encoding;
    const own = this.text && (encoding === 'PLAIN' || encoding === 'PLAIN_DICTIONARY' || encoding === 'RLE_DICTIONARY');
    const numeric = this.numeric;
    if (numeric !== undefined) {
      const start = reader.offset;
      if (numeric.unit !== undefined && (encoding === 'PLAIN' || ((encoding === 'PLAIN_DICTIONARY' || encoding === 'RLE_DICTIONARY') && this.numericEntries !== undefined))) {
        const numbers = this.numericPage(header, encoding, numeric.unit);
        if (numbers !== undefined) {
          this.useNumbers(numbers, numeric);
          return;
        }
        // An integer past 2^53: the page is read again by hyparquet and written as its exact text.
        reader.offset = start;
      }
      const { data } = readPage(reader, header, numeric.decoder, this.values, undefined, 0);
      if (data === undefined) throw new Error(`column ${this.name}: a page of no data`);
      const numbers = asNumbers(data as ArrayLike<unknown>, numeric.kind);
      // An integer past 2^53 is written as its exact text.
      if (numbers === undefined) this.use(renderValues(data as ArrayLike<unknown>, this.name));
      else this.useNumbers(numbers, numeric);
      return;
    }
    if (!own) {
      const { data } = readPage(reader, header, this.decoder, this.values, undefined, 0);
      if (data === undefined) throw new Error(`column ${this.name}: a page of no data`);
      this.use(renderValues(data as ArrayLike<unknown>, this.name));
      return;
    }
    this.textPage(header, encoding);
  }

  private use(rendered: Rendered, entries?: Int32Array, byteCounts?: Float64Array): void {
    const run = this.run;
    run.byteCounts = byteCounts;
    run.bytes = rendered.bytes;
    run.starts = rendered.starts;
    run.ends = rendered.ends;
    run.longest = rendered.longest;
    run.at = 0;
    run.entries = entries;
    run.dictionary = entries === undefined ? undefined : this.dictionary;
    run.dictionarySize = entries === undefined ? 0 : this.dictionary!.starts.length;
    run.numbers = undefined;
    run.numberKind = undefined;
    run.numberText = undefined;
    this.length = entries === undefined ? rendered.starts.length : entries.length;
  }

  private useNumbers(numbers: Float64Array, numeric: NumericColumn): void {
    const run = this.run;
    run.bytes = EMPTY;
    run.starts = NO_PLACES;
    run.ends = NO_PLACES;
    run.longest = 32;
    run.at = 0;
    run.entries = undefined;
    run.dictionary = undefined;
    run.dictionarySize = 0;
    run.numbers = numbers;
    run.numberKind = numeric.kind;
    run.numberText = numeric.text;
    run.byteCounts = undefined;
    this.length = numbers.length;
  }

  /**
   * A data page (v1 or v2), decompressed: its values part from `at`, its rows, how many
   * are present, and each row's definition level (undefined: a required column, or every
   * row present).
   */
  private dataPage(header: PageHeader): { page: Uint8Array; at: number; rows: number; present: number; definitions: Int32Array | undefined } {
    const reader = this.reader;
    const compressed = new Uint8Array(reader.view.buffer, reader.view.byteOffset + reader.offset, header.compressed_page_size);
    reader.offset += header.compressed_page_size;
    const maxDefinition = this.maxDefinition;
    let page: Uint8Array;
    let rows: number;
    let definitions: Int32Array | undefined;
    let present: number;
    let at: number;
    const v2 = header.data_page_header_v2;
    if (v2 !== undefined) {
      rows = v2.num_values;
      const levels = v2.repetition_levels_byte_length + v2.definition_levels_byte_length;
      present = rows;
      if (maxDefinition > 0) ({ present, definitions } = this.definitionsOf(compressed, v2.repetition_levels_byte_length, v2.definition_levels_byte_length, rows));
      const values = compressed.subarray(levels);
      page = v2.is_compressed === false ? values : this.decompress(values, header.uncompressed_page_size - levels);
      at = 0;
    } else {
      rows = header.data_page_header!.num_values;
      page = this.decompress(compressed, header.uncompressed_page_size);
      at = 0;
      present = rows;
      if (maxDefinition > 0) {
        // The levels' byte length (4 bytes, little-endian), then the levels.
        if (page.length < 4) throw new Error(`column ${this.name}: a data page too short for its definition levels`);
        const length = (page[0]! | (page[1]! << 8) | (page[2]! << 16) | (page[3]! << 24)) >>> 0;
        ({ present, definitions } = this.definitionsOf(page, 4, length, rows));
        at = 4 + length;
      }
    }
    return { page, at, rows, present, definitions };
  }

  /**
   * A data page's bytes, decompressed. Snappy's into the column's own array, used again
   * for its next page (a data page is done with when the next one is read): a new array
   * per page cost as much as decoding it (parquet-snappy.ts).
   */
  private decompress(compressed: Uint8Array, size: number): Uint8Array {
    const { codec, compressors } = this.decoder;
    if (codec === 'SNAPPY') return snappyUncompress(compressed, size, this.buffers.bytes(size));
    return decompressPage(compressed, size, codec, compressors);
  }

  /**
   * How many of `rows` have a value, by their definition levels (`length` bytes of
   * `bytes` from `start`), and each row's level when some have none: levels are copied out
   * only where a row is absent (nearly never).
   */
  private definitionsOf(bytes: Uint8Array, start: number, length: number, rows: number): { present: number; definitions: Int32Array | undefined } {
    const maxDefinition = this.maxDefinition;
    const present = this.hybrid.matchesOf(bytes, start, start + length, bitWidth(maxDefinition), rows, maxDefinition);
    return { present, definitions: present === rows ? undefined : this.hybrid.copyLast(this.buffers.levels(rows)) };
  }

  /**
   * The bytes of the dictionary page at the reader, decompressed; the reader moves past it.
   * Snappy's into the column's own array for dictionaries, used again by its next row
   * group's: a chunk has one dictionary, done with when its row group is (a time column's
   * is some 260 KB a row group, new memory each time before, issue 34).
   */
  private dictionaryPage(header: PageHeader): Uint8Array {
    const reader = this.reader;
    const compressed = new Uint8Array(reader.view.buffer, reader.view.byteOffset + reader.offset, header.compressed_page_size);
    reader.offset += header.compressed_page_size;
    const { codec, compressors } = this.decoder;
    if (codec === 'SNAPPY') return snappyUncompress(compressed, header.uncompressed_page_size, this.buffers.bytes(header.uncompressed_page_size, DICTIONARY_SLOT));
    return decompressPage(compressed, header.uncompressed_page_size, codec, compressors);
  }

  /** A dictionary page of a text column: its entries' text where it is in the page (escaped in a copy when a value holds a tab, LF or CR). */
  private textDictionary(header: PageHeader): Rendered {
    const page = this.dictionaryPage(header);
    const count = header.dictionary_page_header?.num_values ?? 0;
    // Arrays of the dictionary's own, not the data pages' (it outlives them), kept for the next row group's.
    return plainText(page, 0, count, undefined, 0, this.buffers.ints(DICTIONARY_STARTS, count), this.buffers.ints(DICTIONARY_ENDS, count), this.name);
  }

  /** A dictionary page of a typed column: its entries as numbers; false when one is an integer past 2^53. */
  private numericDictionary(header: PageHeader): boolean {
    const page = this.dictionaryPage(header);
    const count = header.dictionary_page_header?.num_values ?? 0;
    const entries = new Float64Array(count);
    if (!readNumbers(page, 0, count, this.decoder.type === 'INT64', this.numeric!.unit!, entries)) return false;
    this.numericEntries = entries;
    return true;
  }

  /** A data page of a typed column as numbers (NaN: none); undefined when one is an integer past 2^53. */
  private numericPage(header: PageHeader, encoding: string, unit: NumberUnit): Float64Array | undefined {
    if (encoding === 'PLAIN' && this.decoder.codec === 'SNAPPY' && header.data_page_header_v2?.is_compressed !== false) return this.snappyNumbers(header, unit);
    const { page, at, rows, present, definitions } = this.dataPage(header);
    const maxDefinition = this.maxDefinition;
    const numbers = this.buffers.floats(rows);
    const values = present === rows ? numbers : this.buffers.floats2(present);
    if (encoding === 'PLAIN') {
      if (at + present * (this.decoder.type === 'INT64' ? 8 : 4) > page.length) throw new Error(`column ${this.name}: values run past their page`);
      if (!readNumbers(page, at, present, this.decoder.type === 'INT64', unit, values)) return undefined;
    } else {
      const entries = this.numericEntries!;
      const largest = this.entryNumbers(page, at, present, entries, values);
      if (largest >= entries.length) throw new Error(`column ${this.name}: dictionary index ${largest} of ${entries.length} entries`);
    }
    if (present !== rows) spreadNumbers(values, definitions!, maxDefinition, rows, numbers);
    return numbers;
  }

  /**
   * A Snappy data page (v1 or v2) of PLAIN INT32 / INT64 values (a typed `sc_bytes`), read
   * as numbers where Snappy decodes it, in the decoders' memory (decoding-memory.ts): copied
   * out to the column's array and back in, each row's 8 bytes were moved twice more (issue
   * 34). Answers as {@link numericPage} does. A v1 page's definition levels come first in
   * the page, so its values are read before the levels say how many rows have one: all its
   * values (PLAIN values are the page's rest), straight into the rows' array when there are
   * as many as rows.
   */
  private snappyNumbers(header: PageHeader, unit: NumberUnit): Float64Array | undefined {
    const reader = this.reader;
    const compressed = new Uint8Array(reader.view.buffer, reader.view.byteOffset + reader.offset, header.compressed_page_size);
    reader.offset += header.compressed_page_size;
    const maxDefinition = this.maxDefinition;
    const int64 = this.decoder.type === 'INT64';
    const v2 = header.data_page_header_v2;
    let rows: number;
    let present: number | undefined;
    let definitions: Int32Array | undefined;
    let values = compressed;
    let size = header.uncompressed_page_size;
    if (v2 !== undefined) {
      rows = v2.num_values;
      const levels = v2.repetition_levels_byte_length + v2.definition_levels_byte_length;
      present = rows;
      if (maxDefinition > 0) ({ present, definitions } = this.definitionsOf(compressed, v2.repetition_levels_byte_length, v2.definition_levels_byte_length, rows));
      values = compressed.subarray(levels);
      size -= levels;
    } else {
      rows = header.data_page_header!.num_values;
      if (maxDefinition === 0) present = rows;
    }
    const address = snappyIntoMemory(values, size);
    // A v1 page's levels: their byte length (4 bytes, little-endian), then the levels, copied out before any other decoder runs.
    let levels: Uint8Array | undefined;
    let valuesAt = 0;
    if (present === undefined) {
      if (size < 4) throw new Error(`column ${this.name}: a data page too short for its definition levels`);
      const memory = new Uint8Array(decodingBuffer(address + size, () => `a page of ${size} bytes`), address, size);
      const length = (memory[0]! | (memory[1]! << 8) | (memory[2]! << 16) | (memory[3]! << 24)) >>> 0;
      if (length > size - 4) throw new Error(`column ${this.name}: definition levels run past their page`);
      levels = memory.slice(4, 4 + length);
      valuesAt = 4 + length;
    }
    const width = int64 ? 8 : 4;
    const count = present ?? Math.floor((size - valuesAt) / width);
    if (valuesAt + count * width > size) throw new Error(`column ${this.name}: values run past their page`);
    const numbers = this.buffers.floats(rows);
    const read = count === rows ? numbers : this.buffers.floats2(count);
    if (!plainNumbersInMemory(address + valuesAt, count, int64, unit, read)) return undefined;
    if (levels !== undefined) {
      ({ present, definitions } = this.definitionsOf(levels, 0, levels.length, rows));
      if (present > count) throw new Error(`column ${this.name}: values run past their page`);
    }
    if (present !== rows) {
      // Some rows have none: the values spread over the rows that have one (copied first where they were read into the rows' array).
      let have = read;
      if (read === numbers) {
        have = this.buffers.floats2(present!);
        have.set(numbers.subarray(0, present!));
      }
      spreadNumbers(have, definitions!, maxDefinition, rows, numbers);
    } else if (read !== numbers) numbers.set(read.subarray(0, rows));
    return numbers;
  }

  /**
   * The `count` dictionary indices of a data page's values from `at` (a byte of their bit
   * width, then the RLE / bit-packed runs) into `indices`; answers the largest (-1: none).
   */
  private indices(page: Uint8Array, at: number, indices: Int32Array, count: number): number {
    if (count === 0) return -1;
    if (at >= page.length) throw new Error(`column ${this.name}: a data page with no dictionary indices`);
    const width = page[at]!;
    if (width > 32) throw new Error(`column ${this.name}: dictionary indices of ${width} bits`);
    if (width === 0) {
      indices.fill(0, 0, count);
      return 0;
    }
    this.hybrid.decode(page, at + 1, page.length, width, indices, count, -1);
    return this.hybrid.largest;
  }

  /**
   * The `count` dictionary-encoded values of a typed column's data page from `at` (a byte
   * of the indices' bit width, then the RLE / bit-packed runs) as their entries of
   * `entries` into `values`; answers the largest index (-1: none; past the dictionary:
   * nothing written).
   */
  private entryNumbers(page: Uint8Array, at: number, count: number, entries: Float64Array, values: Float64Array): number {
    if (count === 0) return -1;
    if (at >= page.length) throw new Error(`column ${this.name}: a data page with no dictionary indices`);
    const width = page[at]!;
    if (width > 32) throw new Error(`column ${this.name}: dictionary indices of ${width} bits`);
    if (width === 0) {
      if (entries.length > 0) values.fill(entries[0]!, 0, count);
      return 0;
    }
    return this.hybrid.decodeEntries(page, at + 1, page.length, width, count, entries, values);
  }

  /** A data page (v1 or v2) of a text column, PLAIN or dictionary-encoded. */
  private textPage(header: PageHeader, encoding: string): void {
    const { page, at: valuesAt, rows, present, definitions } = this.dataPage(header);
    const at = valuesAt;
    const maxDefinition = this.maxDefinition;
    if (encoding === 'PLAIN') {
      // The sc-bytes column's values are read as byte counts as they are placed (the AWS-documented shape writes them as PLAIN strings).
      const counts = this.byteCountColumn ? this.buffers.floats(rows, 2) : undefined;
      this.use(plainText(page, at, rows, definitions, maxDefinition, this.buffers.ints(3, rows), this.buffers.ints(4, rows), this.name, counts), undefined, counts);
      return;
    }
    const dictionary = this.dictionary;
    if (dictionary === undefined) throw new Error(`column ${this.name}: a dictionary-encoded page with no dictionary`);
    const entries = dictionary.starts.length;
    // Each row's entry (-1: none); where its text is, only when a line needs it (see spansOf).
    const rowEntries = this.buffers.ints(1, rows);
    const indices = present === rows ? rowEntries : this.buffers.ints(2, present);
    const largest = this.indices(page, at, indices, present);
    if (largest >= entries) throw new Error(`column ${this.name}: dictionary index ${largest} of ${entries} entries`);
    if (present !== rows) spreadEntries(indices, definitions!, maxDefinition, rows, rowEntries);
    this.use({ bytes: dictionary.bytes, starts: NO_PLACES, ends: NO_PLACES, longest: dictionary.longest }, rowEntries);
  }
}

// The page loops below are functions of their own, not loops inside the page methods: V8
// compiles a loop that runs long in a fresh process on the spot (OSR), before the rest of
// its function ever ran, and that code is thrown away where it reaches the untried rest, again
// for every page (issue 34: dataPage's count of present rows deoptimized 12 times a file).


/** Each row's number from the present `values`, NaN for a row with none. */
function spreadNumbers(values: Float64Array, definitions: Int32Array, maxDefinition: number, rows: number, numbers: Float64Array): void {
  for (let row = 0, value = 0; row < rows; row++) numbers[row] = definitions[row] !== maxDefinition ? Number.NaN : values[value++]!;
}

/** Each row's dictionary entry from the present values' `indices`, -1 for a row with none. */
function spreadEntries(indices: Int32Array, definitions: Int32Array, maxDefinition: number, rows: number, rowEntries: Int32Array): void {
  for (let row = 0, value = 0; row < rows; row++) rowEntries[row] = definitions[row] !== maxDefinition ? -1 : indices[value++]!;
}

/**
 * PLAIN BYTE_ARRAY values from `at` (4-byte length, then the bytes), `rows` of them (a
 * row whose definition level is below `maxDefinition` has none: an empty span), read
 * where they are when none holds a tab, LF or CR (nearly always), else written escaped
 * into a buffer of their own. Fills `starts` and `ends`.
 */
function plainText(
  page: Uint8Array,
  at: number,
  rows: number,
  definitions: Int32Array | undefined,
  maxDefinition: number,
  starts: Int32Array,
  ends: Int32Array,
  name: string,
  counts?: Float64Array,
): Rendered {
  let longest: number;
  try {
    longest = placePlainValues(page, at, rows, definitions, maxDefinition, starts, ends, counts);
  } catch (error) {
    throw new Error(`column ${name}: ${(error as Error).message}`, { cause: error });
  }
  if (!controlInValues(page, starts, ends)) return { bytes: page, starts, ends, longest };
  // The same values, escaped (an absent one is empty).
  const out = new Uint8Array(page.length * 3 + 1);
  let used = 0;
  longest = 0;
  for (let row = 0; row < rows; row++) {
    const start = used;
    used = escapeInto(page, starts[row]!, ends[row]!, out, used);
    starts[row] = start;
    ends[row] = used;
    longest = Math.max(longest, used - start);
  }
  return { bytes: out, starts, ends, longest };
}

/** `count` PLAIN INT32 or INT64 values from `at` as numbers into `out` (parquet-plain.ts); false when an INT64 is past 2^53. */
function readNumbers(page: Uint8Array, at: number, count: number, int64: boolean, unit: NumberUnit, out: Float64Array): boolean {
  return plainNumbers(page, at, count, int64, unit, out);
}

/**
 * Typed arrays a column reuses from page to page (one page of a column is read at a
 * time, and the run of the page before is done with): fewer allocations per page.
 */
export class PageBuffers {
  private readonly arrays: Int32Array[] = [];
  private levelsArray = new Int32Array(0);

  /** Int32Array number `slot` of this column, `length` long (its contents are stale). */
  ints(slot: number, length: number): Int32Array {
    let array = this.arrays[slot];
    if (array === undefined || array.length < length) {
      array = new Int32Array(Math.max(Math.ceil(length * 1.25), 1024));
      this.arrays[slot] = array;
    }
    return array.subarray(0, length);
  }

  private numbers: Float64Array[] = [];

  /** Float64Array number `slot` of this column, `length` long (its contents are stale). */
  floats(length: number, slot = 0): Float64Array {
    let array = this.numbers[slot];
    if (array === undefined || array.length < length) {
      array = new Float64Array(Math.max(Math.ceil(length * 1.25), 1024));
      this.numbers[slot] = array;
    }
    return array.subarray(0, length);
  }

  floats2(length: number): Float64Array {
    return this.floats(length, 1);
  }

  private readonly pageBytes: Uint8Array[] = [];

  /** Uint8Array number `slot` of this column (0: its decompressed data page), `length` long (its contents are stale). */
  bytes(length: number, slot = 0): Uint8Array {
    let array = this.pageBytes[slot];
    // A quarter more than asked: the next row group's page is often a little larger.
    if (array === undefined || array.length < length) this.pageBytes[slot] = array = new Uint8Array(Math.max(Math.ceil(length * 1.25), 64 * 1024));
    return array.subarray(0, length);
  }

  /** The column's definition levels, `length` long (its contents are stale). */
  levels(length: number): Int32Array {
    if (this.levelsArray.length < length) this.levelsArray = new Int32Array(Math.max(length, 1024));
    return this.levelsArray.subarray(0, length);
  }
}

/** Values as the text of the counter's lines: one byte array, and where each value is (an empty span: none, written `-`). */
interface Rendered {
  readonly bytes: Uint8Array;
  readonly starts: Int32Array;
  readonly ends: Int32Array;
  /** The most bytes of one value. */
  readonly longest: number;
}

/**
 * Values as hyparquet decodes them, as text: dates and times as the CloudFront field
 * named `name` writes them (see {@link asFieldValues}), UTF-8 bytes as they are, anything
 * else as {@link valueText} says; a tab, CR or LF in a value percent-encoded as CloudFront
 * encodes them.
 */
function renderValues(decoded: ArrayLike<unknown>, name: string): Rendered {
  const values = asFieldValues(name, decoded)!;
  const count = values.length;
  const starts = new Int32Array(count);
  const ends = new Int32Array(count);
  const parts: Uint8Array[] = [];
  let total = 0;
  for (let i = 0; i < count; i++) {
    const value = values[i];
    const bytes = value instanceof Uint8Array ? value : valueText(value);
    parts.push(bytes);
    total += bytes.length;
  }
  const out = new Uint8Array(total * 3);
  let used = 0;
  let longest = 0;
  for (let i = 0; i < count; i++) {
    const bytes = parts[i]!;
    starts[i] = used;
    used = escapeInto(bytes, 0, bytes.length, out, used);
    ends[i] = used;
    longest = Math.max(longest, used - starts[i]!);
  }
  return { bytes: out, starts, ends, longest };
}

/** The {@link PageBuffers} slots of a column's dictionary: its decompressed page, and where each entry starts and ends. */
const DICTIONARY_SLOT = 1;
const DICTIONARY_STARTS = 5;
const DICTIONARY_ENDS = 6;

const EMPTY = new Uint8Array(0);
const NO_PLACES = new Int32Array(0);

/** A typed column read as numbers: its kind, hyparquet's decoder for it and the text of a value. */
interface NumericColumn {
  readonly kind: 'integer' | 'instant';
  /** What its integers count, when this reader decodes its pages itself (INT32, INT64 but nanoseconds); else hyparquet does. */
  readonly unit: NumberUnit | undefined;
  readonly decoder: ColumnDecoder;
  readonly text: (value: number) => string;
}

/** Dates and timestamps as epoch milliseconds (numbers), in place of hyparquet's Date objects. */
const NUMBER_PARSERS = {
  ...BYTES_PARSERS,
  timestampFromMilliseconds: (millis: bigint | number): unknown => Number(millis),
  timestampFromMicroseconds: (micros: bigint): unknown => Number(micros / 1000n),
  timestampFromNanoseconds: (nanos: bigint): unknown => Number(nanos / 1000000n),
  dateFromDays: (days: number): unknown => days * 86_400_000,
};

/**
 * How a column is read as numbers: `integer` (INT32 or INT64, signed, no other meaning),
 * `instant` (DATE, TIMESTAMP in any unit: epoch milliseconds); undefined for any other
 * (INT96, unsigned, decimals, times of day, floats: written as text by hyparquet's reader).
 */
function numberKind(decoder: ColumnDecoder): 'integer' | 'instant' | undefined {
  const { type, element } = decoder;
  if (type !== 'INT32' && type !== 'INT64') return undefined;
  const converted = element.converted_type;
  const logical = element.logical_type;
  if (converted === 'DATE' || converted === 'TIMESTAMP_MILLIS' || converted === 'TIMESTAMP_MICROS') return 'instant';
  // hyparquet makes Dates of a TIMESTAMP logical type alone, not of a DATE one (left as its integer).
  if (logical?.type === 'TIMESTAMP') return converted === undefined ? 'instant' : undefined;
  const signedConverted = converted === undefined || converted === 'INT_8' || converted === 'INT_16' || converted === 'INT_32' || converted === 'INT_64';
  const signedLogical = logical === undefined || (logical.type === 'INTEGER' && logical.isSigned);
  return signedConverted && signedLogical ? 'integer' : undefined;
}

/** The unit of a typed column's integers, as hyparquet converts them (converted type first, then the logical type). */
function numberUnit(decoder: ColumnDecoder, kind: 'integer' | 'instant'): NumberUnit | undefined {
  if (kind === 'integer') return 'integer';
  const { converted_type: converted, logical_type: logical } = decoder.element;
  if (converted === 'DATE') return 'days';
  if (converted === 'TIMESTAMP_MILLIS') return 'millis';
  if (converted === 'TIMESTAMP_MICROS') return 'micros';
  if (logical?.type === 'TIMESTAMP') return logical.unit === 'MILLIS' ? 'millis' : logical.unit === 'MICROS' ? 'micros' : undefined;
  return undefined;
}

/** The text of a number of the column named `name`, as {@link valueText} and {@link asFieldValues} write the value hyparquet decodes. */
function numberText(kind: 'integer' | 'instant', name: string): (value: number) => string {
  if (kind === 'integer') return (value) => String(value);
  const key = fieldKey(name);
  if (key === 'date') return (millis) => new Date(millis).toISOString().slice(0, 10);
  if (key === 'time') return (millis) => new Date(millis).toISOString().slice(11, 19);
  if (key === 'timestamp') return (millis) => (millis / 1000).toFixed(3);
  return (millis) => String(millis);
}

/** Largest time a Date holds (ECMAScript): past it, hyparquet's Date is invalid and written as none. */
const MAX_DATE_MS = 8.64e15;

/** Decoded values as numbers (null or an invalid date: NaN); undefined when an integer is past 2^53 (no exact double). */
function asNumbers(values: ArrayLike<unknown>, kind: 'integer' | 'instant'): Float64Array | undefined {
  const count = values.length;
  const numbers = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const value = values[i];
    if (typeof value === 'number') {
      numbers[i] = kind === 'instant' && !(Math.abs(value) <= MAX_DATE_MS) ? Number.NaN : value;
    } else if (typeof value === 'bigint') {
      if (value > 9007199254740991n || value < -9007199254740991n) return undefined;
      numbers[i] = Number(value);
    } else {
      numbers[i] = Number.NaN;
    }
  }
  return numbers;
}

/** The text of a decoded value that is not UTF-8 bytes already (none: empty). */
export function valueText(value: unknown): Uint8Array {
  if (value === null || value === undefined || value === '') return EMPTY;
  if (value instanceof Uint8Array) return value;
  let text: string;
  if (typeof value === 'string') text = value;
  else if (value instanceof Date) text = String(value.getTime());
  else if (typeof value === 'object') text = JSON.stringify(value, (_, inner: unknown) => (typeof inner === 'bigint' ? inner.toString() : inner));
  else text = String(value);
  return Buffer.from(text, 'utf8');
}

/**
 * Whether a tab, LF or CR is inside one of the values `[starts[i], ends[i])` of `page`
 * (ascending, not overlapping). Found by the native search, then placed by bisection:
 * the length prefixes between the values may hold those bytes too.
 */
function controlInValues(page: Uint8Array, starts: Int32Array, ends: Int32Array): boolean {
  const text = Buffer.from(page.buffer, page.byteOffset, page.byteLength);
  for (const byte of [9, 10, 13]) {
    for (let at = text.indexOf(byte); at !== -1; at = text.indexOf(byte, at + 1)) {
      // The last value starting at or before `at`.
      let low = 0;
      let high = starts.length - 1;
      while (low < high) {
        const mid = (low + high + 1) >> 1;
        if (starts[mid]! <= at) low = mid;
        else high = mid - 1;
      }
      if (starts.length > 0 && starts[low]! <= at && at < ends[low]!) return true;
    }
  }
  return false;
}

/** Copies `source[start, end)` to `out` at `used`, a tab, LF or CR as %09, %0A, %0D; returns the new end. */
function escapeInto(source: Uint8Array, start: number, end: number, out: Uint8Array, used: number): number {
  for (let i = start; i < end; i++) {
    const byte = source[i]!;
    if (byte === 9 || byte === 10 || byte === 13) {
      out[used++] = 37; /* % */
      out[used++] = 48; /* 0 */
      out[used++] = byte === 9 ? 57 : byte === 10 ? 65 : 68; /* 9, A, D */
    } else {
      out[used++] = byte;
    }
  }
  return used;
}

function bitWidth(value: number): number {
  return 32 - Math.clz32(value);
}

/** Dates and times as the CloudFront field named `name` writes them (see parquetContent). */
export function asFieldValues(name: string, values: ArrayLike<unknown> | undefined): ArrayLike<unknown> | undefined {
  // A column holds one type: its first value that is there says which.
  if (values === undefined || !(firstPresent(values) instanceof Date)) return values;
  const key = fieldKey(name);
  const write =
    key === 'date' ? (at: Date) => at.toISOString().slice(0, 10)
    : key === 'time' ? (at: Date) => at.toISOString().slice(11, 19)
    : key === 'timestamp' ? (at: Date) => (at.getTime() / 1000).toFixed(3)
    : (at: Date) => at.getTime();
  return Array.from(values, (value) => (value instanceof Date ? (Number.isNaN(value.getTime()) ? undefined : write(value)) : value));
}

function firstPresent(values: ArrayLike<unknown>): unknown {
  for (let i = 0; i < values.length; i++) if (values[i] !== null && values[i] !== undefined) return values[i];
  return undefined;
}
