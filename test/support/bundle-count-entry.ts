/**
 * The counting path of the ingest Lambda (content told by its bytes, every format), as
 * an entry point that test/unit/lambda-bundle.test.ts bundles the way serverless.yml's
 * esbuild settings bundle the handler, then runs: `node bundle.js FILE...` prints one
 * JSON line per file (its line counts and usage).
 */
import { openLogFile } from '../../src/adapters/logs/log-opening';
import { parseResolverSpec } from '../../src/domain/logs/account-resolver';
import { countObject } from '../../src/domain/logs/log-formats';
import { validateMetricRules } from '../../src/domain/logs/metric-rules';

async function main(): Promise<void> {
  for (const file of process.argv.slice(2)) {
    for (const metricRules of [[], validateMetricRules([{ name: 'authorization_requests', path: '/api/authorization/*' }])]) {
      const count = await countObject(await openLogFile(file), { resolver: parseResolverSpec('host-label'), metricRules }, file, file);
      process.stdout.write(`${JSON.stringify({ format: count.format, lines: count.lines, usage: count.tally.usage() })}\n`);
    }
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exitCode = 1;
});
