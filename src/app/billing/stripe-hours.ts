import type { ClosedDay } from '../../domain/billing/day-close';
import { eventStep, latestSendable, meterValue, pendingOutboxRecord, type StripeLink, type StripeOutboxRecord } from '../../domain/billing/stripe';
import { dayHourTotals, hourEventTimestamp, hoursDue, lowersFirst, type DayHourInput, type DayHourTotals } from '../../domain/billing/stripe-hours';
import { addHourSums, type BackfillOfDay } from '../../domain/hours';
import type { UsageRecord } from '../../domain/reading/usage-records';
import { TallyError } from '../../domain/errors';
import type { Log } from '../log';
import type { StripeStore, UsageReader } from '../ports';

/** What hour planning needs of the sync's dependencies (`StripeSyncDeps` has them all). */
export interface HourPlanDeps {
  readonly store: Pick<StripeStore, 'records' | 'addRecord'>;
  /** Reads an account's usage items with their hours. */
  readonly usage?: Pick<UsageReader, 'read'>;
  readonly meters: Readonly<Record<string, string>>;
  readonly scope: string;
  readonly log: Log;
  readonly clock?: () => Date;
}

/**
 * The planning side of `TALLY_STRIPE_WINDOW=hour` (domain/billing/stripe-hours.ts): which
 * hour records an account's days need. Sending is the same as for days (stripe-sync.ts:
 * outbox, lease, one call at a time per customer and meter, each hour window its own
 * sequence). Reads per call: the account's outbox records and one Query of its usage items
 * over the days planned (shards with their hours, backfilled hours, adjustments, revisions).
 */

/** A day of an account as hour planning needs it, from the usage items of one read. */
interface DayFigures extends DayHourInput {
  readonly revisions: { revision: number; metrics: Readonly<Record<string, number>> }[];
  /** How many adjustments each metric has on the day (their count is part of an event's step). */
  readonly adjustedBy: Readonly<Record<string, number>>;
}

/** Groups one read's usage items by day. */
function figuresByDay(records: readonly UsageRecord[]): Map<string, DayFigures> {
  const days = new Map<string, { counted: Record<string, number>; shards: Record<number, Record<string, number>>; backfilled?: BackfillOfDay; adjustments: Record<string, number>; adjustedBy: Record<string, number>; revisions: DayFigures['revisions'] }>();
  const of = (day: string) => {
    let figures = days.get(day);
    if (figures === undefined) days.set(day, (figures = { counted: {}, shards: {}, adjustments: {}, adjustedBy: {}, revisions: [] }));
    return figures;
  };
  for (const record of records) {
    const figures = of(record.day);
    if (record.kind === 'usage') {
      for (const [metric, amount] of Object.entries(record.metrics)) figures.counted[metric] = (figures.counted[metric] ?? 0) + amount;
      if (record.hours !== undefined) addHourSums(figures.shards, record.hours);
    } else if (record.kind === 'hours') {
      figures.backfilled = { hours: record.hours, ...(record.atShards === undefined ? {} : { atShards: record.atShards }) };
    } else if (record.kind === 'adjustment') {
      figures.adjustments[record.metric] = (figures.adjustments[record.metric] ?? 0) + record.delta;
      figures.adjustedBy[record.metric] = (figures.adjustedBy[record.metric] ?? 0) + 1;
    } else if (record.kind === 'revision') {
      figures.revisions.push({ revision: record.revision, metrics: record.metrics });
    }
  }
  return days;
}

const EMPTY_DAY: DayFigures = { counted: {}, shards: {}, adjustments: {}, adjustedBy: {}, revisions: [] };

async function readDays(deps: HourPlanDeps, account: string, from: string, to: string): Promise<Map<string, DayFigures>> {
  if (deps.usage === undefined) throw new TallyError('TALLY_STRIPE_WINDOW=hour needs the usage reader (the sync was wired without it)');
  const { records } = await deps.usage.read(account, from, to, { closedDays: false });
  return figuresByDay(records);
}

