import { hash, hmac } from 'fast-sha256';
import { revisionEventType, type RevisionRow } from './day-close';
import type { ThresholdCrossing } from './quota';

/**
 * Signed webhooks: each closed day and each late revision is POSTed once (at least
 * once: receivers dedupe on `id`, stable per revision) as JSON with a signature header
 * in the style of Stripe's:
 *
 * ```
 * Tally-Signature: t=1795000000,v1=<hex HMAC-SHA256(secret, "1795000000.<raw body>")>
 * ```
 */
export interface WebhookEvent {
  readonly id: string;
  readonly type: 'day.closed' | 'day.revised';
  readonly createdAt: string;
  readonly data: {
    readonly day: string;
    readonly revision: number;
    readonly closedAt: string;
    /** Every account of the revision with its figures; absent when too many for one body (see `accountsOmitted`). */
    readonly accounts?: readonly { readonly account: string; readonly metrics: Readonly<Record<string, number>> }[];
    /** The rows left out because the body would be too large: read them from the export. */
    readonly accountsOmitted?: number;
    readonly export: { readonly parquet: string; readonly csv: string; readonly rows: number };
  };
}

/** The header that carries the signature. */
export const SIGNATURE_HEADER = 'Tally-Signature';

/** Bodies are kept under this size (an SQS message holds 256 KB); larger revisions send the export link alone. */
export const MAX_WEBHOOK_BODY_BYTES = 200_000;

/** A receiver should refuse signatures older than this (replays). */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

const encoder = new TextEncoder();

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

/**
 * The event id of revision `revision` of `day`: the same on every delivery and every
 * rerun of the closer. `scope` (the table name) keeps two stages apart.
 */
export function webhookEventId(scope: string, day: string, revision: number): string {
  return `evt_${hex(hash(encoder.encode(`${scope}\n${day}\n${revision}`))).slice(0, 32)}`;
}

/**
 * The event of one revision, as its raw JSON body. Built from what the table recorded
 * (rows sorted by account, the revision's own creation time), so a duplicate is the
 * same text.
 */
export function webhookEventBody(input: {
  scope: string;
  day: string;
  revision: number;
  createdAt: string;
  closedAt: string;
  rows: readonly RevisionRow[];
  exported: { parquet: string; csv: string };
}): string {
  const rows = [...input.rows].sort((a, b) => (a.account < b.account ? -1 : a.account > b.account ? 1 : 0));
  const event = (accounts: boolean): WebhookEvent => ({
    id: webhookEventId(input.scope, input.day, input.revision),
    type: revisionEventType(input.revision),
    createdAt: input.createdAt,
    data: {
      day: input.day,
      revision: input.revision,
      closedAt: input.closedAt,
      ...(accounts ? { accounts: rows.map((row) => ({ account: row.account, metrics: row.metrics })) } : { accountsOmitted: rows.length }),
      export: { ...input.exported, rows: rows.length },
    },
  });
  const full = JSON.stringify(event(true));
  return encoder.encode(full).length <= MAX_WEBHOOK_BODY_BYTES ? full : JSON.stringify(event(false));
}

/**
 * A `usage.threshold` event: an account's month-to-date usage of a metric reached a
 * level of its monthly allowance. Sent once per (account, metric, month, level, allowance).
 */
export interface ThresholdEvent {
  readonly id: string;
  readonly type: 'usage.threshold';
  readonly createdAt: string;
  /** The crossing: account, metric, month, level, allowance and used. */
  readonly data: Omit<ThresholdCrossing, 'crossedAt'>;
}

/** The event id of a crossing: the same however often and by whichever run it is sent. */
export function thresholdEventId(scope: string, crossing: Pick<ThresholdCrossing, 'account' | 'metric' | 'month' | 'level' | 'allowance'>): string {
  const name = `${scope}\nusage.threshold\n${crossing.account}\n${crossing.metric}\n${crossing.month}\n${crossing.level}\n${crossing.allowance}`;
  return `evt_${hex(hash(encoder.encode(name))).slice(0, 32)}`;
}

/** The raw JSON body of a crossing's event, built from the stored record so that a resend is the same text. */
export function thresholdEventBody(scope: string, crossing: ThresholdCrossing): string {
  const event: ThresholdEvent = {
    id: thresholdEventId(scope, crossing),
    type: 'usage.threshold',
    createdAt: crossing.crossedAt,
    data: {
      account: crossing.account,
      metric: crossing.metric,
      month: crossing.month,
      level: crossing.level,
      allowance: crossing.allowance,
      used: crossing.used,
    },
  };
  return JSON.stringify(event);
}

/** The `Tally-Signature` value of `body` signed at `unixSeconds`. */
export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  const mac = hmac(encoder.encode(secret), encoder.encode(`${unixSeconds}.${body}`));
  return `t=${unixSeconds},v1=${hex(mac)}`;
}

/**
 * What a receiver does: true when `header` signs `body` with `secret` and is no older
 * than `toleranceSeconds`. Compares in constant time.
 */
export function verifySignature(
  secret: string,
  header: string,
  body: string,
  nowSeconds: number,
  toleranceSeconds = SIGNATURE_TOLERANCE_SECONDS,
): boolean {
  const parts = new Map(header.split(',').map((part) => part.trim().split('=', 2) as [string, string]));
  const t = Number(parts.get('t'));
  const given = parts.get('v1') ?? '';
  if (!Number.isInteger(t) || Math.abs(nowSeconds - t) > toleranceSeconds) return false;
  const expected = signatureHeader(secret, body, t).split('v1=')[1]!;
  if (given.length !== expected.length) return false;
  let difference = 0;
  for (let i = 0; i < expected.length; i++) difference |= expected.charCodeAt(i) ^ given.charCodeAt(i);
  return difference === 0;
}

/**
 * How long a failed delivery waits before its next try: doubling from `baseSeconds`
 * with each receive, at most `maxSeconds` (SQS allows 12 hours).
 *
 * @example webhookBackoffSeconds(1, 30, 3600) // 30;  webhookBackoffSeconds(4, 30, 3600) // 240
 */
export function webhookBackoffSeconds(receiveCount: number, baseSeconds: number, maxSeconds: number): number {
  const exponent = Math.max(0, Math.min(30, receiveCount - 1));
  return Math.min(maxSeconds, baseSeconds * 2 ** exponent);
}
