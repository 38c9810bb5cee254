// Bundles the entry points with esbuild. Dependencies stay external (node_modules),
// so the DynamoDB Local jar and the emulator resolve from their own packages; the
// ES-module-only Parquet reader is bundled (scripts/bundled-packages.cjs says why).
import { build } from 'esbuild';
import bundledPackages from './bundled-packages.cjs';

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
  plugins: [bundledPackages.externalButBundled],
  sourcemap: 'linked',
  logLevel: 'warning',
});

// The dashboard: its files, its lib/ compiled with the domain rules it shares, uPlot.
// `npm start` serves dist/dashboard too.
import { buildDashboard } from './build-dashboard.mjs';

await buildDashboard();
