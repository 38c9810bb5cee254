import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StackAlreadyRunningError } from '../../src/domain/errors';
import { acquireStackLock, readHolder } from '../../src/local/lifecycle/stack-lock';

const folders: string[] = [];
afterAll(() => folders.forEach((folder) => rmSync(folder, { recursive: true, force: true })));

/** A lock path in a fresh project folder whose `.tally` exists. */
function lockPath(): string {
  const folder = mkdtempSync(join(tmpdir(), 'tally-lock-'));
  folders.push(folder);
  const tally = join(folder, '.tally');
  mkdirSync(tally);
  return join(tally, 'lock.json');
}

/** The pid of a process that has already exited. */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '']).pid!;
}

describe('the stack lock', () => {
  it('refuses a second holder while the first runs, naming its pid and dashboard', () => {
    const path = lockPath();
    const first = acquireStackLock(path);
    first.update({ dashboard: 'http://127.0.0.1:8787/' });

    const second = () => acquireStackLock(path);

    expect(second).toThrow(StackAlreadyRunningError);
    expect(second).toThrow(`already running (pid ${process.pid}, dashboard http://127.0.0.1:8787/)`);
    expect(readHolder(path)?.dashboard).toBe('http://127.0.0.1:8787/');
  });

  it('takes over a lock whose process is gone', () => {
    const path = lockPath();
    acquireStackLock(path, deadPid());

    const lock = acquireStackLock(path);

    expect(readHolder(path)?.pid).toBe(process.pid);
    lock.release();
    expect(existsSync(path)).toBe(false);
  });

  it('takes over a lock whose pid now belongs to a process started at another time', () => {
    const path = lockPath();
    writeFileSync(path, JSON.stringify({ pid: process.pid, processStart: '1', startedAt: '2020-01-01T00:00:00.000Z' }));

    acquireStackLock(path);

    expect(readHolder(path)?.processStart).not.toBe('1');
  });

  it('takes over a lock whose process was killed but not yet reaped (a zombie)', async () => {
    const path = lockPath();
    // The child ends once its parent has become `sleep 30`, which never reaps it. (A child
    // that ended before the `exec` could be reaped by the shell itself: a flaky test.)
    const parent = spawn('sh', ['-c', 'sleep 0.5 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    const zombie = Number(await new Promise<string>((resolve) => parent.stdout.once('data', (chunk) => resolve(String(chunk)))));
    while (!/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${zombie}/stat`, 'utf8'))) await new Promise((resolve) => setTimeout(resolve, 20));
    writeFileSync(path, JSON.stringify({ pid: zombie, startedAt: new Date().toISOString() }));

    try {
      acquireStackLock(path);
    } finally {
      parent.kill('SIGKILL');
    }

    expect(readHolder(path)?.pid).toBe(process.pid);
  });

  it('takes over a lock file that is not a lock', () => {
    const path = lockPath();
    acquireStackLock(path, deadPid());
    writeFileSync(path, 'not json');

    acquireStackLock(path);

    expect(readHolder(path)?.pid).toBe(process.pid);
  });

  it('leaves a lock that another process took over when released', () => {
    const path = lockPath();
    const stale = acquireStackLock(path, deadPid());
    acquireStackLock(path);

    stale.release();

    expect(JSON.parse(readFileSync(path, 'utf8')).pid).toBe(process.pid);
  });
});
