import { countsEstimates } from '../../domain/logs/log-fields';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { SQSClient } from '@aws-sdk/client-sqs';
import { readHealth } from '../../app/reading/health';
import { createHealthDeps } from './health-deps';
import type { AwsCredentialIdentity } from '@aws-sdk/types';
import type { Log } from '../../app/log';
import type { UsageApiDeps } from '../../app/reading/usage-api';
import { ConfigError } from '../../domain/errors';
import { metricNames } from '../../domain/logs/metric-rules';
import { DynamoAccountZones } from '../dynamodb/dynamodb-account-zones';
import { DynamoCloseStore } from '../dynamodb/dynamodb-close-store';
import { DynamoQuotaStore, DynamoThresholdStore } from '../dynamodb/dynamodb-quotas';
import { DynamoUsageReader } from '../dynamodb/dynamodb-usage-reader';
import { DynamoSourceReader } from '../dynamodb/dynamodb-sources';
import { JoseTokenVerifier, type JwtVerificationKey } from '../http/jwt-tokens';
import type { JwtKeySource, UsageApiConfig } from './usage-api-config';

/** The SDK clients the read API uses: DynamoDB for reads, SSM for the signing secret. */
export interface UsageApiClients {
  readonly dynamodb: DynamoDBClient;
  readonly ssm?: SSMClient;
  /** Only with a dead-letter queue to report on (`TALLY_DLQ_URL`). */
  readonly sqs?: SQSClient;
}

/**
 * Clients for the read API only (no S3 or SQS client, so the Lambda bundle and its cold
 * start stay small). SSM is created only when the secret lives there.
 */
export function createUsageApiClients(config: UsageApiConfig, credentials?: AwsCredentialIdentity): UsageApiClients {
  const { region, endpoints, maxAttempts } = config.tally;
  const common = { region, maxAttempts, retryMode: 'standard', ...(credentials === undefined ? {} : { credentials }) };
  return {
    dynamodb: new DynamoDBClient({ ...common, ...(endpoints.dynamodb ? { endpoint: endpoints.dynamodb } : {}) }),
    ...(config.jwt.key.kind === 'secret-parameter' ? { ssm: new SSMClient(common) } : {}),
    ...(config.dlqUrl === undefined ? {} : { sqs: new SQSClient({ ...common, ...(endpoints.sqs ? { endpoint: endpoints.sqs } : {}) }) }),
  };
}

/**
 * Resolves the verification key; an SSM SecureString is read once (GetParameter with
 * decryption) and kept for the life of the container. The error names the parameter,
 * never its value.
 */
export async function resolveJwtKey(source: JwtKeySource, ssm: SSMClient | undefined): Promise<JwtVerificationKey> {
  if (source.kind !== 'secret-parameter') return source;
  if (ssm === undefined) throw new ConfigError('an SSM client is needed to read TALLY_JWT_SECRET_PARAMETER');
  let value: string | undefined;
  try {
    const result = await ssm.send(new GetParameterCommand({ Name: source.parameterName, WithDecryption: true }));
    value = result.Parameter?.Value;
  } catch (error) {
    throw new ConfigError(`could not read SSM parameter ${source.parameterName} (TALLY_JWT_SECRET_PARAMETER): ${(error as Error).name}`, {
      cause: error,
    });
  }
  if (value === undefined || value === '') throw new ConfigError(`SSM parameter ${source.parameterName} is empty`);
  return { kind: 'secret', secret: value };
}

/** Wires the read API to DynamoDB and the token key. Built once per cold start. */
export async function createUsageApiDeps(config: UsageApiConfig, clients: UsageApiClients, log: Log): Promise<UsageApiDeps> {
  const key = await resolveJwtKey(config.jwt.key, clients.ssm);
  const table = { client: clients.dynamodb, tableName: config.tally.tableName };
  const sources = new DynamoSourceReader(table);
  const healthDeps = createHealthDeps({
    dynamodb: clients.dynamodb,
    config: config.tally,
    ...(clients.sqs === undefined ? {} : { sqs: clients.sqs }),
    ...(config.dlqUrl === undefined ? {} : { dlqUrl: config.dlqUrl }),
  });
  return {
    health: (days) => readHealth(healthDeps, days),
    closeGraceHours: config.tally.closeGraceHours,
    reader: new DynamoUsageReader(table),
    zones: new DynamoAccountZones(table),
    quotas: { quotas: new DynamoQuotaStore(table), thresholds: new DynamoThresholdStore(table), defaults: config.tally.quotaDefaults, levels: config.tally.quotaLevels },
    accounts: new DynamoCloseStore(table),
    sources,
    verifier: new JoseTokenVerifier(key, { audience: config.jwt.audience, issuer: config.jwt.issuer }),
    log,
    metricNames: metricNames(config.tally.metricRules, { estimates: countsEstimates(config.tally.logFormat) }),
    corsOrigins: config.corsOrigins,
  };
}
