import { GetObjectCommand, HeadObjectCommand, NoSuchKey, NotFound, type S3Client } from '@aws-sdk/client-s3';
import type { LogSource } from '../app/ports';
import { PoisonObjectError } from '../domain/errors';
import { describeObject, normaliseEtag, type LogObjectRef } from '../domain/log-object';
import { logText } from './log-text';

function isMissing(error: unknown): boolean {
  if (error instanceof NoSuchKey || error instanceof NotFound) return true;
  const status = (error as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
  return status === 404;
}

/**
 * Streams the text of log objects from S3 with GetObject, gunzipped as it arrives when
 * the object is gzip; a missing object or a broken gzip stream is a poison object.
 */
export class S3LogSource implements LogSource {
  private readonly client: S3Client;

  constructor({ client }: { client: S3Client }) {
    this.client = client;
  }

  async open(ref: LogObjectRef): Promise<{ etag: string; body: AsyncIterable<Uint8Array> }> {
    try {
      const response = await this.client.send(new GetObjectCommand({ Bucket: ref.bucket, Key: ref.key }));
      const body = response.Body as AsyncIterable<Uint8Array> | undefined;
      if (body === undefined) throw new PoisonObjectError(describeObject(ref), 'GetObject returned no body');
      return { etag: normaliseEtag(response.ETag ?? ref.etag), body: logText(body, describeObject(ref)) };
    } catch (error) {
      if (isMissing(error)) throw new PoisonObjectError(describeObject(ref), 'object does not exist (deleted before it was read?)', { cause: error });
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
