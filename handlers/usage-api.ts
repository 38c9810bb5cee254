import { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, Context } from 'aws-lambda';
import { handleUsageApiRequest, unavailableResponse, type UsageApiDeps } from '../src/app/reading/usage-api';
import { powertoolsLog } from '../src/adapters/powertools-log';
import { readUsageApiConfig } from '../src/adapters/wiring/usage-api-config';
import { createUsageApiClients, createUsageApiDeps } from '../src/adapters/wiring/usage-api-deps';
import { describeError } from '../src/domain/errors';
import { initOnce } from '../src/adapters/init-once';

const config = readUsageApiConfig(process.env);
const logger = new Logger({ serviceName: 'tally-usage-api', logLevel: config.tally.logLevel.toUpperCase() as 'INFO' });
const log = powertoolsLog(logger);
const clients = createUsageApiClients(config);

// The SSM read starts during init; a failure is retried by the next request instead
// of leaving the container broken for its whole life.
const deps = initOnce<UsageApiDeps>(() => createUsageApiDeps(config, clients, log));

/** API Gateway HTTP API (payload v2) -> `GET /v1/accounts/{accountId}/usage`. */
export const handler = async (event: APIGatewayProxyEventV2, context?: Context): Promise<APIGatewayProxyResultV2> => {
  if (context !== undefined) logger.addContext(context);
  let wired: UsageApiDeps;
  try {
    wired = await deps();
  } catch (error) {
    log.error('usage api could not start', { error: describeError(error) });
    return unavailableResponse(event, config.corsOrigins);
  }
  return handleUsageApiRequest(event, wired);
};
