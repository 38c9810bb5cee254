import { Readable } from 'node:stream';
import { backfillHours, hoursBackfillDays, type HoursBackfillDeps } from '../../src/app/ingest/backfill-hours';
import type { BackfilledHoursStore, DayLedger, LedgerObjectOfDay, LogSource, UsageReader } from '../../src/app/ports';
import { logText } from '../../src/adapters/logs/log-text';
import { parseResolverSpec } from '../../src/domain/logs/account-resolver';
import type { Contribution } from '../../src/domain/counters/contributions';
import { PoisonObjectError, ValidationError } from '../../src/domain/errors';
import { hoursCoverDay, type HourSums } from '../../src/domain/hours';
import { MAX_HOURS_BACKFILL_DAYS, type BackfilledHours } from '../../src/domain/counters/hours-backfill';
import type { LogObjectRef } from '../../src/domain/counters/log-object';
import type { UsageRecord } from '../../src/domain/reading/usage-records';
import { captureIo, tallyCommand } from '../support/cli';

/**
 * `backfillHours` on in-memory ports: what it writes, what it reports, and that it only
 * ever reads the counters. Through DynamoDB Local and S3: test/integration/backfill-hours.test.ts.
 */
const DAY = '2026-11-21';

class MemoryBackfilledHours implements BackfilledHoursStore {
  readonly items = new Map<string, BackfilledHours>();
  writes = 0;
  async read(account: string, day: string) {
    return this.items.get(`${account}|${day}`);
  }
  async write(account: string, day: string, item: BackfilledHours) {
    this.writes++;
    const earlier = this.items.get(`${account}|${day}`);
    if (earlier !== undefined && earlier.objects > item.objects) return 'superseded' as const;
    this.items.set(`${account}|${day}`, item);
    return 'written' as const;
  }
}

/** Counters as shards; reads are counted, and there is no way to write them. */
class Counters implements UsageReader {
  readonly shards = new Map<string, Record<string, number>>();
  /** The shards' hour attributes, by the same keys (none when absent: counted before hours). */
  readonly hours = new Map<string, HourSums>();
  reads = 0;
  async read(account: string, from: string, to: string) {
    this.reads++;
    const records: UsageRecord[] = [];
    for (const [key, metrics] of this.shards) {
      const [a, day] = key.split('|');
      const hours = this.hours.get(key);
      if (a === account && day! >= from && day! <= to) records.push({ kind: 'usage', day: day!, shard: 0, metrics, ...(hours === undefined ? {} : { hours }) });
    }
    return { records, requests: 1 };
  }
}

class Ledger implements DayLedger {
  readonly days = new Map<string, LedgerObjectOfDay[]>();
  async objectsOn(day: string, account?: string) {
    return (this.days.get(day) ?? [])
      .map((entry) => ({ ...entry, contributions: entry.contributions.filter((row) => account === undefined || row.account === account) }))
      .filter((entry) => account === undefined || entry.contributions.length > 0);
  }
}

class Source implements LogSource {
  readonly objects = new Map<string, string>();
  opened = 0;
  async open(ref: LogObjectRef) {
    this.opened++;
    const body = this.objects.get(ref.key);
    if (body === undefined) throw new PoisonObjectError(ref.key, 'object does not exist');
    return { etag: ref.etag, content: { kind: 'text' as const, text: logText(Readable.from([Buffer.from(body)]), ref.key) } };
  }
  async etagOf() {
    return 'etag';
  }
}

const ref = (key: string): LogObjectRef => ({ bucket: 'logs', key, etag: `e-${key}` });
const row = (account: string, metrics: Record<string, number>, hours?: HourSums): Contribution => ({ account, day: DAY, metrics, ...(hours === undefined ? {} : { hours }) });

function setup() {
  const ledger = new Ledger();
  const counters = new Counters();
  const store = new MemoryBackfilledHours();
  const source = new Source();
  const deps: HoursBackfillDeps = {
    ledger,
    reader: counters,
    store,
    source,
    settings: { resolver: parseResolverSpec('host-label'), metricRules: [] },
    clock: () => new Date('2026-11-27T12:00:00Z'),
  };
  return { ledger, counters, store, source, deps };
}

/** Two objects of acme's day whose ledger rows carry their hours (counted with hours), and the counters they made. */
function countedWithHours() {
  const s = setup();
  s.ledger.days.set(DAY, [
    { object: ref('a'), contributions: [row('acme', { requests: 3, bytes: 30 }, { 1: { requests: 1, bytes: 10 }, 5: { requests: 2, bytes: 20 } })], unresolved: [] },
    { object: ref('b'), contributions: [row('acme', { requests: 4, bytes: 40 }, { 5: { requests: 4, bytes: 40 } })], unresolved: [] },
  ]);
  s.counters.shards.set(`acme|${DAY}`, { requests: 7, bytes: 70 });
  return s;
}

