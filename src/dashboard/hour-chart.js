// Bars per hour (uPlot): the hours of one day (the hours card) or of a range of up to 7
// days (the range chart's "per hour"). Each bar sits at its hour's instant, labelled with
// the local time its `start` names, so a daylight-saving day has 23 or 25 bars and the
// hour that occurs twice is labelled with its offset. Hours whose metrics are null (not
// known: counted before hours existed) are gaps, never zeros.
import { valueScale } from './lib/chart-scale.js';
import { axisValue, metricLabel, readableValue, shortDay } from './lib/format.js';
import { hourLabelEvery, hourLabels, parseHourStart } from './lib/time-zone.js';
import { clear, el } from './dom.js';

const FONT = '12px system-ui, -apple-system, Segoe UI, Roboto, sans-serif';
const HOUR = 3600;

/** The uPlot instance drawn in each container, by container id. */
const charts = new Map();
let resizeObserver = null;

function cssVar(name, fallback) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

/** Removes the hour chart drawn in `container`, if any. */
export function destroyHourChart(container) {
  const chart = charts.get(container.id);
  if (chart) chart.destroy();
  charts.delete(container.id);
  clear(container);
}

function watchSize(container) {
  if (!window.ResizeObserver) return;
  if (!resizeObserver) {
    resizeObserver = new ResizeObserver((entries) => {
      for (const entry of entries) {
        const chart = charts.get(entry.target.id);
        if (chart) chart.setSize({ width: Math.max(280, entry.target.clientWidth), height: chart.height });
      }
    });
  }
  resizeObserver.observe(container);
}

/**
 * Draws `metric` per hour of `rows` (the API's `hours[]` rows, in order) in `container`;
 * `now` marks the hour still in progress. Returns the number of bars (hours) drawn.
 */
export function renderHourChart(container, rows, metric, now) {
  destroyHourChart(container);
  const label = metricLabel(metric);
  if (typeof window.uPlot !== 'function') {
    container.appendChild(el('p', { className: 'muted', text: 'The chart library did not load.' }));
    return 0;
  }
  const uPlot = window.uPlot;
  const starts = rows.map((row) => parseHourStart(row.start));
  const labels = hourLabels(rows);
  const xs = starts.map((s) => s.epochSeconds);
  const values = rows.map((row) => (row.metrics ? row.metrics[metric] ?? 0 : null));
  const known = values.filter((v) => v !== null);
  const nowSeconds = now.getTime() / 1000;
  const live = xs.findIndex((x) => x <= nowSeconds && nowSeconds < x + HOUR);
  const latest = rows.length - 1;
  const at = (idx) => (idx == null ? latest : idx);
  const scale = valueScale(Math.min(0, ...known), Math.max(0, ...known));
  const multiDay = starts.length > 0 && starts[0].day !== starts[starts.length - 1].day;
  const when = (i) => shortDay(starts[i].day) + ', ' + labels[i];

  const accent = cssVar('--chart-bar', '#4f46e5');
  const axisColor = cssVar('--text-muted', '#64748b');
  const grid = cssVar('--chart-grid', 'rgba(100,116,139,0.15)');
  const fills = rows.map((_, i) => (i === live ? cssVar('--chart-bar-soft', 'rgba(99,102,241,0.35)') : accent));
  const size = [xs.length > 48 ? 0.86 : 0.7, 40];
  const opts = {
    width: Math.max(280, container.clientWidth),
    height: window.matchMedia('(max-width: 640px)').matches ? 200 : 260,
    padding: [16, 20, 0, 4],
    cursor: { drag: { x: false, y: false }, points: { show: false } },
    legend: { live: true },
    scales: {
      x: { time: false, range: () => [xs[0] - HOUR / 2, xs[xs.length - 1] + HOUR / 2] },
      y: { range: () => [scale.min, scale.max] },
    },
    axes: [
      {
        stroke: axisColor,
        grid: { show: false },
        ticks: { stroke: grid, size: 4 },
        font: FONT,
        // Labels on the same local times each day (every 1, 2, 3, 6, 12 or 24 hours); a new day's midnight names the day.
        splits: (u) => {
          const room = Math.floor(u.bbox.width / (window.devicePixelRatio || 1) / (multiDay ? 60 : 44));
          const step = hourLabelEvery(xs.length, room);
          return xs.filter((x, i) => Number(starts[i].time.slice(0, 2)) % step === 0);
        },
        values: (u, splits) =>
          splits.map((x) => {
            const i = xs.indexOf(x);
            return multiDay && starts[i].time === '00:00' ? shortDay(starts[i].day) : labels[i];
          }),
      },
      {
        stroke: axisColor,
        grid: { stroke: grid, width: 1 },
        ticks: { show: false },
        size: 64,
        font: FONT,
        splits: () => scale.ticks.slice(),
        values: (u, splits) => splits.map((v) => axisValue(v, metric)),
      },
    ],
    series: [
      { label: 'Hour', value: (u, x, sidx, idx) => (rows.length === 0 ? '' : when(at(idx)) + (at(idx) === live ? ' (in progress)' : '')) },
      {
        label: label,
        fill: accent,
        stroke: accent,
        width: 0,
        paths: uPlot.paths.bars({ size, radius: 0.12, disp: { fill: { unit: 3, values: () => fills } } }),
        points: { show: false },
        value: (u, v, sidx, idx) => (values[at(idx)] === null ? 'not known' : readableValue(values[at(idx)], metric) + (at(idx) === live ? ' so far' : '')),
      },
    ],
  };
  const chart = new uPlot(opts, [xs, values], container);
  charts.set(container.id, chart);
  watchSize(container);
  container.setAttribute('data-hours', String(rows.length));
  container.setAttribute('data-hour-labels', labels.join('|'));
  container.setAttribute(
    'aria-label',
    'Bar chart of ' + label.toLowerCase() + ' per hour, ' + rows.length + ' hours' +
      (rows.length > 0 ? ' from ' + when(0) + ' to ' + when(latest) : '') +
      (known.length > 0 ? '; highest ' + readableValue(Math.max(...known), metric) : '') + '.',
  );
  return rows.length;
}
