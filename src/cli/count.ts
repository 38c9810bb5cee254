import { createReadStream } from 'node:fs';
import { parseArgs } from 'node:util';
import { readMetricRules, readResolver } from '../adapters/config';
import { countLogStream } from '../domain/log-counter';
import { metricNames } from '../domain/metric-rules';
import { addLineCounts, emptyLineCounts, UsageTally, type AccountDayUsage, type LineCounts } from '../domain/usage-tally';
import { formatTable, type CliIo } from './io';

export const COUNT_USAGE = `usage: tally count FILE... [--resolver host-label|host-map:FILE|path:REGEX|key:PATTERN]
                    [--metrics JSON] [--json]

Counts local CloudFront standard logs (.log or .log.gz) with the ingest parser,
without any AWS service, and prints usage per account and day plus what became of
every line: read = counted + unattributed + malformed.`;

/** The `--json` output of `tally count`; a public contract: fields are added, never renamed. */
export interface CountReport {
  usage: { account: string; day: string; metrics: Record<string, number> }[];
  lines: LineCounts;
}

/** Counts files one after another and sums them. */
export async function countFiles(
  files: readonly string[],
  options: { resolver: string; metrics?: string },
): Promise<CountReport> {
  const resolver = readResolver(options.resolver, '--resolver');
  const metricRules = readMetricRules(options.metrics, '--metrics');
  const total = new UsageTally(metricNames(metricRules));
  const lines = emptyLineCounts();
  for (const file of files) {
    let count;
    try {
      count = await countLogStream(createReadStream(file), { resolver, metricRules, objectKey: file }, file);
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message;
      throw new Error(reason.includes(file) ? reason : `${file}: ${reason}`, { cause: error });
    }
    total.merge(count.tally);
    addLineCounts(lines, count.lines);
  }
  return { usage: total.usage().map((row: AccountDayUsage) => ({ ...row })), lines };
}

export async function runCount(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      resolver: { type: 'string', default: 'host-label' },
      metrics: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.out(`${COUNT_USAGE}\n`);
    return 0;
  }
  if (positionals.length === 0) {
    io.err(`tally count: name at least one log file\n${COUNT_USAGE}\n`);
    return 2;
  }
  const report = await countFiles(positionals, {
    resolver: values.resolver,
    ...(values.metrics === undefined ? {} : { metrics: values.metrics }),
  });
  if (values.json) {
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
}
