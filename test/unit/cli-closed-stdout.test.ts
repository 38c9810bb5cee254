import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../support/cli';

/** Runs the built CLI with its stdout a pipe whose reader is gone before the first write. */
function runWithClosedStdout(args: readonly string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('node', [join(REPO_ROOT, 'bin', 'tally.js'), ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

describe('tally with a reader that stopped reading (tally ... | head)', () => {
  it.each([[['--help']], [['count', 'fixtures/logs/plain-v33.log']]])('%j finishes with its own exit code and no EPIPE trace', async (args) => {
    const { code, stderr } = await runWithClosedStdout(args);

    expect(stderr).not.toMatch(/EPIPE|Unhandled/);
    expect(code).toBe(0);
  });
});
