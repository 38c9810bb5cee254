// Tally usage dashboard: a static page over the read API
// (GET /v1/accounts/{accountId}/usage, .../days/{day}/explain; admins: /v1/health, /v1/accounts). Native ES modules, no framework; uPlot draws the
// chart. The token lives in sessionStorage only (this tab), is sent as a bearer token and
// never appears in a URL. Days are UTC calendar days, like the counters.
//
// This module wires the page: sign-in and sign-out, the controls, loading and errors.
// The views are chart.js, summary.js and tables.js; the rules they share with the API
// are in lib/ (TypeScript, compiled with src/domain by the build).
import { ApiError, fetchCsv, fetchExplanation, fetchHealth, fetchRanking, fetchReport } from './api.js';
import { explainFailed, hideExplanation, renderExplanation, showExplainLoading } from './explain.js';
import { hideHealth, renderHealth } from './health.js';
import { destroyChart, renderChart } from './chart.js';
import { $, clear, el, fillNotice, setStatus } from './dom.js';
import { decodeClaims, isExpired } from './lib/claims.js';
import { longDay, metricLabel, utcTime } from './lib/format.js';
import { checkSelection, rangeFor, rangeLength, utcToday } from './lib/selection.js';
import { state } from './state.js';
import * as storage from './storage.js';
import { renderQuota } from './quota.js';
import { hideRanking, renderRanking } from './ranking.js';
import { renderFreshness, renderStats } from './summary.js';
import { renderAdjustments, renderUsageTable } from './tables.js';
import { watchAllOverflow } from './scroll-cue.js';

// ---------------------------------------------------------------- sign in and out
const EXPIRED = {
  kind: 'warning',
  state: 'expired',
  title: 'Your access token has expired.',
  detail: 'Paste a new token to continue. Locally, mint one with: npx tally token --account <id>',
};

function showSignIn(notice) {
  stopExpiryTimer();
  $('dashboard-view').hidden = true;
  $('session').hidden = true;
  $('signin-view').hidden = false;
  const box = $('signin-error');
  if (notice) {
    box.appendChild(fillNotice(box, notice.kind || 'error', notice.state || 'error', notice.title, notice.detail));
  } else {
    box.hidden = true;
    box.removeAttribute('data-state');
  }
  $('api-base-input').value = storage.storedApiBase() || '';
  const input = $('token-input');
  input.value = '';
  input.focus();
}

function signOut(notice) {
  if (state.inflight) state.inflight.abort();
  state.token = null;
  state.claims = null;
  state.report = null;
  storage.storeToken(null);
  showSignIn(notice);
}

function signIn(token) {
  let claims;
  try {
    claims = decodeClaims(token);
  } catch (error) {
    showSignIn({ title: 'This token cannot be used.', detail: error.message });
    return;
  }
  if (isExpired(claims, Date.now())) {
    showSignIn(EXPIRED);
    return;
  }
  state.token = token;
  state.claims = claims;
  storage.storeToken(token);
  showDashboard();
}

function startExpiryTimer() {
  stopExpiryTimer();
  if (!state.claims || state.claims.exp === null) return;
  const ms = state.claims.exp * 1000 - Date.now();
  if (ms < 2147483647) state.expiryTimer = window.setTimeout(() => signOut(EXPIRED), Math.max(0, ms));
}

function stopExpiryTimer() {
  if (state.expiryTimer !== null) window.clearTimeout(state.expiryTimer);
  state.expiryTimer = null;
}

// ---------------------------------------------------------------- controls
function showDashboard() {
  $('signin-view').hidden = true;
  $('dashboard-view').hidden = false;
  $('session').hidden = false;
  const claims = state.claims;
  let who = claims.admin ? 'Admin' : claims.accounts.length + ' account' + (claims.accounts.length === 1 ? '' : 's');
  if (claims.sub) who = claims.sub + ' · ' + who;
  if (claims.exp !== null) who += ' · expires ' + utcTime(new Date(claims.exp * 1000).toISOString());
  $('session-who').textContent = who;
  startExpiryTimer();
  setUpAccountPicker();
  const p = storage.prefs();
  if (p.range) $('range-select').value = p.range;
  if (p.from) $('from-input').value = p.from;
  if (p.to) $('to-input').value = p.to;
  if (p.granularity) $('granularity-select').value = p.granularity;
  toggleCustom();
  if (claims.admin) loadHealth();
  else hideHealth();
  if (currentAccount()) load();
  else if (claims.admin) loadOperatorView();
  else {
    clearResults();
    hideRanking();
    setStatus('info', 'This token does not name any account.', 'Ask for a token that names the accounts you need.');
  }
}

// ---------------------------------------------------------------- operator view (admin tokens)
async function loadHealth() {
  try {
    renderHealth(await fetchHealth(state.token));
  } catch {
    hideHealth();
  }
}

