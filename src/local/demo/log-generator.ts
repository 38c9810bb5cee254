import { gzipSync } from 'node:zlib';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { UNATTRIBUTED } from '../../domain/account-id';
import { addDays } from '../../domain/days';

/** The 33 fields of a current CloudFront standard log, in order. */
export const CLOUDFRONT_FIELDS = [
  'date', 'time', 'x-edge-location', 'sc-bytes', 'c-ip', 'cs-method', 'cs(Host)', 'cs-uri-stem', 'sc-status',
  'cs(Referer)', 'cs(User-Agent)', 'cs-uri-query', 'cs(Cookie)', 'x-edge-result-type', 'x-edge-request-id',
  'x-host-header', 'cs-protocol', 'cs-bytes', 'time-taken', 'x-forwarded-for', 'ssl-protocol', 'ssl-cipher',
  'x-edge-response-result-type', 'cs-protocol-version', 'fle-status', 'fle-encrypted-fields', 'c-port',
  'time-to-first-byte', 'x-edge-detailed-result-type', 'sc-content-type', 'sc-content-len', 'sc-range-start',
  'sc-range-end',
] as const;

/** A small, fast, seeded PRNG (mulberry32): the same seed gives the same logs. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export interface LogSpec {
  readonly seed: number;
  readonly day: string;
  readonly hour: number;
  readonly distribution: string;
  /** Accounts and their share of traffic. */
  readonly accounts: readonly { readonly id: string; readonly weight: number }[];
  readonly lines: number;
  /** Share of lines from a host that attributes to no account (an IP literal). */
  readonly unattributedRate?: number;
  /** Share of lines that are broken (cut short or with a bad byte count). */
  readonly malformedRate?: number;
  /** Share of lines of the first hour that carry the previous day's date. */
  readonly previousDayRate?: number;
}

/** What a generated log must count to, known independently of Tally's parser. */
export interface ExpectedCount {
  readonly usage: Map<string, Record<string, number>>;
  /** The same usage by UTC hour of its day (hour 0..23, then metric), keyed like `usage`; from each line's `time`. */
  readonly hours?: Map<string, Record<number, Record<string, number>>>;
  readonly lines: { read: number; counted: number; unattributed: number; malformed: number };
}

/** `account|day` key used in {@link ExpectedCount.usage}. */
export function expectedKey(account: string, day: string): string {
  return `${account}|${day}`;
}

const EDGES = ['IAD89-C1', 'FRA56-P2', 'NRT57-P1', 'LHR61-C2', 'SFO53-P7', 'GRU3-C1'];
const PATHS = ['/v1/items', '/v1/items/42', '/v1/search', '/api/authorization/check', '/api/authorization/token', '/assets/app.js', '/index.html'];
const AGENTS = [
  'Mozilla/5.0%20(Windows%20NT%2010.0;%20Win64;%20x64)%20AppleWebKit/537.36%20(KHTML,%20like%20Gecko)%20Chrome/131.0.0.0%20Safari/537.36',
  'curl/8.5.0',
  'okhttp/4.12.0',
  'Mozilla/5.0%2520(iPhone;%2520CPU%2520iPhone%2520OS%252017_0)',
];
const METHODS = ['GET', 'GET', 'GET', 'POST', 'PUT', 'DELETE'];
const STATUSES = ['200', '200', '200', '200', '304', '404', '403', '500', '429'];

function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!;
}

/**
 * Writes a realistic CloudFront standard log (33 fields, header lines, URL-encoded
 * values) and the counts it must produce under the `host-label` resolver and the
 * `authorization_requests` rule (`/api/authorization/*`).
 */
