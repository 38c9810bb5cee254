import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { captureIo, runTallyBin, tallyCommand } from '../support/cli';
import { writeParquetLog } from '../support/parquet-logs';

/**
 * dist/cli.js (scripts/build.mjs) bundles the ES-module-only Parquet reader and its Snappy
 * codec (scripts/bundled-packages.cjs): required from CommonJS, Node loads an ES module
 * through its ES module loader, about a seventh of a fresh `tally count` of a small
 * Parquet file's CPU (issue 34). The built `tally count` of a Snappy Parquet file loads no
 * ES module, and counts as the sources do.
 */
describe('the built tally count of a Parquet file', () => {
  let folder: string;
  beforeAll(() => {
    folder = mkdtempSync(join(tmpdir(), 'tally-bundle-'));
  });
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it('loads no ES module and counts as the sources do', async () => {
    const log = await writeParquetLog({ accounts: ['acme', 'globex'], rows: 300, shape: 'strings', codec: 'snappy' });
    try {
      // Names, at exit, the internal modules of Node's ES module loader that were loaded.
      const probe = join(folder, 'esm-probe.js');
      writeFileSync(
        probe,
        "process.on('exit', () => process.stderr.write('esm-loader:' + process.moduleLoadList.filter((m) => /esm\\/(module_job|translators)/.test(m)).join(',') + '\\n'));\n",
      );
      const args = ['count', '--resolver', 'host-label', '--json', log.path];
      const built = await runTallyBin(args, { env: { ...process.env, NODE_OPTIONS: `--require ${probe}` } });
      expect(built.code).toBe(0);
      expect(built.stderr).toContain('esm-loader:\n');

      const io = captureIo();
      expect(await tallyCommand('count')(args.slice(1), io)).toBe(0);
      expect(JSON.parse(built.stdout)).toEqual(JSON.parse(io.stdout));
      expect(JSON.parse(built.stdout).lines.read).toBe(300);
    } finally {
      log.cleanup();
    }
  });
});
