// The "This month" card: month-to-date against each allowance as a progress bar with a
// mark at every alert level (80% and 100% by default), the linear projection to the
// month's end and the levels already reached. Every figure is the API's `quota` block
// (used, allowance, percent, projected): nothing is computed here but the drawing.
import { exactTitle, metricLabel, monthName, readableValue, shortDay } from './lib/format.js';
import { $, clear, el, styled } from './dom.js';

/** A value as text, with the exact value as its title when the text rounds it (bytes). */
function figure(value, metric, className) {
  return el('span', { className, title: metric === 'bytes' ? exactTitle(value, metric) : undefined, 'data-value': String(value), text: readableValue(value, metric) });
}

/** The bar's scale runs to 100% of the allowance, or further when usage or a level goes past it. */
function scaleOf(status) {
  return Math.max(100, status.percent, ...status.levels);
}

function bar(metric, status) {
  const scale = scaleOf(status);
  const over = status.percent >= 100;
  const reached = new Set(status.crossed.map((c) => c.level));
  const track = el('div', {
    className: 'quota-track',
    role: 'progressbar',
    'aria-label': metricLabel(metric) + ' used this month',
    'aria-valuemin': '0',
    'aria-valuemax': String(status.allowance),
    'aria-valuenow': String(status.used),
    'aria-valuetext': status.percent + '% of the allowance',
  });
  track.appendChild(styled(el('div', { className: 'quota-fill' + (over ? ' over' : '') }), { width: Math.min(100, (status.percent / scale) * 100) + '%' }));
  const projected = Math.min(100, (status.projectedPercent / scale) * 100);
  track.appendChild(styled(el('div', { className: 'quota-projection', title: 'Projected at month end: ' + status.projectedPercent + '%' }), { left: projected + '%' }));
  for (const level of status.levels) {
    const mark = el('div', {
      className: 'quota-mark' + (reached.has(level) ? ' reached' : ''),
      'data-level': String(level),
      title: level + '% of the allowance' + (reached.has(level) ? ': reached' : ''),
    }, [el('span', { className: 'quota-mark-label', text: level + '%' })]);
    track.appendChild(styled(mark, { left: (level / scale) * 100 + '%' }));
  }
  return track;
}

function row(metric, status) {
  const crossed = status.crossed.map((c) =>
    el('span', { className: 'badge badge-threshold', 'data-level': String(c.level), title: 'Alert sent: ' + c.used + ' of ' + c.allowance + ' at ' + c.crossedAt, text: c.level + '% reached ' + shortDay(c.crossedAt.slice(0, 10)) }),
  );
  return el('div', { className: 'quota-row', 'data-metric': metric }, [
    el('div', { className: 'quota-head' }, [
      el('strong', { text: metricLabel(metric) }),
      el('span', { className: 'quota-figures' }, [
        figure(status.used, metric, 'quota-used'),
        document.createTextNode(' of '),
        figure(status.allowance, metric, 'quota-allowance'),
        el('span', { className: 'quota-percent', text: ' (' + status.percent + '%)' }),
      ]),
    ]),
    bar(metric, status),
    el('div', { className: 'quota-foot muted' }, [
      document.createTextNode('Projected by month end: '),
      figure(status.projected, metric, 'quota-projected'),
      el('span', { className: 'quota-projected-percent', text: ' (' + status.projectedPercent + '%)' }),
      document.createTextNode(status.source === 'default' ? ' · default allowance' : ''),
      ...crossed,
    ]),
  ]);
}

/** Draws the card from `report.quota`; hides it when no metric has an allowance. */
export function renderQuota(report) {
  const card = $('quota-card');
  const box = $('quota-rows');
  clear(box);
  const quota = report.quota;
  const metrics = quota ? report.metricNames.filter((name) => quota.metrics[name] && quota.metrics[name].allowance !== null) : [];
  card.hidden = metrics.length === 0;
  if (card.hidden) return;
  $('quota-caption').textContent = monthName(quota.month) + ' so far (' + shortDay(quota.from) + '–' + shortDay(quota.to) + ', UTC), adjustments included';
  for (const metric of metrics) box.appendChild(row(metric, quota.metrics[metric]));
}
