import { createReadStream } from 'node:fs';
import { readMetricRules, readResolver } from '../../adapters/config';
import { FILE_READ_BYTES, logText } from '../../adapters/log-text';
import { PoisonObjectError } from '../../domain/errors';
import { countLog } from '../../domain/log-counter';
import { metricNames } from '../../domain/metric-rules';
import { addLineCounts, emptyLineCounts, UsageTally, type AccountDayUsage, type LineCounts } from '../../domain/usage-tally';
import { defineCommand, JSON_OPTION } from '../command';
import { formatTable } from '../io';

/** The `--json` output of `tally count`; a public contract: fields are added, never renamed. */
export interface CountReport {
  usage: { account: string; day: string; metrics: Record<string, number> }[];
  lines: LineCounts;
}

/**
 * Why a local file could not be counted, in the words of files: a poison object's
 * reason (what is wrong with the log) under the file's name, not the object's.
 */
function fileProblem(file: string, error: unknown): string {
  if ((error as NodeJS.ErrnoException).code === 'ENOENT') return `${file}: no such file`;
  const reason = error instanceof PoisonObjectError ? error.reason : (error as Error).message;
  return `file ${file}: ${reason}`;
}

/** Counts files one after another and sums them. */
export async function countFiles(files: readonly string[], options: { resolver: string; metrics?: string }): Promise<CountReport> {
  const resolver = readResolver(options.resolver, '--resolver');
  const metricRules = readMetricRules(options.metrics, '--metrics');
  const total = new UsageTally(metricNames(metricRules));
  const lines = emptyLineCounts();
  for (const file of files) {
    let count;
    try {
      const text = logText(createReadStream(file, { highWaterMark: FILE_READ_BYTES }), file);
      count = await countLog(text, { resolver, metricRules, objectKey: file }, file);
    } catch (error) {
      throw new Error(fileProblem(file, error), { cause: error });
    }
    total.merge(count.tally);
    addLineCounts(lines, count.lines);
  }
  return { usage: total.usage().map((row: AccountDayUsage) => ({ ...row })), lines };
}

/** `tally count FILE...`: no AWS needed; exit 1 when a file cannot be read as a log. */
export const countCommand = defineCommand<{ resolver: string; metrics?: string; json?: boolean }>({
  name: 'count',
  summary: 'count local CloudFront log files, no AWS needed',
  description:
    'Counts local CloudFront standard log files (.log or .log.gz) with the ingest parser, without ' +
    'any AWS service, and prints usage per account and day plus what became of every line: ' +
    'read = counted + unattributed + malformed.',
  arguments: [{ name: '<file...>', help: 'log files to count, summed together' }],
  options: [
    {
      flags: '--resolver <spec>',
      help: 'account resolver: host-label, host-map:FILE, path:REGEX or key:PATTERN',
      default: 'host-label',
    },
    { flags: '--metrics <json>', help: 'metric rules as JSON, as TALLY_METRICS' },
    JSON_OPTION,
  ],
  async run({ options, args, context: { io } }) {
    const report = await countFiles(args, {
      resolver: options.resolver,
      ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
    });
    if (options.json === true) {
      io.out(`${JSON.stringify(report)}\n`);
      return 0;
    }
    const metrics = report.usage[0] === undefined ? ['requests', 'bytes'] : Object.keys(report.usage[0].metrics);
    io.out(
      formatTable(
        ['account', 'day', ...metrics],
        report.usage.map((row) => [row.account, row.day, ...metrics.map((metric) => String(row.metrics[metric] ?? 0))]),
      ),
    );
    const { read, counted, unattributed, malformed } = report.lines;
    io.out(`\nlines read ${read} = counted ${counted} + unattributed ${unattributed} + malformed ${malformed}\n`);
    return 0;
  },
});
