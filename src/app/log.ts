/**
 * The structured log the application writes to. Powertools' Logger satisfies it in
 * Lambda; the local stack and tests use {@link jsonLog} or {@link silentLog}.
 */
export interface Log {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** One JSON object per line on `write`, at `level` and above. */
export function jsonLog(write: (line: string) => void, level: Level = 'info', base: Record<string, unknown> = {}): Log {
  const emit = (at: Level) => (message: string, fields?: Record<string, unknown>) => {
    if (ORDER[at] < ORDER[level]) return;
    write(`${JSON.stringify({ level: at.toUpperCase(), timestamp: new Date().toISOString(), message, ...base, ...fields })}\n`);
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}

export const silentLog: Log = { debug() {}, info() {}, warn() {}, error() {} };

/** The message every reader logs when it skips a stored record of an unsupported day (see `skippedRecord`). */
export const SKIPPED_RECORD_MESSAGE = 'stored record skipped';

/**
 * `log` without the {@link SKIPPED_RECORD_MESSAGE} errors: for a caller that says each
 * skipped record itself, once, instead of on every scheduled run (`npm start`).
 */
export function withoutSkippedRecords(log: Log): Log {
  return { ...log, error: (message, fields) => (message === SKIPPED_RECORD_MESSAGE ? undefined : log.error(message, fields)) };
}
