import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { readLogFormat, readMetricRules, readResolver } from '../../../adapters/config';
import { openLogFile } from '../../../adapters/logs/log-opening';
import { missedHostReason, RESOLVER_FORMS } from '../../../domain/logs/account-resolver';
import { ConfigError, PoisonObjectError, ValidationError } from '../../../domain/errors';
import { printable } from '../../../domain/printable';
import { countObject, type CountSettings, type FormatCount } from '../../../domain/logs/log-formats';
import { countsEstimates } from '../../../domain/logs/log-fields';
import { metricNames } from '../../../domain/logs/metric-rules';
import { addLineCounts, emptyLineCounts, UsageTally, type LineCounts } from '../../../domain/logs/usage-tally';
import { defineCommand, JSON_OPTION } from '../../command';
import { countGranularity, timeZone, UTC_ZONE, zoneUsage, type AccountHourUsage, type CountGranularity, type ZonedUsage } from '../../count-hours';
import { formatTable } from '../../io';
import { chooseCountSettings, describeCountSettings } from '../../count-settings';

/** The `--json` output of `tally count`; a public contract: fields are added, never renamed. */
export interface CountReport {
  /** Per account and day: UTC days, or with `--tz` the zone's days (sums of whole UTC hours). */
  usage: { account: string; day: string; metrics: Record<string, number> }[];
  lines: LineCounts;
  /** With `--tz` or `--granularity hour`: the zone the days and hours are in. */
  timeZone?: string;
  /** With `--granularity hour`: per account and hour with usage, `start` with the zone's offset. */
  hours?: AccountHourUsage[];
  /** With `--tz` or `--granularity hour`: per UTC account-day, usage of lines with no time of day (in no hour). */
  timeless?: { account: string; day: string; metrics: Record<string, number> }[];
}

/**
 * Why a local file could not be counted, in the words of files: a poison object's
 * reason (what is wrong with the log) under the file's name, not the object's.
 */
function fileProblem(file: string, error: unknown): string {
  const unopened = UNOPENED[(error as NodeJS.ErrnoException).code ?? ''];
  if (unopened !== undefined) return `file ${printable(file, 200)}: ${unopened}`;
  const reason = error instanceof PoisonObjectError ? error.reason : (error as Error).message;
  return `file ${printable(file, 200)}: ${reason}`;
}

/**
 * Why a file named on the command line could not be opened, by its error code: a wrong
 * name or a file out of reach is a usage error (exit 2, as `tally put` says it), not a
 * log that cannot be read (exit 1).
 */
const UNOPENED: Readonly<Record<string, string>> = { ENOENT: 'no such file', EACCES: 'no permission to read it', EPERM: 'no permission to read it' };

/**
 * Counts one local log file as the consumer counts its object, or throws an Error whose
 * message is the file's problem (cannot gunzip, not a CloudFront log; a ValidationError,
 * exit 2, when there is no such file or it may not be read): what `tally count` and
 * `tally put` (which refuses such a file before putting anything) both say.
 */
export async function countLogFile(file: string, settings: CountSettings, shownName = file): Promise<FormatCount> {
  try {
    return await countObject(await openLogFile(file), settings, shownName, shownName);
  } catch (error) {
    const problem = fileProblem(shownName, error);
    if (UNOPENED[(error as NodeJS.ErrnoException).code ?? ''] !== undefined) throw new ValidationError(problem, { cause: error });
    throw new Error(problem, { cause: error });
  }
}

/** What `tally count` reads files with: the flags, as the consumer's variables. */
export interface CountFileOptions {
  readonly resolver: string;
  readonly metrics?: string;
  /** As TALLY_LOG_FIELDS: the fields of files with no header. */
  readonly fields?: string;
  readonly delimiter?: string;
  readonly samplingRate?: string;
  /** The folder relative file names are read from (default: the process's). */
  readonly cwd?: string;
}

/** Counts files one after another and sums them (estimates of sampled files under their own metrics). */
export async function countFiles(files: readonly string[], options: CountFileOptions): Promise<CountReport> {
  const { total, lines } = await countFilesMissing(files, options);
  return { usage: total.dayUsage(), lines };
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i]);
}

