import { parseCloudFrontKey } from '../../domain/logs/cloudfront-key';
import { describeError, PoisonObjectError } from '../../domain/errors';
import { describeObject, type LogObjectRef } from '../../domain/counters/log-object';
import { mapWithConcurrency } from '../concurrency';
import { ingestObject, type IngestDeps } from './ingest';
import type { LogListing, NotificationSender, UsageStore } from '../ports';
import { noProgress, pacer, type ProgressReporter } from '../progress';

/** `queue`: notifications for the consumer. `inline`: the handler's own code, here and now. */
export type BackfillMode = { readonly kind: 'queue'; readonly sender: NotificationSender } | { readonly kind: 'inline'; readonly deps: IngestDeps };

export interface BackfillOptions {
  readonly listing: LogListing;
  readonly ledger: Pick<UsageStore, 'findLedger'>;
  readonly mode: BackfillMode;
  readonly bucket: string;
  readonly prefix: string;
  /** Days named in the object keys, both included. */
  readonly from: string;
  readonly to: string;
  /** Objects sent or processed per second at most (already-counted ones are not paced). */
  readonly rate?: number;
  readonly concurrency?: number;
  readonly dryRun?: boolean;
  readonly progress?: ProgressReporter;
}

export interface BackfillFailure {
  readonly object: string;
  readonly error: string;
  readonly poison: boolean;
}

export interface BackfillReport {
  readonly mode: 'queue' | 'inline';
  readonly dryRun: boolean;
  /** Objects under the prefix. */
  listed: number;
  /** Objects whose key names a day in the range. */
  selected: number;
  /** Objects under the prefix whose key names no day (left alone): see {@link parseCloudFrontKey}. */
  unnamed: number;
  /** The ledger says they are counted: skipped. */
  alreadyCounted: number;
  /**
   * Counted before contributions were recorded: sent (inline: read and counted again)
   * only to record them, nothing applied; a dry run says how many would be.
   */
  contributionsFilled: number;
  /** Queue mode: notifications sent. Dry run: objects that would be sent or processed. */
  sent: number;
  /** Inline mode: objects counted now (increments applied now plus duplicates of an earlier, partial run). */
  counted: number;
  applied: number;
  duplicates: number;
  readonly failed: BackfillFailure[];
}

/**
 * Re-feeds the log objects of a day range into the pipeline: lists the bucket under
 * the prefix, keeps the objects whose key names a day from `from` to `to` (any layout
 * {@link parseCloudFrontKey} reads: legacy names, v2 partitions plain or Hive, Firehose names),
 * skips those the ledger knows as counted, and sends a notification for each other
 * one (or counts it inline). Safe to run at any time and any number of times: a
 * half-counted object completes without counting its applied increments twice.
 *
 * Objects are chosen by the hour in their key, and counted whole: an object of
 * `from`'s first hour may hold lines of the day before, which count on their own day.
 */
export async function backfill(options: BackfillOptions): Promise<BackfillReport> {
  const progress = options.progress ?? noProgress;
  const report: BackfillReport = {
    mode: options.mode.kind,
    dryRun: options.dryRun === true,
    listed: 0,
    selected: 0,
    unnamed: 0,
    alreadyCounted: 0,
    contributionsFilled: 0,
    sent: 0,
    counted: 0,
    applied: 0,
    duplicates: 0,
    failed: [],
  };
  const selected: LogObjectRef[] = [];
  for await (const object of options.listing.list(options.bucket, options.prefix)) {
    report.listed++;
    const name = parseCloudFrontKey(object.key);
    if (name === undefined) {
      report.unnamed++;
      continue;
    }
    if (name.day >= options.from && name.day <= options.to) selected.push(object);
  }
  report.selected = selected.length;
  progress.setTotal(selected.length);

  const nextSlot = pacer(options.rate);
  const counts = () => ({ skipped: report.alreadyCounted, failed: report.failed.length });
  await mapWithConcurrency(selected, options.concurrency ?? 4, async (object) => {
    try {
      const ledger = await options.ledger.findLedger(object);
      // A ledger without contributions (written before they were kept) is sent again: ingest only records them.
      const fill = ledger !== undefined && ledger.contributions === undefined;
      if (ledger !== undefined && !fill) {
        report.alreadyCounted++;
        return;
      }
      const done = () => (fill ? report.contributionsFilled++ : report.sent++);
      if (options.dryRun) {
        done();
        return;
      }
      await nextSlot();
      if (options.mode.kind === 'queue') {
        await options.mode.sender.send([object]);
        done();
        return;
      }
      const result = await ingestObject(object, options.mode.deps);
      if (result.status === 'already-done') {
        if (result.contributionsFilled === true) report.contributionsFilled++;
        else report.alreadyCounted++;
        return;
      }
      report.counted++;
      report.applied += result.applied;
      report.duplicates += result.duplicates + result.resumed;
    } catch (error) {
      // A poison object's reason alone: the row names the object already.
      report.failed.push({ object: describeObject(object), error: error instanceof PoisonObjectError ? error.reason : describeError(error), poison: error instanceof PoisonObjectError });
    } finally {
      progress.advance(1, counts());
    }
  });
  return report;
}
