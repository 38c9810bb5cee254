/**
 * The AWS adapters operator commands use, behind one module so that commands load
 * them with a single `await import('../aws-adapters')` inside `run`: `tally count`,
 * `tally plan` and every `--help` never load the AWS SDK.
 */
export { DynamoAdjustmentStore } from '../adapters/dynamodb-adjustments';
export { DynamoDropRecords } from '../adapters/dynamodb-drop-records';
export { DynamoMonthRechecks, DynamoQuotaStore } from '../adapters/dynamodb-quotas';
export { DynamoUsageReader } from '../adapters/dynamodb-usage-reader';
export { createIngestDeps, usageStoreFor } from '../adapters/ingest-deps';
export { S3LogListing } from '../adapters/s3-log-listing';
export { S3LogSink } from '../adapters/s3-log-sink';
export { S3LogSource } from '../adapters/s3-log-source';
export { SqsNotificationSender } from '../adapters/sqs-notification-sender';
export { SqsReplayQueues, sourceQueueOf } from '../adapters/sqs-replay-queues';
export { SqsMessageVisibility } from '../adapters/sqs-visibility';
