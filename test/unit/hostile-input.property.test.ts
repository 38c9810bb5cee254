import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { handleUsageApiRequest, type UsageApiDeps } from '../../src/app/reading/usage-api';
import { silentLog } from '../../src/app/log';
import { JoseTokenVerifier, mintToken } from '../../src/adapters/http/jwt-tokens';
import { commandPath, type DeclaredCommand, type OptionDeclaration } from '../../src/cli/command';
import { COMMANDS } from '../../src/cli/commands';
import { runCli } from '../../src/cli/main';
import { isValidAccountId } from '../../src/domain/account-id';
import { optionsOf } from '../../src/cli/program';
import type { HealthReport } from '../../src/domain/reading/health';
import { usageApiEvent } from '../support/api-events';
import { captureIo, REPO_ROOT } from '../support/cli';
import { TEST_SECRET } from '../support/tokens';

/**
 * "Nothing a user types can crash Tally" (issue 31), as a law: random and hostile values
 * at every route's parameters and every command's options get a 4xx or exit 2 with a
 * message, in bounded time, and nothing is read or written. Days are checked against
 * an oracle of their own (the Date object), not Tally's day code.
 */

/** A folder with no `.tally/local.json`: no command run here can find a stack to write to. */
const NO_STACK = mkdtempSync(join(tmpdir(), 'tally-hostile-'));
const PLAIN_LOG = join(REPO_ROOT, 'fixtures', 'logs', 'plain-v33.log');
afterAll(() => rmSync(NO_STACK, { recursive: true, force: true }));

/** The longest one refusal may take: a refusal does no I/O, so this is far above what it needs. */
const BOUNDED_MS = 2_000;

/** True when `text` is a day from 2000-01-01 to 2099-12-31, told by the Date object alone. */
function oracleSupportedDay(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const date = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === text && text >= '2000-01-01' && text <= '2099-12-31';
}

/** The days the issue names, and their neighbours: far past and future, the edges, leap days that are not. */
const HOSTILE_DAYS = [
  '0000-01-01',
  '0001-01-01',
  '1970-01-01',
  '1999-12-31',
  '2100-01-01',
  '2100-02-29',
  '1900-02-29',
  '2023-02-29',
  '2026-02-30',
  '2026-13-01',
  '2026-00-10',
  '2026-11-31',
  '3000-01-01',
  '9999-12-31',
  '+275760-09-13',
  '-000001-01-01',
  '+010000-01-01',
  '2026-11-21T00:00:00Z',
  '2026-1-1',
  '21/11/2026',
  '',
  ' ',
  '\u0000',
  '../../etc/passwd',
  '%00',
  "'; DROP TABLE usage; --",
  '🙂',
  'x'.repeat(10_000),
];

/** Any text that is no supported day: the list above, calendar days of any year outside 2000-2099, and random strings. */
const hostileDay: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...HOSTILE_DAYS),
  fc
    .date({ min: new Date(Date.UTC(-271_821, 3, 20)), max: new Date(Date.UTC(275_760, 8, 13)), noInvalidDate: true })
    .map((date) => date.toISOString().slice(0, date.toISOString().indexOf('T'))),
  fc.string({ maxLength: 40 }),
  fc.tuple(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 0, max: 99 }), fc.integer({ min: 0, max: 99 })).map(
    ([y, m, d]) => `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`,
  ),
).filter((text) => !oracleSupportedDay(text));

/** Supported days, leap days among them. */
const goodDay = fc.constantFrom('2000-01-01', '2000-02-29', '2024-02-29', '2026-11-21', '2099-12-31');

/** Hostile values of the other query parameters (sizes, formats, metrics, ids). */
const hostileText = fc.oneof(
  fc.constantFrom('', ' ', '\u0000', '-1', '0', '1e309', 'NaN', 'Infinity', '9'.repeat(400), '../..', '%00', '🙂', 'x'.repeat(1_000), 'true,false', 'csv,json'),
  fc.string({ maxLength: 30 }),
);

