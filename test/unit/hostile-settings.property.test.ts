import { join } from 'node:path';
import fc from 'fast-check';
import { readConfig } from '../../src/adapters/config';
import { readCloserConfig, readThresholdConfig, readWebhookSenderConfig } from '../../src/adapters/wiring/handoff-config';
import { readUsageApiConfig } from '../../src/adapters/wiring/usage-api-config';
import { readLocalSettings } from '../../src/local/lifecycle/local-settings';
import { runCli } from '../../src/cli/main';
import { ConfigError } from '../../src/domain/errors';
import { METRIC_NAME } from '../../src/domain/logs/metric-rules';
import { captureIo, REPO_ROOT } from '../support/cli';
import { TEST_SECRET } from '../support/tokens';

/**
 * "Every value a tenant or operator sends is bounded": the settings read at cold start
 * (docs/configuration.md) as a law. Any value of any one variable, beside good values of
 * the others, is either taken or refused with a ConfigError naming the variable, at once;
 * never another error (a TypeError, a RangeError from a bound not checked), never a hang.
 */

/** Good values of every reader's required variables. */
const BASE: Readonly<Record<string, string>> = {
  TALLY_TABLE: 'usage-table',
  TALLY_JWT_SECRET: TEST_SECRET,
  TALLY_EXPORT_BUCKET: 'tally-exports',
  TALLY_LOG_BUCKET: 'tally-logs',
  TALLY_LOG_PREFIX: 'cloudfront/',
  TALLY_WEBHOOK_URL: 'https://hooks.example.com/tally',
  TALLY_WEBHOOK_SECRET: 'a-webhook-secret-of-32-characters',
};

/** The readers and the variables each reads (besides readConfig's, which every one reads). */
const READERS: Record<string, { read: (env: Record<string, string | undefined>) => unknown; variables: readonly string[] }> = {
  readConfig: {
    read: readConfig,
    variables: [
      'TALLY_TABLE', 'TALLY_KEY_BYTES', 'TALLY_HISTORY_CAP', 'TALLY_SHARDS', 'TALLY_RESOLVER', 'TALLY_METRICS', 'TALLY_LOG_FIELDS', 'TALLY_LOG_DELIMITER',
      'TALLY_SAMPLING_RATE', 'TALLY_MAX_RECEIVE_COUNT', 'TALLY_LEDGER_TTL_DAYS', 'TALLY_CLOSE_GRACE_HOURS', 'TALLY_INGEST_QUEUE_URL', 'TALLY_VISIBILITY_TIMEOUT',
      'TALLY_HEARTBEAT_SECONDS', 'TALLY_MAX_ATTEMPTS', 'TALLY_MESSAGE_CONCURRENCY', 'TALLY_INCREMENT_CONCURRENCY', 'TALLY_MIN_REMAINING_MS', 'LOG_LEVEL',
      'TALLY_QUOTAS', 'TALLY_QUOTA_LEVELS', 'AWS_ENDPOINT_URL_DYNAMODB', 'AWS_ENDPOINT_URL_S3', 'AWS_ENDPOINT_URL_SQS', 'TALLY_HISTORY_RETENTION_SECONDS', 'TALLY_HISTORY_MAX_KEYS',
    ],
  },
  readUsageApiConfig: { read: readUsageApiConfig, variables: ['TALLY_JWT_SECRET', 'TALLY_JWT_AUDIENCE', 'TALLY_JWT_ISSUER', 'TALLY_CORS_ORIGIN', 'TALLY_DLQ_URL'] },
  readUsageApiConfig_key: { read: (env) => readUsageApiConfig({ ...env, TALLY_JWT_SECRET: undefined }), variables: ['TALLY_JWT_PUBLIC_KEY', 'TALLY_JWT_SECRET_PARAMETER'] },
  readCloserConfig: { read: readCloserConfig, variables: ['TALLY_EXPORT_BUCKET', 'TALLY_EXPORT_PREFIX', 'TALLY_LOG_PREFIX', 'TALLY_WEBHOOK_QUEUE_URL', 'TALLY_STRIPE_QUEUE_URL'] },
  readThresholdConfig: { read: readThresholdConfig, variables: ['TALLY_WEBHOOK_QUEUE_URL'] },
  readLocalSettings: { read: readLocalSettings, variables: ['TALLY_DEMO', 'TALLY_DYNAMODB_START_SECONDS', 'TALLY_METRICS', 'TALLY_SHARDS', 'TALLY_RESOLVER'] },
  readWebhookSenderConfig: {
    read: readWebhookSenderConfig,
    variables: ['TALLY_WEBHOOK_URL', 'TALLY_WEBHOOK_SECRET', 'TALLY_WEBHOOK_BACKOFF_SECONDS', 'TALLY_WEBHOOK_MAX_BACKOFF_SECONDS', 'TALLY_MAX_ATTEMPTS', 'LOG_LEVEL'],
  },
};