export function generateLog(spec: LogSpec): { text: string; expected: ExpectedCount } {
  const random = seededRandom(spec.seed);
  const totalWeight = spec.accounts.reduce((sum, account) => sum + account.weight, 0);
  const usage = new Map<string, Record<string, number>>();
  const hours = new Map<string, Record<number, Record<string, number>>>();
  const lines = { read: 0, counted: 0, unattributed: 0, malformed: 0 };
  const out: string[] = ['#Version: 1.0', `#Fields: ${CLOUDFRONT_FIELDS.join(' ')}`];
  const hh = String(spec.hour).padStart(2, '0');

  for (let i = 0; i < spec.lines; i++) {
    let day = spec.day;
    let time = `${hh}:${String(Math.floor(random() * 60)).padStart(2, '0')}:${String(Math.floor(random() * 60)).padStart(2, '0')}`;
    if (spec.hour === 0 && random() < (spec.previousDayRate ?? 0)) {
      day = addDays(spec.day, -1);
      time = `23:59:${String(Math.floor(random() * 60)).padStart(2, '0')}`;
    }
    let roll = random() * totalWeight;
    let account = spec.accounts[spec.accounts.length - 1]!.id;
    for (const candidate of spec.accounts) {
      roll -= candidate.weight;
      if (roll < 0) {
        account = candidate.id;
        break;
      }
    }
    const unattributed = random() < (spec.unattributedRate ?? 0);
    const path = pick(random, PATHS);
    const bytes = Math.floor(200 + random() * (path.startsWith('/assets') ? 250_000 : 8_000));
    const host = unattributed ? `203.0.113.${Math.floor(random() * 250)}` : `${account}.api.example.com`;
    const fields = [
      day, time, pick(random, EDGES), String(bytes),
      `198.51.100.${Math.floor(random() * 250)}`, pick(random, METHODS), `${spec.distribution}.cloudfront.net`,
      path, pick(random, STATUSES), '-', pick(random, AGENTS), random() < 0.3 ? 'page=2&limit=50' : '-', '-',
      'Miss', `${Math.floor(random() * 1e12).toString(36)}Rq${i.toString(36)}==`, host, 'https',
      String(Math.floor(100 + random() * 900)), (random() * 0.5).toFixed(3), '-', 'TLSv1.3', 'TLS_AES_128_GCM_SHA256',
      'Miss', 'HTTP/2.0', '-', '-', String(1024 + Math.floor(random() * 60_000)), (random() * 0.4).toFixed(3), 'Miss',
      'application/json', String(Math.max(0, bytes - 180)), '-', '-',
    ];
    lines.read++;
    if (random() < (spec.malformedRate ?? 0)) {
      lines.malformed++;
      out.push(random() < 0.5 ? fields.slice(0, 9).join('\t') : [...fields.slice(0, 3), 'NaN', ...fields.slice(4)].join('\t'));
      continue;
    }
    out.push(fields.join('\t'));
    const owner = unattributed ? UNATTRIBUTED : account;
    if (unattributed) lines.unattributed++;
    else lines.counted++;
    const key = expectedKey(owner, day);
    const metrics = usage.get(key) ?? { requests: 0, bytes: 0, authorization_requests: 0 };
    metrics.requests! += 1;
    metrics.bytes! += bytes;
    if (path.startsWith('/api/authorization/')) metrics.authorization_requests! += 1;
    usage.set(key, metrics);
    const byHour = hours.get(key) ?? {};
    const hour = (byHour[Number(time.slice(0, 2))] ??= { requests: 0, bytes: 0 });
    hour.requests! += 1;
    hour.bytes! += bytes;
    if (path.startsWith('/api/authorization/')) hour.authorization_requests = (hour.authorization_requests ?? 0) + 1;
    hours.set(key, byHour);
  }
  return { text: `${out.join('\n')}\n`, expected: { usage, hours, lines } };
}

/** Adds `from` into `into` (both keyed by {@link expectedKey}). */
export function mergeExpected(into: ExpectedCount, from: ExpectedCount): void {
  for (const [key, metrics] of from.usage) {
    const target = into.usage.get(key) ?? {};
    for (const [metric, value] of Object.entries(metrics)) target[metric] = (target[metric] ?? 0) + value;
    into.usage.set(key, target);
  }
  for (const [key, byHour] of from.hours ?? []) {
    const target = into.hours?.get(key) ?? {};
    for (const [hour, metrics] of Object.entries(byHour)) {
      const sums = (target[Number(hour)] ??= {});
      for (const [metric, value] of Object.entries(metrics)) sums[metric] = (sums[metric] ?? 0) + value;
    }
    into.hours?.set(key, target);
  }
  into.lines.read += from.lines.read;
  into.lines.counted += from.lines.counted;
  into.lines.unattributed += from.lines.unattributed;
  into.lines.malformed += from.lines.malformed;
}

