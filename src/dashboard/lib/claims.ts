/**
 * What the page shows about an access token. It reads the claims for display only:
 * the usage API verifies the signature and answers 401 to a token it does not trust.
 */

/** The claims the dashboard uses. */
export interface TokenClaims {
  readonly accounts: readonly string[];
  readonly admin: boolean;
  /** Expiry in seconds since the epoch, or null for a token that never expires. */
  readonly exp: number | null;
  readonly sub: string | null;
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;

/**
 * The token in what a user pasted: without the white space a terminal puts in a long
 * line it wraps (a JWT holds none), an `Authorization` header's `Bearer `, or the quotes
 * of a JSON or shell string around it.
 *
 * @example tokenFromPaste('Bearer eyJh.eyJh\n.sig ') // 'eyJh.eyJh.sig'
 */
export function tokenFromPaste(text: string): string {
  const trimmed = text.trim().replace(/^Bearer\s+/i, '');
  const unquoted = /^(["'])(.*)\1$/s.exec(trimmed)?.[2] ?? trimmed;
  return unquoted.replace(/\s+/g, '');
}

/** Reads a JWT's claims, throwing an `Error` whose message tells the user what is wrong. */
export function decodeClaims(token: string): TokenClaims {
  const parts = token.split('.');
  if (parts.length !== 3 || parts.some((part) => !BASE64URL.test(part))) {
    throw new Error('That does not look like an access token: expected three base64url parts separated by dots.');
  }
  let json: unknown;
  try {
    const base64 = parts[1]!.replace(/-/g, '+').replace(/_/g, '/');
    const binary = atob(base64 + '==='.slice((base64.length + 3) % 4));
    json = JSON.parse(new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
  } catch {
    throw new Error('That does not look like an access token: its claims could not be read.');
  }
  if (json === null || typeof json !== 'object') throw new Error('That does not look like an access token.');
  const claims = json as Record<string, unknown>;
  const accounts = Array.isArray(claims.accounts) ? claims.accounts.filter((a): a is string => typeof a === 'string') : [];
  const scope = typeof claims.scope === 'string' ? claims.scope.split(' ') : [];
  return {
    accounts,
    admin: scope.includes('usage:admin'),
    exp: typeof claims.exp === 'number' ? claims.exp : null,
    sub: typeof claims.sub === 'string' ? claims.sub : null,
  };
}

/** True once the token's expiry has passed at `now` (milliseconds). */
export function isExpired(claims: TokenClaims, now: number): boolean {
  return claims.exp !== null && claims.exp * 1000 <= now;
}
