import { buildUsageReport } from '../../domain/reading/usage-report';
import type { UsageReader } from '../ports';

/**
 * The billable total of one metric of one account-day, as the read API, the CSV and
 * explain show it (measured usage plus adjustments): the figure the negative-total
 * guard of `tally adjust` and `tally adjustments revert` protects.
 */
export async function billableTotal(reader: UsageReader, account: string, day: string, metric: string): Promise<number> {
  const { records } = await reader.read(account, day, day, { closedDays: false });
  const report = buildUsageReport({ accountId: account, from: day, to: day, granularity: 'day', records, metricNames: [metric] });
  return report.totals[metric] ?? 0;
}
