import { UNATTRIBUTED } from '../../domain/account-id';
import { lastClosableDay } from '../../domain/billing/day-close';
import { addDays, dayOf, eachDay, skippedRecord } from '../../domain/days';
import { describeError } from '../../domain/errors';
import {
  alertStandsFor,
  crossingInForce,
  effectiveQuotas,
  isSupportedMonth,
  monthDays,
  monthOf,
  reachedLevels,
  type Quota,
  type QuotaDefaults,
  type RecordedCrossing,
  type ThresholdCrossing,
} from '../../domain/billing/quota';
import { thresholdEventBody, thresholdEventId } from '../../domain/billing/webhook';
import { mapWithConcurrency } from '../concurrency';
import { SKIPPED_RECORD_MESSAGE, type Log } from '../log';
import { readMonthToDate } from '../reading/quota-status';
import type { ActiveAccounts, MonthRechecks, QuotaStore, RecheckMarker, ThresholdStore, UsageReader, WebhookOutbox } from '../ports';

/** A run that took a crossing on to send it may hold it this long before another run takes over. */
export const THRESHOLD_SEND_LEASE_SECONDS = 120;

/**
 * A recheck marker is cleared only once it is this old: month-to-date is read eventually
 * consistent, so a run right after the change it announces may not see it yet (the
 * marker then stays for the next run).
 */
export const RECHECK_SETTLE_SECONDS = 60;

export interface ThresholdDeps {
  readonly quotas: QuotaStore;
  readonly thresholds: ThresholdStore;
  /** Past months whose usage changed late (revisions, adjustments): evaluated too, then cleared. */
  readonly rechecks: MonthRechecks;
  /** Month-to-date usage: one Query of the account's days of the month. */
  readonly reader: UsageReader;
  /** Accounts with usage on a day; read only when `defaults` gives every account a quota. */
  readonly accounts: ActiveAccounts;
  /** Absent when no webhook is configured: crossings are still recorded (and shown), their events wait. */
  readonly outbox?: WebhookOutbox;
  readonly defaults: QuotaDefaults;
  readonly levels: readonly number[];
  /** Scope of the event ids (the table name). */
  readonly scope: string;
  /** A month is evaluated while any of its days is still open (its end plus this grace). */
  readonly graceHours: number;
  readonly log: Log;
  readonly concurrency?: number;
  readonly clock?: () => Date;
}

export interface ThresholdOptions {
  /**
   * Only this month (`YYYY-MM`); default: the current UTC month, the previous one while it
   * has open days, and every month marked to be evaluated again.
   */
  readonly month?: string;
  /** Only these accounts. */
  readonly accounts?: readonly string[];
}

export interface ThresholdReport {
  readonly now: string;
  readonly months: readonly string[];
  /** Accounts whose month-to-date was read (one per month evaluated). */
  readonly evaluated: number;
  /** Crossings recorded by this run. */
  readonly crossed: readonly ThresholdCrossing[];
  /** Event ids handed to the webhook queue by this run. */
  readonly sent: readonly string[];
  /** Crossings whose event is not queued yet (no webhook, or another run holds them). */
  readonly pending: number;
  /** Pending crossings this run withdrew unsent: their allowance or level is no longer in force (a quota changed mid-month). */
  readonly withdrawn: readonly ThresholdCrossing[];
  /** Accounts that failed (their error is logged); the next run retries them. */
  readonly failed: number;
  /**
   * Stored records this run skipped, each with why (a recheck marker of a month outside the
   * supported days, as an older version could record): logged as errors, left in place.
   */
  readonly skipped: readonly string[];
}

