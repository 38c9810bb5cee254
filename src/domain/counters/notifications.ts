import { PoisonMessageError } from '../errors';
import { normaliseEtag, type LogObjectRef } from './log-object';

/**
 * What one SQS message asks of the ingest consumer.
 * - `objects`: log objects to count (an S3 event may list several);
 * - `skip`: nothing to count (the `s3:TestEvent` S3 sends when a notification is
 *   configured, or records of other event types); acknowledged.
 */
export type Notification =
  | {
      readonly kind: 'objects';
      readonly objects: readonly LogObjectRef[];
      /** The earliest event time the notification gives (when S3 created an object): no attempt at them can be older. */
      readonly createdAt?: string;
    }
  | { readonly kind: 'skip'; readonly reason: string };

/** A real S3 notification is a few KB; a body this large is not one. */
export const MAX_NOTIFICATION_BYTES = 256 * 1024;

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads the body of an ingest-queue message: an S3 event, an `s3:TestEvent`, an SNS
 * envelope around either, or an EventBridge `Object Created` event. Anything else
 * throws {@link PoisonMessageError} naming the message, so it fails to the DLQ.
 */
export function parseNotification(body: string, messageId: string): Notification {
  if (body.length > MAX_NOTIFICATION_BYTES) {
    throw new PoisonMessageError(messageId, `body of ${body.length} bytes is larger than any S3 notification`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (error) {
    throw new PoisonMessageError(messageId, 'body is not JSON', { cause: error });
  }
  return fromJson(parsed, messageId, 0);
}

function fromJson(parsed: unknown, messageId: string, depth: number): Notification {
  if (!isObject(parsed)) throw new PoisonMessageError(messageId, 'body is not a JSON object');
  if (parsed.Event === 's3:TestEvent') return { kind: 'skip', reason: 's3:TestEvent' };
  if (Array.isArray(parsed.Records)) return fromS3Event(parsed.Records, messageId);
  if (parsed.Type === 'Notification' && typeof parsed.Message === 'string') {
    if (depth > 0) throw new PoisonMessageError(messageId, 'nested SNS envelopes');
    let inner: unknown;
    try {
      inner = JSON.parse(parsed.Message);
    } catch (error) {
      throw new PoisonMessageError(messageId, 'SNS Message is not JSON', { cause: error });
    }
    return fromJson(inner, messageId, depth + 1);
  }
  if (parsed.source === 'aws.s3' && typeof parsed['detail-type'] === 'string') {
    return fromEventBridge(parsed, messageId);
  }
  throw new PoisonMessageError(
    messageId,
    'not an S3 event, s3:TestEvent, SNS envelope or EventBridge Object Created event',
  );
}

function fromS3Event(records: unknown[], messageId: string): Notification {
  if (records.length === 0) throw new PoisonMessageError(messageId, 'S3 event with no Records');
  const objects: LogObjectRef[] = [];
  const times: number[] = [];
  records.forEach((record, position) => {
    const where = `Records[${position}]`;
    if (!isObject(record) || !isObject(record.s3)) throw new PoisonMessageError(messageId, `${where} has no s3 section`);
    const eventName = record.eventName;
    if (typeof eventName === 'string' && !eventName.startsWith('ObjectCreated:')) return;
    if (typeof record.eventTime === 'string' && Number.isFinite(Date.parse(record.eventTime))) times.push(Date.parse(record.eventTime));
    const bucket = isObject(record.s3.bucket) ? record.s3.bucket.name : undefined;
    const object = record.s3.object;
    if (typeof bucket !== 'string' || bucket.length === 0 || !isObject(object) || typeof object.key !== 'string') {
      throw new PoisonMessageError(messageId, `${where} lacks s3.bucket.name or s3.object.key`);
    }
    objects.push(
      toRef(bucket, decodeS3EventKey(object.key, messageId, where), object.eTag, object.size, object.sequencer, messageId),
    );
  });
  if (objects.length === 0) return { kind: 'skip', reason: 'no ObjectCreated records' };
  return { kind: 'objects', objects, ...createdAt(times) };
}

function fromEventBridge(event: Json, messageId: string): Notification {
  if (event['detail-type'] !== 'Object Created') {
    return { kind: 'skip', reason: `EventBridge ${String(event['detail-type'])}` };
  }
  const detail = event.detail;
  const bucket = isObject(detail) && isObject(detail.bucket) ? detail.bucket.name : undefined;
  const object = isObject(detail) ? detail.object : undefined;
  if (typeof bucket !== 'string' || bucket.length === 0 || !isObject(object) || typeof object.key !== 'string') {
    throw new PoisonMessageError(messageId, 'EventBridge event lacks detail.bucket.name or detail.object.key');
  }
  // EventBridge carries the key as it is, unlike S3 event notifications.
  const time = typeof event.time === 'string' ? Date.parse(event.time) : Number.NaN;
  return {
    kind: 'objects',
    objects: [toRef(bucket, object.key, object.etag, object.size, object.sequencer, messageId)],
    ...createdAt(Number.isFinite(time) ? [time] : []),
  };
}

function createdAt(times: readonly number[]): { createdAt?: string } {
  return times.length === 0 ? {} : { createdAt: new Date(Math.min(...times)).toISOString() };
}

function toRef(
  bucket: string,
  key: string,
  etag: unknown,
  size: unknown,
  sequencer: unknown,
  messageId: string,
): LogObjectRef {
  if (key.length === 0) throw new PoisonMessageError(messageId, 'empty object key');
  if (etag !== undefined && typeof etag !== 'string') throw new PoisonMessageError(messageId, 'eTag is not a string');
  return {
    bucket,
    key,
    etag: typeof etag === 'string' ? normaliseEtag(etag) : '',
    ...(typeof size === 'number' ? { size } : {}),
    ...(typeof sequencer === 'string' ? { sequencer } : {}),
  };
}

/** S3 event keys are URL-encoded with `+` for a space. */
export function decodeS3EventKey(key: string, messageId: string, where: string): string {
  try {
    return decodeURIComponent(key.replace(/\+/g, ' '));
  } catch (error) {
    throw new PoisonMessageError(messageId, `${where}: object key is not valid URL encoding`, { cause: error });
  }
}

/** Encodes a key the way S3 does in event notifications (for emitters and tests). */
export function encodeS3EventKey(key: string): string {
  return encodeURIComponent(key).replace(/%20/g, '+').replace(/%2F/g, '/');
}

/** A request id of S3's shape (16 upper-case hex), stable per object version. */
function requestIdOf(object: LogObjectRef): string {
  return `${object.sequencer ?? ''}${object.etag}0000000000000000`.replace(/[^0-9a-fA-F]/g, '').slice(0, 16).toUpperCase().padEnd(16, '0');
}

/**
 * The body S3 puts on the queue for new objects (event version 2.1, every field S3
 * writes), for the local stack, backfills and tests. Keys are URL-encoded the way S3
 * encodes them; the identities are the local stack's.
 */
export function s3EventBody(objects: readonly LogObjectRef[], region = 'us-east-1', now = new Date()): string {
  return JSON.stringify({
    Records: objects.map((object) => ({
      eventVersion: '2.1',
      eventSource: 'aws:s3',
      awsRegion: region,
      eventTime: now.toISOString(),
      eventName: 'ObjectCreated:Put',
      userIdentity: { principalId: 'AWS:TALLYLOCAL' },
      requestParameters: { sourceIPAddress: '127.0.0.1' },
      responseElements: { 'x-amz-request-id': requestIdOf(object), 'x-amz-id-2': 'tally-local' },
      s3: {
        s3SchemaVersion: '1.0',
        configurationId: 'tally-ingest',
        bucket: { name: object.bucket, ownerIdentity: { principalId: 'TALLYLOCAL' }, arn: `arn:aws:s3:::${object.bucket}` },
        object: {
          key: encodeS3EventKey(object.key),
          size: object.size ?? 0,
          eTag: object.etag,
          sequencer: object.sequencer ?? '0',
        },
      },
    })),
  });
}
