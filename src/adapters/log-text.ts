import type { TransformOptions, Writable } from 'node:stream';
import { createGunzip, type ZlibOptions } from 'node:zlib';
import { PoisonObjectError } from '../domain/errors';

/**
 * zlib's output chunk. Node's default (16 KiB) makes every chunk a round trip between
 * the main thread and the libuv threadpool, and the counter sat idle two thirds of the
 * time waiting on them; at 256 KiB a 340 MB log inflates at the speed of zlib itself.
 */
export const GUNZIP_CHUNK_BYTES = 256 * 1024;
/** How far zlib may run ahead of the counter: two chunks inflate while one is counted. */
const GUNZIP_READ_AHEAD_BYTES = 2 * GUNZIP_CHUNK_BYTES;
/** Read size for log files on disk (`tally count`). */
export const FILE_READ_BYTES = 1024 * 1024;

const GZIP_MAGIC = [0x1f, 0x8b] as const;

/**
 * The text of a stored log: gunzipped when its first bytes are the gzip magic (several
 * gzip members one after another are one text, as CloudFront and `cat` make them),
 * otherwise the bytes as they are. Streaming throughout: zlib inflates on the libuv
 * threadpool in chunks of {@link GUNZIP_CHUNK_BYTES} while the caller counts the previous
 * one, with back-pressure both ways.
 *
 * A broken gzip stream is a poison object (`cannot gunzip: ...`, naming `objectName`);
 * errors of the source itself (a dropped connection) are rethrown as they are, so the
 * caller can retry them.
 */
export async function* logText(body: AsyncIterable<Uint8Array>, objectName: string): AsyncGenerator<Uint8Array, void, undefined> {
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
    yield first;
    for (let step = await iterator.next(); !step.done; step = await iterator.next()) yield step.value;
    return;
  }

  // zlib streams pass the stream options on to their Transform.
  const options: ZlibOptions & Pick<TransformOptions, 'readableHighWaterMark'> = {
    chunkSize: GUNZIP_CHUNK_BYTES,
    readableHighWaterMark: GUNZIP_READ_AHEAD_BYTES,
  };
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
