import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { evaluateThresholds, type ThresholdReport } from '../src/app/billing/thresholds';
import { createClients } from '../src/adapters/clients';
import { readThresholdConfig } from '../src/adapters/wiring/handoff-config';
import { createThresholdDeps } from '../src/adapters/wiring/handoff-deps';
import { powertoolsLog } from '../src/adapters/powertools-log';

const config = readThresholdConfig(process.env);
const logger = new Logger({ serviceName: 'tally-thresholds', logLevel: config.tally.logLevel.toUpperCase() as 'INFO' });
const deps = createThresholdDeps(config, createClients(config.tally), powertoolsLog(logger));

/**
 * EventBridge schedule (every 5 minutes) -> month-to-date of every account with a
 * quota -> a `usage.threshold` event once per (account, metric, month, level). An
 * account that fails is retried by the next run; the invocation fails (and alarms).
 */
export const handler = async (_event: unknown, context: Context): Promise<ThresholdReport> => {
  logger.addContext(context);
  const report = await evaluateThresholds(deps);
  logger.info('threshold run', { months: report.months, evaluated: report.evaluated, crossed: report.crossed.length, sent: report.sent.length, pending: report.pending, failed: report.failed });
  if (report.failed > 0) throw new Error(`${report.failed} threshold evaluation(s) or event(s) failed; the next run retries them`);
  return report;
};
