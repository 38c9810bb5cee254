import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runTallyBin } from '../support/cli';

/** An environment with no AWS credentials anywhere (no keys, no profile files, no instance metadata). */
function noCredentials(extra: Record<string, string>): NodeJS.ProcessEnv {
  const home = mkdtempSync(join(tmpdir(), 'tally-no-creds-'));
  return { PATH: process.env.PATH, HOME: home, AWS_EC2_METADATA_DISABLED: 'true', AWS_CONFIG_FILE: join(home, 'none'), AWS_SHARED_CREDENTIALS_FILE: join(home, 'none'), ...extra };
}

describe('a target the environment names', () => {
  it('is named on the first line, and missing credentials say which target and what to do', async () => {
    const env = noCredentials({ TALLY_TABLE: 'nope', AWS_REGION: 'us-east-1' });

    const { code, stdout, stderr } = await runTallyBin(['explain', '--account', 'acme', '--day', '2026-11-21'], { env, cwd: env.HOME! });

    expect(stdout.split('\n')[0]).toBe('tally explain: AWS us-east-1, table nope (named by TALLY_TABLE; not the local stack)');
    expect(code).toBe(2);
    expect(stderr).toBe(
      'tally explain: no AWS credentials for AWS us-east-1, table nope (named by TALLY_TABLE; not the local stack): ' +
        'Could not load credentials from any providers. Give credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, ' +
        'or aws sso login), or unset TALLY_TABLE to work on the local stack started by npm start\n',
    );
  });

  it('says so for any command, with the flags that named it', async () => {
    const env = noCredentials({ AWS_REGION: 'eu-west-1' });

    const { code, stderr } = await runTallyBin(['adjustments', '--account', 'acme', '--table', 'prod-usage'], { env, cwd: env.HOME! });

    expect(code).toBe(2);
    expect(stderr).toMatch(/^tally adjustments: no AWS credentials for AWS eu-west-1, table prod-usage \(named by --table; not the local stack\): .*aws sso login\)\n$/);
  });
});