describe('every route refuses hostile parameters with a 4xx and a message, reading nothing', () => {
  const reads: string[] = [];
  const health = { generatedAt: 'now' } as HealthReport;
  const deps: UsageApiDeps = {
    reader: { read: async (account) => (reads.push(`usage ${account}`), { records: [], requests: 1 }) },
    zones: { zoneOf: async (account) => (reads.push(`zone ${account}`), 'America/New_York') },
    sources: { sourcesOf: async (account) => (reads.push(`sources ${account}`), { sources: [], requests: 1 }) },
    accounts: { accountsOn: async (day) => (reads.push(`accounts ${day}`), []) },
    health: async (days) => (reads.push(`health ${days}`), health),
    verifier: new JoseTokenVerifier({ kind: 'secret', secret: TEST_SECRET }, { audience: 'tally-usage-api', issuer: 'tally' }),
    log: silentLog,
    metricNames: ['requests', 'bytes'],
    corsOrigins: [],
  };
  let tenant: string;
  let admin: string;
  beforeAll(async () => {
    tenant = await mintToken(TEST_SECRET, { accounts: ['acme'], ttlSeconds: 3600 });
    admin = await mintToken(TEST_SECRET, { admin: true, ttlSeconds: 3600 });
  });

  /** Calls the API once; the answer, its message and how long it took. */
  async function call(event: Parameters<typeof handleUsageApiRequest>[0]) {
    reads.length = 0;
    const started = performance.now();
    const response = await handleUsageApiRequest(event, deps);
    const ms = performance.now() - started;
    // A CSV answer (format=csv, Accept: text/csv) has no message.
    const body = (response.headers?.['content-type']?.startsWith('application/json') ? JSON.parse(response.body ?? '{}') : {}) as { message?: string };
    return { status: response.statusCode, message: body.message ?? '', ms, reads: [...reads] };
  }

  /** A range where at least one end is hostile. */
  const hostileRange = fc.oneof(fc.tuple(hostileDay, fc.oneof(goodDay, hostileDay)), fc.tuple(goodDay, hostileDay));

  it('GET /v1/accounts/{id}/usage: from, to, granularity, format, quota', async () => {
    await fc.assert(
      fc.asyncProperty(hostileRange, fc.option(hostileText), fc.option(hostileText), fc.option(hostileText), async ([from, to], granularity, format, quota) => {
        const query: Record<string, string> = { from, to };
        if (granularity !== null) query.granularity = granularity;
        if (format !== null) query.format = format;
        if (quota !== null) query.quota = quota;
        const answer = await call(usageApiEvent({ token: tenant, query }));

        expect([answer.status >= 400 && answer.status < 500, answer.message.length > 0, answer.reads]).toEqual([true, true, []]);
        expect(answer.ms).toBeLessThan(BOUNDED_MS);
        if (answer.status === 400) expect(answer.message).toMatch(/"(from|to|granularity|format|quota)"/);
      }),
      { numRuns: 300 },
    );
  });

  /** Zones to try: whole-hour ones, sub-hour ones, Lord Howe (30-minute change), spellings, and no zones. */
  const zone = fc.oneof(
    fc.constantFrom('', 'UTC', 'Etc/UTC', 'america/new_york', 'Europe/Berlin', 'Australia/Lord_Howe', 'Asia/Kolkata', 'Asia/Kathmandu', 'Pacific/Chatham'),
    fc.constantFrom('Mars/Olympus_Mons', '+05:00', 'GMT+5', 'America/New_York/Extra', 'a'.repeat(100), 'Europe/../etc', 'UTC\u0000'),
    hostileText,
  );

  /** What Intl alone says of `tz` over the zone's days `from`..`to`: unknown, not whole hours, or the UTC hour starts inside. */
  function zoneOracle(tz: string, from: string, to: string): 'unknown' | 'sub-hour' | number {
    if (tz === '') return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 3_600_000) + 24;
    let format: Intl.DateTimeFormat;
    try {
      if (!/^[A-Za-z]/.test(tz)) return 'unknown';
      format = new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit', timeZoneName: 'longOffset' });
    } catch {
      return 'unknown';
    }
    let starts = 0;
    const first = Date.parse(`${from}T00:00:00Z`) - 86_400_000;
    const last = Date.parse(`${to}T00:00:00Z`) + 2 * 86_400_000;
    for (let ms = first; ms < last; ms += 900_000) {
      const parts = Object.fromEntries(format.formatToParts(new Date(ms)).map((part) => [part.type, part.value]));
      const date = `${parts.year}-${parts.month}-${parts.day}`;
      if (date < from || date > to) continue;
      if (!/^GMT([+-]\d\d:00)?$/.test(parts.timeZoneName ?? '')) return 'sub-hour';
      if (ms % 3_600_000 === 0) starts++;
    }
    return starts;
  }

  it('GET /v1/accounts/{id}/usage: tz and granularity=hour on any supported range', async () => {
    const goodRange = fc
      .tuple(fc.integer({ min: 0, max: 36_500 }), fc.integer({ min: 1, max: 40 }))
      .map(([start, days]) => [Date.UTC(2000, 0, 1) + start * 86_400_000, Date.UTC(2000, 0, 1) + (start + days - 1) * 86_400_000])
      .filter(([, end]) => end! <= Date.UTC(2099, 11, 31))
      .map(([start, end]) => [new Date(start!).toISOString().slice(0, 10), new Date(end!).toISOString().slice(0, 10)] as const);
    const granularity = fc.oneof(fc.constantFrom('hour', 'hour', 'day', 'month'), hostileText);
    await fc.assert(
      fc.asyncProperty(goodRange, granularity, zone, async ([from, to], granularity, tz) => {
        const answer = await call(usageApiEvent({ token: tenant, query: { from, to, granularity, tz } }));
        const days = Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000) + 1;
        const known = zoneOracle(tz, from, to);
        const wellFormed = ['hour', 'day', 'month', ''].includes(granularity) && !(granularity === 'hour' && days > 31);

        expect(answer.ms).toBeLessThan(BOUNDED_MS);
        if (new URLSearchParams({ from, to, granularity, tz }).toString().length > 1024) {
          expect([answer.status, answer.reads]).toEqual([414, []]);
          return;
        }
        if (!wellFormed || typeof known !== 'number') {
          expect([answer.status, answer.reads]).toEqual([400, []]);
          expect(answer.message).toMatch(!wellFormed ? /granularity/ : known === 'unknown' ? /"tz"/ : /time zone .* not a whole number of hours/);
          return;
        }
        expect([answer.status, answer.reads]).toEqual([200, ['usage acme', 'zone acme']]);
        const body = JSON.parse((await handleUsageApiRequest(usageApiEvent({ token: tenant, query: { from, to, granularity, tz } }), deps)).body!);
        expect(body.days).toHaveLength(days);
        if (granularity === 'hour') expect(body.hours).toHaveLength(known);
      }),
      { numRuns: 150 },
    );
  });

  it('GET /v1/accounts (the ranking): from, to, metric, format', async () => {
    await fc.assert(
      fc.asyncProperty(hostileRange, fc.option(hostileText), async ([from, to], metric) => {
        const answer = await call(usageApiEvent({ path: '/v1/accounts', token: admin, query: { from, to, ...(metric === null ? {} : { metric }) } }));

        expect([answer.status >= 400 && answer.status < 500, answer.message.length > 0, answer.reads]).toEqual([true, true, []]);
        expect(answer.ms).toBeLessThan(BOUNDED_MS);
      }),
      { numRuns: 200 },
    );
  });

  it('GET /v1/accounts/{id}/days/{day}/explain: the day in the path', async () => {
    await fc.assert(
      fc.asyncProperty(hostileDay, fc.option(hostileText), async (day, format) => {
        const path = `/v1/accounts/acme/days/${encodeURIComponent(day)}/explain`;
        const answer = await call(usageApiEvent({ path, token: tenant, ...(format === null ? {} : { query: { format } }) }));

        // A day with a "/" in it is no route at all (404); every other one is a 400.
        expect([answer.status >= 400 && answer.status < 500, answer.message.length > 0, answer.reads]).toEqual([true, true, []]);
        expect(answer.ms).toBeLessThan(BOUNDED_MS);
      }),
      { numRuns: 200 },
    );
  });

  it('a path segment with broken percent-encoding is a 400 naming the segment (the day was called the account id)', async () => {
    /** Text with a "%" not followed by a whole UTF-8 sequence of hex pairs. */
    const broken = fc
      .tuple(fc.string({ maxLength: 10 }), fc.constantFrom('%', '%E0', '%C3%28', '%G1', '%ED%A0%80', '%FF', '%0'), fc.string({ maxLength: 10 }))
      .map(([before, bad, after]) => `${encodeURIComponent(before)}${bad}${encodeURIComponent(after)}`)
      .filter((text) => {
        try {
          decodeURIComponent(text);
          return false;
        } catch {
          return true;
        }
      });
    await fc.assert(
      fc.asyncProperty(broken, fc.constantFrom('account id', 'day'), async (segment, where) => {
        const path = where === 'day' ? `/v1/accounts/acme/days/${segment}/explain` : `/v1/accounts/${segment}/days/2026-11-02/explain`;
        const answer = await call(usageApiEvent({ path, token: tenant }));

        expect([answer.status, answer.message, answer.reads]).toEqual([400, `the ${where} in the path is not valid URL encoding`, []]);
      }),
      { numRuns: 100 },
    );
  });

  it('the far-future request that froze the service is a 400 that states the supported days', async () => {
    for (const day of ['9999-12-31', '0000-01-01', '+275760-09-13', '2100-02-29']) {
      const answer = await call(usageApiEvent({ token: tenant, query: { from: day, to: day } }));

      expect([answer.status, answer.reads]).toEqual([400, []]);
      expect(answer.message).toMatch(/query parameter "from" must be (within the days Tally supports, 2000-01-01\.\.2099-12-31|a calendar day)/);
      expect(answer.ms).toBeLessThan(BOUNDED_MS);
    }
  });

  it('GET /v1/health: days', async () => {
    await fc.assert(
      fc.asyncProperty(hostileText.filter((text) => !/^0*([1-9]|[12][0-9]|3[01])$/.test(text)), async (days) => {
        const answer = await call(usageApiEvent({ path: '/v1/health', token: admin, query: { days } }));

        expect([answer.status, answer.message.length > 0, answer.reads]).toEqual([400, true, []]);
      }),
      { numRuns: 100 },
    );
  });

  /** Accept headers: what browsers and tools send, several types, parameters, nonsense. */
  const accept = fc.oneof(
    fc.constantFrom('text/csv', 'application/json', '*/*', 'text/csv;q=0', 'text/csv, application/json;q=0.1', 'text/*', 'text/html', '', ';;;', 'text/csv;q=abc', 'x'.repeat(2_000)),
    fc.string({ maxLength: 40 }),
  );

  /** If-None-Match and Origin values: tags, lists, wildcards, origins, nonsense, 8 KB. */
  const hostileHeader = fc.oneof(
    fc.constantFrom('*', 'W/"x"', '"a", "b"', '""', '"', ',,,', 'null', 'https://evil.example', 'http://localhost:8787', 'x'.repeat(8_000)),
    fc.string({ maxLength: 40 }),
  );

  /** A good request of every route whose other parameters (and Accept, If-None-Match, Origin) are hostile: 200/304 or a 4xx with a message, never a 5xx. */
  const routes = [
    { name: 'usage', path: '/v1/accounts/acme/usage', token: () => tenant, base: { from: '2026-11-01', to: '2026-11-03' }, optional: ['granularity', 'format', 'quota', 'tz'] },
    { name: 'explain', path: '/v1/accounts/acme/days/2026-11-02/explain', token: () => tenant, base: {}, optional: ['format', 'tz'] },
    { name: 'ranking', path: '/v1/accounts', token: () => admin, base: { from: '2026-11-01', to: '2026-11-03' }, optional: ['metric', 'format'] },
  ] as const;

  it.each(routes.map((route) => [route.name, route] as const))('%s: any value of its other parameters, Accept, If-None-Match and Origin is answered, never a 5xx', async (_name, route) => {
    const values = fc.oneof(hostileText, fc.constantFrom('csv', 'json', 'hour', 'day', 'month', 'true', 'false', 'UTC', 'Asia/Tokyo', 'Asia/Kolkata', 'bytes', 'requests'));
    await fc.assert(
      fc.asyncProperty(fc.dictionary(fc.constantFrom(...route.optional), values), fc.option(accept), fc.option(hostileHeader), fc.option(hostileHeader), async (optional, acceptHeader, ifNoneMatch, origin) => {
        const query = { ...route.base, ...optional };
        const headers = {
          ...(acceptHeader === null ? {} : { accept: acceptHeader }),
          ...(ifNoneMatch === null ? {} : { 'if-none-match': ifNoneMatch }),
          ...(origin === null ? {} : { origin }),
        };
        const event = usageApiEvent({ path: route.path, token: route.token(), query, headers });
        const answer = await call(event);

        expect(answer.ms).toBeLessThan(BOUNDED_MS);
        if (answer.status >= 400) expect([answer.status < 500, answer.message.length > 0, answer.reads]).toEqual([true, true, []]);
        else expect([200, 304]).toContain(answer.status);
      }),
      { numRuns: 150 },
    );
  });

  it('any account id in the path: a 4xx for a tenant, reading nothing but its own account', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(hostileText, fc.string({ maxLength: 80 })).filter((id) => id !== 'acme'), fc.constantFrom('usage', 'quota'), async (id, route) => {
        const answer = await call(usageApiEvent({ path: `/v1/accounts/${encodeURIComponent(id)}/${route}`, token: tenant, query: { from: '2026-11-01', to: '2026-11-02' } }));

        expect([answer.status >= 400 && answer.status < 500, answer.reads]).toEqual([true, []]);
      }),
      { numRuns: 200 },
    );
  });
});

