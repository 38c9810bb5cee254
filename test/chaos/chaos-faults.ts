import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import type { FaultSchedule } from './schedule';

/** A consumer that stops dead: not retried by the SDK, and it takes its whole batch down. */
export class ConsumerCrash extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConsumerCrash';
  }
}

/** A log object that cannot be read for now: its message fails on its own, the consumer lives on. */
export class ObjectUnreadable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ObjectUnreadable';
  }
}

function subjectOf(command: string, input: Record<string, unknown>): string {
  const values = input.ExpressionAttributeValues as Record<string, { B?: Uint8Array }> | undefined;
  const key = values?.[':k']?.B;
  const item = (input.Key ?? input.Item) as Record<string, { S?: string }> | undefined;
  return `${command}:${item?.PK?.S ?? ''}:${item?.SK?.S ?? ''}:${key ? Buffer.from(key).toString('hex') : ''}`;
}

/** Whether a consumer is dead: from its crash until the harness restarts it, nothing it sends gets through. */
export interface ConsumerLife {
  dead: boolean;
}

/**
 * A haunted object's consumer dies unseen on every attempt while the haunting is on, one
 * increment further each time: the first attempt sends one increment and dies before the
 * second, the next sends two (the first again: a duplicate) and dies before the third,
 * the third dies before the fourth, then it starts over. An object of four increments or
 * more never completes: its message comes back on the queue's own schedule after every
 * death, exhausts its receives and reaches the DLQ with only `started` attempt records
 * behind it, while the keys its lives applied roll out of busy histories.
 */
export class Haunting {
  private readonly owner = new Map<string, string>();
  private readonly lives = new Map<string, { writes: number; deaths: number }>();
  on = true;

  constructor(private readonly schedule: FaultSchedule) {}

  /** `object`'s increments have these keys (hex). */
  haunt(object: string, keys: readonly string[]): void {
    for (const key of keys) this.owner.set(key, object);
    this.lives.set(object, { writes: 0, deaths: 0 });
  }

  /** Whether the write of `keyHex` kills its consumer now (counts the write). */
  strikes(keyHex: string): boolean {
    const object = this.owner.get(keyHex);
    if (!this.on || object === undefined) return false;
    const life = this.lives.get(object)!;
    life.writes++;
    if (life.writes < 2 + (life.deaths % 3)) return false;
    life.deaths++;
    life.writes = 0;
    this.schedule.record('hauntedDeath');
    return true;
  }

  /** Whether `object` is haunted. */
  haunts(object: string): boolean {
    return this.lives.has(object);
  }

  get objects(): number {
    return this.lives.size;
  }

  /** The most unseen deaths one haunted object went through. */
  get mostDeaths(): number {
    return Math.max(0, ...[...this.lives.values()].map((life) => life.deaths));
  }
}

/**
 * SDK middleware on a consumer's DynamoDB client, in front of the real DynamoDB Local:
 * - `throttle`: a ProvisionedThroughputExceededException before the write is sent;
 * - `crash`: the consumer dies unseen before an UpdateItem (after some of its object's
 *   increments): no later request of it reaches DynamoDB, so it records no progress;
 *   `haunted` keys (see {@link Haunting}) crash it too, whatever the schedule;
 * - `lostResponse`: the write is applied, then the answer is lost (ECONNRESET).
 */
export function injectDynamoFaults(client: DynamoDBClient, schedule: FaultSchedule, active: () => boolean, life: ConsumerLife = { dead: false }, haunted: (keyHex: string) => boolean = () => false): void {
  // Outside the SDK's retry: a crash is not retried, the consumer is gone.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (life.dead) throw new ConsumerCrash('chaos: the consumer is dead');
      if (context.commandName === 'UpdateItemCommand' && active()) {
        const input = (args as unknown as { input: Record<string, unknown> }).input;
        const subject = subjectOf('UpdateItem', input);
        const key = (input.ExpressionAttributeValues as Record<string, { B?: Uint8Array }> | undefined)?.[':k']?.B;
        if ((key !== undefined && haunted(Buffer.from(key).toString('hex'))) || schedule.strikes('crash', subject)) {
          life.dead = true;
          throw new ConsumerCrash(`chaos: consumer died before ${subject}`);
        }
      }
      return next(args);
    },
    { step: 'initialize', name: 'chaosCrash' },
  );
  // Inside the SDK's retry: throttling and lost answers are retried with backoff.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? '';
      if ((command !== 'UpdateItemCommand' && command !== 'PutItemCommand') || !active()) return next(args);
      const subject = subjectOf(command, (args as unknown as { input: Record<string, unknown> }).input);
      if (schedule.strikes('throttle', subject)) {
        throw Object.assign(new Error('chaos: throughput exceeded'), {
          name: 'ProvisionedThroughputExceededException',
          $fault: 'client',
          $metadata: { httpStatusCode: 400 },
        });
      }
      const result = await next(args);
      if (schedule.strikes('lostResponse', subject)) {
        throw Object.assign(new Error('chaos: response lost after the write was applied'), { code: 'ECONNRESET' });
      }
      return result;
    },
    { step: 'deserialize', name: 'chaosThrottleAndLoss' },
  );
}

/**
 * SDK middleware on a consumer's S3 client: `cursed` objects fail every read while
 * curses are on (so their messages exhaust maxReceiveCount and reach the DLQ).
 */
export function injectS3Faults(client: S3Client, schedule: FaultSchedule, isCursed: (key: string) => boolean): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const key = (args as unknown as { input: { Key?: string } }).input.Key ?? '';
      if (context.commandName === 'GetObjectCommand' && isCursed(key)) {
        schedule.record('dlqBound');
        throw new ObjectUnreadable(`chaos: ${key} cannot be read right now`);
      }
      return next(args);
    },
    { step: 'initialize', name: 'chaosS3Faults' },
  );
}

/**
 * SDK middleware on a consumer's DynamoDB client: while `doomed` says so, every write
 * to a doomed account's usage is refused (not retried), after the object's other
 * increments went through. Its message fails after partial progress on every receive,
 * reaches the DLQ partly applied, and is replayed once the doom is lifted.
 */
export function injectDoomedWrites(client: DynamoDBClient, schedule: FaultSchedule, doomed: (pk: string) => boolean): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = (args as unknown as { input: { Key?: Record<string, { S?: string }> } }).input;
      if (context.commandName === 'UpdateItemCommand' && doomed(input.Key?.PK?.S ?? '')) {
        schedule.record('partlyApplied');
        throw new ObjectUnreadable(`chaos: writes to ${input.Key?.PK?.S ?? ''} are refused for now`);
      }
      return next(args);
    },
    { step: 'initialize', name: 'chaosDoomedWrites' },
  );
}
