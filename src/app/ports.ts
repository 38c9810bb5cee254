import type { LogObjectRef } from '../domain/log-object';

/** Reads log objects (S3 in production and locally). */
export interface LogSource {
  /** Streams the object's bytes; throws PoisonObjectError when it no longer exists. */
  open(ref: LogObjectRef): Promise<{ etag: string; body: AsyncIterable<Uint8Array> }>;
  /** The current ETag of an object, for notifications that carry none. */
  etagOf(ref: Pick<LogObjectRef, 'bucket' | 'key'>): Promise<string>;
}

/** Keeps an in-flight SQS message hidden while it is being worked on. */
export interface MessageVisibility {
  extend(message: { receiptHandle: string; eventSourceARN?: string }, seconds: number): Promise<void>;
}
