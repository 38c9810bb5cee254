/**
 * The error family of Tally. Every error names what failed (a message id, an object,
 * a configuration variable) so that an operator reading the DLQ or a log line knows
 * where to look without a debugger.
 */
export class TallyError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TallyError';
  }
}

/** An SQS message that is not a notification Tally understands. Retrying cannot help. */
export class PoisonMessageError extends TallyError {
  constructor(
    readonly messageId: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`message ${messageId}: ${reason}`, options);
    this.name = 'PoisonMessageError';
  }
}

/** A log object that cannot be read as a CloudFront log (not gzip, no #Fields, gone). */
export class PoisonObjectError extends TallyError {
  constructor(
    readonly object: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`object ${object}: ${reason}`, options);
    this.name = 'PoisonObjectError';
  }
}

/** A configuration value is missing or invalid; names the variable. */
export class ConfigError extends TallyError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConfigError';
  }
}

/** A caller asked for something that cannot be valid (bad date, bad account id). */
export class ValidationError extends TallyError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ValidationError';
  }
}

/** A dependency kept failing with retryable errors until the retry budget ran out. */
export class RetryBudgetExhaustedError extends TallyError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RetryBudgetExhaustedError';
  }
}

/** Returns the message of anything thrown, for logs and reports. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
