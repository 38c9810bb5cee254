import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import type { HistorySummary } from '../app/ingest/history-gauge';

/** The namespace and service the ingest function's metrics carry (the alarms in serverless.yml match them). */
export const METRICS_NAMESPACE = 'Tally';
export const INGEST_SERVICE = 'tally-ingest';

/**
 * Publishes one invocation's history summary in CloudWatch embedded metric format:
 * `UnresolvedIncrements` (alarmed above 0: an operator settles them with
 * `tally reconcile --resolve`), `HistoryHorizonSeconds` (how long dropped keys had been
 * kept: redeliveries later than that read tombstones), `HistoryKeys` and `HistoryDrops`
 * (keys dropped, each after its tombstone). Nothing is written when no increment was
 * applied or left unresolved.
 */
export function publishHistoryMetrics(metrics: Metrics, summary: HistorySummary): void {
  if (summary.maxKeys === 0 && summary.unresolved === 0) return;
  if (summary.horizonSeconds !== undefined) metrics.addMetric('HistoryHorizonSeconds', MetricUnit.Seconds, summary.horizonSeconds);
  metrics.addMetric('HistoryKeys', MetricUnit.Count, summary.maxKeys);
  metrics.addMetric('HistoryDrops', MetricUnit.Count, summary.drops);
  metrics.addMetric('UnresolvedIncrements', MetricUnit.Count, summary.unresolved);
  metrics.publishStoredMetrics();
}
