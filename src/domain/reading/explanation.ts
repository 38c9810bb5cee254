import { ValidationError } from '../errors';
import { addHourSums, dayHours, HOURS_PER_DAY, type BackfillOfDay, type HourSums } from '../hours';
import { csvNumberCell, csvTextCell } from './usage-csv';
import { buildUsageReport, type DayStatus, type MetricValues } from './usage-report';
import type { UsageRecord } from './usage-records';

/** One log object's whole contribution to an account-day, as its ledger recorded it. */
export interface ExplainedSource {
  readonly bucket: string;
  readonly key: string;
  readonly etag: string;
  /** The format it was read in: `standard`, `json`, `headerless`, `parquet`. */
  readonly format: string;
  readonly processedAt: string;
  readonly metrics: MetricValues;
  /** Some of its increments are unresolved (not applied until `tally reconcile --resolve` settles them). */
  readonly unresolved?: true;
  /**
   * Its contribution by UTC hour, the hours with usage only, in order; `null` when its
   * ledger recorded none (counted before hours were kept: unknown, never zeros).
   */
  readonly hours?: HourFigures[] | null;
}

/** The sums of one UTC hour of the day (0..23). */
export interface HourFigures {
  readonly hour: number;
  readonly metrics: MetricValues;
}

/** `hours` as rows, in hour order: every hour of the day with `allHours`, else the hours with usage only. */
export function hourFigures(hours: HourSums, names: readonly string[], allHours = false): HourFigures[] {
  const rows: HourFigures[] = [];
  for (let hour = 0; hour < HOURS_PER_DAY; hour++) {
    const sums = hours[hour];
    if (!allHours && (sums === undefined || Object.values(sums).every((value) => value === 0))) continue;
    const metricNames = [...new Set([...names, ...Object.keys(sums ?? {})])];
    rows.push({ hour, metrics: Object.fromEntries(metricNames.map((name) => [name, sums?.[name] ?? 0])) });
  }
  return rows;
}

/** What the sources do not explain, when they do not add up to the counters. */
export interface MissingPart {
  /** Counters minus the sources' sum, per metric (every metric present). */
  readonly metrics: MetricValues;
  readonly reason: string;
}

/**
 * Why an account-day's figures are what they are: the JSON body of
 * `GET /v1/accounts/{id}/days/{day}/explain` and of `tally explain --json`, a public
 * contract (fields are added, never renamed). The laws it shows:
 * `sum(sources[].metrics) = metrics` when `complete`, and `metrics + adjustments = totals`.
 */
export interface DayExplanation {
  readonly accountId: string;
  readonly day: string;
  readonly status: DayStatus;
  readonly closedAt: string | null;
  readonly metricNames: string[];
  /** Measured: every usage shard summed, as the usage API's `metrics`. */
  readonly metrics: MetricValues;
  readonly adjustments: { id: string; metric: string; delta: number; reason: string; createdAt: string }[];
  /** Billable: `metrics` plus the adjustments, as the usage API's `totals`. */
  readonly totals: MetricValues;
  /** Recorded revisions of a closed day, oldest first (revision 1 is the closed snapshot). */
  readonly revisions: { revision: number; createdAt: string; metrics: MetricValues }[];
  /**
   * The measured counters by UTC hour, 24 rows (hour 0..23, every metric): the shards'
   * hours, or those `tally backfill --hours` recomputed, whichever sums to `metrics`
   * exactly (as the usage API's hours); `null` when neither does (see `hoursReason`).
   */
  readonly hours: HourFigures[] | null;
  /** Where `hours` come from: `shards` (counted with hours) or `backfill` (recomputed from the log objects). */
  readonly hoursSource?: 'shards' | 'backfill';
  /** `backfill` hours that include usage counted since the backfill (a late log's, in its own hours). */
  readonly hoursCountedSince?: true;
  /** Why `hours` is null. */
  readonly hoursReason?: string;
  /** One per log object that contributed, in key order; each listed once with its whole contribution (and its hours). */
  readonly sources: ExplainedSource[];
  /** The sources' metrics summed. */
  readonly sourceTotals: MetricValues;
  /**
   * How many log objects the day has, all pages together (the read API lists a page of
   * {@link EXPLAIN_SOURCES_PER_PAGE} of them in `sources`; `sourceTotals` and `complete` are of all).
   */
  readonly sourceCount?: number;
  /** The read API's page of `sources`, from 1, and how many pages there are (at least 1). */
  readonly page?: number;
  readonly pages?: number;
  /** True when the sources add up to `metrics` exactly and none has unresolved increments. */
  readonly complete: boolean;
  /** When not complete: what is missing, and why it may be. */
  readonly missing?: MissingPart;
}

export interface ExplanationInput {
  readonly accountId: string;
  readonly day: string;
  /** What the usage reader returned for the day (shards, adjustments, revisions, close record). */
  readonly records: readonly UsageRecord[];
  readonly sources: readonly ExplainedSource[];
  readonly metricNames: readonly string[];
  /** The clock and close grace that settle an empty day's status (see DayStatus). */
  readonly closing?: { readonly now: Date; readonly graceHours: number };
}

