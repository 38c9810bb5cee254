import type { Env } from '../../../adapters/env';
import type { StripeMeterApi, StripeMeterErrorReport } from '../../../app/ports';
import type { SendOutcome, StripeSyncDeps } from '../../../app/billing/stripe-sync';
import { addDays, dayOf } from '../../../domain/days';
import { ConfigError, LocalStackNotRunningError, ValidationError } from '../../../domain/errors';
import { isTimestampTooOld, validateCustomerId, type StripeLink, type StripeOutboxRecord } from '../../../domain/billing/stripe';
import { defineCommand, JSON_OPTION, type CommandGroup, type OptionDeclaration } from '../../command';
import { formatTable } from '../../io';
import type { OpenTarget } from '../../open-target';
import { accountId, day, type ValueReader } from '../../values';

/** `tally stripe link|unlink|links|check|push|status|reconcile`: closed days on Stripe invoices. */
export const STRIPE_GROUP: CommandGroup = {
  name: 'stripe',
  summary: 'push closed days to Stripe Billing meters, exactly once, and compare',
  description:
    'Links accounts to Stripe customers and sends each closed-day revision of a linked account as one ' +
    'meter event per metric (TALLY_STRIPE_METERS maps metrics to event names), carrying the day\'s ' +
    'billable total; a meter with event_time_window=day bills the latest, so a later revision replaces ' +
    'the earlier one. TALLY_STRIPE_API_KEY (never printed) and TALLY_STRIPE_API_BASE name the API. ' +
    'See docs/stripe.md.',
};

const customer: ValueReader<string> = (text, flag) => {
  try {
    return validateCustomerId(text);
  } catch (error) {
    throw new ValidationError(`${flag}: ${(error as Error).message}`);
  }
};

const ACCOUNT: OptionDeclaration = { flags: '--account <id>', help: 'the account', read: accountId, required: true };
const RANGE: OptionDeclaration[] = [
  { flags: '--from <day>', help: 'first day (YYYY-MM-DD)', read: day },
  { flags: '--to <day>', help: 'last day, included (YYYY-MM-DD)', read: day },
];

/** A meter API for commands that must not need the key: any call says what to set. */
const NO_KEY_API: StripeMeterApi = {
  sendMeterEvent: () => Promise.reject(new ConfigError('set TALLY_STRIPE_API_KEY to talk to Stripe')),
  meters: () => Promise.reject(new ConfigError('set TALLY_STRIPE_API_KEY to talk to Stripe')),
  daySummaries: () => Promise.reject(new ConfigError('set TALLY_STRIPE_API_KEY to talk to Stripe')),
};

/**
 * The Stripe sync wired to a target: its table and queues, the environment's Stripe
 * settings (else those the local stack recorded). `needsKey`: the command calls Stripe.
 */
async function stripeDeps(open: OpenTarget, env: Env, needsKey: boolean, now: () => Date): Promise<StripeSyncDeps> {
  const { target, clients } = open;
  const { readStripeConfig } = await import('../../../adapters/stripe/stripe-config');
  const { createStripeSyncDeps } = await import('../../../adapters/wiring/stripe-deps');
  const { silentLog } = await import('../../../app/log');
  const settings: Env = {
    TALLY_STRIPE_API_BASE: target.stripe?.apiBase,
    TALLY_STRIPE_METERS: target.stripe?.meters,
    TALLY_STRIPE_QUEUE_URL: target.stripe?.queueUrl,
    TALLY_STRIPE_WINDOW: target.stripe?.window,
    ...Object.fromEntries(Object.entries(env).filter(([name, value]) => name.startsWith('TALLY_STRIPE_') && value !== undefined && value !== '')),
  };
  const hasKey = settings.TALLY_STRIPE_API_KEY !== undefined;
  if (needsKey && !hasKey) throw new ConfigError('set TALLY_STRIPE_API_KEY (the Stripe secret key; it is never printed)');
  // Without the key, a placeholder satisfies the reader; the API behind it refuses every call.
  const config = readStripeConfig(hasKey ? settings : { ...settings, TALLY_STRIPE_API_KEY: 'sk_test_placeholder_not_used' });
  const deps = createStripeSyncDeps(
    { tally: target.config, stripe: config, ...(target.webhookQueueUrl === undefined ? {} : { webhookQueueUrl: target.webhookQueueUrl }) },
    clients,
    hasKey ? settings.TALLY_STRIPE_API_KEY! : 'sk_test_placeholder_not_used',
    silentLog,
    { clock: now },
  );
  return hasKey ? deps : { ...deps, api: NO_KEY_API };
}

