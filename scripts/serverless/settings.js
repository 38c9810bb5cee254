'use strict';

// Values of serverless.yml that restate a fact the code owns, read from the code rather
// than written twice. The sources: `src/adapters/config.ts` (DEFAULTS) and
// `src/adapters/http/jwt-tokens.ts` (token audience and issuer). serverless.yml reads them as
// `${file(./scripts/serverless/settings.js):<name>.<field>}`; osls calls the exported
// functions while it resolves variables, offline, so `npm run package` needs no build.
//
// Plain CommonJS because osls loads it with require(); the TypeScript sources are
// loaded through tsx (a dev dependency, like osls itself).

/** Defaults of the code that stage params repeat, read from the TypeScript sources. */
function codeDefaults() {
  const { require: requireTs } = require('tsx/cjs/api');
  const { DEFAULTS } = requireTs('../../src/adapters/config.ts', __filename);
  const { DEFAULT_JWT_AUDIENCE, DEFAULT_JWT_ISSUER } = requireTs('../../src/adapters/http/jwt-tokens.ts', __filename);
  const { HANDOFF_DEFAULTS } = requireTs('../../src/adapters/wiring/handoff-config.ts', __filename);
  return { ...DEFAULTS, ...HANDOFF_DEFAULTS, jwtAudience: DEFAULT_JWT_AUDIENCE, jwtIssuer: DEFAULT_JWT_ISSUER };
}

/**
 * Queue and visibility timings of the ingest function, derived from its timeout and the
 * handler's heartbeat (seconds):
 * - while a message is worked on, the handler re-arms its visibility to the function
 *   timeout plus one heartbeat, so a crashed invocation's messages come back soon;
 * - the queue's own visibility timeout is six times the function timeout, as Lambda
 *   advises for SQS event sources ("at least six times the configuration timeout on your
 *   function": https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html).
 *
 * @param {number} timeoutSeconds
 * @param {number} heartbeatSeconds
 */
function ingestTimings(timeoutSeconds, heartbeatSeconds) {
  return {
    heartbeatSeconds,
    messageVisibilityTimeout: timeoutSeconds + heartbeatSeconds,
    queueVisibilityTimeout: 6 * timeoutSeconds,
  };
}

/**
 * The Stripe running sweep's schedule from its interval in minutes (TALLY_STRIPE_RUNNING_MINUTES):
 * an EventBridge rate (singular for one minute), off at 0.
 *
 * @param {number} minutes
 */
function stripeRunningSchedule(minutes) {
  if (!Number.isInteger(minutes) || minutes < 0 || minutes > 1440) throw new Error(`stripeRunningMinutes must be an integer from 0 to 1440, got ${minutes}`);
  return { minutes: String(minutes), enabled: minutes > 0, rate: minutes <= 1 ? 'rate(1 minute)' : `rate(${minutes} minutes)` };
}

module.exports = {
  codeDefaults,
  /** For the Stripe sender's schedule: from `custom.stripe.runningMinutes` (the stage param). */
  stripeRunning: async ({ resolveConfigurationProperty }) =>
    stripeRunningSchedule(Number(await resolveConfigurationProperty(['custom', 'stripe', 'runningMinutes']))),
  stripeRunningSchedule,
  /** For `custom.ingest.timings`: from `custom.ingest.timeout` and the code's heartbeat. */
  ingest: async ({ resolveConfigurationProperty }) => {
    const timeout = Number(await resolveConfigurationProperty(['custom', 'ingest', 'timeout']));
    return ingestTimings(timeout, codeDefaults().heartbeatSeconds);
  },
  ingestTimings,
};
