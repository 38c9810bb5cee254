import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { openLogFile } from '../../src/adapters/logs/log-opening';
import { parseResolverSpec } from '../../src/domain/logs/account-resolver';
import { countObject } from '../../src/domain/logs/log-formats';
import { validateMetricRules } from '../../src/domain/logs/metric-rules';
import { gzip, jsonLog, legacyLog, traffic } from '../support/log-formats';
import { parquetFromJsonLines } from '../support/parquet-logs';

const root = join(__dirname, '..', '..');

/** serverless.yml's esbuild settings (custom.esbuild), as the packaged Lambda is bundled. */
function lambdaBundleOptions(): { minify: boolean; keepNames: boolean; target: string; format: 'cjs'; platform: 'node' } {
  const section = readFileSync(join(root, 'serverless.yml'), 'utf8').split('\n  esbuild:\n')[1]!;
  const value = (key: string) => new RegExp(`^    ${key}: (.+)$`, 'm').exec(section)?.[1]?.trim();
  expect(value('bundle')).toBe('true');
  expect(value('exclude')).toBe('[]'); // every package is bundled
  return { minify: value('minify') === 'true', keepNames: value('keepNames') === 'true', target: value('target')!, format: 'cjs', platform: 'node' };
}

describe('the packaged Lambda bundle', () => {
  const folder = mkdtempSync(join(tmpdir(), 'tally-bundle-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it('counts legacy, JSON lines and Parquet logs (the WebAssembly scanners and the Parquet reader bundled) as the source does', async () => {
    const requests = traffic(3_000, ['acme', 'globex', 'initech']);
    const files = {
      legacy: join(folder, 'legacy.log.gz'),
      json: join(folder, 'v2.json.gz'),
      parquet: join(folder, 'v2.parquet'),
    };
    writeFileSync(files.legacy, gzip(legacyLog(requests)));
    writeFileSync(files.json, gzip(jsonLog(requests)));
    writeFileSync(files.parquet, await parquetFromJsonLines(jsonLog(requests), 'snappy', 1000));
    const bundle = join(folder, 'count.js');
    buildSync({ ...lambdaBundleOptions(), entryPoints: [join(root, 'test', 'support', 'bundle-count-entry.ts')], bundle: true, outfile: bundle, logLevel: 'error' });

    const output = execFileSync(process.execPath, [bundle, files.legacy, files.json, files.parquet], { encoding: 'utf8' });
    const expected: string[] = [];
    for (const file of Object.values(files)) {
      for (const metricRules of [[], validateMetricRules([{ name: 'authorization_requests', path: '/api/authorization/*' }])]) {
        const count = await countObject(await openLogFile(file), { resolver: parseResolverSpec('host-label'), metricRules }, file, file);
        expected.push(JSON.stringify({ format: count.format, lines: count.lines, usage: count.tally.usage() }));
      }
    }

    expect(output.trim().split('\n')).toEqual(expected);
    expect(output).toContain('"format":"parquet"');
    expect(output).toContain('"format":"json"');
    expect(JSON.parse(output.split('\n')[0]!).lines.read).toBe(3_000);
  });
});
