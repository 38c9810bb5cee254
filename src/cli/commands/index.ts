import type { DeclaredCommand } from '../command';
import { adjustCommand } from './billing/adjust';
import { adjustmentsCommand, adjustmentsRevertCommand } from './billing/adjustments';
import { backfillCommand } from './ingest/backfill';
import { closeCommand } from './billing/close';
import { countCommand } from './ingest/count';
import { dlqDropCommand } from './dlq/dlq-drop';
import { dlqDroppedCommand } from './dlq/dlq-dropped';
import { dlqListCommand } from './dlq/dlq-list';
import { explainCommand } from './reading/explain';
import { planCommand } from './ingest/plan';
import { putCommand } from './ingest/put';
import { quotaCheckCommand, quotaListCommand, quotaRemoveCommand, quotaSetCommand } from './billing/quota';
import { reconcileCommand } from './ingest/reconcile';
import { statusCommand } from './ingest/status';
import { replayCommand } from './ingest/replay';
import { STRIPE_COMMANDS } from './billing/stripe';
import { tokenCommand } from './reading/token';
import { zoneClearCommand, zoneSetCommand, zoneShowCommand } from './reading/zone';

/**
 * Every `tally` command, in the order `tally --help` lists them. A command is one
 * declaration (see `../command.ts`); adapters that need the AWS SDK load inside `run`,
 * so `tally count` or `--help` never pays for the SDK.
 */
export const COMMANDS: readonly DeclaredCommand[] = [
  countCommand,
  tokenCommand,
  putCommand,
  replayCommand,
  dlqListCommand,
  dlqDropCommand,
  dlqDroppedCommand,
  backfillCommand,
  reconcileCommand,
  adjustCommand,
  adjustmentsCommand,
  adjustmentsRevertCommand,
  explainCommand,
  statusCommand,
  planCommand,
  closeCommand,
  quotaSetCommand,
  quotaListCommand,
  quotaRemoveCommand,
  quotaCheckCommand,
  zoneSetCommand,
  zoneShowCommand,
  zoneClearCommand,
  ...STRIPE_COMMANDS,
];