/**
 * Refuses (exit 2) before anything is written when a configured meter's event time window is not
 * the one this command would send (`TALLY_STRIPE_WINDOW`, from the environment or the local stack):
 * day events on an hour meter, or hour events on a day meter, would bill wrong. Needs the key; without
 * it nothing is checked (the sender's own setting decides what is sent).
 */
async function requireMatchingWindows(deps: StripeSyncDeps): Promise<void> {
  if (deps.api === NO_KEY_API) return;
  const window = deps.window ?? 'day';
  const meters = await deps.api.meters();
  for (const eventName of Object.values(deps.meters)) {
    const meter = meters.find((m) => m.eventName === eventName && m.status === 'active');
    if (meter === undefined || meter.eventTimeWindow === window || (meter.eventTimeWindow !== 'day' && meter.eventTimeWindow !== 'hour')) continue;
    throw new ConfigError(
      `the meter of ${eventName} (${meter.id}) has event_time_window=${meter.eventTimeWindow} but TALLY_STRIPE_WINDOW is ${window}: ` +
        `set TALLY_STRIPE_WINDOW=${meter.eventTimeWindow}, the meters' window, here and for the sender (which refuses events of the other window) (nothing was written)`,
    );
  }
}

/** ` from 15:00 UTC` for a link whose first day is sent from that hour (hour windows), else empty. */
function firstHour(fromTime: number | undefined): string {
  return fromTime === undefined ? '' : ` from ${new Date(fromTime * 1000).toISOString().slice(11, 16)} UTC`;
}

/** `tally stripe link`: exit 0. */
export const stripeLinkCommand = defineCommand<{ account: string; customer: string; from?: string; force?: boolean; json?: boolean }>({
  name: 'link',
  group: STRIPE_GROUP,
  summary: 'bill an account in Stripe as a customer; queues its closed days from the current billing period',
  description:
    'Stores the link in the usage table (replacing an earlier one) and writes the outbox records of the ' +
    'account\'s closed days from the customer\'s current billing period start (read from its subscriptions ' +
    'when TALLY_STRIPE_API_KEY is set; --from DAY instead), never older than Stripe accepts (35 days less a ' +
    'day of margin). Earlier days are never sent. The sender sends them (AWS: its queue; npm start: in ' +
    'process); tally stripe push sends them now. An account with no measured usage (a mistyped id?) is ' +
    'refused (exit 2) unless --force, as by tally adjust.',
  options: [
    ACCOUNT,
    { flags: '--customer <id>', help: 'the Stripe customer (cus_...)', read: customer, required: true },
    { flags: '--from <day>', help: 'first day to send (default: the first day of the customer\'s current billing period, read with the key)', read: day },
    { flags: '--force', help: 'link an account with no measured usage (yet)' },
    JSON_OPTION,
  ],
  target: { settings: [] },
  async run({ options, context: { io, env, now }, target }) {
    const open = await target();
    if (options.force !== true) await requireMeasuredAccount(open, options.account);
    const { linkAccount } = await import('../../../app/billing/stripe-sync');
    const deps = await stripeDeps(open, env, false, now);
    await requireMatchingWindows(deps);
    const result = await linkAccount(deps, options.account, options.customer, options.from === undefined ? {} : { from: options.from });
    if (options.json === true) {
      io.out(`${JSON.stringify({ account: options.account, customer: options.customer, ...result })}\n`);
      return 0;
    }
    io.out(`tally stripe link: ${open.target.origin}\n`);
    io.out(`  ${options.account} -> ${options.customer}${result.previous === undefined ? '' : ` (was ${result.previous.customer})`}\n`);
    io.out(
      `  ${result.planned} meter event(s) queued for closed days ${result.window.from}${firstHour(result.window.fromTime)}..${result.window.to}` +
        `${deps.queue === undefined ? '; send them with tally stripe push' : '; the sender sends them'}\n`,
    );
    return 0;
  },
});

/** Refuses (exit 2) an account the table never measured, the way `tally adjust` and `tally quota set` do. */
async function requireMeasuredAccount(open: OpenTarget, account: string): Promise<void> {
  const { DynamoUsageReader } = await import('../../aws-adapters');
  const tableName = open.target.config.tableName;
  const reader = new DynamoUsageReader({ client: open.clients.dynamodb, tableName, consistentRead: true });
  if (!(await reader.hasMeasuredUsage(account))) {
    throw new ValidationError(`account "${account}" has no measured usage in ${tableName}: check the id, or pass --force to link it anyway`);
  }
}

