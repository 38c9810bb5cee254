import { addDays, dayOf } from '../days';

/**
 * When a day's numbers are final, and what arrived after. A day is **open** until its
 * end plus a grace period, then **closed** for every account: the closer records each
 * account's totals at that moment once (revision 1, the closed snapshot). Usage that
 * reaches a closed day still counts; the closer reports it apart as a new revision
 * whose figures are the change since the revision before, so the revisions of an
 * account-day always add up to its counters.
 *
 * ```
 * day 2026-11-21 |--- usage ---| 11-22 00:00 |--- grace (48 h) ---| 11-24 00:00 closable
 *                                                     late marks from 11-23 23:00 (one hour early)
 * ```
 */

/** One number per metric. */
export type MetricFigures = Readonly<Record<string, number>>;

const MS_PER_HOUR = 3_600_000;
const MS_PER_DAY = 86_400_000;

/**
 * Ingest marks usage as late from this long before a day becomes closable, so that an
 * increment decided "on time" lands before any closer can read the day (an ingest
 * attempt lasts at most the Lambda timeout, 300 s deployed; clocks differ by far less).
 */
export const LATE_MARK_MARGIN_SECONDS = 3_600;

/**
 * Days the scheduled closer looks back over for days still to close or to finish: a
 * closer that was down for a month catches up; older days are closed on demand
 * (`tally close --day`). Late usage is found by its markers, whatever the day's age.
 */
export const CLOSE_LOOKBACK_DAYS = 35;

/** The moment `day` becomes closable: its end plus `graceHours`. */
export function closableAt(day: string, graceHours: number): Date {
  return new Date(Date.parse(`${day}T00:00:00Z`) + MS_PER_DAY + graceHours * MS_PER_HOUR);
}

/** True once `day` may be closed at `now`. */
export function isClosable(day: string, now: Date, graceHours: number): boolean {
  return now.getTime() >= closableAt(day, graceHours).getTime();
}

/** The last day that may be closed at `now`. */
export function lastClosableDay(now: Date, graceHours: number): string {
  return dayOf(new Date(now.getTime() - MS_PER_DAY - graceHours * MS_PER_HOUR));
}

/** The days the scheduled closer considers at `now`: the look-back window up to the last closable day. */
export function closerWindow(now: Date, graceHours: number): { from: string; to: string } {
  const to = lastClosableDay(now, graceHours);
  return { from: addDays(to, -(CLOSE_LOOKBACK_DAYS - 1)), to };
}

/**
 * True when an increment for `day` applied at `now` may miss the closed snapshot, so
 * ingest writes a late marker before it (from {@link LATE_MARK_MARGIN_SECONDS} before
 * the day is closable). Pure clock arithmetic: on-time usage costs no request.
 */
export function marksLateUsage(day: string, now: Date, graceHours: number): boolean {
  return now.getTime() >= closableAt(day, graceHours).getTime() - LATE_MARK_MARGIN_SECONDS * 1000;
}

/** `a + b` per metric, over the metrics of both. */
export function addFigures(a: MetricFigures, b: MetricFigures): Record<string, number> {
  const sum: Record<string, number> = { ...a };
  for (const [name, value] of Object.entries(b)) sum[name] = (sum[name] ?? 0) + value;
  return sum;
}

/** Every metric's sum over `figures`. */
export function sumFigures(figures: readonly MetricFigures[]): Record<string, number> {
  return figures.reduce<Record<string, number>>((sum, next) => addFigures(sum, next), {});
}

/**
 * What the counters hold beyond the recorded revisions: the figures of the next
 * revision. Metrics without change are left out, so an empty result means "nothing new".
 *
 * @example lateFigures({ requests: 12, bytes: 900 }, [{ requests: 10, bytes: 900 }])  // { requests: 2 }
 */
export function lateFigures(counters: MetricFigures, revisions: readonly MetricFigures[]): Record<string, number> {
  const recorded = sumFigures(revisions);
  const late: Record<string, number> = {};
  for (const name of new Set([...Object.keys(counters), ...Object.keys(recorded)])) {
    const delta = (counters[name] ?? 0) - (recorded[name] ?? 0);
    if (delta !== 0) late[name] = delta;
  }
  return late;
}

/** True when any metric of `figures` is not zero. */
export function hasFigures(figures: MetricFigures): boolean {
  return Object.values(figures).some((value) => value !== 0);
}

/** What the table records of one revision of a closed day. */
export interface RevisionInfo {
  readonly revision: number;
  /** When the closer started writing it; revision 1's is the day's `closedAt`. */
  readonly createdAt: string;
  /** Account rows it holds. */
  readonly accounts: number;
  readonly exportedAt?: string;
  readonly notifiedAt?: string;
  /** When it was handed to the Stripe sender's queue. */
  readonly stripeQueuedAt?: string;
}

/** The close record of a day. */
export interface ClosedDay {
  readonly day: string;
  /** When the day was closed: fixed when the closer starts the snapshot, kept on every rerun. */
  readonly closedAt: string;
  /** The newest complete revision: 0 while the snapshot is still being written. */
  readonly revision: number;
  /** A revision being written (a closer stopped half way resumes it). */
  readonly writing?: { readonly revision: number; readonly createdAt: string };
  /** Every complete revision, oldest first. */
  readonly revisions: readonly RevisionInfo[];
}

/** True once the closed snapshot is complete: the day reads as closed. */
export function isClosed(record: ClosedDay | undefined): record is ClosedDay {
  return record !== undefined && record.revision >= 1;
}

/** One account's figures in one revision. */
export interface RevisionRow {
  readonly account: string;
  readonly metrics: MetricFigures;
}

/** The webhook event type of revision `revision`. */
export function revisionEventType(revision: number): 'day.closed' | 'day.revised' {
  return revision === 1 ? 'day.closed' : 'day.revised';
}
