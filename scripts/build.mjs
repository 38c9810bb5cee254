// Bundles the entry points with esbuild. Dependencies stay external (node_modules),
// so the DynamoDB Local jar and the emulator resolve from their own packages.
import { build } from 'esbuild';

const entryPoints = {
  cli: 'src/cli/main.ts',
  local: 'src/local/main.ts',
};

await build({
  entryPoints,
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
});

// The dashboard is static: its files plus uPlot (and its licence), deployable as they
// are to any static host; `npm start` serves this directory too.
import { cpSync, mkdirSync, rmSync } from 'node:fs';

rmSync('dist/dashboard', { recursive: true, force: true });
cpSync('src/dashboard', 'dist/dashboard', { recursive: true });
mkdirSync('dist/dashboard/vendor', { recursive: true });
for (const file of ['dist/uPlot.iife.min.js', 'dist/uPlot.min.css', 'LICENSE']) {
  cpSync(`node_modules/uplot/${file}`, `dist/dashboard/vendor/${file.replace('dist/', '').replace('LICENSE', 'uPlot.LICENSE')}`);
}
