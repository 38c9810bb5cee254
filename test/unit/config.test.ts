import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readConfig } from '../../src/adapters/config';
import { ConfigError } from '../../src/domain/errors';

describe('readConfig', () => {
  it('applies defaults sized for items under 1 KB', () => {
    const config = readConfig({ TALLY_TABLE: 'usage' });

    expect(config.keyScheme).toEqual({ keyBytes: 12, shards: 4 });
    expect(config.historyCap).toBe(15);
    expect(config.resolver).toEqual({ kind: 'host-label' });
    expect(config.endpoints).toEqual({});
  });

  it.each([
    [{}, /TALLY_TABLE/],
    [{ TALLY_TABLE: 'usage', TALLY_SHARDS: '0' }, /TALLY_SHARDS must give shard counts from 1 to 64, got "0"/],
    [{ TALLY_TABLE: 'usage', TALLY_KEY_BYTES: '8' }, /TALLY_KEY_BYTES/],
    [{ TALLY_TABLE: 'usage', TALLY_RESOLVER: 'dns' }, /TALLY_RESOLVER: unknown resolver "dns"/],
    [{ TALLY_TABLE: 'usage', TALLY_RESOLVER: 'path:^/(?<acct>x)' }, /named group \(\?<account>/],
    [{ TALLY_TABLE: 'usage', TALLY_METRICS: '[{"name":"h"}]' }, /TALLY_METRICS: metric rule 0: name "h" is reserved/],
    [{ TALLY_TABLE: 'usage', TALLY_METRICS: '{' }, /TALLY_METRICS/],
    [{ TALLY_TABLE: 'usage', AWS_ENDPOINT_URL_DYNAMODB: 'not a url' }, /AWS_ENDPOINT_URL_DYNAMODB must be a URL/],
    [{ TALLY_TABLE: 'usage', TALLY_HISTORY_CAP: '25000', TALLY_KEY_BYTES: '16' }, /400 KB/],
    [{ TALLY_TABLE: 'usage', TALLY_LEDGER_TTL_DAYS: '1' }, /TALLY_LEDGER_TTL_DAYS \(1\) is shorter than the redelivery horizon of 58 days/],
    [{ TALLY_TABLE: 'usage', TALLY_LEDGER_TTL_DAYS: '57' }, /TALLY_LEDGER_TTL_DAYS \(57\)/],
  ])('fails fast naming the variable at fault (%j)', (env, message) => {
    expect(() => readConfig(env)).toThrow(ConfigError);
    expect(() => readConfig(env)).toThrow(message);
  });

  it('reads a distribution map given inline or as a file, ids in any case', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'tally-dist-')), 'distributions.json');
    writeFileSync(file, '{"E3ACME01":"acme","e3globex":"globex"}');

    const inline = readConfig({ TALLY_TABLE: 'usage', TALLY_RESOLVER: 'distribution:{"E3ACME01":"acme"}' });
    const fromFile = readConfig({ TALLY_TABLE: 'usage', TALLY_RESOLVER: `distribution:${file}` });

    expect(inline.resolver.kind === 'distribution' && [...inline.resolver.distributions]).toEqual([['E3ACME01', 'acme']]);
    expect(fromFile.resolver.kind === 'distribution' && [...fromFile.resolver.distributions]).toEqual([['E3ACME01', 'acme'], ['E3GLOBEX', 'globex']]);
    expect(() => readConfig({ TALLY_TABLE: 'usage', TALLY_RESOLVER: 'distribution:{"E3ACME01":"../x"}' })).toThrow(/TALLY_RESOLVER: distribution: distribution id "E3ACME01" maps to an invalid account id/);
    expect(() => readConfig({ TALLY_TABLE: 'usage', TALLY_RESOLVER: `distribution:${file}.missing` })).toThrow(ConfigError);
  });

  it('reads a host map given inline', () => {
    const config = readConfig({ TALLY_TABLE: 'usage', TALLY_RESOLVER: 'host-map:{"API.Acme.com":"acme"}' });

    expect(config.resolver.kind === 'host-map' && [...config.resolver.hosts]).toEqual([['api.acme.com', 'acme']]);
  });
});
