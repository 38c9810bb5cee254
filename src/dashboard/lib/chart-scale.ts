/**
 * The chart's scales, computed here rather than left to the chart library so that a
 * negative adjustment always gets a labelled negative part of the axis, not a dot
 * below a `0` line.
 */

/** A value axis: its range and the values it labels, evenly spaced and including 0. */
export interface ValueScale {
  readonly min: number;
  readonly max: number;
  readonly step: number;
  readonly ticks: readonly number[];
}

/** 1, 2, 2.5 or 5 times a power of ten, at least `rough`; whole (counts are whole). */
function niceStep(rough: number): number {
  if (!(rough > 1)) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const multiples = magnitude >= 10 ? [1, 2, 2.5, 5, 10] : [1, 2, 5, 10];
  const multiple = multiples.find((m) => m * magnitude >= rough) ?? 10;
  return multiple * magnitude;
}

/**
 * The y scale for data between `dataMin` and `dataMax`: from 0 (or the step below the
 * lowest negative value) to a step above the highest value, about `ticks` labels.
 *
 * @example valueScale(-5_000, 2_000_000) // { min: -500000, max: 2500000, step: 500000, ticks: [-500000, 0, ..., 2500000] }
 */
export function valueScale(dataMin: number, dataMax: number, ticks = 5): ValueScale {
  const low = Math.min(0, dataMin);
  const high = Math.max(0, dataMax);
  const step = niceStep((high - low) / ticks);
  const min = low < 0 ? -Math.ceil(-low / step) * step : 0;
  // Headroom above the tallest bar, and an axis of at least one step when all is zero.
  const max = Math.max(step, Math.ceil((high * 1.04) / step) * step);
  const labels: number[] = [];
  for (let value = min; value <= max; value += step) labels.push(value);
  return { min, max, step, ticks: labels };
}

/**
 * Every how many days the x axis labels a day, so that `count` days fit `room` labels:
 * 1, 2, 3, 7, 14, 28, 56 or 91 (labels end on the last day).
 */
export function dayLabelEvery(count: number, room: number): number {
  const fits = Math.max(1, room);
  return [1, 2, 3, 7, 14, 28, 56].find((step) => Math.ceil(count / step) <= fits) ?? 91;
}
