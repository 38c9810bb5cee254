/**
 * `npm run bench` (full) and `npm run bench -- --quick` (under two minutes): Tally
 * side by side with the alternatives, in one process run. Prints one summary table
 * and writes bench/results.md with the machine, date and commit. Progress goes to
 * stderr; the table to stdout. `--quick` and `--only 1,3` (some items) print the
 * table without touching bench/results.md; `--out FILE` writes their markdown there.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startLocalStack, type LocalStack } from '../src/local/stack';
import { runCostGrowth } from './cost-growth';
import { runEndToEnd } from './end-to-end';
import { runHistoryReads } from './history-reads';
import { runIncrementCost } from './increment-cost';
import { runHourSumsCost } from './hour-sums-cost';
import { loadNow, machineInfo } from './machine';
import { runCountFloorBench } from './count-floor';
import { runFormatCountBench } from './format-count';
import { resultsMarkdown, summaryTable, type BenchResults } from './report';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

interface Settings {
  readonly count: { rounds: number; mebibytes: number; memoryMebibytes: number };
  readonly formats: { rounds: number; rows: number };
  readonly increments: { rounds: number; objects: number; accounts: number };
  readonly endToEnd: { rounds: number; objects: number; linesPerObject: number };
  readonly readRounds: number;
  readonly growthSample: number;
  readonly hours: { rounds: number; objects: number; accounts: number };
}

const FULL: Settings = {
  count: { rounds: 11, mebibytes: 320, memoryMebibytes: 1024 },
  formats: { rounds: 5, rows: 900_000 },
  increments: { rounds: 5, objects: 300, accounts: 5 },
  endToEnd: { rounds: 7, objects: 150, linesPerObject: 2_000 },
  readRounds: 15,
  growthSample: 20,
  hours: { rounds: 5, objects: 288, accounts: 4 },
};

const QUICK: Settings = {
  count: { rounds: 3, mebibytes: 320, memoryMebibytes: 320 },
  formats: { rounds: 3, rows: 900_000 },
  increments: { rounds: 3, objects: 60, accounts: 5 },
  endToEnd: { rounds: 3, objects: 40, linesPerObject: 2_000 },
  readRounds: 5,
  growthSample: 6,
  hours: { rounds: 3, objects: 96, accounts: 4 },
};

function parseArgs(argv: readonly string[]): { quick: boolean; only: Set<number> | undefined; out: string | undefined } {
  const quick = argv.includes('--quick');
  const onlyAt = argv.indexOf('--only');
  const only = onlyAt === -1 ? undefined : new Set((argv[onlyAt + 1] ?? '').split(',').map(Number));
  const outAt = argv.indexOf('--out');
  return { quick, only, out: outAt === -1 ? undefined : argv[outAt + 1] };
}

const progress = (line: string) => process.stderr.write(`${line}\n`);

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const settings = args.quick ? QUICK : FULL;
  const wanted = (item: number) => args.only === undefined || args.only.has(item);
  const machine = machineInfo();
  const started = Date.now();
  progress(`tally bench (${args.quick ? 'quick' : 'full'}): ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}, load ${machine.loadAtStart.toFixed(1)}`);
  const results: { -readonly [K in keyof BenchResults]: BenchResults[K] } = {
    mode: args.quick ? 'quick' : 'full',
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    machine,
    loadAtEnd: 0,
    seconds: 0,
  };

  // Counting first, before DynamoDB Local's JVM starts competing for the cores.
  if (wanted(1)) results.count = await runCountFloorBench(settings.count, progress);
  if (wanted(6)) results.formats = await runFormatCountBench(settings.formats, progress);

  let stack: LocalStack | undefined;
  const stop = async () => {
    const running = stack;
    stack = undefined;
    await running?.stop();
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void stop().finally(() => process.exit(130));
    });
  }
  try {
    if (wanted(2) || wanted(3) || wanted(4) || wanted(5) || wanted(7)) {
      progress('starting DynamoDB Local and the SQS/S3 emulator');
      stack = await startLocalStack();
    }
    if (stack && wanted(2)) {
      results.increments = await runIncrementCost(
        stack.clients.dynamodb,
        { usage: stack.info.table, idempotency: 'tally-bench-idempotency' },
        { ...settings.increments, duplicateRate: 0.1, objectConcurrency: 4, incrementConcurrency: 8 },
        progress,
      );
    }
    if (stack && wanted(3)) results.endToEnd = await runEndToEnd(stack, { ...settings.endToEnd, accounts: 6, pollers: 2 }, progress);
    if (stack && wanted(4)) results.reads = await runHistoryReads(stack.clients.dynamodb, stack.info.table, settings.readRounds, progress);
    if (stack && wanted(7)) results.hours = await runHourSumsCost(stack.clients.dynamodb, stack.info.table, settings.hours, progress);
    if (stack && wanted(5)) results.growth = { rows: await runCostGrowth(stack.clients.dynamodb, stack.info.table, settings.growthSample, progress) };
  } finally {
    await stop();
  }
  results.loadAtEnd = loadNow();
  results.seconds = (Date.now() - started) / 1000;

  // Only a full run of every item may replace the committed results.
  const out = args.out ?? (args.only === undefined && !args.quick ? join(__dirname, 'results.md') : undefined);
  if (out !== undefined) {
    writeFileSync(out, resultsMarkdown(results));
    progress(`wrote ${out} (${results.seconds.toFixed(0)} s)`);
  }
  process.stdout.write(`${summaryTable(results)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`tally bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
