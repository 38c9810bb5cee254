import { Command, CommanderError, Option } from 'commander';
import { version } from '../../package.json';
import { ConfigError, ValidationError } from '../domain/errors';
import { printable } from '../domain/printable';
import { commandPath, type CliContext, type CommandGroup, type CommandRun, type DeclaredCommand, type OptionDeclaration } from './command';
import type { OpenTarget } from './open-target';
import { COUNTING_OPTIONS, TARGET_OPTIONS, targetFlagsOf } from './target-options';

/** Exit codes every command shares; README documents them. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** Commander's outcomes that are not errors. */
const DONE_CODES = new Set(['commander.helpDisplayed', 'commander.version']);

/**
 * The message alone: users see "no such file", never "TypeError: no such file". Control
 * characters other than line breaks and tabs (an escape sequence in a file name or a value
 * a message quotes) are shown as `?`: an error line never repaints the terminal.
 */
function messageOf(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '?');
}

/** Bad input from the user: a flag, a value or a setting. Exit 2. */
function isUsageError(error: unknown): boolean {
  return error instanceof ValidationError || error instanceof ConfigError;
}

/** Every option of a declared command, its target and counting flags included. */
export function optionsOf(declaration: DeclaredCommand): OptionDeclaration[] {
  return [
    ...declaration.options,
    ...(declaration.target === undefined
      ? []
      : [...Object.values(TARGET_OPTIONS), ...declaration.target.settings.map((setting) => COUNTING_OPTIONS[setting])]),
  ];
}

/** An option pair: the declaration and the commander option built from it. */
interface BuiltOption {
  readonly declaration: OptionDeclaration;
  readonly option: Option;
  /** Every value the command line gave a value option that is not repeatable, in order (commander keeps the last). */
  readonly given: string[];
}

/**
 * The commander option for a declaration: flags, help, default, collection of repeats, help
 * group; the values given to a non-repeatable value option are noted in `given`.
 */
function commanderOption(declaration: OptionDeclaration, given: string[]): Option {
  const option = new Option(declaration.flags, declaration.required === true ? `${declaration.help} (required)` : declaration.help);
  if (declaration.default !== undefined) option.default(declaration.default, declaration.default);
  if (declaration.repeatable === true) option.argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]);
  else if (option.required || option.optional) option.argParser((value: string) => (given.push(value), value));
  if (declaration.group !== undefined) option.helpGroup(declaration.group);
  return option;
}

/** Applies each option's reader to its parsed text (a bad value throws ValidationError); refuses a value option given twice with different values. */
function readOptions(raw: Record<string, unknown>, options: readonly BuiltOption[]) {
  const values: Record<string, unknown> = { ...raw };
  for (const { declaration, option, given } of options) {
    const name = option.attributeName();
    const value = raw[name];
    const flag = option.long ?? option.flags;
    // `--delta 500 --delta -500`: commander keeps the last, silently; the same value twice is harmless.
    if (new Set(given).size > 1) {
      const shown = [...new Set(given)].slice(0, 3).map((text) => `"${printable(text)}"`);
      throw new ValidationError(`${flag} is given ${given.length} times with different values (${shown.join(', ')}${new Set(given).size > 3 ? ', ...' : ''}): give it once`);
    }
    // Checked here rather than by commander, so that an unknown flag is reported first.
    if (declaration.required === true && value === undefined) throw new ValidationError(`${option.flags} is required`);
    const read = declaration.read;
    if (read === undefined || value === undefined) continue;
    values[name] = Array.isArray(value) ? value.map((text: string) => read(text, flag)) : read(value as string, flag);
  }
  return values;
}

/**
 * Builds the `tally` program from command declarations: one commander command each,
 * with its options, help and checks. `record` receives each run's exit code.
 */
