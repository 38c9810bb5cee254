/**
 * A log object as S3 names it. The ETag (content hash) is the object's identity for
 * idempotency: it is the same in an S3 notification, an EventBridge event and a
 * ListObjectsV2 page, so a replay and a backfill recognise what a notification counted.
 */
export interface LogObjectRef {
  readonly bucket: string;
  readonly key: string;
  /** ETag without quotes. */
  readonly etag: string;
  readonly size?: number;
  readonly sequencer?: string;
}

/** Strips the quotes S3 puts around an ETag in some APIs (ListObjectsV2, GetObject). */
export function normaliseEtag(etag: string): string {
  return etag.replace(/^W\//, '').replace(/^"+|"+$/g, '');
}

/** A short human name for logs and errors: `s3://bucket/key`. */
export function describeObject(ref: Pick<LogObjectRef, 'bucket' | 'key'>): string {
  return `s3://${ref.bucket}/${ref.key}`;
}
