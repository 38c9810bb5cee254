import type { AsyncBuffer, ColumnChunk, FileMetaData, RowGroup } from 'hyparquet';
import { parquetMetadata } from 'hyparquet';
import { CompressionCodecs, Encodings, ParquetTypes } from 'hyparquet/src/constants.js';

/**
 * A Parquet file's footer (FileMetaData, Thrift's compact protocol:
 * https://github.com/apache/thrift/blob/master/doc/specs/thrift-compact-protocol.md), read
 * for what counting column by column needs and no more: the schema (by hyparquet, from
 * its own bytes, with the key-value metadata and the writer's name), each row group's row count and, of each column chunk, its type,
 * encodings, path, codec, value count, sizes and page offsets. Statistics, key-value
 * metadata, encoding statistics and the rest are stepped over, never decoded:
 * hyparquet's reader builds all of them, 8–12 ms of a fresh process's count of the
 * bench's typed file for 30 KB of footer (issue 34). Anything this reader does not expect
 * makes it give up (undefined), and hyparquet reads the footer whole.
 */

const STOP = 0;
const TRUE = 1;
const FALSE = 2;
const BYTE = 3;
const I16 = 4;
const I32 = 5;
const I64 = 6;
const DOUBLE = 7;
const BINARY = 8;
const LIST = 9;
const SET = 10;
const MAP = 11;
const STRUCT = 12;
const UUID = 13;

/** Bytes read from the end of a file for its footer, in one read when it fits (as hyparquet reads it). */
export const FOOTER_READ_BYTES = 1 << 19;

/**
 * The last bytes of `file` that hold its footer: one read of the last 512 KiB (or the
 * whole of a smaller file), a second for the rest of a longer footer. What they are is
 * not checked here ({@link footerMetadata} does).
 */
export async function footerTail(file: AsyncBuffer): Promise<ArrayBuffer> {
  const size = file.byteLength;
  const start = Math.max(0, size - FOOTER_READ_BYTES);
  const tail = await file.slice(start, size);
  if (tail.byteLength < 8) return tail;
  const bytes = new Uint8Array(tail);
  const length = readUint32(bytes, bytes.length - 8);
  if (readUint32(bytes, bytes.length - 4) !== 0x31524150 || length + 8 <= tail.byteLength || length + 8 > size) return tail;
  return file.slice(size - length - 8, size);
}

/**
 * The footer of a file whose last bytes are `tail` (the metadata, its length, `PAR1`):
 * the lean read when it can, else hyparquet's whole one (which says what is wrong with a
 * footer that cannot be read).
 */
export function footerMetadata(tail: ArrayBuffer): FileMetaData {
  return leanMetadata(tail) ?? parquetMetadata(tail);
}

/** The lean read of the footer at the end of `tail`; undefined when it is not the shape expected. */
export function leanMetadata(tail: ArrayBuffer): FileMetaData | undefined {
  const bytes = new Uint8Array(tail);
  if (bytes.length < 8 || readUint32(bytes, bytes.length - 4) !== 0x31524150) return undefined;
  const length = readUint32(bytes, bytes.length - 8);
  if (length > bytes.length - 8) return undefined;
  try {
    return new FooterReader(bytes, bytes.length - 8 - length, bytes.length - 8).fileMetaData();
  } catch {
    return undefined;
  }
}

