import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { closeDays, type CloseReport } from '../src/app/billing/close-days';
import { handPendingAccounts } from '../src/app/billing/stripe-sync';
import { createClients } from '../src/adapters/clients';
import { readCloserConfig } from '../src/adapters/wiring/handoff-config';
import { createCloserDeps, createStripeHandOff } from '../src/adapters/wiring/handoff-deps';
import { powertoolsLog } from '../src/adapters/powertools-log';

const config = readCloserConfig(process.env);
const logger = new Logger({ serviceName: 'tally-closer', logLevel: config.tally.logLevel.toUpperCase() as 'INFO' });
const clients = createClients(config.tally);
const deps = createCloserDeps(config, clients, powertoolsLog(logger));
const stripeHandOff = createStripeHandOff(config, clients);

/**
 * EventBridge schedule (hourly) -> close the days that are due, record late usage as
 * revisions, export and queue the webhook events; with Stripe, hand the sender every
 * linked account with a record still pending (it goes out within the hour). A day that
 * fails is resumed by the next run; the invocation fails (and alarms) so that someone looks.
 */
export const handler = async (_event: unknown, context: Context): Promise<CloseReport> => {
  logger.addContext(context);
  const report = await closeDays(deps);
  logger.info('closer run', { lastClosableDay: report.lastClosableDay, days: report.days, markers: report.markers, failed: report.failed });
  if (stripeHandOff !== undefined) {
    const { linked, handed } = await handPendingAccounts(stripeHandOff);
    if (handed > 0) logger.info('linked accounts with pending Stripe records handed to the sender', { linked, handed });
  }
  if (report.failed > 0) throw new Error(`${report.failed} day(s) could not be closed or revised; the next run resumes them`);
  return report;
};
