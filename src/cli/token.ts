import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { mintToken } from '../adapters/jwt-tokens';
import { ACCOUNT_ID_RULE, isValidAccountId } from '../domain/account-id';
import { LOCAL_JWT_SECRET_FILE, readLocalJwtSecret } from '../local/jwt-secret';
import type { CliIo } from './io';

export const TOKEN_USAGE = `usage: tally token --account ID [--account ID]... [--ttl 1h] [--subject NAME]
       tally token --admin [--ttl 15m]

Mints a bearer token for the usage read API (HS256). The secret is TALLY_JWT_SECRET,
else the local stack's ${LOCAL_JWT_SECRET_FILE} (created by npm start). The token goes
to stdout alone, so TOKEN=$(npx tally token --account acme) works; what it grants
goes to stderr.

  --account ID   an account the token may read (repeatable; exact, case-sensitive)
  --admin        scope usage:admin: every account
  --ttl DURATION lifetime: 90s, 15m, 1h (default), 7d; at most 90d
  --subject NAME the sub claim, shown in the API's logs (default tally-cli)

TALLY_JWT_AUDIENCE and TALLY_JWT_ISSUER set aud and iss (defaults tally-usage-api, tally).`;

/**
 * Reads a duration such as `90s`, `15m`, `1h`, `7d` (a bare number is seconds).
 * Refuses zero and over 90 days: a usage token is not a permanent credential.
 */
export function parseTtl(text: string): number {
  const match = /^(\d+)\s*([smhd]?)$/.exec(text.trim());
  if (!match) throw new Error(`--ttl must look like 90s, 15m, 1h or 7d, got "${text}"`);
  const unit = { '': 1, s: 1, m: 60, h: 3_600, d: 86_400 }[match[2] as '' | 's' | 'm' | 'h' | 'd'];
  const seconds = Number(match[1]) * unit;
  if (seconds < 1 || seconds > 90 * 86_400) throw new Error(`--ttl must be from 1s to 90d, got "${text}"`);
  return seconds;
}

/** `tally token`: mints a token locally. */
export async function runToken(
  argv: readonly string[],
  io: CliIo,
  env: Readonly<Record<string, string | undefined>> = process.env,
  cwd: string = process.cwd(),
): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      account: { type: 'string', multiple: true, default: [] },
      admin: { type: 'boolean', default: false },
      ttl: { type: 'string', default: '1h' },
      subject: { type: 'string', default: 'tally-cli' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.out(`${TOKEN_USAGE}\n`);
    return 0;
  }
  const accounts = values.account ?? [];
  if (accounts.length === 0 && !values.admin) {
    io.err(`tally token: name at least one --account, or --admin\n\n${TOKEN_USAGE}\n`);
    return 2;
  }
  const invalid = accounts.find((id) => !isValidAccountId(id));
  if (invalid !== undefined) throw new Error(`--account "${invalid}": ${ACCOUNT_ID_RULE}`);
  const ttlSeconds = parseTtl(values.ttl ?? '1h');

  const secret = (env.TALLY_JWT_SECRET ?? '') !== '' ? env.TALLY_JWT_SECRET! : readLocalJwtSecret(join(cwd, LOCAL_JWT_SECRET_FILE));
  if (secret === undefined) {
    throw new Error(`no signing secret: set TALLY_JWT_SECRET, or run \`npm start\` once to create ${LOCAL_JWT_SECRET_FILE}`);
  }
  const now = new Date();
  const token = await mintToken(secret, {
    accounts,
    admin: values.admin ?? false,
    ttlSeconds,
    subject: values.subject ?? 'tally-cli',
    ...(env.TALLY_JWT_AUDIENCE ? { audience: env.TALLY_JWT_AUDIENCE } : {}),
    ...(env.TALLY_JWT_ISSUER ? { issuer: env.TALLY_JWT_ISSUER } : {}),
    now,
  });
  io.out(`${token}\n`);
  const grants = values.admin ? 'every account (usage:admin)' : `account${accounts.length > 1 ? 's' : ''} ${accounts.join(', ')}`;
  io.err(`tally token: reads ${grants}; expires ${new Date(now.getTime() + ttlSeconds * 1000).toISOString()}\n`);
  return 0;
}
