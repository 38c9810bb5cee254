import { readConfig, readLogFormat } from '../../src/adapters/config';
import { logText } from '../../src/adapters/logs/log-text';
import { parseResolverSpec } from '../../src/domain/logs/account-resolver';
import { ConfigError, PoisonObjectError } from '../../src/domain/errors';
import { parseLogFields } from '../../src/domain/logs/log-fields';
import { countLogContent, type FormatOptions } from '../../src/domain/logs/log-formats';
import { linesBalance } from '../../src/domain/logs/usage-tally';
import { parquetContent, type RandomAccessFile } from '../../src/adapters/logs/parquet-log';
import { parquetFromJsonLines, parquetFromSelect } from '../support/parquet-logs';
import { expectedUsage, gzip, jsonLog, legacyLog, PLAIN_FIELDS, plainLog, REALTIME_FIELDS_SETTING, realtimeLog, traffic, w3cLog } from '../support/log-formats';

const base: FormatOptions = { resolver: { kind: 'host-label' }, metricRules: [], objectKey: 'logs/x' };

/** The text in chunks of `size` bytes, as a stream would hand it over. */
async function* chunks(data: Buffer, size = 4096): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < data.length; at += size) yield data.subarray(at, at + size);
}

async function count(data: string | Buffer, options: Partial<FormatOptions> = {}, size?: number) {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  return countLogContent({ kind: 'text', text: logText(chunks(bytes, size), 'test') }, { ...base, ...options }, 'test object');
}

/** Usage as account -> day -> metrics, the shape of {@link expectedUsage}. */
function usageOf(result: Awaited<ReturnType<typeof count>>) {
  const usage: Record<string, Record<string, Record<string, number>>> = {};
  for (const row of result.tally.usage()) (usage[row.account] ??= {})[row.day] = row.metrics;
  return usage;
}

const requests = traffic(600, ['acme', 'globex', 'initech']);
const expected = expectedUsage(requests);

describe('every CloudFront log format counts the same traffic the same', () => {
  const formats: [string, () => Promise<Awaited<ReturnType<typeof count>>>, string][] = [
    ['legacy standard log (gzip)', () => count(gzip(legacyLog(requests))), 'standard'],
    ['v2 w3c, reordered subset, day from timestamp(ms) only', () => count(w3cLog(requests)), 'standard'],
    ['v2 JSON lines (gzip), DistributionId spelt two ways', () => count(gzip(jsonLog(requests)), {}, 777), 'json'],
    ['v2 plain with a | delimiter, day from timestamp (seconds)', () => count(plainLog(requests), { format: { headerless: parseLogFields(PLAIN_FIELDS), delimiter: '|' } }, 333), 'headerless'],
    ['v2 plain with a multi-character delimiter', () => count(plainLog(requests, '<|>'), { format: { headerless: parseLogFields(PLAIN_FIELDS), delimiter: '<|>' } }, 5), 'headerless'],
    ['real-time log records (TSV, cs-host, epoch seconds.millis)', () => count(gzip(realtimeLog(requests)), { format: { headerless: parseLogFields(REALTIME_FIELDS_SETTING) } }), 'headerless'],
  ];

  it.each(formats)('%s', async (_name, run, format) => {
    const result = await run();

    expect(result.format).toBe(format);
    expect(result.lines).toEqual({ read: requests.length, counted: requests.length - (expected.unattributed ? Object.values(expected.unattributed).reduce((n, d) => n + d.requests, 0) : 0), unattributed: expect.any(Number), malformed: 0 });
    expect(linesBalance(result.lines)).toBe(true);
    expect(usageOf(result)).toEqual(expected);
  });

  it('keeps legacy logs tab-separated when a delimiter is configured for v2 w3c and plain logs', async () => {
    const w3cPiped = `#Fields: timestamp(ms) sc-bytes x-host-header\n${requests.map((r) => `${r.at}|${r.bytes}|${r.host}`).join('\n')}\n`;
    const legacy = await count(gzip(legacyLog(requests)), { format: { delimiter: '|' } });
    const piped = await count(w3cPiped, { format: { delimiter: '|' } });

    expect(legacy.lines.malformed).toBe(0);
    expect(usageOf(legacy)).toEqual(expected);
    expect(piped.lines.malformed).toBe(0);
    expect(usageOf(piped)).toEqual(expected);
  });

  it('reads metric rules from every format with the standard-log names', async () => {
    const rules = [{ name: 'authorization_requests', path: '/api/authorization/*' }, { name: 'posts', method: 'POST' }, { name: 'missing_bytes', status: '404', value: 'bytes' as const }];
    const results = await Promise.all([
      count(legacyLog(requests), { metricRules: rules }),
      count(w3cLog(requests), { metricRules: rules }),
      count(jsonLog(requests), { metricRules: rules }),
      count(plainLog(requests), { metricRules: rules, format: { headerless: parseLogFields(PLAIN_FIELDS), delimiter: '|' } }),
      count(realtimeLog(requests), { metricRules: rules, format: { headerless: parseLogFields(REALTIME_FIELDS_SETTING) } }),
    ]);
    const reference = usageOf(results[0]!);

    expect(reference.acme?.['2026-11-20']?.authorization_requests).toBeGreaterThan(0);
    expect(reference.acme?.['2026-11-20']?.missing_bytes).toBeGreaterThan(0);
    for (const result of results) expect(usageOf(result)).toEqual(reference);
  });
});

