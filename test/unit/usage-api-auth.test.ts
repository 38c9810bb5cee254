import { createPrivateKey } from 'node:crypto';
import { SignJWT } from 'jose';
import { authorizeAccount, grantFromClaims, mayRead } from '../../src/domain/reading/access';
import { AccountNotFoundError, AuthenticationError, ConfigError } from '../../src/domain/errors';
import { JoseTokenVerifier, mintToken } from '../../src/adapters/http/jwt-tokens';
import { readCorsOrigins, readUsageApiConfig } from '../../src/adapters/wiring/usage-api-config';
import { resolveJwtKey } from '../../src/adapters/wiring/usage-api-deps';
import type { SSMClient } from '@aws-sdk/client-ssm';
import { parseTtl } from '../../src/cli/commands/reading/token';
import { tallyCommand } from '../support/cli';
import { ecKeys, rsaKeys, signHs256, standardClaims, tamperedToken, TEST_SECRET, unsignedToken } from '../support/tokens';

const settings = { audience: 'tally-usage-api', issuer: 'tally' };
const hs256 = new JoseTokenVerifier({ kind: 'secret', secret: TEST_SECRET }, settings);

/** The refusal `promise` ends in, or a failure when it does not refuse. */
async function refusal(promise: Promise<unknown>): Promise<AuthenticationError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AuthenticationError);
  return error as AuthenticationError;
}

describe('access decisions', () => {
  it('reads the accounts a token names and the admin scope', () => {
    expect(grantFromClaims({ sub: 'x', accounts: ['acme', 'globex', 'acme'] })).toEqual({ subject: 'x', accounts: ['acme', 'globex'], admin: false });
    expect(grantFromClaims({ scope: 'openid usage:admin' })).toEqual({ accounts: [], admin: true });
    expect(grantFromClaims({ scope: 'usage:administrator' }).admin).toBe(false);
  });

  it('refuses claims of the wrong shape as an unusable token', () => {
    expect(() => grantFromClaims({ accounts: 'acme' })).toThrow(AuthenticationError);
    expect(() => grantFromClaims({ accounts: ['acme', 'bad#id'] })).toThrow('the token\'s "accounts" claim must be a list of account ids');
    expect(() => grantFromClaims({ scope: ['usage:admin'] })).toThrow('the token\'s "scope" claim must be a string');
  });

  it('lets a token read exactly its accounts (case-sensitive), and an admin every account', () => {
    const tenant = { accounts: ['acme'], admin: false };
    expect(mayRead(tenant, 'acme')).toBe(true);
    expect(mayRead(tenant, 'ACME')).toBe(false);
    expect(mayRead(tenant, 'globex')).toBe(false);
    expect(mayRead({ accounts: [], admin: true }, 'anything')).toBe(true);
  });

  it('refuses another tenant with the error an unknown account gets', () => {
    expect(() => authorizeAccount({ accounts: ['acme'], admin: false }, 'globex')).toThrow(AccountNotFoundError);
    expect(() => authorizeAccount({ accounts: ['acme'], admin: false }, 'globex')).toThrow('account not found');
  });
});

describe('JoseTokenVerifier (HS256)', () => {
  it('accepts a token minted by tally token and returns its grant', async () => {
    const token = await mintToken(TEST_SECRET, { accounts: ['acme'], ttlSeconds: 60, subject: 'alice' });

    await expect(hs256.verify(token)).resolves.toEqual({ subject: 'alice', accounts: ['acme'], admin: false });
  });

  it('refuses an expired token as token_expired', async () => {
    const token = await mintToken(TEST_SECRET, { accounts: ['acme'], ttlSeconds: 60, now: new Date(Date.now() - 3_600_000) });

    const error = await refusal(hs256.verify(token));
    expect([error.failure, error.message]).toEqual(['token_expired', 'the token has expired; mint or request a new one']);
  });

  it.each([
    ['a token not valid yet', async () => mintToken(TEST_SECRET, { accounts: ['acme'], ttlSeconds: 600, notBeforeSeconds: 300 }), 'the token is not valid yet (nbf is in the future)'],
    ['a token for another audience', async () => mintToken(TEST_SECRET, { accounts: ['acme'], ttlSeconds: 60, audience: 'billing-api' }), 'the token was issued for another audience'],
    ['a token from another issuer', async () => mintToken(TEST_SECRET, { accounts: ['acme'], ttlSeconds: 60, issuer: 'someone-else' }), 'the token was issued by another issuer'],
    ['a token without exp', async () => signHs256({ ...standardClaims(), exp: undefined, accounts: ['acme'] }), 'the token has no expiry time (exp); Tally accepts only tokens that expire'],
    ['an alg:none token', async () => unsignedToken({ ...standardClaims(), accounts: ['acme'] }), 'the token is signed with an algorithm this API does not accept'],
    [
      'a tampered token',
      async () => tamperedToken(await mintToken(TEST_SECRET, { accounts: ['acme'], ttlSeconds: 60 }), (claims) => ({ ...claims, scope: 'usage:admin' })),
      'the token signature does not verify',
    ],
    ['a token signed with another secret', async () => mintToken(`${TEST_SECRET}-other`, { accounts: ['acme'], ttlSeconds: 60 }), 'the token signature does not verify'],
    [
      'an RS256 token',
      async () =>
        new SignJWT({ ...standardClaims(), accounts: ['acme'] }).setProtectedHeader({ alg: 'RS256' }).sign(createPrivateKey(rsaKeys().privateKey)),
      'the token is signed with an algorithm this API does not accept',
    ],
    ['garbage', async () => 'not.a.jwt', 'the token is not a well-formed signed JWT'],
    ['an oversized token', async () => 'a'.repeat(9000), 'the token is too long to be a Tally token'],
  ])('refuses %s as invalid_token', async (_name, token, message) => {
    const error = await refusal(hs256.verify(await token()));

    expect([error.failure, error.message]).toEqual(['invalid_token', message]);
  });

  it('never puts the token in its message', async () => {
    const token = await mintToken(`${TEST_SECRET}-other`, { accounts: ['acme'], ttlSeconds: 60 });

    const error = await refusal(hs256.verify(token));
    expect(error.message).not.toContain(token.split('.')[2]);
  });
});