function buildProgram(declarations: readonly DeclaredCommand[], context: CliContext, record: (code: number) => void): Command {
  const { io } = context;
  const program = new Command('tally')
    .description('Idempotent usage metering: CloudFront logs in S3 -> SQS -> Lambda -> exactly-once per-account-day counters in DynamoDB.')
    .version(version, '-V, --version', 'print the version of tally')
    .helpOption('-h, --help', 'show help')
    .exitOverride()
    .showSuggestionAfterError(true)
    .configureOutput({ writeOut: (text) => io.out(text), writeErr: (text) => io.err(text) })
    .addHelpText('after', '\nExit codes: 0 all went well; 1 something failed or drifted; 2 a bad flag, value or setting.\nRun tally <command> --help for its options.');

  const groups = new Map<string, Command>();
  const parentOf = (group: CommandGroup | undefined): Command => {
    if (group === undefined) return program;
    let parent = groups.get(group.name);
    // A group under a command of the same word (`tally adjustments revert` under `tally adjustments`):
    // the command's options stop at the subcommand's name, so the subcommand reads its own (the program's
    // too: else it hands the command its options apart from the words, and the command takes --account).
    const command = parent ?? program.commands.find((candidate) => candidate.name() === group.name);
    if (parent === undefined && command !== undefined) {
      program.enablePositionalOptions();
      parent = command.enablePositionalOptions();
      groups.set(group.name, parent);
    }
    if (parent === undefined) {
      parent = program
        .command(group.name)
        .summary(group.summary)
        .description(group.description)
        .helpOption('-h, --help', 'show help')
        .configureOutput(outputOf(group.name));
      groups.set(group.name, parent);
    }
    return parent;
  };
  const outputOf = (path: string) => ({
    writeOut: (text: string) => io.out(text),
    writeErr: (text: string) => io.err(text),
    outputError: (text: string, write: (text: string) => void) =>
      write(`tally ${path}: ${text.replace(/^error: /, '')}(tally ${path} --help lists its options)\n`),
  });

  for (const declaration of declarations) {
    const command = parentOf(declaration.group)
      .command(declaration.name)
      .summary(declaration.summary)
      .description(declaration.description)
      .helpOption('-h, --help', 'show help')
      .configureOutput(outputOf(commandPath(declaration)));
    for (const argument of declaration.arguments ?? []) command.argument(argument.name, argument.help);
    const options = optionsOf(declaration).map((option) => {
      const given: string[] = [];
      return { declaration: option, option: commanderOption(option, given), given };
    });
    for (const { option } of options) command.addOption(option);
    if (declaration.notes !== undefined) command.addHelpText('after', `\n${declaration.notes}`);
    command.action(async () => record(await execute(declaration, command, options, context)));
  }
  return program;
}

/** Runs one declared command: reads and checks its options, opens its target on demand, maps errors to exit codes. */
async function execute(
  declaration: DeclaredCommand,
  command: Command,
  options: readonly BuiltOption[],
  context: CliContext,
): Promise<number> {
  let opened: (OpenTarget & { close(): void }) | undefined;
  try {
    const values = readOptions(command.opts(), options);
    declaration.check?.(values as never);
    const run: CommandRun<never> = {
      options: values as never,
      args: command.args,
      context,
      async target(overrides = {}) {
        if (declaration.target === undefined) throw new Error(`tally ${commandPath(declaration)} declares no target`);
        if (opened === undefined) {
          const { openTarget } = await import('./open-target');
          opened = openTarget({ ...targetFlagsOf(values), ...overrides }, context.env, context.cwd);
        }
        return opened;
      },
    };
    return await declaration.run(run);
  } catch (error) {
    if (opened !== undefined) {
      // Loaded with the target already: a command without one never pays for it.
      const { isMissingCredentials, missingCredentialsMessage } = await import('./operator-target');
      if (isMissingCredentials(error)) {
        context.io.err(`tally ${commandPath(declaration)}: ${missingCredentialsMessage(opened.target, error)}\n`);
        return EXIT.usage;
      }
    }
    context.io.err(`tally ${commandPath(declaration)}: ${messageOf(error)}\n`);
    return isUsageError(error) ? EXIT.usage : EXIT.failed;
  } finally {
    opened?.close();
  }
}

/**
 * Parses `argv` (without `node tally`) against the declarations and runs the command
 * it names; returns the exit code: 0 done, 1 failed, 2 bad command, flag or value
 * (`tally` alone prints the usage and exits 2).
 */
export async function runDeclaredCommands(
  declarations: readonly DeclaredCommand[],
  argv: readonly string[],
  context: CliContext,
): Promise<number> {
  let code: number = EXIT.ok;
  const program = buildProgram(declarations, context, (result) => (code = result));
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    return DONE_CODES.has(error.code) ? EXIT.ok : EXIT.usage;
  }
}

/** The commander program for the declarations, for tests that walk every command. */
export function describeProgram(declarations: readonly DeclaredCommand[], context: CliContext): Command {
  return buildProgram(declarations, context, () => undefined);
}
