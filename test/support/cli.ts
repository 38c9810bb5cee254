import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Env } from '../../src/adapters/env';
import type { CliIo } from '../../src/cli/io';
import { runCli } from '../../src/cli/main';

/** A CliIo that keeps what a command printed. */
export function captureIo(): CliIo & { stdout: string; stderr: string } {
  const io = {
    stdout: '',
    stderr: '',
    out: (text: string) => void (io.stdout += text),
    err: (text: string) => void (io.stderr += text),
  };
  return io;
}

/** Runs one `tally` command in process, e.g. `const adjust = tallyCommand('adjust'); await adjust(argv, io, env)`. */
export function tallyCommand(command: string) {
  return (argv: readonly string[], io: CliIo, env: Env = {}, cwd = process.cwd(), now?: () => Date): Promise<number> =>
    runCli([command, ...argv], { io, env, cwd, ...(now === undefined ? {} : { now }) });
}

const execFileAsync = promisify(execFile);
export const REPO_ROOT = join(__dirname, '..', '..');

/** Runs the built `bin/tally.js` as a child process; resolves with its exit code and output, never rejects on a non-zero exit. */
export async function runTallyBin(args: readonly string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}) {
  try {
    const { stdout, stderr } = await execFileAsync('node', [join(REPO_ROOT, 'bin', 'tally.js'), ...args], {
      cwd: options.cwd ?? REPO_ROOT,
      env: options.env ?? process.env,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}
