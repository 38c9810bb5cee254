import { ValidationError } from '../errors';
import { dayHours, HOURS_PER_DAY, type BackfillOfDay, type HourSums } from '../hours';
import { compareEvents, meterValue, type MeterEventSubject, type StripeOutboxRecord } from './stripe';

/**
 * Hour windows (`TALLY_STRIPE_WINDOW=hour`): Tally sends, per UTC hour of a day, that hour's
 * billable total to a meter created with `event_time_window=hour`. Stripe keeps the most
 * recent event of each pre-aggregated window ("A newer event sent within the same hourly or
 * daily window overwrites the previous one", https://docs.stripe.com/billing/subscriptions/usage-based/recording-usage),
 * and an invoice bills the events whose timestamps fall in its period, so a period that starts
 * at 15:00 UTC bills the hours from 15:00 on, where a day window bills whole days by their
 * midnight.
 *
 * ```
 * hour 15 of (acme, requests, 2026-11-20), revision n with k adjustments (or the p-th running total)
 *   identifier  tally-2026-11-20-h15-r<n>[a<k>]-<hash>   (or -h15-p<p>-)
 *   timestamp   2026-11-20T15:00:00Z + (n + k) s        (running totals: 15:00:00 itself)
 *   value       the hour's total: the shards' sum for hour 15 (hours.ts), plus the day's adjustments in hour 00
 * ```
 *
 * Closed days, revisions and late usage stay on UTC days: a closed day's hours are sent when a
 * revision of the day is planned, and only the hours whose total changed.
 */

/** How Tally's meter events are windowed (`TALLY_STRIPE_WINDOW`). */
export type StripeWindow = 'day' | 'hour';

const SECONDS_PER_HOUR = 3_600;

/** Parses `TALLY_STRIPE_WINDOW`: `day` (one event per UTC day) or `hour` (one per UTC hour). */
export function parseStripeWindow(text: string): StripeWindow {
  if (text !== 'day' && text !== 'hour') throw new ValidationError(`must be day (one meter event per UTC day) or hour (one per UTC hour), got "${text}"`);
  return text;
}

/**
 * The timestamp (unix seconds) of the event at `step` of hour `hour` of `day`: inside that
 * UTC hour, so the hour-windowed meter counts it there, one second later per step (a later
 * revision or adjustment wins when Stripe orders a window's events by timestamp too).
 */
export function hourEventTimestamp(day: string, hour: number, step: number): number {
  if (!Number.isInteger(hour) || hour < 0 || hour >= HOURS_PER_DAY) throw new RangeError(`hour ${hour} is not 0..23`);
  return Date.parse(`${day}T00:00:00Z`) / 1000 + hour * SECONDS_PER_HOUR + Math.min(Math.max(step, 0), SECONDS_PER_HOUR - 1);
}

/** What a day's hours are built from: its counted totals, the shards' hour sums, the backfilled hours, its adjustments. */
export interface DayHourInput {
  /** Each metric's counted total of the day (every shard summed). */
  readonly counted: Readonly<Record<string, number>>;
  /** The shards' sums by UTC hour (their `05R` attributes). */
  readonly shards: HourSums;
  /** The hours `tally backfill --hours` recomputed, when it ran, and the shards' hours it saw (`dayHours`). */
  readonly backfilled?: BackfillOfDay;
  /** The day's adjustments per metric (dated by day: they count in hour 00, as the read API shows them). */
  readonly adjustments: Readonly<Record<string, number>>;
}

/** A day's billable totals per metric and UTC hour, and the metrics whose hours had to be guessed. */
export interface DayHourTotals {
  /** metric -> 24 hour totals (hour 0 first), summing to the day's billable total. */
  readonly hours: Readonly<Record<string, readonly number[]>>;
  /**
   * Metrics part of whose day has no hour (counted before Tally kept hours, or from log lines
   * with a date and no time of day): that part is put in hour 00, never dropped.
   */
  readonly unplaced: Readonly<Record<string, number>>;
}