/** A valid value for every required option, so that only the option under test is hostile. */
const BASELINE: Readonly<Record<string, string>> = {
  '--account': 'acme',
  '--day': '2026-11-21',
  '--from': '2026-11-01',
  '--to': '2026-11-02',
  '--metric': 'requests',
  '--delta': '5',
  '--reason': 'property test',
  '--id': 'INC-1',
  '--monthly': '1000',
  '--customer': 'cus_123',
  '--objects-per-account-day': '10',
  '--zone': 'Europe/Berlin',
};

/** Positional arguments of the commands that take them. */
const ARGUMENTS: Readonly<Record<string, string[]>> = {
  count: [PLAIN_LOG],
  put: [PLAIN_LOG],
  'adjustments revert': ['INC-1'],
  // Required unless --resolve, which the command checks itself.
  reconcile: ['--from', '2026-11-01', '--to', '2026-11-02'],
};

/** A command's positional arguments, less `flag` and its value (a flag is given once: twice with two values is refused). */
function argumentsWithout(path: string, flag: string): string[] {
  const args = ARGUMENTS[path] ?? [];
  const at = args.indexOf(flag);
  return at === -1 ? args : [...args.slice(0, at), ...args.slice(at + 2)];
}

/** What kind of value an option reads, told by what its reader accepts. */
function kindOf(option: OptionDeclaration): 'day' | 'month' | 'number' | 'text' | 'prose' {
  const accepts = (text: string) => {
    try {
      option.read!(text, option.flags);
      return true;
    } catch {
      return false;
    }
  };
  // Words an operator writes into a record (a reason, who did it): any printable text.
  if (accepts("restored after INC-7's replay: 'x' / 🙂")) return 'prose';
  if (accepts('acme') || accepts('cus_123') || accepts('1h') || accepts('50,80')) return 'text';
  if (accepts('2026-11-21')) return 'day';
  if (accepts('2026-11')) return 'month';
  if (accepts('5')) return 'number';
  return 'text';
}

