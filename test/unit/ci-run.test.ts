import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CI_RUN = join(__dirname, '..', '..', '.ci', 'run');

/** The system tools `.ci/run` itself uses, taken from this machine as they are. */
const TOOLS = ['bash', 'cut', 'dirname', 'env', 'grep', 'head', 'mktemp', 'tail', 'tee'];

/**
 * Runs `.ci/run` on a stand-in machine: a PATH of stubs that record each call
 * (`apt-get`, `sudo` when given, `npm`, `node`, `java`, `id` saying the user) and the few
 * real tools the script needs. Nothing is installed and no test runs.
 */
function runOnStubMachine(machine: { uid: number; sudo: boolean; chromium: boolean }): { status: number | null; calls: string[]; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'tally-ci-run-'));
  try {
    const calls = join(dir, 'calls');
    writeFileSync(calls, '');
    const stub = (name: string, body: string) => {
      writeFileSync(join(dir, name), `#!/bin/sh\necho "${name} $*" >> '${calls}'\n${body}\n`);
      chmodSync(join(dir, name), 0o755);
    };
    for (const tool of TOOLS) symlinkSync(spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim(), join(dir, tool));
    stub('id', `echo ${machine.uid}`);
    stub('apt-get', 'exit 0');
    if (machine.sudo) stub('sudo', 'exec "$@"');
    stub('node', 'echo v20.19.0');
    stub('java', 'echo "openjdk version \\"17.0.15\\"" >&2');
    stub('npm', '[ "$1" = test ] && echo "Tests:       3 passed, 3 total"; exit 0');
    const browser = join(dir, machine.chromium ? 'chromium' : 'no-chromium');
    if (machine.chromium) stub('chromium', 'exit 0');
    const run = spawnSync(join(dir, 'bash'), [CI_RUN], {
      env: { PATH: dir, HOME: dir, TMPDIR: dir, TALLY_CI_CHROMIUM: browser },
      encoding: 'utf8',
      timeout: 30_000,
    });
    return { status: run.status, calls: readFileSync(calls, 'utf8').trim().split('\n'), output: run.stdout + run.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('.ci/run on a fresh machine', () => {
  it('installs the missing Chromium through sudo when CI runs as an ordinary user', () => {
    const { status, calls, output } = runOnStubMachine({ uid: 1001, sudo: true, chromium: false });

    expect(status).toBe(0);
    // sudo drops the environment: apt stays non-interactive only if told again.
    expect(calls).toContain('sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq');
    expect(calls).toContain('sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium');
    expect(calls.filter((call) => call.startsWith('apt-get'))).toEqual(['apt-get update -qq', 'apt-get install -y -qq --no-install-recommends chromium']);
    expect(calls).toEqual(expect.arrayContaining(['npm ci --no-audit --no-fund', 'npm test']));
    expect(output).toMatch(/^tests: 3 passed, 0 failed in \d+ s/m);
  });

  it('calls apt-get itself as root, and nothing at all when everything is there', () => {
    const asRoot = runOnStubMachine({ uid: 0, sudo: false, chromium: false });
    expect(asRoot.status).toBe(0);
    expect(asRoot.calls).toContain('apt-get update -qq');

    const ready = runOnStubMachine({ uid: 1001, sudo: false, chromium: true });
    expect(ready.status).toBe(0);
    expect(ready.calls.filter((call) => /apt-get|sudo/.test(call))).toEqual([]);
  });

  it('stops before npm when it cannot install, saying what is missing and why', () => {
    const { status, calls, output } = runOnStubMachine({ uid: 1001, sudo: false, chromium: false });

    expect(status).toBe(1);
    expect(output).toContain('ci: chromium is missing; run as root or install sudo');
    expect(calls.filter((call) => /^(apt-get|npm)/.test(call))).toEqual([]);
  });
});
