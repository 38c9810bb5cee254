import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { AwsCredentialIdentity } from '@aws-sdk/types';
import type { TallyConfig } from './config';

export interface AwsClients {
  readonly dynamodb: DynamoDBClient;
  readonly s3: S3Client;
  readonly sqs: SQSClient;
}

/**
 * SDK clients for the configured region and endpoints. Retries use the SDK's standard
 * mode: exponential backoff with jitter, throttling and transient network errors
 * retried up to `maxAttempts`, within the SDK's retry-token budget.
 */
export function createClients(
  config: Pick<TallyConfig, 'region' | 'endpoints' | 'maxAttempts'>,
  credentials?: AwsCredentialIdentity,
): AwsClients {
  const common = {
    region: config.region,
    maxAttempts: config.maxAttempts,
    retryMode: 'standard',
    ...(credentials === undefined ? {} : { credentials }),
  };
  return {
    dynamodb: new DynamoDBClient({ ...common, ...(config.endpoints.dynamodb ? { endpoint: config.endpoints.dynamodb } : {}) }),
    s3: new S3Client({
      ...common,
      ...(config.endpoints.s3 ? { endpoint: config.endpoints.s3, forcePathStyle: true } : {}),
    }),
    sqs: new SQSClient({ ...common, ...(config.endpoints.sqs ? { endpoint: config.endpoints.sqs } : {}) }),
  };
}
