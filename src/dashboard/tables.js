// The table of days (or months) with its totals footer, and the adjustments table.
// Cells show readable values (bytes in units) with the exact value as their title and
// in data-value; the CSV download keeps every digit.
import { exactTitle, metricLabel, monthName, readableValue, shortDay, signedValue, weekday } from './lib/format.js';
import { isDayInProgress, isPartialMonth } from './lib/selection.js';
import { todayIn } from './lib/time-zone.js';
import { $, clear, el } from './dom.js';

const inProgressHint = (zone) => 'Still in progress: counts for today (' + zone + ') grow as CloudFront delivers its logs.';

/** A figure a zone's day lacks (its hours are not known): a dash, the reason on hover. Never a zero. */
function unknownCell(metric, selected, reason) {
  return el('td', { className: 'num unknown' + (selected ? ' selected' : ''), 'data-metric': metric, 'data-value': 'null', title: 'Not known: ' + (reason || 'its hours are not known'), text: '—' });
}

/** A number cell: readable text; the exact value in the title when the text rounds it. */
function valueCell(value, metric, selected, text) {
  const shown = text ?? readableValue(value, metric);
  return el('td', {
    className: 'num' + (selected ? ' selected' : ''),
    'data-metric': metric,
    'data-value': String(value),
    title: metric === 'bytes' ? exactTitle(value, metric) : undefined,
    text: shown,
  });
}

/** The late usage of a closed day, for a badge's title: "requests +12, bytes +4.1 KB". */
function lateSummary(row, names) {
  return names
    .filter((name) => (row.late?.[name] ?? 0) !== 0)
    .map((name) => metricLabel(name).toLowerCase() + ' ' + signedValue(row.late[name], name))
    .join(', ');
}

/** A closed day's marks: "closed" (final since closedAt) and, when usage came after, "late". */
function closeBadges(row, names) {
  if (row.status !== 'closed') return [];
  const closed = el('span', {
    className: 'badge badge-closed',
    title:
      row.closedAt === undefined
        ? 'Closed: nothing was measured on this day and its close grace is over, so its zeros are final.'
        : 'Closed ' + row.closedAt + ' (UTC): these numbers are final; usage that arrives later is shown apart as late.',
    text: 'closed',
  });
  const late = lateSummary(row, names);
  return late === '' ? [closed] : [closed, el('span', { className: 'badge badge-late', title: 'Arrived after the day closed: ' + late, text: 'late +' })];
}

function periodLabel(row, byMonth, inProgress, names, onExplain, zone) {
  const badge = inProgress ? el('span', { className: 'badge badge-progress', title: inProgressHint(zone), text: 'in progress' }) : null;
  if (byMonth) {
    const cut = isPartialMonth(row) ? el('span', { className: 'muted cell-note', text: ' ' + shortDay(row.from) + '–' + shortDay(row.to) }) : null;
    return el('th', { scope: 'row' }, [el('span', { text: monthName(row.month) }), cut, badge]);
  }
  // On a phone the year is hidden (styles.css): the date's month and day are what a row needs there.
  const title = zone === 'UTC' ? 'Open ' + row.day + ': its hours, log objects, revisions and adjustments' : 'Open ' + row.day + ' (' + zone + '): its hours';
  const day = el('button', { type: 'button', className: 'link-button day-link', 'data-day': row.day, title }, [
    el('span', { className: 'day-year', text: row.day.slice(0, 5) }),
    el('span', { text: row.day.slice(5) }),
  ]);
  if (onExplain) day.addEventListener('click', () => onExplain(row.day));
  return el('th', { scope: 'row' }, [el('span', { className: 'weekday muted', text: weekday(row.day) }), day, badge, ...closeBadges(row, names)]);
}

/**
 * Days or months of `report` (in `zone`), `metric`'s column highlighted; `now` marks the
 * period still in progress. Clicking a day calls `onExplain(day)`.
 */
export function renderUsageTable(report, metric, now, onExplain, zone = 'UTC') {
  const table = $('days-table');
  const names = report.metricNames;
  const [thead, tbody, tfoot] = ['thead', 'tbody', 'tfoot'].map((tag) => table.querySelector(tag));
  [thead, tbody, tfoot].forEach(clear);
  const byMonth = report.granularity === 'month' && Array.isArray(report.months);
  $('table-title').textContent = byMonth ? 'Months' : 'Days';
  $('table-note').textContent = byMonth
    ? 'Measured usage per calendar month (' + zone + '), cut to the range.'
    : zone === 'UTC'
      ? 'Measured usage per UTC day; click a day to see its hours and the log objects it comes from. "closed": the day is final; "late +": usage arrived after it closed (hover for how much).'
      : 'Measured usage per day in ' + zone + ' (sums of whole UTC hours); click a day to see its hours. "closed": every UTC day it touches is final.';

  const head = el('tr', {}, [el('th', { scope: 'col', text: byMonth ? 'Month' : 'Day' })]);
  for (const name of names) {
    head.appendChild(el('th', { scope: 'col', className: 'num' + (name === metric ? ' selected' : ''), 'data-metric': name, text: metricLabel(name) }));
  }
  thead.appendChild(head);

  const today = todayIn(now, zone);
  for (const row of byMonth ? report.months : report.days) {
    const inProgress = byMonth ? row.from <= today && today <= row.to : isDayInProgress(row.day, now, zone);
    const closed = !byMonth && row.status === 'closed';
    const late = closed && row.late !== undefined;
    const classes = [row.metrics === null ? 'unknown' : names.every((n) => row.metrics[n] === 0) ? 'zero' : '', inProgress ? 'in-progress' : '', closed ? 'closed' : '', late ? 'late' : ''].filter(Boolean).join(' ');
    const tr = el('tr', { className: classes, 'data-period': byMonth ? row.month : row.day }, [periodLabel(row, byMonth, inProgress, names, onExplain, zone)]);
    for (const name of names) tr.appendChild(row.metrics === null ? unknownCell(name, name === metric, row.hoursReason) : valueCell(row.metrics[name], name, name === metric));
    tbody.appendChild(tr);
  }

  const footRow = (label, values, className) => {
    const tr = el('tr', { className }, [el('th', { scope: 'row', text: label })]);
    for (const name of names) tr.appendChild(values === null ? unknownCell(name, name === metric, 'a day of the range has no known hours') : valueCell(values[name], name, name === metric));
    tfoot.appendChild(tr);
  };
  footRow('Measured total', report.measuredTotals, 'measured-total');
  if (report.adjustmentTotals === null || names.some((n) => report.adjustmentTotals[n] !== 0)) {
    // A soft hyphen: on a phone the word may break, so that the day column stays narrow.
    footRow('Adjust\u00adments', report.adjustmentTotals, 'adjustment-total');
    footRow('Total', report.totals, 'grand-total');
  }
}

/** The operators' corrections in the range; the card hides when there are none. */
export function renderAdjustments(report) {
  const card = $('adjustments-card');
  const body = card.querySelector('tbody');
  clear(body);
  card.hidden = report.adjustments.length === 0;
  for (const a of report.adjustments) {
    const change = valueCell(a.delta, a.metric, false, signedValue(a.delta, a.metric));
    change.classList.add(a.delta < 0 ? 'negative' : 'positive');
    body.appendChild(el('tr', {}, [el('td', { text: a.day }), el('td', { text: metricLabel(a.metric) }), change, el('td', { text: a.reason })]));
  }
}
