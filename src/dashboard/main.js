// Tally usage dashboard: a static page over the read API
// (GET /v1/accounts/{accountId}/usage, .../days/{day}/explain; admins: /v1/health, /v1/accounts). Native ES modules, no framework; uPlot draws the
// chart. The token lives in sessionStorage only (this tab), is sent as a bearer token and
// never appears in a URL. Days are calendar days of the chosen time zone (the account's,
// this browser's or UTC; the choice is kept in localStorage): the API sums whole UTC
// hours into them. Each day opens its hours (hours-card below).
//
// This module wires the page: sign-in and sign-out, the controls, loading and errors.
// The views are chart.js, summary.js and tables.js; the rules they share with the API
// are in lib/ (TypeScript, compiled with src/domain by the build).
import { ApiError, fetchCsv, fetchExplanation, fetchHealth, fetchHours, fetchRanking, fetchReport } from './api.js';
import { explainFailed, hideExplanation, renderExplanation, showExplainLoading } from './explain.js';
import { hideHealth, renderHealth } from './health.js';
import { destroyChart, renderChart } from './chart.js';
import { destroyHourChart, renderHourChart } from './hour-chart.js';
import { $, clear, el, fillNotice, setStatus } from './dom.js';
import { decodeClaims, isExpired, tokenFromPaste } from './lib/claims.js';
import { longDay, metricLabel, readableValue, shortDay, utcTime } from './lib/format.js';
import { checkSelection, rangeFor, rangeLength } from './lib/selection.js';
import { accountZoneOf, browserZone, hoursNote, hoursOfDay, MAX_HOURLY_CHART_DAYS, missingHoursReason, parseHourStart, pickZone, todayIn, zoneOptions } from './lib/time-zone.js';
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
  if (p.chart) $('chart-select').value = p.chart;
  setUpZonePicker(state.accountZones.get(currentAccount()));
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
  const range = rangeFor(preset, todayIn(new Date(), 'UTC'));
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
    const range = rangeFor('30d', todayIn(new Date(), state.zone));
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
    today: todayIn(new Date(), state.zone),
  });
  if (!checked.ok) {
    setStatus('error', 'Check the selection.', checked.error);
    return;
  }
  const query = { ...checked.query, tz: state.zone };
  if (isExpired(state.claims, Date.now())) {
    signOut(EXPIRED);
    return;
  }
  hideExplanation();
  hideHours();
  storage.savePrefs({ account: query.account, range: $('range-select').value, from: $('from-input').value, to: $('to-input').value, granularity: query.granularity });
  if (state.inflight) state.inflight.abort();
  const controller = new AbortController();
  state.inflight = controller;
  $('title-account').textContent = query.account;
  const days = rangeLength(query);
  $('range-caption').textContent = longDay(query.from) + ' – ' + longDay(query.to) + ' · ' + days + ' day' + (days === 1 ? '' : 's') + ' (' + query.tz + ')';
  $('results').setAttribute('aria-busy', 'true');
  $('results').classList.add('is-loading');
  setStatus('loading', 'Loading usage for ' + query.account + '…');
  try {
    const hourly = $('chart-select').value === 'hour' && days <= MAX_HOURLY_CHART_DAYS;
    const [report, hours] = await Promise.all([
      fetchReport(state.token, query, controller.signal),
      hourly ? fetchHours(state.token, query, controller.signal) : Promise.resolve(null),
    ]);
    if (state.inflight !== controller) return;
    state.inflight = null;
    if (query.tz !== 'UTC' && typeof report.timeZone !== 'string') {
      // An API from before time zones ignores tz: its UTC days must not be shown as the zone's.
      throw new ApiError(400, 'no_time_zones', 'This usage API answers UTC days only (it ignored tz=' + query.tz + '): choose UTC, or update the API');
    }
    if (learnAccountZone(query.account, report)) {
      // The account's zone was not known when asked: ask again in it.
      load();
      return;
    }
    state.report = report;
    state.rangeHours = hours;
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
  destroyHourChart($('chart'));
  hideExplanation();
  hideHours();
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
  const empty = report.updatedAt === null && report.adjustments.length === 0 && report.totals !== null && report.metricNames.every((m) => report.totals[m] === 0);
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
  renderRangeChart(report, metric, now);
  renderAdjustments(report);
  renderUsageTable(report, metric, now, openDay, state.loaded.tz);
  if (state.hoursShown) renderHours(state.hoursShown, metric);
  loadRanking(metric);
}