describe('tally backfill --hours (in memory)', () => {
  it("records the shards' hours it read with the counters (atShards), and writes again an item that predates them", async () => {
    const { store, counters, deps } = countedWithHours();
    // Object a's hour 01 reached the shards with hours; the rest was counted before hours.
    counters.hours.set(`acme|${DAY}`, { 1: { requests: 1, bytes: 10 } });
    const hours = { 1: { requests: 1, bytes: 10 }, 5: { requests: 6, bytes: 60 } };
    store.items.set(`acme|${DAY}`, { hours, objects: 2, computedAt: '2026-11-01T00:00:00.000Z' });

    const report = await backfillHours(deps, { from: DAY, to: DAY });

    expect(report).toMatchObject({ written: 1, unchanged: 0, reported: [] });
    expect(store.items.get(`acme|${DAY}`)).toEqual({ hours, objects: 2, computedAt: '2026-11-27T12:00:00.000Z', atShards: { 1: { requests: 1, bytes: 10 } } });
    expect(await backfillHours(deps, { from: DAY, to: DAY })).toMatchObject({ written: 0, unchanged: 1 });
  });

  it("writes an account-day's hours whole, summed over its objects, covering its counters exactly", async () => {
    const { store, deps } = countedWithHours();

    const report = await backfillHours(deps, { from: DAY, to: DAY });

    expect(report).toMatchObject({ days: 1, objects: 2, objectsRead: 0, accountDays: 1, written: 1, unchanged: 0, reported: [] });
    expect(store.items.get(`acme|${DAY}`)).toEqual({ hours: { 1: { requests: 1, bytes: 10 }, 5: { requests: 6, bytes: 60 } }, objects: 2, computedAt: '2026-11-27T12:00:00.000Z', atShards: {} });
    expect(hoursCoverDay({ requests: 7, bytes: 70 }, store.items.get(`acme|${DAY}`)!.hours)).toBe(true);
  });

  it('a second run writes nothing and reports the day unchanged', async () => {
    const { store, deps } = countedWithHours();
    await backfillHours(deps, { from: DAY, to: DAY });
    const first = store.items.get(`acme|${DAY}`);

    const again = await backfillHours({ ...deps, clock: () => new Date('2026-11-28T00:00:00Z') }, { from: DAY, to: DAY });

    expect(again).toMatchObject({ written: 0, unchanged: 1, reported: [] });
    expect(store.writes).toBe(1);
    expect(store.items.get(`acme|${DAY}`)).toBe(first);
  });

  it('reports a day whose objects do not add up to its counters, and leaves an earlier item as it was', async () => {
    const { store, counters, deps } = countedWithHours();
    await backfillHours(deps, { from: DAY, to: DAY });
    const earlier = store.items.get(`acme|${DAY}`);
    counters.shards.set(`acme|${DAY}`, { requests: 9, bytes: 70 });

    const report = await backfillHours(deps, { from: DAY, to: DAY });

    expect(report.written).toBe(0);
    expect(report.reported).toEqual([{ account: 'acme', day: DAY, objects: 2, reason: expect.stringContaining('counters hold more'), gap: { bytes: 0, requests: 2 } }]);
    expect(store.items.get(`acme|${DAY}`)).toBe(earlier);
  });

  it('reports an account with counters on the day and no object in the ledger', async () => {
    const { counters, store, deps } = setup();
    counters.shards.set(`acme|${DAY}`, { requests: 2 });

    const report = await backfillHours({ ...deps, accounts: { accountsOn: async () => ['acme'] } }, { from: DAY, to: DAY });

    expect(report.reported).toMatchObject([{ account: 'acme', objects: 0, gap: { requests: 2 } }]);
    expect(store.writes).toBe(0);
  });

  it('reports objects it cannot read again, whose recount differs from the ledger, or with unresolved increments', async () => {
    const { ledger, counters, source, store, deps } = setup();
    source.objects.set('changed', '#Fields: date time sc-bytes x-host-header\n2026-11-21\t05:00:01\t10\tglobex.x.com\n');
    ledger.days.set(DAY, [
      { object: ref('gone'), contributions: [row('acme', { requests: 1, bytes: 1 })], unresolved: [] },
      { object: ref('changed'), contributions: [row('globex', { requests: 2, bytes: 10 })], unresolved: [] },
      { object: ref('open'), contributions: [row('initech', { requests: 1, bytes: 1 }, { 3: { requests: 1, bytes: 1 } })], unresolved: ['initech'] },
    ]);
    counters.shards.set(`acme|${DAY}`, { requests: 1, bytes: 1 });
    counters.shards.set(`globex|${DAY}`, { requests: 2, bytes: 10 });
    counters.shards.set(`initech|${DAY}`, { requests: 1, bytes: 1 });

    const report = await backfillHours(deps, { from: DAY, to: DAY });

    expect(report.reported.map((r) => [r.account, r.reason])).toEqual([
      ['acme', expect.stringContaining('s3://logs/gone: not read again (PoisonObjectError')],
      ['globex', expect.stringContaining('counts requests 1, bytes 10 now, the ledger recorded requests 2, bytes 10')],
      ['initech', expect.stringContaining('unresolved increments')],
    ]);
    expect(report.objectsRead).toBe(2);
    expect(store.writes).toBe(0);
  });

  it('names an object counted again without hours (lines with no time of day), rather than blaming the ledger', async () => {
    const { ledger, counters, source, store, deps } = setup();
    source.objects.set('timeless', '#Fields: date sc-bytes x-host-header\n2026-11-21\t10\tacme.x.com\n');
    ledger.days.set(DAY, [{ object: ref('timeless'), contributions: [row('acme', { requests: 1, bytes: 10 })], unresolved: [] }]);
    counters.shards.set(`acme|${DAY}`, { requests: 1, bytes: 10 });

    const report = await backfillHours(deps, { from: DAY, to: DAY });

    expect(report.reported).toEqual([
      { account: 'acme', day: DAY, objects: 1, reason: expect.stringContaining('s3://logs/timeless: counted again without hours'), gap: { bytes: 10, requests: 1 } },
    ]);
    expect(report.reported[0]!.reason).not.toContain('counters hold more');
    expect(store.writes).toBe(0);
  });

  it("with --account, recounts that account's rows only", async () => {
    const { ledger, counters, store, deps } = countedWithHours();
    ledger.days.get(DAY)!.push({ object: ref('c'), contributions: [row('globex', { requests: 1 }, { 2: { requests: 1 } })], unresolved: [] });
    counters.shards.set(`globex|${DAY}`, { requests: 1 });

    const report = await backfillHours(deps, { from: DAY, to: DAY, account: 'globex' });

    expect(report).toMatchObject({ objects: 1, accountDays: 1, written: 1 });
    expect([...store.items.keys()]).toEqual([`globex|${DAY}`]);
  });

  it('a dry run writes nothing', async () => {
    const { store, deps } = countedWithHours();

    expect(await backfillHours(deps, { from: DAY, to: DAY, dryRun: true })).toMatchObject({ dryRun: true, written: 1 });
    expect(store.writes).toBe(0);
  });

  it('keeps the hours another run computed from more objects', async () => {
    const { store, deps } = countedWithHours();
    store.items.set(`acme|${DAY}`, { hours: { 1: { requests: 8 } }, objects: 3, computedAt: 'x' });

    expect(await backfillHours(deps, { from: DAY, to: DAY })).toMatchObject({ written: 0, superseded: 1 });
    expect(store.items.get(`acme|${DAY}`)!.objects).toBe(3);
  });

  it(`refuses more than ${MAX_HOURS_BACKFILL_DAYS} days, or a range that ends before it starts`, () => {
    expect(hoursBackfillDays('2026-01-01', '2026-01-31')).toHaveLength(31);
    expect(() => hoursBackfillDays('2026-01-01', '2026-02-01')).toThrow(new ValidationError('2026-01-01..2026-02-01 is 32 days; tally backfill --hours recomputes at most 31 days a run (run it once per month)'));
    expect(() => hoursBackfillDays('2026-01-02', '2026-01-01')).toThrow(ValidationError);
  });

  it.each([
    [['--hours', '--from', '2026-01-01', '--to', '2026-02-01'], 'is 32 days; tally backfill --hours recomputes at most 31 days a run'],
    [['--hours', '--inline', '--from', DAY, '--to', DAY], '--inline does not go with --hours'],
    [['--from', DAY, '--to', DAY, '--account', 'acme'], '--account goes with --hours only'],
    [['--hours', '--from', DAY, '--to', DAY, '--account', 'ACME!'], '--account "ACME!"'],
  ])('tally backfill %j exits 2 before reaching anything', async (argv, message) => {
    const io = captureIo();
    expect(await tallyCommand('backfill')(argv, io, {}, '/nonexistent')).toBe(2);
    expect(io.stderr).toContain(message);
    expect(io.stdout).toBe('');
  });
});
