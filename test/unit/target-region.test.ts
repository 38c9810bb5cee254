import { tmpdir } from 'node:os';
import { regionOfQueueUrl, resolveTarget } from '../../src/cli/operator-target';

const EU_DLQ = 'https://sqs.eu-west-1.amazonaws.com/123456789012/tally-dlq';

describe('the region of an AWS target named by a queue URL', () => {
  it('tally dlq list --queue <eu-west-1 URL> with no region set works in eu-west-1, not us-east-1', () => {
    const target = resolveTarget({ table: 'tally-usage', dlqUrl: EU_DLQ }, {}, tmpdir());

    expect(target.config.region).toBe('eu-west-1');
  });

  it('a region named by --region or AWS_REGION still wins', () => {
    expect(resolveTarget({ table: 'tally-usage', dlqUrl: EU_DLQ, region: 'us-west-2' }, {}, tmpdir()).config.region).toBe('us-west-2');
    expect(resolveTarget({ table: 'tally-usage', dlqUrl: EU_DLQ }, { AWS_REGION: 'ap-south-1' }, tmpdir()).config.region).toBe('ap-south-1');
  });

  it.each([
    ['https://sqs.eu-west-1.amazonaws.com/123456789012/q', 'eu-west-1'],
    ['https://eu-central-1.queue.amazonaws.com/123456789012/q', 'eu-central-1'],
    ['https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q', 'cn-north-1'],
    ['https://sqs-fips.us-gov-west-1.amazonaws.com/123456789012/q', 'us-gov-west-1'],
    ['https://queue.amazonaws.com/123456789012/q', undefined],
    ['http://127.0.0.1:4566/000000000000/q', undefined],
    ['https://sqs.eu-west-1.example.com/123456789012/q', undefined],
    ['not a url', undefined],
  ])('%s names %s', (url, region) => {
    expect(regionOfQueueUrl(url)).toBe(region);
  });
});
