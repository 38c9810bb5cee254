import type { DeclaredCommand } from '../command';
import { adjustCommand } from './adjust';
import { adjustmentsCommand, adjustmentsRevertCommand } from './adjustments';
import { backfillCommand } from './backfill';
import { closeCommand } from './close';
import { countCommand } from './count';
import { dlqDropCommand } from './dlq-drop';
import { dlqDroppedCommand } from './dlq-dropped';
import { dlqListCommand } from './dlq-list';
import { explainCommand } from './explain';
import { planCommand } from './plan';
import { putCommand } from './put';
import { quotaCheckCommand, quotaListCommand, quotaRemoveCommand, quotaSetCommand } from './quota';
import { reconcileCommand } from './reconcile';
import { statusCommand } from './status';
import { replayCommand } from './replay';
import { STRIPE_COMMANDS } from './stripe';
import { tokenCommand } from './token';
import { zoneClearCommand, zoneSetCommand, zoneShowCommand } from './zone';

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
