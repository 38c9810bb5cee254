import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { describeError, TallyError } from '../../domain/errors';
import { signatureHeader, SIGNATURE_HEADER, webhookBackoffSeconds } from '../../domain/billing/webhook';
import type { Log } from '../log';
import type { MessageVisibility, WebhookTransport } from '../ports';

/** The receiver did not take the event (a non-2xx answer or no answer): it comes back later. */
export class WebhookDeliveryError extends TallyError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WebhookDeliveryError';
  }
}

export interface WebhookSenderDeps {
  readonly url: string;
  readonly secret: string;
  readonly transport: WebhookTransport;
  /** Sets how long a failed message waits before it comes back (the backoff). */
  readonly visibility?: MessageVisibility;
  /** First retry after this many seconds, doubling with each receive up to `maxBackoffSeconds`. */
  readonly backoffSeconds: number;
  readonly maxBackoffSeconds: number;
  readonly log: Log;
  readonly clock?: () => Date;
}

/**
 * The webhook Lambda's work: each message of the webhook queue is one event's raw JSON
 * body, POSTed signed (`Tally-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
 * "<t>.<body>">`). A 2xx answer deletes the message. Anything else leaves it on the
 * queue, hidden for a backoff that doubles with every receive, until the queue's
 * maxReceiveCount sends it to the webhook dead-letter queue. Ingestion never waits on
 * any of this: the closer only enqueues.
 */
export async function sendWebhooks(event: SQSEvent, deps: WebhookSenderDeps): Promise<SQSBatchResponse> {
  const failures: SQSBatchResponse['batchItemFailures'] = [];
  for (const record of event.Records) {
    try {
      await deliver(record, deps);
    } catch (error) {
      failures.push({ itemIdentifier: record.messageId });
      await backOff(record, deps, error);
    }
  }
  return { batchItemFailures: failures };
}

async function deliver(record: SQSRecord, deps: WebhookSenderDeps): Promise<void> {
  const body = record.body;
  const id = eventIdOf(body);
  const t = Math.floor((deps.clock ?? (() => new Date()))().getTime() / 1000);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'tally-webhooks/1',
    [SIGNATURE_HEADER]: signatureHeader(deps.secret, body, t),
  };
  let status: number;
  try {
    ({ status } = await deps.transport.post(deps.url, body, headers));
  } catch (error) {
    throw new WebhookDeliveryError(`webhook ${id}: no answer from the receiver: ${describeError(error)}`, { cause: error });
  }
  if (status < 200 || status > 299) throw new WebhookDeliveryError(`webhook ${id}: the receiver answered ${status}`);
  deps.log.info('webhook delivered', { id, status, receiveCount: Number(record.attributes?.ApproximateReceiveCount ?? 1) });
}

async function backOff(record: SQSRecord, deps: WebhookSenderDeps, error: unknown): Promise<void> {
  const receiveCount = Number(record.attributes?.ApproximateReceiveCount ?? 1);
  const delay = webhookBackoffSeconds(receiveCount, deps.backoffSeconds, deps.maxBackoffSeconds);
  deps.log.warn('webhook not delivered; retried later', { id: eventIdOf(record.body), receiveCount, retryInSeconds: delay, error: describeError(error) });
  if (deps.visibility === undefined || !record.receiptHandle) return;
  try {
    await deps.visibility.extend({ receiptHandle: record.receiptHandle, eventSourceARN: record.eventSourceARN }, delay);
  } catch (visibilityError) {
    // The queue's own visibility timeout then decides when it comes back.
    deps.log.warn('could not set the webhook backoff', { id: eventIdOf(record.body), error: describeError(visibilityError) });
  }
}

function eventIdOf(body: string): string {
  try {
    const id = (JSON.parse(body) as { id?: unknown }).id;
    return typeof id === 'string' ? id : '(no id)';
  } catch {
    return '(not JSON)';
  }
}
