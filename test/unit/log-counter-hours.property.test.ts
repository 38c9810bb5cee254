import fc from 'fast-check';
import { logText } from '../../src/adapters/logs/log-text';
import { hoursCoverDay } from '../../src/domain/hours';
import { parseLogFields } from '../../src/domain/logs/log-fields';
import { countLogContent, type FormatOptions } from '../../src/domain/logs/log-formats';
import { validateMetricRules } from '../../src/domain/logs/metric-rules';
import { gzip, jsonLog, legacyLog, PLAIN_FIELDS, plainLog, REALTIME_FIELDS_SETTING, realtimeLog, w3cLog, type Request } from '../support/log-formats';

/**
 * Usage by the hour (#35): every text format's counter puts each request in the UTC
 * hour of its time as well as in its day. For random requests at random times (over a
 * few days, in any order, so that a log spans hours and midnights, and over a year),
 * each account-day's hours sum exactly to the day (`hoursCoverDay`) and equal a
 * brute-force recount of the requests grouped by UTC hour, with the SIMD scanner (that
 * sums lines of known hosts itself, and reads CloudFront's JSON in four parts) and the
 * JavaScript one, with metric rules (every line through JavaScript) and without, in
 * random chunks, gzipped or not; malformed records stay out of every hour.
 */
const FORMATS = {
  legacy: { render: legacyLog, bad: '2026-11-21\tnot-a-time\n', options: {} },
  w3c: { render: w3cLog, bad: '200\tacme.x.com\tsoon\t/a\t1\tGET\tE3\n', options: {} },
  json: { render: (r: readonly Request[]) => jsonLog(r, false), bad: '["not", "an", "object"]\n', options: {} },
  jsonAlternating: { render: jsonLog, bad: '{"date":"2026-11-21","time":"25:00:00"}\n', options: {} },
  plain: { render: (r: readonly Request[]) => plainLog(r, '|'), bad: '1763683200|7\n', options: { format: { headerless: parseLogFields(PLAIN_FIELDS), delimiter: '|' } } },
  realtime: { render: realtimeLog, bad: 'x.y\t200\t1\tGET\th\t/a\tacme.x.com\n', options: { format: { headerless: parseLogFields(REALTIME_FIELDS_SETTING) } } },
} as const;

const DAY = 86_400_000;
const START = Date.UTC(2026, 10, 20);
const request: fc.Arbitrary<Request> = fc.record({
  at: fc.oneof(fc.integer({ min: START, max: START + 3 * DAY - 1 }), fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2026, 11, 31) })),
  host: fc.constantFrom('acme.x.com', 'globex.x.com', 'initech.x.com', '10.0.0.1'),
  method: fc.constantFrom('GET', 'POST'),
  stem: fc.constantFrom('/a', '/b'),
  status: fc.constantFrom(200, 404),
  bytes: fc.nat({ max: 10_000_000 }),
  distribution: fc.constant('E3PROP'),
});
const RULES = validateMetricRules([{ name: 'posts', method: 'POST' }]);

type Hours = Record<number, Record<string, number>>;

/** The hours of each account-day, plainly: each request's UTC hour from its time, zeros left out. */
function recount(requests: readonly Request[], rules: boolean): Map<string, Hours> {
  const rows = new Map<string, Hours>();
  for (const r of requests) {
    const account = /^\d/.test(r.host) ? 'unattributed' : r.host.slice(0, r.host.indexOf('.'));
    const key = `${account} ${new Date(r.at).toISOString().slice(0, 10)}`;
    const hours = rows.get(key) ?? {};
    rows.set(key, hours);
    const hour = new Date(r.at).getUTCHours();
    const add = (metric: string, amount: number) => {
      if (amount !== 0) (hours[hour] ??= {})[metric] = (hours[hour]?.[metric] ?? 0) + amount;
    };
    add('requests', 1);
    add('bytes', r.bytes);
    if (rules) add('posts', r.method === 'POST' ? 1 : 0);
  }
  return rows;
}

