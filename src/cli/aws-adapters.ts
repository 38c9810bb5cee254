/**
 * The AWS adapters operator commands use, behind one module so that commands load
 * them with a single `await import('../aws-adapters')` inside `run`: `tally count`,
 * `tally plan` and every `--help` never load the AWS SDK.
 */
import type { TallyConfig } from '../adapters/config';
import { countsEstimates } from '../domain/logs/log-fields';
import { metricNames } from '../domain/logs/metric-rules';

export { DynamoAccountZones } from '../adapters/dynamodb/dynamodb-account-zones';
export { DynamoAdjustmentStore } from '../adapters/dynamodb/dynamodb-adjustments';
export { DynamoDropRecords } from '../adapters/dynamodb/dynamodb-drop-records';
export { DynamoMonthRechecks, DynamoQuotaStore } from '../adapters/dynamodb/dynamodb-quotas';
export { DynamoUsageReader } from '../adapters/dynamodb/dynamodb-usage-reader';
export { DynamoSourceReader } from '../adapters/dynamodb/dynamodb-sources';
export { DynamoBackfilledHours } from '../adapters/dynamodb/dynamodb-hours-backfill';
export { DynamoCloseStore } from '../adapters/dynamodb/dynamodb-close-store';
export { backfillHours } from '../app/ingest/backfill-hours';
export { DynamoReconcileRecords } from '../adapters/dynamodb/dynamodb-reconcile-records';
export { createHealthDeps } from '../adapters/wiring/health-deps';
export { readHealth } from '../app/reading/health';
export { explainDay } from '../app/reading/explain';
export { createIngestDeps, prepareToWrite, usageStoreFor } from '../adapters/wiring/ingest-deps';
export { checkClock } from '../adapters/dynamodb/table-settings';
export { S3LogListing } from '../adapters/s3/s3-log-listing';
export { S3LogSink } from '../adapters/s3/s3-log-sink';
export { S3LogSource } from '../adapters/s3/s3-log-source';
export { SqsNotificationSender } from '../adapters/sqs/sqs-notification-sender';
export { SqsReplayQueues, sourceQueueOf } from '../adapters/sqs/sqs-replay-queues';
export { SqsMessageVisibility } from '../adapters/sqs/sqs-visibility';

/** The metrics the read API reports for `config` (base, configured, estimates): explain shows the same. */
export function metricNamesOf(config: Pick<TallyConfig, 'metricRules' | 'logFormat'>): string[] {
  return metricNames(config.metricRules, { estimates: countsEstimates(config.logFormat) });
}