describe('bad input per format: a clear reason, every line accounted for', () => {
  it('counts a JSON line that is no object, and one that is no JSON, as malformed', async () => {
    const good = jsonLog(requests.slice(0, 3));
    const result = await count(`${good}[1,2,3]\n"text"\n{"date": "2026-11-21", "time": \n${good}`);

    expect(result.lines).toMatchObject({ read: 9, malformed: 3 });
    expect(linesBalance(result.lines)).toBe(true);
    expect(result.malformedSamples.map((s) => s.reason)).toEqual([
      'line is not a JSON object: [1,2,3]',
      'line is not a JSON object: "text"',
      expect.stringMatching(/^line is not JSON: \{"date"/),
    ]);
  });

  it('counts JSON lines without a day field as malformed, and a log of only such lines is poison', async () => {
    const noDay = '{"sc-bytes": "10", "x-host-header": "acme.example.com"}\n';
    const mixed = await count(jsonLog(requests.slice(0, 2)) + noDay);

    expect(mixed.lines).toMatchObject({ read: 3, counted: 2, malformed: 1 });
    expect(mixed.malformedSamples[0]?.reason).toBe('the field list has no date, timestamp(ms) or timestamp field');
    await expect(count(noDay.repeat(3))).rejects.toThrow(/not a CloudFront log: 3 data lines and no line with a date, timestamp\(ms\) or timestamp field/);
  });

  it('counts a timestamp that is no epoch time as malformed', async () => {
    const result = await count('#Fields: timestamp(ms) sc-bytes x-host-header\n1763683200000\t5\tacme.x.com\nyesterday\t5\tacme.x.com\n1763683200000.5.1\t5\tacme.x.com\n');

    expect(result.lines).toMatchObject({ read: 3, counted: 1, malformed: 2 });
    expect(result.malformedSamples.map((s) => s.reason)).toEqual(['timestamp "yesterday" is not an epoch time', 'timestamp "1763683200000.5.1" is not an epoch time']);
  });

  describe('a request dated outside the supported days (2000-01-01..2099-12-31) is malformed, not counted into a day no one can read', () => {
    // Around both edges, and far out: 1970-01-01 (epoch 0) and 9999-12-31 are still real days in every format.
    const outside = [Date.UTC(1970, 0, 1), Date.UTC(1999, 11, 31, 23, 59, 59), Date.UTC(2100, 0, 1), Date.UTC(9999, 11, 31, 12)];
    const inside = [Date.UTC(2000, 0, 1), Date.UTC(2099, 11, 31, 23, 59, 59), Date.UTC(2026, 10, 21, 8)];
    const dated = (at: number, i: number) => ({ ...requests[i]!, at, host: 'acme.x.com', bytes: 1000 + i });
    // Inside and outside interleaved, so that a day of a line outside comes between lines of days inside.
    const mixed = [...inside, ...outside].sort((a, b) => (a % 7) - (b % 7) || a - b).map(dated);
    const insideBytes = mixed.filter((r) => inside.includes(r.at)).reduce((sum, r) => sum + r.bytes, 0);
    const dayOf = (at: number) => new Date(at).toISOString().slice(0, 10);
    const plain = { format: { headerless: parseLogFields(PLAIN_FIELDS), delimiter: '|' } };
    const realtime = { format: { headerless: parseLogFields(REALTIME_FIELDS_SETTING) } };
    const cases: [string, string, Partial<FormatOptions>, RegExp][] = [
      ['legacy', legacyLog(mixed), {}, /^date "(\d{4}-\d{2}-\d{2})" is outside the days Tally supports, 2000-01-01\.\.2099-12-31$/],
      ['json', jsonLog(mixed), {}, /^date "(\d{4}-\d{2}-\d{2})" is outside the days Tally supports, 2000-01-01\.\.2099-12-31$/],
      ['w3c timestamp(ms)', w3cLog(mixed), {}, /^timestamp "\d+" is on (\d{4}-\d{2}-\d{2}), outside the days Tally supports, 2000-01-01\.\.2099-12-31$/],
      ['plain timestamp', plainLog(mixed), plain, /^timestamp "\d+" is on (\d{4}-\d{2}-\d{2}), outside the days Tally supports, 2000-01-01\.\.2099-12-31$/],
      ['real-time epoch seconds', realtimeLog(mixed), realtime, /^timestamp "[\d.]+" is on (\d{4}-\d{2}-\d{2}), outside the days Tally supports, 2000-01-01\.\.2099-12-31$/],
    ];

    function expectOutsideMalformed(result: Awaited<ReturnType<typeof count>>, reason: RegExp): void {
      expect(result.lines).toEqual({ read: 7, counted: 3, unattributed: 0, malformed: 4 });
      expect(result.tally.usage().map((row) => row.day)).toEqual(inside.map(dayOf).sort());
      expect(result.tally.usage().reduce((sum, row) => sum + row.metrics.bytes!, 0)).toBe(insideBytes);
      const days = result.malformedSamples.map((sample) => reason.exec(sample.reason)?.[1]);
      expect(days.sort()).toEqual(outside.map(dayOf).sort());
    }

    it.each(cases.flatMap(([name, text, options, reason]) => (['wasm', 'js'] as const).map((scanner) => [name, scanner, text, options, reason] as const)))(
      '%s (%s scanner)',
      async (_name, scanner, text, options, reason) => {
        expectOutsideMalformed(await count(text, { ...options, scanner }, 97), reason);
      },
    );

    it('Parquet, read column by column and as lines', async () => {
      const bytes = await parquetFromJsonLines(jsonLog(mixed));
      const file: RandomAccessFile = { byteLength: bytes.length, slice: async (start, end) => new Uint8Array(bytes.subarray(start, end ?? bytes.length)).buffer };

      expectOutsideMalformed(await countLogContent(parquetContent(file, 'k'), base, 'k'), /^date "(\d{4}-\d{2}-\d{2})" is outside the days Tally supports, 2000-01-01\.\.2099-12-31$/);
    });

    it.each([
      ['a DATE column', 'DATE', (at: number) => `DATE '${dayOf(at)}'`, '"date"', /^date "(\d{4}-\d{2}-\d{2})" is outside the days Tally supports, 2000-01-01\.\.2099-12-31$/],
      ['a TIMESTAMP column', 'TIMESTAMP', (at: number) => `TIMESTAMP '${new Date(at).toISOString().slice(0, 19).replace('T', ' ')}'`, '"timestamp"', /^timestamp "[\d.]+" is on (\d{4}-\d{2}-\d{2}), outside the days Tally supports, 2000-01-01\.\.2099-12-31$/],
    ] as const)('Parquet with %s (typed: read as numbers)', async (_what, _type, literal, column, reason) => {
      const rows = mixed.map((r) => `(${literal(r.at)}, '${new Date(r.at).toISOString().slice(11, 19)}', ${r.bytes}::BIGINT, '${r.host}')`).join(', ');
      const time = column === '"date"' ? ', "time"' : '';
      const bytes = await parquetFromSelect(`SELECT ${column}${time}, sc_bytes, x_host_header FROM (VALUES ${rows}) AS t(${column}, "time", sc_bytes, x_host_header)`);
      const file: RandomAccessFile = { byteLength: bytes.length, slice: async (start, end) => new Uint8Array(bytes.subarray(start, end ?? bytes.length)).buffer };

      expectOutsideMalformed(await countLogContent(parquetContent(file, 'k'), base, 'k'), reason);
    });
  });

  it('refuses a headerless log when no field list is configured, saying how to give one', async () => {
    const error = await count(realtimeLog(requests.slice(0, 4))).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(PoisonObjectError);
    expect((error as Error).message).toMatch(/4 data lines and no #Fields header .* needs its field list: TALLY_LOG_FIELDS/);
  });

  it('counts plain lines with too few fields as malformed', async () => {
    const result = await count(`${plainLog(requests.slice(0, 2))}1763683200|5\n`, { format: { headerless: parseLogFields(PLAIN_FIELDS), delimiter: '|' } });

    expect(result.lines).toMatchObject({ read: 3, counted: 2, malformed: 1 });
    expect(result.malformedSamples[0]?.reason).toMatch(/^2 fields where .* names 6$/);
  });

  it('keeps a tab inside a value of a |-delimited line within its field', async () => {
    const rules = [{ name: 'tabbed', path: '/a\tb' }];
    const result = await count('1763683200|5|acme.x.com|/a\tb|GET|200\n', { metricRules: rules, format: { headerless: parseLogFields(PLAIN_FIELDS), delimiter: '|' } });

    expect(result.lines).toMatchObject({ read: 1, counted: 1 });
    expect(result.tally.usage()[0]?.metrics).toEqual({ requests: 1, bytes: 5, tabbed: 1 });
  });

  it('counts an over-long JSON line as malformed without holding it', async () => {
    const long = `{"date":"2026-11-21","time":"00:00:00","sc-bytes":"1","x-host-header":"${'a'.repeat(200_000)}.x.com"}\n`;
    const result = await count(jsonLog(requests.slice(0, 1)) + long + jsonLog(requests.slice(1, 2)), {}, 1000);

    expect(result.lines).toMatchObject({ read: 3, counted: 2, malformed: 1 });
    expect(result.malformedSamples[0]?.reason).toMatch(/^line of \d+ bytes is longer than 65536$/);
  });
});

describe('configuration of headerless logs, checked at cold start', () => {
  const env = { TALLY_TABLE: 'usage' };

  it('refuses a field list that lacks the resolver\'s field, naming it', () => {
    expect(() => readConfig({ ...env, TALLY_LOG_FIELDS: 'date,time,sc-bytes,cs-uri-stem' })).toThrow(
      new ConfigError('TALLY_LOG_FIELDS lacks x-host-header or cs(Host) (the host-label resolver): add them to the log\'s fields (see docs/log-formats.md)'),
    );
    expect(() => readConfig({ ...env, TALLY_RESOLVER: 'path:^/t/(?<account>[^/]+)/', TALLY_LOG_FIELDS: 'date,sc-bytes,cs-host' })).toThrow(/lacks cs-uri-stem \(the path resolver\)/);
    expect(() => readConfig({ ...env, TALLY_METRICS: '[{"name":"posts","method":"POST"}]', TALLY_LOG_FIELDS: 'date,cs-host' })).toThrow(
      /lacks sc-bytes \(the bytes metric\); cs-method \(metric rule "posts"\)/,
    );
  });

  it('refuses a list without a day, a field named twice, and real-time fields out of CloudFront\'s order', () => {
    expect(() => parseLogFields('time,sc-bytes,cs-host')).toThrow(/need a day: date, timestamp\(ms\) or timestamp/);
    expect(() => parseLogFields('date,cs(Host),cs-host')).toThrow(/field "cs-host" is named twice/);
    expect(() => parseLogFields('realtime:timestamp,cs-host,sc-bytes')).toThrow(/"sc-bytes" cannot follow "cs-host"/);
  });

  it('refuses a sampling rate for anything but real-time logs, and a bad delimiter', () => {
    const resolver = parseResolverSpec('host-label');
    expect(() => readLogFormat({ samplingRate: '10' }, resolver, [])).toThrow(/TALLY_SAMPLING_RATE is the sampling rate of real-time logs/);
    expect(() => readLogFormat({ fields: REALTIME_FIELDS_SETTING, samplingRate: '0' }, resolver, [])).toThrow(/from 1 to 100/);
    expect(() => readLogFormat({ delimiter: '||||||' }, resolver, [])).toThrow(/1 to 5 characters/);
    expect(readLogFormat({ delimiter: '\\t' }, resolver, [])).toEqual({ delimiter: '\t' });
    // tally count names its own flags.
    const flags = { fields: '--fields', delimiter: '--delimiter', samplingRate: '--sampling-rate' };
    expect(() => readLogFormat({ samplingRate: '101', fields: REALTIME_FIELDS_SETTING }, resolver, [], flags)).toThrow(/^--sampling-rate must be an integer from 1 to 100/);
    expect(() => readLogFormat({ fields: 'date' }, resolver, [], flags)).toThrow(/^--fields lacks/);
  });
});

describe('sampled real-time logs', () => {
  it('are counted as estimates under their own metrics, scaled by the sampling rate', async () => {
    const exact = await count(realtimeLog(requests), { format: { headerless: parseLogFields(REALTIME_FIELDS_SETTING) } });
    const sampled = await count(realtimeLog(requests), { format: { headerless: parseLogFields(REALTIME_FIELDS_SETTING), samplingRate: 10 } });

    expect(sampled.samplingRate).toBe(10);
    expect(sampled.lines).toEqual(exact.lines);
    for (const row of sampled.tally.usage()) {
      const source = exact.tally.usage().find((r) => r.account === row.account && r.day === row.day)!;
      expect(row.metrics).toEqual({ estimated_requests: source.metrics.requests! * 10, estimated_bytes: source.metrics.bytes! * 10 });
    }
  });

  it('leave standard logs exact under the same configuration', async () => {
    const result = await count(jsonLog(requests), { format: { headerless: parseLogFields(REALTIME_FIELDS_SETTING), samplingRate: 10 } });

    expect(result.samplingRate).toBeUndefined();
    expect(usageOf(result)).toEqual(expected);
  });
});
