import type { ResolverSpec } from '../../domain/logs/account-resolver';
import { parseCloudFrontKey } from '../../domain/logs/cloudfront-key';
import { addDays } from '../../domain/days';
import { describeError, PoisonObjectError } from '../../domain/errors';
import { countObject } from '../../domain/logs/log-formats';
import { countsEstimates, type LogFormatSettings } from '../../domain/logs/log-fields';
import { describeObject, type LogObjectRef } from '../../domain/counters/log-object';
import { metricNames, type MetricRule } from '../../domain/logs/metric-rules';
import { accountDayKey, reconcile, type ReconcileRow, type ServedDay } from '../../domain/counters/reconciliation';
import { buildUsageReport } from '../../domain/reading/usage-report';
import { UsageTally } from '../../domain/logs/usage-tally';
import { mapWithConcurrency } from '../concurrency';
import type { LogListing, LogSource, UsageReader, UsageStore } from '../ports';
import { noProgress, type ProgressReporter } from '../progress';

export interface ReconcileOptions {
  readonly listing: LogListing;
  readonly source: LogSource;
  readonly reader: UsageReader;
  /** Says which recounted objects the pipeline has not (fully) counted yet. */
  readonly ledger?: Pick<UsageStore, 'findLedger'>;
  readonly bucket: string;
  readonly prefix: string;
  readonly from: string;
  readonly to: string;
  /** Only this account; otherwise every account found in the logs. */
  readonly account?: string;
  /** The consumer's resolver and metric rules: the recount must attribute lines as it does. */
  readonly resolver: ResolverSpec;
  readonly metricRules: readonly MetricRule[];
  readonly maxLineBytes?: number;
  readonly logFormat?: LogFormatSettings;
  readonly concurrency?: number;
  readonly progress?: ProgressReporter;
}

export interface ReconcileReport {
  readonly from: string;
  readonly to: string;
  readonly account?: string;
  readonly objects: {
    /** CloudFront-named objects of `from - 1 .. to + 1` read from S3. */
    read: number;
    /** Objects the consumer cannot count either (not a log): reported, not drift. */
    readonly poison: { object: string; error: string }[];
    /** Objects that could not be read (network, permissions): the recount is incomplete. */
    readonly failed: { object: string; error: string }[];
    /** Objects with lines in the compared range and no ledger item: not (fully) counted yet. */
    readonly notCounted: string[];
  };
  readonly accounts: number;
  /** Metrics compared; `unchecked` are in the table but not computed by this recount. */
  readonly metrics: readonly string[];
  readonly unchecked: readonly string[];
  readonly rows: readonly ReconcileRow[];
  readonly drifting: readonly ReconcileRow[];
}

/**
 * Recounts the raw logs of a day range with the ingest parser, independently of the
 * counters, and compares every account-day and metric with what the read API serves
 * (the same reader and per-day summing; adjustments are shown, never drift).
 *
 * CloudFront names an object by the hour it was written for, and late lines land in
 * the next hour's object: objects named one day either side are read too, so that
 * every line of `from..to` is found; only `from..to` is compared.
 */
export async function reconcileUsage(options: ReconcileOptions): Promise<ReconcileReport> {
  const { from, to } = options;
  const progress = options.progress ?? noProgress;
  const names = metricNames(options.metricRules, { estimates: countsEstimates(options.logFormat) });
  const recount = new UsageTally(names);
  const objects: ReconcileReport['objects'] = { read: 0, poison: [], failed: [], notCounted: [] };

  const selected: LogObjectRef[] = [];
  for await (const object of options.listing.list(options.bucket, options.prefix)) {
    const name = parseCloudFrontKey(object.key);
    if (name !== undefined && name.day >= addDays(from, -1) && name.day <= addDays(to, 1)) selected.push(object);
  }
  progress.setTotal(selected.length);

  await mapWithConcurrency(selected, options.concurrency ?? 4, async (object) => {
    try {
      const opened = await options.source.open(object);
      const count = await countObject(opened.content, options, object.key, describeObject(object));
      objects.read++;
      const relevant = count.tally
        .usage()
        .filter((row) => row.day >= from && row.day <= to && (options.account === undefined || row.account === options.account));
      for (const row of relevant) recount.addUsage(row);
      if (relevant.length > 0 && options.ledger !== undefined && (await options.ledger.findLedger({ ...object, etag: opened.etag })) === undefined) {
        objects.notCounted.push(describeObject(object));
      }
    } catch (error) {
      // A poison object's reason alone: the row names the object already.
      const entry = { object: describeObject(object), error: error instanceof PoisonObjectError ? error.reason : describeError(error) };
      if (error instanceof PoisonObjectError) objects.poison.push(entry);
      else objects.failed.push(entry);
    } finally {
      progress.advance(1, { 'not counted': objects.notCounted.length });
    }
  });

  const recounted = recount.usage();
  const accounts = options.account !== undefined ? [options.account] : [...new Set(recounted.map((row) => row.account))].sort();
  const served = new Map<string, ServedDay>();
  await mapWithConcurrency(accounts, options.concurrency ?? 4, async (account) => {
    const { records } = await options.reader.read(account, from, to);
    const report = buildUsageReport({ accountId: account, from, to, granularity: 'day', records, metricNames: names });
    for (const day of report.days) served.set(accountDayKey(account, day.day), { metrics: day.metrics, adjustments: day.adjustments });
  });

  const { rows, unchecked } = reconcile({ recounted, served, metrics: names, from, to });
  return {
    from,
    to,
    ...(options.account === undefined ? {} : { account: options.account }),
    objects,
    accounts: accounts.length,
    metrics: names,
    unchecked,
    rows,
    drifting: rows.filter((row) => row.drift !== 0),
  };
}
