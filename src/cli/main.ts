import { COMMANDS } from './commands';
import type { CliContext } from './command';
import { processIo } from './io';
import { runDeclaredCommands } from './program';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/**
 * Runs `tally` with `argv` (the words after `tally`); returns the exit code. Tests pass
 * their own io, environment, working directory and clock.
 */
export function runCli(argv: readonly string[], context: Partial<CliContext> = {}): Promise<number> {
  return runDeclaredCommands(COMMANDS, argv, {
    io: context.io ?? processIo,
    env: context.env ?? process.env,
    cwd: context.cwd ?? process.cwd(),
    now: context.now ?? (() => new Date()),
  });
}

/** Entry point of the `tally` binary. */
export function main(): void {
  runCli(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`tally: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}

if (require.main === module) main();
