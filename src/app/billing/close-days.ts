import {
  closerWindow,
  hasFigures,
  isClosable,
  isClosed,
  lastClosableDay,
  lateFigures,
  closableAt,
  type ClosedDay,
  type MetricFigures,
} from '../../domain/billing/day-close';
import { eachDay, isSupportedDay, skippedRecord } from '../../domain/days';
import { monthOf } from '../../domain/billing/quota';
import { describeError, ValidationError } from '../../domain/errors';
import { revisionExport } from '../../domain/billing/revision-export';
import { webhookEventBody, webhookEventId } from '../../domain/billing/webhook';
import { mapWithConcurrency } from '../concurrency';
import { SKIPPED_RECORD_MESSAGE, type Log } from '../log';
import type { CloseStore, LateMarker, MonthRechecks, RevisionExports, StripeSendQueue, WebhookOutbox } from '../ports';

export interface CloserDeps {
  readonly store: CloseStore;
  readonly exports: RevisionExports;
  /**
   * A revision of a day marks its month for the threshold evaluator, which may have
   * stopped looking at that month (late usage of a past month must still fire).
   */
  readonly rechecks: MonthRechecks;
  /** Absent when no webhook is configured. */
  readonly outbox?: WebhookOutbox;
  /** The Stripe sender's queue: each revision is handed to it once. Absent when Stripe is not configured. */
  readonly stripeQueue?: StripeSendQueue;
  readonly log: Log;
  readonly graceHours: number;
  /** Metric columns every export carries (the configured metrics). */
  readonly metricNames: readonly string[];
  /** Scope of the webhook event ids (the table name): two stages never share an id. */
  readonly scope: string;
  /**
   * A late marker is cleared only once it is this old: longer than an ingest attempt
   * can take, so the increment it announced has landed (and been seen) or died.
   */
  readonly settleSeconds: number;
  /** Account-days read at once. */
  readonly concurrency?: number;
  readonly clock?: () => Date;
}

export interface CloseOptions {
  /** Only this day: closes it if due, else re-checks every account of it for late usage. */
  readonly day?: string;
  /** Says what would be done; writes nothing. */
  readonly dryRun?: boolean;
}

/** What the closer did with one day. */
export interface DayCloseResult {
  readonly day: string;
  /**
   * `closed`: the snapshot (revision 1) was recorded now; `revised`: late usage became a
   * revision; `published`: an earlier revision's export or webhook was finished;
   * `unchanged`: nothing to do; `would-close` / `would-revise`: a dry run's finding;
   * `waiting`: late usage on a day whose close is not complete yet.
   */
  readonly action: 'closed' | 'revised' | 'published' | 'unchanged' | 'would-close' | 'would-revise' | 'waiting';
  /** Revisions written by this run, with their account rows (a dry run: the one that would be). */
  readonly written?: readonly { readonly revision: number; readonly accounts: number }[];
  readonly closedAt?: string;
  readonly exports?: readonly { readonly revision: number; readonly parquet: string; readonly csv: string }[];
  /** Webhook event ids handed to the queue. */
  readonly events?: readonly string[];
  readonly error?: string;
}

export interface CloseReport {
  readonly now: string;
  readonly graceHours: number;
  /** The last day that may be closed now. */
  readonly lastClosableDay: string;
  readonly dryRun: boolean;
  /** Days acted on (days with nothing to do are left out unless asked for with `day`). */
  readonly days: readonly DayCloseResult[];
  readonly markers: { readonly found: number; readonly cleared: number; readonly waiting: number };
  /** Days that failed (their error is in `days`); a rerun finishes them. */
  readonly failed: number;
  /**
   * Stored records skipped, each with why: late markers of a day outside the supported
   * days (an older version could record one). Logged as errors and left in place.
   */
  readonly skipped: readonly string[];
}

interface Published {
  exports: { revision: number; parquet: string; csv: string }[];
  events: string[];
}

