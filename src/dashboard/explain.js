// The explanation of one day (opened by clicking a day in the table): the API's
// GET /v1/accounts/{id}/days/{day}/explain drawn as the sums that tie the figures
// together (sources = measured, measured + adjustments = total), the measured usage by
// UTC hour, then the revisions, the adjustments and every log object with its
// contribution and its hours.
import { exactTitle, longDay, metricLabel, readableValue, signedValue, utcTime } from './lib/format.js';
import { $, clear, el } from './dom.js';
import { watchOverflow } from './scroll-cue.js';

function numberCell(value, metric, signed) {
  return el('td', {
    className: 'num',
    'data-metric': metric,
    'data-value': String(value),
    title: metric === 'bytes' ? exactTitle(value, metric) : undefined,
    text: signed ? signedValue(value, metric) : readableValue(value, metric),
  });
}

function table(id, head, rows) {
  const wrap = el('div', { className: 'table-wrap' }, [
    el('table', { id }, [
      el('thead', {}, [el('tr', {}, head.map((h) => el('th', { scope: 'col', className: h.num ? 'num' : undefined, text: h.text })))]),
      el('tbody', {}, rows),
    ]),
  ]);
  return watchOverflow(wrap);
}

/**
 * A log object's key as a cell: its folders, cut with an ellipsis when the table needs
 * the room, then its file name, so that the format and the numbers stay in view; the
 * whole key (with bucket and ETag) in the title, shown on hover.
 */
function objectCell(source) {
  const slash = source.key.lastIndexOf('/');
  const folders = source.key.slice(0, slash + 1);
  const file = source.key.slice(slash + 1);
  return el('th', { scope: 'row', className: 'object-name', title: 's3://' + source.bucket + '/' + source.key + ' · ETag ' + source.etag }, [
    el('span', { className: 'object-key' }, [folders ? el('span', { className: 'key-folders', text: folders }) : null, el('span', { className: 'key-file', text: file })]),
  ]);
}

/** True when an hour row of the API has usage in some metric. */
function hasUsage(metrics) {
  return Object.values(metrics).some((value) => value !== 0);
}

/** An hour of the day as the CLI prints it: 00..23 (UTC). */
function hourLabel(hour) {
  return String(hour).padStart(2, '0');
}

/**
 * The day's measured usage by UTC hour (the API's `hours`, `hoursSource`, `hoursReason`):
 * the hours with usage, each with its metrics, said to come from the shards or from
 * `tally backfill --hours`; when the API knows no hours (`hours: null`), its reason,
 * never zeros. Adjustments have no hour: the hours split the measured usage.
 */
function appendHours(body, explanation, names) {
  body.appendChild(el('h3', { text: 'By hour (UTC)' }));
  if (explanation.hours === null || explanation.hours === undefined) {
    body.appendChild(
      el('p', {
        className: 'notice notice-warning',
        id: 'explain-hours-unknown',
        text: 'Hours not known: ' + (explanation.hoursReason ?? 'this API does not give hours') + '.',
      }),
    );
    return;
  }
  const used = explanation.hours.filter((row) => hasUsage(row.metrics));
  const source = explanation.hoursSource === 'backfill' ? 'recomputed by tally backfill --hours' : 'from the counters';
  body.appendChild(
    el('p', {
      className: 'muted',
      id: 'explain-hours-note',
      text:
        used.length + ' of 24 hours with usage (' + source + '); they add up to the measured usage. Adjustments have no hour.',
    }),
  );
  if (used.length === 0) return;
  body.appendChild(
    table(
      'explain-hours',
      [{ text: 'Hour (UTC)' }, ...names.map((n) => ({ text: metricLabel(n), num: true }))],
      used.map((row) =>
        el('tr', { 'data-hour': String(row.hour) }, [
          el('th', { scope: 'row', text: hourLabel(row.hour) + ':00' }),
          ...names.map((n) => numberCell(row.metrics[n] ?? 0, n)),
        ]),
      ),
    ),
  );
}

/**
 * A log object's hours (its ledger row's `hours`, the hours with usage only): their
 * labels, with each hour's figures in the title; "unknown" when the ledger recorded none
 * (counted before hours were kept).
 */
function sourceHoursCell(hours, names) {
  if (hours === null || hours === undefined) {
    return el('td', { className: 'source-hours muted', 'data-hours': 'unknown', title: 'counted before hours were kept', text: 'unknown' });
  }
  const used = hours.filter((row) => hasUsage(row.metrics));
  return el('td', {
    className: 'source-hours',
    'data-hours': used.map((row) => row.hour).join(','),
    title: used.map((row) => hourLabel(row.hour) + ':00 ' + names.map((n) => metricLabel(n) + ' ' + (row.metrics[n] ?? 0)).join(', ')).join('\n') || undefined,
    text: used.length === 0 ? 'none' : used.map((row) => hourLabel(row.hour)).join(', '),
  });
}

/** Shows that `explanation` is loading for `day`, and scrolls to the card. */
export function showExplainLoading(day) {
  const card = $('explain-card');
  card.hidden = false;
  $('explain-title').textContent = 'Where ' + longDay(day) + ' comes from';
  $('explain-summary').textContent = 'Loading…';
  clear($('explain-body'));
  card.scrollIntoView({ block: 'nearest' });
}