/** True for an hour before the link's first hour (hours of the period before the one linked): never sent. */
function beforeLink(link: StripeLink, day: string, hour: number): boolean {
  return link.fromTime !== undefined && hourEventTimestamp(day, hour, 0) < link.fromTime;
}

/** Logs, once per day and metric planned, usage of a day that has no hour: it goes to hour 00. */
function warnUnplaced(deps: HourPlanDeps, account: string, day: string, unplaced: Readonly<Record<string, number>>): void {
  for (const [metric, amount] of Object.entries(unplaced)) {
    deps.log.warn('stripe hour window: usage without an hour sent in hour 00', {
      account,
      day,
      metric,
      amount,
      hint: `counted before Tally kept hours, or from lines without a time of day; tally backfill --hours --from ${day} --to ${day} recomputes them (the sender then moves the usage out of hour 00 into its hours)`,
    });
  }
}

/**
 * The re-split number of a closed day's new hour record at `step`, given the hour's newest
 * record: 0 (none) when that record is of an earlier step (or a running total, or there is none);
 * one more than its own when it is of this step, i.e. the day's hours changed with no revision,
 * which only `tally backfill --hours` does (usage sent in hour 00 moves to its hours). Without
 * it the other hours would go at this step while hour 00 kept the whole day: billed twice.
 * Undefined when the newest record is of a later step (never written after it).
 */
function resplitNumber(newest: StripeOutboxRecord | undefined, step: number): number | undefined {
  if (newest === undefined || newest.revision === 0 || eventStep(newest) < step) return 0;
  if (eventStep(newest) > step) return undefined;
  return (newest.split ?? 0) + 1;
}

/**
 * The hour records of one linked account's closed days (sorted, from the link's first day):
 * for each day, its hours as of its newest complete revision, each hour whose total differs
 * from its newest record (a running total or an earlier revision) written at the step of the
 * metric's newest revision plus its adjustments. A day whose counters moved past that
 * revision (a late log the closer has not revised yet) waits: its hours would not be the
 * revision's, and the next revision plans it. Returns the records written now.
 */
export async function planClosedHours(deps: HourPlanDeps, link: StripeLink, closed: readonly ClosedDay[]): Promise<StripeOutboxRecord[]> {
  if (closed.length === 0) return [];
  const first = closed[0]!.day;
  const last = closed[closed.length - 1]!.day;
  const existing = await deps.store.records(link.account, first, last);
  const days = await readDays(deps, link.account, first, last);
  const metrics = Object.keys(deps.meters);
  const createdAt = (deps.clock ?? (() => new Date()))().toISOString();
  const written: StripeOutboxRecord[] = [];
  for (const record of closed) {
    const figures = days.get(record.day) ?? EMPTY_DAY;
    const complete = figures.revisions.filter((r) => r.revision <= record.revision);
    if (complete.length === 0) continue;
    const revised = latestSendable(complete, {}, metrics);
    if (revised.some(({ metric, value }) => value !== (figures.counted[metric] ?? 0))) {
      deps.log.info('stripe hour window: counters moved past the revision; its next revision sends the hours', { account: link.account, day: record.day, revision: record.revision });
      continue;
    }
    const { hours, unplaced } = dayHourTotals(figures, metrics);
    warnUnplaced(deps, link.account, record.day, unplaced);
    for (const { metric, revision } of latestSendable(complete, figures.adjustments, metrics)) {
      const adjusted = figures.adjustedBy[metric] ?? 0;
      const step = revision + adjusted;
      const own = existing.filter((r) => r.day === record.day && r.metric === metric && r.hour !== undefined);
      // Lowered hours written first: a plan cut short never holds a raise without the lowerings before it.
      for (const { hour, value, newest } of lowersFirst(hoursDue(own, hours[metric]!), own)) {
        if (beforeLink(link, record.day, hour)) continue;
        const split = resplitNumber(newest, step);
        if (split === undefined) continue;
        const subject = { account: link.account, metric, day: record.day, revision, ...(adjusted === 0 ? {} : { adjusted }), hour, ...(split === 0 ? {} : { split }) };
        const outbox = pendingOutboxRecord(deps.scope, link, deps.meters[metric]!, subject, { timestamp: hourEventTimestamp(record.day, hour, step), value, createdAt });
        if (await deps.store.addRecord(outbox)) written.push(outbox);
      }
    }
  }
  return written;
}