/**
 * The threshold evaluator, run on a schedule (every 5 minutes on AWS, every minute
 * under `npm start`), never on the ingest path:
 *
 * ```
 * months: this UTC month (+ the previous while its last day is open)
 * 1 Query   THRESHOLD#RECHECK           + months whose usage changed late (revisions, adjustments)
 * 1 Query   QUOTA                       every stored quota (with its history: month M uses the entry in force in M)
 * n Queries byDay index, days of month  accounts with usage (only when TALLY_QUOTAS sets defaults)
 * 1 Query   THRESHOLD#<month>           every crossing already recorded (sent or pending)
 * per account with a quota: 1 Query of its days of the month -> totals (measured + adjustments)
 *   each level reached and not recorded -> PutItem attribute_not_exists (the once-only guard)
 *     -> SendMessage (webhook queue) -> UpdateItem notifiedAt
 * pending crossings (a run that died between record and queue) -> lease (UpdateItem) -> SendMessage
 * a marked month evaluated without failure -> its marker removed, unless marked again since (DeleteItem, conditional)
 * ```
 * Any number of runs at once, reruns and redeliveries give one record per (account,
 * metric, month, level) and one event id; the event is queued once unless a run dies
 * after queueing it and before noting so (then again after the lease, same id and body).
 */
export async function evaluateThresholds(deps: ThresholdDeps, options: ThresholdOptions = {}): Promise<ThresholdReport> {
  const now = (deps.clock ?? (() => new Date()))();
  const at = now.toISOString();
  const skipped: string[] = [];
  const markers = (options.month === undefined ? await deps.rechecks.marked() : []).filter((marker) => {
    if (isSupportedMonth(marker.month)) return true;
    skipped.push(skippedRecord(`the recheck marker of month ${marker.month} (THRESHOLD#RECHECK)`, marker.month));
    deps.log.error(SKIPPED_RECORD_MESSAGE, { record: 'THRESHOLD#RECHECK', month: marker.month, reason: skipped.at(-1) });
    return false;
  });
  const months = options.month === undefined ? [...new Set([...markers.map((marker) => marker.month), ...monthsToEvaluate(now, deps.graceHours)])].sort() : [options.month];
  const stored = await deps.quotas.list();
  const only = options.accounts === undefined ? undefined : new Set(options.accounts);
  const crossed: ThresholdCrossing[] = [];
  const sent: string[] = [];
  const withdrawn: ThresholdCrossing[] = [];
  let evaluated = 0;
  let failed = 0;
  let pending = 0;

  for (const month of months) {
    const failedBefore = failed;
    const pendingBefore = pending;
    const { first, last } = monthDays(month);
    const through = last < dayOf(now) ? last : dayOf(now);
    const candidates = await candidateAccounts(deps, stored, first, through);
    const accounts = [...candidates].filter((account) => only === undefined || only.has(account)).sort();
    const recorded = await deps.thresholds.crossings(month);
    const inForce = (account: string) => effectiveQuotas(stored.filter((quota) => quota.account === account), deps.defaults, deps.levels, month);

    const outcomes = await mapWithConcurrency(accounts, deps.concurrency ?? 8, async (account) => {
      const quotas = inForce(account);
      if (quotas.length === 0) return [];
      const own = recorded.filter((crossing) => crossing.account === account);
      try {
        const totals = await readMonthToDate(deps.reader, account, month, through);
        evaluated++;
        const fresh: ThresholdCrossing[] = [];
        for (const quota of quotas) {
          const used = totals[quota.metric] ?? 0;
          for (const level of reachedLevels(used, quota.monthly, quota.levels)) {
            const crossing = { account, metric: quota.metric, month, level, allowance: quota.monthly, used, crossedAt: at };
            // Recorded under this allowance, or sent under another one already past this level: alerted.
            if (own.some((earlier) => earlier.metric === quota.metric && alertStandsFor(earlier, level, quota.monthly))) continue;
            // Without a webhook queue this run sends nothing: it takes no lease that would hold the record from others.
            if ((await deps.thresholds.record(crossing, deps.outbox === undefined ? undefined : at)) === 'recorded') fresh.push(crossing);
          }
        }
        return fresh;
      } catch (error) {
        failed++;
        deps.log.error('threshold evaluation failed; the next run retries', { account, month, error: describeError(error) });
        return [];
      }
    });
    const fresh = outcomes.flat();
    crossed.push(...fresh);
    for (const crossing of fresh) deps.log.info('usage threshold crossed', { ...crossing });

    // A marked month is let go once nothing of it is left to do: no failure, no event waiting.
    const marker = markers.find((candidate) => candidate.month === month);
    const settle = async () => {
      if (marker !== undefined && only === undefined) await clearSettled(deps, marker, now, failed === failedBefore && pending === pendingBefore);
    };

    // Unsent crossings of an allowance (or level) no longer in force are withdrawn, never sent.
    const staleBefore = new Date(now.getTime() - THRESHOLD_SEND_LEASE_SECONDS * 1000).toISOString();
    const unsent = recorded.filter((crossing) => crossing.notifiedAt === undefined && crossing.withdrawnAt === undefined && (only === undefined || only.has(crossing.account)));
    const leftOver: RecordedCrossing[] = [];
    for (const crossing of unsent) {
      if (crossingInForce(crossing, inForce(crossing.account).find((quota) => quota.metric === crossing.metric))) leftOver.push(crossing);
      else if (await deps.thresholds.withdraw(crossing, at, staleBefore)) withdrawn.push(crossing);
      else pending++;
    }
    for (const crossing of withdrawn.filter((candidate) => candidate.month === month)) deps.log.info('usage threshold alert withdrawn: its allowance is no longer in force', { ...crossing });

    if (deps.outbox === undefined) {
      pending += fresh.length + leftOver.length;
      await settle();
      continue;
    }
    // Ours (recorded above, lease held), then those a run left unqueued (lease taken first).
    for (const crossing of [...fresh, ...leftOver]) {
      const ours = fresh.includes(crossing) || (await deps.thresholds.claim(crossing, at, staleBefore));
      if (!ours) {
        pending++;
        continue;
      }
      try {
        const id = thresholdEventId(deps.scope, crossing);
        await deps.outbox.enqueue({ id, body: thresholdEventBody(deps.scope, crossing) });
        await deps.thresholds.markNotified(crossing, at);
        sent.push(id);
      } catch (error) {
        failed++;
        pending++;
        deps.log.error('threshold event not queued; a later run sends it', { ...crossing, error: describeError(error) });
      }
    }
    await settle();
  }
  return { now: at, months, evaluated, crossed, sent, pending, withdrawn, failed, skipped };
}

