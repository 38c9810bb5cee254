import { createReadStream } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { Readable } from 'node:stream';
import { missedHostReason, parseResolverSpec } from '../../src/domain/logs/account-resolver';
import { PoisonObjectError } from '../../src/domain/errors';
import { gunzipChunkBytes, logText } from '../../src/adapters/logs/log-text';
import { countLog, LogCounter, MAX_IP_KEYS, type CountOptions } from '../../src/domain/logs/log-counter';
import { LineScanner } from '../../src/domain/logs/line-scanner';
import { validateMetricRules } from '../../src/domain/logs/metric-rules';
import type { AccountDayUsage } from '../../src/domain/logs/usage-tally';

const fixture = (name: string) => `${__dirname}/../../fixtures/logs/${name}`;
const authRule = validateMetricRules([{ name: 'authorization_requests', path: '/api/authorization/*' }]);
const options = (overrides: Partial<CountOptions> = {}): CountOptions => ({
  resolver: parseResolverSpec('host-label'),
  metricRules: authRule,
  objectKey: 'cloudfront/E2FIXTURE.2026-11-21-00.abc.gz',
  ...overrides,
});
/** A stored log, gunzipped when it is gzip, then counted: what ingest and `tally count` do. */
const countLogStream = (body: AsyncIterable<Uint8Array>, countOptions: CountOptions, name: string) =>
  countLog(logText(body, name), countOptions, name);
const countFile = (name: string, overrides: Partial<CountOptions> = {}) =>
  countLogStream(createReadStream(fixture(name)), options(overrides), name);
const bytesOf = (text: string) => Readable.from([Buffer.from(text)]);

/** The seven lines of the standard fixtures, counted by hand (see scripts/make-fixtures.mjs). */
/** Rows of a tally without their hours (test/unit/log-counter-hours.property.test.ts checks those). */
function dayTotals(usage: readonly AccountDayUsage[]): Omit<AccountDayUsage, 'hours'>[] {
  return usage.map(({ account, day, metrics }) => ({ account, day, metrics }));
}

const STANDARD_USAGE = [
  { account: 'acme', day: '2026-11-20', metrics: { requests: 1, bytes: 1000, authorization_requests: 0 } },
  { account: 'acme', day: '2026-11-21', metrics: { requests: 2, bytes: 750, authorization_requests: 1 } },
  { account: 'globex', day: '2026-11-21', metrics: { requests: 2, bytes: 2000, authorization_requests: 0 } },
  // The line with no x-host-header has only cs(Host), the default domain d111111abcdef8.cloudfront.net: no account.
  { account: 'unattributed', day: '2026-11-21', metrics: { requests: 2, bytes: 1000, authorization_requests: 0 } },
];
const STANDARD_LINES = { read: 7, counted: 5, unattributed: 2, malformed: 0 };

