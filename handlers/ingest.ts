import { Logger } from '@aws-lambda-powertools/logger';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { ingestBatch } from '../src/app/ingest';
import { createClients } from '../src/adapters/clients';
import { readConfig } from '../src/adapters/config';
import { createIngestDeps } from '../src/adapters/ingest-deps';
import { powertoolsLog } from '../src/adapters/powertools-log';

const config = readConfig(process.env);
const logger = new Logger({ serviceName: 'tally-ingest', logLevel: config.logLevel.toUpperCase() as 'INFO' });
const deps = createIngestDeps(config, createClients(config), powertoolsLog(logger));

/** SQS -> ingest. Returns only the failed messages so the rest are deleted. */
export const handler = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
  logger.addContext(context);
  const { batchItemFailures } = await ingestBatch(event, deps, context);
  return { batchItemFailures };
};
