import { countsEstimates } from '../domain/logs/log-fields';
import type { TallyConfig } from '../adapters/config';
import { metricNames } from '../domain/logs/metric-rules';
import { formatShards } from '../domain/counters/idempotency-key';

/**
 * The settings that decide what inline ingestion and a recount produce. Printed
 * before such work: they must be the consumer's own, or keys, shards or metrics differ.
 */
export function describeIngestSettings(config: TallyConfig): string {
  const resolver = config.resolver.kind;
  return (
    `resolver ${resolver}, metrics ${metricNames(config.metricRules, { estimates: countsEstimates(config.logFormat) }).join(', ')}, ` +
    `${formatShards(config.keyScheme)} shards, ${config.keyScheme.keyBytes}-byte keys, cap ${config.historyCap}`
  );
}
