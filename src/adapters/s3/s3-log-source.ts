import { GetObjectCommand, HeadObjectCommand, NoSuchKey, NotFound, type S3Client } from '@aws-sdk/client-s3';
import type { LogSource } from '../../app/ports';
import { ObjectChangedError, PoisonObjectError } from '../../domain/errors';
import { describeObject, normaliseEtag, type LogObjectRef } from '../../domain/counters/log-object';
import { prepareLineScan } from '../../domain/logs/line-scanner';
import type { LogContent } from '../../domain/logs/log-records';
import { logContent } from '../logs/log-opening';
import type { RandomAccessFile } from '../logs/parquet-log';

function isMissing(error: unknown): boolean {
  if (error instanceof NoSuchKey || error instanceof NotFound) return true;
  const status = (error as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
  return status === 404;
}

function isPreconditionFailed(error: unknown): boolean {
  return (error as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode === 412 || (error as Error)?.name === 'PreconditionFailed';
}

/**
 * Reads log objects from S3: exactly the version a notification announced (`IfMatch`
 * its ETag), never a later one written under the same key, which S3 announces itself
 * (counting it under the old version's name would count it twice). One GetObject streams the object; its first bytes tell the
 * format: text is streamed on (gunzipped as it arrives when gzip), a Parquet file (`PAR1`)
 * stops that stream and is read by ranges ({@link S3ObjectBytes}). A missing object or a
 * broken gzip stream or Parquet file is a poison object.
 */
export class S3LogSource implements LogSource {
  private readonly client: S3Client;

  constructor({ client }: { client: S3Client }) {
    this.client = client;
  }

  async open(ref: LogObjectRef): Promise<{ etag: string; content: LogContent; lastModified?: Date }> {
    // The scanner compiled on V8's other threads while the object is asked for.
    void prepareLineScan();
    try {
      // The version the notification announced, no other: a later one has its own notification.
      const response = await this.client.send(new GetObjectCommand({ Bucket: ref.bucket, Key: ref.key, ...(ref.etag === '' ? {} : { IfMatch: `"${ref.etag}"` }) }));
      const body = response.Body as AsyncIterable<Uint8Array> | undefined;
      if (body === undefined) throw new PoisonObjectError(describeObject(ref), 'GetObject returned no body');
      const etag = response.ETag;
      const size = response.ContentLength;
      const parquetFile = () => {
        if (etag === undefined || size === undefined) throw new PoisonObjectError(describeObject(ref), 'GetObject returned no ETag or length to read the Parquet file by ranges');
        return new S3ObjectBytes({ client: this.client, ref, etag, size });
      };
      const lastModified = response.LastModified;
      return { etag: normaliseEtag(etag ?? ref.etag), content: await logContent(body, describeObject(ref), parquetFile, size), ...(lastModified === undefined ? {} : { lastModified }) };
    } catch (error) {
      if (isMissing(error)) throw new PoisonObjectError(describeObject(ref), 'object does not exist (deleted before it was read?)', { cause: error });
      if (isPreconditionFailed(error)) {
        throw new PoisonObjectError(
          describeObject(ref),
          `replaced before it was read: S3 no longer holds the version announced (ETag ${ref.etag}); the version that replaced it is counted from its own notification, and counting it here would count it twice`,
          { cause: error },
        );
      }
      throw error;
    }
  }

  async etagOf(ref: Pick<LogObjectRef, 'bucket' | 'key'>): Promise<string> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: ref.bucket, Key: ref.key }));
      if (head.ETag === undefined) throw new PoisonObjectError(describeObject(ref), 'HeadObject returned no ETag');
      return normaliseEtag(head.ETag);
    } catch (error) {
      if (isMissing(error)) throw new PoisonObjectError(describeObject(ref), 'object does not exist (deleted before it was read?)', { cause: error });
      throw error;
    }
  }
}

/** Bytes of the object's last fetch that reached its end (the footer) are kept: hyparquet reads them first. */
const NO_TAIL: { start: number; bytes: Uint8Array } = { start: Number.POSITIVE_INFINITY, bytes: new Uint8Array(0) };

