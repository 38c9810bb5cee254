import { pageOfExplanation, type DayExplanation, type HourFigures } from '../../../domain/reading/explanation';
import { defineCommand, JSON_OPTION } from '../../command';
import { formatTable } from '../../io';
import { describeTarget } from '../../operator-target';
import { refuseInexactFigures } from '../../../domain/reading/exact-figures';
import { accountId, day } from '../../values';

/** `tally explain`: one account-day down to its log objects; exit 0 when the sources add up, 1 when something is missing. */
export const explainCommand = defineCommand<{ account: string; day: string; json?: boolean }>({
  name: 'explain',
  summary: "explain an account-day's figures down to its log objects",
  description:
    'Prints the measured counters of one account-day, its adjustments and billable totals, its revisions when closed, ' +
    'and every log object that contributed with its whole contribution, checked to add up to the counters; ' +
    "the day's hours (UTC) and each object's. " +
    '--json prints the body of GET /v1/accounts/{id}/days/{day}/explain. Exit 1 when the objects do not explain ' +
    'the counters completely (objects counted before contributions were recorded: tally backfill over the day records them).',
  options: [
    { flags: '--account <id>', help: 'the account', read: accountId, required: true },
    { flags: '--day <day>', help: 'the day (YYYY-MM-DD, UTC)', read: day, required: true },
    JSON_OPTION,
  ],
  target: { settings: ['metrics'] },
  async run({ options, context: { io, now }, target: open }) {
    const { target, clients } = await open();
    // Before any request: a credentials lookup on AWS can take seconds, and the target is what the reader must know.
    if (options.json !== true) io.out(`tally explain: ${describeTarget(target)}\n`);
    const { DynamoUsageReader, DynamoSourceReader, explainDay, metricNamesOf } = await import('../../aws-adapters');
    const table = { client: clients.dynamodb, tableName: target.config.tableName };
    const all = await explainDay(
      {
        reader: new DynamoUsageReader(table),
        sources: new DynamoSourceReader(table),
        metricNames: metricNamesOf(target.config),
        closing: { now: now(), graceHours: target.config.closeGraceHours },
      },
      options.account,
      options.day,
    );
    // Every log object, as one page: the CLI answers no Lambda bound, and its JSON is the API's body when that has one page.
    const explanation = pageOfExplanation(all, 1, Math.max(1, all.sources.length));
    refuseInexactFigures(explanation, `explain of ${options.account} on ${options.day}`, "the day's own counter holds it, a corrupt or hostile value: look at its items in the table");
    io.out(options.json === true ? `${JSON.stringify(explanation)}\n` : describeExplanation(explanation));
    return explanation.complete ? 0 : 1;
  },
});

/** The human form: figures, sums, sources, revisions. */
export function describeExplanation(e: DayExplanation): string {
  const names = e.metricNames;
  const values = (metrics: Readonly<Record<string, number>>) => names.map((name) => String(metrics[name] ?? 0));
  const status = e.status !== 'closed' ? 'open' : e.closedAt === undefined ? 'closed (nothing measured; its zeros are final)' : `closed ${e.closedAt}`;
  const figures = formatTable(
    ['', ...names],
    [
      ['sources (sum)', ...values(e.sourceTotals)],
      ['measured', ...values(e.metrics)],
      ...e.adjustments.map((a) => [`adjustment ${a.id}`, ...names.map((name) => (name === a.metric ? (a.delta > 0 ? `+${a.delta}` : String(a.delta)) : '0'))]),
      ['total (billable)', ...values(e.totals)],
    ],
  );
  const lines = [`${e.accountId} ${e.day}: ${status}; ${e.sources.length} log object(s)`, '', figures.trimEnd(), ''];
  if (recordsNothing(e)) {
    // Tally keeps no account registry: zeros for a mistyped id look like a quiet day.
    lines.push(`nothing recorded for ${e.accountId} on ${e.day}: no log object, counter, adjustment or revision (account ids are exact: case counts)`, '');
  }
  lines.push(
    e.complete
      ? 'complete: the log objects below add up to the measured counters exactly; measured + adjustments = total'
      : `incomplete: counters minus sources = ${names.map((name) => `${name} ${e.missing?.metrics[name] ?? 0}`).join(', ')}\n  ${e.missing?.reason ?? ''}`,
  );
  lines.push('', ...describeHours(e));
  if (e.adjustments.length > 0) {
    lines.push('', formatTable(['adjustment', 'metric', 'delta', 'reason', 'recorded'], e.adjustments.map((a) => [a.id, a.metric, String(a.delta), a.reason, a.createdAt])).trimEnd());
  }
  if (e.revisions.length > 0) {
    lines.push('', formatTable(['revision', 'recorded', ...names], e.revisions.map((r) => [String(r.revision), r.createdAt, ...values(r.metrics)])).trimEnd());
  }
  if (e.sources.length > 0) {
    lines.push(
      '',
      formatTable(
        ['object', 'etag', 'format', 'processed', 'hours (UTC)', ...names],
        e.sources.map((s) => [`s3://${s.bucket}/${s.key}${s.unresolved ? ' (unresolved)' : ''}`, s.etag, s.format, s.processedAt, hourSpans(s.hours), ...values(s.metrics)]),
      ).trimEnd(),
    );
  }
  return `${lines.join('\n')}\n`;
}

/** True when the account-day holds nothing at all: no source, no measured usage, no adjustment, no revision. */
function recordsNothing(e: DayExplanation): boolean {
  return e.sources.length === 0 && e.adjustments.length === 0 && e.revisions.length === 0 && Object.values(e.metrics).every((value) => value === 0);
}

/** The day's hours with usage as a table, where they come from, or why they are unknown. */
function describeHours(e: DayExplanation): string[] {
  if (e.hours === null) return [`hours: unknown: ${e.hoursReason ?? ''}`];
  const used = e.hours.filter((hour) => Object.values(hour.metrics).some((value) => value !== 0));
  const from =
    e.hoursSource !== 'backfill'
      ? 'from the counters'
      : `recomputed from the log objects by tally backfill --hours${e.hoursCountedSince === true ? ', plus usage counted since' : ''}`;
  if (used.length === 0) return [`hours: none with usage (${from})`];
  return [
    `hours (UTC, ${from}; hours without usage left out):`,
    formatTable(['hour', ...e.metricNames], used.map((hour) => [String(hour.hour).padStart(2, '0'), ...e.metricNames.map((name) => String(hour.metrics[name] ?? 0))])).trimEnd(),
  ];
}

/** An object's hours with usage, runs joined: `05-07, 12`; `unknown` when its ledger recorded none. */
export function hourSpans(hours: readonly HourFigures[] | null | undefined): string {
  if (hours === null || hours === undefined) return 'unknown';
  const spans: [number, number][] = [];
  for (const { hour } of hours) {
    const last = spans[spans.length - 1];
    if (last !== undefined && last[1] === hour - 1) last[1] = hour;
    else spans.push([hour, hour]);
  }
  const two = (hour: number) => String(hour).padStart(2, '0');
  return spans.map(([first, last]) => (first === last ? two(first) : `${two(first)}-${two(last)}`)).join(', ') || '-';
}
