/**
 * How long after its first attempt an object can be tried again, from the settings of
 * the queues that carry it, and whether Tally's exactly-once records outlive that.
 *
 * Exactly once rests on records, not on time: a key is in its shard's history or has a
 * tombstone, a failed attempt left a record, a finished object its ledger item. Each
 * of those lives `TALLY_LEDGER_TTL_DAYS`. So the only bound is that every way an object
 * can come back must come back within that TTL:
 *
 * ```
 * horizon = ingest queue retention      a message lives this long, receives and visibility timeouts included
 *         + dead-letter queue retention  (SQS keeps the first enqueue time, so this double-counts: a margin)
 *         + replay window               an operator replays or backfills within this after the DLQ
 * ```
 */
export interface RedeliverySettings {
  readonly visibilityTimeoutSeconds: number;
  readonly maxReceiveCount: number;
  readonly queueRetentionSeconds: number;
  readonly deadLetterRetentionSeconds: number;
}

/** How long after a message left the DLQ an operator may still replay or backfill its object. */
export const REPLAY_WINDOW_DAYS = 30;

const DAY_SECONDS = 86_400;

/**
 * SQS keeps a message at most 14 days (`MessageRetentionPeriod`, 60 to 1,209,600 seconds:
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html),
 * so no queue settings allow a redelivery later than both queues' longest retention and
 * the replay window: the least `TALLY_LEDGER_TTL_DAYS` that cold starts and CLI runs accept.
 */
export const MAX_REDELIVERY_HORIZON_DAYS = 2 * 14 + REPLAY_WINDOW_DAYS;

/** The latest, in seconds after an object's first attempt, that any attempt at it can come. */
export function redeliveryHorizonSeconds(settings: RedeliverySettings): number {
  const receives = settings.visibilityTimeoutSeconds * settings.maxReceiveCount;
  return Math.max(settings.queueRetentionSeconds, receives) + settings.deadLetterRetentionSeconds + REPLAY_WINDOW_DAYS * DAY_SECONDS;
}

/**
 * The problems, if any, with running on these queue settings with records kept
 * `ledgerTtlDays`: an empty list means every redelivery chain they allow is covered.
 */
export function redeliveryGaps(settings: RedeliverySettings & { readonly ledgerTtlDays: number; readonly consumerMaxReceiveCount: number }): string[] {
  const gaps: string[] = [];
  const horizon = redeliveryHorizonSeconds(settings);
  if (settings.ledgerTtlDays * DAY_SECONDS < horizon) {
    gaps.push(
      `TALLY_LEDGER_TTL_DAYS (${settings.ledgerTtlDays}) is shorter than the redelivery horizon of ${Math.ceil(horizon / DAY_SECONDS)} days ` +
        `(queue and DLQ retention, ${REPLAY_WINDOW_DAYS} days to replay): a late retry could find its records expired`,
    );
  }
  if (settings.consumerMaxReceiveCount !== settings.maxReceiveCount) {
    gaps.push(`TALLY_MAX_RECEIVE_COUNT (${settings.consumerMaxReceiveCount}) must equal the queue's maxReceiveCount (${settings.maxReceiveCount}): the consumer's settings describe the queue it reads`);
  }
  return gaps;
}
