import fc from 'fast-check';
import { alertStandsFor, reachedLevels, type RecordedCrossing } from '../../src/domain/billing/quota';

/** A level alerted (sent) at `used` of `allowance`: `used` reached `level` of it. */
const sentCrossing = fc
  .record({ allowance: fc.integer({ min: 1, max: 10_000_000 }), level: fc.integer({ min: 1, max: 1000 }), extra: fc.integer({ min: 0, max: 10_000_000 }) })
  .map(({ allowance, level, extra }): RecordedCrossing => {
    const used = Math.ceil((level * allowance) / 100) + extra;
    return { account: 'acme', metric: 'requests', month: '2026-11', level, allowance, used, crossedAt: 't', notifiedAt: 'n' };
  });

describe('a sent alert under an allowance changed mid-month', () => {
  it('stands for any lowered allowance: a level still reached is not alerted twice', () => {
    fc.assert(
      fc.property(sentCrossing, fc.double({ min: 0, max: 1, noNaN: true }), (crossing, share) => {
        const lowered = Math.max(1, Math.floor(crossing.allowance * share));
        expect(alertStandsFor(crossing, crossing.level, lowered)).toBe(true);
      }),
    );
  });

  it('stands for a raised allowance exactly when the usage at that crossing reached the level under it too', () => {
    fc.assert(
      fc.property(sentCrossing, fc.integer({ min: 0, max: 10_000_000 }), (crossing, raise) => {
        const raised = crossing.allowance + raise;
        expect(alertStandsFor(crossing, crossing.level, raised)).toBe(reachedLevels(crossing.used, raised, [crossing.level]).length === 1);
      }),
    );
  });

  it('never stands once withdrawn, nor unsent under another allowance', () => {
    fc.assert(
      fc.property(sentCrossing, fc.integer({ min: 1, max: 10_000_000 }), (crossing, other) => {
        expect(alertStandsFor({ ...crossing, withdrawnAt: 'w' }, crossing.level, crossing.allowance)).toBe(false);
        const { notifiedAt: _sent, ...unsent } = crossing;
        expect(alertStandsFor(unsent, crossing.level, other)).toBe(other === crossing.allowance);
      }),
    );
  });
});