/**
 * The hourly running totals of one linked account's open days `open` (inside `from..to`):
 * per day and metric, each hour whose total so far differs from its newest running total
 * (a first one only when not 0), numbered one after it and stamped at the hour's start. A
 * metric with a closed record on the day needs none. Returns the records written.
 */
export async function planRunningHours(deps: HourPlanDeps, link: StripeLink, open: readonly string[], from: string, to: string): Promise<StripeOutboxRecord[]> {
  const existing = await deps.store.records(link.account, from, to);
  const days = await readDays(deps, link.account, from, to);
  const metrics = Object.keys(deps.meters);
  const createdAt = (deps.clock ?? (() => new Date()))().toISOString();
  const written: StripeOutboxRecord[] = [];
  for (const day of open) {
    const { hours, unplaced } = dayHourTotals(days.get(day) ?? EMPTY_DAY, metrics);
    const before = written.length;
    for (const metric of metrics) {
      const own = existing.filter((r) => r.day === day && r.metric === metric);
      if (own.some((r) => r.revision > 0)) continue;
      const ownHours = own.filter((r) => r.hour !== undefined);
      for (const { hour, value, newest } of lowersFirst(hoursDue(ownHours, hours[metric]!), ownHours)) {
        if (beforeLink(link, day, hour)) continue;
        const subject = { account: link.account, metric, day, revision: 0, running: (newest?.running ?? 0) + 1, hour };
        const outbox = pendingOutboxRecord(deps.scope, link, deps.meters[metric]!, subject, { timestamp: hourEventTimestamp(day, hour, 0), value, createdAt });
        if (await deps.store.addRecord(outbox)) written.push(outbox);
      }
    }
    // Said when something of the day is sent, not at every sweep.
    if (written.length > before) warnUnplaced(deps, link.account, day, unplaced);
  }
  return written;
}

/** `seconds` rounded up to a whole hour (unix seconds). */
export function ceilHour(seconds: number): number {
  return Math.ceil(seconds / 3_600) * 3_600;
}

/**
 * Tally's billable total of each metric over the hours an hour-window invoice for
 * [start, end) holds: the hours whose events (stamped at the hour's start, plus a second per
 * step) fall in it, i.e. those starting from the first whole hour at or after `start` up to
 * the one before `end` rounded up. Each hour as it is sent (never below 0). One usage read.
 * The hours of a day and metric `leaveOut` names (held by the sender) count in `held` instead.
 */
export async function periodHourTotals(
  deps: HourPlanDeps,
  account: string,
  start: number,
  end: number,
  leaveOut: (day: string, metric: string) => boolean = () => false,
): Promise<{ from: number; to: number; totals: Record<string, number>; held: Record<string, number> }> {
  const from = ceilHour(start);
  const to = ceilHour(end);
  const metrics = Object.keys(deps.meters);
  const totals: Record<string, number> = Object.fromEntries(metrics.map((metric) => [metric, 0]));
  const held: Record<string, number> = Object.fromEntries(metrics.map((metric) => [metric, 0]));
  if (from >= to) return { from, to, totals, held };
  const dayOfSeconds = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 10);
  const days = await readDays(deps, account, dayOfSeconds(from), dayOfSeconds(to - 1));
  const split = new Map<string, DayHourTotals>();
  for (let hourStart = from; hourStart < to; hourStart += 3_600) {
    const day = dayOfSeconds(hourStart);
    const hour = new Date(hourStart * 1000).getUTCHours();
    if (!split.has(day)) split.set(day, dayHourTotals(days.get(day) ?? EMPTY_DAY, metrics));
    const { hours } = split.get(day)!;
    for (const metric of metrics) (leaveOut(day, metric) ? held : totals)[metric]! += Number(meterValue(hours[metric]![hour] ?? 0));
  }
  return { from, to, totals, held };
}