/**
 * A day's billable total of each metric split into its 24 UTC hours: the shards' hours when
 * they cover the day, else the backfilled ones plus the hours the shards gained since (a late
 * log) when those do (as the read API chooses, `dayHours`); else the shards' hours with what
 * they miss in hour 00. The day's adjustments
 * count in hour 00; a credit larger than hour 00 takes the rest from the hours after it
 * ({@link carryCredit}). The hours of a metric always sum to its billable total (counted plus
 * adjustments), so no usage is lost and none counted twice whichever hours are known.
 */
export function dayHourTotals(input: DayHourInput, metrics: readonly string[]): DayHourTotals {
  const known = dayHours(input.counted, input.shards, input.backfilled);
  const source = known.hours ?? input.shards;
  const hours: Record<string, number[]> = {};
  const unplaced: Record<string, number> = {};
  for (const metric of metrics) {
    const row = Array.from({ length: HOURS_PER_DAY }, (_, hour) => source[hour]?.[metric] ?? 0);
    const missing = (input.counted[metric] ?? 0) - row.reduce((sum, value) => sum + value, 0);
    if (missing !== 0) unplaced[metric] = missing;
    row[0]! += missing + (input.adjustments[metric] ?? 0);
    hours[metric] = carryCredit(row);
  }
  return { hours, unplaced };
}

/**
 * `row` with what goes below 0 in an hour carried into the next one (a credit, `tally adjust`
 * with a negative delta, larger than hour 00): each hour is sent as at least 0, so a negative
 * hour 00 left as it is would bill the other hours whole, above the day's total (63 for 13).
 * Carried, the hours sent sum to the day's billable total (0 when the day's total is below 0:
 * the last hour keeps the rest); hours the credit does not reach stay as counted.
 */
function carryCredit(row: number[]): number[] {
  for (let hour = 0; hour < row.length - 1; hour++) {
    if (row[hour]! >= 0) continue;
    row[hour + 1]! += row[hour]!;
    row[hour] = 0;
  }
  return row;
}

/** The subject of an hour's event: one of the day's, in hour `hour`. */
export type HourEventSubject = MeterEventSubject & { readonly hour: number };

/**
 * The hours of one metric's day whose total differs from what its newest record says (an
 * hour without a record: when its total is not 0), with the value to send: only these cost a
 * meter event. `records` are the metric's records of the day (hour records; others ignored).
 *
 * @example hoursDue([{ hour: 3, revision: 0, running: 1, value: 5 }], [0, 0, 0, 5, 2, ...zeros])
 * // [{ hour: 4, value: 2, newest: undefined }]
 */
export function hoursDue<R extends Pick<StripeOutboxRecord, 'hour' | 'revision' | 'adjusted' | 'running' | 'value'>>(
  records: readonly R[],
  totals: readonly number[],
): { hour: number; value: number; newest: R | undefined }[] {
  const due: { hour: number; value: number; newest: R | undefined }[] = [];
  for (let hour = 0; hour < HOURS_PER_DAY; hour++) {
    const own = records.filter((r) => r.hour === hour).sort(compareEvents);
    const newest = own.at(-1);
    const value = Number(meterValue(totals[hour] ?? 0));
    if (newest === undefined ? value === 0 : newest.value === value) continue;
    due.push({ hour, value, newest });
  }
  return due;
}

/**
 * `due` ({@link hoursDue}) in the order its records are to be written: first the hours whose new
 * value is below what Stripe acknowledged for them (their newest `delivered` or
 * `invoice-finalized` record), then the others, each part by hour. The sender sends a day's
 * lowered hours first and raises one only once every lowered hour it holds is acknowledged; it
 * can only hold what the planner wrote, and a planner may die (or be read by another sender)
 * between two writes. Written in this order, any part of a plan it sees holds every lowering
 * before any raise, so usage moved between hours (a re-split) is never billed in both. Written by
 * hour, a plan moving usage back into hour 00 wrote hour 00's raise first: a sender reading it
 * alone billed the day above its total (chaos seed 1: 295 for 170).
 */
