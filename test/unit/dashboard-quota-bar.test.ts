import { MAX_BAR_SCALE, quotaBarLayout } from '../../src/dashboard/lib/quota-bar';

describe("the month-to-date bar's layout", () => {
  it('runs to 100% while usage, projection and levels stay within the allowance', () => {
    const layout = quotaBarLayout(50, 90, [80, 100]);

    expect(layout).toMatchObject({ scale: 100, fill: 50, projection: 90, overflow: false, projectionOverflow: false, beyond: [] });
    expect(layout.marks).toEqual([{ level: 80, left: 80 }, { level: 100, left: 100 }]);
  });

  it('stretches for a moderate overage so the 100% mark stays inside', () => {
    const layout = quotaBarLayout(150, 160, [80, 100, 120]);

    expect(layout.scale).toBe(160);
    expect(layout.marks.map((mark) => mark.left)).toEqual([50, 62.5, 75]);
    expect(layout.overflow).toBe(false);
  });

  it('keeps the 80% and 100% marks where they can be seen under a huge overage, and flags the overflow', () => {
    const layout = quotaBarLayout(100_000_000, 200_000_000, [80, 100, 500]);

    expect(layout.scale).toBe(MAX_BAR_SCALE);
    expect(layout.marks).toEqual([{ level: 80, left: 40 }, { level: 100, left: 50 }]);
    expect(layout.beyond).toEqual([500]);
    expect([layout.fill, layout.projection, layout.overflow, layout.projectionOverflow]).toEqual([100, 100, true, true]);
  });
});