/** Removes a marker once its month was evaluated without failure and the change it announced is surely visible. */
async function clearSettled(deps: ThresholdDeps, marker: RecheckMarker, now: Date, evaluatedAll: boolean): Promise<void> {
  const age = (now.getTime() - Date.parse(marker.markedAt)) / 1000;
  if (!evaluatedAll || age < RECHECK_SETTLE_SECONDS) return;
  if (!(await deps.rechecks.clear(marker))) deps.log.info('month marked again while evaluated; the next run looks again', { ...marker });
}

/** The months a scheduled run looks at: this one, and the previous while its last day is still open. */
export function monthsToEvaluate(now: Date, graceHours: number): string[] {
  const current = monthOf(now);
  const previous = monthOf(addDays(`${current}-01`, -1));
  return lastClosableDay(now, graceHours) < monthDays(previous).last ? [previous, current] : [current];
}

/** Accounts with a quota of their own, and, when defaults give every account one, those with usage in the days. */
async function candidateAccounts(deps: ThresholdDeps, stored: readonly Quota[], first: string, through: string): Promise<Set<string>> {
  const accounts = new Set(stored.map((quota) => quota.account));
  if (Object.keys(deps.defaults).length > 0 && first <= through) {
    const days = await mapWithConcurrency(eachDay(first, through), 4, (day) => deps.accounts.accountsOn(day));
    // Lines no resolver attributed belong to no customer: no default quota for them.
    for (const account of days.flat()) if (account !== UNATTRIBUTED) accounts.add(account);
  }
  return accounts;
}