describe('JoseTokenVerifier (public keys)', () => {
  it('verifies RS256 with an RSA public key and refuses HS256 signed with that public key (algorithm confusion)', async () => {
    const keys = rsaKeys();
    const verifier = new JoseTokenVerifier({ kind: 'public-key', pem: keys.publicKey }, settings);
    const good = await new SignJWT({ ...standardClaims(), accounts: ['acme'] }).setProtectedHeader({ alg: 'RS256' }).sign(createPrivateKey(keys.privateKey));
    const confused = await signHs256({ ...standardClaims(), accounts: ['acme'] }, keys.publicKey);

    expect(verifier.acceptedAlgorithm).toBe('RS256');
    await expect(verifier.verify(good)).resolves.toMatchObject({ accounts: ['acme'] });
    expect((await refusal(verifier.verify(confused))).message).toBe('the token is signed with an algorithm this API does not accept');
  });

  it('verifies ES256 with a P-256 public key', async () => {
    const keys = ecKeys();
    const verifier = new JoseTokenVerifier({ kind: 'public-key', pem: keys.publicKey }, settings);
    const token = await new SignJWT({ ...standardClaims(), scope: 'usage:admin' }).setProtectedHeader({ alg: 'ES256' }).sign(createPrivateKey(keys.privateKey));

    expect(verifier.acceptedAlgorithm).toBe('ES256');
    await expect(verifier.verify(token)).resolves.toMatchObject({ admin: true });
  });
});

describe('readUsageApiConfig', () => {
  const base = { TALLY_TABLE: 'tally-usage' };

  it('needs exactly one key variable', () => {
    expect(() => readUsageApiConfig(base)).toThrow('set exactly one of TALLY_JWT_SECRET, TALLY_JWT_SECRET_PARAMETER or TALLY_JWT_PUBLIC_KEY (got none)');
    expect(() => readUsageApiConfig({ ...base, TALLY_JWT_SECRET: TEST_SECRET, TALLY_JWT_SECRET_PARAMETER: '/p' })).toThrow(
      '(got TALLY_JWT_SECRET, TALLY_JWT_SECRET_PARAMETER)',
    );
  });

  it('refuses a short secret and a key that is not RSA or P-256', () => {
    expect(() => readUsageApiConfig({ ...base, TALLY_JWT_SECRET: 'short' })).toThrow(ConfigError);
    expect(() => readUsageApiConfig({ ...base, TALLY_JWT_SECRET: 'short' })).toThrow('TALLY_JWT_SECRET must be at least 32 bytes');
    expect(() => readUsageApiConfig({ ...base, TALLY_JWT_PUBLIC_KEY: 'not a pem' })).toThrow('TALLY_JWT_PUBLIC_KEY must be a PEM public key');
  });

  it('reads defaults, the SSM parameter name, a PEM with escaped line breaks and CORS origins', () => {
    const ssm = readUsageApiConfig({ ...base, TALLY_JWT_SECRET_PARAMETER: '/tally/prod/jwt-secret', TALLY_CORS_ORIGIN: 'https://usage.example.com/' });
    const pem = readUsageApiConfig({ ...base, TALLY_JWT_PUBLIC_KEY: rsaKeys().publicKey.replace(/\n/g, '\\n'), TALLY_JWT_AUDIENCE: 'aud-x' });

    expect(ssm.jwt).toEqual({ key: { kind: 'secret-parameter', parameterName: '/tally/prod/jwt-secret' }, audience: 'tally-usage-api', issuer: 'tally' });
    expect(ssm.corsOrigins).toEqual(['https://usage.example.com']);
    expect(pem.jwt.key.kind).toBe('public-key');
    expect(pem.jwt.audience).toBe('aud-x');
  });

  it('reads CORS origins as exact origins or *', () => {
    expect(readCorsOrigins(undefined)).toEqual([]);
    expect(readCorsOrigins('*')).toEqual(['*']);
    expect(readCorsOrigins('https://a.example.com, http://localhost:3000')).toEqual(['https://a.example.com', 'http://localhost:3000']);
    expect(() => readCorsOrigins('https://a.example.com/dashboard')).toThrow('must be an origin only');
    expect(() => readCorsOrigins('usage.example.com')).toThrow('is not an origin');
  });
});