export function lowersFirst<D extends { hour: number; value: number }>(due: readonly D[], records: readonly Pick<StripeOutboxRecord, 'hour' | 'state' | 'revision' | 'adjusted' | 'running' | 'split' | 'value'>[]): D[] {
  const acknowledged = (hour: number) =>
    records
      .filter((r) => r.hour === hour && (r.state === 'delivered' || r.state === 'invoice-finalized'))
      .sort(compareEvents)
      .at(-1)?.value;
  const lowering = (entry: D) => {
    const held = acknowledged(entry.hour);
    return held !== undefined && entry.value < held ? 0 : 1;
  };
  return [...due].sort((a, b) => lowering(a) - lowering(b) || a.hour - b.hour);
}

/** The window a record's event belongs to: its day, and its hour in hour mode. Sorts in time order. */
export function windowKey(record: Pick<StripeOutboxRecord, 'day' | 'hour'>): string {
  return record.hour === undefined ? record.day : `${record.day}T${String(record.hour).padStart(2, '0')}`;
}

/** The window of a record's event: `hour` when it names an hour, else `day`. */
export function windowOf(record: Pick<StripeOutboxRecord, 'hour'>): StripeWindow {
  return record.hour === undefined ? 'day' : 'hour';
}

/**
 * The windows each day of one account and metric is on at Stripe, from its outbox records:
 * those with a record acknowledged (`delivered`, `invoice-finalized`) or sent without an answer
 * yet (pending with an attempt: it may have reached Stripe). Day records went to day meters and
 * hour records to hour meters (the sender refuses any other pairing), so after
 * `TALLY_STRIPE_WINDOW` changed, a day may be on the old meters, the new ones, or both. A window
 * counts by its newest such record: acknowledged at 0 (the sender moved the day to the new meters,
 * docs/stripe.md#hour-windows), it bills nothing and holds nothing.
 */
export function windowsOnStripe(
  records: readonly Pick<StripeOutboxRecord, 'day' | 'hour' | 'state' | 'attempts' | 'value' | 'revision' | 'adjusted' | 'running' | 'split'>[],
): Map<string, Set<StripeWindow>> {
  // Per meter window (a day, or an hour of a day), its newest record that reached Stripe.
  const newest = new Map<string, (typeof records)[number]>();
  for (const record of records) {
    const reached = record.state === 'delivered' || record.state === 'invoice-finalized' || (record.state === 'pending' && record.attempts > 0);
    if (!reached) continue;
    const held = newest.get(windowKey(record));
    if (held === undefined || compareEvents(held, record) <= 0) newest.set(windowKey(record), record);
  }
  const on = new Map<string, Set<StripeWindow>>();
  for (const record of newest.values()) {
    // A window whose newest event Stripe acknowledged at 0 bills nothing: the day was moved off that meter (or had nothing there).
    if (record.value === 0 && record.state !== 'pending') continue;
    const windows = on.get(record.day) ?? new Set<StripeWindow>();
    windows.add(windowOf(record));
    on.set(record.day, windows);
  }
  return on;
}

/**
 * The other window when `day` is on Stripe in it and not in `window` (see {@link windowsOnStripe}):
 * an event of `window` for that day would reach the new meters while the old ones keep the day,
 * and a subscription that bills both meters over the day would bill it twice. Undefined when the
 * day is on neither, or already on `window`'s meters (the operator sent it there: what follows
 * only updates them).
 */
export function otherWindowHolding(on: ReadonlyMap<string, ReadonlySet<StripeWindow>>, day: string, window: StripeWindow): StripeWindow | undefined {
  const windows = on.get(day);
  if (windows === undefined || windows.has(window)) return undefined;
  const other: StripeWindow = window === 'day' ? 'hour' : 'day';
  return windows.has(other) ? other : undefined;
}