/** Months outside 2000-01..2099-12, or no month at all. */
const hostileMonth = fc.oneof(
  fc.constantFrom('0000-01', '1999-12', '2100-01', '9999-12', '+275760-09', '2026-13', '2026-00', '2026-1', '', '🙂', '2026-11-21'),
  fc.string({ maxLength: 12 }),
).filter((text) => !(/^\d{4}-(0[1-9]|1[0-2])$/.test(text) && text >= '2000-01' && text <= '2099-12'));

/** Numbers no count, size, rate or amount may be. */
const hostileNumber = fc.constantFrom('', ' ', 'NaN', 'Infinity', '-Infinity', '1e309', '9'.repeat(400), '0x', 'abc', '🙂', '--1', '1..2', '\u0000');

/** Text no account id, metric, customer, TTL or level list may be. */
const hostileTextValue = fc.constantFrom('', ' ', '\u0000', '../../etc/passwd', '$(touch /tmp/pwned)', '%00', "'; DROP TABLE usage; --", '🙂', 'A#DAY#2026-11-21', 'a'.repeat(100_000));

/**
 * Text no reason, actor or token subject may be: nothing, blanks, control characters (a
 * newline or an escape sequence would forge lines and repaint terminals where records are
 * listed), a lone surrogate (no UTF-8 for DynamoDB), and more than any record keeps.
 */
const hostileProse = fc.oneof(
  fc.constantFrom('', ' ', '\t', '\u0000', 'fixed\nINC-9 approved by cfo', 'x\u001b[2J', 'bell\u0007', '\u009b31m', 'a\ud800b', 'a'.repeat(100_000), 'b'.repeat(501)),
  // Inside the text (at its ends, whitespace such as CR is trimmed away, not kept).
  fc.tuple(fc.string({ maxLength: 20 }), fc.constantFrom('\u0000', '\r', '\u007f', '\u0085', '\udfff'), fc.string({ maxLength: 20 })).map(([before, bad, after]) => `x${before}${bad}${after}x`),
);

const HOSTILE_BY_KIND = { day: hostileDay, month: hostileMonth, number: hostileNumber, text: hostileTextValue, prose: hostileProse } as const;

/**
 * Options that take a value and have no reader of their own, and why: each is checked,
 * as a whole, by what reads it (exit 2 with a message), or only names where to look.
 */
const READ_ELSEWHERE: Readonly<Record<string, string>> = {
  'count --resolver': 'a counting setting, parsed with TALLY_RESOLVER (count-settings.ts)',
  'count --metrics': 'a counting setting, parsed with TALLY_METRICS (count-settings.ts)',
  'count --fields': 'a counting setting, parsed with TALLY_LOG_FIELDS (count-settings.ts)',
  'count --delimiter': 'a counting setting, parsed with TALLY_LOG_DELIMITER (count-settings.ts)',
  'count --sampling-rate': 'a counting setting, parsed with TALLY_SAMPLING_RATE (count-settings.ts)',
  'plan --metrics': 'parsed as TALLY_METRICS is',
  'replay --queue': 'a queue URL, the target (same as --dlq-url)',
  'dlq list --queue': 'a queue URL, the target (same as --dlq-url)',
  'dlq drop --queue': 'a queue URL, the target (same as --dlq-url)',
  'adjust --metric': 'checked with the adjustment (metric name rule)',
  'adjust --id': 'checked with the adjustment (adjustment id rule)',
};