async function* chunked(data: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < data.length; at += size) yield data.subarray(at, at + size);
}

describe('usage by the hour in every text format', () => {
  it.each(['wasm', 'js'] as const)('puts each request in its UTC hour, the hours covering each day exactly (%s scanner)', async (scanner) => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...(Object.keys(FORMATS) as (keyof typeof FORMATS)[])),
        // Many requests now and then: CloudFront's JSON is read in four parts from 4 KiB on.
        fc.oneof(fc.array(request, { minLength: 1, maxLength: 12 }), fc.array(request, { minLength: 40, maxLength: 160 })),
        fc.nat(3),
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 1, max: 5000 }),
        async (name, requests, bad, rules, zipped, size) => {
          const format = FORMATS[name];
          const header = format.render([]).match(/^(#.*\n)*/)?.[0] ?? '';
          const body = format.render(requests).replace(/^#.*\n/gm, '');
          // Bad records among the good ones: counted as malformed, in no hour.
          const lines = body.split(/(?<=\n)/);
          for (let i = 0; i < bad; i++) lines.splice((i * 7) % (lines.length + 1), 0, format.bad);
          const text = Buffer.from(header + lines.join(''));
          const options: FormatOptions = { resolver: { kind: 'host-label' }, metricRules: rules ? RULES : [], objectKey: 'k', scanner, ...format.options };

          const { lines: counts, tally } = await countLogContent({ kind: 'text', text: logText(chunked(zipped ? gzip(text.toString()) : text, size), 'k') }, options, 'k');
          const expected = recount(requests, rules);

          expect(counts.malformed).toBe(bad);
          expect(counts.read).toBe(counts.counted + counts.unattributed + counts.malformed);
          const usage = tally.usage();
          expect(usage.map((row) => `${row.account} ${row.day}`).sort()).toEqual([...expected.keys()].sort());
          for (const row of usage) {
            expect(hoursCoverDay(row.metrics, row.hours)).toBe(true);
            expect(row.hours).toEqual(expected.get(`${row.account} ${row.day}`));
          }
        },
      ),
      { numRuns: 150, seed: 35 },
    );
  });

  it('splits a log that spans midnight between the two days, hour by hour', async () => {
    const at = (day: number, hour: number, minute: number) => Date.UTC(2026, 10, day, hour, minute);
    const requests = [at(21, 23, 58), at(22, 0, 1), at(21, 23, 59), at(22, 0, 30), at(22, 1, 0)].map((time, i) => ({
      at: time, host: 'acme.x.com', method: 'GET', stem: '/a', status: 200, bytes: 10 + i, distribution: 'E3PROP',
    }));
    const options: FormatOptions = { resolver: { kind: 'host-label' }, metricRules: [], objectKey: 'k' };

    const { tally } = await countLogContent({ kind: 'text', text: logText(chunked(Buffer.from(legacyLog(requests)), 64), 'k') }, options, 'k');

    expect(tally.usage()).toEqual([
      { account: 'acme', day: '2026-11-21', metrics: { requests: 2, bytes: 22 }, hours: { 23: { requests: 2, bytes: 22 } } },
      { account: 'acme', day: '2026-11-22', metrics: { requests: 3, bytes: 38 }, hours: { 0: { requests: 2, bytes: 24 }, 1: { requests: 1, bytes: 14 } } },
    ]);
  });

  it('leaves the hours of a log with a date and no time field unknown (the day only)', async () => {
    const text = '#Fields: date x-host-header sc-bytes\n2026-11-21\tacme.x.com\t5\n2026-11-21\tacme.x.com\t7\n';
    const options: FormatOptions = { resolver: { kind: 'host-label' }, metricRules: [], objectKey: 'k' };

    const { tally } = await countLogContent({ kind: 'text', text: logText(chunked(Buffer.from(text), 1000), 'k') }, options, 'k');

    expect(tally.usage()).toEqual([{ account: 'acme', day: '2026-11-21', metrics: { requests: 2, bytes: 12 }, hours: {} }]);
  });
});
