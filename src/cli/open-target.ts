import { createClients, type AwsClients } from '../adapters/clients';
import type { Env } from '../adapters/env';
import { LocalStackNotRunningError } from '../domain/errors';
import { resolveTarget, type OperatorTarget, type TargetFlags } from './operator-target';

/** A resolved target with its SDK clients. */
export interface OpenTarget {
  readonly target: OperatorTarget;
  readonly clients: AwsClients;
}

/**
 * Resolves the target and builds its SDK clients. Loaded on demand by the CLI, so a
 * command that needs no AWS (count, plan, token, --help) never loads the SDK.
 */
export function openTarget(flags: TargetFlags, env: Env, cwd: string): OpenTarget & { close(): void } {
  const target = resolveTarget(flags, env, cwd);
  const clients = createClients(target.config, target.credentials);
  if (target.localStack !== undefined) {
    const options = { step: 'deserialize', name: 'localStackNotRunning' } as const;
    clients.dynamodb.middlewareStack.add(refusedMeansNotRunning, options);
    clients.sqs.middlewareStack.add(refusedMeansNotRunning, options);
    clients.s3.middlewareStack.add(refusedMeansNotRunning, options);
  }
  return {
    target,
    clients,
    // Releases the clients' sockets so the process can exit at once.
    close() {
      clients.dynamodb.destroy();
      clients.sqs.destroy();
      clients.s3.destroy();
    },
  };
}

/**
 * On the local stack, a refused connection means nothing listens where
 * `.tally/local.json` points: the stack was stopped (or killed, leaving the file). The
 * SDK would retry it as a transient network error for seconds and then print a socket
 * error; this says what to do instead, at the first attempt. The refusal is not kept
 * as `cause`: the SDK's retry looks into causes and would retry it all the same.
 */
function refusedMeansNotRunning<Input extends object, Output extends object>(next: (args: Input) => Promise<Output>) {
  return async (args: Input): Promise<Output> => {
    try {
      return await next(args);
    } catch (error) {
      if (isRefused(error)) throw new LocalStackNotRunningError();
      throw error;
    }
  };
}

function isRefused(error: unknown): boolean {
  const { code, errors } = (error ?? {}) as { code?: unknown; errors?: unknown };
  // Node reports a refusal on every address it tried (IPv4 and IPv6) as an AggregateError.
  return code === 'ECONNREFUSED' || (Array.isArray(errors) && errors.some(isRefused));
}