/** Every (command, option with a reader) pair, with the argv that makes only that option hostile. */
function optionCases(): { path: string; option: OptionDeclaration; flag: string; argv: (value: string) => string[] }[] {
  return COMMANDS.flatMap((declaration: DeclaredCommand) => {
    const path = commandPath(declaration);
    return declaration.options
      .filter((option) => option.read !== undefined && option.flags.includes('<'))
      .map((option) => {
        const flag = option.flags.split(/[ ,]/).find((part) => part.startsWith('--'))!;
        const required = declaration.options.filter((other) => other.required === true && other !== option);
        const missing = required.filter((other) => BASELINE[other.flags.split(' ')[0]!] === undefined).map((other) => other.flags);
        if (missing.length > 0) throw new Error(`tally ${path}: add a valid value of ${missing.join(', ')} to BASELINE`);
        const base = required.flatMap((other) => [other.flags.split(' ')[0]!, BASELINE[other.flags.split(' ')[0]!]!]);
        return { path, option, flag, argv: (value: string) => [...path.split(' '), ...argumentsWithout(path, flag), ...base, `${flag}=${value}`] };
      });
  });
}

describe('every command refuses hostile option values with exit 2 and a message naming the option', () => {
  const cases = optionCases();

  it('reads every option that takes a value (or says what reads it instead): a reason, an actor, a subject or an id is bounded before any write', () => {
    const unread = COMMANDS.flatMap((declaration) =>
      declaration.options
        .filter((option) => option.flags.includes('<') && option.read === undefined)
        .map((option) => `${commandPath(declaration)} ${option.flags.split(' ')[0]}`),
    );

    expect(unread.filter((name) => READ_ELSEWHERE[name] === undefined)).toEqual([]);
  });

  it('covers the day options of close, reconcile, backfill, adjust, explain, adjustments, stripe', () => {
    const dayOptions = cases.filter((c) => kindOf(c.option) === 'day').map((c) => `${c.path} ${c.flag}`);
    for (const expected of ['close --day', 'reconcile --from', 'reconcile --to', 'backfill --from', 'backfill --to', 'adjust --day', 'explain --day', 'adjustments --from']) {
      expect(dayOptions).toContain(expected);
    }
  });

  it.each(cases.map((c) => [`${c.path} ${c.flag}`, c] as const))('tally %s', async (_name, c) => {
    const kind = kindOf(c.option);
    await fc.assert(
      fc.asyncProperty(HOSTILE_BY_KIND[kind], async (value) => {
        const io = captureIo();
        const started = performance.now();
        // No target anywhere: a command that got past its checks could only fail to find one, never write.
        const code = await runCli(c.argv(value), { io, env: {}, cwd: NO_STACK, now: () => new Date('2026-11-23T12:00:00Z') });
        const ms = performance.now() - started;

        expect([code, io.stdout]).toEqual([2, '']);
        expect(io.stderr.startsWith(`tally ${c.path}: `)).toBe(true);
        // The option by name: "--day ..." from its reader, or "delta must be ..." from the command's own check.
        expect(io.stderr).toContain(c.flag.slice(2));
        expect(io.stderr).not.toMatch(/^\s+at /m);
        expect(ms).toBeLessThan(BOUNDED_MS);
        if (kind === 'day' && /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(Date.parse(`${value}T00:00:00Z`))) {
          expect(io.stderr).toMatch(/outside the days Tally supports, 2000-01-01\.\.2099-12-31|is not a calendar day/);
        }
      }),
      { numRuns: kind === 'text' ? 10 : 25 },
    );
  });
});

describe('tally count and tally put refuse a file argument that names no log file, with exit 2 and in bounded time', () => {
  /** What no log file is: an empty name, blanks, a folder, endless or empty devices. Each alone, or after a good file. */
  const notAFile = fc.constantFrom('', ' ', '.', '..', NO_STACK, '/', '/dev/zero', '/dev/urandom', '/dev/null');

  it.each(['count', 'put'])('tally %s', async (command) => {
    await fc.assert(
      fc.asyncProperty(notAFile, fc.boolean(), async (name, afterGood) => {
        const io = captureIo();
        const started = performance.now();
        const code = await runCli([command, ...(afterGood ? [PLAIN_LOG] : []), name], { io, env: {}, cwd: NO_STACK, now: () => new Date('2026-11-23T12:00:00Z') });

        expect(code).toBe(2);
        expect(io.stderr).toMatch(new RegExp(`^tally ${command}: file .*(the file name is empty|is a folder, not a log file|is a device or socket, not a log file)\n$`));
        expect(performance.now() - started).toBeLessThan(BOUNDED_MS);
      }),
      { numRuns: 30 },
    );
  });
});

