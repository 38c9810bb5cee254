import { daysBetweenInclusive, eachDay } from '../../domain/days';
import { describeError, ValidationError } from '../../domain/errors';
import { addHourSums, hoursCoverDay } from '../../domain/hours';
import { AccountDayRecount, judgeRecount, MAX_HOURS_BACKFILL_DAYS, sameHours, type ObjectRecount } from '../../domain/counters/hours-backfill';
import { countObject, type CountSettings } from '../../domain/logs/log-formats';
import { describeObject } from '../../domain/counters/log-object';
import type { AccountDayUsage } from '../../domain/logs/usage-tally';
import { mapWithConcurrency } from '../concurrency';
import type { ActiveAccounts, BackfilledHoursStore, DayLedger, LedgerObjectOfDay, LogSource, UsageReader } from '../ports';
import { noProgress, type ProgressReporter } from '../progress';

export interface HoursBackfillDeps {
  /** The objects of a day, from the ledger's source-day index. */
  readonly ledger: DayLedger;
  /** The day's counters (every shard summed), read consistently. */
  readonly reader: UsageReader;
  readonly store: BackfilledHoursStore;
  /** Reads an object again, as ingest does. */
  readonly source: LogSource;
  /** The consumer's counting settings: the same counters as ingest. */
  readonly settings: CountSettings;
  /** The accounts with counters on a day (the day index): those without any object in the ledger are reported too. */
  readonly accounts?: ActiveAccounts;
  readonly clock?: () => Date;
}

export interface HoursBackfillOptions {
  /** UTC days, both included; at most {@link MAX_HOURS_BACKFILL_DAYS}. */
  readonly from: string;
  readonly to: string;
  /** Only this account's days. */
  readonly account?: string;
  /** Objects read at once (default 4). */
  readonly concurrency?: number;
  /** Recompute and report; write nothing. */
  readonly dryRun?: boolean;
  readonly progress?: ProgressReporter;
}

/** An account-day whose hours were not written, and why. */
export interface ReportedDay {
  readonly account: string;
  readonly day: string;
  readonly objects: number;
  readonly reason: string;
  /** Counters minus the recomputed hours' sums, per metric. */
  readonly gap: Record<string, number>;
}

export interface HoursBackfillReport {
  readonly dryRun: boolean;
  days: number;
  /** Ledger entries of the days (objects indexed under them). */
  objects: number;
  /** Of those, read and counted again (the others had their hours in the ledger already). */
  objectsRead: number;
  accountDays: number;
  /** Account-days whose shards' own hours already sum to the day: nothing to recompute, nothing written. */
  covered: number;
  /** Items written (a dry run: that would be). */
  written: number;
  /** The item already held these hours from these objects: nothing written. */
  unchanged: number;
  /** Another run wrote hours from more objects meanwhile: theirs are kept. */
  superseded: number;
  /** Not written: the recount does not cover the day. */
  readonly reported: ReportedDay[];
}

/**
 * Recomputes the hours of every account-day of `from..to` (or of one account) from its
 * log objects and writes each whole into the account-day's backfilled-hours item. Day by
 * day: the ledger lists the day's objects with what each contributed to each account;
 * each object is read and counted again with the consumer's counting code (one read per
 * object and day, whatever its accounts; an object whose ledger rows already carry hours
 * is not read); each account's hours are summed over its objects and written only when
 * they sum to its counters exactly.
 *
 * Exactly once by construction: it never moves a counter (no increment, no shard write:
 * the counters are only read), and the one thing it writes is a pure function of the
 * day's ledger (immutable objects, named by ETag) and the counting settings, put whole
 * with one PutItem, so it replaces rather than adds. A second run computes the same hours
 * and finds them there (nothing written); a run that crashed left each item either as it
 * was or whole (a put is atomic), and the rerun recomputes it; concurrent runs put the same
 * hours, and the write's condition keeps a run that saw fewer objects from replacing one
 * that saw more. A day whose recount does not cover its counters is reported, never
 * written: an item, where there is one, held the whole day when written.
 *
 * With the hours it writes the shards' own hour sums from the same read as the counters
 * they cover (`atShards`): a log counted after that read (late) adds to the shards'
 * hours alone, and readers add what the shards gained since to the recomputed hours
 * (`dayHours`, hours.ts). The listing comes before that read, so an object counted
 * between the two is in the counters and not in the recount: the day is reported, not
 * written. Any pair the item holds is therefore a whole day and the shards as they were.
 */
