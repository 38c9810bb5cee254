import { readFileSync } from 'node:fs';
import { PoisonMessageError } from '../../src/domain/errors';
import { parseNotification, s3EventBody } from '../../src/domain/counters/notifications';

const event = (name: string) => readFileSync(`${__dirname}/../../fixtures/events/${name}`, 'utf8');

describe('parseNotification', () => {
  it('reads an S3 event and decodes keys encoded with + for a space', () => {
    const notification = parseNotification(event('s3-object-created.json'), 'm1');

    expect(notification).toEqual({
      kind: 'objects',
      objects: [
        {
          bucket: 'tally-logs',
          key: 'cloudfront/E2FIXTURE.2026-11-21-00.a b+c/caf\u00e9.gz',
          etag: '0123456789abcdef0123456789abcdef',
          size: 755,
          sequencer: '0A1B2C3D4E5F678901',
        },
      ],
      createdAt: '2026-11-21T01:05:12.345Z',
    });
  });

  it('acknowledges the s3:TestEvent that S3 sends when notifications are set up', () => {
    expect(parseNotification(event('s3-test-event.json'), 'm1')).toEqual({ kind: 'skip', reason: 's3:TestEvent' });
  });

  it('unwraps an SNS envelope around an S3 event or a test event', () => {
    const envelope = (message: string) => JSON.stringify({ Type: 'Notification', MessageId: 'x', TopicArn: 'arn:aws:sns:us-east-1:1:t', Message: message });

    const objects = parseNotification(envelope(event('s3-object-created.json')), 'm1');
    const test = parseNotification(envelope(event('s3-test-event.json')), 'm2');

    expect(objects.kind === 'objects' && objects.objects[0]?.key).toBe('cloudfront/E2FIXTURE.2026-11-21-00.a b+c/caf\u00e9.gz');
    expect(test).toEqual({ kind: 'skip', reason: 's3:TestEvent' });
  });

  it('reads an EventBridge Object Created event, whose key is not URL-encoded', () => {
    const notification = parseNotification(event('eventbridge-object-created.json'), 'm1');

    expect(notification).toEqual({
      kind: 'objects',
      objects: [{ bucket: 'tally-logs', key: 'cloudfront/E2FIXTURE.2026-11-21-00.x+y.gz', etag: 'b1946ac92492d2347c6235b4d2611184', size: 755, sequencer: '00617F08299329D189' }],
      createdAt: '2026-11-21T01:05:12.000Z',
    });
  });

  it('skips records that are not ObjectCreated', () => {
    const body = JSON.stringify({ Records: [{ eventName: 'ObjectRemoved:Delete', s3: { bucket: { name: 'b' }, object: { key: 'k' } } }] });

    expect(parseNotification(body, 'm1')).toEqual({ kind: 'skip', reason: 'no ObjectCreated records' });
  });

  it('reads every record of an event with many objects', () => {
    const refs = Array.from({ length: 50 }, (_, i) => ({ bucket: 'b', key: `k/${i} x.gz`, etag: `e${i}` }));

    const notification = parseNotification(s3EventBody(refs), 'm1');

    expect(notification.kind === 'objects' && notification.objects.map((o) => o.key)).toEqual(refs.map((r) => r.key));
  });

  it.each([
    ['a body that is not JSON', 'not json {', /message m-bad: body is not JSON/],
    ['JSON that is not an object', '[1,2]', /body is not a JSON object/],
    ['JSON that is not an S3 event', '{"hello":"world"}', /not an S3 event/],
    ['an S3 event with no records', '{"Records":[]}', /no Records/],
    ['a record without a bucket', '{"Records":[{"eventName":"ObjectCreated:Put","s3":{"object":{"key":"k"}}}]}', /lacks s3.bucket.name/],
    ['a key with a broken escape', '{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"a%zz"}}}]}', /not valid URL encoding/],
    ['an SNS envelope whose Message is not JSON', '{"Type":"Notification","Message":"nope"}', /SNS Message is not JSON/],
    ['an EventBridge event without detail', '{"source":"aws.s3","detail-type":"Object Created"}', /lacks detail.bucket.name/],
    ['an oversize body', `{"pad":"${'x'.repeat(300 * 1024)}"}`, /larger than any S3 notification/],
  ])('rejects %s as a poison message naming it', (_, body, reason) => {
    const parse = () => parseNotification(body, 'm-bad');

    expect(parse).toThrow(PoisonMessageError);
    expect(parse).toThrow(reason);
    expect(parse).toThrow(/m-bad/);
  });
});
