import { Readable } from 'node:stream';
import fc from 'fast-check';
import { parseResolverSpec, type ResolverSpec } from '../../src/domain/logs/account-resolver';
import { PoisonObjectError } from '../../src/domain/errors';
import { countLog, type LogCount } from '../../src/domain/logs/log-counter';
import { validateMetricRules } from '../../src/domain/logs/metric-rules';
import * as reference from '../support/reference-log-counter';

/**
 * The byte parser against the string-based counter it replaced (frozen in
 * test/support/reference-log-counter.ts): random mixes of lines, at the byte level
 * (invalid UTF-8, CR, BOM, lines near the length limit, headers changing mid-file),
 * cut into random chunks, under every resolver and with metric rules. Everything the
 * counter reports must be the same: line counts, usage per account-day and UTC hour, and the
 * malformed samples with their reasons and line numbers.
 */
const WIDE = ['date', 'time', 'x-edge-location', 'sc-bytes', 'c-ip', 'cs-method', 'cs(Host)', 'cs-uri-stem', 'sc-status', 'cs(Referer)', 'cs(User-Agent)', 'x-host-header', 'cs-protocol', 'pad1', 'pad2'];
const LAYOUTS = [
  WIDE,
  ['date', 'time', 'sc-bytes', 'x-host-header', 'cs-uri-stem', 'cs-method', 'sc-status'],
  ['time', 'date', 'cs-uri-stem', 'x-host-header', 'sc-bytes', 'extra'],
  ['date', 'x-host-header', 'sc-bytes'],
  ['sc-bytes', 'cs(Host)', 'date'],
  ['date'],
  ['x-host-header', 'date', 'time', 'cs(Host)'],
];

const enc = (text: string) => Buffer.from(text, 'utf8');
const VALUES: Record<string, Buffer[]> = {
  // Days inside the supported days (2000-01-01..2099-12-31), at their edges, and real days outside them.
  date: ['2026-11-21', '2026-11-21', '2026-11-22', '2024-02-29', '2026-02-30', '', '2026-1-01', '2026-11-21\r', '\u0662026-11-21', '2000-01-01', '2099-12-31', '1999-12-31', '2100-01-01', '9999-12-31', '1970-01-01', '0000-01-01'].map(enc),
  // Good times in several hours (each line's usage goes to its UTC hour too), and bad ones.
  time: ['12:00:00', '12:00:00', '23:59:60', '00:00:00', '05:30:00', '17:45:59', '09:59:59', '24:00:00', '1:00:00', '', '12:00', '12:00:00\r'].map(enc),
  'sc-bytes': ['0', '1234', '77', '-', '', '12a', '-5', '999999999999999', '1234567890123456', '5\r', '12345678', '00000042', '1234567:', '/', '123456789'].map(enc),
  'cs-method': ['GET', 'POST', 'post', 'P\u00d6ST', ''].map(enc),
  'cs(Host)': ['d1.cloudfront.net', 'ACME.example.com', '-', '', 'globex', '10.1.2.3'].map(enc),
  'x-host-header': [
    ...['acme.api.example.com', 'acme.api.example.com', 'Globex.example.com', 'initech', '10.0.0.1', '10.0.0.1:80', '[::1]', '-', '', 'bad#host.x.com', 'caf\u00e9.x.com', '\u212Acme.x.com', '.x.com', 'x'.repeat(70), 'hooli.x.com\r', '-\r'].map(enc),
    // IP literals, and digit-first hosts that are not (their first label is an account).
    ...['255.255.255.255:65535', '[2001:db8::1]:443', '1234.5.6.7', '1.2.3', '1.2.3.4.5', '1.2.3.4:', '7.8.9.10:8a', '9tenant.x.com', '192.168.0.1', '172.16.0.9:8080'].map(enc),
    // CloudFront default domains, of no account whatever their case or label length; hosts that only look like one.
    ...['d111111abcdef8.cloudfront.net', 'D2ABC.CloudFront.NET', 'a-label-longer-than-sixteen-bytes.cloudfront.net', '7abc.cloudfront.net', 'acme.cloudfront.net.example.com', 'cloudfront.net', 'acme.xcloudfront.net', 'acme.cloudfront.net\r'].map(enc),
    Buffer.from([0x64, 0x31, 0x2e, 0x63, 0x6c, 0x6f, 0x75, 0x64, 0x66, 0x72, 0x6f, 0x6e, 0x74, 0x0e, 0x6e, 0x65, 0x74]),
    Buffer.from([0x61, 0xc3, 0x28, 0x2e, 0x78]),
    Buffer.from([0x61, 0xe2, 0x82]),
    Buffer.from([0xff, 0x2e, 0x78]),
  ],
  'cs-uri-stem': [
    ...['/api/authorization/check', '/api/%61uthorization/x', '/api/authorization/%0A', '/t/acme/x', '/t/acme%2Dco/x', '/t/%E0%A4%A/x', '/t/caf\u00e9/x', '/v1/items', '-', '', '/a\rb', '/api/x/\u00e9'].map(enc),
    Buffer.from([0x2f, 0x74, 0x2f, 0xed, 0xa0, 0x80, 0x2f]),
  ],
  'sc-status': ['200', '503', '5000', '5\u00e9', '', '429', '5\u20ac'].map(enc),
};
const OTHER = ['x', '', 'a b', '-', '\u00e9'].map(enc);