export async function backfillHours(deps: HoursBackfillDeps, options: HoursBackfillOptions): Promise<HoursBackfillReport> {
  const days = hoursBackfillDays(options.from, options.to);
  const progress = options.progress ?? noProgress;
  const report: HoursBackfillReport = {
    dryRun: options.dryRun === true,
    days: days.length,
    objects: 0,
    objectsRead: 0,
    accountDays: 0,
    covered: 0,
    written: 0,
    unchanged: 0,
    superseded: 0,
    reported: [],
  };
  let total = 0;
  for (const day of days) {
    const entries = await deps.ledger.objectsOn(day, options.account);
    report.objects += entries.length;
    progress.setTotal((total += entries.length));
    const recounts = new Map<string, AccountDayRecount>();
    const recountOf = (account: string) => recounts.get(account) ?? recounts.set(account, new AccountDayRecount()).get(account)!;
    if (options.account !== undefined) recountOf(options.account);
    else for (const account of (await deps.accounts?.accountsOn(day)) ?? []) recountOf(account);

    // Account-days whose shards hold hours that sum to the day need nothing: their objects are not read for them.
    const counters = new Map<string, DayCounters>();
    for (const account of [...recounts.keys(), ...entries.flatMap((entry) => entry.contributions.map((row) => row.account))]) {
      if (!counters.has(account)) counters.set(account, await countersOf(deps.reader, account, day));
    }
    const covered = new Set([...counters].flatMap(([account, day]) => (Object.keys(day.totals).length > 0 && hoursCoverDay(day.totals, day.hours) ? [account] : [])));
    for (const account of covered) recounts.delete(account);
    report.accountDays += covered.size;
    report.covered += covered.size;
    const needed = entries.flatMap((entry) => {
      const contributions = entry.contributions.filter((row) => !covered.has(row.account));
      return contributions.length === 0 ? [] : [{ ...entry, contributions }];
    });
    progress.advance(entries.length - needed.length, { written: report.written, unchanged: report.unchanged, reported: report.reported.length });

    const counts = () => ({ written: report.written, unchanged: report.unchanged, reported: report.reported.length });
    const perObject = await mapWithConcurrency(needed, options.concurrency ?? 4, async (entry) => {
      const result = await recountObject(entry, day, deps);
      if (result.read) report.objectsRead++;
      progress.advance(1, counts());
      return result.recounts;
    });
    for (const recount of perObject.flat()) recountOf(recount.account).add(recount);

    const accounts = [...recounts.keys()].sort();
    report.accountDays += accounts.length;
    await mapWithConcurrency(accounts, options.concurrency ?? 4, async (account) => {
      const recount = recounts.get(account)!;
      if (!counters.has(account)) counters.set(account, await countersOf(deps.reader, account, day));
      const verdict = judgeRecount(counters.get(account)!.totals, recount);
      if (!verdict.write) {
        report.reported.push({ account, day, objects: recount.objects, reason: verdict.reason, gap: verdict.gap });
        return;
      }
      const atShards = (counters.get(account) ?? { hours: {} }).hours;
      const earlier = await deps.store.read(account, day);
      // An item written before `atShards` was recorded is written again, to record it.
      if (earlier?.atShards !== undefined && earlier.objects === recount.objects && sameHours(earlier.hours, recount.hours) && sameHours(earlier.atShards, atShards)) {
        report.unchanged++;
        return;
      }
      if (options.dryRun === true) {
        report.written++;
        return;
      }
      const computedAt = (deps.clock ?? (() => new Date()))().toISOString();
      const outcome = await deps.store.write(account, day, { hours: recount.hours, objects: recount.objects, computedAt, atShards });
      if (outcome === 'written') report.written++;
      else report.superseded++;
    });
  }
  report.reported.sort((a, b) => (a.day === b.day ? compare(a.account, b.account) : compare(a.day, b.day)));
  return report;
}

