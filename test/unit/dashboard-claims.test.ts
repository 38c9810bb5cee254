import { decodeClaims, isExpired } from '../../src/dashboard/lib/claims';

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const token = (claims: unknown) => `${base64url({ alg: 'HS256', typ: 'JWT' })}.${base64url(claims)}.c2lnbmF0dXJl`;

describe('dashboard token claims', () => {
  it('reads the accounts, admin scope, expiry and subject', () => {
    expect(decodeClaims(token({ accounts: ['acme', 7, 'globex'], scope: 'usage:read usage:admin', exp: 1_900_000_000, sub: 'Zoë' }))).toEqual({
      accounts: ['acme', 'globex'],
      admin: true,
      exp: 1_900_000_000,
      sub: 'Zoë',
    });
    expect(decodeClaims(token({}))).toEqual({ accounts: [], admin: false, exp: null, sub: null });
  });

  it('says what is wrong with something that is not a token', () => {
    expect(() => decodeClaims('this is not a token')).toThrow('expected three base64url parts separated by dots');
    expect(() => decodeClaims('a.b.c')).toThrow('its claims could not be read');
    expect(() => decodeClaims(`x.${base64url(42)}.y`)).toThrow('That does not look like an access token.');
  });

  it('treats a token as expired from its expiry second on', () => {
    const claims = decodeClaims(token({ exp: 1_000 }));
    expect(isExpired(claims, 999_999)).toBe(false);
    expect(isExpired(claims, 1_000_000)).toBe(true);
    expect(isExpired(decodeClaims(token({})), Number.MAX_SAFE_INTEGER)).toBe(false);
  });
});