/** `tally stripe unlink`: exit 0 when a link was removed, 1 when there was none. */
export const stripeUnlinkCommand = defineCommand<{ account: string }>({
  name: 'unlink',
  group: STRIPE_GROUP,
  summary: 'stop sending an account\'s days to Stripe',
  description: 'Removes the link; what Stripe received stays on its meters. Records still pending are not sent.',
  options: [ACCOUNT],
  target: { settings: [] },
  async run({ options, context: { io, env, now }, target }) {
    const deps = await stripeDeps(await target(), env, false, now);
    const removed = await deps.store.unlink(options.account);
    io.out(removed === undefined ? `${options.account} was not linked\n` : `${options.account} unlinked (was ${removed.customer})\n`);
    return removed === undefined ? 1 : 0;
  },
});

/** `tally stripe links`. */
export const stripeLinksCommand = defineCommand<{ json?: boolean }>({
  name: 'links',
  group: STRIPE_GROUP,
  summary: 'list linked accounts and their Stripe customers',
  description: 'Every link stored in the usage table.',
  options: [JSON_OPTION],
  target: { settings: [] },
  async run({ options, context: { io, env, now }, target }) {
    const deps = await stripeDeps(await target(), env, false, now);
    const links = await deps.store.links();
    if (options.json === true) io.out(`${JSON.stringify(links)}\n`);
    else io.out(links.length === 0 ? 'no linked accounts\n' : formatTable(['account', 'customer', 'linked at'], links.map((l) => [l.account, l.customer, l.linkedAt])));
    return 0;
  },
});

/** `tally stripe check`: exit 0 when the meters, the linked customers' subscriptions and their finalization delays suit Tally, 1 otherwise. */
export const stripeCheckCommand = defineCommand<Record<string, never>>({
  name: 'check',
  group: STRIPE_GROUP,
  summary: 'check the meters, each linked customer\'s subscription and its invoices\' finalization delay',
  description:
    'Each event name of TALLY_STRIPE_METERS needs an active meter with event_time_window day (hour with ' +
    'TALLY_STRIPE_WINDOW=hour), formula ' +
    'sum, customer key stripe_customer_id and value key value (else the line that creates it). Each ' +
    'linked customer needs a subscription item priced on each meter, and its latest finalized invoice ' +
    'a finalization delay at least the running interval plus an hour of log delivery (printed). Exit 1 ' +
    'with a BAD line for each failure.',
  options: [],
  target: { settings: [] },
  async run({ context: { io, env }, target }) {
    const { api, meters: configured, runningMinutes, window } = await stripeOnly(env, target);
    const { checkCustomer, meterProblems } = await import('../../../app/billing/stripe-reconcile');
    const meters = await api.meters();
    let bad = 0;
    const meterIds: Record<string, string> = {};
    for (const [metric, eventName] of Object.entries(configured)) {
      const problems = meterProblems(eventName, meters, window);
      const active = meters.find((m) => m.eventName === eventName && m.status === 'active');
      if (active !== undefined) meterIds[metric] = active.id;
      if (problems.length === 0) {
        io.out(`ok  ${metric} -> ${eventName} (${active!.id})\n`);
        continue;
      }
      bad++;
      io.out(`BAD ${metric} -> ${eventName}: ${problems.join('; ')}\n`);
      io.out(`    create it: ${createMeterCommand(metric, eventName, window)}\n`);
    }
    const linked = await linksIfTable(target);
    if (linked === undefined) io.out('    (no table or running stack: linked customers not checked)\n');
    for (const link of linked?.links ?? []) {
      const check = await checkCustomer(api, link, meterIds, runningMinutes, linked!.graceHours);
      const delay = check.finalization === undefined ? 'no finalized invoice yet' : `finalization delay ${(check.finalization.delaySeconds / 3600).toFixed(1)} h (${check.finalization.invoice}; needs ${(check.finalization.neededSeconds / 3600).toFixed(1)} h)`;
      if (check.problems.length === 0) io.out(`ok  ${link.account} -> ${link.customer}: ${delay}\n`);
      for (const problem of check.problems) io.out(`BAD ${link.account} -> ${link.customer}: ${problem}\n`);
      bad += check.problems.length;
    }
    if (bad > 0) io.err('tally stripe check: Stripe is not set up to bill what Tally counts (see docs/stripe.md#creating-the-meters and docs/stripe.md#late-usage)\n');
    return bad > 0 ? 1 : 0;
  },
});