/** An admin with no account chosen lands here: health, and every account of the range ranked. */
async function loadOperatorView() {
  clearResults();
  const preset = $('range-select').value === 'custom' ? '30d' : $('range-select').value;
  const range = rangeFor(preset, utcToday(new Date()));
  $('title-account').textContent = 'all accounts';
  $('range-caption').textContent = longDay(range.from) + ' – ' + longDay(range.to) + ' (UTC)';
  setStatus('info', 'Operator view: how ingestion is doing, and every account ranked.', 'Pick an account in the ranking, or type one in the Account field and press Show.');
  const query = { account: '', from: range.from, to: range.to, granularity: 'day' };
  const select = $('metric-select');
  try {
    const ranking = await fetchRanking(state.token, query, select.value || storage.prefs().metric || 'requests');
    clear(select);
    for (const name of ranking.metricNames) select.appendChild(el('option', { value: name, text: metricLabel(name) }));
    select.value = ranking.metric;
    renderRanking(ranking, pickAccount);
  } catch {
    hideRanking();
  }
}

// ---------------------------------------------------------------- explain a day
async function explainDay(day) {
  const query = state.loaded;
  if (!query) return;
  if (state.explaining) state.explaining.abort();
  const controller = new AbortController();
  state.explaining = controller;
  showExplainLoading(day);
  try {
    const explanation = await fetchExplanation(state.token, query.account, day, controller.signal);
    if (state.explaining === controller) renderExplanation(explanation);
  } catch (error) {
    if (error && error.name === 'AbortError') return;
    explainFailed('This day could not be explained: ' + ((error && error.message) || 'the API failed') + '.');
  }
}

/** Admins type any account id (with their recent ones offered); others pick from the token's accounts. */
function setUpAccountPicker() {
  const claims = state.claims;
  const select = $('account-select');
  const input = $('account-input');
  const remembered = storage.prefs().account;
  select.hidden = claims.admin;
  input.hidden = !claims.admin;
  $('account-field').querySelector('label').setAttribute('for', claims.admin ? 'account-input' : 'account-select');
  if (claims.admin) {
    const options = $('account-options');
    clear(options);
    for (const account of new Set([...claims.accounts, ...storage.recentAccounts()])) options.appendChild(el('option', { value: account }));
    input.value = remembered || claims.accounts[0] || '';
  } else {
    clear(select);
    for (const account of claims.accounts) select.appendChild(el('option', { value: account, text: account }));
    select.disabled = claims.accounts.length <= 1;
    if (remembered && claims.accounts.includes(remembered)) select.value = remembered;
  }
}

function currentAccount() {
  return (state.claims && state.claims.admin ? $('account-input').value : $('account-select').value).trim();
}

function toggleCustom() {
  const custom = $('range-select').value === 'custom';
  $('custom-range').hidden = !custom;
  $('custom-range-to').hidden = !custom;
  $('custom-help').hidden = !custom;
  if (custom && !$('from-input').value) {
    const range = rangeFor('30d', utcToday(new Date()));
    $('from-input').value = range.from;
    $('to-input').value = range.to;
  }
}

// ---------------------------------------------------------------- loading
async function load() {
  if (state.claims && state.claims.admin && !currentAccount()) {
    state.report = null;
    state.loaded = null;
    loadOperatorView();
    return;
  }
  const checked = checkSelection({
    account: currentAccount(),
    preset: $('range-select').value,
    from: $('from-input').value,
    to: $('to-input').value,
    granularity: $('granularity-select').value,
    today: utcToday(new Date()),
  });
  if (!checked.ok) {
    setStatus('error', 'Check the selection.', checked.error);
    return;
  }
  const query = checked.query;
  if (isExpired(state.claims, Date.now())) {
    signOut(EXPIRED);
    return;
  }
  hideExplanation();
  storage.savePrefs({ account: query.account, range: $('range-select').value, from: $('from-input').value, to: $('to-input').value, granularity: query.granularity });
  if (state.inflight) state.inflight.abort();
  const controller = new AbortController();
  state.inflight = controller;
  $('title-account').textContent = query.account;
  const days = rangeLength(query);
  $('range-caption').textContent = longDay(query.from) + ' – ' + longDay(query.to) + ' · ' + days + ' day' + (days === 1 ? '' : 's') + ' (UTC)';
  $('results').setAttribute('aria-busy', 'true');
  $('results').classList.add('is-loading');
  setStatus('loading', 'Loading usage for ' + query.account + '…');
  try {
    const report = await fetchReport(state.token, query, controller.signal);
    if (state.inflight !== controller) return;
    state.inflight = null;
    state.report = report;
    state.loaded = query;
    if (state.claims.admin) storage.rememberAccount(query.account);
    render();
  } catch (error) {
    if ((error && error.name === 'AbortError') || state.inflight !== controller) return;
    state.inflight = null;
    showError(error, query);
  } finally {
    if (state.inflight === null) {
      $('results').setAttribute('aria-busy', 'false');
      $('results').classList.remove('is-loading');
    }
  }
}

