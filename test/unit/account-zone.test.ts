import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLog } from '../../src/app/log';
import { handleUsageApiRequest, type UsageApiDeps } from '../../src/app/reading/usage-api';
import { JoseTokenVerifier, mintToken } from '../../src/adapters/http/jwt-tokens';
import { parseAccountZone, storedZone, ZONE_CHECK_DAYS } from '../../src/domain/reading/account-zone';
import { addDays } from '../../src/domain/days';
import { ValidationError } from '../../src/domain/errors';
import { usageApiEvent } from '../support/api-events';
import { captureIo, tallyCommand } from '../support/cli';
import { TEST_SECRET } from '../support/tokens';

/**
 * The bounds of `tally zone set` (an account's billing zone) and the report field it
 * feeds: the zone is refused exactly as the read API refuses `tz`, before any target is
 * opened; the report names a stored zone and changes nothing else.
 */

const NO_STACK = mkdtempSync(join(tmpdir(), 'tally-zone-'));
afterAll(() => rmSync(NO_STACK, { recursive: true, force: true }));
const TODAY = '2026-11-23';
const NOW = () => new Date(`${TODAY}T12:00:00Z`);
const zone = tallyCommand('zone');

const reads: string[] = [];
let stored: string | undefined;
const deps: UsageApiDeps = {
  reader: { read: async (account) => (reads.push(`usage ${account}`), { records: [], requests: 1 }) },
  zones: { zoneOf: async (account) => (reads.push(`zone ${account}`), stored) },
  verifier: new JoseTokenVerifier({ kind: 'secret', secret: TEST_SECRET }, { audience: 'tally-usage-api', issuer: 'tally' }),
  log: silentLog,
  metricNames: ['requests', 'bytes'],
  corsOrigins: [],
  clock: NOW,
};

async function api(query: Record<string, string>, accountId = 'acme', accounts = ['acme']) {
  reads.length = 0;
  const token = await mintToken(TEST_SECRET, { accounts, ttlSeconds: 300 });
  const response = await handleUsageApiRequest(usageApiEvent({ accountId, token, query }), deps);
  return { status: response.statusCode, body: JSON.parse(response.body ?? '{}'), reads: [...reads] };
}

async function run(argv: string[]) {
  const io = captureIo();
  const code = await zone(argv, io, {}, NO_STACK, NOW);
  return { code, stdout: io.stdout, stderr: io.stderr };
}

describe('parseAccountZone: what an account may be given', () => {
  it("accepts a zone the API accepts, spelled as the API's timeZone spells it", () => {
    expect(parseAccountZone('america/new_york', '--zone', TODAY)).toBe('America/New_York');
    expect(parseAccountZone('Europe/Berlin', '--zone', TODAY)).toBe('Europe/Berlin');
    expect(parseAccountZone('Etc/UTC', '--zone', TODAY)).toBe('UTC');
  });

  it.each([
    ['Asia/Kolkata', '+05:30'],
    ['Asia/Kathmandu', '+05:45'],
    // +10:30 in its winter, +11 in summer: refused whatever half of the year today is in.
    ['Australia/Lord_Howe', '+10:30'],
  ])('refuses %s (%s) with the reason the API gives for tz', async (name, offset) => {
    const refusal = () => parseAccountZone(name, '--zone', TODAY);
    expect(refusal).toThrow(ValidationError);
    expect(refusal).toThrow(new RegExp(`^time zone ${name} is \\${offset} from UTC on \\d{4}-\\d{2}-\\d{2}: Tally keeps usage by whole UTC hours`));
    const answer = await api({ from: addDays(TODAY, -ZONE_CHECK_DAYS), to: addDays(TODAY, ZONE_CHECK_DAYS - 1), tz: name });
    expect(answer.status).toBe(400);
    const reason = (text: string) => text.replace(/ on \d{4}-\d{2}-\d{2}:/, ' on <day>:');
    expect(reason(messageOf(refusal))).toBe(reason(answer.body.message));
  });

  it('refuses a zone whose offset is whole hours today but not within half a year (Lord Howe in its summer)', () => {
    expect(() => parseAccountZone('Australia/Lord_Howe', '--zone', '2026-01-15')).toThrow(/not a whole number of hours/);
  });

  it('refuses an unknown zone, no zone name, empty text and a name over 64 characters, naming the flag as the API names tz', async () => {
    for (const text of ['Mars/Olympus_Mons', 'Europe/../etc', '+05:00', 'a'.repeat(65), 'UTC\u0000']) {
      const refusal = () => parseAccountZone(text, '--zone', TODAY);
      expect(refusal).toThrow(/^--zone(:| must)/);
      const answer = await api({ from: TODAY, to: TODAY, tz: text });
      expect(answer.status).toBe(400);
      expect(messageOf(refusal).replace('--zone', '')).toBe(answer.body.message.replace('query parameter "tz"', ''));
    }
    expect(() => parseAccountZone('', '--zone', TODAY)).toThrow(/--zone must name an IANA time zone .* tally zone clear/);
  });

  it('checks the half year each side without leaving the supported days', () => {
    expect(parseAccountZone('America/New_York', '--zone', '2099-12-31')).toBe('America/New_York');
    expect(parseAccountZone('America/New_York', '--zone', '2000-01-01')).toBe('America/New_York');
  });

  it('reads a stored name back only when the platform still knows it', () => {
    expect(storedZone('Europe/Berlin')).toBe('Europe/Berlin');
    expect([storedZone(undefined), storedZone(''), storedZone('Mars/Base'), storedZone('x'.repeat(100))]).toEqual([undefined, undefined, undefined, undefined]);
  });
});

