import { HistoryGauge } from '../../app/ingest/history-gauge';
import type { IngestDeps, IngestSettings } from '../../app/ingest/ingest';
import type { Log } from '../../app/log';
import type { AwsClients } from '../clients';
import type { TallyConfig } from '../config';
import { DynamoLateUsageMarks } from '../dynamodb/dynamodb-close-store';
import { DynamoUsageStore, type DynamoUsageStoreOptions } from '../dynamodb/dynamodb-usage-store';
import { S3LogSource } from '../s3/s3-log-source';
import { SqsMessageVisibility } from '../sqs/sqs-visibility';
import { checkSettingsAgainstTable, TableSettings } from '../dynamodb/table-settings';

/** The ingest settings a configuration implies. */
export function ingestSettings(config: TallyConfig): IngestSettings {
  return {
    resolver: config.resolver,
    metricRules: config.metricRules,
    logFormat: config.logFormat,
    keyScheme: config.keyScheme,
    messageConcurrency: config.messageConcurrency,
    incrementConcurrency: config.incrementConcurrency,
    visibilityTimeoutSeconds: config.visibilityTimeoutSeconds,
    heartbeatSeconds: config.heartbeatSeconds,
    minRemainingMillis: config.minRemainingMillis,
    maxReceiveCount: config.maxReceiveCount,
  };
}

/** The usage store a configuration implies; `extra` adds observers (capacity, history). */
export function usageStoreFor(
  config: TallyConfig,
  client: AwsClients['dynamodb'],
  extra: Pick<DynamoUsageStoreOptions, 'onCapacity' | 'onHistory' | 'onUnresolved' | 'clock'> = {},
): DynamoUsageStore {
  return new DynamoUsageStore({
    client,
    tableName: config.tableName,
    historyCap: config.historyCap,
    ledgerTtlDays: config.ledgerTtlDays,
    ...extra,
  });
}

/**
 * Wires the ingest flow to DynamoDB, S3 and SQS. Built once per cold start. `clock`
 * (tests and the chaos suite) drives the store's and the flow's time.
 */
export function createIngestDeps(
  config: TallyConfig,
  clients: AwsClients,
  log: Log,
  clock?: () => Date,
): IngestDeps & { historyGauge: HistoryGauge; store: DynamoUsageStore; tableSettings: TableSettings } {
  const historyGauge = new HistoryGauge();
  const tableSettings = new TableSettings({ client: clients.dynamodb, tableName: config.tableName, keyScheme: config.keyScheme });
  return {
    historyGauge,
    tableSettings,
    shardCounts: tableSettings,
    store: usageStoreFor(config, clients.dynamodb, {
      onHistory: (observation) => historyGauge.observe(observation),
      onUnresolved: () => historyGauge.unresolvedIncrement(),
      ...(clock === undefined ? {} : { clock }),
    }),
    source: new S3LogSource({ client: clients.s3 }),
    visibility: new SqsMessageVisibility({
      client: clients.sqs,
      ...(config.ingestQueueUrl ? { queueUrl: config.ingestQueueUrl } : {}),
      ...(config.endpoints.sqs ? { endpoint: config.endpoints.sqs } : {}),
    }),
    settings: ingestSettings(config),
    late: { marks: new DynamoLateUsageMarks({ client: clients.dynamodb, tableName: config.tableName }), graceHours: config.closeGraceHours },
    log,
    ...(clock === undefined ? {} : { clock }),
  };
}

/**
 * What a writer does once before it writes (the consumer's cold start, an inline
 * `tally replay` or `tally backfill`, a chaos consumer): checks its settings against what
 * the table records (a shard schedule that would change the count of a day with data is
 * refused, naming the day; see `shardScheduleConflicts`), records its history cap, and
 * hands the store the least cap ever used, which its proof takes for items of earlier
 * versions. One consistent `Query` (and one `UpdateItem` the first time a cap is used).
 */
export async function prepareToWrite(deps: { tableSettings: TableSettings; store: DynamoUsageStore }, config: TallyConfig, now: Date): Promise<void> {
  const { leastCap } = await checkSettingsAgainstTable(deps.tableSettings, config.keyScheme, config.historyCap, now.toISOString().slice(0, 10));
  deps.store.useLeastCap(leastCap);
}
