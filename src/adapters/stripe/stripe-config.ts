import { GetParameterCommand, type SSMClient } from '@aws-sdk/client-ssm';
import { ConfigError } from '../../domain/errors';
import { parseStripeMeters, type LateUsageMode, type StripeMeterMap } from '../../domain/billing/stripe';
import { parseStripeWindow, type StripeWindow } from '../../domain/billing/stripe-hours';
import { DEFAULTS } from '../config';
import type { Env } from '../env';
import { STRIPE_API_BASE } from './stripe-meter-api';

/** Where the Stripe API key comes from. Its value is never logged, never put in an error. */
export type StripeKeySource = { readonly kind: 'key'; readonly apiKey: string } | { readonly kind: 'key-parameter'; readonly parameterName: string };

/** The Stripe sync's settings (`docs/configuration.md#stripe`). */
export interface StripeConfig {
  readonly key: StripeKeySource;
  /** `TALLY_STRIPE_API_BASE`: Stripe's API, or any http(s) base (a test server, a proxy). */
  readonly apiBase: string;
  /** `TALLY_STRIPE_METERS`: metric -> event name. */
  readonly meters: StripeMeterMap;
  /** `TALLY_STRIPE_QUEUE_URL`: the sender's queue (the closer and `tally stripe link` put work there). */
  readonly queueUrl?: string;
  /** `TALLY_STRIPE_RUNNING_MINUTES`: how often open days' running totals are sent; 0 turns them off. */
  readonly runningMinutes: number;
  /** `TALLY_STRIPE_LATE_USAGE`: `webhook` (report a late difference) or `invoice-item` (also bill it on the next invoice). */
  readonly lateUsage: LateUsageMode;
  /** `TALLY_STRIPE_WINDOW`: one meter event per UTC day (`day`) or per UTC hour (`hour`). */
  readonly window: StripeWindow;
}

/** The longest running interval: a day. */
export const STRIPE_RUNNING_MINUTES_MAX = 1_440;

const given = (value: string | undefined): value is string => value !== undefined && value !== '';

/** True when the Stripe sync is configured: a key (or its parameter) and the meters. */
export function stripeConfigured(env: Env): boolean {
  return (given(env.TALLY_STRIPE_API_KEY) || given(env.TALLY_STRIPE_API_KEY_PARAMETER)) && given(env.TALLY_STRIPE_METERS);
}

/**
 * Reads `TALLY_STRIPE_API_KEY` (or, on AWS, the SSM SecureString named by
 * `TALLY_STRIPE_API_KEY_PARAMETER`), `TALLY_STRIPE_API_BASE`, `TALLY_STRIPE_METERS` and
 * `TALLY_STRIPE_QUEUE_URL`, `TALLY_STRIPE_RUNNING_MINUTES`, `TALLY_STRIPE_LATE_USAGE` and `TALLY_STRIPE_WINDOW`. Errors name the variable, never the key.
 */
