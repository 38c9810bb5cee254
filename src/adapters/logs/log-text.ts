import type { TransformOptions, Writable } from 'node:stream';
import { createGunzip, type ZlibOptions } from 'node:zlib';
import { PoisonObjectError } from '../../domain/errors';
import { resumed } from '../../domain/logs/log-records';

/**
 * zlib's largest output chunk. Every chunk is a round trip between the main thread and
 * the libuv threadpool (a work request, a callback, a new output buffer, a promise for
 * the reader): at Node's default of 16 KiB the counter sat idle two thirds of the time;
 * at 256 KiB a 340 MB log still spent ~75 ms of CPU on the trips that 1 MiB saves
 * (measured: Node's gunzip alone, 0.44 s at 256 KiB, 0.39 s at 1 MiB, 0.37 s at 4 MiB).
 */
export const GUNZIP_CHUNK_BYTES = 1024 * 1024;
/** The smallest: a small object's text fits in one chunk without a buffer much larger than it. */
const GUNZIP_MIN_CHUNK_BYTES = 64 * 1024;
/** A guess of gzip's ratio on CloudFront logs (measured 7.1 on the bench log), to size chunks from the stored size. */
const EXPECTED_GZIP_RATIO = 8;

/**
 * zlib's output chunk for a gzip object of `storedBytes` (unknown: the largest). A 1 MiB
 * buffer for a 60 KB text cost 0.5 ms of CPU per object more than a fitting one (mapping
 * and faulting it in): the chunk is the expected text's size, in powers of two, between
 * {@link GUNZIP_MIN_CHUNK_BYTES} and {@link GUNZIP_CHUNK_BYTES}.
 */
export function gunzipChunkBytes(storedBytes: number | undefined): number {
  if (storedBytes === undefined || !(storedBytes > 0)) return GUNZIP_CHUNK_BYTES;
  let chunk = GUNZIP_MIN_CHUNK_BYTES;
  while (chunk < GUNZIP_CHUNK_BYTES && chunk < storedBytes * EXPECTED_GZIP_RATIO) chunk *= 2;
  return chunk;
}
/** Read size for log files on disk (`tally count`). */
export const FILE_READ_BYTES = 1024 * 1024;

const GZIP_MAGIC = [0x1f, 0x8b] as const;

/**
 * The text of a stored log: gunzipped when its first bytes are the gzip magic (several
 * gzip members one after another are one text, as CloudFront and `cat` make them),
 * otherwise the bytes as they are. Streaming throughout: zlib inflates on the libuv
 * threadpool in chunks of {@link gunzipChunkBytes} (`storedBytes`: the object's size,
 * when known) while the caller counts the previous one, with back-pressure both ways.
 *
 * A broken gzip stream is a poison object (`cannot gunzip: ...`, naming `objectName`);
 * errors of the source itself (a dropped connection) are rethrown as they are, so the
 * caller can retry them.
 */
export async function* logText(body: AsyncIterable<Uint8Array>, objectName: string, storedBytes?: number): AsyncGenerator<Uint8Array, void, undefined> {
  const iterator = body[Symbol.asyncIterator]();
  // Two bytes tell gzip from text; a source may hand them over one at a time.
  let first = await nextNonEmpty(iterator);
  if (first === undefined) return;
  while (first.length < GZIP_MAGIC.length) {
    const more = await nextNonEmpty(iterator);
    if (more === undefined) break;
    first = Buffer.concat([first, more]);
  }
  if (first[0] !== GZIP_MAGIC[0] || first[1] !== GZIP_MAGIC[1]) {
    yield* resumed([first], iterator);
    return;
  }

  // zlib streams pass the stream options on to their Transform.
  const chunkSize = gunzipChunkBytes(storedBytes);
  // How far zlib may run ahead of the counter: two chunks inflate while one is counted.
  const options: ZlibOptions & Pick<TransformOptions, 'readableHighWaterMark'> = { chunkSize, readableHighWaterMark: 2 * chunkSize };
  const gunzip = createGunzip(options);
  let sourceError: unknown;
  // The compressed bytes are written into gunzip by hand (with back-pressure) while the
  // caller reads its output, with none of the cost of wrapping the source in a stream.
  const feeding = (async () => {
    try {
      let chunk: Uint8Array | undefined = first;
      while (chunk !== undefined && !gunzip.destroyed) {
        if (!gunzip.write(chunk)) await drainedOrClosed(gunzip);
        const step: IteratorResult<Uint8Array> = await iterator.next();
        chunk = step.done ? undefined : step.value;
      }
      if (!gunzip.destroyed) gunzip.end();
    } catch (error) {
      sourceError = error;
      gunzip.destroy(error instanceof Error ? error : new Error(String(error)));
    }
  })();
  try {
    for await (const chunk of gunzip) yield chunk as Buffer;
  } catch (error) {
    await feeding;
    if (sourceError !== undefined) throw sourceError;
    throw new PoisonObjectError(objectName, `cannot gunzip: ${(error as Error).message}`, { cause: error });
  } finally {
    // The caller may stop early (its own error): stop inflating and reading the source.
    if (!gunzip.destroyed) gunzip.destroy();
  }
  await feeding;
}

/** Resolves when `stream` can take more input, or can take none ever again. */
function drainedOrClosed(stream: Writable): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}

async function nextNonEmpty(iterator: AsyncIterator<Uint8Array>): Promise<Uint8Array | undefined> {
  for (;;) {
    const step = await iterator.next();
    if (step.done) return undefined;
    if (step.value.length > 0) return step.value;
  }
}
