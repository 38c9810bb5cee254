/**
 * A corpus of awkward CloudFront logs for `tally count`, in the style of the bad-input
 * corpus: every way a line can be odd at the byte level (encodings, line ends, lengths
 * near the limit, field counts, headers changing mid-file) and seeded random mixes of
 * them. Its answers under several resolvers and metric rules were recorded from the
 * string-based counter before the byte parser replaced it (test/support/golden/count-corpus.json,
 * written by `npx tsx test/support/record-count-golden.ts`), and the byte parser must give
 * them byte for byte.
 */
import { gzipSync } from 'node:zlib';
import { CLOUDFRONT_FIELDS, seededRandom } from '../../src/local/demo/log-generator';

export interface CorpusFile {
  readonly name: string;
  readonly bytes: Buffer;
}

const F33 = [...CLOUDFRONT_FIELDS];
const HEADER33 = `#Version: 1.0\n#Fields: ${F33.join(' ')}\n`;
const SHORT = ['date', 'time', 'sc-bytes', 'x-host-header', 'cs-uri-stem', 'cs-method', 'sc-status'];
const HEADER_SHORT = `#Fields: ${SHORT.join(' ')}\n`;

/** A 33-field line with the given values (others realistic). */
function line33(values: Partial<Record<(typeof F33)[number], string>>): string {
  const base: Record<string, string> = {
    date: '2026-11-21', time: '10:00:00', 'x-edge-location': 'IAD89-C1', 'sc-bytes': '1000', 'c-ip': '198.51.100.7',
    'cs-method': 'GET', 'cs(Host)': 'd111111abcdef8.cloudfront.net', 'cs-uri-stem': '/v1/items', 'sc-status': '200',
    'cs(Referer)': '-', 'cs(User-Agent)': 'curl/8.5.0', 'cs-uri-query': '-', 'cs(Cookie)': '-', 'x-edge-result-type': 'Miss',
    'x-edge-request-id': 'abcRq==', 'x-host-header': 'acme.api.example.com', 'cs-protocol': 'https', 'cs-bytes': '300',
    'time-taken': '0.010', 'x-forwarded-for': '-', 'ssl-protocol': 'TLSv1.3', 'ssl-cipher': 'TLS_AES_128_GCM_SHA256',
    'x-edge-response-result-type': 'Miss', 'cs-protocol-version': 'HTTP/2.0', 'fle-status': '-', 'fle-encrypted-fields': '-',
    'c-port': '1234', 'time-to-first-byte': '0.005', 'x-edge-detailed-result-type': 'Miss', 'sc-content-type': 'application/json',
    'sc-content-len': '900', 'sc-range-start': '-', 'sc-range-end': '-',
  };
  return F33.map((name) => values[name] ?? base[name]).join('\t');
}

function short(values: Partial<Record<string, string>>): string {
  const base: Record<string, string> = {
    date: '2026-11-21', time: '10:00:00', 'sc-bytes': '5', 'x-host-header': 'acme.x.com', 'cs-uri-stem': '/a', 'cs-method': 'GET', 'sc-status': '200',
  };
  return SHORT.map((name) => values[name] ?? base[name]).join('\t');
}

const text = (value: string) => Buffer.from(value, 'utf8');
const gz = (value: string | Buffer) => gzipSync(typeof value === 'string' ? text(value) : value);

const HOSTS = [
  'acme.api.example.com', 'Globex.example.com', 'ACME.x.com', 'initech', '10.0.0.1', '10.0.0.1:8080', '[::1]', '-', '',
  'bad#one.x.com', 'caf\u00e9.x.com', '\u212Acme.x.com', 'a..b.x.com', '.x.com', 'x'.repeat(64), 'x'.repeat(65), '0day.x.com',
  'under_score.x.com', '-lead.x.com', 'umbrella.x.com\r',
];
const STEMS = [
  '/api/authorization/check', '/api/%61uthorization/x', '/api/authorization/%0A', '/t/acme/x', '/t/acme%2Dco/x', '/t/%E0%A4%A/x',
  '/t/caf\u00e9/x', '/v1/items', '-', '', '/t/\u212Acme/x', '/api/authorization/\u00e9',
];
const DATES = ['2026-11-21', '2026-11-20', '2024-02-29', '2023-02-29', '2026-13-01', '2026-1-01', '', '2026-11-21x', '２０２６-11-21'];
const TIMES = ['10:00:00', '23:59:60', '24:00:00', '1:00:00', '', '12:00', '1\u00e9:00:0'];
const BYTES = ['0', '1234', '-', '', '12a', '-5', '999999999999999', '1234567890123456', '\u0661\u0662'];
const METHODS = ['GET', 'POST', 'post', 'P\u00d6ST', ''];
const STATUSES = ['200', '503', '5000', '5\u00e9', '', '429'];