/**
 * Stripe's API and the configured meters, for a command that needs Stripe alone (`check`):
 * the environment's `TALLY_STRIPE_*`, completed by the local stack's Stripe settings when
 * a target can be opened, but never requiring one (no table, no stack).
 */
async function stripeOnly(env: Env, target: () => Promise<OpenTarget>): Promise<{ api: StripeMeterApi; meters: Record<string, string>; runningMinutes: number; window: 'day' | 'hour' }> {
  const fromEnv = Object.fromEntries(Object.entries(env).filter(([name, value]) => name.startsWith('TALLY_STRIPE_') && value !== undefined && value !== ''));
  let fromTarget: Env = {};
  if (fromEnv.TALLY_STRIPE_METERS === undefined || fromEnv.TALLY_STRIPE_API_BASE === undefined) {
    try {
      const { stripe } = (await target()).target;
      fromTarget = { TALLY_STRIPE_API_BASE: stripe?.apiBase, TALLY_STRIPE_METERS: stripe?.meters, TALLY_STRIPE_WINDOW: stripe?.window };
    } catch (error) {
      // No table and no running stack: the environment alone says where Stripe is.
      if (!(error instanceof ConfigError) && !(error instanceof LocalStackNotRunningError)) throw error;
    }
  }
  const settings: Env = { ...fromTarget, ...fromEnv };
  if (settings.TALLY_STRIPE_API_KEY === undefined) throw new ConfigError('set TALLY_STRIPE_API_KEY (the Stripe secret key; it is never printed)');
  const { readStripeConfig } = await import('../../../adapters/stripe/stripe-config');
  const { SdkStripeMeterApi } = await import('../../../adapters/stripe/stripe-meter-api');
  const config = readStripeConfig(settings);
  return { api: new SdkStripeMeterApi({ apiKey: settings.TALLY_STRIPE_API_KEY, apiBase: config.apiBase }), meters: config.meters, runningMinutes: config.runningMinutes, window: config.window };
}

/** The links and the close grace of the target's table, when one can be opened (else undefined: `check` needs no table). */
async function linksIfTable(target: () => Promise<OpenTarget>): Promise<{ links: StripeLink[]; graceHours: number } | undefined> {
  let open: OpenTarget;
  try {
    open = await target();
  } catch (error) {
    if (error instanceof ConfigError || error instanceof LocalStackNotRunningError) return undefined;
    throw error;
  }
  const { DynamoStripeStore } = await import('../../../adapters/dynamodb/dynamodb-stripe-store');
  const links = await new DynamoStripeStore({ client: open.clients.dynamodb, tableName: open.target.config.tableName }).links();
  return { links, graceHours: open.target.config.closeGraceHours };
}

/** The Stripe CLI line that creates the meter Tally needs for `eventName` (its window: `TALLY_STRIPE_WINDOW`). */
export function createMeterCommand(metric: string, eventName: string, window: 'day' | 'hour' = 'day'): string {
  return (
    `stripe billing meters create --display-name="Tally ${metric}" --event-name=${eventName} ` +
    `-d "default_aggregation[formula]=sum" -d event_time_window=${window} ` +
    '-d "customer_mapping[event_payload_key]=stripe_customer_id" -d "customer_mapping[type]=by_id" ' +
    '-d "value_settings[event_payload_key]=value"'
  );
}