/**
 * One version of an S3 object read at random offsets, as a Parquet reader needs it: each
 * slice is a ranged GetObject (`Range: bytes=a-b`) with `IfMatch` set to the ETag the
 * first read saw, so an object overwritten mid-read fails with {@link ObjectChangedError}
 * (retryable) instead of mixing two versions. The reader asks for one range per column
 * chunk it needs, or for neighbouring chunks at once; the footer's fetch is cached.
 */
export class S3ObjectBytes implements RandomAccessFile {
  readonly byteLength: number;
  private readonly client: S3Client;
  private readonly ref: Pick<LogObjectRef, 'bucket' | 'key'>;
  private readonly etag: string;
  private tail = NO_TAIL;

  constructor({ client, ref, etag, size }: { client: S3Client; ref: Pick<LogObjectRef, 'bucket' | 'key'>; etag: string; size: number }) {
    this.client = client;
    this.ref = ref;
    this.etag = etag;
    this.byteLength = size;
  }

  async slice(start: number, end = this.byteLength): Promise<ArrayBuffer> {
    const stop = Math.min(end, this.byteLength);
    if (stop <= start) return new ArrayBuffer(0);
    if (start >= this.tail.start) return this.tail.bytes.slice(start - this.tail.start, stop - this.tail.start).buffer as ArrayBuffer;
    const bytes = await this.fetch(start, stop);
    if (stop === this.byteLength) this.tail = { start, bytes };
    return bytes.slice().buffer as ArrayBuffer;
  }

  /**
   * Bytes `[start, end)` read into `into` (at least `end - start` long), streamed from the
   * ranged GetObject's body as it arrives: a Parquet reader reads row group after row group
   * into the same arrays (parquet-columns.ts), where a slice is the body gathered into a new
   * array and copied into another.
   */
  async readInto(start: number, end: number, into: Uint8Array): Promise<Uint8Array> {
    const stop = Math.min(end, this.byteLength);
    const length = Math.max(0, stop - start);
    if (into.length < length) throw new RangeError(`${length} bytes to read into ${into.length}`);
    if (length === 0) return into.subarray(0, 0);
    if (start >= this.tail.start) {
      into.set(this.tail.bytes.subarray(start - this.tail.start, stop - this.tail.start));
      return into.subarray(0, length);
    }
    const target = into.subarray(0, length);
    await this.fetch(start, stop, target);
    return target;
  }

  /** Bytes `[start, stop)` of the object's version, into `target` when given (exactly that long), else a new array. */
  private async fetch(start: number, stop: number, target?: Uint8Array): Promise<Uint8Array> {
    const name = describeObject(this.ref);
    const wrongLength = (got: number) => new Error(`ranged GetObject of ${name} returned ${got} bytes for ${stop - start}`);
    try {
      const response = await this.client.send(
        new GetObjectCommand({ Bucket: this.ref.bucket, Key: this.ref.key, Range: `bytes=${start}-${stop - 1}`, IfMatch: this.etag }),
      );
      if (target === undefined) {
        const bytes = (await response.Body?.transformToByteArray()) ?? new Uint8Array(0);
        if (bytes.length !== stop - start) throw wrongLength(bytes.length);
        return bytes;
      }
      let filled = 0;
      for await (const chunk of (response.Body ?? []) as AsyncIterable<Uint8Array>) {
        // More than asked for is refused before it is written past the range.
        if (filled + chunk.length > target.length) throw wrongLength(filled + chunk.length);
        target.set(chunk, filled);
        filled += chunk.length;
      }
      if (filled !== target.length) throw wrongLength(filled);
      return target;
    } catch (error) {
      if (isPreconditionFailed(error)) throw new ObjectChangedError(name, { cause: error });
      if (isMissing(error)) throw new PoisonObjectError(name, 'object does not exist (deleted while it was read?)', { cause: error });
      throw error;
    }
  }
}
