import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { ingestBatch } from '../src/app/ingest/ingest';
import { createClients } from '../src/adapters/clients';
import { readConfig } from '../src/adapters/config';
import { createIngestDeps, prepareToWrite } from '../src/adapters/wiring/ingest-deps';
import { initOnce } from '../src/adapters/init-once';
import { INGEST_SERVICE, METRICS_NAMESPACE, publishHistoryMetrics } from '../src/adapters/history-metrics';
import { powertoolsLog } from '../src/adapters/powertools-log';

const config = readConfig(process.env);
const logger = new Logger({ serviceName: INGEST_SERVICE, logLevel: config.logLevel.toUpperCase() as 'INFO' });
const deps = createIngestDeps(config, createClients(config), powertoolsLog(logger));
// Before the first write: the settings checked against what the table records (refused, naming the day, when they disagree).
const prepared = initOnce(() => prepareToWrite(deps, config, new Date()));
const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: INGEST_SERVICE });
if (process.env.AWS_LAMBDA_FUNCTION_NAME) metrics.setDefaultDimensions({ FunctionName: process.env.AWS_LAMBDA_FUNCTION_NAME });

/** SQS -> ingest. Returns only the failed messages so the rest are deleted. */
export const handler = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
  logger.addContext(context);
  try {
    await prepared();
    const { batchItemFailures } = await ingestBatch(event, deps, context);
    return { batchItemFailures };
  } finally {
    publishHistoryMetrics(metrics, deps.historyGauge.drain());
  }
};
