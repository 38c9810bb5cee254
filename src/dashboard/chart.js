// The per-day bar chart (uPlot). Today's bar is hatched: its count still grows. With no
// bar hovered, the legend shows the latest day. Its value axis is computed by
// lib/chart-scale, so a negative adjustment gets a labelled negative part.
import { dayLabelEvery, valueScale } from './lib/chart-scale.js';
import { axisValue, longDay, metricLabel, readableValue, shortDay, signedValue } from './lib/format.js';
import { isDayInProgress } from './lib/selection.js';
import { $, clear, el } from './dom.js';

const FONT = '12px system-ui, -apple-system, Segoe UI, Roboto, sans-serif';

let chart = null;
let resizeObserver = null;

function cssVar(name, fallback) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

/** Diagonal stripes in `color` over a light wash of it: the fill of a bar still growing. */
function hatch(color) {
  const size = Math.round(8 * (window.devicePixelRatio || 1));
  const tile = document.createElement('canvas');
  tile.width = size;
  tile.height = size;
  const ctx = tile.getContext('2d');
  ctx.globalAlpha = 0.18;
  ctx.fillStyle = color;
  ctx.fillRect(0, 0, size, size);
  ctx.globalAlpha = 0.9;
  ctx.strokeStyle = color;
  ctx.lineWidth = size / 5;
  ctx.beginPath();
  for (const offset of [-size, 0, size]) {
    ctx.moveTo(offset, size);
    ctx.lineTo(offset + size, 0);
  }
  ctx.stroke();
  return ctx.createPattern(tile, 'repeat');
}

const dayOfTs = (ts) => new Date(ts * 1000).toISOString().slice(0, 10);

/** Removes the chart (before a redraw, or when there is nothing to show). */
export function destroyChart() {
  if (chart) chart.destroy();
  chart = null;
}

