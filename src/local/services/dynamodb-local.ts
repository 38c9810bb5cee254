import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import type { Env } from '../../adapters/env';
import { ConfigError, describeError } from '../../domain/errors';
import { spawnWatched, stopWatched, WATCHED_SPAWN_FAILED } from './child-watchdog';
import { freePort } from './ports';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../local-credentials';

export interface DynamoDbLocal {
  readonly endpoint: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** The folder of DynamoDBLocal.jar inside the `amplify-dynamodb-simulator` package. */
export function dynamoDbLocalHome(): string {
  return join(dirname(require.resolve('amplify-dynamodb-simulator/package.json')), 'emulator');
}

/** The variable that sets how long a start waits for DynamoDB Local to answer. */
export const DYNAMODB_START_VARIABLE = 'TALLY_DYNAMODB_START_SECONDS';

/**
 * Seconds a start waits, unless {@link DYNAMODB_START_VARIABLE} says otherwise, for
 * DynamoDB Local's first answer. It answers in 2-4 s on a quiet 2-core machine, but Java
 * starting on a CPU-starved one took over 60 s (issues #31 and #37): five minutes is
 * meant never to be what fails a slow start, only a start that will not happen.
 */
export const DYNAMODB_START_DEFAULT_SECONDS = 300;

/** The most {@link DYNAMODB_START_VARIABLE} may ask for: an hour. */
const DYNAMODB_START_MAX_SECONDS = 3600;

/**
 * How long a start waits for DynamoDB Local (`TALLY_DYNAMODB_START_SECONDS`, a whole
 * number of seconds from 1 to 3600; {@link DYNAMODB_START_DEFAULT_SECONDS} when unset).
 * Throws ConfigError naming the variable.
 */
export function readDynamoDbStartSeconds(env: Env): number {
  const raw = env[DYNAMODB_START_VARIABLE];
  if (raw === undefined || raw === '') return DYNAMODB_START_DEFAULT_SECONDS;
  const seconds = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isInteger(seconds) || seconds < 1 || seconds > DYNAMODB_START_MAX_SECONDS) {
    throw new ConfigError(`${DYNAMODB_START_VARIABLE} must be a whole number of seconds from 1 to ${DYNAMODB_START_MAX_SECONDS}, got "${raw}"`);
  }
  return seconds;
}

/**
 * Starts Amazon's DynamoDB Local on the machine's Java. `-sharedDb` makes every
 * access key and region see the same tables; with `dataDir` the tables persist on
 * disk, otherwise they live in memory. It is ready once it answers a ListTables; a
 * start that gets no answer within `startSeconds` (default
 * {@link DYNAMODB_START_DEFAULT_SECONDS}) stops Java and fails, saying what it waited for.
 */
export async function startDynamoDbLocal(options: { port?: number; dataDir?: string; startSeconds?: number } = {}): Promise<DynamoDbLocal> {
  const port = options.port ?? (await freePort());
  const home = dynamoDbLocalHome();
  const storage = options.dataDir === undefined ? ['-inMemory'] : ['-dbPath', options.dataDir];
  if (options.dataDir !== undefined) mkdirSync(options.dataDir, { recursive: true });
  const args = [
    `-Djava.library.path=${join(home, 'DynamoDBLocal_lib')}`,
    '-Xmx1g',
    '-jar',
    join(home, 'DynamoDBLocal.jar'),
    '-sharedDb',
    '-disableTelemetry',
    '-port',
    String(port),
    ...storage,
  ];
  // Under a watchdog: Java must not outlive this process, even when it is killed with SIGKILL.
  const child = spawnWatched('java', args);
  let output = '';
  const collect = (chunk: Buffer) => {
    if (output.length < 20_000) output += chunk.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<never>((_, reject) => {
    child.once('error', (error) => reject(new Error(`cannot start DynamoDB Local's watchdog: ${error.message}`)));
    child.once('exit', (code) =>
      reject(
        code === WATCHED_SPAWN_FAILED
          ? new Error(`cannot start DynamoDB Local (is Java 17 installed and on PATH?): ${output.trim()}`)
          : new Error(`DynamoDB Local exited with code ${code}:\n${output}`),
      ),
    );
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const startSeconds = options.startSeconds ?? DYNAMODB_START_DEFAULT_SECONDS;
  try {
    await Promise.race([waitUntilReady(endpoint, startSeconds, () => output), exited]);
  } catch (error) {
    await stopWatched(child);
    throw error;
  }
  exited.catch(() => undefined);
  return { endpoint, port, stop: () => stopWatched(child) };
}

/** Milliseconds between two ListTables while DynamoDB Local starts. */
const READY_POLL_MS = 150;

/**
 * Sends ListTables (Limit 1) to `endpoint` until one succeeds. Each request is aborted
 * at the deadline, so a DynamoDB Local that accepts connections but does not answer
 * cannot hold the start past it. `javaOutput` is what Java printed so far, for the error.
 */
async function waitUntilReady(endpoint: string, startSeconds: number, javaOutput: () => string): Promise<void> {
  const client = new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 1 });
  const started = Date.now();
  const deadline = started + startSeconds * 1000;
  let requests = 0;
  let lastError: unknown;
  try {
    for (;;) {
      requests += 1;
      const atDeadline = AbortSignal.timeout(Math.max(1, deadline - Date.now()));
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: atDeadline });
        return;
      } catch (error) {
        const hung = atDeadline.aborted;
        if (!hung) lastError = error;
        if (hung || Date.now() >= deadline) {
          throw new DynamoDbStartTimeout({ endpoint, startSeconds, waitedMs: Date.now() - started, requests, lastError, lastHung: hung, javaOutput: javaOutput() });
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(READY_POLL_MS, Math.max(0, deadline - Date.now()))));
      }
    }
  } finally {
    client.destroy();
  }
}

/** An error's name and message, or its code where the message is empty (Node's connection errors). */
function errorText(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  const text = describeError(error);
  return typeof code === 'string' && !text.includes(code) ? `${text} (${code})` : text;
}

/** DynamoDB Local did not answer in time: says what was asked of whom, for how long, and how to wait longer. */
export class DynamoDbStartTimeout extends Error {
  constructor(waited: {
    endpoint: string;
    startSeconds: number;
    waitedMs: number;
    requests: number;
    /** The last request's failure, other than being cut off at the deadline (undefined when none failed otherwise). */
    lastError: unknown;
    /** Whether the last request was still waiting for its answer at the deadline. */
    lastHung: boolean;
    javaOutput: string;
  }) {
    const java = waited.javaOutput.trim();
    const failures = [
      ...(waited.lastHung ? ['the last was still unanswered at the deadline'] : []),
      ...(waited.lastError === undefined ? [] : [`the last to fail: ${errorText(waited.lastError)}`]),
    ];
    super(
      [
        `DynamoDB Local did not answer within ${waited.startSeconds} s: ${waited.requests} ListTables request(s) (Limit 1) to ${waited.endpoint} ` +
          `over ${(waited.waitedMs / 1000).toFixed(1)} s, none answered; ${failures.join('; ')}.`,
        java === '' ? 'Java printed nothing.' : `Java printed:\n${java.slice(-2000)}`,
        `A busy machine can start Java this slowly: set ${DYNAMODB_START_VARIABLE} (seconds, now ${waited.startSeconds}) to wait longer.`,
      ].join('\n'),
      waited.lastError === undefined ? undefined : { cause: waited.lastError },
    );
    this.name = 'DynamoDbStartTimeout';
  }
}
