import { gzipSync } from 'node:zlib';

/**
 * One request of test traffic, rendered below into every log format CloudFront writes,
 * each as AWS documents it, written here independently of the code under test.
 */
export interface Request {
  /** Epoch milliseconds. */
  readonly at: number;
  readonly host: string;
  readonly method: string;
  readonly stem: string;
  readonly status: number;
  readonly bytes: number;
  readonly distribution: string;
}

/** Deterministic traffic: `count` requests over the last hours of one day and the first of the next. */
export function traffic(count: number, accounts: readonly string[], seed = 7): Request[] {
  let state = seed;
  const next = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
  const start = Date.UTC(2026, 10, 20, 22, 0, 0);
  return Array.from({ length: count }, (_, i) => {
    const pick = next();
    // One request in ten comes for an IP literal: no account (unattributed).
    const host = pick < 0.1 ? '192.0.2.10' : `${accounts[Math.floor(next() * accounts.length)]}.example.com`;
    return {
      at: start + Math.floor((i / count) * 4 * 3_600_000) + Math.floor(next() * 1000),
      host,
      method: next() < 0.2 ? 'POST' : 'GET',
      stem: next() < 0.3 ? '/api/authorization/check' : `/static/${i}.js`,
      status: next() < 0.1 ? 404 : 200,
      bytes: Math.floor(next() * 50_000),
      distribution: 'E3TESTDIST',
    };
  });
}

/** The usage of traffic as Tally should count it: per host label and UTC day, done plainly. */
export function expectedUsage(requests: readonly Request[]): Record<string, Record<string, { requests: number; bytes: number }>> {
  const usage: Record<string, Record<string, { requests: number; bytes: number }>> = {};
  for (const r of requests) {
    const account = /^\d/.test(r.host) ? 'unattributed' : r.host.slice(0, r.host.indexOf('.'));
    const day = new Date(r.at).toISOString().slice(0, 10);
    const row = ((usage[account] ??= {})[day] ??= { requests: 0, bytes: 0 });
    row.requests++;
    row.bytes += r.bytes;
  }
  return usage;
}

const date = (r: Request) => new Date(r.at).toISOString().slice(0, 10);
const time = (r: Request) => new Date(r.at).toISOString().slice(11, 19);
const epochSeconds = (r: Request) => (r.at / 1000).toFixed(3);

/** Legacy standard log: `#Version`, `#Fields`, tab-separated, the 33-field order's start. */
export function legacyLog(requests: readonly Request[]): string {
  const header = '#Version: 1.0\n#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) x-host-header\n';
  return header + requests.map((r) => [date(r), time(r), 'FRA56-C1', r.bytes, '198.51.100.7', r.method, `${r.distribution.toLowerCase()}.cloudfront.net`, r.stem, r.status, '-', r.host].join('\t') + '\n').join('');
}

/** v2 w3c: no `#Version`, a reordered subset of fields, the day only in `timestamp(ms)`. */
export function w3cLog(requests: readonly Request[]): string {
  const header = '#Fields: sc-status x-host-header timestamp(ms) cs-uri-stem sc-bytes cs-method DistributionId\n';
  return header + requests.map((r) => [r.status, r.host, r.at, r.stem, r.bytes, r.method, r.distribution].join('\t') + '\n').join('');
}

/**
 * v2 JSON: one object per line, every value a string, `-` for none, legacy field names.
 * `DistributionId` is spelt two ways, line by line, unless `alternate` is false.
 */
export function jsonLog(requests: readonly Request[], alternate = true): string {
  return requests
    .map((r, i) =>
      JSON.stringify({
        date: date(r),
        time: time(r),
        'x-edge-location': 'FRA56-C1',
        'sc-bytes': String(r.bytes),
        'cs-method': r.method,
        'cs(Host)': `${r.distribution.toLowerCase()}.cloudfront.net`,
        'cs-uri-stem': r.stem,
        'sc-status': String(r.status),
        'cs(Referer)': '-',
        'x-host-header': r.host,
        // Real JSON has been seen with either spelling.
        [i % 2 === 0 || !alternate ? 'DistributionId' : 'distributionid']: r.distribution,
      }) + '\n',
    )
    .join('');
}

/** The field list of {@link plainLog}, as `TALLY_LOG_FIELDS` names it. */
export const PLAIN_FIELDS = 'timestamp,sc-bytes,x-host-header,cs-uri-stem,cs-method,sc-status';

/** v2 plain: no header, the chosen fields separated by `delimiter`, the day in `timestamp` (epoch seconds). */
export function plainLog(requests: readonly Request[], delimiter = '|'): string {
  return requests.map((r) => [Math.floor(r.at / 1000), r.bytes, r.host, r.stem, r.method, r.status].join(delimiter) + '\n').join('');
}

/** The field list of {@link realtimeLog}, as `TALLY_LOG_FIELDS` names it. */
export const REALTIME_FIELDS_SETTING = 'realtime:timestamp,sc-status,sc-bytes,cs-method,cs-host,cs-uri-stem,x-host-header';

/** A real-time log record set: headerless TSV in CloudFront's order, `timestamp` in seconds with milliseconds. */
export function realtimeLog(requests: readonly Request[]): string {
  return requests.map((r) => [epochSeconds(r), r.status, r.bytes, r.method, `${r.distribution.toLowerCase()}.cloudfront.net`, r.stem, r.host].join('\t') + '\n').join('');
}

/** A Firehose delivery's object name: `<stream>-<version>-YYYY-MM-DD-HH-MM-SS-<uuid>`. */
export function firehoseKey(prefix: string, at: Date, stream = 'tally-cf-logs'): string {
  const stamp = at.toISOString().slice(0, 19).replace(/[T:]/g, '-');
  return `${prefix}${stamp.slice(0, 4)}/${stamp.slice(5, 7)}/${stamp.slice(8, 10)}/${stamp.slice(11, 13)}/${stream}-1-${stamp}-0b6d4d2e-7f9b-4f5a-9a41-5c2a1c8d9e10.gz`;
}

export const gzip = (text: string): Buffer => gzipSync(text);