function showError(caught, query) {
  const error = caught instanceof ApiError ? caught : new ApiError(0, 'client', String((caught && caught.message) || caught));
  if (error.status === 401) {
    if (error.code === 'token_expired') signOut(EXPIRED);
    else {
      signOut({
        state: 'rejected',
        title: 'The usage API rejected this token.',
        detail: error.message + '. Check that you pasted the whole token and that it was issued for this environment.',
      });
    }
    return;
  }
  clearResults();
  const retry = { label: 'Try again', run: load };
  if (error.status === 404) {
    setStatus('error', 'Account "' + query.account + '" was not found.', 'It does not exist or this token may not read it. Pick another account.');
  } else if (error.status === 400) {
    setStatus('error', 'The API refused this selection.', error.message);
  } else if (error.status === 0) {
    setStatus('error', 'The usage API could not be reached.', 'Check your connection (and the API base URL under Connection settings), then try again.', retry);
  } else {
    const detail = (error.message || 'The server failed.') + (error.requestId ? ' Request id: ' + error.requestId + '.' : '') + ' Try again in a moment.';
    setStatus('error', 'The usage could not be loaded (HTTP ' + error.status + ').', detail, retry);
  }
}

function clearResults() {
  destroyChart();
  hideExplanation();
  $('results').hidden = true;
  $('freshness').textContent = '';
  $('csv-button').disabled = true;
}

// ---------------------------------------------------------------- rendering
/** The metric to show: the selector's, else the remembered one, else the report's first. */
function selectedMetric() {
  const names = state.report.metricNames;
  const select = $('metric-select');
  const wanted = select.value || storage.prefs().metric;
  clear(select);
  for (const name of names) select.appendChild(el('option', { value: name, text: metricLabel(name) }));
  select.value = names.includes(wanted) ? wanted : names[0];
  return select.value;
}

function render() {
  const report = state.report;
  const metric = selectedMetric();
  renderFreshness(report, load);
  const empty = report.updatedAt === null && report.adjustments.length === 0 && report.metricNames.every((m) => report.totals[m] === 0);
  if (empty) {
    clearResults();
    $('freshness').textContent = 'No data yet';
    setStatus(
      'empty',
      'No usage recorded for ' + report.accountId + ' in this range.',
      'Usage appears here a few minutes after CloudFront delivers its logs. Try a longer range, or check the account id.',
    );
    return;
  }
  const now = new Date();
  setStatus(null);
  $('results').hidden = false;
  $('csv-button').disabled = false;
  renderStats(report, metric);
  renderQuota(report);
  renderChart(report, metric, now);
  renderAdjustments(report);
  renderUsageTable(report, metric, now, explainDay);
  loadRanking(metric);
}

/** Admin tokens: the ranking of every account over the loaded range, by the selected metric. */
async function loadRanking(metric) {
  if (!state.claims.admin || !state.loaded) {
    hideRanking();
    return;
  }
  const query = state.loaded;
  try {
    const ranking = await fetchRanking(state.token, query, metric);
    if (state.loaded === query) renderRanking(ranking, pickAccount);
  } catch {
    hideRanking();
  }
}

function pickAccount(account) {
  $('account-input').value = account;
  load();
}

// ---------------------------------------------------------------- CSV
async function downloadCsv() {
  const query = state.loaded;
  if (!query) return;
  const button = $('csv-button');
  const label = button.textContent;
  button.disabled = true;
  button.textContent = 'Preparing…';
  try {
    const file = await fetchCsv(state.token, query);
    const url = URL.createObjectURL(file.blob);
    const link = el('a', { href: url, download: file.name });
    link.hidden = true;
    document.body.appendChild(link);
    link.click();
    link.remove();
    window.setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (error) {
    showError(error, query);
  } finally {
    button.textContent = label;
    button.disabled = false;
  }
}

// ---------------------------------------------------------------- wiring
function init() {
  $('signin-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const token = $('token-input').value.trim().replace(/^Bearer\s+/i, '');
    const base = $('api-base-input').value.trim();
    if (base && !/^https?:\/\/[^\s]+$/.test(base)) {
      showSignIn({ title: 'The API base URL is not valid.', detail: 'Use a URL such as https://usage.example.com, or leave it empty.' });
      return;
    }
    storage.storeApiBase(base || null);
    if (!token) {
      showSignIn({ title: 'Paste your access token first.' });
      return;
    }
    signIn(token);
  });
  $('sign-out').addEventListener('click', () => signOut());
  $('controls').addEventListener('submit', (event) => {
    event.preventDefault();
    load();
  });
  $('range-select').addEventListener('change', () => {
    toggleCustom();
    if ($('range-select').value !== 'custom') load();
    else $('from-input').focus();
  });
  $('granularity-select').addEventListener('change', load);
  $('account-select').addEventListener('change', load);
  $('account-input').addEventListener('change', load);
  $('metric-select').addEventListener('change', () => {
    storage.savePrefs({ metric: $('metric-select').value });
    if (state.report) render();
    else if (state.claims && state.claims.admin && !currentAccount()) loadOperatorView();
  });
  $('csv-button').addEventListener('click', downloadCsv);
  $('explain-close').addEventListener('click', hideExplanation);
  $('csv-button').disabled = true;
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible' && state.report && state.report.updatedAt) renderFreshness(state.report, load);
  });

  watchAllOverflow();
  const stored = storage.storedToken();
  if (stored) signIn(stored);
  else showSignIn();
}

// Module scripts run after the document is parsed.
init();