/** `tally stripe push`: exit 0 when everything due is acknowledged, 1 when some failed or is left. */
export const stripePushCommand = defineCommand<{ account?: string; from?: string; to?: string; retryFailed?: boolean; json?: boolean }>({
  name: 'push',
  group: STRIPE_GROUP,
  summary: 'send every closed revision not yet acknowledged by Stripe, idempotently',
  description:
    'Writes the outbox records of linked accounts\' closed days (default: those Stripe still accepts) ' +
    'and sends the pending ones, one request at a time per customer and meter, each with its stable ' +
    'identifier: running it again sends nothing twice.',
  options: [
    { flags: '--account <id>', help: 'only this account', read: accountId },
    ...RANGE,
    { flags: '--retry-failed', help: 'send failed events again: refused by Stripe (after fixing the meter or the customer), or held as a day already on the meters of the other window, when the operator chooses to bill it' },
    JSON_OPTION,
  ],
  target: { settings: [] },
  check(options) {
    if (options.from !== undefined && options.to !== undefined && options.to < options.from) throw new ValidationError('--to is before --from');
  },
  async run({ options, context: { io, env, now }, target }) {
    const deps = await stripeDeps(await target(), env, true, now);
    await requireMatchingWindows(deps);
    const { planLinked, sendPending, sendableWindow } = await import('../../../app/billing/stripe-sync');
    const window = sendableWindow(now(), deps.graceHours);
    const from = options.from ?? window.from;
    const to = options.to ?? window.to;
    const links = (await deps.store.links()).filter((link) => options.account === undefined || link.account === options.account);
    if (options.account !== undefined && links.length === 0) throw new ValidationError(`${options.account} is not linked: tally stripe link --account ${options.account} --customer cus_...`);
    const planned = await planLinked(deps, { from, to, links });
    const report = await sendPending(deps, { ...(options.account === undefined ? {} : { account: options.account }), from, to, retryFailed: options.retryFailed === true });
    const failed = report.outcomes.filter((o) => o.outcome === 'failed').length;
    if (options.json === true) io.out(`${JSON.stringify({ from, to, planned, ...report })}\n`);
    else io.out(describePush(from, to, planned, report.outcomes));
    return failed > 0 || report.left > 0 ? 1 : 0;
  },
});

function describePush(from: string, to: string, planned: number, outcomes: readonly SendOutcome[]): string {
  const lines = [`tally stripe push ${from}..${to}: ${planned} new outbox record(s); ${outcomes.length} handled`];
  if (outcomes.length > 0) {
    lines.push(
      formatTable(
        ['account', 'metric', 'day', 'revision', 'value', 'outcome', 'error'],
        outcomes.map((o) => [o.account, o.metric, o.hour === undefined ? o.day : `${o.day} ${String(o.hour).padStart(2, '0')}h`, `${o.revision}${o.adjusted === undefined ? '' : `+${o.adjusted} adj`}`, String(o.value), o.outcome, o.error ?? '']),
      ).trimEnd(),
    );
  }
  return `${lines.join('\n')}\n`;
}

/** `tally stripe status`. */
export const stripeStatusCommand = defineCommand<{ account?: string; from?: string; to?: string; json?: boolean }>({
  name: 'status',
  group: STRIPE_GROUP,
  summary: 'what was sent, acknowledged, refused, reached a finalized invoice, and what is too old to send',
  description:
    'Every outbox record of linked accounts (default: the last 40 days), per account-day and metric; with TALLY_STRIPE_API_KEY, also the meter events Stripe dropped after accepting them (its meter error reports of the last 30 days).',
  options: [{ flags: '--account <id>', help: 'only this account', read: accountId }, ...RANGE, JSON_OPTION],
  target: { settings: [] },
  async run({ options, context: { io, env, now }, target }) {
    const deps = await stripeDeps(await target(), env, false, now);
    const at = now();
    const from = options.from ?? addDays(dayOf(at), -40);
    const to = options.to ?? dayOf(at);
    const links = (await deps.store.links()).filter((link) => options.account === undefined || link.account === options.account);
    const records = (await Promise.all(links.map((link) => deps.store.records(link.account, from, to)))).flat();
    const rows = records.map((r) => ({ ...r, tooOld: r.state === 'too-old' || (r.state === 'pending' && isTimestampTooOld(r.timestamp, at)) }));
    // Stripe unreachable must not hide the outbox: the reports are then said to be unread, and why.
    const reports = deps.api.meterErrorReports === undefined ? undefined : await deps.api.meterErrorReports().catch((error: unknown) => ({ unread: describeReadError(error) }));
    const dropped = reports === undefined || 'unread' in reports ? undefined : droppedEvents(reports, rows);
    if (options.json === true) {
      io.out(`${JSON.stringify({ from, to, links, records: rows, ...(dropped === undefined ? {} : { meterErrors: dropped }) })}\n`);
      return 0;
    }
    io.out(`tally stripe status ${from}..${to}: ${links.length} linked account(s), ${rows.length} outbox record(s)\n`);
    if (rows.length > 0) {
      io.out(
        formatTable(
          ['account', 'metric', 'day', 'rev', 'value', 'state', 'attempts', 'sent at', 'acknowledged at', 'invoice (billed)', 'too old', 'error'],
          rows.map((r) => [
            r.account,
            r.metric,
            // TALLY_STRIPE_WINDOW=hour: the UTC hour of the day's window.
            r.hour === undefined ? r.day : `${r.day} ${String(r.hour).padStart(2, '0')}h`,
            // A re-split: the hour sent again at the same revision because its day's hours were backfilled.
            r.running === undefined ? `${r.revision}${r.adjusted === undefined ? '' : `+${r.adjusted} adj`}${r.split === undefined ? '' : ` split ${r.split}`}` : `open #${r.running}`,
            String(r.value),
            r.state,
            String(r.attempts),
            r.sentAt ?? '-',
            r.deliveredAt ?? '-',
            r.invoice === undefined ? '' : `${r.invoice} (${r.billed ?? 0})`,
            r.tooOld ? 'yes' : '',
            r.error ?? '',
          ]),
        ),
      );
    }
    printLateItems(io, rows);
    printDropped(io, dropped, reports !== undefined && 'unread' in reports ? reports.unread : 'set TALLY_STRIPE_API_KEY');
    return 0;
  },
});