type Piece =
  | { kind: 'header'; layout: number; tab: boolean }
  | { kind: 'line'; fields: number[]; extra: number; cr: boolean }
  | { kind: 'raw'; bytes: number[] }
  | { kind: 'blank'; cr: boolean }
  | { kind: 'comment'; text: number }
  | { kind: 'long'; units: number; char: number };

const piece: fc.Arbitrary<Piece> = fc.oneof(
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('header' as const), layout: fc.nat(LAYOUTS.length - 1), tab: fc.boolean() }) },
  { weight: 12, arbitrary: fc.record({ kind: fc.constant('line' as const), fields: fc.array(fc.nat(), { minLength: 16, maxLength: 16 }), extra: fc.integer({ min: -3, max: 2 }), cr: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('raw' as const), bytes: fc.array(fc.oneof(fc.nat(255), fc.constantFrom(9, 10, 13, 35, 0xef, 0xbb, 0xbf)), { maxLength: 30 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('blank' as const), cr: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('comment' as const), text: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('long' as const), units: fc.integer({ min: 90, max: 110 }), char: fc.nat(3) }) },
);

const COMMENTS = ['#Version: 1.0', '# note', '#Fields: when bytes host', '#Fields:'];
const LONG_CHARS = ['a', '\u00e9', '\u20ac', '\u{1F680}'];
/** A small limit, so that lines near it are cheap to make. */
const MAX_LINE = 100;

/** Random `YYYY-MM-DD` texts of any year 0000..9999: real days (or not, e.g. 2023-02-31) inside and outside the supported days. */
const randomDate = fc
  .record({ year: fc.oneof(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 1995, max: 2105 })), month: fc.integer({ min: 1, max: 12 }), day: fc.integer({ min: 1, max: 31 }) })
  .map(({ year, month, day }) => enc(`${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`));

function render(pieces: Piece[], bom: boolean, randomDates: readonly Buffer[] = []): Buffer {
  const pools: Record<string, Buffer[]> = { ...VALUES, date: [...VALUES.date!, ...randomDates] };
  let layout = LAYOUTS[0]!;
  const out: Buffer[] = bom ? [Buffer.from([0xef, 0xbb, 0xbf])] : [];
  for (const p of pieces) {
    switch (p.kind) {
      case 'header':
        layout = LAYOUTS[p.layout]!;
        out.push(enc(`#Fields:${p.tab ? '\t' : ' '}${layout.join(' ')}\n`));
        break;
      case 'line': {
        const count = Math.max(1, layout.length + p.extra);
        const fields = Array.from({ length: count }, (_, i) => {
          const pool = pools[layout[i] ?? ''] ?? OTHER;
          return pool[p.fields[i % p.fields.length]! % pool.length]!;
        });
        const parts: Buffer[] = [];
        fields.forEach((field, i) => parts.push(i === 0 ? field : Buffer.concat([Buffer.from([9]), field])));
        out.push(Buffer.concat([...parts, enc(p.cr ? '\r\n' : '\n')]));
        break;
      }
      case 'raw':
        out.push(Buffer.from(p.bytes));
        break;
      case 'blank':
        out.push(enc(p.cr ? '\r\n' : '\n'));
        break;
      case 'comment':
        out.push(enc(`${COMMENTS[p.text]!}\n`));
        break;
      case 'long': {
        const char = LONG_CHARS[p.char]!;
        out.push(enc(`2026-11-21\t12:00:00\t${char.repeat(Math.ceil(p.units / char.length))}\n`));
        break;
      }
    }
  }
  return Buffer.concat(out);
}

