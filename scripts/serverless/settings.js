'use strict';

// Values of serverless.yml that restate a fact the code owns, read from the code rather
// than written twice. The sources: `src/adapters/config.ts` (DEFAULTS) and
// `src/adapters/jwt-tokens.ts` (token audience and issuer). serverless.yml reads them as
// `${file(./scripts/serverless/settings.js):<name>.<field>}`; osls calls the exported
// functions while it resolves variables, offline, so `npm run package` needs no build.
//
// Plain CommonJS because osls loads it with require(); the TypeScript sources are
// loaded through tsx (a dev dependency, like osls itself).

/** Defaults of the code that stage params repeat, read from the TypeScript sources. */
function codeDefaults() {
  const { require: requireTs } = require('tsx/cjs/api');
  const { DEFAULTS } = requireTs('../../src/adapters/config.ts', __filename);
  const { DEFAULT_JWT_AUDIENCE, DEFAULT_JWT_ISSUER } = requireTs('../../src/adapters/jwt-tokens.ts', __filename);
  const { HANDOFF_DEFAULTS } = requireTs('../../src/adapters/handoff-config.ts', __filename);
  return { ...DEFAULTS, ...HANDOFF_DEFAULTS, jwtAudience: DEFAULT_JWT_AUDIENCE, jwtIssuer: DEFAULT_JWT_ISSUER };
}

/**
 * Queue and visibility timings of the ingest function, derived from its timeout and the
 * handler's heartbeat (seconds):
 * - while a message is worked on, the handler re-arms its visibility to the function
 *   timeout plus one heartbeat, so a crashed invocation's messages come back soon;
 * - the queue's own visibility timeout is six times the function timeout, as Lambda
 *   advises for SQS event sources.
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

module.exports = {
  codeDefaults,
  /** For `custom.ingest.timings`: from `custom.ingest.timeout` and the code's heartbeat. */
  ingest: async ({ resolveConfigurationProperty }) => {
    const timeout = Number(await resolveConfigurationProperty(['custom', 'ingest', 'timeout']));
    return ingestTimings(timeout, codeDefaults().heartbeatSeconds);
  },
  ingestTimings,
};