/**
 * Ties an account-day's counters to its log objects: the day as the usage API reports
 * it, its revisions, and the sources, checked against the counters. Pure.
 */
export function buildExplanation(input: ExplanationInput): DayExplanation {
  const { accountId, day } = input;
  const report = buildUsageReport({
    accountId,
    from: day,
    to: day,
    granularity: 'day',
    records: input.records,
    metricNames: [...input.metricNames, ...input.sources.flatMap((source) => Object.keys(source.metrics))],
    ...(input.closing === undefined ? {} : { closing: input.closing }),
  });
  const names = report.metricNames;
  const row = report.days[0]!;
  const sources = [...input.sources]
    .map((source) => ({
      ...source,
      metrics: Object.fromEntries(names.map((name) => [name, source.metrics[name] ?? 0])),
      hours: source.hours === undefined || source.hours === null ? null : source.hours.map((row) => ({ hour: row.hour, metrics: Object.fromEntries(names.map((name) => [name, row.metrics[name] ?? 0])) })),
    }))
    .sort((a, b) => compare(a.key, b.key) || compare(a.etag, b.etag) || compare(a.bucket, b.bucket));
  const sourceTotals = Object.fromEntries(names.map((name) => [name, sources.reduce((sum, source) => sum + (source.metrics[name] ?? 0), 0)]));
  const gap = Object.fromEntries(names.map((name) => [name, (row.metrics[name] ?? 0) - (sourceTotals[name] ?? 0)]));
  const unresolved = sources.filter((source) => source.unresolved === true).length;
  const adds = Object.values(gap).every((value) => value === 0);
  const complete = adds && unresolved === 0;
  const revisions = input.records
    .flatMap((record) => (record.kind === 'revision' && record.day === day ? [record] : []))
    .sort((a, b) => a.revision - b.revision)
    .map((record) => ({ revision: record.revision, createdAt: record.createdAt ?? '', metrics: Object.fromEntries(names.map((name) => [name, record.metrics[name] ?? 0])) }));
  return {
    accountId,
    day,
    status: row.status,
    closedAt: row.closedAt ?? null,
    metricNames: names,
    metrics: row.metrics,
    adjustments: report.adjustments.map(({ id, metric, delta, reason, createdAt }) => ({ id, metric, delta, reason, createdAt })),
    totals: row.totals,
    ...hoursOfDay(input.records, day, row.metrics, names),
    revisions,
    sources,
    sourceTotals,
    complete,
    ...(complete ? {} : { missing: { metrics: gap, reason: missingReason(gap, unresolved, day) } }),
  };
}

/**
 * The day's hours as the usage API shows them ({@link dayHours}): the shards' hour sums
 * (every shard's added), or the recomputed ones of its backfilled-hours item plus what the
 * shards gained since it was written (`hoursSource: 'backfill'` either way, `hoursCountedSince`
 * when the shards gained any).
 */
function hoursOfDay(
  records: readonly UsageRecord[],
  day: string,
  metrics: MetricValues,
  names: readonly string[],
): Pick<DayExplanation, 'hours' | 'hoursSource' | 'hoursCountedSince' | 'hoursReason'> {
  const shards: Record<number, Record<string, number>> = {};
  let backfilled: BackfillOfDay | undefined;
  for (const record of records) {
    if (record.day !== day) continue;
    if (record.kind === 'usage' && record.hours !== undefined) addHourSums(shards, record.hours);
    else if (record.kind === 'hours') backfilled = record;
  }
  const known = dayHours(metrics, shards, backfilled);
  if (known.hours === null) return { hours: null, hoursReason: `${known.reason} (\`tally backfill --hours --from ${day} --to ${day}\`)` };
  return { hours: hourFigures(known.hours, names, true), hoursSource: known.source, ...(known.countedSince === true ? { hoursCountedSince: true as const } : {}) };
}

function missingReason(gap: MetricValues, unresolved: number, day: string): string {
  const reasons: string[] = [];
  const values = Object.values(gap);
  if (values.some((value) => value > 0)) {
    reasons.push(
      'the counters hold more than the listed objects: objects counted before contributions were recorded ' +
        `(run tally backfill --from ${day} --to ${day}, and the day before, to record them; nothing is counted again), ` +
        'objects being counted right now, or ledger entries past their TTL',
    );
  }
  if (values.some((value) => value < 0)) reasons.push('the listed objects hold more than the counters: an object whose increments are still being applied');
  if (unresolved > 0) reasons.push(`${unresolved} object(s) have unresolved increments, not applied until tally reconcile --resolve settles them`);
  return reasons.join('; ');
}

