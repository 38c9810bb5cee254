/**
 * How the count benches run their measured children: each child bundled once with
 * esbuild, then started afresh per run, so that its CPU time and peak RSS are its alone.
 */
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';

const run = promisify(execFile);

/** Bundles `bench/<name>.ts` into node_modules/.cache (so DuckDB, left external, resolves from the project); answers the file to run. */
export async function bundleChild(name: string): Promise<string> {
  const folder = join(__dirname, '..', 'node_modules', '.cache', 'tally-bench');
  const outfile = join(folder, `${name}.js`);
  mkdirSync(folder, { recursive: true });
  await build({
    entryPoints: [join(__dirname, `${name}.ts`)],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    // DuckDB's native binding loads from node_modules; everything Tally runs is bundled.
    external: ['@duckdb/*'],
    logLevel: 'warning',
  });
  return outfile;
}

/** One run of a bundled child (`node CHILD WAY FILE`): the JSON line it printed last. */
export async function measureChild<T>(child: string, way: string, path: string): Promise<T> {
  const { stdout } = await run(process.execPath, [child, way, path], { cwd: join(__dirname, '..'), maxBuffer: 1024 * 1024 });
  return JSON.parse(stdout.trim().split('\n').pop()!) as T;
}