/** Numbers and text no setting should fall over on: huge, negative, fractional, not numbers, JSON of every shape, control characters, 100 KB. */
const hostileValue = fc.oneof(
  fc.constantFrom(
    '', ' ', '0', '-1', '1.5', '1e309', '-1e309', 'NaN', 'Infinity', '0x10', '1e3', '9'.repeat(400), '9007199254740993', '-0',
    '{}', '[]', 'null', 'true', '"x"', '{"requests":1e309}', '{"requests":-1}', '{"requests":1.5}', '{"__proto__":{"x":1}}', '[{"name":"x"}]', `[${'1,'.repeat(10_000)}1]`,
    '1,2,3', '0,100', '50,50', '101', `${'1,'.repeat(10_000)}1`, '4,16@2027-01-01,8@2026-01-01', '4,16@9999-12-31', `4${',4@2030-01-01'.repeat(5_000)}`,
    'host-map:/dev/zero', 'host-map:{', 'path:(', 'path:(?<account>(a+)+)$', 'key:{account}', 'distribution:/', 'realtime:', 'realtime:timestamp',
    'http://[::', 'notaurl', 'file:///etc/passwd', 'https://x.example/a b', '*', 'https://a.example,', ',', 'null,https://a.example',
    '\u0000', '\n', '🙂', 'a\ud800b', 'x'.repeat(100_000), '../../etc/passwd', 'arn:', '/',
  ),
  fc.string({ maxLength: 30 }),
  fc.double().map(String),
  fc.json({ maxDepth: 3 }),
);

describe('the settings read at cold start take a value or refuse it naming the variable', () => {
  const cases = Object.entries(READERS).flatMap(([reader, { read, variables }]) => variables.map((variable) => [`${reader} ${variable}`, read, variable] as const));

  it.each(cases)('%s', (_name, read, variable) => {
    fc.assert(
      fc.property(hostileValue, (value) => {
        const started = performance.now();
        let error: unknown;
        try {
          read({ ...BASE, [variable]: value });
        } catch (caught) {
          error = caught;
        }

        expect(performance.now() - started).toBeLessThan(1_000);
        if (error === undefined) return;
        expect(error).toBeInstanceOf(ConfigError);
        // The message says which setting: the variable itself, or for a JWT key, the set of them.
        expect((error as Error).message).toMatch(new RegExp(`${variable}|TALLY_JWT_SECRET, TALLY_JWT_SECRET_PARAMETER`));
      }),
      { numRuns: 60 },
    );
  });
});

describe('no metric name is a property every object has', () => {
  /** What Object.prototype holds, constructor, toString and __proto__ among them. */
  const inherited = Object.getOwnPropertyNames(Object.prototype);

  it('METRIC_NAME refuses every name Object.prototype holds, and takes the rest of its form', () => {
    fc.assert(
      fc.property(fc.oneof(fc.constantFrom(...inherited), fc.stringMatching(/^[a-z][a-z0-9_]{0,39}$/)), (name) => {
        expect(METRIC_NAME.test(name)).toBe(!inherited.includes(name));
        if (METRIC_NAME.test(name)) expect(({} as Record<string, unknown>)[name]).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });

  it('a metric rule, an adjustment and a quota named constructor are refused (exit 2): counted by the hour it printed null', async () => {
    const count = captureIo();
    expect(await runCli(['count', join(REPO_ROOT, 'fixtures', 'logs', 'plain-v33.log'), '--metrics', '[{"name":"constructor"}]', '--granularity', 'hour', '--json'], { io: count, env: {}, cwd: REPO_ROOT })).toBe(2);
    expect(count.stderr).toMatch(/^tally count: --metrics: metric rule 0: name must match/);

    const adjust = captureIo();
    const adjustArgv = ['adjust', '--account', 'acme', '--day', '2026-11-21', '--metric', 'constructor', '--delta', '5', '--reason', 'x', '--id', 'A-1'];
    expect(await runCli(adjustArgv, { io: adjust, env: {}, cwd: REPO_ROOT })).toBe(2);
    expect(adjust.stderr).toMatch(/^tally adjust: metric "constructor" is not a metric name/);

    expect(() => readConfig({ ...BASE, TALLY_QUOTAS: '{"constructor":100}' })).toThrow(/TALLY_QUOTAS/);
  });
});
