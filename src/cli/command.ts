import { userInfo } from 'node:os';
import type { Env } from '../adapters/env';
import type { CliIo } from './io';
import type { OpenTarget } from './open-target';
import type { TargetFlags } from './operator-target';
import { concurrency, day, recordText, type ValueReader } from './values';

/** What a command runs with: where it writes, its environment and working directory. */
export interface CliContext {
  readonly io: CliIo;
  readonly env: Env;
  readonly cwd: string;
  /** Today for the future-day checks; tests pin it. */
  readonly now: () => Date;
}

/**
 * One option of a command, declared once: parsing, `--help` and validation all come
 * from here.
 */
export interface OptionDeclaration {
  /** Commander's flags: `--from <day>` takes a value, `--json` is a switch. */
  readonly flags: string;
  /** The line `--help` shows. */
  readonly help: string;
  /** Reads and checks the value (after parsing, defaults included); a bad value exits 2. */
  readonly read?: ValueReader<unknown>;
  /** The command cannot run without it (exit 2 when missing; `--help` marks it "required"). */
  readonly required?: boolean;
  /** The value when the flag is absent, as text (read by `read` like a given one). */
  readonly default?: string;
  /** May be given more than once; the values are collected in order. */
  readonly repeatable?: boolean;
  /** The heading `--help` lists it under (default: "Options:"). */
  readonly group?: string;
}

/** A positional argument, such as the files of `tally count`. */
export interface ArgumentDeclaration {
  /** `<file...>`: required and variadic; `[file]`: optional. */
  readonly name: string;
  readonly help: string;
}

/** The counting settings a command that works on a target may take as flags. */
export type CountingSetting = 'resolver' | 'metrics';

/** What a command's `run` receives. */
export interface CommandRun<Options> {
  /** Parsed and validated options, by camel-cased name (`--dry-run` is `dryRun`). */
  readonly options: Options;
  /** Positional arguments. */
  readonly args: readonly string[];
  readonly context: CliContext;
  /**
   * Resolves the target (flags, environment, local stack) and opens its SDK clients,
   * once; they are closed when the command ends. `overrides` win over the flags.
   * Only commands that declare a `target` may call it.
   */
  target(overrides?: Partial<TargetFlags>): Promise<OpenTarget>;
}

/**
 * A command, described once. The CLI derives from it the parser, `--help`, the exit
 * codes (bad flag or value: 2; `run`'s own code otherwise; a failure: 1) and, for
 * commands with a `target`, the target flags and the SDK clients.
 *
 * @example
 * ```ts
 * export const reconcileCommand = defineCommand<{ from: string; to: string }>({
 *   name: 'reconcile', summary: '...', description: '...',
 *   options: [{ flags: '--from <day>', help: 'first day', read: day, required: true }, ...],
 *   target: { settings: ['resolver', 'metrics'] },
 *   check: checkDayRange,
 *   async run({ options, target }) { const { clients } = await target(); ... return 0; },
 * });
 * ```
 */
export interface CommandDeclaration<Options = Record<string, unknown>> {
  /** The word after `tally` (or after the group's: `list` in `tally dlq list`). */
  readonly name: string;
  /** Present for a subcommand: `tally <group> <name>`. */
  readonly group?: CommandGroup;
  /** One line in `tally --help`. */
  readonly summary: string;
  /** The paragraph at the top of `tally <name> --help`. */
  readonly description: string;
  readonly arguments?: readonly ArgumentDeclaration[];
  readonly options: readonly OptionDeclaration[];
  /** Present when the command works on a table, queue or bucket (locally or on AWS). */
  readonly target?: { readonly settings: readonly CountingSetting[] };
  /** Text after the options in `--help` (examples, caveats). */
  readonly notes?: string;
  /** Checks across options (e.g. `--to` not before `--from`); throws ValidationError. */
  check?(options: Options): void;
  /** Does the work; returns the exit code. */
  run(run: CommandRun<Options>): Promise<number>;
}

/** Subcommands under one word, such as `tally dlq list|drop|dropped`; `tally <group> --help` lists them. */
export interface CommandGroup {
  readonly name: string;
  /** One line in `tally --help`. */
  readonly summary: string;
  /** The paragraph at the top of `tally <group> --help`. */
  readonly description: string;
}

/** How a command is called after `tally`: `replay`, or `dlq list` for a subcommand. */
export function commandPath(declaration: Pick<CommandDeclaration<never>, 'name' | 'group'>): string {
  return declaration.group === undefined ? declaration.name : `${declaration.group.name} ${declaration.name}`;
}

/**
 * A declaration whatever its options' type, as the registry and the program hold them
 * (`never`: only the declaration's own `run` and `check` read its options).
 */
export type DeclaredCommand = CommandDeclaration<never>;

/** Declares a command (an identity function that lets TypeScript check the declaration). */
export function defineCommand<Options>(declaration: CommandDeclaration<Options>): CommandDeclaration<Options> {
  return declaration;
}

/** The longest `--actor` (a login name, an email address) a record keeps. */
export const MAX_ACTOR_LENGTH = 128;

/** `--actor`: who did it, for the records an operator's action leaves. */
export const ACTOR_OPTION: OptionDeclaration = { flags: '--actor <name>', help: `who does it, for the record (default $USER, else the system login name; at most ${MAX_ACTOR_LENGTH} characters)`, read: recordText(MAX_ACTOR_LENGTH) };

/**
 * The login name of the user running the process, from the operating system's user
 * database (a container often sets no `$USER`). `undefined` when there is none to read:
 * `os.userInfo()` throws when the uid has no entry (https://nodejs.org/api/os.html#osuserinfooptions).
 */
export function systemLoginName(readUser: () => { username: string } = userInfo): string | undefined {
  try {
    return readUser().username;
  } catch {
    return undefined;
  }
}

/**
 * The actor a command records: `--actor`, else the login name the environment gives
 * (`$USER`, `$USERNAME`, `$LOGNAME`), else the operating system's, cut to {@link MAX_ACTOR_LENGTH};
 * `unknown` only when none names anyone.
 */
export function actorOf(flag: string | undefined, env: Env, loginName: () => string | undefined = () => systemLoginName()): string {
  if (flag !== undefined) return flag;
  const named = [env.USER, env.USERNAME, env.LOGNAME].find((name) => name !== undefined && name.trim() !== '') ?? loginName()?.trim();
  return named === undefined || named === '' ? 'unknown' : named.slice(0, MAX_ACTOR_LENGTH);
}

/** Options every command with `--json` declares the same way. */
export const JSON_OPTION: OptionDeclaration = { flags: '--json', help: 'print the report as JSON' };

/** `--from` and `--to`, both required days; `days` says which days they name ("days to compare"). */
export function dayRangeOptions(days: string): OptionDeclaration[] {
  return [
    { flags: '--from <day>', help: `first of the ${days} (YYYY-MM-DD)`, read: day, required: true },
    { flags: '--to <day>', help: `last of the ${days}, included (YYYY-MM-DD)`, read: day, required: true },
  ];
}

/** `--concurrency`, 1 to 64 (default 4): how many `units` are worked on at once. */
export function concurrencyOption(units: string): OptionDeclaration {
  return { flags: '--concurrency <n>', help: `${units} worked on at once, 1 to 64`, read: concurrency, default: '4' };
}
