import { addHourSums, hourTotals, hoursCoverDay, type HourSums } from '../hours';

/**
 * `tally backfill --hours`: the hours of an account-day counted before hours were kept,
 * recomputed from its log objects. Pure parts: what the item holds, how the recount of
 * a day's objects adds up, and whether it may be written.
 *
 * The item (`DAY#<day>#H#00`, hours.ts) holds the whole day's hours as hour attributes
 * named like a shard's (`05R`, `05B`, `05<metric>`), plus what they were computed from:
 * `objects` (the day's log objects of the account, from the ledger), `computedAt`, and
 * `atShards`, the shards' own hour sums in the read of the counters the hours cover:
 * readers add to the recomputed hours what the shards gained since (`dayHours`, hours.ts),
 * so a late log counted after the backfill keeps its own hours.
 */

/** Days one run recomputes at most: every day reads all its log objects again (loop over months for more). */
export const MAX_HOURS_BACKFILL_DAYS = 31;

/** The backfilled-hours item of an account-day, as written and read. */
export interface BackfilledHours {
  readonly hours: HourSums;
  /** Log objects of the account-day whose recount made `hours`. */
  readonly objects: number;
  /** When they were recomputed (ISO 8601). */
  readonly computedAt: string;
  /**
   * The shards' hour sums (every shard added) in the same read as the counters `hours`
   * cover; absent on items written before it was recorded (they read as their hours alone).
   */
  readonly atShards?: HourSums;
}

/** One object's recount for one account-day: its metrics and hours, next to what its ledger recorded. */
export interface ObjectRecount {
  /** The object (`describeObject`), for reports. */
  readonly object: string;
  /** The metrics its ledger row records for the account-day (what the counters hold from it). */
  readonly recorded: Readonly<Record<string, number>>;
  /** What counting it again gave; undefined when it could not be read again. */
  readonly counted?: { readonly metrics: Readonly<Record<string, number>>; readonly hours: HourSums };
  /** Why it could not be read again. */
  readonly error?: string;
  /** The ledger lists unresolved increments of the account-day: not all of it is in the counters. */
  readonly unresolved?: boolean;
}

/** The recount of an account-day, object by object. */
export class AccountDayRecount {
  readonly hours: Record<number, Record<string, number>> = {};
  readonly problems: string[] = [];
  objects = 0;

  /**
   * Adds one object's recount; a recount that differs from the ledger's row, or whose hours
   * do not cover it (lines with no time of day), is a problem, never added.
   */
  add(recount: ObjectRecount): void {
    this.objects++;
    if (recount.unresolved === true) this.problems.push(`${recount.object}: unresolved increments (tally reconcile --resolve settles them)`);
    if (recount.counted === undefined) {
      this.problems.push(`${recount.object}: not read again (${recount.error ?? 'unknown error'})`);
      return;
    }
    if (!sameFigures(recount.recorded, recount.counted.metrics)) {
      this.problems.push(`${recount.object}: counts ${describe(recount.counted.metrics)} now, the ledger recorded ${describe(recount.recorded)} (settings changed since?)`);
      return;
    }
    if (!hoursCoverDay(recount.counted.metrics, recount.counted.hours)) {
      // The object's figures agree with its ledger row but some of its lines have no hour:
      // blaming the ledger (the gap's usual reason) would send the operator the wrong way.
      this.problems.push(
        `${recount.object}: counted again without hours for all of its usage (lines with a date and no time of day)`,
      );
      return;
    }
    addHourSums(this.hours, recount.counted.hours);
  }
}

/** What to do with an account-day's recount. */
export type HoursVerdict =
  | { readonly write: true }
  | {
      readonly write: false;
      readonly reason: string;
      /** Counters minus the recomputed hours' sums, per metric (every metric of either). */
      readonly gap: Record<string, number>;
    };

/**
 * Whether the recount may be written: only when every object was read again and agreed
 * with its ledger row, and its hours sum to the day's counters exactly (hoursCoverDay).
 * Otherwise the day is reported and nothing is written, so the item, where it exists,
 * always held hours that covered their day when written: an object missing from the
 * ledger (counted before contributions were recorded, or past the ledger's TTL), one
 * still being counted, unresolved increments or changed settings leave it as it was.
 * Adjustments are not measured usage: they have no hour and never enter the check.
 */
export function judgeRecount(counters: Readonly<Record<string, number>>, recount: AccountDayRecount): HoursVerdict {
  const totals = hourTotals(recount.hours);
  const names = [...new Set([...Object.keys(counters), ...Object.keys(totals)])].sort();
  const gap = Object.fromEntries(names.map((name) => [name, (counters[name] ?? 0) - (totals[name] ?? 0)]));
  if (recount.problems.length > 0) return { write: false, reason: recount.problems.join('; '), gap };
  if (hoursCoverDay(counters, recount.hours)) return { write: true };
  const more = Object.values(gap).some((value) => value > 0);
  return {
    write: false,
    reason: more
      ? `the counters hold more than its ${recount.objects} log object(s) in the ledger: objects counted before contributions were recorded ` +
        '(tally backfill over the day, and the day before, records them), objects being counted now, or ledger entries past their TTL'
      : `its ${recount.objects} log object(s) hold more than the counters: an object whose increments are still being applied`,
    gap,
  };
}

/** True when two recorded hour sums are the same, metric by metric (zeros and absences alike). */
export function sameHours(a: HourSums, b: HourSums): boolean {
  for (let hour = 0; hour < 24; hour++) if (!sameFigures(a[hour] ?? {}, b[hour] ?? {})) return false;
  return true;
}

function sameFigures(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): boolean {
  for (const name of new Set([...Object.keys(a), ...Object.keys(b)])) if ((a[name] ?? 0) !== (b[name] ?? 0)) return false;
  return true;
}

function describe(metrics: Readonly<Record<string, number>>): string {
  return Object.entries(metrics)
    .map(([name, value]) => `${name} ${value}`)
    .join(', ');
}
