/**
 * Where the parts of the month-to-date bar go. The bar runs to 100% of the allowance,
 * or further when usage, the projection or a level goes past it, but never past
 * {@link MAX_BAR_SCALE}: with a huge overage (usage at 1e8 %) the 80% and 100% marks
 * would otherwise collapse onto the bar's left edge. What runs past the scale is drawn
 * at the end and flagged as overflow.
 */

/** The furthest the bar reaches, in percent of the allowance. */
export const MAX_BAR_SCALE = 200;

export interface QuotaBarLayout {
  /** Percent of the allowance at the bar's right end. */
  readonly scale: number;
  /** Positions along the bar, in percent of its width (0 to 100). */
  readonly fill: number;
  readonly projection: number;
  readonly marks: readonly { readonly level: number; readonly left: number }[];
  /** Levels past the scale (not drawn as marks). */
  readonly beyond: readonly number[];
  /** True when usage runs past the bar's end. */
  readonly overflow: boolean;
  /** True when the projection runs past the bar's end. */
  readonly projectionOverflow: boolean;
}

/** The layout of a bar for `percent` used, `projectedPercent` projected and the alert `levels`. */
export function quotaBarLayout(percent: number, projectedPercent: number, levels: readonly number[]): QuotaBarLayout {
  const scale = Math.min(MAX_BAR_SCALE, Math.max(100, percent, projectedPercent, ...levels));
  const at = (value: number) => Math.min(100, Math.max(0, (value / scale) * 100));
  return {
    scale,
    fill: at(percent),
    projection: at(projectedPercent),
    marks: levels.filter((level) => level <= scale).map((level) => ({ level, left: at(level) })),
    beyond: levels.filter((level) => level > scale),
    overflow: percent > scale,
    projectionOverflow: projectedPercent > scale,
  };
}
