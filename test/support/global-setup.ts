import { readDynamoDbStartSeconds } from '../../src/local/services/dynamodb-local';
import { startLocalStack } from '../../src/local/stack';

/**
 * Starts one DynamoDB Local and one SQS/S3 emulator for the whole run; every test
 * uses its own account ids, object keys and, where it needs them, its own queues.
 */
export default async function globalSetup(): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const stack = await startLocalStack({ visibilityTimeoutSeconds: 2, maxReceiveCount: 3, dynamodbStartSeconds: readDynamoDbStartSeconds(process.env) });
  (globalThis as { __TALLY_STACK__?: unknown }).__TALLY_STACK__ = stack;
  process.env.TALLY_TEST_STACK = JSON.stringify(stack.info);
}