/** A seeded random mix of good and odd lines under changing headers, CRLF or not, maybe overlong. */
function randomMix(seed: number, lines: number): string {
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
  const out: string[] = [];
  let wide = random() < 0.5;
  out.push(wide ? HEADER33.trimEnd() : HEADER_SHORT.trimEnd());
  for (let i = 0; i < lines; i++) {
    const roll = random();
    if (roll < 0.03) {
      wide = !wide;
      out.push(wide ? `#Fields:\t${F33.join(' ')}` : HEADER_SHORT.trimEnd());
      continue;
    }
    if (roll < 0.05) { out.push(pick(['', '\r', '#Version: 1.0', '# a comment', '#Fields: when bytes host'])); continue; }
    const values: Record<string, string> = {
      date: random() < 0.85 ? '2026-11-21' : pick(DATES),
      time: random() < 0.9 ? '10:00:00' : pick(TIMES),
      'sc-bytes': random() < 0.85 ? String(Math.floor(random() * 100_000)) : pick(BYTES),
      'x-host-header': pick(HOSTS),
      'cs(Host)': random() < 0.5 ? 'd111111abcdef8.cloudfront.net' : pick(HOSTS),
      'cs-uri-stem': pick(STEMS),
      'cs-method': pick(METHODS),
      'sc-status': pick(STATUSES),
    };
    let row = wide ? line33(values) : short(values);
    const odd = random();
    if (odd < 0.05) row = row.split('\t').slice(0, Math.floor(random() * 8) + 1).join('\t');
    else if (odd < 0.08) row = `${row}\textra\tmore`;
    else if (odd < 0.1) row = `${row}\r`;
    out.push(row);
  }
  return out.join(random() < 0.3 ? '\r\n' : '\n') + (random() < 0.5 ? '\n' : '');
}

/** Lines just under, at and over the 65,536 limit, counted in UTF-16 units as before. */
function nearTheLimit(): string {
  const prefix = short({}).replace(/\/a$/, '/');
  const filler = (units: number, char: string) => char.repeat(Math.max(0, units));
  const rows = [
    prefix + filler(65_536 - prefix.length, 'a'), // exactly the limit: kept
    prefix + filler(65_537 - prefix.length, 'a'), // one over
    prefix + filler(65_536 - prefix.length, '\u00e9'), // 65,536 units but ~131 KB: kept
    prefix + filler(65_537 - prefix.length, '\u00e9'),
    prefix + filler(65_536 - prefix.length, '\u20ac'), // 3-byte characters: ~196 KB, kept
    prefix + filler(65_534 - prefix.length, '\u20ac') + '\u{1F680}', // a 4-byte character is 2 units: 65,536, kept
    prefix + filler(65_535 - prefix.length, '\u20ac') + '\u{1F680}', // 65,537
    `${prefix + filler(65_535 - prefix.length, 'a')}\r`, // the CR counts: 65,536
    `${prefix + filler(65_536 - prefix.length, 'a')}\r`, // 65,537
    short({ 'sc-bytes': '7' }),
  ];
  return `${HEADER_SHORT}${rows.join('\n')}\n`;
}

