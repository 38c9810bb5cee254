import { generateKeyPairSync } from 'node:crypto';
import { SignJWT } from 'jose';

/** A test secret of the length the API demands. */
export const TEST_SECRET = 'test-secret-for-tally-usage-api-0123456789';

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A token with `alg: none` and no signature, as an attacker would send it. */
export function unsignedToken(claims: Record<string, unknown>): string {
  return `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
}

/** `token` with its claims replaced but the original signature kept. */
export function tamperedToken(token: string, change: (claims: Record<string, unknown>) => Record<string, unknown>): string {
  const [header, payload, signature] = token.split('.') as [string, string, string];
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
  return `${header}.${b64(change(claims))}.${signature}`;
}

/** Claims a valid token carries, `now` in seconds. */
export function standardClaims(now = Math.floor(Date.now() / 1000)): Record<string, unknown> {
  return { iss: 'tally', aud: 'tally-usage-api', sub: 'test', iat: now, exp: now + 600 };
}

/** Signs `claims` as given (no defaults added), with HS256 and `secret`. */
export function signHs256(claims: Record<string, unknown>, secret = TEST_SECRET): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(secret));
}

/** An RSA key pair (PEM) for RS256 tests. */
export function rsaKeys() {
  return generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
}

/** A P-256 key pair (PEM) for ES256 tests. */
export function ecKeys() {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1', publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
}