describe('tally zone set refuses exactly the zones the read API could not answer in, around today', () => {
  const TODAY = Date.UTC(2026, 10, 23, 12);
  /** Zones to try: whole-hour, sub-hour, Lord Howe, spellings, no zones, and random text. */
  const zone = fc.oneof(
    fc.constantFrom('UTC', 'Etc/UTC', 'america/new_york', 'Europe/Berlin', 'Pacific/Chatham', 'Asia/Tokyo', 'Australia/Lord_Howe', 'Asia/Kolkata', 'Asia/Kathmandu', 'America/St_Johns'),
    fc.constantFrom('', 'Mars/Olympus_Mons', '+05:00', 'GMT+5', 'Etc/GMT+5', 'America/New_York/Extra', 'a'.repeat(100), 'Europe/../etc', 'UTC\u0000'),
    hostileText,
  );

  /** What Intl alone says of `tz` over the half year each side of today (sampled every 3 hours): unknown, sub-hour, or fine. */
  function zoneOracle(tz: string): 'unknown' | 'sub-hour' | 'fine' {
    let format: Intl.DateTimeFormat;
    try {
      if (!/^[A-Za-z]/.test(tz)) return 'unknown';
      format = new Intl.DateTimeFormat('en-CA', { timeZone: tz, timeZoneName: 'longOffset' });
    } catch {
      return 'unknown';
    }
    for (let ms = TODAY - 184 * 86_400_000; ms < TODAY + 185 * 86_400_000; ms += 3 * 3_600_000) {
      const offset = format.formatToParts(new Date(ms)).find((part) => part.type === 'timeZoneName')?.value ?? '';
      if (!/^GMT([+-]\d\d:00)?$/.test(offset)) return 'sub-hour';
    }
    return 'fine';
  }

  it('--zone: exit 2 naming the flag or the sub-hour offset, before any target; a good zone reaches the target', async () => {
    await fc.assert(
      fc.asyncProperty(zone, async (tz) => {
        const io = captureIo();
        const started = performance.now();
        const code = await runCli(['zone', 'set', '--account', 'acme', `--zone=${tz}`], { io, env: {}, cwd: NO_STACK, now: () => new Date(TODAY) });
        const known = tz === '' ? 'unknown' : zoneOracle(tz);

        expect(performance.now() - started).toBeLessThan(BOUNDED_MS);
        expect([code, io.stdout]).toEqual([2, '']);
        if (known === 'fine') expect(io.stderr).toMatch(/^tally zone set: no target/);
        else expect(io.stderr).toMatch(known === 'unknown' ? /^tally zone set: --zone/ : /^tally zone set: time zone .* not a whole number of hours/);
      }),
      { numRuns: 120 },
    );
  });
});

describe('tally count refuses hostile counting settings with exit 2 and a message naming the flag', () => {
  /** Values each setting must refuse (an empty one means "not set", as for the variables). */
  const HOSTILE_SETTINGS: Record<string, fc.Arbitrary<string>> = {
    '--resolver': fc.oneof(
      fc.constantFrom('../../x', 'map:', 'path:(', 'host-map:{', 'key:', '🙂', '\u0000', 'x'.repeat(10_000)),
      fc.string({ minLength: 1, maxLength: 20 }).filter((text) => !/^(host-label|host-map:|path:|key:|distribution:)/.test(text)),
    ),
    '--metrics': fc.constantFrom('{', 'null', '1', '"x"', '[{}]', '[{"name":"BAD NAME"}]', '[', 'x'.repeat(10_000), '🙂'),
    '--sampling-rate': fc.constantFrom('0', '101', '-5', '1.5', '1e309', 'NaN', 'Infinity', 'abc', '9'.repeat(400), '\u0000'),
    '--delimiter': fc.constantFrom('abcdefgh', 'x'.repeat(10_000)),
    '--fields': fc.constantFrom(',,,', 'realtime:', ' , '),
  };

  it.each(Object.keys(HOSTILE_SETTINGS))('tally count %s', async (flag) => {
    await fc.assert(
      fc.asyncProperty(HOSTILE_SETTINGS[flag]!, async (value) => {
        const io = captureIo();
        const started = performance.now();
        const code = await runCli(['count', PLAIN_LOG, `${flag}=${value}`], { io, env: {}, cwd: NO_STACK });

        expect(code).toBe(2);
        expect(io.stderr).toContain(`tally count: ${flag}`);
        expect(io.stderr).not.toMatch(/^\s+at /m);
        expect(performance.now() - started).toBeLessThan(BOUNDED_MS);
      }),
      { numRuns: 15 },
    );
  });
});