/** The corpus, built the same way on every run. */
export function countCorpus(): CorpusFile[] {
  const files: CorpusFile[] = [
    { name: 'plain-33.log', bytes: text(`${HEADER33}${line33({})}\n${line33({ 'x-host-header': 'globex.x.com', 'sc-bytes': '7' })}\n`) },
    { name: 'gzip-33.log.gz', bytes: gz(`${HEADER33}${line33({})}\n${line33({ 'x-host-header': '-', 'cs(Host)': 'initech.x.com' })}\n`) },
    { name: 'crlf.log', bytes: text(`${HEADER33}${line33({})}\n${line33({ date: '2026-11-22' })}\n`.replace(/\n/g, '\r\n')) },
    { name: 'bom.log', bytes: text(`\uFEFF${HEADER_SHORT}${short({})}\n`) },
    { name: 'bom-crlf.log.gz', bytes: gz(`\uFEFF${HEADER_SHORT}${short({})}\r\n${short({ 'x-host-header': 'hooli.x.com' })}`) },
    { name: 'bom-then-data.log', bytes: text(`\uFEFF${short({})}\n`) },
    { name: 'double-bom.log', bytes: text(`\uFEFF\uFEFF${HEADER_SHORT}${short({})}\n`) },
    { name: 'no-final-newline.log', bytes: text(`${HEADER_SHORT}${short({})}\n${short({ 'sc-bytes': '9' })}`) },
    { name: 'no-final-newline-cr.log', bytes: text(`${HEADER_SHORT}${short({})}\n${short({ 'sc-bytes': '9', 'sc-status': '500' })}\r`) },
    { name: 'blank-lines.log', bytes: text(`\n\r\n${HEADER_SHORT}\n\n${short({})}\n\r\n\n`) },
    {
      name: 'invalid-utf8.log.gz',
      bytes: gzipSync(Buffer.concat([
        text(`${HEADER_SHORT}${short({})}\n2026-11-21\t10:00:00\t4\t`), Buffer.from([0xc3, 0x28, 0xff]), text('.x.com\t/a\tGET\t200\n'),
        text('2026-11-21\t10:00:00\t4\tacme'), Buffer.from([0xe2, 0x82]), text('.x.com\t/a\tGET\t200\n'),
        text('2026-11-21\t10:00:00\t4\tacme.x.com\t/t/'), Buffer.from([0xed, 0xa0, 0x80]), text('\tGET\t5'), Buffer.from([0xf0, 0x9f]), text('\n'),
        Buffer.from([0xf0, 0x9f, 0x98]), text('\t10:00:00\t4\tacme.x.com\t/a\tGET\t200\n'),
        text('2026-11-21\t10:00:00\t4\tacme.x.com\t/a\tGET\t200'), Buffer.from([0xe2, 0x82]),
      ])),
    },
    { name: 'latin1.log', bytes: Buffer.from(`${HEADER_SHORT}${short({ 'x-host-header': 'caf\u00e9.x.com' })}\n${short({ 'cs-uri-stem': '/api/authorization/\u00e9' })}\n`, 'latin1') },
    { name: 'nul-bytes.log', bytes: Buffer.concat([text(`${HEADER_SHORT}`), Buffer.from([0, 0, 0]), text(`\n${short({})}\n`), text('2026-11-21\t10:00:00\t5\tacme\u0000.x.com\t/a\tGET\t200\n')]) },
    { name: 'concatenated-members.log.gz', bytes: Buffer.concat([gz(`${HEADER33}${line33({})}\n`), gz(`${line33({ 'sc-bytes': '6' })}\n`), gz('')]) },
    { name: 'header-change.log', bytes: text(`${HEADER33}${line33({})}\n${HEADER_SHORT}${short({})}\n#Fields:\t${SHORT.slice(1).join(' ')}\n${short({})}\n#Fields: ${SHORT.join('  ')} \n${short({ 'sc-bytes': '11' })}\n`) },
    { name: 'unknown-header-mid.log', bytes: text(`${HEADER_SHORT}${short({})}\n#Fields: when bytes host\n${short({})}\n${HEADER_SHORT}${short({})}\n`) },
    { name: 'empty-fields-header.log', bytes: text(`#Fields:\n${short({})}\n#Fields: date\n2026-11-21\n2026-11-21\textra\n`) },
    { name: 'duplicate-columns.log', bytes: text(`#Fields: date sc-bytes date x-host-header sc-bytes\n2026-11-21\t5\tjunk\tacme.x.com\t7\n2026-11-21\t5\n`) },
    { name: 'field-counts.log', bytes: text(`${HEADER33}${line33({}).split('\t').slice(0, 32).join('\t')}\n${line33({})}\t\n${line33({}).split('\t').slice(0, 16).join('\t')}\n\t\t\n${line33({})}\n`) },
    { name: 'odd-values.log', bytes: text(`${HEADER_SHORT}${[...DATES.map((date) => short({ date })), ...TIMES.map((time) => short({ time })), ...BYTES.map((b) => short({ 'sc-bytes': b }))].join('\n')}\n`) },
    { name: 'hosts.log', bytes: text(`${HEADER33}${HOSTS.flatMap((host) => [line33({ 'x-host-header': host }), line33({ 'x-host-header': '-', 'cs(Host)': host })]).join('\n')}\n`) },
    { name: 'rules.log', bytes: text(`${HEADER_SHORT}${STEMS.flatMap((stem) => METHODS.map((m, i) => short({ 'cs-uri-stem': stem, 'cs-method': m, 'sc-status': STATUSES[i % STATUSES.length]! }))).join('\n')}\n`) },
    { name: 'near-the-limit.log.gz', bytes: gz(nearTheLimit()) },
    { name: 'megabyte-line.log', bytes: text(`${HEADER_SHORT}${short({})}\n${short({ 'cs-uri-stem': `/${'x'.repeat(1024 * 1024)}` })}\n${short({ 'sc-bytes': '11' })}\n`) },
    { name: 'megabyte-line-at-end.log', bytes: text(`${HEADER_SHORT}${short({})}\n${short({ 'cs-uri-stem': `/${'\u00e9'.repeat(600_000)}` })}`) },
    { name: 'overlong-header.log', bytes: text(`#Fields: ${'date '.repeat(20_000)}\n2026-11-21\n${HEADER_SHORT}${short({})}\n`) },
    { name: 'header-only.log', bytes: text(HEADER33) },
    { name: 'empty.log', bytes: Buffer.alloc(0) },
    { name: 'empty.log.gz', bytes: gz('') },
    { name: 'many-days.log', bytes: text(`${HEADER_SHORT}${Array.from({ length: 400 }, (_, i) => short({ date: `2026-${String((i % 12) + 1).padStart(2, '0')}-${String((i % 28) + 1).padStart(2, '0')}`, 'x-host-header': `t${i % 7}.x.com`, 'sc-bytes': String(i) })).join('\n')}\n`) },
  ];
  for (let seed = 1; seed <= 12; seed++) {
    const mix = randomMix(seed, 400);
    files.push({ name: `mix-${seed}.log${seed % 2 === 0 ? '.gz' : ''}`, bytes: seed % 2 === 0 ? gz(mix) : text(mix) });
  }
  return files;
}

