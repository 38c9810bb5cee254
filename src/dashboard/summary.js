// The cards above the chart (total, daily average, peak day, active days) and the
// "Updated ..." line. Values are readable (bytes in units); the exact value is the title.
import { exactTitle, longDay, metricLabel, readableValue, relativeTime, utcTime } from './lib/format.js';
import { $, clear, el } from './dom.js';

function stat(id, label, value, title, detail) {
  return el('div', { className: 'stat', id }, [
    el('div', { className: 'stat-label', text: label }),
    el('div', { className: 'stat-value', text: value, title }),
    detail ? el('div', { className: 'stat-detail', text: detail }) : null,
  ]);
}

export function renderStats(report, metric) {
  const box = $('stats');
  clear(box);
  // In a zone, a day whose hours are not known has null figures: the cards speak of the known days only, and say so.
  const days = report.days.filter((d) => d.metrics !== null);
  const unknown = report.days.length - days.length;
  if (report.totals === null || days.length === 0) {
    box.appendChild(stat('stat-total', 'Total ' + metricLabel(metric).toLowerCase(), 'not known', undefined, unknown + ' day' + (unknown === 1 ? '' : 's') + ' without known hours'));
    if (days.length === 0) return;
  }
  const total = report.totals === null ? null : report.totals[metric];
  const measured = days.reduce((sum, d) => sum + d.metrics[metric], 0);
  const adjustment = days.reduce((sum, d) => sum + d.adjustments[metric], 0);
  const peak = days.reduce((best, d) => (d.metrics[metric] > best.metrics[metric] ? d : best), days[0]);
  const active = days.filter((d) => d.metrics[metric] !== 0).length;
  const average = Math.round(measured / days.length);
  const show = (n) => readableValue(n, metric);
  const totalDetail =
    adjustment !== 0
      ? 'measured ' + show(measured) + (adjustment > 0 ? ' + ' : ' − ') + show(Math.abs(adjustment)) + ' adjusted'
      : 'measured, no adjustments';
  if (total !== null) box.appendChild(stat('stat-total', 'Total ' + metricLabel(metric).toLowerCase(), show(total), exactTitle(total, metric), totalDetail));
  box.appendChild(stat('stat-average', 'Daily average', show(average), exactTitle(average, metric), 'over ' + days.length + ' days' + (unknown > 0 ? ' with known hours' : '')));
  const peakValue = peak.metrics[metric];
  box.appendChild(stat('stat-peak', 'Peak day', show(peakValue), exactTitle(peakValue, metric), peakValue > 0 ? longDay(peak.day) : 'no usage'));
  box.appendChild(
    stat('stat-active', 'Days with usage', active + ' of ' + days.length, undefined, active === days.length ? 'every day' : days.length - active + ' without'),
  );
}

/** "Updated 3 min ago · Jan 8, 14:05 UTC" with a Refresh button calling `onRefresh`. */
export function renderFreshness(report, onRefresh) {
  const box = $('freshness');
  clear(box);
  if (report.updatedAt === null) return;
  box.appendChild(el('span', { className: 'dot', 'aria-hidden': 'true' }));
  box.appendChild(document.createTextNode('Updated '));
  box.appendChild(el('time', { datetime: report.updatedAt, title: utcTime(report.updatedAt), text: relativeTime(report.updatedAt, Date.now()) }));
  box.appendChild(el('span', { className: 'muted', text: ' · ' + utcTime(report.updatedAt) }));
  const refresh = el('button', { type: 'button', className: 'button button-quiet button-small', id: 'refresh-button', text: 'Refresh' });
  refresh.addEventListener('click', onRefresh);
  box.appendChild(refresh);
}
