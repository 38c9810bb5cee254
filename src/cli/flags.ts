import { isValidDay } from '../domain/days';
import { ConfigError, describeError, ValidationError } from '../domain/errors';
import type { CliIo } from './io';

/** A required `YYYY-MM-DD` flag. */
export function dayFlag(value: string | undefined, name: string): string {
  if (value === undefined) throw new ValidationError(`${name} DAY is required (YYYY-MM-DD)`);
  if (!isValidDay(value)) throw new ValidationError(`${name} "${value}" is not a calendar day (YYYY-MM-DD)`);
  return value;
}

/**
 * Runs a command, turning a bad flag or setting (ValidationError, ConfigError, or
 * parseArgs' own errors) into its message and exit code 2; anything else propagates.
 */
export async function withUsageErrors(command: string, usage: string, io: CliIo, run: () => Promise<number>): Promise<number> {
  try {
    return await run();
  } catch (error) {
    const parseError = (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true;
    if (error instanceof ValidationError || error instanceof ConfigError || parseError) {
      io.err(`tally ${command}: ${error instanceof ValidationError || error instanceof ConfigError ? (error as Error).message : describeError(error)}\n`);
      if (parseError) io.err(`${usage}\n`);
      return 2;
    }
    throw error;
  }
}
