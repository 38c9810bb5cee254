// The operator view (admin tokens): every account with usage in the chosen range,
// ranked by the selected metric, with its share of the total, as the API's
// GET /v1/accounts answers it. Clicking an account shows its usage. Lines no resolver
// attributed are no customer: shown apart, under the table, not ranked nor in the shares.
import { exactTitle, metricLabel, readableValue } from './lib/format.js';
import { $, clear, el, styled } from './dom.js';

/** Draws `ranking`; `onPick(account)` opens an account. */
export function renderRanking(ranking, onPick) {
  const card = $('ranking-card');
  const body = $('ranking-table').querySelector('tbody');
  clear(body);
  card.hidden = false;
  const metric = ranking.metric;
  $('ranking-metric').textContent = metricLabel(metric);
  $('ranking-caption').textContent = ranking.accounts.length + ' account' + (ranking.accounts.length === 1 ? '' : 's') + ' with usage, ' + ranking.from + ' – ' + ranking.to + ' (UTC), by ' + metricLabel(metric).toLowerCase();
  for (const row of ranking.accounts) {
    const value = row.totals[metric];
    const share = row.share[metric];
    const open = el('button', { type: 'button', className: 'link-button', text: row.accountId });
    open.addEventListener('click', () => onPick(row.accountId));
    body.appendChild(
      el('tr', { 'data-account': row.accountId }, [
        el('td', { className: 'num', text: String(row.rank) }),
        el('th', { scope: 'row' }, [open]),
        el('td', { className: 'num', 'data-value': String(value), title: metric === 'bytes' ? exactTitle(value, metric) : undefined, text: readableValue(value, metric) }),
        el('td', { className: 'num share', 'data-value': String(share) }, [
          styled(el('span', { className: 'share-bar', 'aria-hidden': 'true' }), { width: share + '%' }),
          el('span', { text: share + '%' }),
        ]),
      ]),
    );
  }
  const total = ranking.totals[metric];
  $('ranking-total').textContent = readableValue(total, metric);
  $('ranking-total').setAttribute('title', metric === 'bytes' ? exactTitle(total, metric) : '');
  $('ranking-total').setAttribute('data-value', String(total));
  const apart = $('ranking-unattributed');
  clear(apart);
  apart.hidden = ranking.unattributed === null || ranking.unattributed === undefined;
  if (!apart.hidden) {
    const value = ranking.unattributed[metric];
    apart.append(
      'Not attributed to any account (not ranked, not in the shares): ',
      el('span', { className: 'unattributed-value', 'data-value': String(value), title: metric === 'bytes' ? exactTitle(value, metric) : undefined, text: readableValue(value, metric) }),
    );
  }
}

export function hideRanking() {
  $('ranking-card').hidden = true;
}
