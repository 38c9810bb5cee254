import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { LogListing } from '../../app/ports';
import { normaliseEtag, type LogObjectRef } from '../../domain/counters/log-object';

/** Lists log objects with ListObjectsV2, a page (up to 1,000 keys) at a time. */
export class S3LogListing implements LogListing {
  private readonly client: S3Client;

  constructor({ client }: { client: S3Client }) {
    this.client = client;
  }

  async *list(bucket: string, prefix: string): AsyncIterable<LogObjectRef> {
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ...(token === undefined ? {} : { ContinuationToken: token }) }),
      );
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined || object.Key.endsWith('/')) continue;
        yield {
          bucket,
          key: object.Key,
          // The same ETag a notification carries, so the ledger and histories recognise the object.
          etag: normaliseEtag(object.ETag ?? ''),
          ...(object.Size === undefined ? {} : { size: object.Size }),
        };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }
}
