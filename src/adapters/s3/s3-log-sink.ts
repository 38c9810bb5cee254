import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { LogBody, LogSink } from '../../app/ports';
import { TallyError } from '../../domain/errors';
import { normaliseEtag } from '../../domain/counters/log-object';

/**
 * Puts log objects: a body of one part with S3 PutObject (an ETag that is the MD5 of the
 * bytes), a longer one in a multipart upload, one part in memory at a time
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/mpuoverview.html). An upload that
 * fails, or whose body turns out not to be the content counted, is aborted before it is
 * completed: no object is made and its parts are dropped.
 */
export class S3LogSink implements LogSink {
  private readonly client: S3Client;

  constructor({ client }: { client: S3Client }) {
    this.client = client;
  }

  async put(bucket: string, key: string, body: LogBody): Promise<{ etag: string }> {
    const parts = body.parts()[Symbol.asyncIterator]();
    const first = await parts.next();
    const bytes = first.done === true ? new Uint8Array(0) : first.value;
    if (bytes.length < body.size) return this.putInParts(bucket, key, bytes, parts);
    // All of it in one part: read to its end first (a body that is not the content counted fails there), then one PutObject.
    const end = await parts.next();
    if (end.done !== true) throw new TallyError(`the body for s3://${bucket}/${key} holds more than its ${body.size} bytes`);
    return this.putWhole(bucket, key, bytes);
  }

  private async putWhole(bucket: string, key: string, bytes: Uint8Array): Promise<{ etag: string }> {
    const output = await this.client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: bytes }));
    if (output.ETag === undefined) throw new TallyError(`PutObject s3://${bucket}/${key} answered no ETag`);
    return { etag: normaliseEtag(output.ETag) };
  }

  /** A multipart upload of `first` and the parts `rest` yields after it: each part sent before the next is read. */
  private async putInParts(bucket: string, key: string, first: Uint8Array, rest: AsyncIterator<Uint8Array>): Promise<{ etag: string }> {
    const { UploadId } = await this.client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    if (UploadId === undefined) throw new TallyError(`CreateMultipartUpload s3://${bucket}/${key} answered no upload id`);
    const completed: CompletedPart[] = [];
    const upload = async (bytes: Uint8Array) => {
      const PartNumber = completed.length + 1;
      const { ETag } = await this.client.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber, Body: bytes }));
      if (ETag === undefined) throw new TallyError(`UploadPart ${PartNumber} of s3://${bucket}/${key} answered no ETag`);
      completed.push({ PartNumber, ETag });
    };
    try {
      await upload(first);
      for (let next = await rest.next(); next.done !== true; next = await rest.next()) await upload(next.value);
      const output = await this.client.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: completed } }));
      if (output.ETag === undefined) throw new TallyError(`CompleteMultipartUpload s3://${bucket}/${key} answered no ETag`);
      return { etag: normaliseEtag(output.ETag) };
    } catch (error) {
      // Best effort: the error that stopped the upload is the one to report.
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId })).catch(() => undefined);
      throw error;
    }
  }
}