describe('tally zone: bounds before any target', () => {
  it('set refuses a sub-hour zone with exit 2 and the reason, before looking for a table', async () => {
    const result = await run(['set', '--account', 'acme', '--zone', 'Asia/Kolkata']);
    expect([result.code, result.stdout]).toEqual([2, '']);
    expect(result.stderr).toMatch(/^tally zone set: time zone Asia\/Kolkata is \+05:30 from UTC on 2026-05-24: /);
    expect(result.stderr).not.toMatch(/no target/);
  });

  it('set refuses an unknown or empty zone, a missing zone and a bad account with exit 2', async () => {
    const results = await Promise.all([
      run(['set', '--account', 'acme', '--zone', 'Mars/Base']),
      run(['set', '--account', 'acme', '--zone', '']),
      run(['set', '--account', 'acme']),
      run(['set', '--account', 'ac me', '--zone', 'Europe/Berlin']),
      run(['show', '--account', '../x']),
      run(['clear']),
    ]);
    expect(results.map((r) => r.code)).toEqual([2, 2, 2, 2, 2, 2]);
    expect(results.map((r) => r.stdout)).toEqual(['', '', '', '', '', '']);
    expect(results[0]!.stderr).toBe('tally zone set: --zone: unknown time zone "Mars/Base"; give an IANA zone such as Europe/Berlin or UTC\n');
    expect(results[2]!.stderr).toMatch(/--zone <name> is required/);
    expect(results[3]!.stderr).toMatch(/--account "ac me"/);
  });

  it('set with a good zone gets past the zone to the target (here: none)', async () => {
    const result = await run(['set', '--account', 'acme', '--zone', 'europe/berlin']);
    expect(result.stderr).toMatch(/^tally zone set: no target/);
  });
});

describe('the usage report names the account zone', () => {
  afterEach(() => {
    stored = undefined;
  });

  it('carries accountTimeZone when one is stored; tz still defaults to UTC', async () => {
    stored = 'America/New_York';
    const answer = await api({ from: '2026-11-01', to: '2026-11-02' });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ timeZone: 'UTC', accountTimeZone: 'America/New_York' });
    expect(answer.body.days.map((d: { day: string }) => d.day)).toEqual(['2026-11-01', '2026-11-02']);
    expect(answer.reads).toEqual(['usage acme', 'zone acme']);
  });

  it('has no accountTimeZone when none is stored', async () => {
    const answer = await api({ from: '2026-11-01', to: '2026-11-01', tz: 'Europe/Berlin' });
    expect(answer.body.timeZone).toBe('Europe/Berlin');
    expect('accountTimeZone' in answer.body).toBe(false);
  });

  it("a tenant cannot read another account's zone: 404 before any read", async () => {
    stored = 'Europe/Berlin';
    const answer = await api({ from: '2026-11-01', to: '2026-11-01' }, 'globex', ['acme']);
    expect([answer.status, answer.reads]).toEqual([404, []]);
  });

  it('a refused query reads no zone', async () => {
    stored = 'Europe/Berlin';
    const answer = await api({ from: '2026-11-01', to: '2026-11-01', tz: 'Asia/Kolkata' });
    expect([answer.status, answer.reads]).toEqual([400, []]);
  });
});

function messageOf(refusal: () => unknown): string {
  try {
    refusal();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('not refused');
}
