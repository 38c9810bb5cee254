import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Where the local stack keeps its token signing secret, relative to the project root. */
export const LOCAL_JWT_SECRET_FILE = join('.tally', 'jwt-secret');

/**
 * The local stack's HS256 secret: read from `path`, or created there (32 random bytes,
 * base64url, file mode 0600) on first start, so tokens minted by `tally token` keep
 * working across restarts. `.tally/` is git-ignored.
 */
export function ensureLocalJwtSecret(path: string): string {
  const existing = readLocalJwtSecret(path);
  if (existing !== undefined) return existing;
  mkdirSync(dirname(path), { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(path, `${secret}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  return secret;
}

/** The secret in `path`, or undefined when the file does not exist or is empty. */
export function readLocalJwtSecret(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  const secret = readFileSync(path, 'utf8').trim();
  return secret === '' ? undefined : secret;
}
