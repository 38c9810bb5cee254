import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { LogSink } from '../../app/ports';
import { TallyError } from '../../domain/errors';
import { normaliseEtag } from '../../domain/counters/log-object';

/** Puts log objects with S3 PutObject (one request: an ETag that is the MD5 of the bytes). */
export class S3LogSink implements LogSink {
  private readonly client: S3Client;

  constructor({ client }: { client: S3Client }) {
    this.client = client;
  }

  async put(bucket: string, key: string, body: Uint8Array): Promise<{ etag: string }> {
    const output = await this.client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    if (output.ETag === undefined) throw new TallyError(`PutObject s3://${bucket}/${key} answered no ETag`);
    return { etag: normaliseEtag(output.ETag) };
  }
}
