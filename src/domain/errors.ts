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
    /** What is wrong with it, without the object's name. */
    readonly reason: string,
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

/** Why a bearer token was refused; the API answers 401 with this code. */
export type AuthenticationFailure = 'missing_token' | 'invalid_token' | 'token_expired';

/**
 * A request carried no usable bearer token: none, malformed, badly signed, for another
 * audience or issuer, expired or not yet valid. `message` is safe to show the caller;
 * it never contains the token.
 */
export class AuthenticationError extends TallyError {
  constructor(
    readonly failure: AuthenticationFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'AuthenticationError';
  }
}

/**
 * The account asked for is unknown to the caller: it does not exist or the token may
 * not read it. Both cases are one error so that the answers cannot be told apart.
 */
export class AccountNotFoundError extends TallyError {
  constructor(options?: { cause?: unknown }) {
    super('account not found', options);
    this.name = 'AccountNotFoundError';
  }
}

/** The token is valid but lacks the scope a route needs (the operator ranking needs an admin token). */
export class ForbiddenError extends TallyError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ForbiddenError';
  }
}

/** A dependency kept failing with retryable errors until the retry budget ran out. */
export class RetryBudgetExhaustedError extends TallyError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RetryBudgetExhaustedError';
  }
}

/**
 * A log object changed while it was being read in parts (a Parquet file read by ranges
 * was overwritten): counting it would mix two versions. Retryable: the next attempt
 * asks again for the version its notification announced, and finds it gone (a poison
 * object: the new version is counted from its own notification).
 */
export class ObjectChangedError extends TallyError {
  constructor(
    readonly object: string,
    options?: { cause?: unknown },
  ) {
    super(`object ${object} changed while it was read (its ETag no longer matches); the retry asks for the announced version again`, options);
    this.name = 'ObjectChangedError';
  }
}

/** Returns the message of anything thrown, for logs and reports. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

/**
 * An adjustment id is already recorded with other content (day, metric, delta or
 * reason). Reusing an id for a different correction would silently drop one of them.
 */
export class AdjustmentConflictError extends TallyError {
  constructor(
    readonly adjustmentId: string,
    readonly differences: readonly string[],
    options?: { cause?: unknown },
  ) {
    super(`adjustment ${adjustmentId} is already recorded with different content (${differences.join('; ')}); choose a new id`, options);
    this.name = 'AdjustmentConflictError';
  }
}

/**
 * `npm start` found another stack holding the same `.tally` folder: two DynamoDB Locals
 * on one set of files would corrupt them, so the second start stops before touching anything.
 */
export class StackAlreadyRunningError extends TallyError {
  constructor(
    readonly pid: number,
    /** The running stack's dashboard, once it is ready. */
    readonly dashboard?: string,
    options?: { cause?: unknown },
  ) {
    super(`already running (pid ${pid}, ${dashboard === undefined ? 'still starting' : `dashboard ${dashboard}`})`, options);
    this.name = 'StackAlreadyRunningError';
  }
}

/** An operator command's local target (`.tally/local.json`) refused the connection: nothing listens there any more. */
export class LocalStackNotRunningError extends TallyError {
  constructor(options?: { cause?: unknown }) {
    super('the local stack is not running; start it with npm start', options);
    this.name = 'LocalStackNotRunningError';
  }
}
