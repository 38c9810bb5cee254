// The "This month" card: month-to-date against each allowance as a progress bar with a
// mark at every alert level (80% and 100% by default), the linear projection to the
// month's end and the levels already reached. Every figure is the API's `quota` block
// (used, allowance, percent, projected): nothing is computed here but the drawing, whose
// geometry (a scale capped at 200%, overflow) is lib/quota-bar.
import { exactTitle, metricLabel, monthName, readableValue, shortDay } from './lib/format.js';
import { quotaBarLayout } from './lib/quota-bar.js';
import { $, clear, el, styled } from './dom.js';

/** A value as text, with the exact value as its title when the text rounds it (bytes). */
function figure(value, metric, className) {
  return el('span', { className, title: metric === 'bytes' ? exactTitle(value, metric) : undefined, 'data-value': String(value), text: readableValue(value, metric) });
}

function bar(metric, status) {
  const layout = quotaBarLayout(status.percent, status.projectedPercent, status.levels);
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
    'data-scale': String(layout.scale),
  });
  track.appendChild(styled(el('div', { className: 'quota-fill' + (over ? ' over' : '') }), { width: layout.fill + '%' }));
  track.appendChild(styled(el('div', { className: 'quota-projection', title: 'Projected at month end: ' + status.projectedPercent + '%' }), { left: layout.projection + '%' }));
  for (const { level, left } of layout.marks) {
    const mark = el('div', {
      className: 'quota-mark' + (reached.has(level) ? ' reached' : ''),
      'data-level': String(level),
      title: level + '% of the allowance' + (reached.has(level) ? ': reached' : ''),
    }, [el('span', { className: 'quota-mark-label', text: level + '%' })]);
    track.appendChild(styled(mark, { left: left + '%' }));
  }
  if (layout.overflow) {
    const beyond = layout.beyond.length === 0 ? '' : '; levels past it: ' + layout.beyond.join('%, ') + '%';
    track.appendChild(el('span', { className: 'quota-overflow', title: 'Usage runs past the bar (it ends at ' + layout.scale + '%)' + beyond, text: '▶ ' + status.percent + '%' }));
  }
  return track;
}

/** A level reached, and how far its alert got: queued to the webhook queue (`notifiedAt`) or still waiting. */
function crossedBadge(c) {
  const queued = typeof c.notifiedAt === 'string';
  const alert = queued ? 'alert sent ' + c.notifiedAt : 'alert pending (webhooks off, or not sent yet)';
  return el('span', {
    className: 'badge badge-threshold ' + (queued ? 'alert-sent' : 'alert-pending'),
    'data-level': String(c.level),
    'data-alert': queued ? 'sent' : 'pending',
    title: 'Reached: ' + c.used + ' of ' + c.allowance + ' at ' + c.crossedAt + '; ' + alert,
    text: c.level + '% reached ' + shortDay(c.crossedAt.slice(0, 10)) + (queued ? ' · alert sent' : ' · alert pending'),
  });
}

/**
 * A crossing of an earlier allowance this month (the quota changed since): its alert sent,
 * or withdrawn unsent because its allowance is no longer in force. History, not a level reached now.
 */
function earlierBadge(metric, c) {
  const queued = typeof c.notifiedAt === 'string';
  const outcome = queued ? 'alert sent' : 'alert withdrawn';
  return el('span', {
    className: 'badge badge-threshold earlier ' + (queued ? 'alert-sent' : 'alert-withdrawn'),
    'data-level': String(c.level),
    'data-alert': queued ? 'sent' : 'withdrawn',
    title: 'Under the earlier allowance ' + c.allowance + ': reached ' + c.used + ' at ' + c.crossedAt + '; ' + (queued ? 'alert sent ' + c.notifiedAt : 'not sent: the allowance changed'),
    text: c.level + '% of ' + readableValue(c.allowance, metric) + ' (earlier allowance) · ' + outcome,
  });
}

function row(metric, status) {
  const crossed = [...status.crossed.map(crossedBadge), ...(status.earlier || []).map((c) => earlierBadge(metric, c))];
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
