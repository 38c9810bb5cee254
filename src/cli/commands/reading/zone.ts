import { accountZoneName, parseAccountZone, type AccountZone } from '../../../domain/reading/account-zone';
import { dayOf } from '../../../domain/days';
import { ValidationError } from '../../../domain/errors';
import { actorOf, ACTOR_OPTION, defineCommand, JSON_OPTION, type CommandGroup, type OptionDeclaration } from '../../command';
import type { OpenTarget } from '../../open-target';
import { accountId, type ValueReader } from '../../values';

/** `tally zone set|clear|show`: an account's billing time zone, which the read API names and the dashboard offers. */
export const ZONE_GROUP: CommandGroup = {
  name: 'zone',
  summary: "an account's billing time zone, offered by the dashboard",
  description:
    "Sets, clears and shows an account's billing time zone (one item in the usage table). The read API names it " +
    'in the usage report (accountTimeZone) and the dashboard offers it beside the browser\'s zone and UTC; the API ' +
    'still answers in UTC unless a request asks for tz. Closed days, revisions and Stripe stay on UTC days. See docs/api.md.',
};

const ACCOUNT: OptionDeclaration = { flags: '--account <id>', help: 'the account', read: accountId, required: true };

/** A zone name the platform knows; the whole-hour check needs today, so `run` makes it before opening the target. */
const zoneName: ValueReader<string> = (text, flag) => accountZoneName(text, flag);

/** `tally zone set`: exit 0 when stored, 2 when the zone is refused (the read API's reason). */
export const zoneSetCommand = defineCommand<{ account: string; zone: string; actor?: string; force?: boolean; dryRun?: boolean; json?: boolean }>({
  name: 'set',
  group: ZONE_GROUP,
  summary: "set an account's billing time zone",
  description:
    "Stores an account's billing time zone, replacing an earlier one. The zone must be one the read API can answer in: " +
    'an IANA name the platform knows (any case; stored as the API spells it) whose offset from UTC is a whole number of ' +
    'hours all through the half year before and after today. Asia/Kolkata (+05:30), Asia/Kathmandu (+05:45) and ' +
    'Australia/Lord_Howe (+10:30 half the year) are refused (exit 2) with the reason the API gives for tz. An account ' +
    'with no measured usage (a mistyped id?) is refused (exit 2) unless --force, as by tally quota set.',
  options: [
    ACCOUNT,
    { flags: '--zone <name>', help: 'an IANA time zone such as America/New_York, Europe/Berlin or UTC', read: zoneName, required: true },
    ACTOR_OPTION,
    { flags: '--force', help: 'set it for an account with no measured usage (yet)' },
    { flags: '--dry-run', help: 'check the zone and show what would change; write nothing' },
    JSON_OPTION,
  ],
  target: { settings: [] },
  async run({ options, context: { io, env, now }, target }) {
    const zone = parseAccountZone(options.zone, '--zone', dayOf(now()));
    const open = await target();
    if (options.force !== true) await requireMeasuredAccount(open, options.account);
    const zones = await zoneStore(open);
    const change: AccountZone = { account: options.account, zone, updatedAt: now().toISOString(), updatedBy: actorOf(options.actor, env) };
    const dryRun = options.dryRun === true;
    const previous = dryRun ? await zones.get(options.account) : await zones.set(change);
    if (options.json === true) {
      io.out(`${JSON.stringify({ zone: change, previous: previous ?? null, ...(dryRun ? { dryRun: true } : {}) })}\n`);
      return 0;
    }
    const was = previous === undefined ? '' : ` (was ${previous.zone})`;
    io.out(
      dryRun
        ? `dry run: would set ${options.account}'s zone to ${zone}${was} in ${open.target.config.tableName}; nothing written\n`
        : `zone set: ${options.account} ${zone}${was}\n`,
    );
    return 0;
  },
});

/** `tally zone clear`: exit 0 whether or not there was one (the output says which), as `tally quota remove`. */
export const zoneClearCommand = defineCommand<{ account: string; json?: boolean }>({
  name: 'clear',
  group: ZONE_GROUP,
  summary: "remove an account's billing time zone",
  description: 'Removes the stored zone: the usage report no longer names one, and the dashboard offers the browser\'s zone and UTC.',
  options: [ACCOUNT, JSON_OPTION],
  target: { settings: [] },
  async run({ options, context: { io }, target }) {
    const removed = await (await zoneStore(await target())).clear(options.account);
    if (options.json === true) io.out(`${JSON.stringify({ removed: removed ?? null })}\n`);
    else io.out(removed === undefined ? `${options.account} has no zone: nothing removed\n` : `zone cleared: ${options.account} (was ${removed.zone})\n`);
    return 0;
  },
});

/** `tally zone show`: exit 0, with the zone or saying there is none. */
export const zoneShowCommand = defineCommand<{ account: string; json?: boolean }>({
  name: 'show',
  group: ZONE_GROUP,
  summary: "show an account's billing time zone",
  description: "Prints the account's stored zone, when and by whom it was set, or that it has none (the API then names none).",
  options: [ACCOUNT, JSON_OPTION],
  target: { settings: [] },
  async run({ options, context: { io }, target }) {
    const stored = await (await zoneStore(await target())).get(options.account);
    if (options.json === true) io.out(`${JSON.stringify({ account: options.account, zone: stored ?? null })}\n`);
    else if (stored === undefined) io.out(`${options.account} has no zone: the API names none; days are UTC unless tz is asked for\n`);
    else io.out(`${options.account} ${stored.zone} (set ${stored.updatedAt}${stored.updatedBy === undefined ? '' : ` by ${stored.updatedBy}`})\n`);
    return 0;
  },
});

/** Refuses (exit 2) an account the table never measured, as `tally quota set` and `tally stripe link` do. */
async function requireMeasuredAccount(open: OpenTarget, account: string): Promise<void> {
  const { DynamoUsageReader } = await import('../../aws-adapters');
  const tableName = open.target.config.tableName;
  if (!(await new DynamoUsageReader({ client: open.clients.dynamodb, tableName, consistentRead: true }).hasMeasuredUsage(account))) {
    throw new ValidationError(`account "${account}" has no measured usage in ${tableName}: check the id (ids are compared exactly), or pass --force to set its zone anyway`);
  }
}

async function zoneStore(open: OpenTarget) {
  const { DynamoAccountZones } = await import('../../aws-adapters');
  return new DynamoAccountZones({ client: open.clients.dynamodb, tableName: open.target.config.tableName, consistentRead: true });
}
