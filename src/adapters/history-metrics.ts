import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import type { HistorySummary } from '../app/history-gauge';

/** The namespace and service the ingest function's metrics carry (the alarms in serverless.yml match them). */
export const METRICS_NAMESPACE = 'Tally';
export const INGEST_SERVICE = 'tally-ingest';

/**
 * Publishes one invocation's history summary in CloudWatch embedded metric format:
 * `HistoryHorizonSeconds` (alarmed when its minimum falls below the redelivery
 * window), `HistoryKeys` and `HistoryForcedDrops`. Nothing is written when no
 * increment was applied.
 */
export function publishHistoryMetrics(metrics: Metrics, summary: HistorySummary): void {
  if (summary.maxKeys === 0) return;
  if (summary.horizonSeconds !== undefined) metrics.addMetric('HistoryHorizonSeconds', MetricUnit.Seconds, summary.horizonSeconds);
  metrics.addMetric('HistoryKeys', MetricUnit.Count, summary.maxKeys);
  metrics.addMetric('HistoryForcedDrops', MetricUnit.Count, summary.forcedDrops);
  metrics.publishStoredMetrics();
}