/**
 * Closes the days that are due, turns late usage into revisions, and publishes every
 * revision (Parquet and CSV export, webhook event) once. Safe to run at any time, as
 * often as wanted, concurrently with ingest and with another closer:
 *
 * ```
 * window (35 days up to the last closable day), one Query of the close records
 *   no record            -> revision 1: every account of the day (day index), its counters, recorded once
 *   a revision writing   -> resume it (a closer stopped half way)
 *   unpublished revision -> export it, hand its event to the webhook queue
 * late markers (16 Queries) -> per closed day: counters - sum(revisions) of the marked accounts
 *   any change           -> revision n + 1 with the changed accounts, then publish it
 *   markers older than settleSeconds and unchanged since read -> removed
 * every revision written -> its month marked for the threshold evaluator (THRESHOLD#RECHECK, one PutItem)
 * ```
 * Each account-day row is written with a condition (an earlier row wins), so a rerun
 * after a crash, or two closers at once, leave one snapshot per account-day.
 */
export async function closeDays(deps: CloserDeps, options: CloseOptions = {}): Promise<CloseReport> {
  const now = (deps.clock ?? (() => new Date()))();
  const dryRun = options.dryRun === true;
  const last = lastClosableDay(now, deps.graceHours);
  const results: DayCloseResult[] = [];
  const run = new CloseRun(deps, now, dryRun);

  let window: { from: string; to: string };
  if (options.day !== undefined) {
    if (!isClosable(options.day, now, deps.graceHours)) {
      throw new ValidationError(
        `${options.day} is open until ${closableAt(options.day, deps.graceHours).toISOString()} (its end plus ${deps.graceHours} h of grace); the last day that can be closed now is ${last}`,
      );
    }
    window = { from: options.day, to: options.day };
  } else {
    window = closerWindow(now, deps.graceHours);
  }
  const records = new Map((await deps.store.closedDays(window.from, window.to)).map((record) => [record.day, record]));
  for (const day of eachDay(window.from, window.to)) {
    const result = await run.guard(day, () => run.closeDay(day, records.get(day), options.day === day));
    records.delete(day);
    if (result.action !== 'unchanged' || options.day !== undefined) results.push(result);
  }

  const markers = await deps.store.lateMarkers();
  const byDay = new Map<string, LateMarker[]>();
  const skipped: string[] = [];
  for (const marker of markers) {
    if (!isSupportedDay(marker.day)) {
      skipped.push(skippedRecord(`the late marker of ${marker.account} on ${marker.day}`, marker.day));
      deps.log.error(SKIPPED_RECORD_MESSAGE, { record: 'late marker', account: marker.account, day: marker.day, reason: skipped.at(-1) });
      continue;
    }
    byDay.set(marker.day, [...(byDay.get(marker.day) ?? []), marker]);
  }
  let cleared = 0;
  let waiting = 0;
  for (const [day, dayMarkers] of [...byDay].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const accounts = [...new Set(dayMarkers.map((marker) => marker.account))];
    const result = await run.guard(day, () => run.revise(day, accounts));
    const earlier = results.findIndex((r) => r.day === day);
    if (earlier >= 0 && result.action === 'unchanged') {
      // The day was handled above; the markers changed nothing more.
    } else if (earlier >= 0) {
      results[earlier] = mergeResults(results[earlier]!, result);
    } else if (result.action !== 'unchanged') {
      results.push(result);
    }
    if (result.action === 'waiting' || result.error !== undefined || dryRun) {
      waiting += dayMarkers.length;
      continue;
    }
    for (const marker of dayMarkers) {
      const age = (now.getTime() - Date.parse(marker.markedAt)) / 1000;
      if (age >= deps.settleSeconds && (await deps.store.clearLateMarker(marker))) cleared++;
      else waiting++;
    }
  }

  return {
    now: now.toISOString(),
    graceHours: deps.graceHours,
    lastClosableDay: last,
    dryRun,
    days: results.sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0)),
    markers: { found: markers.length, cleared, waiting },
    failed: results.filter((result) => result.error !== undefined).length,
    skipped,
  };
}

/** One day's two results of a run (the window's, then the late markers'), as one. */
function mergeResults(first: DayCloseResult, second: DayCloseResult): DayCloseResult {
  const merged = {
    ...first,
    ...second,
    action: second.action === 'unchanged' || second.action === 'published' ? first.action : second.action,
    written: [...(first.written ?? []), ...(second.written ?? [])],
    exports: [...(first.exports ?? []), ...(second.exports ?? [])],
    events: [...(first.events ?? []), ...(second.events ?? [])],
  };
  return withoutEmpty(merged);
}

