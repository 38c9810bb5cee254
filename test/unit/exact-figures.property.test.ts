import fc from 'fast-check';
import { rankAccounts } from '../../src/domain/reading/account-ranking';
import { firstInexactFigure, InexactFigureError, refuseInexactFigures } from '../../src/domain/reading/exact-figures';
import { buildUsageReport } from '../../src/domain/reading/usage-report';
import { ValidationError } from '../../src/domain/errors';

/**
 * An answer of the read API is refused, never sent rounded, when a figure in it passes
 * 2^53 - 1; one whose every figure is exact is given unchanged.
 */
describe('exact figures', () => {
  const exact = fc.oneof(fc.maxSafeInteger(), fc.double({ min: -1e6, max: 1e6, noNaN: true }));
  const answer = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: 'small' }, exact, fc.string({ maxLength: 5 }), fc.constant(null), tie('object'), tie('array')),
    object: fc.dictionary(fc.stringMatching(/^[a-z]{1,6}$/), tie('value'), { maxKeys: 4 }),
    array: fc.array(tie('value'), { maxLength: 4 }),
  })).object;

  it('an answer of exact figures is given unchanged', () => {
    fc.assert(
      fc.property(answer, (body) => {
        expect(firstInexactFigure(body)).toBeUndefined();
        expect(refuseInexactFigures(body, 'x')).toBe(body);
      }),
    );
  });

  it('one figure past 2^53 - 1 (or not finite), anywhere, is found by its path and refused', () => {
    const inexact = fc.oneof(fc.bigInt({ min: 2n ** 53n, max: 2n ** 70n }).map(Number), fc.constantFrom(2 ** 53, -(2 ** 53), Infinity, NaN));
    fc.assert(
      fc.property(answer, fc.array(fc.stringMatching(/^[a-z]{1,6}$/), { minLength: 1, maxLength: 4 }), inexact, (body, path, figure) => {
        let holder: Record<string, unknown> = body as Record<string, unknown>;
        for (const key of path.slice(0, -1)) holder = (holder[key] = {}) as Record<string, unknown>;
        holder[path.at(-1)!] = figure;

        expect(firstInexactFigure(body)).toBe(path.join('.'));
        expect(() => refuseInexactFigures(body, 'usage of acme')).toThrow(new RegExp(`^usage of acme: ${path.join('\\.')} adds up past 9,007,199,254,740,991`));
      }),
    );
  });

  it('a year of 10^14 + 1 bytes a day is refused at the total, a ValidationError (400, exit 2); the sum a double gives is not the count', () => {
    const days = Array.from({ length: 100 }, (_, i) => new Date(Date.UTC(2029, 0, 1 + i)).toISOString().slice(0, 10));
    const report = buildUsageReport({
      accountId: 'acme',
      from: days[0]!,
      to: days.at(-1)!,
      granularity: 'month',
      records: days.map((day) => ({ kind: 'usage' as const, day, shard: 0, metrics: { requests: 1, bytes: 100_000_000_000_001 } })),
    });
    expect(BigInt(report.totals.bytes!)).not.toBe(100n * 100_000_000_000_001n);

    expect(() => refuseInexactFigures(report, 'usage')).toThrow(InexactFigureError);
    expect(() => refuseInexactFigures(report, 'usage')).toThrow(ValidationError);
    expect(firstInexactFigure(report)).toBe('totals.bytes');
    // Each month on its own is exact: the refusal's advice answers.
    for (const month of report.months!) expect(firstInexactFigure(month)).toBeUndefined();
  });

  it("the ranking's sum over every account is refused when it passes, though each account's is exact", () => {
    const rows = Array.from({ length: 3 }, (_, i) => ({ accountId: `a${i}`, totals: { requests: 1, bytes: 4_000_000_000_000_001 } }));
    const ranking = rankAccounts({ from: '2029-01-01', to: '2029-01-31', metric: 'requests', metricNames: ['requests', 'bytes'], rows } as Parameters<typeof rankAccounts>[0]);
    expect(firstInexactFigure(ranking)).toBe('totals.bytes');
  });
});

describe('the advice of a refusal', () => {
  it("a day's own figure past exact is not sent to a shorter range", () => {
    const report = { days: [{ day: '2029-01-01', metrics: { bytes: 2 ** 60 } }], totals: { bytes: 2 ** 60 } };
    expect(() => refuseInexactFigures(report, 'usage of acme')).toThrow(/days\[0\]\.metrics\.bytes adds up past .*one day's own counter/);
    expect(() => refuseInexactFigures({ totals: { bytes: 2 ** 60 } }, 'usage of acme')).toThrow(/totals\.bytes .*ask for a shorter range/);
  });
});
