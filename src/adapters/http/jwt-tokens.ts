import { createPublicKey, type KeyObject } from 'node:crypto';
import type * as Jose from 'jose';
import { ADMIN_SCOPE, grantFromClaims, type AccessGrant } from '../../domain/reading/access';
import { ConfigError, AuthenticationError } from '../../domain/errors';

/** The audience and issuer tokens must name, unless configured otherwise. */
export const DEFAULT_JWT_AUDIENCE = 'tally-usage-api';
export const DEFAULT_JWT_ISSUER = 'tally';

/** An HS256 secret shorter than this (bytes) is refused: it could be guessed offline. */
export const MIN_SECRET_BYTES = 32;

/** Clock skew allowed between the minter and the API, seconds. */
const CLOCK_TOLERANCE_SECONDS = 5;

/** Longest token `Authorization` may carry; anything longer is not one of ours. */
export const MAX_TOKEN_LENGTH = 8_192;

/** How tokens are verified: one key, one pinned algorithm. */
export type JwtVerificationKey =
  | { readonly kind: 'secret'; readonly secret: string }
  | { readonly kind: 'public-key'; readonly pem: string };

export interface JwtSettings {
  readonly audience: string;
  readonly issuer: string;
}

/**
 * The key and the one algorithm it may verify. An RSA public key verifies only RS256,
 * a P-256 key only ES256, a secret only HS256: pinning the algorithm to the key type
 * rules out `alg: none` and the RS256-as-HS256 confusion.
 */
export function verificationKey(key: JwtVerificationKey): { algorithm: 'HS256' | 'RS256' | 'ES256'; key: Uint8Array | KeyObject } {
  if (key.kind === 'secret') {
    const secret = new TextEncoder().encode(key.secret);
    if (secret.length < MIN_SECRET_BYTES) {
      throw new ConfigError(`TALLY_JWT_SECRET must be at least ${MIN_SECRET_BYTES} bytes`);
    }
    return { algorithm: 'HS256', key: secret };
  }
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey(key.pem);
  } catch (error) {
    throw new ConfigError('TALLY_JWT_PUBLIC_KEY must be a PEM public key (RSA or EC P-256)', { cause: error });
  }
  if (publicKey.asymmetricKeyType === 'rsa') {
    if ((publicKey.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) {
      throw new ConfigError('TALLY_JWT_PUBLIC_KEY: an RSA key must have at least 2048 bits');
    }
    return { algorithm: 'RS256', key: publicKey };
  }
  if (publicKey.asymmetricKeyType === 'ec' && publicKey.asymmetricKeyDetails?.namedCurve === 'prime256v1') {
    return { algorithm: 'ES256', key: publicKey };
  }
  throw new ConfigError('TALLY_JWT_PUBLIC_KEY must be an RSA (RS256) or EC P-256 (ES256) public key');
}

let jose: Promise<typeof Jose> | undefined;

/**
 * `jose`, loaded when a token is first verified or minted, not when this module is: every
 * `tally` command imports this module (through `tally token`), and loading jose was about a
 * fifth of a fresh `tally count` of a small file's CPU (issue 34).
 */
function loadJose(): Promise<typeof Jose> {
  jose ??= import('jose');
  return jose;
}

/**
 * Verifies bearer tokens with `jose` and turns their claims into an {@link AccessGrant}.
 * Signature first, then `exp` (required), `nbf`, `aud` and `iss`; every refusal is an
 * {@link AuthenticationError} whose message says what to do and never echoes the token.
 */
export class JoseTokenVerifier {
  private readonly algorithm: 'HS256' | 'RS256' | 'ES256';
  private readonly key: Uint8Array | KeyObject;
  private readonly settings: JwtSettings;

  constructor(key: JwtVerificationKey, settings: JwtSettings) {
    const resolved = verificationKey(key);
    this.algorithm = resolved.algorithm;
    this.key = resolved.key;
    this.settings = settings;
  }

  /** The one algorithm tokens must be signed with. */
  get acceptedAlgorithm(): string {
    return this.algorithm;
  }

  async verify(token: string): Promise<AccessGrant> {
    if (token.length > MAX_TOKEN_LENGTH) throw new AuthenticationError('invalid_token', 'the token is too long to be a Tally token');
    let payload: Record<string, unknown>;
    const { errors, jwtVerify } = await loadJose();
    try {
      ({ payload } = await jwtVerify(token, this.key, {
        algorithms: [this.algorithm],
        audience: this.settings.audience,
        issuer: this.settings.issuer,
        requiredClaims: ['exp'],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
      }));
    } catch (error) {
      throw refusal(error, errors);
    }
    return grantFromClaims(payload);
  }
}

function refusal(error: unknown, errors: typeof Jose.errors): AuthenticationError {
  const options = { cause: error };
  if (error instanceof errors.JWTExpired) {
    return new AuthenticationError('token_expired', 'the token has expired; mint or request a new one', options);
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    const messages: Record<string, string> = {
      nbf: 'the token is not valid yet (nbf is in the future)',
      aud: 'the token was issued for another audience',
      iss: 'the token was issued by another issuer',
      exp: 'the token has no expiry time (exp); Tally accepts only tokens that expire',
      iat: 'the token has an invalid issue time (iat)',
    };
    return new AuthenticationError('invalid_token', messages[error.claim] ?? `the token's "${error.claim}" claim is invalid`, options);
  }
  if (error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported) {
    return new AuthenticationError('invalid_token', 'the token is signed with an algorithm this API does not accept', options);
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return new AuthenticationError('invalid_token', 'the token signature does not verify', options);
  }
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) {
    return new AuthenticationError('invalid_token', 'the token is not a well-formed signed JWT', options);
  }
  return new AuthenticationError('invalid_token', 'the token could not be verified', options);
}

/** What a minted token grants and for how long. */
export interface TokenRequest {
  readonly accounts?: readonly string[];
  readonly admin?: boolean;
  /** Seconds from `now` until the token expires. */
  readonly ttlSeconds: number;
  readonly subject?: string;
  readonly audience?: string;
  readonly issuer?: string;
  readonly now?: Date;
  /** Seconds from `now` before the token becomes valid (tests use it for `nbf`). */
  readonly notBeforeSeconds?: number;
}

/**
 * Signs an HS256 token for the read API, e.g. for `tally token` and the local
 * stack's demo token. Production tokens come from whoever holds the key; this is the
 * same format.
 */
export async function mintToken(secret: string, request: TokenRequest): Promise<string> {
  const { key } = verificationKey({ kind: 'secret', secret });
  const now = Math.floor((request.now ?? new Date()).getTime() / 1000);
  const claims: Record<string, unknown> = { accounts: [...(request.accounts ?? [])] };
  if (request.admin) claims.scope = ADMIN_SCOPE;
  const { SignJWT } = await loadJose();
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(request.issuer ?? DEFAULT_JWT_ISSUER)
    .setAudience(request.audience ?? DEFAULT_JWT_AUDIENCE)
    .setSubject(request.subject ?? 'tally-cli')
    .setIssuedAt(now)
    .setExpirationTime(now + request.ttlSeconds);
  if (request.notBeforeSeconds !== undefined) jwt.setNotBefore(now + request.notBeforeSeconds);
  return jwt.sign(key as Uint8Array);
}
