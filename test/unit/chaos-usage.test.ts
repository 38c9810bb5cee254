import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const root = join(__dirname, '..', '..');

/** `npm run chaos -- ARGS` as npm runs it (tsx), without npm; resolves with the exit code and output. */
async function chaos(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(join(root, 'node_modules', '.bin', 'tsx'), [join(root, 'test', 'chaos', 'main.ts'), ...args], { cwd: root });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('npm run chaos arguments', () => {
  it('--help prints the usage and exits 0, starting nothing', async () => {
    const { code, stdout, stderr } = await chaos('--help');

    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toMatch(/^usage: npm run chaos -- --objects N --seed S/);
  });

  it('an unknown flag gets the usage and exit 2, not a stack trace', async () => {
    const { code, stderr } = await chaos('--no-such-flag');

    expect(code).toBe(2);
    expect(stderr).toMatch(/Unknown option '--no-such-flag'/);
    expect(stderr).toMatch(/usage: npm run chaos/);
    expect(stderr).not.toMatch(/\n\s+at /);
  });
});