function readUint32(bytes: Uint8Array, at: number): number {
  return (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>> 0;
}

/** Thrift's compact protocol over `bytes[at, end)`, a struct at a time. */
class FooterReader {
  constructor(
    private readonly bytes: Uint8Array,
    private at: number,
    private readonly end: number,
  ) {}

  /**
   * FileMetaData: 4 row_groups read here; 1 version, 2 schema, 3 num_rows, 5
   * key_value_metadata and 6 created_by handed to hyparquet as a FileMetaData of their
   * own (no row groups), so that their reading (logical types, GeoParquet's marks) is
   * hyparquet's; the rest stepped over.
   */
  fileMetaData(): FileMetaData {
    const kept: { id: number; type: number; start: number; end: number }[] = [];
    let rowGroups: RowGroup[] | undefined;
    this.fields((id, type) => {
      if (id === 4 && type === LIST) {
        rowGroups = this.list(STRUCT, () => this.rowGroup());
        return;
      }
      const start = this.at;
      this.skip(type);
      if (id === 1 || id === 2 || id === 3 || id === 5 || id === 6) kept.push({ id, type, start, end: this.at });
    });
    if (rowGroups === undefined) throw new Error('no row groups');
    // Field 4 as an empty list of structs (its header byte then the list's).
    kept.push({ id: 4, type: LIST, start: -1, end: -1 });
    kept.sort((a, b) => a.id - b.id);
    const head = parquetMetadata(this.reencoded(kept));
    return { ...head, row_groups: rowGroups };
  }

  /** A FileMetaData of the `kept` fields (in order of id), followed by its length and `PAR1`. */
  private reencoded(kept: readonly { id: number; type: number; start: number; end: number }[]): Uint8Array {
    let size = 1;
    for (const field of kept) size += 1 + (field.start < 0 ? 1 : field.end - field.start);
    const out = new Uint8Array(size + 8);
    let at = 0;
    let last = 0;
    for (const field of kept) {
      if (field.id - last < 1 || field.id - last > 15) throw new Error('a field twice');
      out[at++] = ((field.id - last) << 4) | field.type;
      last = field.id;
      if (field.start < 0) out[at++] = STRUCT;
      else {
        out.set(this.bytes.subarray(field.start, field.end), at);
        at += field.end - field.start;
      }
    }
    out[at++] = STOP;
    const length = at;
    out[at++] = length & 0xff;
    out[at++] = (length >>> 8) & 0xff;
    out[at++] = (length >>> 16) & 0xff;
    out[at++] = (length >>> 24) & 0xff;
    out.set([0x50, 0x41, 0x52, 0x31], at);
    return out;
  }

  /** RowGroup: 1 columns, 3 num_rows. */
  private rowGroup(): RowGroup {
    let columns: ColumnChunk[] | undefined;
    let rows: bigint | undefined;
    this.fields((id, type) => {
      if (id === 1 && type === LIST) columns = this.list(STRUCT, () => this.columnChunk());
      else if (id === 3 && type === I64) rows = BigInt(this.zigzag());
      else this.skip(type);
    });
    if (columns === undefined || rows === undefined) throw new Error('a row group without its columns or rows');
    return { columns, num_rows: rows } as RowGroup;
  }

  /** ColumnChunk: 1 file_path, 2 file_offset, 3 meta_data. */
  private columnChunk(): ColumnChunk {
    const chunk: { file_path?: string; file_offset: bigint; meta_data?: ColumnChunk['meta_data'] } = { file_offset: 0n };
    this.fields((id, type) => {
      if (id === 1 && type === BINARY) chunk.file_path = this.text();
      else if (id === 2 && type === I64) chunk.file_offset = BigInt(this.zigzag());
      else if (id === 3 && type === STRUCT) chunk.meta_data = this.columnMetaData();
      else this.skip(type);
    });
    return chunk as ColumnChunk;
  }

  /** ColumnMetaData: 1 type, 2 encodings, 3 path_in_schema, 4 codec, 5–7 counts and sizes, 9–11 page offsets. */
  private columnMetaData(): ColumnChunk['meta_data'] {
    const meta: Record<string, unknown> = {};
    this.fields((id, type) => {
      if (id === 1 && type === I32) meta.type = ParquetTypes[this.zigzag()];
      else if (id === 2 && type === LIST) meta.encodings = this.list(I32, () => Encodings[this.zigzag()]);
      else if (id === 3 && type === LIST) meta.path_in_schema = this.list(BINARY, () => this.text());
      else if (id === 4 && type === I32) meta.codec = CompressionCodecs[this.zigzag()];
      else if (id >= 5 && id <= 11 && id !== 8 && type === I64) meta[I64_FIELDS[id]!] = BigInt(this.zigzag());
      else this.skip(type);
    });
    if (meta.type === undefined || meta.path_in_schema === undefined || meta.codec === undefined || meta.total_compressed_size === undefined || meta.data_page_offset === undefined) {
      throw new Error('column metadata without its type, path, codec, size or first page');
    }
    return meta as unknown as ColumnChunk['meta_data'];
  }

  /** Calls `field(id, type)` for each field of the struct at the reader, which must read or skip its value. */
  private fields(field: (id: number, type: number) => void): void {
    let id = 0;
    for (;;) {
      const byte = this.byte();
      const type = byte & 0x0f;
      if (type === STOP) return;
      const delta = byte >> 4;
      id = delta === 0 ? this.zigzag() : id + delta;
      field(id, type);
    }
  }

  /** A list of `type` elements, each read by `element`. */
  private list<T>(type: number, element: () => T): T[] {
    const header = this.byte();
    if ((header & 0x0f) !== type) throw new Error(`a list of type ${header & 0x0f}, not ${type}`);
    const size = header >> 4 === 15 ? this.varint() : header >> 4;
    const out: T[] = [];
    for (let i = 0; i < size; i++) out.push(element());
    return out;
  }

  /** Steps over a value of `type` (a field's: booleans have no bytes of their own). */
  private skip(type: number, inList = false): void {
    switch (type) {
      case TRUE:
      case FALSE:
        if (inList) this.byte();
        return;
      case BYTE:
        this.byte();
        return;
      case I16:
      case I32:
      case I64:
        this.varint();
        return;
      case DOUBLE:
        this.advance(8);
        return;
      case UUID:
        this.advance(16);
        return;
      case BINARY:
        this.advance(this.varint());
        return;
      case LIST:
      case SET: {
        const header = this.byte();
        const size = header >> 4 === 15 ? this.varint() : header >> 4;
        for (let i = 0; i < size; i++) this.skip(header & 0x0f, true);
        return;
      }
      case MAP: {
        const size = this.varint();
        if (size === 0) return;
        const types = this.byte();
        for (let i = 0; i < size; i++) {
          this.skip(types >> 4, true);
          this.skip(types & 0x0f, true);
        }
        return;
      }
      case STRUCT:
        this.fields((_, field) => this.skip(field));
        return;
      default:
        throw new Error(`thrift type ${type}`);
    }
  }

  /** Steps over `count` bytes: every value has at least one, so no list runs on past the footer. */
  private advance(count: number): void {
    if (this.at + count > this.end) throw new Error('footer ends inside a value');
    this.at += count;
  }

  private byte(): number {
    if (this.at >= this.end) throw new Error('footer ends inside a value');
    return this.bytes[this.at++]!;
  }

  /** An unsigned varint of at most 53 bits. */
  private varint(): number {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = this.byte();
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
      if (scale > 2 ** 49) throw new Error('a varint past 2^53');
    }
  }

  /** A zigzag varint (i16, i32, i64 within 2^53). */
  private zigzag(): number {
    const value = this.varint();
    return value % 2 === 0 ? value / 2 : -(value + 1) / 2;
  }

  private text(): string {
    const length = this.varint();
    if (this.at + length > this.end) throw new Error('footer ends inside a string');
    const text = DECODER.decode(this.bytes.subarray(this.at, this.at + length));
    this.at += length;
    return text;
  }
}

const I64_FIELDS: Readonly<Record<number, string>> = {
  5: 'num_values',
  6: 'total_uncompressed_size',
  7: 'total_compressed_size',
  9: 'data_page_offset',
  10: 'index_page_offset',
  11: 'dictionary_page_offset',
};

const DECODER = new TextDecoder();
