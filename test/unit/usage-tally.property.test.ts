import fc from 'fast-check';
import { hoursCoverDay } from '../../src/domain/hours';
import { UsageTally } from '../../src/domain/logs/usage-tally';

const NAMES = ['requests', 'bytes', 'errors'];

/** One addition: an account-day, the hour (undefined: a line of no known time) and the values. */
const addition = fc.record({
  account: fc.constantFrom('acme', 'beta', 'unattributed'),
  day: fc.constantFrom('2026-11-20', '2026-11-21'),
  hour: fc.option(fc.integer({ min: 0, max: 23 }), { nil: undefined }),
  values: fc.tuple(fc.nat(5), fc.nat(1_000_000), fc.nat(3)),
});
type Addition = typeof addition extends fc.Arbitrary<infer T> ? T : never;

function tallyOf(additions: readonly Addition[]): UsageTally {
  const tally = new UsageTally(NAMES);
  for (const { account, day, hour, values } of additions) {
    const row = tally.row(account, day);
    if (hour === undefined) tally.addTo(row, values);
    else tally.addAt(row, hour, values);
  }
  return tally;
}

/** The hours of each account-day by brute force: every timed addition summed by hour, zeros left out. */
function recount(additions: readonly Addition[]): Map<string, Record<number, Record<string, number>>> {
  const rows = new Map<string, Record<number, Record<string, number>>>();
  for (const { account, day, hour, values } of additions) {
    const hours = rows.get(`${account} ${day}`) ?? {};
    rows.set(`${account} ${day}`, hours);
    if (hour === undefined) continue;
    values.forEach((value, i) => {
      if (value !== 0) (hours[hour] ??= {})[NAMES[i]!] = (hours[hour]?.[NAMES[i]!] ?? 0) + value;
    });
  }
  return rows;
}

describe('a usage tally by the hour', () => {
  it('keeps each row’s hours equal to a recount by hour, covering the day exactly when every addition had an hour', () => {
    fc.assert(
      fc.property(fc.array(addition, { maxLength: 60 }), (additions) => {
        const usage = tallyOf(additions).usage();
        const expected = recount(additions);
        for (const row of usage) {
          expect(row.hours).toEqual(expected.get(`${row.account} ${row.day}`));
          const untimed = additions.some((a) => a.account === row.account && a.day === row.day && a.hour === undefined && a.values.some((v) => v !== 0));
          expect(hoursCoverDay(row.metrics, row.hours)).toBe(!untimed);
        }
      }),
    );
  });

  it('merges and re-adds rows with their hours', () => {
    fc.assert(
      fc.property(fc.array(addition, { maxLength: 30 }), fc.array(addition, { maxLength: 30 }), (first, second) => {
        const merged = tallyOf(first);
        merged.merge(tallyOf(second));
        const readded = new UsageTally(NAMES);
        for (const row of [...tallyOf(first).usage(), ...tallyOf(second).usage()]) readded.addUsage(row);
        const expected = tallyOf([...first, ...second]).usage();
        expect(merged.usage()).toEqual(expected);
        expect(readded.usage()).toEqual(expected);
      }),
    );
  });

  it('gives the rows of whole days as usage gives them, without their hours', () => {
    fc.assert(
      fc.property(fc.array(addition, { maxLength: 60 }), (additions) => {
        const tally = tallyOf(additions);
        expect(tally.dayUsage()).toEqual(tally.usage().map(({ account, day, metrics }) => ({ account, day, metrics })));
      }),
    );
  });

  it('adds an account-day\'s 25 slots of sums as their hours (slot 0: no hour) would be added one by one', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(1_000_000), { minLength: 25 * NAMES.length, maxLength: 25 * NAMES.length }), fc.nat(7), (values, before) => {
        const slots = new Float64Array(before + values.length).fill(-1);
        slots.set(values, before);
        const bulk = new UsageTally(NAMES);
        const requests = bulk.addSlots(bulk.row('acme', '2026-11-21'), slots, before);
        const one = new UsageTally(NAMES);
        const row = one.row('acme', '2026-11-21');
        for (let slot = 0; slot < 25; slot++) {
          const sums = values.slice(slot * NAMES.length, (slot + 1) * NAMES.length);
          if (slot === 0) one.addTo(row, sums);
          else one.addAt(row, slot - 1, sums);
        }
        expect(bulk.usage()).toEqual(one.usage());
        expect(requests).toBe(values.filter((_, i) => i % NAMES.length === 0).reduce((a, b) => a + b, 0));
      }),
    );
  });

  it('refuses an hour outside 0..23', () => {
    const tally = new UsageTally(NAMES);
    const row = tally.row('acme', '2026-11-21');
    for (const hour of [-1, 24, 1.5, Number.NaN]) expect(() => tally.addAt(row, hour, [1, 0, 0])).toThrow(RangeError);
  });
});