function withoutEmpty(result: DayCloseResult): DayCloseResult {
  const { written, exports, events, ...rest } = result;
  return {
    ...rest,
    ...(written !== undefined && written.length > 0 ? { written } : {}),
    ...(exports !== undefined && exports.length > 0 ? { exports } : {}),
    ...(events !== undefined && events.length > 0 ? { events } : {}),
  };
}

/** One run of the closer: the work on each day, sharing the run's clock and mode. */
class CloseRun {
  constructor(
    private readonly deps: CloserDeps,
    private readonly now: Date,
    private readonly dryRun: boolean,
  ) {}

  /** Runs one day's work; a failure is reported on the day (the others go on) and retried by the next run. */
  async guard(day: string, work: () => Promise<DayCloseResult>): Promise<DayCloseResult> {
    try {
      return await work();
    } catch (error) {
      this.deps.log.error('closing a day failed; the next run resumes it', { day, error: describeError(error) });
      return { day, action: 'unchanged', error: describeError(error) };
    }
  }

  /** A day of the window: close it, resume what a crash left, publish what is unpublished. */
  async closeDay(day: string, found: ClosedDay | undefined, recheck: boolean): Promise<DayCloseResult> {
    const { store } = this.deps;
    if (found === undefined && this.dryRun) {
      const accounts = await store.accountsOn(day);
      return { day, action: 'would-close', written: [{ revision: 1, accounts: accounts.length }] };
    }
    let record = found ?? (await store.beginRevision(day, 1, this.now.toISOString()));
    let action: DayCloseResult['action'] = 'unchanged';
    let written: { revision: number; accounts: number } | undefined;
    if (record.writing !== undefined && !this.dryRun) {
      const { revision, createdAt } = record.writing;
      const candidates = await store.accountsOn(day);
      written = await this.writeRevision(day, revision, createdAt, candidates);
      action = revision === 1 ? 'closed' : 'revised';
      record = (await store.closedDay(day)) ?? record;
    }
    const published = this.dryRun ? { exports: [], events: [] } : await this.publish(record);
    if (action === 'unchanged' && published.exports.length + published.events.length > 0) action = 'published';
    const result = withoutEmpty({ day, action, written: written === undefined ? [] : [written], closedAt: record.closedAt, ...published });
    if (recheck && isClosed(record)) return mergeResults(result, await this.revise(day, await store.accountsOn(day)));
    return result;
  }

  /**
   * Late usage of `accounts` on `day`: when their counters moved past the recorded
   * revisions, a new revision with those accounts' changes.
   */
  async revise(day: string, accounts: readonly string[], known?: ClosedDay): Promise<DayCloseResult> {
    const { store } = this.deps;
    let record = known ?? (await store.closedDay(day));
    if (!isClosed(record)) return { day, action: 'waiting' };
    if (record.writing === undefined) {
      const changed = await this.changedAccounts(day, accounts);
      if (changed.length === 0) return { day, action: 'unchanged', closedAt: record.closedAt };
      const revision = record.revision + 1;
      if (this.dryRun) return { day, action: 'would-revise', written: [{ revision, accounts: changed.length }], closedAt: record.closedAt };
      record = await store.beginRevision(day, revision, this.now.toISOString());
      accounts = changed;
    } else if (this.dryRun) {
      return { day, action: 'would-revise', written: [{ revision: record.writing.revision, accounts: 0 }], closedAt: record.closedAt };
    }
    let written: { revision: number; accounts: number } | undefined;
    if (record.writing !== undefined) {
      // Ours, or one a crash left (it also covers these accounts: their markers are still there).
      written = await this.writeRevision(day, record.writing.revision, record.writing.createdAt, accounts);
      record = (await store.closedDay(day)) ?? record;
    }
    const published = await this.publish(record);
    const revised = written !== undefined && written.accounts > 0;
    return withoutEmpty({
      day,
      action: revised ? 'revised' : published.exports.length + published.events.length > 0 ? 'published' : 'unchanged',
      written: revised ? [written!] : [],
      closedAt: record.closedAt,
      ...published,
    });
  }

