import fc from 'fast-check';
import { decodeContributions, encodeContributions, type Contribution } from '../../src/domain/counters/contributions';
import { hourTotals } from '../../src/domain/hours';

const account = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,11}$/);
const day = fc.constantFrom('2026-11-20', '2026-11-21');
/** Sums of one hour: each metric present is non-zero (an hour keeps only what it counted), at least one. */
const hourSums = fc.record({ requests: fc.integer({ min: 1, max: 10_000 }), bytes: fc.integer({ min: 1, max: 1e9 }), authorization_requests: fc.integer({ min: 1, max: 100 }) }, { requiredKeys: ['requests'] });
const hours = fc.dictionary(fc.integer({ min: 0, max: 23 }).map(String), hourSums, { maxKeys: 24 });
/** A row whose day totals are its hours' totals, or (counted before hours) one without hours. */
const row = fc.oneof(
  fc.record({ account, day, hours }).map(({ account, day, hours }): Contribution => {
    const parsed = Object.fromEntries(Object.entries(hours).map(([hour, sums]) => [Number(hour), sums]));
    return { account, day, metrics: { requests: 0, bytes: 0, authorization_requests: 0, ...hourTotals(parsed) }, hours: parsed };
  }),
  fc.record({ account, day, metrics: fc.record({ requests: fc.nat(10_000), bytes: fc.nat(1e9), authorization_requests: fc.nat(100) }) }),
);
const rows = fc.uniqueArray(row, { selector: (r) => `${r.day}|${r.account}`, maxLength: 12 });

describe("contributions with each object's hours", () => {
  it('decode what they encode, hours and all, and a row without hours decodes without them', () => {
    fc.assert(
      fc.property(rows, (written) => {
        expect(decodeContributions(encodeContributions(written))).toEqual(written);
      }),
    );
  });

  it('keep the hours in one field at the end of the row, so a reader of the older format reads the values it knows', () => {
    const encoded = encodeContributions([{ account: 'acme', day: '2026-11-21', metrics: { requests: 155, bytes: 4331584 }, hours: { 5: { requests: 100, bytes: 3000000 }, 6: { requests: 55, bytes: 1331584 } } }]);

    expect(encoded).toEqual({ metrics: 'requests,bytes', rows: '\n2026-11-21\tacme\t155\t4331584\t05:100,3000000;06:55,1331584\n' });
    const [, , requests, bytes] = encoded.rows.split('\t');
    expect([requests, bytes]).toEqual(['155', '4331584']);
  });
});
