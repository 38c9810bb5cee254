import { join } from 'node:path';
import { MAX_TOKEN_LENGTH, mintToken } from '../../../adapters/http/jwt-tokens';
import { ConfigError, ValidationError } from '../../../domain/errors';
import { LOCAL_JWT_SECRET_FILE, readLocalJwtSecret } from '../../../local/lifecycle/jwt-secret';
import { defineCommand } from '../../command';
import { accountId, recordText } from '../../values';

/** The longest `--subject` a token carries (it is logged with every request the token makes). */
const MAX_SUBJECT_LENGTH = 128;

/**
 * Reads a duration such as `90s`, `15m`, `1h`, `7d` (a bare number is seconds).
 * Refuses zero and over 90 days: a usage token is not a permanent credential.
 */
export function parseTtl(text: string): number {
  const match = /^(\d+)\s*([smhd]?)$/.exec(text.trim());
  if (!match) throw new ValidationError(`--ttl must look like 90s, 15m, 1h or 7d, got "${text}"`);
  const unit = { '': 1, s: 1, m: 60, h: 3_600, d: 86_400 }[match[2] as '' | 's' | 'm' | 'h' | 'd'];
  const seconds = Number(match[1]) * unit;
  if (seconds < 1 || seconds > 90 * 86_400) throw new ValidationError(`--ttl must be from 1s to 90d, got "${text}"`);
  return seconds;
}

interface TokenOptions {
  account: string[];
  admin?: boolean;
  ttl: number;
  subject: string;
}

/** `tally token`: mints a bearer token locally; it alone goes to stdout. */
export const tokenCommand = defineCommand<TokenOptions>({
  name: 'token',
  summary: 'mint a bearer token for the usage read API',
  description:
    'Mints a bearer token for the usage read API (HS256). The secret is TALLY_JWT_SECRET, else the ' +
    `local stack's ${LOCAL_JWT_SECRET_FILE} (created by npm start). The token goes to stdout alone, ` +
    'so TOKEN=$(npx tally token --account acme) works; what it grants goes to stderr.',
  options: [
    { flags: '--account <id>', help: 'an account the token may read (repeatable; exact, case-sensitive)', read: accountId, repeatable: true },
    { flags: '--admin', help: 'scope usage:admin: every account' },
    { flags: '--ttl <duration>', help: 'lifetime: 90s, 15m, 1h, 7d; at most 90d', read: (text) => parseTtl(text), default: '1h' },
    { flags: '--subject <name>', help: `the sub claim, shown in the API's logs (at most ${MAX_SUBJECT_LENGTH} characters)`, default: 'tally-cli', read: recordText(MAX_SUBJECT_LENGTH) },
  ],
  notes: 'TALLY_JWT_AUDIENCE and TALLY_JWT_ISSUER set aud and iss (defaults tally-usage-api, tally).',
  check(options) {
    if ((options.account ?? []).length === 0 && options.admin !== true) throw new ValidationError('name at least one --account, or --admin');
  },
  async run({ options, context: { io, env, cwd, now: clock } }) {
    // `--account acme --account acme` grants acme once.
    const accounts = [...new Set(options.account ?? [])];
    const secret = (env.TALLY_JWT_SECRET ?? '') !== '' ? env.TALLY_JWT_SECRET! : readLocalJwtSecret(join(cwd, LOCAL_JWT_SECRET_FILE));
    if (secret === undefined) {
      throw new ConfigError(`no signing secret: set TALLY_JWT_SECRET, or run \`npm start\` once to create ${LOCAL_JWT_SECRET_FILE}`);
    }
    const now = clock();
    const admin = options.admin === true;
    const token = await mintToken(secret, {
      accounts,
      admin,
      ttlSeconds: options.ttl,
      subject: options.subject,
      ...(env.TALLY_JWT_AUDIENCE ? { audience: env.TALLY_JWT_AUDIENCE } : {}),
      ...(env.TALLY_JWT_ISSUER ? { issuer: env.TALLY_JWT_ISSUER } : {}),
      now,
    });
    // The read API refuses a longer token unread (jwt-tokens.ts): minting it would hand out a token that never works.
    if (token.length > MAX_TOKEN_LENGTH) {
      throw new ValidationError(
        `the token would be ${token.length.toLocaleString('en-US')} characters and the read API accepts at most ${MAX_TOKEN_LENGTH.toLocaleString('en-US')}: ` +
          `name fewer accounts (this one names ${accounts.length.toLocaleString('en-US')}; mint one token per group of accounts), or mint an --admin token`,
      );
    }
    io.out(`${token}\n`);
    const grants = admin ? 'every account (usage:admin)' : `account${accounts.length > 1 ? 's' : ''} ${accounts.join(', ')}`;
    io.err(`tally token: reads ${grants}; expires ${new Date(now.getTime() + options.ttl * 1000).toISOString()}\n`);
    return 0;
  },
});
