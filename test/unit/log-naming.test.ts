import { firstHourOf, s3Sequencer } from '../../src/app/ingest/put-logs';
import { firstRequestHour, logObjectKey } from '../../src/domain/logs/log-naming';
import { parseNotification, s3EventBody } from '../../src/domain/counters/notifications';

describe('naming a log file put into the local stack', () => {
  const facts = { fileName: 'logs/access.log.gz', contentHash: '9f86d081884c7d659a2feaa0c55ad015', gzip: true, firstHour: { day: '2026-11-23', hour: 13 } };
  const now = new Date('2026-11-23T13:45:00Z');

  it('keeps a CloudFront name, and names any other file from its first request hour and content hash', () => {
    expect(logObjectKey('cloudfront/', { ...facts, fileName: '/tmp/E2ABC.2026-11-21-07.a1b2c3d4.gz' })).toBe('cloudfront/E2ABC.2026-11-21-07.a1b2c3d4.gz');
    expect(logObjectKey('cloudfront/', { ...facts, firstHour: { day: '2026-11-21', hour: 7 } })).toBe('cloudfront/E2TALLYPUT.2026-11-21-07.9f86d081.gz');
    expect(logObjectKey('', { ...facts, gzip: false })).toBe('E2TALLYPUT.2026-11-23-13.9f86d081');
  });

  it('keeps a v2 Parquet name and a Firehose name, which name their hour', () => {
    const firehose = 'cf-logs-1-2026-11-21-07-15-42-0f8fad5b-d9cb-469f-a165-70867728950e';
    expect(logObjectKey('cf/', { ...facts, fileName: 'E2ABC.2026-11-21-07.a1b2c3d4.parquet' })).toBe('cf/E2ABC.2026-11-21-07.a1b2c3d4.parquet');
    expect(logObjectKey('cf/', { ...facts, fileName: `/tmp/${firehose}` })).toBe(`cf/${firehose}`);
  });

  it('reads the hour from timestamp(ms) or timestamp when the layout has no date', () => {
    const millis = '#Version: 1.0\n#Fields: sc-bytes timestamp(ms) cs(Host)\n512\t1795245121000\tacme.example.com\n';
    const seconds = '#Fields: timestamp cs(Host)\n-\tacme.example.com\n1795316400.123\tacme.example.com\n';

    expect(firstRequestHour(millis)).toEqual({ day: '2026-11-21', hour: 7 });
    expect(firstRequestHour(seconds)).toEqual({ day: '2026-11-22', hour: 3 });
  });

  it('reads the hour of the first request of JSON lines (v2 JSON): date and time, or a timestamp', () => {
    const dated = '{"date":"2026-11-21","time":"07:12:01","cs(Host)":"acme.example.com","sc-bytes":512}\n';
    const stamped = '{"timestamp":"1795316400.123","cs(Host)":"acme.example.com"}\n{"timestamp":"1795245121"}\n';

    expect(firstRequestHour(dated)).toEqual({ day: '2026-11-21', hour: 7 });
    expect(firstRequestHour(stamped)).toEqual({ day: '2026-11-22', hour: 3 });
    expect(firstRequestHour('{"not":"a log"}\n{broken\n')).toBeUndefined();
  });

  it('reads past a byte order mark, as the counter does: the first request is the first line after it', () => {
    // tryout: a BOM before v2 JSON named the file from its second request (2026-11-21-00, not 2026-11-20-23).
    const json = '\uFEFF{"date":"2026-11-20","time":"23:59:58","cs(Host)":"acme.example.com"}\r\n{"date":"2026-11-21","time":"00:00:01"}\r\n';
    const fieldsFirst = '\uFEFF#Fields: date time cs(Host)\r\n2026-11-20\t23:59:58\tacme.example.com\r\n';

    expect(firstRequestHour(json)).toEqual({ day: '2026-11-20', hour: 23 });
    expect(firstRequestHour(fieldsFirst)).toEqual({ day: '2026-11-20', hour: 23 });
  });

  it('names a file by its content alone, never by the clock', () => {
    expect(logObjectKey('', { ...facts, firstHour: { day: '2026-11-21', hour: 7 } })).toBe('E2TALLYPUT.2026-11-21-07.9f86d081.gz');
  });

  it('reads the hour of the first request line from the #Fields layout', () => {
    const text = '#Version: 1.0\n#Fields: time date cs(Host)\n\n10:59:01\t2026-11-21\tacme.example.com\n';

    expect(firstRequestHour(text)).toEqual({ day: '2026-11-21', hour: 10 });
    expect(firstRequestHour('not a log\n')).toBeUndefined();
  });

  it('sends the body S3 sends: every field, the ETag, size and a sequencer that grows', () => {
    const first = s3Sequencer(now, 0);
    const later = s3Sequencer(new Date(now.getTime() + 1), 0);
    const body = JSON.parse(s3EventBody([{ bucket: 'logs', key: 'cf/a b.gz', etag: 'abc', size: 12, sequencer: first }])) as {
      Records: [{ userIdentity: unknown; requestParameters: unknown; responseElements: unknown; s3: { object: unknown } }];
    };

    expect(later > first && first.length === later.length).toBe(true);
    expect(body.Records[0]).toMatchObject({ userIdentity: expect.any(Object), requestParameters: expect.any(Object), responseElements: expect.any(Object) });
    expect(body.Records[0].s3.object).toEqual({ key: 'cf/a+b.gz', size: 12, eTag: 'abc', sequencer: first });
    expect(parseNotification(JSON.stringify(body), 'm')).toMatchObject({ kind: 'objects', objects: [{ bucket: 'logs', key: 'cf/a b.gz', etag: 'abc', size: 12, sequencer: first }] });
  });
});

describe('the hour tally put names a file by', () => {
  const text = (body: string) => Buffer.from(body);

  it('is its first request when the content names it, else 00 of the first day it was counted on', () => {
    const w3c = text('#Version: 1.0\n#Fields: date time cs(Host)\n2026-11-21\t10:59:01\tacme.example.com\n');
    expect(firstHourOf('a.log', w3c, ['2026-11-21'])).toEqual({ firstHour: { day: '2026-11-21', hour: 10 }, from: 'content' });
    expect(firstHourOf('a.parquet', text('PAR1...'), ['2026-11-22', '2026-11-21'])).toEqual({ firstHour: { day: '2026-11-21', hour: 0 }, from: 'first-day' });
  });

  it('refuses a file with no dated request, or with requests outside the supported days', () => {
    expect(() => firstHourOf('h.log.gz', text('#Fields: date time\n'), [])).toThrow('file h.log.gz: no request line with a day: nothing to count (tally count h.log.gz shows its lines)');
    expect(() => firstHourOf('f.json', text('{"date":"9999-12-31","time":"00:00:00"}\n'), ['9999-12-31'])).toThrow(
      'file f.json: has requests of 9999-12-31, outside the days Tally supports, 2000-01-01..2099-12-31',
    );
  });
});