/**
 * The invoice items of late differences (TALLY_STRIPE_LATE_USAGE=invoice-item), one line per
 * record that has one: created (Stripe's id), pending (retried with its tally id), or none
 * with the reason (a tiered, volume or package price: the webhook alone).
 */
function printLateItems(io: { out(text: string): void }, rows: readonly StripeOutboxRecord[]): void {
  const withItems = rows.filter((r) => r.item !== undefined);
  if (withItems.length === 0) return;
  io.out(`late usage invoice items: ${withItems.length}\n`);
  for (const r of withItems) {
    const item = r.item!;
    const place = `  ${r.account} ${r.metric} ${r.day} rev ${r.running === undefined ? r.revision : `open #${r.running}`}: `;
    if (item.state === 'webhook-only') io.out(`${place}no invoice item (webhook only): ${item.reason}\n`);
    else io.out(`${place}${item.state === 'created' ? `invoice item ${item.id}` : `invoice item pending (${item.tallyId})`}, ${item.units > 0 ? '+' : ''}${item.units} unit(s) at ${item.unitAmountDecimal} ${item.currency} cents\n`);
  }
}

/** Why Stripe's meter error reports could not be read, in one line (never the key: the SDK's message names none). */
function describeReadError(error: unknown): string {
  return `Stripe: ${(error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 200)}`;
}

/** A meter error of Stripe's, with the outbox record its sample identifier names (when it is one of Tally's). */
interface DroppedEvent {
  readonly report: string;
  readonly created: string;
  readonly type: string;
  readonly meter: string | null;
  readonly code: string;
  readonly count: number;
  readonly identifier: string | null;
  readonly message: string;
  readonly record: { readonly account: string; readonly metric: string; readonly day: string; readonly revision: number } | null;
}

/** One row per error code of each report (its first sample), matched to the outbox record of that identifier. */
function droppedEvents(
  reports: readonly StripeMeterErrorReport[],
  records: readonly { identifier: string; account: string; metric: string; day: string; revision: number }[],
): DroppedEvent[] {
  const byIdentifier = new Map(records.map((record) => [record.identifier, record]));
  return reports.flatMap((report) =>
    report.errors.map((error) => {
      const sample = error.samples[0];
      const record = sample === undefined ? undefined : byIdentifier.get(sample.identifier);
      return {
        report: report.id,
        created: report.created,
        type: report.type,
        meter: report.meter,
        code: error.code,
        count: error.count,
        identifier: sample?.identifier ?? null,
        message: sample?.message ?? report.summary,
        record: record === undefined ? null : { account: record.account, metric: record.metric, day: record.day, revision: record.revision },
      };
    }),
  );
}

/** The meter events Stripe dropped after its 200, or why they were not read. */
function printDropped(io: { out(text: string): void }, dropped: readonly DroppedEvent[] | undefined, unread: string): void {
  if (dropped === undefined) {
    io.out(`meter events Stripe dropped after accepting them: not read (${unread})\n`);
    return;
  }
  const total = dropped.reduce((sum, row) => sum + row.count, 0);
  io.out(`meter events Stripe dropped after accepting them (its meter error reports, last 30 days): ${total}\n`);
  if (dropped.length === 0) return;
  io.out(
    formatTable(
      ['reported at', 'meter', 'code', 'events', 'account', 'metric', 'day', 'sample identifier', 'message'],
      dropped.map((row) => [
        row.created,
        row.meter ?? '(no meter)',
        row.code,
        String(row.count),
        row.record?.account ?? '',
        row.record?.metric ?? '',
        row.record?.day ?? '',
        row.identifier ?? '',
        row.message,
      ]),
    ),
  );
}

