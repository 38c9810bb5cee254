import fc from 'fast-check';
import { dayLabelEvery, valueScale } from '../../src/dashboard/lib/chart-scale';

describe('dashboard chart scale', () => {
  it('gives a negative adjustment a labelled negative part of the axis', () => {
    expect(valueScale(-5_000, 2_000_000)).toEqual({ min: -500_000, max: 2_500_000, step: 500_000, ticks: [-500_000, 0, 500_000, 1_000_000, 1_500_000, 2_000_000, 2_500_000] });
    expect(valueScale(-150_000, 828_000).ticks).toEqual([-200_000, 0, 200_000, 400_000, 600_000, 800_000, 1_000_000]);
  });

  it('starts at 0 when nothing is negative, and shows one step when all is zero', () => {
    expect(valueScale(0, 237)).toEqual({ min: 0, max: 250, step: 50, ticks: [0, 50, 100, 150, 200, 250] });
    expect(valueScale(0, 0)).toEqual({ min: 0, max: 1, step: 1, ticks: [0, 1] });
    expect(valueScale(0, 3).step).toBe(1);
  });

  it('always holds the data, labels 0 and uses whole steps', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e12, max: 0 }), fc.integer({ min: 0, max: 1e12 }), (low, high) => {
        const scale = valueScale(low, high);
        expect(scale.min).toBeLessThanOrEqual(low);
        expect(scale.max).toBeGreaterThanOrEqual(high);
        expect(scale.ticks).toContain(0);
        expect(Number.isInteger(scale.step)).toBe(true);
        expect(scale.ticks.length).toBeLessThanOrEqual(12);
        if (low < 0) expect(scale.ticks[0]).toBeLessThan(0);
      }),
    );
  });

  it('labels fewer days as they crowd', () => {
    expect(dayLabelEvery(7, 15)).toBe(1);
    expect(dayLabelEvery(30, 15)).toBe(2);
    expect(dayLabelEvery(366, 15)).toBe(28);
    expect(dayLabelEvery(366, 0)).toBe(91);
  });
});