describe('every command with a target refuses hostile target and counting flags with exit 2, before any client is made', () => {
  /** A FIFO with no writer: reading it would wait for ever. */
  const FIFO = join(NO_STACK, 'fifo');
  const BIG = join(NO_STACK, 'big.json');
  const NOT_A_STACK = join(NO_STACK, 'not-a-stack.json');
  beforeAll(() => {
    execFileSync('mkfifo', [FIFO]);
    writeFileSync(BIG, `{"table":"t","endpoints":{"dynamodb":"http://127.0.0.1:1"},"pad":"${'x'.repeat(2 * 1024 * 1024)}"}`);
    writeFileSync(NOT_A_STACK, '{"tables":[]}');
  });

  /** What no file of settings is: devices with endless bytes, a pipe with no writer, a folder, a missing file, the wrong file, 2 MB. */
  const notAFile = () => fc.constantFrom('/dev/zero', '/dev/urandom', FIFO, '/', NO_STACK, join(NO_STACK, 'missing.json'), '/etc/passwd', BIG, NOT_A_STACK, '\u0000', 'x'.repeat(5_000));
  const notAUrl = fc.oneof(
    fc.constantFrom('notaurl', 'http://[::', 'file:///etc/passwd', 'javascript:alert(1)', 'ftp://127.0.0.1/', 'http://', '//127.0.0.1:8000', '127.0.0.1:8000', 'data:,x', ' http://127.0.0.1', '🙂', '\u0000', 'x'.repeat(10_000)),
    fc.string({ minLength: 1, maxLength: 20 }).filter((text) => !/^https?:\/\/./i.test(text)),
  );
  /** Hostile values of each target flag, and the variables or words a message about it may name. */
  const HOSTILE_TARGET: Record<string, { values: fc.Arbitrary<string>; names: RegExp }> = {
    '--table': { values: fc.constantFrom('a', '../../x', 'usage table', 'A#DAY', '🙂', '\u0000', 'x'.repeat(256)), names: /TALLY_TABLE/ },
    '--endpoint': { values: notAUrl, names: /--endpoint/ },
    '--queue-url': { values: notAUrl, names: /--queue-url/ },
    '--dlq-url': { values: notAUrl, names: /--dlq-url/ },
    '--region': { values: fc.constantFrom('../x', 'us east 1', 'US-EAST-1', '-', 'us-east-1/', '🙂', '\u0000', 'x'.repeat(1_000), 'us-east-1.evil.example'), names: /--region/ },
    '--bucket': { values: fc.constantFrom('../x', 'a', 'Tally_Logs', 'tally logs', '-x-', 'x'.repeat(64), '🙂', '\u0000'), names: /--bucket/ },
    '--stack': { values: notAFile(), names: /local stack description|no target/ },
    '--prefix': { values: fc.constantFrom('a/../b/', './x/', '..', 'x\n', 'a\u0000/', '\ud800/', 'p'.repeat(1_100), '\u001b[2J'), names: /--prefix must be an S3 key prefix/ },
  };
  const HOSTILE_COUNTING: Record<string, { values: fc.Arbitrary<string>; names: RegExp }> = {
    '--resolver': { values: fc.oneof(notAFile().map((file) => `host-map:${file}`), notAFile().map((file) => `distribution:${file}`)), names: /TALLY_RESOLVER/ },
    '--metrics': { values: fc.constantFrom('/dev/zero', '{', '[{"name":"BAD NAME"}]', 'x'.repeat(10_000)), names: /TALLY_METRICS/ },
  };

  /** Every (command with a target, flag) pair, with valid values for the command's required options. */
  // `stripe check` asks Stripe about the meters before it opens its target (stripe-edges' area): left out.
  const cases = COMMANDS.filter((declaration) => declaration.target !== undefined && commandPath(declaration) !== 'stripe check').flatMap((declaration) => {
    const path = commandPath(declaration);
    const base = declaration.options
      .filter((option) => option.required === true)
      .flatMap((option) => [option.flags.split(' ')[0]!, BASELINE[option.flags.split(' ')[0]!]!]);
    const flags = { ...HOSTILE_TARGET, ...Object.fromEntries(declaration.target!.settings.map((setting) => [`--${setting}`, HOSTILE_COUNTING[`--${setting}`]!])) };
    // `dlq drop` needs messages named before it looks for a target.
    const args = path === 'dlq drop' ? ['--id', 'm-1'] : (ARGUMENTS[path] ?? []);
    return Object.entries(flags).map(([flag, hostile]) => ({ path, flag, hostile, argv: (value: string) => [...path.split(' '), ...args, ...base, `${flag}=${value}`] }));
  });

  it.each(cases.map((c) => [`${c.path} ${c.flag}`, c] as const))('tally %s', async (_name, c) => {
    await fc.assert(
      fc.asyncProperty(c.hostile.values, async (value) => {
        const io = captureIo();
        const started = performance.now();
        // A good table beside the hostile flag, so that only the flag under test can be refused (and a Stripe key: the stripe commands ask for it first).
        const env = { TALLY_STRIPE_API_KEY: 'sk_test_abcdefgh12345678', TALLY_STRIPE_METERS: '{"requests":"cdn_requests"}', ...(c.flag === '--table' || c.flag === '--stack' ? {} : { TALLY_TABLE: 'usage-table' }) };
        const code = await runCli(c.argv(value), { io, env, cwd: NO_STACK, now: () => new Date('2026-11-23T12:00:00Z') });

        expect([code, io.stdout]).toEqual([2, '']);
        expect(io.stderr.startsWith(`tally ${c.path}: `)).toBe(true);
        expect(io.stderr).toMatch(c.hostile.names);
        expect(io.stderr).not.toMatch(/^\s+at /m);
        expect(performance.now() - started).toBeLessThan(BOUNDED_MS);
      }),
      { numRuns: 12 },
    );
  });
});

