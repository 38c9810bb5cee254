import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { describeError } from '../../domain/errors';
import { webhookBackoffSeconds } from '../../domain/billing/webhook';
import type { MessageVisibility } from '../ports';
import { handleStripeMessage, parseStripeMessage, StripeRetryLaterError, type SendOutcome, type StripeSyncDeps } from './stripe-sync';

export interface StripeSenderDeps {
  readonly sync: StripeSyncDeps;
  /** Sets how long a message with work left waits before it comes back. */
  readonly visibility?: MessageVisibility;
  readonly backoffSeconds: number;
  readonly maxBackoffSeconds: number;
  /** Told how many events Stripe refused in a batch (the Lambda publishes `StripeEventsFailed`, which alarms). */
  readonly onRefused?: (count: number) => void;
  /** Told how many totals reached a day whose invoice was already finalized (the Lambda publishes `StripeLateUsage`, which alarms). */
  readonly onLateUsage?: (count: number) => void;
  /** Told what each message's work did (npm start prints it). */
  readonly onReport?: (outcomes: readonly SendOutcome[]) => void;
}

/**
 * The Stripe sender's work (Lambda on AWS, a poller under `npm start`): each message names
 * a closed-day revision (from the closer) or an account (from `tally stripe link`). The
 * outbox records are written, then sent one request at a time per customer and meter.
 * A message with work left (Stripe busy or down, the lease held by another sender)
 * comes back after a doubling backoff, then reaches the sender's DLQ (alarm); a
 * refused event is recorded as failed and logged as an error (alarm), never retried.
 */
export async function sendStripeBatch(event: SQSEvent, deps: StripeSenderDeps): Promise<SQSBatchResponse> {
  const failures: SQSBatchResponse['batchItemFailures'] = [];
  let refused = 0;
  let late = 0;
  for (const record of event.Records) {
    try {
      const report = await handleStripeMessage(deps.sync, parseStripeMessage(record.body));
      refused += report.outcomes.filter((o) => o.outcome === 'failed').length;
      late += report.outcomes.filter((o) => o.outcome === 'invoice-finalized').length;
      deps.onReport?.(report.outcomes);
      if (report.left > 0) throw new StripeRetryLaterError(`${report.left} meter event(s) not acknowledged yet; retried later`);
    } catch (error) {
      failures.push({ itemIdentifier: record.messageId });
      const receiveCount = Number(record.attributes?.ApproximateReceiveCount ?? 1);
      const delay = webhookBackoffSeconds(receiveCount, deps.backoffSeconds, deps.maxBackoffSeconds);
      deps.sync.log.warn('stripe send left work; the message comes back', { receiveCount, retryInSeconds: delay, error: describeError(error) });
      if (deps.visibility !== undefined && record.receiptHandle) {
        await deps.visibility.extend({ receiptHandle: record.receiptHandle, eventSourceARN: record.eventSourceARN }, delay).catch(() => undefined);
      }
    }
  }
  if (refused > 0) deps.onRefused?.(refused);
  if (late > 0) deps.onLateUsage?.(late);
  return { batchItemFailures: failures };
}
