/**
 * The AWS adapters operator commands use, behind one module so that commands load
 * them with a single `await import('../aws-adapters')` inside `run`: `tally count`,
 * `tally plan` and every `--help` never load the AWS SDK.
 */
import type { TallyConfig } from '../adapters/config';
import { countsEstimates } from '../domain/log-fields';
import { metricNames } from '../domain/metric-rules';

export { DynamoAccountZones } from '../adapters/dynamodb-account-zones';
export { DynamoAdjustmentStore } from '../adapters/dynamodb-adjustments';
export { DynamoDropRecords } from '../adapters/dynamodb-drop-records';
export { DynamoMonthRechecks, DynamoQuotaStore } from '../adapters/dynamodb-quotas';
export { DynamoUsageReader } from '../adapters/dynamodb-usage-reader';
export { DynamoSourceReader } from '../adapters/dynamodb-sources';
export { DynamoBackfilledHours } from '../adapters/dynamodb-hours-backfill';
export { DynamoCloseStore } from '../adapters/dynamodb-close-store';
export { backfillHours } from '../app/backfill-hours';
export { DynamoReconcileRecords } from '../adapters/dynamodb-reconcile-records';
export { createHealthDeps } from '../adapters/health-deps';
export { readHealth } from '../app/health';
export { explainDay } from '../app/explain';
export { createIngestDeps, prepareToWrite, usageStoreFor } from '../adapters/ingest-deps';
export { checkClock } from '../adapters/table-settings';
export { S3LogListing } from '../adapters/s3-log-listing';
export { S3LogSink } from '../adapters/s3-log-sink';
export { S3LogSource } from '../adapters/s3-log-source';
export { SqsNotificationSender } from '../adapters/sqs-notification-sender';
export { SqsReplayQueues, sourceQueueOf } from '../adapters/sqs-replay-queues';
export { SqsMessageVisibility } from '../adapters/sqs-visibility';

/** The metrics the read API reports for `config` (base, configured, estimates): explain shows the same. */
export function metricNamesOf(config: Pick<TallyConfig, 'metricRules' | 'logFormat'>): string[] {
  return metricNames(config.metricRules, { estimates: countsEstimates(config.logFormat) });
}