/** {@link countFiles}, with the hosts the resolver could not attribute (the first few of each file). */
async function countFilesMissing(
  files: readonly string[],
  options: CountFileOptions,
): Promise<{ total: UsageTally; lines: LineCounts; missed: string[] }> {
  const resolver = readResolver(options.resolver, '--resolver');
  const metricRules = readMetricRules(options.metrics, '--metrics');
  if (options.delimiter === '') throw new ConfigError('--delimiter must be 1 to 5 characters (a tab: "\\t")');
  const logFormat = readLogFormat(options, resolver, metricRules, { fields: '--fields', delimiter: '--delimiter', samplingRate: '--sampling-rate' });
  // A sampled real-time file counts under estimated_* metrics: the total carries both.
  let total = new UsageTally(metricNames(metricRules, { estimates: countsEstimates(logFormat) }));
  const lines = emptyLineCounts();
  const missed: string[] = [];
  for (const file of files) {
    const count = await countLogFile(resolve(options.cwd ?? '.', file), { resolver, metricRules, logFormat }, file);
    // The first file's tally is the total, later ones merged row by row when the names
    // agree (always, today): building each row's usage object with its hours only to add
    // it took a fresh process's `tally count` about 15 ms, and merging 402 rows 3 ms (issue 34).
    if (sameNames(count.tally.metricNames, total.metricNames)) {
      if (total.size === 0) total = count.tally;
      else total.merge(count.tally);
    } else for (const row of count.tally.usage()) total.addUsage(row);
    addLineCounts(lines, count.lines);
    for (const host of count.unattributedSamples ?? []) if (missed.length < MISSED_SHOWN && !missed.includes(host)) missed.push(host);
    // Each file's own totals are exact (log-formats.ts refuses one that is not); their sum may not be.
    const inexact = total.firstInexactTotal();
    if (inexact !== undefined) {
      throw new ValidationError(
        `${inexact.metric} of account ${printable(inexact.account)} on ${inexact.day} adds up past ${Number.MAX_SAFE_INTEGER} (2^53 - 1) over the files up to ${printable(file, 200)}, ` +
          'where sums stop being exact: nothing is printed rounded; count fewer files at once',
      );
    }
  }
  return { total, lines, missed };
}

/**
 * The tables `tally count` prints: per account and day (of `zone`), then with hours per
 * account, day and hour with usage (the hour as local time and offset, `01:00-05:00`,
 * so the hour that occurs twice on a fall-back day reads apart), then the usage of
 * lines with no time of day, which no hour and no day of another zone holds.
 */
export function printCount(
  days: ZonedUsage['days'],
  names: readonly string[],
  zone: string,
  hours: readonly AccountHourUsage[] | undefined,
  timeless: ZonedUsage['timeless'],
): string {
  const columns = names.length === 0 ? ['requests', 'bytes'] : names;
  const values = (metrics: Record<string, number>) => columns.map((metric) => String(metrics[metric] ?? 0));
  const dayTitle = zone === UTC_ZONE ? 'day' : `day (${zone})`;
  let text = formatTable(['account', dayTitle, ...columns], days.map((row) => [row.account, row.day, ...values(row.metrics)]));
  if (hours !== undefined) {
    text += `\nhours with usage (${zone}):\n`;
    text += formatTable(['account', dayTitle, 'hour', ...columns], hours.map((row) => [row.account, row.day, row.start.slice(11, 16) + row.start.slice(19), ...values(row.metrics)]));
  }
  if (timeless.length > 0) {
    text += `\nlines with no time of day (in no hour${zone === UTC_ZONE ? '' : `, so in no day of ${zone}`}):\n`;
    text += formatTable(['account', 'day (UTC)', ...columns], timeless.map((row) => [row.account, row.day, ...values(row.metrics)]));
  }
  return text;
}

/**
 * Refuses `--resolver ""`, `--fields ""` or `--sampling-rate ""` (often an unset shell
 * variable): taken as not given, they would silently fall back to the environment or the
 * local stack's settings. `--metrics ""` means no metric rules; `--delimiter ""` is refused
 * where the delimiter is read.
 */
function refuseEmptyCountFlags(options: { readonly resolver?: string; readonly fields?: string; readonly samplingRate?: string }): void {
  const flags = { '--resolver': options.resolver, '--fields': options.fields, '--sampling-rate': options.samplingRate };
  for (const [flag, value] of Object.entries(flags)) {
    if (value === '') throw new ConfigError(`${flag} is empty: give it a value, or leave it out to use the environment or the local stack's settings`);
  }
}

/**
 * Refuses, before anything is read, a file argument that names no log file: an empty
 * name (an unset shell variable; it would read the folder), a name with a NUL, a folder, a device such as
 * /dev/zero (endless bytes: the count would never end) or a socket. `pipes` lets a FIFO
 * through (`tally count <(zcat a.gz)` streams it once); `tally put` reads a file twice and
 * takes regular files only. A missing file is left to the reader ("no such file").
 */
export function refuseNonLogFiles(names: readonly string[], cwd: string, pipes: boolean): void {
  for (const name of names) {
    if (name.trim() === '') throw new ValidationError(`file "${name}": the file name is empty`);
    // The file system takes no NUL in a name (Node throws a TypeError: it was exit 1).
    if (name.includes('\u0000')) throw new ValidationError(`file ${printable(name, 200)}: a file name has no NUL character`);
    let kind: string | undefined;
    try {
      const stats = statSync(resolve(cwd, name));
      if (stats.isDirectory()) kind = 'a folder';
      else if (stats.isFIFO()) kind = pipes ? undefined : 'a pipe (put reads a file twice: save it to a file first)';
      else if (!stats.isFile()) kind = 'a device or socket';
    } catch {
      continue;
    }
    if (kind !== undefined) throw new ValidationError(`file ${printable(name, 200)}: is ${kind}, not a log file`);
  }
}

