import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/**
 * Fault injection with SDK middleware around the real DynamoDB Local: requests still
 * go over the wire; these only change what the caller sees.
 */
export interface FaultCounter {
  fired: number;
}

/**
 * Lets `UpdateItem` through, then throws a network error as if the answer was lost:
 * once for each of the first `times` distinct increments (so a retry is never lost
 * again). The SDK's retry treats ECONNRESET as transient and sends the request again.
 */
export function loseUpdateResponses(client: DynamoDBClient, times: number): FaultCounter {
  const counter = { fired: 0 };
  const lost = new Set<string>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (context.commandName !== 'UpdateItemCommand') return result;
      const values = (args as unknown as { input: { ExpressionAttributeValues?: Record<string, { B?: Uint8Array }> } }).input.ExpressionAttributeValues;
      const key = Buffer.from(values?.[':k']?.B ?? new Uint8Array()).toString('hex');
      if (lost.size < times && !lost.has(key)) {
        lost.add(key);
        counter.fired++;
        throw Object.assign(new Error('socket hang up (response lost after DynamoDB applied the write)'), { code: 'ECONNRESET' });
      }
      return result;
    },
    { step: 'deserialize', name: 'loseUpdateResponses' },
  );
  return counter;
}

/** Answers `UpdateItem` with a throttling error before it reaches DynamoDB, `times` times. */
export function throttleUpdates(client: DynamoDBClient, times: number): FaultCounter {
  const counter = { fired: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'UpdateItemCommand' && counter.fired < times) {
        counter.fired++;
        throw Object.assign(new Error('The level of configured provisioned throughput for the table was exceeded'), {
          name: 'ProvisionedThroughputExceededException',
          $fault: 'client',
          $metadata: { httpStatusCode: 400 },
        });
      }
      return next(args);
    },
    { step: 'deserialize', name: 'throttleUpdates' },
  );
  return counter;
}

/**
 * Answers every `GetItem` with the error `name` (`ProvisionedThroughputExceededException`,
 * `InternalServerError`, ...) before it reaches DynamoDB, as DynamoDB would: the SDK retries
 * the throttling and server errors it knows as transient, then gives up with the last one.
 */
export function failGetItems(client: DynamoDBClient, name: string, httpStatusCode: number): FaultCounter {
  const counter = { fired: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'GetItemCommand') {
        counter.fired++;
        throw Object.assign(new Error(`${name} (injected)`), { name, $fault: httpStatusCode >= 500 ? 'server' : 'client', $metadata: { httpStatusCode } });
      }
      return next(args);
    },
    { step: 'deserialize', name: 'failGetItems' },
  );
  return counter;
}

/** The consumer "dies" (a non-retryable error) before its (k+1)th `UpdateItem` reaches DynamoDB. */
export function crashAfterUpdates(client: DynamoDBClient, k: number): FaultCounter {
  const counter = { fired: 0 };
  let sent = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'UpdateItemCommand') {
        if (sent >= k) {
          counter.fired++;
          throw Object.assign(new Error('consumer crashed'), { name: 'ConsumerCrash' });
        }
        sent++;
      }
      return next(args);
    },
    { step: 'initialize', name: 'crashAfterUpdates' },
  );
  return counter;
}

/**
 * The consumer dies unseen after its k-th `UpdateItem`: from then on nothing it sends
 * reaches DynamoDB (no ledger write, no progress record), as when Lambda kills the
 * sandbox mid-object.
 */
export function dieAfterUpdates(client: DynamoDBClient, k: number): FaultCounter {
  const counter = { fired: 0 };
  let sent = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (sent >= k) {
        counter.fired++;
        throw Object.assign(new Error('consumer died'), { name: 'ConsumerDied' });
      }
      if (context.commandName === 'UpdateItemCommand') sent++;
      return next(args);
    },
    { step: 'initialize', name: 'dieAfterUpdates' },
  );
  return counter;
}

/**
 * The consumer dies unseen once it has applied `k` increments: it reads and records what
 * it likes until then, and dies at its next request after its k-th applied one (k = 0:
 * at its first `UpdateItem`). From then on nothing it sends reaches DynamoDB: no ledger
 * write, no progress record, as when Lambda kills the sandbox mid-object.
 */
export function dieAfterApplying(client: DynamoDBClient, k: number): FaultCounter {
  const counter = { fired: 0 };
  let applied = 0;
  let dead = false;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (dead || (applied >= k && (k > 0 || context.commandName === 'UpdateItemCommand'))) {
        dead = true;
        counter.fired++;
        throw Object.assign(new Error('consumer died'), { name: 'ConsumerDied' });
      }
      const result = await next(args);
      if (context.commandName === 'UpdateItemCommand') applied++;
      return result;
    },
    { step: 'initialize', name: 'dieAfterApplying' },
  );
  return counter;
}