export function emptyExpected(): ExpectedCount {
  return { usage: new Map(), hours: new Map(), lines: { read: 0, counted: 0, unattributed: 0, malformed: 0 } };
}

/** CloudFront's object key: `<prefix><distribution>.YYYY-MM-DD-HH.<unique>.gz`. */
export function cloudFrontObjectKey(prefix: string, distribution: string, day: string, hour: number, unique: string): string {
  return `${prefix}${distribution}.${day}-${String(hour).padStart(2, '0')}.${unique}.gz`;
}

/** The formats the demo and the chaos suite write logs in (each generated as legacy text first). */
export type LogObjectFormat = 'legacy' | 'json' | 'parquet';

/**
 * The stored object of a generated legacy log (one `#Fields` header, tab-separated
 * lines) in a CloudFront format, with the same fate for every line: legacy is the text
 * gzipped; a well-formed line becomes a v2 JSON object (gzipped lines) or a v2 Parquet
 * row with the same fields; a line with too few fields becomes what that format calls
 * malformed (a JSON array; a Parquet row with no date), and a bad value stays the same
 * bad value. The generator's expected count holds for all three.
 */
export function logObjectBody(text: string, format: LogObjectFormat): Buffer {
  if (format === 'legacy') return gzipSync(text);
  const lines = text.split('\n').filter((line) => line !== '');
  const fields = lines.find((line) => line.startsWith('#Fields:'))!.slice('#Fields:'.length).trim().split(/\s+/);
  const rows = lines.filter((line) => !line.startsWith('#')).map((line) => line.split('\t'));
  if (format === 'json') {
    const json = rows.map((row) => (row.length < fields.length ? JSON.stringify(row) : JSON.stringify(Object.fromEntries(fields.map((name, i) => [name, row[i]!]))))).join('\n');
    return gzipSync(`${json}\n`);
  }
  // Parquet spells fields with underscores (cs(Host) -> cs_Host), as CloudFront v2 does.
  const columnName = (name: string) => name.replace(/\(([^)]*)\)/, '_$1').replace(/-/g, '_');
  return Buffer.from(
    parquetWriteBuffer({
      columnData: fields.map((name, i) => ({
        name: columnName(name),
        data: rows.map((row) => (row.length < fields.length ? (name === 'date' ? null : (row[i] ?? null)) : row[i]!)),
        type: 'STRING' as const,
        nullable: true,
      })),
      rowGroupSize: 64,
    }),
  );
}

/**
 * The key standard logging v2 gives an object under `prefix`: JSON with plain
 * partitions (`AWSLogs/<account>/CloudFront/<dist>/yyyy/MM/dd/HH/`), Parquet with
 * Hive-compatible ones (`DistributionId=<dist>/year=/month=/day=/hour=`).
 *
 * @example v2ObjectKey('cloudfront/', 'E2DEMO', '2026-11-21', 7, 'a1', 'json')
 *          // 'cloudfront/AWSLogs/000000000000/CloudFront/E2DEMO/2026/11/21/07/E2DEMO.2026-11-21-07.a1.json.gz'
 */
export function v2ObjectKey(prefix: string, distribution: string, day: string, hour: number, unique: string, format: 'json' | 'parquet'): string {
  const [yyyy, mm, dd] = day.split('-') as [string, string, string];
  const hh = String(hour).padStart(2, '0');
  const name = `${distribution}.${day}-${hh}.${unique}`;
  const base = `${prefix}AWSLogs/000000000000/CloudFront/`;
  if (format === 'json') return `${base}${distribution}/${yyyy}/${mm}/${dd}/${hh}/${name}.json.gz`;
  return `${base}DistributionId=${distribution}/year=${yyyy}/month=${mm}/day=${dd}/hour=${hh}/${name}.parquet`;
}
