import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { spawnWatched, stopWatched, WATCHED_SPAWN_FAILED } from './child-watchdog';
import { freePort } from './ports';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from './local-credentials';

export interface DynamoDbLocal {
  readonly endpoint: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** The folder of DynamoDBLocal.jar inside the `amplify-dynamodb-simulator` package. */
export function dynamoDbLocalHome(): string {
  return join(dirname(require.resolve('amplify-dynamodb-simulator/package.json')), 'emulator');
}

/**
 * Starts Amazon's DynamoDB Local on the machine's Java. `-sharedDb` makes every
 * access key and region see the same tables; with `dataDir` the tables persist on
 * disk, otherwise they live in memory.
 */
export async function startDynamoDbLocal(options: { port?: number; dataDir?: string } = {}): Promise<DynamoDbLocal> {
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
  try {
    await Promise.race([waitUntilReady(endpoint), exited]);
  } catch (error) {
    await stopWatched(child);
    throw error;
  }
  exited.catch(() => undefined);
  return { endpoint, port, stop: () => stopWatched(child) };
}

async function waitUntilReady(endpoint: string): Promise<void> {
  const client = new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 1 });
  const deadline = Date.now() + 60_000;
  try {
    for (;;) {
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        return;
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`DynamoDB Local did not answer at ${endpoint}`, { cause: error });
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
    }
  } finally {
    client.destroy();
  }
}
