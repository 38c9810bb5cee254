import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { countFiles } from '../../src/cli/commands/ingest/count';
import { CORPUS_CONFIGS, countCorpus } from '../support/count-corpus';

/**
 * `tally count --json` answers the count corpus byte for byte as the string-based
 * counter did (its answers recorded in test/support/golden/count-corpus.json): the JSON the
 * command prints is `JSON.stringify` of what `countFiles` returns.
 */
const golden = JSON.parse(readFileSync(join(__dirname, '..', 'support', 'golden', 'count-corpus.json'), 'utf8')) as Record<string, string | { exit: number }>;

function flags(args: readonly string[]): { resolver: string; metrics?: string } {
  const at = (flag: string) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : undefined);
  const metrics = at('--metrics');
  return { resolver: at('--resolver') ?? 'host-label', ...(metrics === undefined ? {} : { metrics }) };
}

describe('tally count on the count corpus', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tally-corpus-'));
  const files = countCorpus();
  const cwd = process.cwd();
  beforeAll(() => {
    for (const file of files) writeFileSync(join(dir, file.name), file.bytes);
    process.chdir(dir);
  });
  afterAll(() => {
    process.chdir(cwd);
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(CORPUS_CONFIGS.map((config) => [config.name, config] as const))('answers as before with %s', async (_, config) => {
    for (const file of files) {
      const expected = golden[`${config.name} ${file.name}`];
      const answer = countFiles([file.name], flags(config.args)).then(
        (report) => `${JSON.stringify(report)}\n`,
        () => ({ exit: 1 }),
      );

      expect({ file: file.name, answer: await answer }).toEqual({ file: file.name, answer: expected });
    }
  });
});
