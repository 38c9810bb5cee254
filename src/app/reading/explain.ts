import { buildExplanation, type DayExplanation } from '../../domain/reading/explanation';
import type { SourceReader, UsageReader } from '../ports';

export interface ExplainDeps {
  readonly reader: UsageReader;
  readonly sources: SourceReader;
  /** Metrics every explanation carries (base plus configured). */
  readonly metricNames: readonly string[];
  /** The clock and close grace that settle an empty day's status (see DayStatus). */
  readonly closing?: { readonly now: Date; readonly graceHours: number };
}

/**
 * Explains one account-day: its counters, adjustments, revisions and close record (the
 * usage read of that day: the same Query the usage API makes) and its log objects (the
 * ledger's source-day index), read together and checked against each other.
 */
export async function explainDay(deps: ExplainDeps, accountId: string, day: string): Promise<DayExplanation> {
  const [{ records }, { sources }] = await Promise.all([deps.reader.read(accountId, day, day), deps.sources.sourcesOf(accountId, day)]);
  return buildExplanation({ accountId, day, records, sources, metricNames: deps.metricNames, ...(deps.closing === undefined ? {} : { closing: deps.closing }) });
}