describe('CloudFront log counting', () => {
  it.each([
    ['24 fields (older logs)', 'E2FIXTURE.2026-11-21-00.v24.gz'],
    ['26 fields (field-level encryption)', 'E2FIXTURE.2026-11-21-00.v26.gz'],
    ['33 fields (current)', 'E2FIXTURE.2026-11-21-00.v33.gz'],
    ['35 fields (newer than this code)', 'E2FIXTURE.2026-11-21-00.v35.gz'],
    ['plain text, not gzipped', 'plain-v33.log'],
    ['CRLF line ends and a UTF-8 BOM', 'crlf-bom.log'],
  ])('counts a log with %s by its #Fields header', async (_, name) => {
    const count = await countFile(name);

    expect(dayTotals(count.tally.usage())).toEqual(STANDARD_USAGE);
    expect(count.lines).toEqual(STANDARD_LINES);
  });

  it('follows a #Fields header that changes mid-file (tab after the colon)', async () => {
    const count = await countFile('header-change.log.gz');

    expect(count.lines).toEqual({ read: 4, counted: 4, unattributed: 0, malformed: 0 });
    expect(dayTotals(count.tally.usage())).toEqual([
      { account: 'acme', day: '2026-11-21', metrics: { requests: 2, bytes: 30, authorization_requests: 0 } },
      { account: 'acme', day: '2026-11-22', metrics: { requests: 1, bytes: 40, authorization_requests: 0 } },
      { account: 'globex', day: '2026-11-21', metrics: { requests: 1, bytes: 30, authorization_requests: 0 } },
    ]);
  });

  it('counts a log of three days mixed (two at a time), with more malformed lines than it samples, line by line', async () => {
    // Near midnight a log mixes two days; the scanner sums both, and a third takes the place of the older.
    const days = ['2026-11-20', '2026-11-21', '2026-11-20', '2026-11-21', '2026-11-22', '2026-11-21', '2026-11-22'];
    const lines = days.flatMap((day, i) => [
      `${day}\t23:59:5${i}\t${i + 1}\tacme.x.com`,
      `${day}\t23:59:5${i}\t${10 * (i + 1)}\tglobex.x.com`,
      `${day}\t23:59:5${i}\t${i}x\tacme.x.com`,
      `${day}\t23:59:5${i}\tacme.x.com`,
    ]);
    const text = `#Fields: date time sc-bytes x-host-header\n${lines.join('\n')}\n`;

    const count = await countLog(bytesOf(text), options({ metricRules: [] }), 'midnight.log');

    expect(count.lines).toEqual({ read: 28, counted: 14, unattributed: 0, malformed: 14 });
    expect(count.malformedSamples.map((sample) => sample.line)).toEqual([4, 5, 8, 9, 12]);
    expect(dayTotals(count.tally.usage())).toEqual([
      { account: 'acme', day: '2026-11-20', metrics: { requests: 2, bytes: 4 } },
      { account: 'acme', day: '2026-11-21', metrics: { requests: 3, bytes: 12 } },
      { account: 'acme', day: '2026-11-22', metrics: { requests: 2, bytes: 12 } },
      { account: 'globex', day: '2026-11-20', metrics: { requests: 2, bytes: 40 } },
      { account: 'globex', day: '2026-11-21', metrics: { requests: 3, bytes: 120 } },
      { account: 'globex', day: '2026-11-22', metrics: { requests: 2, bytes: 120 } },
    ]);
  });

  it('counts every malformed line with its reason and keeps the good ones', async () => {
    const count = await countFile('malformed-mix.log.gz');

    expect(count.lines).toEqual({ read: 10, counted: 3, unattributed: 1, malformed: 6 });
    expect(count.malformedSamples.map((sample) => sample.reason)).toEqual([
      'no #Fields header before this line',
      '20 fields where #Fields names 33',
      'date "2026-02-30" is not a calendar day',
      'sc-bytes "-5" is not a non-negative integer',
      'sc-bytes "lots" is not a non-negative integer',
    ]);
    expect(count.tally.usage().map((row) => [row.account, row.metrics.bytes])).toEqual([
      ['acme', 7],
      ['globex', 3],
      ['unattributed', 4],
    ]);
  });

  it('treats a header-only log and an empty object as logs with no lines', async () => {
    for (const name of ['header-only.log.gz', 'empty.log.gz']) {
      const count = await countFile(name);
      expect(count.lines).toEqual({ read: 0, counted: 0, unattributed: 0, malformed: 0 });
      expect(count.tally.size).toBe(0);
    }
  });

  it.each([
    ['data lines but no #Fields header', 'no-fields-header.log.gz', /no #Fields header/],
    ['binary garbage', 'not-a-log.bin', /not a CloudFront log/],
    ['a truncated gzip stream', 'truncated.log.gz', /cannot gunzip/],
  ])('rejects %s as a poison object naming it', async (_, name, reason) => {
    const counting = countFile(name);

    await expect(counting).rejects.toThrow(PoisonObjectError);
    await expect(countFile(name)).rejects.toThrow(new RegExp(`object ${name.replace('.', '\\.')}`));
    await expect(countFile(name)).rejects.toThrow(reason);
  });

  it('rethrows an error of the source stream as it is, so it can be retried', async () => {
    const gz = gzipSync('#Fields: date sc-bytes\n2026-11-21\t5\n');
    const broken = Readable.from(
      (async function* () {
        yield gz.subarray(0, 10);
        throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      })(),
    );

    await expect(countLogStream(broken, options(), 'x')).rejects.toThrow('socket hang up');
  });

  it('attributes each line to its own date, not the hour in the file name', async () => {
    const text = '#Fields: date time sc-bytes x-host-header\n2026-11-20\t23:59:59\t5\tacme.x.com\n2026-11-21\t00:00:00\t7\tacme.x.com\n';

    const count = await countLogStream(bytesOf(text), options(), 'x');

    expect(count.tally.usage().map((row) => [row.day, row.metrics.bytes])).toEqual([
      ['2026-11-20', 5],
      ['2026-11-21', 7],
    ]);
  });

  it.each(['wasm', 'js'] as const)('puts stray lines of the previous day on their own day, however the text is cut (%s scanner)', async (scanner) => {
    // Mostly one day with a line of the day before now and then, as CloudFront writes them.
    const lines = Array.from({ length: 600 }, (_, i) => ({ day: i % 7 === 3 || i % 50 === 49 ? '2026-11-20' : '2026-11-21', host: i % 2 === 0 ? 'acme' : 'globex', bytes: i }));
    const text = Buffer.from(`#Fields: date time sc-bytes x-host-header\n${lines.map((l) => `${l.day}\t12:00:00\t${l.bytes}\t${l.host}.x.com\n`).join('')}`);
    const expected = new Map<string, [number, number]>();
    for (const l of lines) {
      const sums = expected.get(`${l.host} ${l.day}`) ?? [0, 0];
      expected.set(`${l.host} ${l.day}`, [sums[0] + 1, sums[1] + l.bytes]);
    }
    for (const size of [64, 97, 1000, text.length]) {
      const chunks = Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.subarray(i * size, (i + 1) * size));
      // No metric rules: the scanner sums the lines itself.
      const count = await countLog(Readable.from(chunks), options({ scanner, metricRules: [] }), 'x');
      const rows = new Map(count.tally.usage().map((row) => [`${row.account} ${row.day}`, [row.metrics.requests, row.metrics.bytes]]));
      expect(rows).toEqual(expected);
    }
  });

  it('counts a line longer than the limit as malformed without holding it', async () => {
    const long = `2026-11-21\t00:00:00\t5\t${'a'.repeat(1024 * 1024)}.x.com`;
    const text = `#Fields: date time sc-bytes x-host-header\n${long}\n2026-11-21\t00:00:01\t9\tacme.x.com\n`;
    const chunks = text.match(/[\s\S]{1,65536}/g)!.map((part) => Buffer.from(part));

    const count = await countLogStream(Readable.from(chunks), options(), 'x');

    expect(count.lines).toEqual({ read: 2, counted: 1, unattributed: 0, malformed: 1 });
    expect(count.malformedSamples[0]?.reason).toMatch(/longer than 65536/);
  });

  it('splits lines across chunk boundaries, even inside a UTF-8 character', () => {
    const counter = new LogCounter(options({ resolver: parseResolverSpec('host-map:{"caf\u00e9.x.com":"cafe","na\u00efve.x.com":"naive"}') }));
    const bytes = Buffer.from('\uFEFF#Fields: date x-host-header\n2026-11-21\tcaf\u00e9.x.com\n2026-11-21\tna\u00efve.x.com\r\n2026-11-21\tlast');

    for (let i = 0; i < bytes.length; i++) counter.write(bytes.subarray(i, i + 1));
    const count = counter.finish('x');

    expect(count.lines).toEqual({ read: 3, counted: 2, unattributed: 1, malformed: 0 });
    expect(count.tally.usage().map((row) => row.account)).toEqual(['cafe', 'naive', 'unattributed']);
  });

  it('says "1 data line" of a log with one line and no #Fields header', async () => {
    await expect(countLogStream(bytesOf('2026-11-21\t5\n'), options(), 'x')).rejects.toThrow(/: 1 data line and no #Fields header/);
    await expect(countLogStream(bytesOf('2026-11-21\t5\n2026-11-21\t6\n'), options(), 'x')).rejects.toThrow(/: 2 data lines and no #Fields header/);
  });

  it('inflates in chunks sized to the stored object: a fitting buffer for a small one, 1 MiB for a large or unknown one', async () => {
    const text = Buffer.from(Array.from({ length: 60_000 }, (_, i) => `2026-11-21\t${i}\t${(i * 7919) % 100_003}\n`).join(''));
    const gz = gzipSync(text);
    const chunks = async (storedBytes?: number) => {
      const out: Uint8Array[] = [];
      for await (const chunk of logText(Readable.from([gz]), 'sized', storedBytes)) out.push(chunk);
      expect(Buffer.concat(out).equals(text)).toBe(true);
      return Math.max(...out.map((chunk) => chunk.length));
    };

    expect(gunzipChunkBytes(gz.length)).toBe(1024 * 1024);
    expect(gunzipChunkBytes(9_000)).toBe(128 * 1024);
    expect(gunzipChunkBytes(10)).toBe(64 * 1024);
    expect(await chunks(undefined)).toBe(1024 * 1024);
    expect(await chunks(9_000)).toBe(128 * 1024);
    expect(await chunks(10)).toBe(64 * 1024);
  });

  it('tells gzip from text by two bytes, even when they come one at a time', async () => {
    const gz = gzipSync('#Fields: date sc-bytes x-host-header\n2026-11-21\t5\tacme.x.com\n');
    const oneByteFirst = Readable.from([gz.subarray(0, 1), gz.subarray(1)]);

    const count = await countLogStream(oneByteFirst, options(), 'x');

    expect(count.lines).toEqual({ read: 1, counted: 1, unattributed: 0, malformed: 0 });
  });

  it('counts the same with the JavaScript scanner as with the WebAssembly one', async () => {
    const wasm = await countFile('E2FIXTURE.2026-11-21-00.v33.gz', { scanner: 'wasm' });
    const js = await countFile('E2FIXTURE.2026-11-21-00.v33.gz', { scanner: 'js' });

    expect(js.tally.usage()).toEqual(wasm.tally.usage());
    expect(dayTotals(js.tally.usage())).toEqual(STANDARD_USAGE);
  });

  it('resolves accounts with a regex on the URL-decoded path', async () => {
    const text = '#Fields: date time sc-bytes cs-uri-stem\n2026-11-21\t00:00:00\t5\t/t/acme%2Dco/x\n2026-11-21\t00:00:00\t5\t/other\n';

    const count = await countLogStream(bytesOf(text), options({ resolver: parseResolverSpec('path:^/t/(?<account>[^/]+)/') }), 'x');

    expect(count.tally.usage().map((row) => row.account)).toEqual(['acme-co', 'unattributed']);
  });

  it('resolves accounts from the object key for every line', async () => {
    const text = '#Fields: date time sc-bytes\n2026-11-21\t00:00:00\t5\n2026-11-21\t00:00:01\t6\n';
    const resolver = parseResolverSpec('key:logs/{account}/*');

    const count = await countLogStream(bytesOf(text), options({ resolver, objectKey: 'logs/initech/E2.2026-11-21-00.x.gz' }), 'x');

    expect(dayTotals(count.tally.usage())).toEqual([
      { account: 'initech', day: '2026-11-21', metrics: { requests: 2, bytes: 11, authorization_requests: 0 } },
    ]);
  });

  describe('the distribution resolver', () => {
    const resolver = parseResolverSpec('distribution:{"E3ACME01":"acme","E3GLOBEX":"globex"}');

    it('maps the distribution named in the object key, for every v2 key layout and the legacy name', async () => {
      const text = '#Fields: date time sc-bytes\n2026-11-21\t00:00:00\t5\n';
      const keys = [
        'cf/E3ACME01.2026-11-21-00.abc.gz',
        // A legacy log prefix without a slash ('logs-'), which CloudFront puts before the name verbatim (tryout: unattributed before).
        'logs-E3ACME01.2026-11-21-00.abc.gz',
        'AWSLogs/123456789012/CloudFront/E3ACME01/2026/11/21/00/part.log.gz',
        'AWSLogs/123456789012/CloudFront/DistributionId=E3ACME01/year=2026/month=11/day=21/hour=00/f.log.gz',
      ];

      const accounts = [];
      for (const objectKey of keys) accounts.push((await countLogStream(bytesOf(text), options({ resolver, objectKey }), 'x')).tally.usage().map((row) => row.account));

      expect(accounts).toEqual([['acme'], ['acme'], ['acme'], ['acme']]);
    });

    it("prefers each line's DistributionId (any spelling of the field) and falls back to the key when a line has none", async () => {
      const text =
        '#Fields: date time sc-bytes distributionid\n' +
        '2026-11-21\t00:00:00\t5\tE3GLOBEX\n' +
        '2026-11-21\t00:00:00\t6\te3acme01\n' +
        '2026-11-21\t00:00:00\t7\t-\n' +
        '2026-11-21\t00:00:00\t8\tE3UNKNOWN\n';

      const count = await countLogStream(bytesOf(text), options({ resolver, objectKey: 'cf/E3GLOBEX.2026-11-21-00.abc.gz' }), 'x');

      expect(count.tally.usage().map((row) => [row.account, row.metrics.bytes])).toEqual([
        ['acme', 6],
        ['globex', 12],
        ['unattributed', 8],
      ]);
    });

    it('leaves lines unattributed when neither the line nor the key names a known distribution', async () => {
      const text = '#Fields: date time sc-bytes\n2026-11-21\t00:00:00\t5\n';

      const count = await countLogStream(bytesOf(text), options({ resolver, objectKey: `fh/cf-1-2026-11-21-00-00-00-0f8fad5b-d9cb-469f-a165-70867728950e.gz` }), 'x');

      expect(count.tally.usage().map((row) => row.account)).toEqual(['unattributed']);
    });
  });

  it('counts configured metrics by method, path and status class', async () => {
    const rules = validateMetricRules([
      { name: 'writes', method: 'POST' },
      { name: 'server_errors', status: '5xx' },
      { name: 'api_bytes', path: '/api/*', value: 'bytes' },
    ]);
    const counter = new LogCounter(options({ metricRules: rules }));
    counter.write(
      Buffer.from(
        '#Fields: date time sc-bytes cs-method cs-uri-stem sc-status x-host-header\n' +
          '2026-11-21\t00:00:00\t10\tPOST\t/api/a\t201\tacme.x.com\n' +
          '2026-11-21\t00:00:00\t20\tGET\t/api/b\t503\tacme.x.com\n' +
          '2026-11-21\t00:00:00\t40\tGET\t/web\t500\tacme.x.com\n',
      ),
    );

    const [row] = counter.finish('x').tally.usage();

    expect(row?.metrics).toEqual({ requests: 3, bytes: 70, writes: 1, server_errors: 2, api_bytes: 30 });
  });
});

describe('what the resolver missed', () => {
  const line = (host: string) => `2026-11-21\t10:00:00\tIAD89-C1\t100\t192.0.2.1\tGET\t${host}\t/x\t200`;
  const text = (hosts: string[]) => ['#Version: 1.0', '#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status', ...hosts.map(line)].join('\n') + '\n';

  it('samples each host a host resolver could not attribute once, at most five', async () => {
    const hosts = ['acme.example.com', '203.0.113.7', '203.0.113.7', '-', '198.51.100.1', '203.0.113.8', '203.0.113.9', '203.0.113.10', '203.0.113.11'];
    const count = await countLog(logText(bytesOf(text(hosts)), 'missed'), options({ resolver: parseResolverSpec('host-map:{"acme.example.com":"acme"}') }), 'missed');

    expect(count.lines).toEqual({ read: 9, counted: 1, unattributed: 8, malformed: 0 });
    expect(count.unattributedSamples).toEqual(['203.0.113.7', '198.51.100.1', '203.0.113.8', '203.0.113.9', '203.0.113.10']);
  });

  it.each(['wasm', 'js'] as const)('counts CloudFront default domains as unattributed under host-label, and samples each whole host (%s scanner)', async (scanner) => {
    // The default domain in either case, cut small so that the scanner keys it first and sums it after; hosts that only resemble one keep their label's account.
    const hosts = Array.from({ length: 600 }, (_, i) => ['d111111abcdef8.cloudfront.net', 'acme.example.com', 'E2ABC.CloudFront.NET', 'globex.cloudfront.net.example.com'][i % 4]!);
    const body = Buffer.from(text(hosts));
    const pieces = Array.from({ length: Math.ceil(body.length / 1000) }, (_, i) => body.subarray(i * 1000, (i + 1) * 1000));
    const count = await countLog(Readable.from(pieces), options({ scanner, metricRules: [] }), 'default-domain');

    expect(count.lines).toEqual({ read: 600, counted: 300, unattributed: 300, malformed: 0 });
    expect(count.tally.usage().map((row) => [row.account, row.metrics.requests])).toEqual([
      ['acme', 150],
      ['globex', 150],
      ['unattributed', 300],
    ]);
    expect(count.unattributedSamples).toEqual(['d111111abcdef8.cloudfront.net', 'E2ABC.CloudFront.NET']);
  });

  it('says why a sampled host has no account', () => {
    expect(missedHostReason('d111111abcdef8.cloudfront.net')).toMatch(/CloudFront default domain/);
    expect(missedHostReason('203.0.113.7')).toMatch(/IP address/);
    expect(missedHostReason('bad#host')).toMatch(/not an account/);
  });

  it('samples IP literals the host-label resolver cannot read a label from', async () => {
    const count = await countLog(logText(bytesOf(text(['acme.example.com', '203.0.113.7', '203.0.113.7', '[2001:db8::1]'])), 'ips'), options(), 'ips');

    expect(count.lines).toEqual({ read: 4, counted: 1, unattributed: 3, malformed: 0 });
    expect(count.unattributedSamples).toEqual(['203.0.113.7', '[2001:db8::1]']);
  });

  it.each(['wasm', 'js'] as const)('keys IP literals by the whole host: each sampled once, then summed by the scanner, of no account (%s scanner)', async (scanner) => {
    // Seven literals, five sampled; a digit-first host that is none has its label's account.
    const ips = ['203.0.113.7', '[2001:db8::1]', '198.51.100.1:8080', '203.0.113.8', '203.0.113.9', '203.0.113.10', '[::1]:443'];
    const hosts = Array.from({ length: 3000 }, (_, i) => (i % 30 === 0 ? ips[(i / 30) % ips.length]! : i % 2 === 1 ? 'acme.example.com' : '1234.5.6.7'));
    const body = Buffer.from(text(hosts));
    // Cut small, so that each piece is scanned on its own, with what the previous ones taught the scanner.
    const pieces = Array.from({ length: Math.ceil(body.length / 1000) }, (_, i) => body.subarray(i * 1000, (i + 1) * 1000));
    const count = await countLog(Readable.from(pieces), options({ scanner, metricRules: [] }), 'ips');

    expect(count.lines).toEqual({ read: 3000, counted: 2900, unattributed: 100, malformed: 0 });
    expect(count.tally.usage().map((row) => [row.account, row.metrics.requests, row.metrics.bytes])).toEqual([
      ['1234', 1400, 140_000],
      ['acme', 1500, 150_000],
      ['unattributed', 100, 10_000],
    ]);
    expect(count.unattributedSamples).toEqual(ips.slice(0, 5));
  });

  it.each(['wasm', 'js'] as const)('keys a bounded number of IP literals (MAX_IP_KEYS), and counts the accounts that come after more (%s scanner)', async (scanner) => {
    // More distinct literals than are keyed, then accounts: every line counted where it belongs.
    const hosts = [
      ...Array.from({ length: MAX_IP_KEYS + 300 }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`),
      ...Array.from({ length: 600 }, (_, i) => (i % 2 === 0 ? 'acme.example.com' : `10.0.0.${i % 7}`)),
      ...Array.from({ length: 300 }, () => 'globex.example.com'),
    ];
    const body = Buffer.from(text(hosts));
    const pieces = Array.from({ length: Math.ceil(body.length / 4096) }, (_, i) => body.subarray(i * 4096, (i + 1) * 4096));
    // Each key the counter adds to the scanner's table gets its id from keyId: count the ids (the method still runs).
    const keyIds = jest.spyOn(LineScanner.prototype, 'keyId');
    const count = await countLog(Readable.from(pieces), options({ scanner, metricRules: [] }), 'many');
    const added = new Set(keyIds.mock.results.map((result) => result.value as number).filter((id) => id >= 0)).size;
    keyIds.mockRestore();

    // The cap's literals and the two accounts' labels; without the cap, every distinct literal.
    expect(added).toBe(MAX_IP_KEYS + 2);
    expect(count.lines).toEqual({ read: hosts.length, counted: 600, unattributed: hosts.length - 600, malformed: 0 });
    expect(count.tally.usage().map((row) => [row.account, row.metrics.requests])).toEqual([
      ['acme', 300],
      ['globex', 300],
      ['unattributed', hosts.length - 600],
    ]);
    expect(count.unattributedSamples).toEqual(['10.0.0.0', '10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4']);
  });

  it('says nothing when every line found its account', async () => {
    const count = await countLog(logText(bytesOf(text(['acme.example.com', 'globex.example.com'])), 'all'), options(), 'all');
    expect(count.unattributedSamples).toBeUndefined();
  });
});
