import { ConfigError } from '../../domain/errors';
import { readConfig, type TallyConfig } from '../config';
import type { Env } from '../env';
import { DEFAULT_JWT_AUDIENCE, DEFAULT_JWT_ISSUER, verificationKey } from '../http/jwt-tokens';


/** Where the token key comes from: a value in the environment or an SSM SecureString. */
export type JwtKeySource =
  | { readonly kind: 'secret'; readonly secret: string }
  | { readonly kind: 'public-key'; readonly pem: string }
  | { readonly kind: 'secret-parameter'; readonly parameterName: string };

/** Everything the read API needs, validated once per cold start. */
export interface UsageApiConfig {
  readonly tally: TallyConfig;
  readonly jwt: {
    readonly key: JwtKeySource;
    readonly audience: string;
    readonly issuer: string;
  };
  /** Origins allowed to call from a browser (exact `scheme://host[:port]`), or `['*']`; empty: same origin only. */
  readonly corsOrigins: readonly string[];
  /** The ingest dead-letter queue (`TALLY_DLQ_URL`): health reports its depth and oldest message; none when unset. */
  readonly dlqUrl?: string;
}

/**
 * Reads the read API's configuration: the table settings `readConfig` validates, plus
 *
 * | variable | meaning |
 * |---|---|
 * | `TALLY_JWT_SECRET` | HS256 secret (at least 32 bytes), for local use and tests |
 * | `TALLY_JWT_SECRET_PARAMETER` | name of an SSM SecureString holding the HS256 secret (read once per cold start) |
 * | `TALLY_JWT_PUBLIC_KEY` | PEM public key: RSA (RS256) or EC P-256 (ES256) |
 * | `TALLY_JWT_AUDIENCE` / `TALLY_JWT_ISSUER` | required `aud` / `iss` (default `tally-usage-api` / `tally`) |
 * | `TALLY_CORS_ORIGIN` | comma-separated dashboard origins, or `*` |
 * | `TALLY_DLQ_URL` | the ingest dead-letter queue, for `GET /v1/health` (optional) |
 *
 * Exactly one key variable must be set; the message names the variables otherwise.
 */
export function readUsageApiConfig(env: Env): UsageApiConfig {
  const tally = readConfig(env);
  const given = (['TALLY_JWT_SECRET', 'TALLY_JWT_SECRET_PARAMETER', 'TALLY_JWT_PUBLIC_KEY'] as const).filter(
    (name) => (env[name] ?? '') !== '',
  );
  if (given.length !== 1) {
    throw new ConfigError(
      `set exactly one of TALLY_JWT_SECRET, TALLY_JWT_SECRET_PARAMETER or TALLY_JWT_PUBLIC_KEY (got ${given.length === 0 ? 'none' : given.join(', ')})`,
    );
  }
  let key: JwtKeySource;
  if (given[0] === 'TALLY_JWT_SECRET') {
    key = { kind: 'secret', secret: env.TALLY_JWT_SECRET! };
    verificationKey(key);
  } else if (given[0] === 'TALLY_JWT_PUBLIC_KEY') {
    // A PEM in an environment variable often arrives with its line breaks written as \n.
    key = { kind: 'public-key', pem: env.TALLY_JWT_PUBLIC_KEY!.replace(/\\n/g, '\n') };
    verificationKey(key);
  } else {
    const parameterName = env.TALLY_JWT_SECRET_PARAMETER!;
    if (!/^[A-Za-z0-9_.\-/]{1,2048}$/.test(parameterName) && !parameterName.startsWith('arn:')) {
      throw new ConfigError('TALLY_JWT_SECRET_PARAMETER must name an SSM parameter, e.g. /tally/prod/jwt-secret');
    }
    key = { kind: 'secret-parameter', parameterName };
  }
  return {
    tally,
    jwt: {
      key,
      audience: nonEmpty(env, 'TALLY_JWT_AUDIENCE', DEFAULT_JWT_AUDIENCE),
      issuer: nonEmpty(env, 'TALLY_JWT_ISSUER', DEFAULT_JWT_ISSUER),
    },
    corsOrigins: readCorsOrigins(env.TALLY_CORS_ORIGIN),
    ...dlqUrlOf(env),
  };
}

function dlqUrlOf(env: Env): { dlqUrl?: string } {
  const raw = env.TALLY_DLQ_URL;
  if (raw === undefined || raw === '') return {};
  try {
    new URL(raw);
  } catch (error) {
    throw new ConfigError(`TALLY_DLQ_URL must be a URL, got "${raw}"`, { cause: error });
  }
  return { dlqUrl: raw };
}

function nonEmpty(env: Env, name: string, fallback: string): string {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  if (value.trim() !== value || value.length > 256) throw new ConfigError(`${name} must be a plain string without surrounding spaces`);
  return value;
}

/** Parses `TALLY_CORS_ORIGIN`: `*`, or origins such as `https://usage.example.com,http://localhost:8080`. */
export function readCorsOrigins(text: string | undefined): string[] {
  if (text === undefined || text.trim() === '') return [];
  if (text.trim() === '*') return ['*'];
  return text.split(',').map((raw) => {
    const value = raw.trim();
    let origin: string;
    try {
      origin = new URL(value).origin;
    } catch (error) {
      throw new ConfigError(`TALLY_CORS_ORIGIN: "${value}" is not an origin such as https://usage.example.com`, { cause: error });
    }
    if (origin !== value.replace(/\/$/, '') || origin === 'null') {
      throw new ConfigError(`TALLY_CORS_ORIGIN: "${value}" must be an origin only (scheme://host[:port], no path)`);
    }
    return origin;
  });
}
