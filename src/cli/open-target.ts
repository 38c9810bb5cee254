import { createClients, type AwsClients } from '../adapters/clients';
import type { Env } from '../adapters/env';
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