/** `tally stripe reconcile`: exit 0 when Stripe bills what Tally counted, 1 with the drift. */
export const stripeReconcileCommand = defineCommand<{ from: string; to: string; invoices?: boolean; json?: boolean }>({
  name: 'reconcile',
  group: STRIPE_GROUP,
  summary: 'compare Stripe\'s day summaries with Tally\'s billable totals',
  description:
    'Reads event_summaries (value_grouping_window=day) of every linked customer and configured meter and ' +
    'compares each closed day with the API\'s totals (counters plus adjustments). Exit 0 when equal, 1 ' +
    'with a drift table. With --invoices: each finalized invoice whose period meets the range, its line ' +
    'quantity per metered price against Tally\'s total over the period\'s days and the meter\'s; exit 1 on a ' +
    'difference not already recorded as late usage.',
  options: [
    { flags: '--from <day>', help: 'first day (YYYY-MM-DD)', read: day, required: true },
    { flags: '--to <day>', help: 'last day, included (YYYY-MM-DD)', read: day, required: true },
    { flags: '--invoices', help: 'compare finalized invoices (per customer, period and metric) instead of days' },
    JSON_OPTION,
  ],
  target: { settings: [] },
  check(options) {
    if (options.to < options.from) throw new ValidationError('--to is before --from');
  },
  async run({ options, context: { io, env, now }, target }) {
    const deps = await stripeDeps(await target(), env, true, now);
    const { reconcileInvoices, reconcileStripe } = await import('../../../app/billing/stripe-reconcile');
    if (options.invoices === true) {
      const invoices = await reconcileInvoices(deps, options.from, options.to);
      if (options.json === true) io.out(`${JSON.stringify({ from: options.from, to: options.to, ...invoices })}\n`);
      else {
        io.out(`tally stripe reconcile --invoices ${options.from}..${options.to}: ${invoices.compared} invoice line(s) compared, ${invoices.unexplained.length} differ without a recorded late usage or its invoice item\n`);
        if (invoices.rows.length > 0) {
          io.out(
            formatTable(
              ['account', 'customer', 'invoice', 'period days', 'metric', 'tally', 'meter', 'invoice qty', 'difference', 'late usage recorded', 'invoice items', 'held (other window)', 'problem'],
              invoices.rows.map((r) => [r.account, r.customer, r.invoice, `${r.from}..${r.to}`, r.metric, String(r.tally), String(r.meter), String(r.invoiced), String(r.difference), String(r.recordedLate), r.itemsPlanned === 0 && r.items === 0 ? '' : String(r.items), r.held === 0 ? '' : String(r.held), r.problems.join('; ')]),
            ),
          );
        }
      }
      return invoices.unexplained.length > 0 ? 1 : 0;
    }
    const report = await reconcileStripe(deps, options.from, options.to);
    if (options.json === true) {
      io.out(`${JSON.stringify(report)}\n`);
    } else {
      io.out(
        `tally stripe reconcile ${report.from}..${report.to}: ${report.compared} account-day figure(s) compared, ${report.drift.length} differ` +
          `${report.openDays.length > 0 ? ` (${report.openDays.length} open day(s) not compared)` : ''}` +
          `${report.held.length > 0 ? `; ${report.held.length} held (on the meters of the other window: tally stripe status)` : ''}\n`,
      );
      if (report.drift.length > 0) {
        io.out(
          formatTable(
            ['account', 'customer', 'metric', 'day', 'tally', 'stripe', 'difference'],
            report.drift.map((d) => [d.account, d.customer, d.metric, d.day, String(d.tally), String(d.stripe), String(d.stripe - d.tally)]),
          ),
        );
      }
    }
    return report.drift.length > 0 ? 1 : 0;
  },
});

export const STRIPE_COMMANDS = [
  stripeLinkCommand,
  stripeUnlinkCommand,
  stripeLinksCommand,
  stripeCheckCommand,
  stripePushCommand,
  stripeStatusCommand,
  stripeReconcileCommand,
] as const;