function chunks(bytes: Buffer, sizes: number[]): Buffer[] {
  const parts: Buffer[] = [];
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const size = sizes[i % sizes.length]!;
    parts.push(bytes.subarray(at, at + size));
    at += size;
  }
  return parts;
}

const RULES = validateMetricRules([
  { name: 'authorization_requests', path: '/api/authorization/*' },
  { name: 'posts', method: 'POST' },
  { name: 'unicode_posts', method: 'P\u00d6ST' },
  { name: 'server_error_bytes', status: '5xx', value: 'bytes' },
  { name: 'throttled', status: '429' },
  { name: 'accented', path: '/api/*/\u00e9' },
  { name: 'any_stem', path: '*' },
]);
const RESOLVERS: ResolverSpec[] = [
  parseResolverSpec('host-label'),
  parseResolverSpec(`host-map:${JSON.stringify({ 'acme.api.example.com': 'acme', 'globex.example.com': 'globex', 'caf\u00e9.x.com': 'cafe', 'kcme.x.com': 'kelvin', '10.0.0.1': 'ip' })}`),
  parseResolverSpec('path:^/t/(?<account>[^/]+)/'),
  parseResolverSpec('key:logs/{account}/*'),
];

type Outcome = { lines: LogCount['lines']; usage: unknown; samples: LogCount['malformedSamples'] } | { poison: string };

async function outcome(count: () => Promise<LogCount>): Promise<Outcome> {
  try {
    const result = await count();
    return { lines: { ...result.lines }, usage: result.tally.usage(), samples: result.malformedSamples };
  } catch (error) {
    if (!(error instanceof PoisonObjectError)) throw error;
    // The one wording that changed on purpose: "1 data line", not "1 data lines".
    return { poison: error.reason.replace(/\b1 data lines\b/, '1 data line') };
  }
}

describe('the byte parser, held to the string-based counter it replaced', () => {
  it.each(['wasm', 'js'] as const)('counts every random mix of lines as before, however it is chunked (%s scanner)', async (scanner) => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(piece, { maxLength: 50 }),
        fc.boolean(),
        fc.array(fc.integer({ min: 1, max: 200 }), { minLength: 1, maxLength: 4 }),
        fc.nat(RESOLVERS.length - 1),
        fc.boolean(),
        fc.array(randomDate, { maxLength: 6 }),
        async (pieces, bom, sizes, resolverAt, withRules, randomDates) => {
          const text = render([{ kind: 'header', layout: 0, tab: false }, ...pieces], bom, randomDates);
          const options = { resolver: RESOLVERS[resolverAt]!, metricRules: withRules ? RULES : [], objectKey: 'logs/initech/E2.2026-11-21-00.x.gz', maxLineBytes: MAX_LINE };

          const expected = await outcome(() => reference.countLogStream(Readable.from([text]), options, 'k'));
          const actual = await outcome(() => countLog(Readable.from(chunks(text, sizes)), { ...options, scanner }, 'k'));

          expect(actual).toEqual(expected);
        },
      ),
      { numRuns: 400, seed: 20261123 },
    );
  });

  it('counts lines of any length around the limit as before (the limit is in UTF-16 units, the CR included)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ units: fc.integer({ min: 1, max: 400 }), char: fc.nat(3), cr: fc.boolean() }), { minLength: 1, maxLength: 8 }),
        fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 3 }),
        async (lines, sizes) => {
          const body = lines.map(({ units, char, cr }) => `2026-11-21\t${LONG_CHARS[char]!.repeat(units)}${cr ? '\r' : ''}`).join('\n');
          const text = enc(`#Fields: date x-host-header\n${body}`);
          const options = { resolver: RESOLVERS[0]!, metricRules: [], objectKey: 'k', maxLineBytes: 256 };

          const expected = await outcome(() => reference.countLogStream(Readable.from([text]), options, 'k'));
          const actual = await outcome(() => countLog(Readable.from(chunks(text, sizes)), options, 'k'));

          expect(actual).toEqual(expected);
        },
      ),
      { numRuns: 200, seed: 7 },
    );
  });
});
