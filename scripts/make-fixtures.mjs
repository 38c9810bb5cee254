// Writes the small CloudFront log fixtures in fixtures/logs. Each is hand-sized so
// the expected counts in the tests can be checked by reading the file.
// Run: node scripts/make-fixtures.mjs
import { writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const V33 = ['date', 'time', 'x-edge-location', 'sc-bytes', 'c-ip', 'cs-method', 'cs(Host)', 'cs-uri-stem', 'sc-status',
  'cs(Referer)', 'cs(User-Agent)', 'cs-uri-query', 'cs(Cookie)', 'x-edge-result-type', 'x-edge-request-id',
  'x-host-header', 'cs-protocol', 'cs-bytes', 'time-taken', 'x-forwarded-for', 'ssl-protocol', 'ssl-cipher',
  'x-edge-response-result-type', 'cs-protocol-version', 'fle-status', 'fle-encrypted-fields', 'c-port',
  'time-to-first-byte', 'x-edge-detailed-result-type', 'sc-content-type', 'sc-content-len', 'sc-range-start',
  'sc-range-end'];
const V24 = V33.slice(0, 24);
const V26 = V33.slice(0, 26);
const V35 = [...V33, 'c-country', 'asn'];

const DIST = 'd111111abcdef8.cloudfront.net';
const UA = 'Mozilla/5.0%20(Windows%20NT%2010.0;%20Win64;%20x64)%20AppleWebKit/537.36%20(KHTML,%20like%20Gecko)%20Chrome/78.0.3904.108%20Safari/537.36';

function line(fields, values) {
  const defaults = {
    'date': '2026-11-21', 'time': '00:00:00', 'x-edge-location': 'LAX1', 'sc-bytes': '100', 'c-ip': '192.0.2.100',
    'cs-method': 'GET', 'cs(Host)': DIST, 'cs-uri-stem': '/index.html', 'sc-status': '200', 'cs(Referer)': '-',
    'cs(User-Agent)': UA, 'cs-uri-query': '-', 'cs(Cookie)': '-', 'x-edge-result-type': 'Hit',
    'x-edge-request-id': 'SOX4xwn4XV6Q4rgb7XiVGOHms_BGlTAC4KyHmureZmBNrjGdRLiNIQ==', 'x-host-header': '-',
    'cs-protocol': 'https', 'cs-bytes': '23', 'time-taken': '0.001', 'x-forwarded-for': '-', 'ssl-protocol': 'TLSv1.2',
    'ssl-cipher': 'ECDHE-RSA-AES128-GCM-SHA256', 'x-edge-response-result-type': 'Hit', 'cs-protocol-version': 'HTTP/2.0',
    'fle-status': '-', 'fle-encrypted-fields': '-', 'c-port': '11040', 'time-to-first-byte': '0.001',
    'x-edge-detailed-result-type': 'Hit', 'sc-content-type': 'text/html', 'sc-content-len': '78', 'sc-range-start': '-',
    'sc-range-end': '-', 'c-country': 'US', 'asn': '16509',
  };
  return fields.map((name) => values[name] ?? defaults[name]).join('\t');
}

function header(fields) {
  return ['#Version: 1.0', `#Fields: ${fields.join(' ')}`];
}

// Seven data lines over two days; see test/unit/log-counter.test.ts for the expected counts.
function standardLines(fields) {
  return [
    line(fields, { 'date': '2026-11-20', 'time': '23:59:58', 'sc-bytes': '1000', 'x-host-header': 'acme.api.example.com', 'cs-uri-stem': '/v1/items' }),
    line(fields, { 'time': '00:00:01', 'sc-bytes': '500', 'x-host-header': 'ACME.api.example.com', 'cs-uri-stem': '/api/authorization/check' }),
    line(fields, { 'time': '00:00:02', 'sc-bytes': '2000', 'x-host-header': 'globex.api.example.com', 'cs-method': 'POST', 'sc-status': '201' }),
    line(fields, { 'time': '00:00:03', 'sc-bytes': '700', 'x-host-header': '-' }),
    line(fields, { 'time': '00:00:04', 'sc-bytes': '300', 'x-host-header': '203.0.113.7' }),
    `${line(fields, { 'time': '00:00:05', 'sc-bytes': '250', 'x-host-header': 'acme.api.example.com', 'cs-uri-stem': '/caf%C3%A9/menu' })}\t`,
    line(fields, { 'time': '00:00:06', 'sc-bytes': '-', 'x-host-header': 'globex.api.example.com', 'sc-status': '304' }),
  ];
}

function write(name, lines, { gzip = true, eol = '\n', bom = false } = {}) {
  const text = `${bom ? '\uFEFF' : ''}${lines.join(eol)}${eol}`;
  writeFileSync(`fixtures/logs/${name}`, gzip ? gzipSync(text) : text);
}

write('E2FIXTURE.2026-11-21-00.v33.gz', [...header(V33), ...standardLines(V33)]);
write('E2FIXTURE.2026-11-21-00.v24.gz', [...header(V24), ...standardLines(V24)]);
write('E2FIXTURE.2026-11-21-00.v26.gz', [...header(V26), ...standardLines(V26)]);
write('E2FIXTURE.2026-11-21-00.v35.gz', [...header(V35), ...standardLines(V35)]);
write('plain-v33.log', [...header(V33), ...standardLines(V33)], { gzip: false });
write('crlf-bom.log', [...header(V33), ...standardLines(V33)], { gzip: false, eol: '\r\n', bom: true });

// Header changes mid-file: 2 lines under v24, then a v33 header (tab after the colon) and 2 more lines.
write('header-change.log.gz', [
  '#Version: 1.0',
  `#Fields: ${V24.join(' ')}`,
  line(V24, { 'x-host-header': 'acme.api.example.com', 'sc-bytes': '10' }),
  line(V24, { 'x-host-header': 'acme.api.example.com', 'sc-bytes': '20' }),
  '',
  `#Fields:\t${V33.join(' ')}`,
  line(V33, { 'x-host-header': 'globex.api.example.com', 'sc-bytes': '30' }),
  line(V33, { 'x-host-header': 'acme.api.example.com', 'sc-bytes': '40', 'date': '2026-11-22' }),
]);

// Ten data lines: 3 counted, 1 unattributed (an account id with "#"), 6 malformed for six reasons.
write('malformed-mix.log.gz', [
  line(V33, { 'x-host-header': 'acme.api.example.com', 'sc-bytes': '1' }),
  ...header(V33),
  line(V33, { 'x-host-header': 'acme.api.example.com', 'sc-bytes': '2' }),
  line(V33, { 'x-host-header': 'acme.api.example.com' }).split('\t').slice(0, 20).join('\t'),
  line(V33, { 'x-host-header': 'acme.api.example.com', 'date': '2026-02-30' }),
  line(V33, { 'x-host-header': 'acme.api.example.com', 'sc-bytes': '-5' }),
  line(V33, { 'x-host-header': 'acme.api.example.com', 'sc-bytes': 'lots' }),
  line(V33, { 'x-host-header': 'acme.api.example.com', 'time': '25:61:00' }),
  line(V33, { 'x-host-header': 'globex.api.example.com', 'sc-bytes': '3' }),
  line(V33, { 'x-host-header': 'bad#id.api.example.com', 'sc-bytes': '4' }),
  line(V33, { 'x-host-header': 'acme.api.example.com', 'sc-bytes': '5' }),
]);

write('header-only.log.gz', header(V33));
writeFileSync('fixtures/logs/empty.log.gz', Buffer.alloc(0));
write('no-fields-header.log.gz', ['#Version: 1.0', line(V33, { 'x-host-header': 'acme.api.example.com' })]);
writeFileSync('fixtures/logs/not-a-log.bin', Buffer.from(Array.from({ length: 2048 }, (_, i) => (i * 7919 + 13) % 256)));
const full = gzipSync([...header(V33), ...standardLines(V33)].join('\n'));
writeFileSync('fixtures/logs/truncated.log.gz', full.subarray(0, Math.floor(full.length * 0.6)));
console.log('fixtures written');