export function readStripeConfig(env: Env): StripeConfig {
  const apiKey = env.TALLY_STRIPE_API_KEY;
  const parameter = env.TALLY_STRIPE_API_KEY_PARAMETER;
  if (given(apiKey) === given(parameter)) throw new ConfigError('set exactly one of TALLY_STRIPE_API_KEY and TALLY_STRIPE_API_KEY_PARAMETER');
  if (given(apiKey) && !/^(sk|rk)_(test|live)_[A-Za-z0-9_]{8,}$/.test(apiKey)) {
    throw new ConfigError('TALLY_STRIPE_API_KEY must be a Stripe secret or restricted key (sk_test_..., rk_live_...); its value is not shown');
  }
  const apiBase = given(env.TALLY_STRIPE_API_BASE) ? env.TALLY_STRIPE_API_BASE : STRIPE_API_BASE;
  let base: URL;
  try {
    base = new URL(apiBase);
  } catch (error) {
    throw new ConfigError(`TALLY_STRIPE_API_BASE must be an http(s) URL, got "${apiBase}"`, { cause: error });
  }
  if ((base.protocol !== 'https:' && base.protocol !== 'http:') || (base.pathname !== '/' && base.pathname !== '')) {
    throw new ConfigError(`TALLY_STRIPE_API_BASE must be an http(s) base without a path (e.g. https://api.stripe.com), got "${apiBase}"`);
  }
  if (!given(env.TALLY_STRIPE_METERS)) throw new ConfigError('TALLY_STRIPE_METERS must map metrics to Stripe event names, e.g. {"requests":"cdn_requests"}');
  let meters: StripeMeterMap;
  try {
    meters = parseStripeMeters(env.TALLY_STRIPE_METERS);
  } catch (error) {
    throw new ConfigError(`TALLY_STRIPE_METERS ${(error as Error).message}`, { cause: error });
  }
  const queueUrl = env.TALLY_STRIPE_QUEUE_URL;
  if (given(queueUrl)) {
    try {
      new URL(queueUrl);
    } catch (error) {
      throw new ConfigError(`TALLY_STRIPE_QUEUE_URL must be a URL, got "${queueUrl}"`, { cause: error });
    }
  }
  const runningText = env.TALLY_STRIPE_RUNNING_MINUTES;
  const runningMinutes = given(runningText) ? Number(runningText) : DEFAULTS.stripeRunningMinutes;
  if (!Number.isInteger(runningMinutes) || runningMinutes < 0 || runningMinutes > STRIPE_RUNNING_MINUTES_MAX) {
    throw new ConfigError(`TALLY_STRIPE_RUNNING_MINUTES must be an integer from 0 (off) to ${STRIPE_RUNNING_MINUTES_MAX}, got "${runningText}"`);
  }
  const lateUsage = given(env.TALLY_STRIPE_LATE_USAGE) ? env.TALLY_STRIPE_LATE_USAGE : DEFAULTS.stripeLateUsage;
  if (lateUsage !== 'webhook' && lateUsage !== 'invoice-item') {
    throw new ConfigError(`TALLY_STRIPE_LATE_USAGE must be webhook (report a late difference) or invoice-item (also bill it on the next invoice), got "${lateUsage}"`);
  }
  let window: StripeWindow;
  try {
    window = parseStripeWindow(given(env.TALLY_STRIPE_WINDOW) ? env.TALLY_STRIPE_WINDOW : DEFAULTS.stripeWindow);
  } catch (error) {
    throw new ConfigError(`TALLY_STRIPE_WINDOW ${(error as Error).message}`, { cause: error });
  }
  return {
    key: given(apiKey) ? { kind: 'key', apiKey } : { kind: 'key-parameter', parameterName: parameter! },
    apiBase: base.origin,
    meters,
    ...(given(queueUrl) ? { queueUrl } : {}),
    runningMinutes,
    lateUsage,
    window,
  };
}

/** The API key: as given, or read once per cold start from SSM (errors name the parameter, never the value). */
export async function resolveStripeKey(source: StripeKeySource, ssm: SSMClient | undefined): Promise<string> {
  if (source.kind === 'key') return source.apiKey;
  if (ssm === undefined) throw new ConfigError('an SSM client is needed to read TALLY_STRIPE_API_KEY_PARAMETER');
  let value: string | undefined;
  try {
    value = (await ssm.send(new GetParameterCommand({ Name: source.parameterName, WithDecryption: true }))).Parameter?.Value;
  } catch (error) {
    throw new ConfigError(`could not read SSM parameter ${source.parameterName} (TALLY_STRIPE_API_KEY_PARAMETER): ${(error as Error).name}`, { cause: error });
  }
  if (value === undefined || value === '') throw new ConfigError(`SSM parameter ${source.parameterName} is empty`);
  return value;
}

/** Defaults of the Stripe sender's queue backoff: a message with work left comes back after 30 s, doubling to 15 min. */
export const STRIPE_SENDER_DEFAULTS = { backoffSeconds: 30, maxBackoffSeconds: 900 } as const;

/** The service name of the sender's logs and metrics (the alarm in scripts/serverless/alarms.js matches it). */
export const STRIPE_SERVICE = 'tally-stripe';
