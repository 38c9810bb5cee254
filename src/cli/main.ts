import { describeError } from '../domain/errors';
import { processIo, type CliIo } from './io';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

type Command = (argv: readonly string[], io: CliIo) => Promise<number>;

/** Subcommands load on demand so `tally count` never pays for the AWS SDK. */
const COMMANDS: Record<string, { summary: string; load: () => Promise<Command> }> = {
  count: {
    summary: 'count local CloudFront log files, no AWS needed',
    load: async () => (await import('./count')).runCount,
  },
  token: {
    summary: 'mint a bearer token for the usage read API',
    load: async () => (await import('./token')).runToken,
  },
  replay: {
    summary: 'move dead-lettered messages back to ingestion (or count them inline)',
    load: async () => (await import('./replay')).runReplay,
  },
  backfill: {
    summary: 'feed the log objects of a day range into ingestion again',
    load: async () => (await import('./backfill')).runBackfill,
  },
  reconcile: {
    summary: 'recount raw logs and compare with the counters; exit 1 on drift',
    load: async () => (await import('./reconcile')).runReconcile,
  },
  adjust: {
    summary: 'record an idempotent correction to an account-day metric',
    load: async () => (await import('./adjust')).runAdjust,
  },
  adjustments: {
    summary: "list an account's adjustments",
    load: async () => (await import('./adjust')).runAdjustments,
  },
  plan: {
    summary: 'size shards and history cap: item KB, WCU, writes/s, dedup horizon',
    load: async () => (await import('./plan')).runPlan,
  },
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, command]) => `  ${name.padEnd(12)} ${command.summary}`);
  return `usage: tally <command> [options]\n\ncommands:\n${lines.join('\n')}\n\nRun tally <command> --help for its options.\n`;
}

/** Runs the CLI; returns the exit code. */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.out(usage());
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  if (command === undefined) {
    io.err(`tally: unknown command "${name}"\n${usage()}`);
    return 2;
  }
  try {
    return await (await command.load())(rest, io);
  } catch (error) {
    io.err(`tally ${name}: ${error instanceof Error && error.name === 'Error' ? error.message : describeError(error)}\n`);
    return 1;
  }
}

/** Entry point of the `tally` binary. */
export function main(): void {
  runCli(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`tally: ${describeError(error)}\n`);
      process.exitCode = 1;
    },
  );
}

if (require.main === module) main();
