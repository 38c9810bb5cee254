import { createServer, type Server } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { DeleteObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { addDays, dayOf } from '../../src/domain/days';
import { normaliseEtag } from '../../src/domain/counters/log-object';
import { waitForEmptyQueue } from '../../src/local/pipeline/poller';
import { localClients } from '../../src/local/stack';
import { DEFAULT_API_PORT } from '../../src/local/serving/local-usage-api';
import { runTallyBin } from '../support/cli';
import {
  killProcessesNaming,
  launchLocal,
  processesNaming,
  stackEnv,
  stackInfoIn,
  startLocal,
  stopLocal,
  waitUntilNoProcessNames,
  type LocalRun,
} from '../support/npm-start';
import { notificationBody, putLogSet, sendBodies } from '../support/operator';
import { putLogObject, testClients } from '../support/stack';
import { SHORT_WAIT_MS, TIME_LIMITS } from '../support/time-limits';

// `npm start` as a user meets it, in temporary folders: real processes, real signals.

const folders: string[] = [];
const runs: LocalRun[] = [];

function projectFolder(): string {
  const folder = mkdtempSync(join(tmpdir(), 'tally-lifecycle-'));
  folders.push(folder);
  return folder;
}

async function start(cwd: string, env: Record<string, string> = {}): Promise<LocalRun> {
  const run = await startLocal(cwd, env);
  runs.push(run);
  return run;
}

/** A `tally` command run in `cwd` with no target in its environment: it finds the local stack there. */
const tally = (cwd: string, ...args: string[]) => runTallyBin(args, { cwd, env: stackEnv() });

const today = dayOf(new Date());
const reconcileArgs = ['reconcile', '--from', addDays(today, -3), '--to', addDays(today, -2)];

afterAll(async () => {
  await Promise.all(runs.map((run) => stopLocal(run, 'SIGKILL')));
  for (const folder of folders) {
    killProcessesNaming(folder);
    rmSync(folder, { recursive: true, force: true });
  }
});

/** Resolves once `run` printed `text`; rejects when it exits first or takes longer than a start may. */
function untilOutput(run: LocalRun, text: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start did not print ${text}:\n${run.output()}`)), TIME_LIMITS.npmStartReady);
    const check = () => {
      if (!run.output().includes(text)) return;
      clearTimeout(timer);
      resolve();
    };
    run.child.stdout!.on('data', check);
    check();
    void run.exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`npm start exited before printing ${text}:\n${run.output()}`));
    });
  });
}

/** Listens on `port` on 127.0.0.1 (as npm start's server does); undefined when something else already holds it. */
function holdPort(port: number): Promise<Server | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' ? resolve(undefined) : reject(error)));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

describe('npm start, when it cannot start', () => {
  it.each([
    ['TALLY_SHARDS', 'abc', /ConfigError: TALLY_SHARDS must give shard counts/],
    ['TALLY_METRICS', 'notjson', /ConfigError: TALLY_METRICS: /],
  ])('fails on %s=%s with a ConfigError, leaving no process and no .tally folder behind', async (variable, value, message) => {
    const cwd = projectFolder();

    const run = launchLocal(cwd, { [variable]: value });
    const code = await run.exited;
    const left = await waitUntilNoProcessNames(cwd, SHORT_WAIT_MS);

    expect(code).toBe(1);
    expect(run.output()).toMatch(message);
    expect(left).toEqual([]);
    expect(existsSync(join(cwd, '.tally'))).toBe(false);
  });

  it('stops DynamoDB Local when it fails after starting it', async () => {
    const cwd = projectFolder();
    // The signing secret is read after the databases are up: a folder in its place fails the start there.
    mkdirSync(join(cwd, '.tally', 'jwt-secret'), { recursive: true });

    const run = launchLocal(cwd, { TALLY_DEMO: '0' });
    const code = await run.exited;
    const left = await waitUntilNoProcessNames(cwd, SHORT_WAIT_MS);

    expect(code).toBe(1);
    expect(run.output()).toContain('tally: could not start');
    expect(left).toEqual([]);
    expect(existsSync(join(cwd, '.tally', 'local.json'))).toBe(false);
    expect(existsSync(join(cwd, '.tally', 'lock.json'))).toBe(false);
  }, TIME_LIMITS.npmStartLifecycleTest);
});

describe('npm start, running', () => {
  it('refuses a second start in the same folder at once, naming the first, which keeps serving', async () => {
    const cwd = projectFolder();
    const first = await start(cwd);
    const info = stackInfoIn(cwd);
    const described = readFileSync(join(cwd, '.tally', 'local.json'), 'utf8');

    const second = launchLocal(cwd, { TALLY_DEMO: '0' });
    let timer: NodeJS.Timeout | undefined;
    const secondCode = await Promise.race([second.exited, new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), TIME_LIMITS.npmStartReady)))]);
    clearTimeout(timer);
    if (secondCode === 'still running') await stopLocal(second, 'SIGKILL');

    const { dynamodb } = localClients(info);
    const tables = await dynamodb.send(new ListTablesCommand({}));
    dynamodb.destroy();
    const api = await fetch(`${info.api}/v1/accounts/acme/usage?from=${today}&to=${today}`);
    expect(secondCode).toBe(1);
    // "At once": before it started anything (no clock here: a busy machine can take seconds just to start Node).
    expect(second.output()).not.toContain('starting DynamoDB Local');
    expect(second.output()).toContain(`tally: already running (pid ${first.child.pid}, dashboard ${info.api}/)`);
    expect(first.child.exitCode).toBeNull();
    expect(readFileSync(join(cwd, '.tally', 'local.json'), 'utf8')).toBe(described);
    expect(tables.TableNames).toContain(info.table);
    expect(api.status).toBe(401);
  }, TIME_LIMITS.npmStartLifecycleTest);

  it('stops DynamoDB Local and removes local.json on SIGHUP; commands then say the stack is not running', async () => {
    const cwd = projectFolder();
    const run = await start(cwd);
    expect(processesNaming(cwd)).not.toEqual([]);

    const code = await stopLocal(run, 'SIGHUP');
    const left = await waitUntilNoProcessNames(cwd, SHORT_WAIT_MS);
    const command = await tally(cwd, ...reconcileArgs);

    expect(code).toBe(0);
    expect(left).toEqual([]);
    expect(existsSync(join(cwd, '.tally', 'local.json'))).toBe(false);
    expect(existsSync(join(cwd, '.tally', 'lock.json'))).toBe(false);
    expect(command.code).not.toBe(0);
    expect(command.stderr).toContain('the local stack is not running; start it with npm start');
    expect(command.stderr).not.toMatch(/^\s+at /m);
  }, TIME_LIMITS.npmStartLifecycleTest);

  it('stops its webhook poller before the emulator on Ctrl-C, so no poller error is printed', async () => {
    const cwd = projectFolder();
    const run = await start(cwd, { TALLY_WEBHOOK_URL: 'http://127.0.0.1:9/hooks', TALLY_WEBHOOK_SECRET: 'lifecycle-test-secret-0123456789abcdef' });
    expect(run.output()).not.toContain('webhooks off');

    const code = await stopLocal(run, 'SIGINT');

    expect(code).toBe(0);
    expect(run.output()).toContain('tally: stopping...');
    expect(run.output()).not.toMatch(/poller error|while stopping/);
  }, TIME_LIMITS.npmStartLifecycleTest);

  it('prints no error on Ctrl-C during the demo: a stop asked for is no failure to start', async () => {
    const cwd = projectFolder();
    const run = launchLocal(cwd, { TALLY_DEMO: '1' });
    runs.push(run);
    // Ready, then the demo uploads its 30 days of logs to the emulator Ctrl-C stops under it.
    await untilOutput(run, 'tally: stack ready');

    const code = await stopLocal(run, 'SIGINT');

    expect(code).toBe(0);
    expect(run.output()).toContain('tally: stopping...');
    expect(run.output()).not.toMatch(/could not start|ECONNREFUSED|while stopping/);
  }, TIME_LIMITS.npmStartLifecycleTest);

  it('says which port it uses, and why, when port 8787 is taken', async () => {
    const holder = await holdPort(DEFAULT_API_PORT);
    try {
      const cwd = projectFolder();
      const run = await start(cwd);
      const info = stackInfoIn(cwd);
      const port = new URL(info.api!).port;

      expect(port).not.toBe(String(DEFAULT_API_PORT));
      expect(run.output()).toContain(`tally: port ${DEFAULT_API_PORT} is in use (another program, or another npm start in another folder), so the dashboard and API are on port ${port}`);
    } finally {
      holder?.close();
    }
  }, TIME_LIMITS.npmStartLifecycleTest);

  it('takes DynamoDB Local with it when killed with SIGKILL; commands on the stale local.json say the stack is not running', async () => {
    const cwd = projectFolder();
    const run = await start(cwd);
    expect(processesNaming(cwd)).not.toEqual([]);

    await stopLocal(run, 'SIGKILL');
    const left = await waitUntilNoProcessNames(cwd, SHORT_WAIT_MS);
    const command = await tally(cwd, ...reconcileArgs);

    expect(left).toEqual([]);
    expect(existsSync(join(cwd, '.tally', 'local.json'))).toBe(true);
    expect(command.code).not.toBe(0);
    expect(command.stderr).toContain('the local stack is not running; start it with npm start');
    expect(command.stderr).not.toMatch(/^\s+at /m);
  }, TIME_LIMITS.npmStartLifecycleTest);

  it('keeps the logs a user fed in across a kill and a restart: reconcile is clean', async () => {
    const cwd = projectFolder();
    await start(cwd);
    const before = stackInfoIn(cwd);
    const set = await putLogSet({ days: [addDays(today, -3), addDays(today, -2)], info: before });
    await sendBodies(before.queueUrl, set.refs.map(notificationBody), before);
    const { sqs } = localClients(before);
    const drained = await waitForEmptyQueue(sqs, before.queueUrl, SHORT_WAIT_MS);
    sqs.destroy();
    const beforeRestart = await tally(cwd, ...reconcileArgs);
    const removed = await putLogObject(`${set.prefix}removed.gz`, 'a log deleted before the restart', { info: before });
    await testClients(before).s3.send(new DeleteObjectCommand({ Bucket: before.bucket, Key: removed.key }));

    await stopLocal(runs[runs.length - 1]!, 'SIGKILL');
    await waitUntilNoProcessNames(cwd, SHORT_WAIT_MS);
    const restarted = await start(cwd);
    const afterRestart = await tally(cwd, ...reconcileArgs);
    const after = stackInfoIn(cwd);
    const listed = await testClients(after).s3.send(new ListObjectsV2Command({ Bucket: after.bucket, Prefix: set.prefix }));
    await stopLocal(restarted);

    expect(drained).toBe(true);
    expect(beforeRestart.stdout).toContain(`read ${set.refs.length} object(s)`);
    expect(beforeRestart.stdout).toContain('no drift: the counters match the logs');
    expect(afterRestart.code).toBe(0);
    expect(afterRestart.stdout).toContain(`read ${set.refs.length} object(s)`);
    expect(afterRestart.stdout).toContain('no drift: the counters match the logs');
    // Same ETags: the ledger and the idempotency keys name each object by it.
    expect((listed.Contents ?? []).map((object) => [object.Key, normaliseEtag(object.ETag ?? '')]).sort()).toEqual(
      set.refs.map((ref) => [ref.key, ref.etag]).sort(),
    );
  }, TIME_LIMITS.npmStartLifecycleTest);
});
