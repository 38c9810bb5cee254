import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';

/**
 * Runs a conditional DynamoDB write: true when it went through, false when its
 * condition refused it (another writer got there first, the item is not in the state
 * asked for); any other error is thrown.
 */
export async function conditionally(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}