/** Draws an explanation (the API's body). */
export function renderExplanation(explanation) {
  const card = $('explain-card');
  const names = explanation.metricNames;
  card.hidden = false;
  card.setAttribute('data-day', explanation.day);
  card.setAttribute('data-complete', String(explanation.complete));
  $('explain-title').textContent = 'Where ' + longDay(explanation.day) + ' comes from';
  const status =
    explanation.status !== 'closed' ? 'open' : explanation.closedAt === undefined ? 'closed (nothing measured; its zeros are final)' : 'closed ' + utcTime(explanation.closedAt);
  $('explain-summary').textContent =
    explanation.accountId + ' · ' + explanation.day + ' (UTC) · ' + status + ' · ' + sourceCountText(explanation);
  const body = $('explain-body');
  clear(body);

  const check = el('p', {
    className: 'notice ' + (explanation.complete ? 'notice-success' : 'notice-warning'),
    id: 'explain-check',
    text: explanation.complete
      ? 'The log objects add up exactly to the measured usage; measured usage plus adjustments is the billable total.'
      : 'Not every unit is traced to a log object yet: ' + (explanation.missing ? explanation.missing.reason : '') + '.',
  });
  body.appendChild(check);

  const sumRow = (label, values, className, signed) =>
    el('tr', { className }, [el('th', { scope: 'row', text: label }), ...names.map((n) => numberCell(values[n] ?? 0, n, signed))]);
  const sums = [
    sumRow('Log objects (sum)', explanation.sourceTotals, 'explain-sources'),
    ...(explanation.missing ? [sumRow('Not traced yet', explanation.missing.metrics, 'explain-missing', true)] : []),
    sumRow('Measured', explanation.metrics, 'explain-measured'),
    ...explanation.adjustments.map((a) => sumRow('Adjustment ' + a.id, { [a.metric]: a.delta }, 'explain-adjustment', true)),
    sumRow('Total (billable)', explanation.totals, 'explain-total'),
  ];
  body.appendChild(el('h3', { text: 'Sums' }));
  body.appendChild(table('explain-sums', [{ text: '' }, ...names.map((n) => ({ text: metricLabel(n), num: true }))], sums));
  appendHours(body, explanation, names);

  if (explanation.revisions.length > 0) {
    body.appendChild(el('h3', { text: 'Revisions' }));
    body.appendChild(
      table(
        'explain-revisions',
        [{ text: 'Revision' }, { text: 'Recorded (UTC)' }, ...names.map((n) => ({ text: metricLabel(n), num: true }))],
        explanation.revisions.map((r) =>
          el('tr', { 'data-revision': String(r.revision) }, [
            el('th', { scope: 'row', text: r.revision === 1 ? '1 (closed)' : r.revision + ' (late)' }),
            el('td', { text: r.createdAt ? utcTime(r.createdAt) : '' }),
            ...names.map((n) => numberCell(r.metrics[n] ?? 0, n)),
          ]),
        ),
      ),
    );
  }
  if (explanation.adjustments.length > 0) {
    body.appendChild(el('h3', { text: 'Adjustments' }));
    body.appendChild(
      table(
        'explain-adjustments',
        [{ text: 'Id' }, { text: 'Metric' }, { text: 'Change', num: true }, { text: 'Reason' }, { text: 'Recorded (UTC)' }],
        explanation.adjustments.map((a) =>
          el('tr', {}, [el('th', { scope: 'row', text: a.id }), el('td', { text: metricLabel(a.metric) }), numberCell(a.delta, a.metric, true), el('td', { text: a.reason }), el('td', { text: utcTime(a.createdAt) })]),
        ),
      ),
    );
  }
  body.appendChild(el('h3', { text: 'Log objects' }));
  body.appendChild(
    explanation.sources.length === 0
      ? el('p', { className: 'muted', text: 'No log object is recorded for this day.' })
      : table(
          'explain-sources',
          [{ text: 'Object' }, { text: 'Format' }, { text: 'Counted (UTC)' }, { text: 'Hours (UTC)' }, ...names.map((n) => ({ text: metricLabel(n), num: true }))],
          explanation.sources.map((s) =>
            el('tr', { 'data-key': s.key }, [
              objectCell(s),
              el('td', { text: s.format + (s.unresolved ? ' · unresolved' : '') }),
              el('td', { text: utcTime(s.processedAt) }),
              sourceHoursCell(s.hours, names),
              ...names.map((n) => numberCell(s.metrics[n] ?? 0, n)),
            ]),
          ),
        ),
  );
}

/** Shows an error in the card. */
export function explainFailed(message) {
  $('explain-summary').textContent = message;
}

export function hideExplanation() {
  $('explain-card').hidden = true;
}

/** How many log objects the day has; when the API listed one page of them, which (the sums are of all). */
function sourceCountText(explanation) {
  const count = explanation.sourceCount ?? explanation.sources.length;
  const text = count + ' log object' + (count === 1 ? '' : 's');
  return (explanation.pages ?? 1) > 1 ? text + ' (' + explanation.sources.length + ' listed: page ' + explanation.page + ' of ' + explanation.pages + ')' : text;
}
