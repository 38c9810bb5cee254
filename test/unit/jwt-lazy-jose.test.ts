/**
 * `jose` is loaded when a token is first minted or verified, not when jwt-tokens.ts is
 * imported: every `tally` command imports that module (through `tally token`), and loading
 * jose was about a fifth of a fresh `tally count` of a small file's CPU (issue 34).
 */
describe('jwt-tokens loads jose lazily', () => {
  afterEach(() => jest.dontMock('jose'));

  it('imports without loading jose, then mints and verifies with it', async () => {
    let loads = 0;
    jest.doMock('jose', () => {
      loads++;
      return jest.requireActual('jose');
    });
    await jest.isolateModulesAsync(async () => {
      const { JoseTokenVerifier, mintToken, DEFAULT_JWT_AUDIENCE, DEFAULT_JWT_ISSUER } = await import('../../src/adapters/http/jwt-tokens');
      expect(loads).toBe(0);

      const secret = 'a-secret-of-at-least-thirty-two-bytes!!';
      const token = await mintToken(secret, { accounts: ['acme'], ttlSeconds: 600 });
      expect(loads).toBe(1);
      const verifier = new JoseTokenVerifier({ kind: 'secret', secret }, { audience: DEFAULT_JWT_AUDIENCE, issuer: DEFAULT_JWT_ISSUER });
      const grant = await verifier.verify(token);
      expect(JSON.stringify(grant)).toContain('acme');
      await expect(verifier.verify(`${token}x`)).rejects.toThrow(/signature does not verify/);
      expect(loads).toBe(1);
    });
  });
});
