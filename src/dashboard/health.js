// The operator's health panel (admin tokens): GET /v1/health?days=7 drawn as freshness per
// distribution, objects and line rates of the last day, objects and lines per day of the
// logs, what the resolver missed, the dead-letter queue, the last reconcile and the
// history horizon.
import { utcTime } from './lib/format.js';
import { reconcileVerdict } from './lib/reconcile.js';
import { $, clear, el } from './dom.js';

const percent = (rate) => (rate * 100).toFixed(2) + '%';

function fact(id, label, value, detail) {
  return el('div', { className: 'stat', id }, [
    el('div', { className: 'stat-label', text: label }),
    el('div', { className: 'stat-value', text: value }),
    detail ? el('div', { className: 'stat-detail', text: detail }) : null,
  ]);
}

/** Draws a health report (the API's body). */
export function renderHealth(health) {
  const card = $('health-card');
  card.hidden = false;
  const range = health.days.length <= 2 ? health.days.join(' and ') : health.days[0] + ' – ' + health.days[health.days.length - 1];
  $('health-caption').textContent = 'From the ledger of ' + range + ' (UTC), ' + utcTime(health.generatedAt);
  const facts = $('health-facts');
  clear(facts);
  const dlq = health.deadLetters;
  const reconcile = health.lastReconcile;
  facts.append(
    fact('health-objects', 'Objects processed', String(health.objects.lastDay), health.objects.lastHour + ' in the last hour, ' + health.objects.lastDay + ' in the last day (logs of ' + range + ')'),
    fact('health-unattributed', 'Unattributed lines', percent(health.lines.unattributedRate), health.lines.unattributed + ' of ' + health.lines.read + ' lines in the last day'),
    fact('health-malformed', 'Malformed lines', percent(health.lines.malformedRate), health.lines.malformed + ' of ' + health.lines.read + ' lines in the last day'),
    fact(
      'health-dlq',
      'Dead-letter queue',
      dlq === null ? 'not configured' : String(dlq.depth),
      dlq === null || dlq.oldestAgeSeconds === null ? 'no message waiting' : 'oldest ' + Math.round(dlq.oldestAgeSeconds / 60) + ' min old',
    ),
    fact(
      'health-reconcile',
      'Last reconcile',
      reconcile === null ? 'none' : reconcileVerdict(reconcile),
      reconcile === null ? 'run npx tally reconcile' : reconcile.from + ' – ' + reconcile.to + ', ' + utcTime(reconcile.at),
    ),
    fact(
      'health-horizon',
      'History horizon',
      health.history.keysPerAccountDay + ' keys',
      health.history.shards + ' shards × ' + health.history.cap + ' per account-day; older keys by tombstone for ' + health.history.tombstoneDays + ' days',
    ),
  );
  const fresh = $('health-freshness').querySelector('tbody');
  clear(fresh);
  for (const row of health.freshness) {
    fresh.appendChild(el('tr', { 'data-source': row.source }, [el('th', { scope: 'row', text: row.source }), el('td', { text: row.newestHour + ':00' }), el('td', { text: utcTime(row.processedAt) })]));
  }
  if (health.freshness.length === 0) fresh.appendChild(el('tr', {}, [el('td', { colspan: '3', className: 'muted', text: 'No log object counted in these days.' })]));
  const days = $('health-days').querySelector('tbody');
  clear(days);
  // Newest first, as the usage table lists days.
  for (const d of [...(health.perDay || [])].reverse()) {
    const num = (n) => el('td', { className: 'num', text: n.toLocaleString('en-US') });
    days.appendChild(
      el('tr', { 'data-day': d.day }, [
        el('th', { scope: 'row', text: d.day }),
        num(d.objects),
        num(d.lines.read),
        num(d.lines.counted),
        num(d.lines.unattributed),
        num(d.lines.malformed),
        el('td', { text: d.lastProcessedAt === null ? '–' : utcTime(d.lastProcessedAt) }),
      ]),
    );
  }
  const missed = $('health-missed');
  clear(missed);
  missed.hidden = health.missed.length === 0;
  for (const m of health.missed) {
    const hosts = m.samples && m.samples.length > 0 ? ' (missed: ' + m.samples.join(', ') + ')' : '';
    missed.appendChild(el('li', { text: m.object + ': ' + m.unattributed + ' unattributed, ' + m.malformed + ' malformed of ' + m.read + ' lines' + hosts }));
  }
  const keys = $('health-missed-keys');
  keys.hidden = health.missedKeys.length === 0;
  keys.textContent =
    'Hosts the resolver missed: ' +
    health.missedKeys.map((k) => k.key + ' (' + k.objects + ' object' + (k.objects === 1 ? '' : 's') + (k.reason ? ': ' + k.reason : '') + ')').join(', ');
}

export function hideHealth() {
  $('health-card').hidden = true;
}