/** Draws `metric` per day of `report`; `now` decides which day (of `zone`) is still in progress. */
export function renderChart(report, metric, now, zone = 'UTC') {
  const container = $('chart');
  destroyChart();
  clear(container);
  const label = metricLabel(metric);
  $('chart-title').textContent = label + ' per day';
  if (typeof window.uPlot !== 'function') {
    container.appendChild(el('p', { className: 'muted', text: 'The chart library did not load; the table below has every number.' }));
    return;
  }
  const uPlot = window.uPlot;
  const days = report.days.map((d) => d.day);
  const xs = days.map((day) => Date.parse(day + 'T00:00:00Z') / 1000);
  // In a zone, a day whose hours are not known has null figures: a gap, never a zero bar.
  const measured = report.days.map((d) => (d.metrics === null ? null : d.metrics[metric]));
  const unknownDays = report.days.filter((d) => d.metrics === null);
  const adjusted = report.days.map((d) => (d.adjustments !== null && d.adjustments[metric] !== 0 ? d.adjustments[metric] : null));
  const adjustments = adjusted.filter((v) => v !== null);
  // Closed days with usage after the close: that part of the bar is drawn apart.
  const lateParts = report.days.map((d) => (d.late && d.late[metric] > 0 ? d.late[metric] : null));
  const anyLate = lateParts.some((v) => v !== null);
  const live = days.findIndex((day) => isDayInProgress(day, now, zone));
  const latest = days.length - 1;
  // With no bar hovered uPlot asks for the legend of no index: show the latest day.
  const at = (idx) => (idx == null ? latest : idx);
  const scale = valueScale(Math.min(0, ...measured, ...adjustments), Math.max(0, ...measured, ...adjustments));

  const accent = cssVar('--chart-bar', '#4f46e5');
  const warn = cssVar('--chart-adjustment', '#d97706');
  const axisColor = cssVar('--text-muted', '#64748b');
  const grid = cssVar('--chart-grid', 'rgba(100,116,139,0.15)');
  const growing = live >= 0 ? hatch(accent) : null;
  const fills = days.map((_, i) => (i === live ? growing : accent));
  const strokes = days.map((_, i) => (i === live ? accent : null));

  const series = [
    {
      label: 'Day',
      value: (u, ts, sidx, idx) => {
        const i = at(idx);
        return longDay(days[i]) + (i === live ? ' (today, in progress)' : idx == null ? ' (latest)' : '');
      },
    },
    {
      label: 'Measured ' + label.toLowerCase(),
      fill: accent,
      stroke: accent,
      width: live >= 0 ? 1.5 : 0,
      dash: [4, 3],
      paths: uPlot.paths.bars({
        size: [xs.length > 45 ? 0.8 : 0.66, 56],
        radius: 0.12,
        disp: { fill: { unit: 3, values: () => fills }, stroke: { unit: 3, values: () => strokes } },
      }),
      points: { show: false },
      value: (u, v, sidx, idx) => (measured[at(idx)] === null ? 'not known' : readableValue(measured[at(idx)], metric) + (at(idx) === live ? ' so far' : '')),
    },
  ];
  const data = [xs, measured];
  if (anyLate) {
    const lateColor = cssVar('--chart-late', '#0f766e');
    series.push({
      label: 'Late (after close)',
      fill: hatch(lateColor),
      stroke: lateColor,
      width: 1,
      paths: uPlot.paths.bars({ size: [xs.length > 45 ? 0.8 : 0.66, 56], radius: 0 }),
      points: { show: false },
      value: (u, v, sidx, idx) => (lateParts[at(idx)] === null ? 'none' : readableValue(lateParts[at(idx)], metric)),
    });
    data.push(lateParts);
  }
  if (adjustments.length > 0) {
    series.push({
      label: 'Adjustment',
      stroke: warn,
      width: 0,
      paths: () => null,
      points: { show: true, size: 9, stroke: warn, fill: warn, width: 2 },
      value: (u, v, sidx, idx) => (adjusted[at(idx)] === null ? 'none' : signedValue(adjusted[at(idx)], metric)),
    });
    data.push(adjusted);
  }

  const opts = {
    width: Math.max(280, container.clientWidth),
    height: window.matchMedia('(max-width: 640px)').matches ? 220 : 300,
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    padding: [16, 28, 0, 4],
    cursor: { drag: { x: false, y: false }, points: { show: false } },
    legend: { live: true },
    scales: {
      x: { time: true, range: (u, min, max) => [min - 43200, max + 43200] },
      y: { range: () => [scale.min, scale.max] },
    },
    axes: [
      {
        stroke: axisColor,
        grid: { show: false },
        ticks: { stroke: grid, size: 4 },
        font: FONT,
        // One label per day, or per 2, 3, 7, 14... days when they would crowd, ending on the last day.
        splits: (u) => {
          const step = dayLabelEvery(xs.length, Math.floor(u.bbox.width / (window.devicePixelRatio || 1) / 68));
          return xs.filter((x, i) => (xs.length - 1 - i) % step === 0);
        },
        values: (u, splits) => splits.map((ts) => (xs.indexOf(ts) === live ? 'Today' : shortDay(dayOfTs(ts)))),
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
    series,
  };
  chart = new uPlot(opts, data, container);

  const axisLabels = scale.ticks.map((v) => axisValue(v, metric));
  container.setAttribute('data-y-ticks', axisLabels.join('|'));
  container.setAttribute(
    'aria-label',
    'Bar chart of ' + label.toLowerCase() + ' per day from ' + longDay(report.from) + ' to ' + longDay(report.to) +
      '; highest ' + readableValue(Math.max(...measured), metric) +
      '; the axis runs from ' + axisLabels[0] + ' to ' + axisLabels[axisLabels.length - 1] + '.' +
      (live >= 0 ? " Today's bar is still in progress." : '') + ' The table below lists every day.',
  );
  const notes = [adjustments.length > 0 ? 'Bars: measured. Dots: adjustments on that day.' : 'Hover a bar for the exact value.'];
  if (anyLate) notes.push('Striped teal at the foot of a bar: usage that arrived after that day closed.');
  if (live >= 0) notes.push('The hatched bar is today (' + zone + '), still in progress.');
  if (unknownDays.length > 0) {
    notes.push('No bar for ' + unknownDays.map((d) => shortDay(d.day)).join(', ') + ': not known in ' + zone + ', ' + (unknownDays[0].hoursReason || 'its hours are not known') + '.');
  }
  $('chart-note').textContent = notes.join(' ');

  if (!resizeObserver && window.ResizeObserver) {
    resizeObserver = new ResizeObserver(() => {
      if (chart) chart.setSize({ width: Math.max(280, container.clientWidth), height: chart.height });
    });
    resizeObserver.observe(container);
  }
}
