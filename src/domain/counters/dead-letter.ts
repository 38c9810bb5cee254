import type { LogObjectRef } from './log-object';

/**
 * What `tally dlq list` finds out about a dead-lettered message, and the verdict it
 * draws. The verdict says what a replay would do with the message:
 *
 * | verdict | meaning | replay |
 * |---|---|---|
 * | `poison` | can never succeed: the body is no notification, or an object it names is gone, replaced or no log | keeps it (exit 1) until `tally dlq drop` |
 * | `retryable` | an object is there, readable and not (fully) counted | counts it |
 * | `counted` | every object it names is in the ledger as done | deletes it (skipped) |
 * | `nothing-to-count` | an `s3:TestEvent` or other records Tally acknowledges | deletes it (skipped) |
 * | `unknown` | a check failed (S3 or DynamoDB refused or timed out) | may or may not succeed |
 *
 * Only `poison` messages are taken by `tally dlq drop --poison`; `unknown` never is.
 */
export type DeadLetterVerdict = 'poison' | 'retryable' | 'counted' | 'nothing-to-count' | 'unknown';

/** What became of one object a dead-lettered notification names, as the ledger and S3 tell it. */
export type ObjectFinding =
  /** The ledger holds its `#DONE` item: a replay skips it. */
  | { readonly kind: 'counted'; readonly processedAt: string }
  /** S3 has no object under that key (deleted, or never written). */
  | { readonly kind: 'gone' }
  /** S3 holds other content under that key: the notified version is gone. */
  | { readonly kind: 'replaced'; readonly currentEtag: string }
  /** The object is there but the consumer's parser refuses it (not gzip, not a CloudFront log). */
  | { readonly kind: 'unreadable'; readonly error: string }
  /** Attempts on record failed (their reason is the newest one's). */
  | { readonly kind: 'failed'; readonly attempts: number; readonly reason: string; readonly at: string }
  /** An attempt started and never said how it ended: the consumer died unseen (crash, timeout). */
  | { readonly kind: 'interrupted'; readonly attempts: number; readonly at: string }
  /** Readable, no attempt on record: it failed before counting began, or no consumer took it. */
  | { readonly kind: 'pending' }
  /** A check failed; nothing can be said. */
  | { readonly kind: 'unchecked'; readonly error: string };

/** One object of a dead-lettered message with what was found. */
export interface InspectedObject {
  readonly object: LogObjectRef;
  readonly finding: ObjectFinding;
}

/** What the body of a dead-lettered message is, as Tally reads it. */
export type DeadLetterBody =
  | { readonly kind: 'objects'; readonly objects: readonly InspectedObject[] }
  | { readonly kind: 'skip'; readonly reason: string }
  | { readonly kind: 'poison'; readonly error: string };

/** A verdict and the reason a person reads next to it. */
export interface Diagnosis {
  readonly verdict: DeadLetterVerdict;
  readonly reason: string;
}

const POISON_FINDINGS: ReadonlySet<ObjectFinding['kind']> = new Set(['gone', 'replaced', 'unreadable']);

/** True when a replay of an object with this finding can never count it. */
export function isPoisonFinding(finding: ObjectFinding): boolean {
  return POISON_FINDINGS.has(finding.kind);
}

/** A short human sentence for one object's finding. */
export function describeFinding(finding: ObjectFinding): string {
  switch (finding.kind) {
    case 'counted':
      return `already counted (${finding.processedAt})`;
    case 'gone':
      return 'object does not exist in S3 (deleted, or never written)';
    case 'replaced':
      return `object was replaced since the notification (S3 now holds ETag ${finding.currentEtag}; the new content has its own notification)`;
    case 'unreadable':
      return `not a log the consumer can read: ${finding.error}`;
    case 'failed':
      return `${finding.attempts} failed attempt(s), last ${finding.at}: ${finding.reason}`;
    case 'interrupted':
      return `an attempt started ${finding.at} and died unseen (consumer crash or timeout)`;
    case 'pending':
      return 'readable now, no attempt on record (it failed before counting began)';
    case 'unchecked':
      return `could not check: ${finding.error}`;
  }
}

/**
 * The verdict on a dead-lettered message: poison when its body is no notification or
 * any object it names can never be counted; unknown when a check failed; counted when
 * every object is done; retryable otherwise.
 *
 * @example diagnose({ kind: 'poison', error: 'body is not JSON' })
 *          // { verdict: 'poison', reason: 'body is not JSON' }
 */
export function diagnose(body: DeadLetterBody): Diagnosis {
  if (body.kind === 'poison') return { verdict: 'poison', reason: body.error };
  if (body.kind === 'skip') return { verdict: 'nothing-to-count', reason: `nothing to count (${body.reason}): a replay acknowledges it` };
  // The key is named only when the message names several objects.
  const named = body.objects.length > 1;
  const reasons = (pick: (finding: ObjectFinding) => boolean) =>
    body.objects
      .filter(({ finding }) => pick(finding))
      .map(({ object, finding }) => (named ? `${object.key}: ${describeFinding(finding)}` : describeFinding(finding)));
  const poison = reasons(isPoisonFinding);
  if (poison.length > 0) return { verdict: 'poison', reason: poison.join('; ') };
  const unchecked = reasons((finding) => finding.kind === 'unchecked');
  if (unchecked.length > 0) return { verdict: 'unknown', reason: unchecked.join('; ') };
  const open = reasons((finding) => finding.kind !== 'counted');
  if (open.length === 0) return { verdict: 'counted', reason: 'every object is already counted: a replay deletes it' };
  return { verdict: 'retryable', reason: open.join('; ') };
}

/**
 * The record `tally dlq drop` writes for every message it deletes: who, when, why, and
 * the message itself, so a dropped notification can be read (and re-sent) later.
 */
export interface DeadLetterDrop {
  readonly messageId: string;
  /** The queue it was dropped from. */
  readonly queueUrl: string;
  readonly actor: string;
  readonly reason: string;
  /** When the record was written (just before the delete). */
  readonly recordedAt: string;
  /** `dropping` until SQS confirmed the delete; `not-deleted` when it refused (the message stays). */
  readonly state: 'dropping' | 'dropped' | 'not-deleted';
  /** When SQS confirmed the delete. */
  readonly droppedAt?: string;
  /** Why the delete failed, for `not-deleted`. */
  readonly error?: string;
  readonly verdict: DeadLetterVerdict;
  /** The diagnosis at the time of the drop. */
  readonly diagnosis: string;
  /** `s3://bucket/key` of each object the body named (empty for poison bodies). */
  readonly objects: readonly string[];
  readonly receiveCount: number;
  /** When the message was first sent (SQS `SentTimestamp`), ISO. */
  readonly sentAt?: string;
  /** The body (its first {@link MAX_RECORDED_BODY_CHARS} characters). */
  readonly body: string;
  /** The body's full length in characters; more than `body.length` when it was cut. */
  readonly bodyLength: number;
}

/** DynamoDB items hold 400 KB; a notification is a few KB, so a longer body is cut here. */
export const MAX_RECORDED_BODY_CHARS = 64 * 1024;