/**
 * The range chart: bars per hour when asked and the range has at most
 * MAX_HOURLY_CHART_DAYS days, else per day (saying why, when hours were asked).
 */
function renderRangeChart(report, metric, now) {
  const zone = state.loaded.tz;
  const container = $('chart');
  const asked = $('chart-select').value === 'hour';
  if (!asked || !state.rangeHours) {
    destroyHourChart(container);
    renderChart(report, metric, now, zone);
    if (asked) $('chart-note').textContent = 'Bars per hour are drawn for ranges of up to ' + MAX_HOURLY_CHART_DAYS + ' days: pick a shorter range. ' + $('chart-note').textContent;
    return;
  }
  destroyChart();
  const hours = state.rangeHours;
  const drawn = renderHourChart(container, hours.hours, metric, now);
  $('chart-title').textContent = metricLabel(metric) + ' per hour (' + zone + ')';
  const notes = [];
  const missing = hours.days.filter((d) => missingHoursReason(d) !== null);
  if (missing.length > 0) {
    notes.push('No hours for ' + missing.map((d) => shortDay(d.day)).join(', ') + ': ' + missingHoursReason(missing[0]) + '.');
  }
  for (const day of hours.days) {
    const note = missingHoursReason(day) === null ? hoursNote(hoursOfDay(hours.hours, day.day).length) : '';
    if (note) notes.push(shortDay(day.day) + ': ' + note);
  }
  notes.push(drawn + ' hours; hover a bar for the exact value.');
  $('chart-note').textContent = notes.join(' ');
}

// ---------------------------------------------------------------- the hours of a day
/** A day was clicked: its hours in the chosen zone and, on UTC days, where it comes from. */
function openDay(day) {
  openHours(day);
  if (state.loaded && state.loaded.tz === 'UTC') explainDay(day);
  else hideExplanation();
}

async function openHours(day) {
  const query = state.loaded;
  if (!query) return;
  if (state.hoursLoading) state.hoursLoading.abort();
  const controller = new AbortController();
  state.hoursLoading = controller;
  state.hoursShown = null;
  const card = $('hours-card');
  card.hidden = false;
  card.setAttribute('data-day', day);
  card.removeAttribute('data-ready');
  $('hours-title').textContent = 'Hours of ' + longDay(day);
  $('hours-summary').textContent = 'Loading…';
  $('hours-missing').hidden = true;
  $('hours-note').textContent = '';
  clear($('hours-explain'));
  destroyHourChart($('hours-chart'));
  card.scrollIntoView({ block: 'nearest' });
  try {
    const report = await fetchHours(state.token, { ...query, from: day, to: day }, controller.signal);
    if (state.hoursLoading !== controller) return;
    state.hoursShown = { day, zone: query.tz, report };
    renderHours(state.hoursShown, $('metric-select').value);
  } catch (error) {
    if (error && error.name === 'AbortError') return;
    $('hours-summary').textContent = 'The hours could not be loaded: ' + ((error && error.message) || 'the API failed') + '.';
    card.setAttribute('data-ready', 'error');
  }
}

