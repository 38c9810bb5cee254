import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { HealthDeps } from '../../app/reading/health';
import type { TallyConfig } from '../config';
import { DynamoReconcileRecords } from '../dynamodb/dynamodb-reconcile-records';
import { DynamoSourceReader } from '../dynamodb/dynamodb-sources';
import { SqsDeadLetterProbe } from '../sqs/sqs-dead-letter-probe';

/** What health reads, wired for the read API and `tally status` alike. */
export function createHealthDeps(options: { dynamodb: DynamoDBClient; config: TallyConfig; sqs?: SQSClient; dlqUrl?: string }): HealthDeps {
  const table = { client: options.dynamodb, tableName: options.config.tableName };
  const { keyScheme, historyCap, ledgerTtlDays } = options.config;
  return {
    activity: new DynamoSourceReader(table),
    reconciles: new DynamoReconcileRecords(table),
    history: { shards: keyScheme.shards, cap: historyCap, keysPerAccountDay: keyScheme.shards * historyCap, tombstoneDays: ledgerTtlDays },
    ...(options.sqs === undefined || options.dlqUrl === undefined ? {} : { deadLetters: new SqsDeadLetterProbe({ client: options.sqs, dlqUrl: options.dlqUrl }) }),
  };
}
