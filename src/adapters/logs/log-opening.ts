import { createReadStream } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { prepareLineScan } from '../../domain/logs/line-scanner';
import { resumed, type LogContent } from '../../domain/logs/log-records';
import { FILE_READ_BYTES, logText } from './log-text';
import type { RandomAccessFile } from './parquet-log';

/** An iterator that has ended. */
const EMPTY: AsyncIterator<Uint8Array> = { next: async () => ({ done: true, value: undefined }) };

/** The first (and last) four bytes of a Parquet file. */
export const PARQUET_MAGIC = Buffer.from('PAR1', 'latin1');

/** Whether `bytes` open with {@link PARQUET_MAGIC}. */
export function isParquetMagic(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && PARQUET_MAGIC.every((byte, i) => bytes[i] === byte);
}

/**
 * The Parquet reader, loaded when the first Parquet file is met: hyparquet and its codecs
 * (WebAssembly among them) cost a text-only consumer or `tally count` about 30 ms of
 * start-up, measured, for nothing.
 */
async function parquetReader(): Promise<typeof import('./parquet-log')> {
  return import('./parquet-log');
}

/**
 * The content of a stored log, told by its first bytes, never by its name: `PAR1` is a
 * Parquet file, read at random offsets by `parquetFile` (the stream is stopped);
 * anything else is text (gunzipped when gzip), streamed from `body` as before.
 */
export async function logContent(body: AsyncIterable<Uint8Array>, objectName: string, parquetFile: () => RandomAccessFile, storedBytes?: number): Promise<LogContent> {
  const iterator = body[Symbol.asyncIterator]();
  const head: Uint8Array[] = [];
  let length = 0;
  let ended = false;
  while (length < PARQUET_MAGIC.length) {
    const step = await iterator.next();
    if (step.done) {
      ended = true;
      break;
    }
    head.push(step.value);
    length += step.value.length;
  }
  if (isParquetMagic(Buffer.concat(head))) {
    await iterator.return?.();
    return (await parquetReader()).parquetContent(parquetFile(), objectName);
  }
  return { kind: 'text', text: logText(ended ? resumed(head, EMPTY) : resumed(head, iterator), objectName, storedBytes) };
}

/**
 * The content of a log file on disk (`tally count`): Parquet when it opens with `PAR1`,
 * read through one file handle at random offsets and closed when read; otherwise its
 * text, streamed.
 */
export async function openLogFile(path: string): Promise<LogContent> {
  // The scanner compiled on V8's other threads while the file opens.
  void prepareLineScan();
  const handle = await open(path, 'r');
  let head: Uint8Array;
  let storedBytes: number;
  try {
    const { bytesRead, buffer } = await handle.read(Buffer.alloc(PARQUET_MAGIC.length), 0, PARQUET_MAGIC.length, 0);
    head = buffer.subarray(0, bytesRead);
    storedBytes = (await handle.stat()).size;
  } finally {
    await handle.close();
  }
  if (!isParquetMagic(head)) return { kind: 'text', text: logText(createReadStream(path, { highWaterMark: FILE_READ_BYTES }), path, storedBytes) };
  const { parquetContent } = await parquetReader();
  return {
    kind: 'records',
    format: 'parquet',
    async read(sink) {
      const file = await open(path, 'r');
      try {
        const { size } = await file.stat();
        await parquetContent(fileBytes(file, size), path).read(sink);
      } finally {
        await file.close();
      }
    },
  };
}

/** Bytes of an open file at any offset. */
function fileBytes(file: FileHandle, size: number): RandomAccessFile {
  const readInto = async (start: number, end: number, into: Uint8Array): Promise<Uint8Array> => {
    const length = Math.max(0, Math.min(end, size) - start);
    if (into.length < length) throw new RangeError(`${length} bytes to read into ${into.length}`);
    let filled = 0;
    while (filled < length) {
      const { bytesRead } = await file.read(into, filled, length - filled, start + filled);
      if (bytesRead === 0) throw new Error(`${length - filled} bytes missing at offset ${start + filled}: the file shrank while it was read`);
      filled += bytesRead;
    }
    return into.subarray(0, length);
  };
  return {
    byteLength: size,
    async slice(start, end = size) {
      const buffer = new Uint8Array(Math.max(0, Math.min(end, size) - start));
      await readInto(start, end, buffer);
      return buffer.buffer;
    },
    readInto,
  };
}
