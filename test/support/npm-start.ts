import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LocalStackInfo } from '../../src/local/stack';
import { REPO_ROOT } from './cli';
import { TIME_LIMITS } from './time-limits';

/** `npm start` as a child process: what it printed so far and how it ended. */
export interface LocalRun {
  readonly child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (null when a signal ended it). */
  readonly exited: Promise<number | null>;
}

/**
 * The environment a test's stack runs with: the test's own, without the TALLY_ and AWS_
 * variables a developer's shell may hold, plus `extra`.
 */
export function stackEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const own = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(TALLY_|AWS_)/.test(name)));
  return { ...own, ...extra };
}

/** Runs `node dist/local.js` (what `npm start` runs after building) in `cwd`. */
export function launchLocal(cwd: string, env: Record<string, string> = {}): LocalRun {
  const child = spawn('node', [join(REPO_ROOT, 'dist', 'local.js')], { cwd, env: stackEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** Starts a stack in `cwd` (no demo data unless `env` asks) and resolves once it is running. */
export async function startLocal(cwd: string, env: Record<string, string> = {}): Promise<LocalRun> {
  const run = launchLocal(cwd, { TALLY_DEMO: '0', ...env });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start did not get ready within ${TIME_LIMITS.npmStartReady / 1000} s:\n${run.output()}`)), TIME_LIMITS.npmStartReady);
    const check = () => {
      if (!run.output().includes('tally: running')) return;
      clearTimeout(timer);
      resolve();
    };
    run.child.stdout!.on('data', check);
    void run.exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`npm start exited with ${code}:\n${run.output()}`));
    });
  });
  return run;
}

/** Sends `signal` and waits for the stack to exit. */
export async function stopLocal(run: LocalRun, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill(signal);
  return run.exited;
}

/** The `.tally/local.json` a running stack wrote in `cwd`. */
export function stackInfoIn(cwd: string): LocalStackInfo {
  return JSON.parse(readFileSync(join(cwd, '.tally', 'local.json'), 'utf8')) as LocalStackInfo;
}

/**
 * Processes whose command line names `text` (a test's temporary folder): DynamoDB Local
 * runs with `-dbPath <folder>/.tally/data/dynamodb`, and its watchdog carries the same
 * arguments. Linux's /proc; a process that ends while it is read is skipped.
 */
export function processesNaming(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').includes(text)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Waits until no process names `text`; resolves with those still there after `timeoutMs`. */
export async function waitUntilNoProcessNames(text: string, timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = processesNaming(text);
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Kills whatever a failed test left running that names `text` (an orphaned DynamoDB Local). */
export function killProcessesNaming(text: string): void {
  for (const pid of processesNaming(text)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