describe('resolveJwtKey', () => {
  it('reads the secret from SSM once, decrypted', async () => {
    const sent: unknown[] = [];
    const ssm = { send: async (command: { input: unknown }) => (sent.push(command.input), { Parameter: { Value: TEST_SECRET } }) } as unknown as SSMClient;

    const key = await resolveJwtKey({ kind: 'secret-parameter', parameterName: '/tally/prod/jwt-secret' }, ssm);

    expect(key).toEqual({ kind: 'secret', secret: TEST_SECRET });
    expect(sent).toEqual([{ Name: '/tally/prod/jwt-secret', WithDecryption: true }]);
  });

  it('names the parameter when it cannot be read or is empty', async () => {
    const denied = { send: async () => Promise.reject(Object.assign(new Error('User is not authorized'), { name: 'AccessDeniedException' })) } as unknown as SSMClient;
    const empty = { send: async () => ({ Parameter: { Value: '' } }) } as unknown as SSMClient;

    await expect(resolveJwtKey({ kind: 'secret-parameter', parameterName: '/p' }, denied)).rejects.toThrow(
      'could not read SSM parameter /p (TALLY_JWT_SECRET_PARAMETER): AccessDeniedException',
    );
    await expect(resolveJwtKey({ kind: 'secret-parameter', parameterName: '/p' }, empty)).rejects.toThrow(ConfigError);
  });
});

describe('tally token', () => {
  const runToken = tallyCommand('token');
  const io = () => {
    const out: string[] = [];
    const err: string[] = [];
    return { io: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) }, out, err };
  };

  it('prints only the token on stdout, verifiable by the API, for the accounts asked', async () => {
    const { io: cli, out, err } = io();

    const code = await runToken(['--account', 'ACME', '--account', 'globex', '--ttl', '15m'], cli, { TALLY_JWT_SECRET: TEST_SECRET }, '/nonexistent');

    expect(code).toBe(0);
    expect(out).toHaveLength(1);
    await expect(hs256.verify(out[0]!.trim())).resolves.toEqual({ subject: 'tally-cli', accounts: ['ACME', 'globex'], admin: false });
    expect(err.join('')).toMatch(/^tally token: reads accounts ACME, globex; expires \d{4}-\d\d-\d\dT/);
  });

  it('mints an admin token', async () => {
    const { io: cli, out } = io();

    await runToken(['--admin'], cli, { TALLY_JWT_SECRET: TEST_SECRET }, '/nonexistent');

    await expect(hs256.verify(out[0]!.trim())).resolves.toMatchObject({ admin: true });
  });

  it('says where a secret comes from when there is none, and refuses bad input with exit code 2', async () => {
    const noSecret = io();
    const badAccount = io();
    const nothing = io();

    const codes = [
      await runToken(['--account', 'acme'], noSecret.io, {}, '/nonexistent'),
      await runToken(['--account', 'a#b'], badAccount.io, { TALLY_JWT_SECRET: TEST_SECRET }),
      await runToken([], nothing.io, { TALLY_JWT_SECRET: TEST_SECRET }),
    ];

    expect(codes).toEqual([2, 2, 2]);
    expect(noSecret.err.join('')).toBe('tally token: no signing secret: set TALLY_JWT_SECRET, or run `npm start` once to create .tally/jwt-secret\n');
    expect(badAccount.err.join('')).toMatch(/^tally token: --account "a#b": an account id is/);
    expect(nothing.err.join('')).toMatch(/name at least one --account, or --admin/);
    expect(noSecret.out).toEqual([]);
  });

  it.each([
    ['90s', 90],
    ['15m', 900],
    ['1h', 3600],
    ['7d', 604_800],
    ['120', 120],
  ])('reads --ttl %s as %i seconds', (text, seconds) => {
    expect(parseTtl(text)).toBe(seconds);
  });

  it.each(['0s', '91d', '1w', '-1h', 'soon'])('refuses --ttl %s', (text) => {
    expect(() => parseTtl(text)).toThrow(/--ttl/);
  });
});
