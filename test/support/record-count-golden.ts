/**
 * Records what `tally count --json` answers for every file of the count corpus under
 * every configuration, with the build in dist/ (run it on the commit whose answers are
 * the reference): `npx tsx test/support/record-count-golden.ts`. Writes
 * test/support/golden/count-corpus.json.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CORPUS_CONFIGS, countCorpus } from './count-corpus';

const root = join(__dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'tally-corpus-'));
const golden: Record<string, string | { exit: number }> = {};
try {
  for (const file of countCorpus()) writeFileSync(join(dir, file.name), file.bytes);
  for (const config of CORPUS_CONFIGS) {
    for (const file of countCorpus()) {
      const id = `${config.name} ${file.name}`;
      try {
        golden[id] = execFileSync('node', [join(root, 'bin', 'tally.js'), 'count', '--json', ...config.args, file.name], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      } catch (error) {
        golden[id] = { exit: (error as { status: number }).status };
      }
    }
  }
  mkdirSync(join(root, 'test', 'support', 'golden'), { recursive: true });
  writeFileSync(join(root, 'test', 'support', 'golden', 'count-corpus.json'), `${JSON.stringify(golden, null, 1)}\n`);
  process.stdout.write(`recorded ${Object.keys(golden).length} answers\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
