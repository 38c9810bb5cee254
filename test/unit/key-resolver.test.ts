import { accountFromKey, parseResolverSpec } from '../../src/domain/logs/account-resolver';

/** The account a `key:` resolver finds in `objectKey`. */
function accountOf(template: string, objectKey: string): string | undefined {
  const spec = parseResolverSpec(`key:${template}`);
  if (spec.kind !== 'key') throw new Error('not a key resolver');
  return accountFromKey(spec.pattern, objectKey);
}

const UUID = '0f8fad5b-d9cb-469f-a165-70867728950e';

describe('key: templates on CloudFront v2 and Firehose layouts', () => {
  it.each([
    ['AWSLogs/*/CloudFront/{account}/**', 'AWSLogs/123456789012/CloudFront/acme/E3ACME01/2026/11/21/07/E3ACME01.2026-11-21-07.a1b2.gz', 'acme'],
    ['AWSLogs/*/CloudFront/{account}/**', 'AWSLogs/123456789012/CloudFront/acme/DistributionId=E3ACME01/year=2026/month=11/day=21/hour=07/f.parquet', 'acme'],
    ['**/customer={account}/**', 'cloudfront/AWSLogs/123456789012/CloudFront/customer=globex/year=2026/month=11/day=21/hour=07/f.log.gz', 'globex'],
    ['fh/{account}/**', `fh/initech/2026/11/21/07/cf-logs-1-2026-11-21-07-15-42-${UUID}.gz`, 'initech'],
  ])('%s finds the account in %s', (template, objectKey, account) => {
    expect(accountOf(template, objectKey)).toBe(account);
  });

  it('lets a leading **/ match no folder at all, or any prefix', () => {
    expect(accountOf('**/customer={account}/**', 'customer=acme/year=2026/month=11/day=21/hour=07/f.parquet')).toBe('acme');
    expect(accountOf('**/AWSLogs/*/CloudFront/{account}/**', 'AWSLogs/123456789012/CloudFront/acme/2026/11/21/07/f.gz')).toBe('acme');
    expect(accountOf('**/AWSLogs/*/CloudFront/{account}/**', 'cloudfront/AWSLogs/123456789012/CloudFront/acme/2026/11/21/07/f.gz')).toBe('acme');
  });

  it('finds no account where the key has none, or names an invalid one', () => {
    expect(accountOf('**/customer={account}/**', 'AWSLogs/123456789012/CloudFront/E3ACME01/2026/11/21/07/f.gz')).toBeUndefined();
    expect(accountOf('**/customer={account}/**', 'xcustomer=acme/f.gz')).toBeUndefined();
    expect(accountOf('AWSLogs/*/CloudFront/{account}/**', 'AWSLogs/123456789012/CloudFront/a$b/f.gz')).toBeUndefined();
  });
});