describe('tally backfill --rate: a pace it accepts is one it can keep', () => {
  /** The longest wait setTimeout honours; a longer one is taken as 1 ms (https://nodejs.org/api/timers.html). */
  const MAX_TIMEOUT_MS = 2 ** 31 - 1;

  it('any number is refused naming --rate, or spaces objects by no more than setTimeout can wait; 0.001 to 1,000,000 a second are accepted', async () => {
    const rate = fc.oneof(
      fc.double({ noNaN: true }).map(String),
      fc.constantFrom('1e-300', '5e-324', '0.0000001', '0.000465', '0.001', '0.0009', '1000000', '1000001', '1e6', '-0', '0'),
    );
    await fc.assert(
      fc.asyncProperty(rate, async (text) => {
        const io = captureIo();
        const code = await runCli(['backfill', '--from', '2026-11-01', '--to', '2026-11-02', `--rate=${text}`], { io, env: {}, cwd: NO_STACK, now: () => new Date('2026-11-23T12:00:00Z') });
        const accepted = /no target/.test(io.stderr);
        const value = Number(text);

        expect(code).toBe(2);
        expect(accepted || /--rate must be a number from 0\.001 to 1,000,000/.test(io.stderr)).toBe(true);
        if (accepted) expect(value > 0 && 1000 / value <= MAX_TIMEOUT_MS).toBe(true);
        if (value >= 0.001 && value <= 1_000_000) expect(accepted).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});

describe('a value option given twice with different values is refused (exit 2), never silently the last', () => {
  /** Every (command, value option that is not repeatable) pair, target and counting flags included, with valid values for the others. */
  const cases = COMMANDS.flatMap((declaration) => {
    const path = commandPath(declaration);
    return optionsOf(declaration)
      .filter((option) => option.flags.includes('<') && option.repeatable !== true)
      .map((option) => {
        const flag = option.flags.split(/[ ,]/).find((part) => part.startsWith('--'))!;
        const base = declaration.options
          .filter((other) => other.required === true && other !== option)
          .flatMap((other) => [other.flags.split(' ')[0]!, BASELINE[other.flags.split(' ')[0]!]!]);
        return { path, flag, argv: (values: string[]) => [...path.split(' '), ...argumentsWithout(path, flag), ...base, ...values.map((value) => `${flag}=${value}`)] };
      });
  });

  it('covers the value options of every command', () => {
    expect(cases.map((c) => `${c.path} ${c.flag}`)).toEqual(expect.arrayContaining(['adjust --delta', 'adjust --day', 'backfill --from', 'count --granularity', 'quota set --monthly', 'reconcile --table']));
  });

  it.each(cases.map((c) => [`${c.path} ${c.flag}`, c] as const))('tally %s', async (_name, c) => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(fc.string({ maxLength: 12 }), { minLength: 2, maxLength: 4 }), async (values) => {
        const io = captureIo();
        const argv = c.argv(values);
        const code = await runCli(argv, { io, env: {}, cwd: NO_STACK, now: () => new Date('2026-11-23T12:00:00Z') });

        expect([code, io.stdout]).toEqual([2, '']);
        expect(io.stderr).toMatch(new RegExp(`^tally ${c.path}: ${c.flag} is given ${values.length} times with different values \\(".*\\): give it once\\n$`, 's'));
      }),
      { numRuns: 5 },
    );
  });

  it('the same value twice is taken as once', async () => {
    const io = captureIo();
    const code = await runCli(['count', PLAIN_LOG, '--granularity', 'hour', '--granularity=hour', '--json'], { io, env: {}, cwd: NO_STACK });

    expect(code).toBe(0);
    expect(JSON.parse(io.stdout).hours.length).toBeGreaterThan(0);
  });
});

describe('a message quotes a hostile value back without control characters and bounded', () => {
  /** Ids and metric names with newlines, escape sequences and lone surrogates, up to 100,000 characters. */
  const hostile = fc.oneof(
    fc.constantFrom('INC-1\n[ok] approved by cfo', 'x\u001b[2J', 'a\ud800b', '\u009b31m', 'A'.repeat(100_000), `${'\n'.repeat(50)}x`),
    fc.tuple(fc.string({ maxLength: 20 }), fc.constantFrom('\n', '\r', '\u001b', '\u0000', '\u007f', '\u0085', '\udfff'), fc.string({ maxLength: 2_000 })).map(([a, bad, b]) => `x${a}${bad}${b}`),
  );
  const cases: [string, (value: string) => string[]][] = [
    ['adjust --id', (value) => ['adjust', '--account', 'acme', '--day', '2026-11-21', '--metric', 'requests', '--delta', '5', '--reason', 'x', `--id=${value}`]],
    ['adjust --metric', (value) => ['adjust', '--account', 'acme', '--day', '2026-11-21', `--metric=${value}`, '--delta', '5', '--reason', 'x', '--id', 'A-1']],
    ['quota set --metric', (value) => ['quota', 'set', '--account', 'acme', `--metric=${value}`, '--monthly', '10']],
    ['adjustments revert <id>', (value) => ['adjustments', 'revert', '--account', 'acme', '--', value]],
    ['adjust --endpoint', (value) => ['adjust', '--account', 'acme', '--day', '2026-11-21', '--metric', 'requests', '--delta', '5', '--reason', 'x', '--id', 'A-1', `--endpoint=${value}`]],
    // A file name: none of these exists (the name is in NO_STACK, where nothing is).
    ['count <file>', (value) => ['count', '--', join(NO_STACK, value.slice(0, 200).replace(/\//g, '_'))]],
    ['put <file>', (value) => ['put', '--', join(NO_STACK, value.slice(0, 200).replace(/\//g, '_'))]],
  ];

  it.each(cases)('tally %s', async (_name, argv) => {
    await fc.assert(
      fc.asyncProperty(hostile, async (value) => {
        const io = captureIo();
        const code = await runCli(argv(value), { io, env: {}, cwd: NO_STACK, now: () => new Date('2026-11-23T12:00:00Z') });

        // tally count names its settings on stdout before it opens a file.
        expect([code, _name === 'count <file>' ? '' : io.stdout]).toEqual([2, '']);
        // One line, ending in its newline: nothing the value held can start another or repaint the screen.
        expect(io.stderr.slice(0, -1)).not.toMatch(/[\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
        expect(io.stderr.length).toBeLessThan(600);
      }),
      { numRuns: 40 },
    );
  });
});

describe('tally token mints only tokens the read API accepts', () => {
  const verifier = new JoseTokenVerifier({ kind: 'secret', secret: TEST_SECRET }, { audience: 'tally-usage-api', issuer: 'tally' });
  /** Account ids, long ones among them, repeated at times. */
  const account = fc.oneof(fc.constantFrom('acme', 'globex'), fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/).filter(isValidAccountId));

  it('any accounts: a token that verifies and grants each once, or exit 2 saying to name fewer (a 30 KB token was minted, then refused by the API)', async () => {
    // A few accounts, one given twice, or hundreds (fast-check's arrays are short unless asked).
    const lists = fc.oneof(
      fc.array(account, { minLength: 1, maxLength: 5 }),
      fc.array(account, { minLength: 1, maxLength: 5 }).map((some) => [...some, some[0]!]),
      fc.array(account, { minLength: 100, maxLength: 1_500, size: 'max' }),
    );
    await fc.assert(
      fc.asyncProperty(lists, fc.boolean(), async (accounts, admin) => {
        const io = captureIo();
        const argv = ['token', ...accounts.flatMap((id) => ['--account', id]), ...(admin ? ['--admin'] : [])];
        const code = await runCli(argv, { io, env: { TALLY_JWT_SECRET: TEST_SECRET }, cwd: NO_STACK });

        if (code === 2) {
          expect([io.stdout, io.stderr]).toEqual(['', expect.stringMatching(/^tally token: the token would be [\d,]+ characters and the read API accepts at most 8,192: name fewer accounts/)]);
          return;
        }
        expect(code).toBe(0);
        const grant = await verifier.verify(io.stdout.trim());
        expect([grant.accounts, grant.admin]).toEqual([[...new Set(accounts)], admin]);
      }),
      // A failing list of hundreds of accounts takes minutes to shrink: the first counterexample is enough.
      { numRuns: 40, endOnFailure: true },
    );
  });
});
