import { decodeClaims, isExpired, tokenFromPaste } from '../../src/dashboard/lib/claims';

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

  it('takes the token out of what a user pastes: a terminal-wrapped line, a Bearer header, quotes', () => {
    // tryout: a token copied from a terminal that broke its line was refused as "not an access token".
    const jwt = token({ accounts: ['acme'] });
    for (const pasted of [jwt, `${jwt}\n`, `  ${jwt}  `, `${jwt.slice(0, 40)}\n${jwt.slice(40, 90)}\r\n${jwt.slice(90)}`, `Bearer ${jwt}`, `"${jwt}"`, `'${jwt}'\n`]) {
      expect(tokenFromPaste(pasted)).toBe(jwt);
      expect(decodeClaims(tokenFromPaste(pasted)).accounts).toEqual(['acme']);
    }
    expect(tokenFromPaste('  ')).toBe('');
  });

  it('treats a token as expired from its expiry second on', () => {
    const claims = decodeClaims(token({ exp: 1_000 }));
    expect(isExpired(claims, 999_999)).toBe(false);
    expect(isExpired(claims, 1_000_000)).toBe(true);
    expect(isExpired(decodeClaims(token({})), Number.MAX_SAFE_INTEGER)).toBe(false);
  });
});