/** Hosts the resolver missed that `tally count` names, over all its files. */
const MISSED_SHOWN = 5;

/** `tally count FILE...`: no AWS needed; exit 1 when a file cannot be read as a log, 2 when it is missing or out of reach. */
export const countCommand = defineCommand<{
  resolver?: string;
  metrics?: string;
  fields?: string;
  delimiter?: string;
  samplingRate?: string;
  granularity: CountGranularity;
  tz: string;
  json?: boolean;
}>({
  name: 'count',
  summary: 'count local CloudFront log files, no AWS needed',
  description:
    'Counts local CloudFront log files in any format (standard legacy and v2: w3c, JSON, plain, Parquet; ' +
    'Firehose and real-time logs; gzipped or not, told from the content) with the ingest parser, without ' +
    'any AWS service, and prints usage per account and day plus what became of every line: ' +
    'read = counted + unattributed + malformed. With --granularity hour, also every hour with usage; ' +
    'with --tz, days of that zone (sums of whole UTC hours, as the read API makes them).',
  arguments: [{ name: '<file...>', help: 'log files to count, summed together' }],
  options: [
    {
      flags: '--resolver <spec>',
      help: `account resolver: ${RESOLVER_FORMS} (default: TALLY_RESOLVER, else the running local stack's, else host-label)`,
    },
    { flags: '--metrics <json>', help: "metric rules as JSON, as TALLY_METRICS (default: TALLY_METRICS, else the running local stack's, else none)" },
    { flags: '--fields <list>', help: 'fields of files with no header, as TALLY_LOG_FIELDS (a comma list, or realtime:<comma list>)' },
    { flags: '--delimiter <text>', help: 'between the fields of w3c and plain lines, as TALLY_LOG_DELIMITER (default: tab)' },
    { flags: '--sampling-rate <percent>', help: 'of real-time logs, as TALLY_SAMPLING_RATE: counts become estimated_* metrics' },
    { flags: '--granularity <unit>', help: 'day, or hour: also every hour with usage, per account', read: countGranularity, default: 'day' },
    {
      flags: '--tz <zone>',
      help: 'IANA time zone of the days and hours printed (default UTC); days in it are sums of whole UTC hours, zones with sub-hour offsets are refused',
      read: timeZone,
      default: UTC_ZONE,
    },
    JSON_OPTION,
  ],
  async run({ options, args, context: { io, env, cwd } }) {
    const { fields, delimiter, samplingRate } = options;
    refuseEmptyCountFlags(options);
    refuseNonLogFiles(args, cwd, true);
    const choice = chooseCountSettings(options, env, cwd);
    const settings = describeCountSettings(choice, readMetricRules(choice.metrics, choice.metricsFrom));
    // The settings come first, so that the counts are read with them; --json keeps stdout for the JSON.
    if (options.json === true) io.err(`${settings.join('\n')}\n`);
    else io.out(`${settings.join('\n')}\n\n`);
    const { total, lines, missed } = await countFilesMissing(args, {
      cwd,
      resolver: choice.resolver,
      ...(choice.metrics === undefined ? {} : { metrics: choice.metrics }),
      ...(fields === undefined ? {} : { fields }),
      ...(delimiter === undefined ? {} : { delimiter }),
      ...(samplingRate === undefined ? {} : { samplingRate }),
    });
    const withHours = options.granularity === 'hour';
    const zoned = options.tz !== UTC_ZONE || withHours;
    const names = total.metricNames;
    // Whole UTC days need no hours (zoneUsage reads them for a zone's days and hours only).
    const { days, hours, timeless } = zoned ? zoneUsage(total.usage(), names, options.tz, withHours) : { days: total.dayUsage(), hours: [], timeless: [] };
    if (options.json === true) {
      const report: CountReport = { usage: days, lines, ...(zoned ? { timeZone: options.tz, ...(withHours ? { hours } : {}), timeless } : {}) };
      io.out(`${JSON.stringify(report)}\n`);
      return 0;
    }
    io.out(printCount(days, names, options.tz, withHours ? hours : undefined, timeless));
    const { read, counted, unattributed, malformed } = lines;
    io.out(`\nlines read ${read} = counted ${counted} + unattributed ${unattributed} + malformed ${malformed}\n`);
    if (missed.length > 0) io.out(`hosts of no account: ${missed.map((host) => `${host} (${missedHostReason(host)})`).join(', ')}\n`);
    return 0;
  },
});