/**
 * The explanation as CSV (RFC 4180, CRLF), one row per part, the metrics as columns:
 *
 * ```
 * account,day,part,id,detail,created_at,requests,bytes
 * acme,2026-11-21,source,s3://logs/E2.2026-11-21-10.abc.gz,etag standard,2026-11-21T11:02:03Z,12,3456
 * acme,2026-11-21,sources_total,,,,...     sum of the sources
 * acme,2026-11-21,measured,,open,,...      the counters (complete: true|false in detail)
 * acme,2026-11-21,adjustment,<id>,<reason>,<createdAt>,...   the delta under its metric
 * acme,2026-11-21,total,,,,...             measured + adjustments
 * acme,2026-11-21,revision,1,,<createdAt>,...
 * acme,2026-11-21,hour,2026-11-21T05:00:00Z,shards,,...        24 rows, the day's hours (or backfill)
 * acme,2026-11-21,hours_unknown,,<why>,,,                      instead, when they are unknown (no figures)
 * acme,2026-11-21,source_hour,s3://logs/E2...gz,2026-11-21T10:00:00Z,,...   an object's hours with usage
 * ```
 */
export function explanationCsv(explanation: DayExplanation): string {
  const names = explanation.metricNames;
  const head = [csvTextCell(explanation.accountId), csvTextCell(explanation.day)];
  const row = (part: string, id: string, detail: string, createdAt: string, values: MetricValues) =>
    [...head, ...[part, id, detail, createdAt].map(csvTextCell), ...names.map((name) => csvNumberCell(values[name] ?? 0))].join(',');
  const zero = Object.fromEntries(names.map((name) => [name, 0]));
  const lines = [
    ['account', 'day', 'part', 'id', 'detail', 'created_at', ...names].map(csvTextCell).join(','),
    ...explanation.sources.map((source) =>
      row('source', `s3://${source.bucket}/${source.key}`, `${source.etag} ${source.format}${source.unresolved ? ' unresolved' : ''}`, source.processedAt, source.metrics),
    ),
    row('sources_total', '', '', '', explanation.sourceTotals),
    row('measured', '', `${explanation.status} complete:${explanation.complete}`, explanation.closedAt ?? '', explanation.metrics),
    ...explanation.adjustments.map((adjustment) => row('adjustment', adjustment.id, adjustment.reason, adjustment.createdAt, { ...zero, [adjustment.metric]: adjustment.delta })),
    row('total', '', '', '', explanation.totals),
    ...explanation.revisions.map((revision) => row('revision', String(revision.revision), '', revision.createdAt, revision.metrics)),
    ...(explanation.hours === null
      ? [[...head, ...['hours_unknown', '', explanation.hoursReason ?? '', ''].map(csvTextCell), ...names.map(() => '')].join(',')]
      : explanation.hours.map((hour) => row('hour', hourStart(explanation.day, hour.hour), explanation.hoursSource ?? '', '', hour.metrics))),
    ...explanation.sources.flatMap((source) =>
      (source.hours ?? []).map((hour) => row('source_hour', `s3://${source.bucket}/${source.key}`, hourStart(explanation.day, hour.hour), '', hour.metrics)),
    ),
  ];
  return `${lines.join('\r\n')}\r\n`;
}

/** `2026-11-21T05:00:00Z`: the start of UTC hour `hour` of `day`. */
export function hourStart(day: string, hour: number): string {
  return `${day}T${String(hour).padStart(2, '0')}:00:00Z`;
}

/** The file name of an explanation's CSV download. */
export function explanationCsvFileName(explanation: Pick<DayExplanation, 'accountId' | 'day' | 'page' | 'pages'>): string {
  const page = explanation.pages !== undefined && explanation.pages > 1 ? `-page-${explanation.page}` : '';
  return `tally-${explanation.accountId}-${explanation.day}-explain${page}.csv`;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Log objects one read API answer lists. A busy account-day has thousands (CloudFront
 * writes a file per edge location several times an hour), each some hundreds of bytes
 * with its hours: all of them passed Lambda's 6 MB response
 * (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html) and the
 * answer was an error. 2,000 stay near 1 MB.
 */
export const EXPLAIN_SOURCES_PER_PAGE = 2_000;

/**
 * The explanation with page `page` (from 1) of its sources, in their key order, and
 * `sourceCount`, `page`, `pages`; its sums and `complete` stay those of every source.
 * A page past the last is a ValidationError saying how many there are.
 *
 * @example pageOfExplanation(explanation, 2).sources // sources 2,001 to 4,000
 */
export function pageOfExplanation(explanation: DayExplanation, page: number, perPage = EXPLAIN_SOURCES_PER_PAGE): DayExplanation {
  const sourceCount = explanation.sources.length;
  const pages = Math.max(1, Math.ceil(sourceCount / perPage));
  if (page > pages) {
    throw new ValidationError(`page=${page}: ${explanation.accountId} on ${explanation.day} has ${sourceCount} log object(s), ${pages} page(s) of ${perPage}`);
  }
  return { ...explanation, sources: explanation.sources.slice((page - 1) * perPage, page * perPage), sourceCount, page, pages };
}