/** The configurations every corpus file is counted under (`tally count` flags). */
export const CORPUS_CONFIGS: readonly { readonly name: string; readonly args: readonly string[] }[] = [
  { name: 'host-label', args: [] },
  {
    name: 'host-label+rules',
    args: [
      '--metrics',
      JSON.stringify([
        { name: 'authorization_requests', path: '/api/authorization/*' },
        { name: 'posts', method: 'POST' },
        { name: 'unicode_posts', method: 'P\u00d6ST' },
        { name: 'server_error_bytes', status: '5xx', value: 'bytes' },
        { name: 'throttled', status: '429' },
        { name: 'accented', path: '/api/*/\u00e9' },
        { name: 'anything', path: '*' },
        { name: 'two_parts', path: '/api/*/c*k' },
      ]),
    ],
  },
  { name: 'path', args: ['--resolver', 'path:^/t/(?<account>[^/]+)/'] },
  { name: 'host-map', args: ['--resolver', `host-map:${JSON.stringify({ 'acme.api.example.com': 'acme', 'globex.example.com': 'globex', 'caf\u00e9.x.com': 'cafe', 'kcme.x.com': 'kelvin', '10.0.0.1': 'ip' })}`] },
  { name: 'key', args: ['--resolver', 'key:(?<account>[a-z]+)-[^/]*$'] },
];
