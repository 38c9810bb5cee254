import { spawn, type ChildProcess } from 'node:child_process';

/** The exit code of a watchdog whose command could not be started at all (not found, not executable). */
export const WATCHED_SPAWN_FAILED = 127;

/** Seconds the watchdog waits after SIGTERM before it kills the command. */
const GRACE_SECONDS = 5;

/**
 * The watchdog, run by `node -e`: it starts the command, and stops it when its own
 * standard input ends, when it is sent SIGTERM/SIGINT/SIGHUP, and exits with the
 * command's code. Plain JavaScript in a string: it runs outside the bundle.
 */
const WATCHDOG_SOURCE = `
'use strict';
const { spawn } = require('node:child_process');
const { constants } = require('node:os');
const [command, ...args] = JSON.parse(process.argv[1]);
let child;
let stopping = false;
const stop = () => {
  if (stopping || child.exitCode !== null || child.signalCode !== null) return;
  stopping = true;
  child.kill('SIGTERM');
  setTimeout(() => child.kill('SIGKILL'), ${GRACE_SECONDS * 1000});
};
// Handlers first: a signal between the spawn and them would end the watchdog and orphan the command.
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, stop);
child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit'] });
process.stdin.on('end', stop).on('close', stop).on('error', stop).resume();
child.on('error', (error) => {
  process.stderr.write(error.message + '\\n');
  process.exit(${WATCHED_SPAWN_FAILED});
});
child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
`;

/**
 * Starts `command` so that it cannot outlive this process, however this process ends.
 *
 * Signal handlers and exit hooks stop children on every ending but one: SIGKILL (the
 * OOM killer, `kill -9`, a test runner's timeout) gives the process no chance to run
 * anything, and the child is reparented to init. So the command runs under a tiny Node
 * watchdog whose stdin is a pipe from this process. The kernel closes the pipe's write
 * end when this process exits, whatever the cause; the watchdog reads end-of-file and
 * stops the command (SIGTERM, then SIGKILL after 5 s). No polling, nothing
 * platform-specific (Linux's PR_SET_PDEATHSIG would need a native module or `setpriv`,
 * absent on macOS), and the pipe is close-on-exec, so no other program inherits it and
 * holds it open.
 *
 * The watchdog runs in its own process group: Ctrl-C in the terminal reaches only this
 * process, which stops its children in order (the poller before the database), instead
 * of every process at once.
 *
 * The returned process is the watchdog: its stdout and stderr carry the command's, it
 * exits with the command's code ({@link WATCHED_SPAWN_FAILED} if the command could not be
 * started) and SIGTERM to it stops the command. Do not SIGKILL it: that would orphan
 * the command; {@link stopWatched} waits for the command's grace period first.
 */
export function spawnWatched(command: string, args: readonly string[]): ChildProcess {
  return spawn(process.execPath, ['-e', WATCHDOG_SOURCE, JSON.stringify([command, ...args])], {
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
    // This module's own view of the environment, named: without it the spawn takes the host process's,
    // which differs where a test runner gives each file an environment of its own (a `java` on its PATH).
    env: process.env,
  });
}

/** Stops a watched command and resolves once the watchdog has exited. */
export function stopWatched(watchdog: ChildProcess): Promise<void> {
  if (watchdog.exitCode !== null || watchdog.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    // Past the watchdog's own grace period something is wrong with the watchdog itself.
    const timer = setTimeout(() => watchdog.kill('SIGKILL'), (GRACE_SECONDS + 5) * 1000);
    watchdog.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    watchdog.kill('SIGTERM');
  });
}