/** Draws the hours card for `shown` ({ day, zone, report }) and `metric`. */
function renderHours(shown, metric) {
  const { day, zone, report } = shown;
  const card = $('hours-card');
  const row = report.days.find((d) => d.day === day);
  const reason = row ? missingHoursReason(row) : 'the API returned no such day';
  $('hours-title').textContent = 'Hours of ' + longDay(day) + ' (' + zone + ')';
  const chart = $('hours-chart');
  if (reason !== null) {
    destroyHourChart(chart);
    chart.hidden = true;
    const box = $('hours-missing');
    box.hidden = false;
    box.textContent = 'No hours for this day: ' + reason + '.';
    // In a zone other than UTC a day is a sum of UTC hours: without them its totals are unknown too.
    $('hours-summary').textContent = row && row.metrics === null ? 'Its totals are not known either: in this zone they are sums of hours.' : 'Only the day’s totals are known.';
    $('hours-note').textContent = '';
  } else {
    $('hours-missing').hidden = true;
    chart.hidden = false;
    const rows = hoursOfDay(report.hours, day);
    renderHourChart(chart, rows, metric, new Date());
    $('hours-summary').textContent = rows.length + ' hours · ' + metricLabel(metric).toLowerCase() + ' ' + readableValue(row.metrics[metric] ?? 0, metric);
    $('hours-note').textContent = [hoursNote(rows.length), 'Hover a bar for the exact value.'].filter(Boolean).join(' ');
  }
  renderUtcExplainLinks(day, zone, report);
  card.setAttribute('data-ready', reason === null ? 'hours' : 'missing');
}

/** In a zone other than UTC, a local day touches one or two UTC days: each can be explained. */
function renderUtcExplainLinks(day, zone, report) {
  const box = $('hours-explain');
  clear(box);
  if (zone === 'UTC') return;
  const rows = hoursOfDay(report.hours || [], day);
  const utcDays = new Set(rows.map((r) => new Date(parseHourStart(r.start).epochSeconds * 1000).toISOString().slice(0, 10)));
  if (utcDays.size === 0) return;
  box.appendChild(el('span', { className: 'muted', text: 'Log objects are kept per UTC day: ' }));
  for (const utcDay of utcDays) {
    const button = el('button', { type: 'button', className: 'button button-small', 'data-utc-day': utcDay, text: 'Explain ' + utcDay + ' (UTC)' });
    button.addEventListener('click', () => explainDay(utcDay));
    box.appendChild(button);
  }
}

function hideHours() {
  if (state.hoursLoading) state.hoursLoading.abort();
  state.hoursLoading = null;
  state.hoursShown = null;
  destroyHourChart($('hours-chart'));
  $('hours-card').hidden = true;
}

// ---------------------------------------------------------------- time zone
/** Fills the time-zone selector (the account's zone when known, this browser's, UTC) and picks the kept choice. */
function setUpZonePicker(accountZone) {
  const select = $('tz-select');
  const options = zoneOptions(accountZone, browserZone());
  clear(select);
  for (const option of options) select.appendChild(el('option', { value: option.choice, text: option.label }));
  const picked = pickZone(options, storage.storedZoneChoice(), browserZone());
  select.value = picked.choice;
  state.zoneOptions = options;
  state.zone = picked.zone;
}

/**
 * Notes the account's zone a report names; true when the zone to show changed with it
 * (the account's zone is the choice), so the range must be asked for again.
 */
function learnAccountZone(account, report) {
  const zone = accountZoneOf(report);
  if ((state.accountZones.get(account) ?? null) === zone) return false;
  state.accountZones.set(account, zone);
  const before = state.zone;
  setUpZonePicker(zone);
  return state.zone !== before;
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
  accountChanged();
}

/** Another account: its zone (when known) among the choices, then its usage. */
function accountChanged() {
  setUpZonePicker(state.accountZones.get(currentAccount()));
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
    const token = tokenFromPaste($('token-input').value);
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
  $('tz-select').addEventListener('change', () => {
    const option = state.zoneOptions.find((o) => o.choice === $('tz-select').value);
    storage.storeZoneChoice(option.choice);
    state.zone = option.zone;
    load();
  });
  $('chart-select').addEventListener('change', () => {
    storage.savePrefs({ chart: $('chart-select').value });
    load();
  });
  $('hours-close').addEventListener('click', hideHours);
  $('account-select').addEventListener('change', accountChanged);
  $('account-input').addEventListener('change', accountChanged);
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