  private async changedAccounts(day: string, accounts: readonly string[]): Promise<string[]> {
    const figures = await mapWithConcurrency(accounts, this.deps.concurrency ?? 8, async (account) => {
      const { counters, revisions } = await this.deps.store.accountDay(account, day);
      return hasFigures(lateFigures(counters, revisions.map((r) => r.metrics))) ? account : undefined;
    });
    return figures.filter((account): account is string => account !== undefined);
  }

  /**
   * Writes revision `revision` of `day` for `candidates`: revision 1 records each
   * account's counters, a later one what the counters hold beyond the revisions before.
   * Rows already written (by a run that stopped) are kept as they are. A later revision
   * that finds nothing is dropped instead of completed.
   */
  private async writeRevision(day: string, revision: number, createdAt: string, candidates: readonly string[]): Promise<{ revision: number; accounts: number }> {
    const { store } = this.deps;
    await mapWithConcurrency(candidates, this.deps.concurrency ?? 8, async (account) => {
      const { counters, revisions } = await store.accountDay(account, day);
      const existing = revisions.find((r) => r.revision === revision);
      let metrics: MetricFigures | undefined = existing?.metrics;
      if (metrics === undefined) {
        const before = revisions.filter((r) => r.revision < revision).map((r) => r.metrics);
        const figures = revision === 1 ? counters : lateFigures(counters, before);
        if (revision === 1 ? Object.keys(figures).length === 0 : !hasFigures(figures)) return;
        metrics = figures;
      }
      await store.recordRevisionRow({ day, revision, account, metrics, createdAt });
    });
    const rows = await store.revisionRows(day, revision);
    if (rows.length === 0 && revision > 1) {
      await store.abandonRevision(day, revision);
      return { revision, accounts: 0 };
    }
    // Before the revision is complete: a crash in between resumes it, and marks again.
    await this.deps.rechecks.mark(monthOf(day), this.now.toISOString());
    await store.completeRevision(day, revision, createdAt, rows.length);
    this.deps.log.info(revision === 1 ? 'day closed' : 'late usage recorded as a revision', { day, revision, accounts: rows.length });
    return { revision, accounts: rows.length };
  }

  /** Exports every revision of `record` not yet exported, and hands its event to the webhook queue. */
  private async publish(record: ClosedDay): Promise<Published> {
    const { store, exports, outbox, stripeQueue } = this.deps;
    const published: Published = { exports: [], events: [] };
    for (const info of record.revisions) {
      if (stripeQueue !== undefined && info.stripeQueuedAt === undefined) {
        // The sender sends what the revision changed for linked accounts; unlinked ones cost it one read.
        await stripeQueue.enqueue({ day: record.day, revision: info.revision });
        await store.markPublished(record.day, info.revision, 'stripeQueuedAt', this.now.toISOString());
      }
      const needsExport = info.exportedAt === undefined;
      const needsEvent = outbox !== undefined && info.notifiedAt === undefined;
      if (!needsExport && !needsEvent) continue;
      const rows = await store.revisionRows(record.day, info.revision);
      const table = revisionExport({ day: record.day, revision: info.revision, closedAt: record.closedAt, rows, metricNames: this.deps.metricNames });
      // Writing again gives the same objects, so the locations are known even when only the event is missing.
      const location = await exports.write(table);
      if (needsExport) {
        await store.markPublished(record.day, info.revision, 'exportedAt', this.now.toISOString());
        published.exports.push({ revision: info.revision, ...location });
      }
      if (needsEvent) {
        const body = webhookEventBody({
          scope: this.deps.scope,
          day: record.day,
          revision: info.revision,
          createdAt: info.createdAt,
          closedAt: record.closedAt,
          rows: table.rows,
          exported: location,
        });
        const id = webhookEventId(this.deps.scope, record.day, info.revision);
        await outbox.enqueue({ id, body });
        await store.markPublished(record.day, info.revision, 'notifiedAt', this.now.toISOString());
        published.events.push(id);
      }
    }
    return published;
  }
}
