import type { SQSEvent } from 'aws-lambda';
import { ingestBatch, type IngestDeps, type MessageResult } from '../../app/ingest/ingest';
import type { Log } from '../../app/log';
import { createClients } from '../../adapters/clients';
import { readConfig, type TallyConfig } from '../../adapters/config';
import { createIngestDeps, prepareToWrite } from '../../adapters/wiring/ingest-deps';
import { initOnce } from '../../adapters/init-once';
import { LOCAL_CREDENTIALS } from '../local-credentials';
import { localEnvironment, type LocalStackInfo } from '../stack';
import type { BatchHandler } from './poller';

/**
 * The ingest handler wired to a local stack through the same `readConfig` and
 * `createIngestDeps` the Lambda uses; only the endpoints differ.
 */
export function createLocalIngest(
  info: LocalStackInfo,
  log: Log,
  overrides: Record<string, string> = {},
  onResults?: (results: MessageResult[]) => void,
): { handler: BatchHandler; deps: IngestDeps; config: TallyConfig } {
  const config = readConfig({ ...process.env, ...localEnvironment(info), ...overrides });
  const deps = createIngestDeps(config, createClients(config, LOCAL_CREDENTIALS), log);
  // As the Lambda: the settings checked against what the table records before the first write.
  const prepared = initOnce(() => prepareToWrite(deps, config, new Date()));
  const handler = async (event: SQSEvent) => {
    await prepared();
    const response = await ingestBatch(event, deps);
    onResults?.(response.results);
    return { batchItemFailures: response.batchItemFailures };
  };
  return { handler, deps, config };
}