/** The days of `from..to`, refused past {@link MAX_HOURS_BACKFILL_DAYS} or backwards. */
export function hoursBackfillDays(from: string, to: string): string[] {
  if (to < from) throw new ValidationError(`--to ${to} is before --from ${from}`);
  const count = daysBetweenInclusive(from, to);
  if (count > MAX_HOURS_BACKFILL_DAYS) {
    throw new ValidationError(`${from}..${to} is ${count} days; tally backfill --hours recomputes at most ${MAX_HOURS_BACKFILL_DAYS} days a run (run it once per month)`);
  }
  return eachDay(from, to);
}

/**
 * One object's recount for each account of `day` its ledger lists: its ledger rows' own
 * hours when they carry them (counted with hours), else what counting it again gives.
 */
async function recountObject(entry: LedgerObjectOfDay, day: string, deps: HoursBackfillDeps): Promise<{ read: boolean; recounts: (ObjectRecount & { account: string })[] }> {
  const object = describeObject(entry.object);
  const unresolved = new Set(entry.unresolved);
  const rows = entry.contributions;
  if (rows.length === 0) return { read: false, recounts: [] };
  // Rows recorded with hours that cover them (counted with hours) need no read; any other row (recorded before
  // hours were kept, or by a counter that knew no time for some lines) is counted again, with today's code.
  if (rows.every((row) => row.hours !== undefined && hoursCoverDay(row.metrics, row.hours))) {
    return {
      read: false,
      recounts: rows.map((row) => ({ account: row.account, object, recorded: row.metrics, counted: { metrics: row.metrics, hours: row.hours ?? {} }, ...flag(unresolved.has(row.account)) })),
    };
  }
  let counted: Map<string, AccountDayUsage>;
  try {
    const opened = await deps.source.open(entry.object);
    const count = await countObject(opened.content, deps.settings, entry.object.key, object);
    counted = new Map(count.tally.usage().flatMap((usage) => (usage.day === day ? [[usage.account, usage] as const] : [])));
  } catch (error) {
    const reason = describeError(error);
    return { read: true, recounts: rows.map((row) => ({ account: row.account, object, recorded: row.metrics, error: reason, ...flag(unresolved.has(row.account)) })) };
  }
  return {
    read: true,
    recounts: rows.map((row) => {
      const usage = counted.get(row.account);
      return {
        account: row.account,
        object,
        recorded: row.metrics,
        counted: { metrics: usage?.metrics ?? {}, hours: usage?.hours ?? {} },
        ...flag(unresolved.has(row.account)),
      };
    }),
  };
}

function flag(unresolved: boolean): { unresolved?: true } {
  return unresolved ? { unresolved: true } : {};
}

/** The account-day's measured counters: every usage shard summed (adjustments and revisions left out). */
/** An account-day's counters and their hours, every shard summed. */
interface DayCounters {
  readonly totals: Record<string, number>;
  readonly hours: Record<number, Record<string, number>>;
}

async function countersOf(reader: UsageReader, account: string, day: string): Promise<DayCounters> {
  const { records } = await reader.read(account, day, day, { closedDays: false });
  const counters: DayCounters = { totals: {}, hours: {} };
  for (const record of records) {
    if (record.kind !== 'usage' || record.day !== day) continue;
    for (const [name, value] of Object.entries(record.metrics)) counters.totals[name] = (counters.totals[name] ?? 0) + value;
    addHourSums(counters.hours, record.hours ?? {});
  }
  return counters;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
