// Tally usage dashboard: a static page over the read API
// (GET /v1/accounts/{accountId}/usage). No build step, no framework; uPlot draws the chart.
// The token lives in sessionStorage only (this tab), is sent as a bearer token and never
// appears in a URL. Days are UTC calendar days, like the counters.
(function () {
  'use strict';

  var STORAGE = { token: 'tally.token', apiBase: 'tally.apiBase', prefs: 'tally.prefs', accounts: 'tally.recentAccounts' };
  var MAX_RANGE_DAYS = 366;
  var DAY_MS = 86400000;
  var ACCOUNT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
  var METRIC_LABELS = { requests: 'Requests', bytes: 'Bytes' };

  var $ = function (id) { return document.getElementById(id); };
  var numberFormat = new Intl.NumberFormat('en-US');
  var state = {
    token: null,
    claims: null,
    report: null,
    loaded: null, // { account, from, to, granularity } of `report`
    inflight: null,
    chart: null,
    resizeObserver: null,
    expiryTimer: null,
  };

  // ---------------------------------------------------------------- storage
  function session(key, value) {
    try {
      if (value === undefined) return window.sessionStorage.getItem(key);
      if (value === null) window.sessionStorage.removeItem(key);
      else window.sessionStorage.setItem(key, value);
    } catch (e) { /* storage disabled: the page still works for this load */ }
    return null;
  }
  function prefs() {
    try { return JSON.parse(session(STORAGE.prefs) || '{}') || {}; } catch (e) { return {}; }
  }
  function savePrefs(patch) {
    var next = Object.assign(prefs(), patch);
    session(STORAGE.prefs, JSON.stringify(next));
  }
  function apiBase() {
    var configured = (window.TALLY_CONFIG && window.TALLY_CONFIG.apiBaseUrl) || '';
    return (session(STORAGE.apiBase) || configured).replace(/\/+$/, '');
  }

  // ---------------------------------------------------------------- token
  /** Reads the claims of a JWT for display only; the API verifies the signature. */
  function decodeClaims(token) {
    var parts = token.split('.');
    if (parts.length !== 3 || parts.some(function (p) { return !/^[A-Za-z0-9_-]+$/.test(p); })) {
      throw new Error('That does not look like an access token: expected three base64url parts separated by dots.');
    }
    var json;
    try {
      var b64 = parts[1].replace(/-/g, '+').replace(/_/g, '/');
      var bin = atob(b64 + '==='.slice((b64.length + 3) % 4));
      var bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      json = JSON.parse(new TextDecoder().decode(bytes));
    } catch (e) {
      throw new Error('That does not look like an access token: its claims could not be read.');
    }
    if (json === null || typeof json !== 'object') throw new Error('That does not look like an access token.');
    var accounts = Array.isArray(json.accounts) ? json.accounts.filter(function (a) { return typeof a === 'string'; }) : [];
    var scope = typeof json.scope === 'string' ? json.scope.split(' ') : [];
    return {
      accounts: accounts,
      admin: scope.indexOf('usage:admin') !== -1,
      exp: typeof json.exp === 'number' ? json.exp : null,
      sub: typeof json.sub === 'string' ? json.sub : null,
    };
  }
  function tokenExpired(claims) {
    return claims.exp !== null && claims.exp * 1000 <= Date.now();
  }

  // ---------------------------------------------------------------- days (UTC)
  function dayOf(date) { return date.toISOString().slice(0, 10); }
  function parseDay(day) { return new Date(day + 'T00:00:00Z'); }
  function addDays(day, n) { return dayOf(new Date(parseDay(day).getTime() + n * DAY_MS)); }
  function daysBetween(from, to) { return Math.round((parseDay(to) - parseDay(from)) / DAY_MS) + 1; }
  function isDay(value) {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
    var d = parseDay(value);
    return !isNaN(d.getTime()) && dayOf(d) === value;
  }
  function rangeFor(preset) {
    var today = dayOf(new Date());
    var now = parseDay(today);
    switch (preset) {
      case '7d': return { from: addDays(today, -6), to: today };
      case '90d': return { from: addDays(today, -89), to: today };
      case 'this-month': return { from: today.slice(0, 8) + '01', to: today };
      case 'previous-month': {
        var firstThis = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
        var lastPrev = new Date(firstThis.getTime() - DAY_MS);
        return { from: dayOf(lastPrev).slice(0, 8) + '01', to: dayOf(lastPrev) };
      }
      case '30d':
      default: return { from: addDays(today, -29), to: today };
    }
  }
  function longDay(day) {
    return parseDay(day).toLocaleDateString('en-US', { weekday: 'short', month: 'short', day: 'numeric', year: 'numeric', timeZone: 'UTC' });
  }
  function shortDay(day) {
    return parseDay(day).toLocaleDateString('en-US', { month: 'short', day: 'numeric', timeZone: 'UTC' });
  }
  function weekday(day) {
    return parseDay(day).toLocaleDateString('en-US', { weekday: 'short', timeZone: 'UTC' });
  }
  function monthName(month) {
    return parseDay(month + '-01').toLocaleDateString('en-US', { month: 'long', year: 'numeric', timeZone: 'UTC' });
  }

  // ---------------------------------------------------------------- numbers
  function metricLabel(name) {
    if (METRIC_LABELS[name]) return METRIC_LABELS[name];
    var words = name.replace(/_/g, ' ');
    return words.charAt(0).toUpperCase() + words.slice(1);
  }
  function exact(n) { return numberFormat.format(n); }
  function humanBytes(n) {
    var units = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];
    var value = Math.abs(n);
    var unit = 0;
    while (value >= 1000 && unit < units.length - 1) { value /= 1000; unit++; }
    var text = unit === 0 ? String(value) : value.toFixed(value < 10 ? 2 : value < 100 ? 1 : 0);
    return (n < 0 ? '-' : '') + text + ' ' + units[unit];
  }
  function compact(n, metric) {
    if (metric === 'bytes') return humanBytes(n);
    return new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 }).format(n);
  }
  function friendly(n, metric) { return metric === 'bytes' ? humanBytes(n) : exact(n); }
  function relativeTime(iso) {
    var seconds = Math.round((Date.now() - Date.parse(iso)) / 1000);
    if (seconds < 45) return 'just now';
    var minutes = Math.round(seconds / 60);
    if (minutes < 60) return minutes + ' min ago';
    var hours = Math.round(minutes / 60);
    if (hours < 48) return hours + ' h ago';
    return Math.round(hours / 24) + ' days ago';
  }
  function utcTime(iso) {
    return new Date(iso).toLocaleString('en-US', { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hour12: false, timeZone: 'UTC' }) + ' UTC';
  }

  // ---------------------------------------------------------------- DOM helpers
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (key) {
        if (key === 'text') node.textContent = attrs[key];
        else if (key === 'className') node.className = attrs[key];
        else node.setAttribute(key, attrs[key]);
      });
    }
    (children || []).forEach(function (child) { if (child) node.appendChild(child); });
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  /** One notice at a time under the controls: kind is info, loading, empty, error or warning. */
  function setStatus(kind, title, detail, action) {
    var box = $('status');
    clear(box);
    if (!kind) { box.hidden = true; box.removeAttribute('data-state'); return; }
    box.hidden = false;
    box.className = 'notice notice-' + kind;
    box.setAttribute('data-state', kind);
    var body = el('div', { className: 'notice-body' }, [
      kind === 'loading' ? el('span', { className: 'spinner', 'aria-hidden': 'true' }) : null,
      el('div', {}, [el('strong', { text: title }), detail ? el('p', { text: detail }) : null]),
    ]);
    box.appendChild(body);
    if (action) {
      var button = el('button', { type: 'button', className: 'button', text: action.label });
      button.addEventListener('click', action.run);
      box.appendChild(button);
    }
  }

  // ---------------------------------------------------------------- API
  function ApiError(status, code, message, requestId) {
    this.status = status;
    this.code = code;
    this.message = message;
    this.requestId = requestId;
  }

  function usageUrl(query, format) {
    var params = new URLSearchParams({ from: query.from, to: query.to });
    if (query.granularity === 'month') params.set('granularity', 'month');
    if (format === 'csv') params.set('format', 'csv');
    return apiBase() + '/v1/accounts/' + encodeURIComponent(query.account) + '/usage?' + params.toString();
  }

  function request(query, format, signal) {
    return fetch(usageUrl(query, format), {
      headers: { Authorization: 'Bearer ' + state.token, Accept: format === 'csv' ? 'text/csv' : 'application/json' },
      cache: 'no-cache',
      credentials: 'omit',
      signal: signal,
    }).then(function (response) {
      if (response.ok) return response;
      return response.text().then(function (text) {
        var body = {};
        try { body = JSON.parse(text); } catch (e) { /* not JSON: keep the status */ }
        throw new ApiError(response.status, body.error || 'http_' + response.status, body.message || response.statusText, body.requestId);
      });
    }, function (error) {
      if (error && error.name === 'AbortError') throw error;
      throw new ApiError(0, 'network', 'The usage API could not be reached.');
    });
  }

  // ---------------------------------------------------------------- views
  function showSignIn(notice) {
    stopExpiryTimer();
    $('dashboard-view').hidden = true;
    $('session').hidden = true;
    $('signin-view').hidden = false;
    var box = $('signin-error');
    if (notice) {
      box.hidden = false;
      box.className = 'notice notice-' + (notice.kind || 'error');
      box.setAttribute('data-state', notice.state || 'error');
      clear(box);
      box.appendChild(el('div', {}, [el('strong', { text: notice.title }), notice.detail ? el('p', { text: notice.detail }) : null]));
    } else {
      box.hidden = true;
      box.removeAttribute('data-state');
    }
    $('api-base-input').value = session(STORAGE.apiBase) || '';
    var input = $('token-input');
    input.value = '';
    input.focus();
  }

  function signOut(notice) {
    if (state.inflight) state.inflight.abort();
    state.token = null;
    state.claims = null;
    state.report = null;
    session(STORAGE.token, null);
    showSignIn(notice);
  }

  function expiredNotice() {
    return {
      kind: 'warning',
      state: 'expired',
      title: 'Your access token has expired.',
      detail: 'Paste a new token to continue. Locally, mint one with: npx tally token --account <id>',
    };
  }

  function signIn(token) {
    var claims;
    try {
      claims = decodeClaims(token);
    } catch (error) {
      showSignIn({ title: 'This token cannot be used.', detail: error.message });
      return;
    }
    if (tokenExpired(claims)) {
      showSignIn(expiredNotice());
      return;
    }
    state.token = token;
    state.claims = claims;
    session(STORAGE.token, token);
    showDashboard();
  }

  function startExpiryTimer() {
    stopExpiryTimer();
    if (!state.claims || state.claims.exp === null) return;
    var ms = state.claims.exp * 1000 - Date.now();
    if (ms < 2147483647) state.expiryTimer = window.setTimeout(function () { signOut(expiredNotice()); }, Math.max(0, ms));
  }
  function stopExpiryTimer() {
    if (state.expiryTimer !== null) window.clearTimeout(state.expiryTimer);
    state.expiryTimer = null;
  }

  function showDashboard() {
    $('signin-view').hidden = true;
    $('dashboard-view').hidden = false;
    $('session').hidden = false;
    var claims = state.claims;
    var who = claims.admin ? 'Admin' : claims.accounts.length + ' account' + (claims.accounts.length === 1 ? '' : 's');
    if (claims.sub) who = claims.sub + ' · ' + who;
    if (claims.exp !== null) who += ' · expires ' + utcTime(new Date(claims.exp * 1000).toISOString());
    $('session-who').textContent = who;
    startExpiryTimer();
    setUpAccountPicker();
    var p = prefs();
    if (p.range) $('range-select').value = p.range;
    if (p.from) $('from-input').value = p.from;
    if (p.to) $('to-input').value = p.to;
    if (p.granularity) $('granularity-select').value = p.granularity;
    toggleCustom();
    if (currentAccount()) load();
    else {
      clearResults();
      setStatus('info', claims.admin ? 'Enter an account id to see its usage.' : 'This token does not name any account.',
        claims.admin ? 'Type the account id in the Account field and press Show.' : 'Ask for a token that names the accounts you need.');
    }
  }

  function recentAccounts() {
    try { return JSON.parse(session(STORAGE.accounts) || '[]'); } catch (e) { return []; }
  }

  function setUpAccountPicker() {
    var claims = state.claims;
    var select = $('account-select');
    var input = $('account-input');
    var remembered = prefs().account;
    if (claims.admin) {
      select.hidden = true;
      input.hidden = false;
      $('account-field').querySelector('label').setAttribute('for', 'account-input');
      var options = $('account-options');
      clear(options);
      claims.accounts.concat(recentAccounts()).filter(function (a, i, all) { return all.indexOf(a) === i; })
        .forEach(function (a) { options.appendChild(el('option', { value: a })); });
      input.value = remembered || claims.accounts[0] || '';
    } else {
      input.hidden = true;
      select.hidden = false;
      $('account-field').querySelector('label').setAttribute('for', 'account-select');
      clear(select);
      claims.accounts.forEach(function (a) { select.appendChild(el('option', { value: a, text: a })); });
      select.disabled = claims.accounts.length <= 1;
      if (remembered && claims.accounts.indexOf(remembered) !== -1) select.value = remembered;
    }
  }

  function currentAccount() {
    return (state.claims && state.claims.admin ? $('account-input').value : $('account-select').value).trim();
  }

  function toggleCustom() {
    var custom = $('range-select').value === 'custom';
    $('custom-range').hidden = !custom;
    $('custom-range-to').hidden = !custom;
    $('custom-help').hidden = !custom;
    if (custom && !$('from-input').value) {
      var r = rangeFor('30d');
      $('from-input').value = r.from;
      $('to-input').value = r.to;
    }
  }

  /** The query the controls describe, or an error message saying what to fix. */
  function selection() {
    var account = currentAccount();
    if (!ACCOUNT_ID.test(account)) return { error: 'Enter an account id: letters, digits, ".", "_" or "-".' };
    var preset = $('range-select').value;
    var range;
    if (preset === 'custom') {
      var from = $('from-input').value;
      var to = $('to-input').value;
      if (!isDay(from) || !isDay(to)) return { error: 'Pick both a start and an end day for the custom range.' };
      if (to < from) return { error: 'The end day is before the start day.' };
      if (daysBetween(from, to) > MAX_RANGE_DAYS) return { error: 'Pick at most ' + MAX_RANGE_DAYS + ' days.' };
      range = { from: from, to: to };
    } else {
      range = rangeFor(preset);
    }
    return { account: account, from: range.from, to: range.to, granularity: $('granularity-select').value };
  }

  // ---------------------------------------------------------------- loading
  function load() {
    var query = selection();
    if (query.error) {
      setStatus('error', 'Check the selection.', query.error);
      return;
    }
    if (tokenExpired(state.claims)) { signOut(expiredNotice()); return; }
    savePrefs({ account: query.account, range: $('range-select').value, from: $('from-input').value, to: $('to-input').value, granularity: query.granularity });
    if (state.inflight) state.inflight.abort();
    var controller = new AbortController();
    state.inflight = controller;
    $('title-account').textContent = query.account;
    $('range-caption').textContent = rangeCaption(query);
    $('results').setAttribute('aria-busy', 'true');
    $('results').classList.add('is-loading');
    setStatus('loading', 'Loading usage for ' + query.account + '…');
    request(query, 'json', controller.signal)
      .then(function (response) { return response.json(); })
      .then(function (report) {
        if (state.inflight !== controller) return;
        state.inflight = null;
        state.report = report;
        state.loaded = query;
        rememberAccount(query.account);
        render();
      })
      .catch(function (error) {
        if (error && error.name === 'AbortError') return;
        if (state.inflight !== controller) return;
        state.inflight = null;
        showError(error, query);
      })
      .then(function () {
        if (state.inflight === null) {
          $('results').setAttribute('aria-busy', 'false');
          $('results').classList.remove('is-loading');
        }
      });
  }

  function rememberAccount(account) {
    if (!state.claims.admin) return;
    var list = recentAccounts().filter(function (a) { return a !== account; });
    list.unshift(account);
    session(STORAGE.accounts, JSON.stringify(list.slice(0, 10)));
  }

  function rangeCaption(query) {
    var days = daysBetween(query.from, query.to);
    return longDay(query.from) + ' – ' + longDay(query.to) + ' · ' + days + ' day' + (days === 1 ? '' : 's') + ' (UTC)';
  }

  function showError(error, query) {
    if (!(error instanceof ApiError)) error = new ApiError(0, 'client', String(error && error.message || error));
    if (error.status === 401) {
      if (error.code === 'token_expired') signOut(expiredNotice());
      else signOut({ state: 'rejected', title: 'The usage API rejected this token.', detail: error.message + '. Check that you pasted the whole token and that it was issued for this environment.' });
      return;
    }
    clearResults();
    if (error.status === 404) {
      setStatus('error', 'Account "' + query.account + '" was not found.', 'It does not exist or this token may not read it. Pick another account.');
    } else if (error.status === 400) {
      setStatus('error', 'The API refused this selection.', error.message);
    } else if (error.status === 0) {
      setStatus('error', 'The usage API could not be reached.', 'Check your connection (and the API base URL under Connection settings), then try again.', { label: 'Try again', run: load });
    } else {
      setStatus('error', 'The usage could not be loaded (HTTP ' + error.status + ').',
        (error.message || 'The server failed.') + (error.requestId ? ' Request id: ' + error.requestId + '.' : '') + ' Try again in a moment.',
        { label: 'Try again', run: load });
    }
  }

  function clearResults() {
    $('results').hidden = true;
    $('freshness').textContent = '';
    $('csv-button').disabled = true;
  }

  // ---------------------------------------------------------------- rendering
  function selectedMetric() {
    var names = state.report.metricNames;
    var select = $('metric-select');
    var wanted = select.value || prefs().metric;
    clear(select);
    names.forEach(function (name) { select.appendChild(el('option', { value: name, text: metricLabel(name) })); });
    select.value = names.indexOf(wanted) !== -1 ? wanted : names[0];
    return select.value;
  }

  function render() {
    var report = state.report;
    var metric = selectedMetric();
    renderFreshness(report);
    var empty = report.updatedAt === null && report.adjustments.length === 0 &&
      report.metricNames.every(function (m) { return report.totals[m] === 0; });
    if (empty) {
      clearResults();
      $('freshness').textContent = 'No data yet';
      setStatus('empty', 'No usage recorded for ' + report.accountId + ' in this range.',
        'Usage appears here a few minutes after CloudFront delivers its logs. Try a longer range, or check the account id.');
      return;
    }
    setStatus(null);
    $('results').hidden = false;
    $('csv-button').disabled = false;
    renderStats(report, metric);
    renderChart(report, metric);
    renderAdjustments(report);
    renderTable(report, metric);
  }

  function renderFreshness(report) {
    var box = $('freshness');
    clear(box);
    if (report.updatedAt === null) return;
    box.appendChild(el('span', { className: 'dot', 'aria-hidden': 'true' }));
    box.appendChild(document.createTextNode('Updated '));
    box.appendChild(el('time', { datetime: report.updatedAt, title: utcTime(report.updatedAt), text: relativeTime(report.updatedAt) }));
    box.appendChild(el('span', { className: 'muted', text: ' · ' + utcTime(report.updatedAt) }));
    var refresh = el('button', { type: 'button', className: 'button button-quiet button-small', id: 'refresh-button', text: 'Refresh' });
    refresh.addEventListener('click', load);
    box.appendChild(refresh);
  }

  function stat(label, value, detail, id) {
    return el('div', { className: 'stat', id: id }, [
      el('div', { className: 'stat-label', text: label }),
      el('div', { className: 'stat-value', text: value }),
      detail ? el('div', { className: 'stat-detail', text: detail }) : null,
    ]);
  }

  function renderStats(report, metric) {
    var box = $('stats');
    clear(box);
    var days = report.days;
    var measured = report.measuredTotals[metric];
    var adjustment = report.adjustmentTotals[metric];
    var peak = days.reduce(function (best, d) { return d.metrics[metric] > best.metrics[metric] ? d : best; }, days[0]);
    var active = days.filter(function (d) { return d.metrics[metric] !== 0; }).length;
    var label = metricLabel(metric);
    box.appendChild(stat('Total ' + label.toLowerCase(), friendly(report.totals[metric], metric),
      adjustment !== 0 ? 'measured ' + friendly(measured, metric) + (adjustment > 0 ? ' + ' : ' − ') + friendly(Math.abs(adjustment), metric) + ' adjusted'
        : metric === 'bytes' ? exact(report.totals[metric]) + ' bytes' : 'measured, no adjustments', 'stat-total'));
    box.appendChild(stat('Daily average', friendly(Math.round(measured / days.length), metric), 'over ' + days.length + ' days', 'stat-average'));
    box.appendChild(stat('Peak day', friendly(peak.metrics[metric], metric), peak.metrics[metric] > 0 ? longDay(peak.day) : 'no usage', 'stat-peak'));
    box.appendChild(stat('Days with usage', active + ' of ' + days.length, active === days.length ? 'every day' : (days.length - active) + ' without', 'stat-active'));
  }

  function cssVar(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }

  function renderChart(report, metric) {
    var container = $('chart');
    if (state.chart) { state.chart.destroy(); state.chart = null; }
    clear(container);
    if (typeof window.uPlot !== 'function') {
      container.appendChild(el('p', { className: 'muted', text: 'The chart library did not load; the table below has every number.' }));
      return;
    }
    var xs = report.days.map(function (d) { return parseDay(d.day).getTime() / 1000; });
    var measured = report.days.map(function (d) { return d.metrics[metric]; });
    var adjusted = report.days.map(function (d) { return d.adjustments[metric] !== 0 ? d.adjustments[metric] : null; });
    var hasAdjustments = adjusted.some(function (v) { return v !== null; });
    var accent = cssVar('--chart-bar') || '#4f46e5';
    var warn = cssVar('--chart-adjustment') || '#d97706';
    var axis = cssVar('--text-muted') || '#64748b';
    var grid = cssVar('--chart-grid') || 'rgba(100,116,139,0.15)';
    var many = xs.length > 45;
    var series = [
      { label: 'Day', value: function (u, ts) { return ts == null ? '—' : longDay(dayOf(new Date(ts * 1000))); } },
      {
        label: 'Measured ' + metricLabel(metric).toLowerCase(),
        fill: accent,
        stroke: accent,
        width: 0,
        paths: window.uPlot.paths.bars({ size: [many ? 0.8 : 0.66, 56], radius: 0.12 }),
        points: { show: false },
        value: function (u, v) { return v == null ? '—' : friendly(v, metric); },
      },
    ];
    var data = [xs, measured];
    if (hasAdjustments) {
      series.push({
        label: 'Adjustment',
        stroke: warn,
        width: 0,
        paths: function () { return null; },
        points: { show: true, size: 9, stroke: warn, fill: warn, width: 2 },
        value: function (u, v) { return v == null ? '—' : (v > 0 ? '+' : '') + friendly(v, metric); },
      });
      data.push(adjusted);
    }
    var width = Math.max(280, container.clientWidth);
    var height = window.matchMedia('(max-width: 640px)').matches ? 220 : 300;
    var opts = {
      width: width,
      height: height,
      tzDate: function (ts) { return window.uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'); },
      padding: [16, 28, 0, 4],
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      legend: { live: true },
      scales: {
        x: { time: true, range: function (u, min, max) { return [min - 43200, max + 43200]; } },
        y: { range: function (u, min, max) { return [min < 0 ? min * 1.3 : 0, max > 0 ? max * 1.12 : 1]; } },
      },
      axes: [
        {
          stroke: axis,
          grid: { show: false },
          ticks: { stroke: grid, size: 4 },
          font: '12px system-ui, -apple-system, Segoe UI, Roboto, sans-serif',
          // One label per day, or per 2, 3, 7, 14... days when they would crowd, ending on the last day.
          splits: function (u) {
            var room = Math.max(1, Math.floor(u.bbox.width / (window.devicePixelRatio || 1) / 68));
            var step = [1, 2, 3, 7, 14, 28, 56].find(function (s) { return Math.ceil(xs.length / s) <= room; }) || 91;
            return xs.filter(function (x, i) { return (xs.length - 1 - i) % step === 0; });
          },
          values: function (u, splits) { return splits.map(function (ts) { return shortDay(dayOf(new Date(ts * 1000))); }); },
        },
        {
          stroke: axis,
          grid: { stroke: grid, width: 1 },
          ticks: { show: false },
          size: 64,
          font: '12px system-ui, -apple-system, Segoe UI, Roboto, sans-serif',
          values: function (u, splits) { return splits.map(function (v) { return compact(v, metric); }); },
        },
      ],
      series: series,
    };
    state.chart = new window.uPlot(opts, data, container);
    var peak = Math.max.apply(null, measured);
    container.setAttribute('aria-label', 'Bar chart of ' + metricLabel(metric).toLowerCase() + ' per day from ' + longDay(report.from) +
      ' to ' + longDay(report.to) + '; highest ' + friendly(peak, metric) + '. The table below lists every day.');
    $('chart-title').textContent = metricLabel(metric) + ' per day';
    $('chart-note').textContent = hasAdjustments ? 'Bars: measured. Dots: adjustments on that day.' : 'Hover a bar for the exact value.';
    if (!state.resizeObserver && window.ResizeObserver) {
      state.resizeObserver = new ResizeObserver(function () {
        if (state.chart) state.chart.setSize({ width: Math.max(280, $('chart').clientWidth), height: state.chart.height });
      });
      state.resizeObserver.observe(container);
    }
  }

  function renderAdjustments(report) {
    var card = $('adjustments-card');
    var body = card.querySelector('tbody');
    clear(body);
    card.hidden = report.adjustments.length === 0;
    report.adjustments.forEach(function (a) {
      body.appendChild(el('tr', {}, [
        el('td', { text: a.day }),
        el('td', { text: metricLabel(a.metric) }),
        el('td', { className: 'num ' + (a.delta < 0 ? 'negative' : 'positive'), 'data-value': String(a.delta), text: (a.delta > 0 ? '+' : '') + exact(a.delta) }),
        el('td', { text: a.reason }),
      ]));
    });
  }

  function renderTable(report, metric) {
    var table = $('days-table');
    var names = report.metricNames;
    var thead = table.querySelector('thead');
    var tbody = table.querySelector('tbody');
    var tfoot = table.querySelector('tfoot');
    clear(thead); clear(tbody); clear(tfoot);
    var byMonth = report.granularity === 'month' && Array.isArray(report.months);
    $('table-title').textContent = byMonth ? 'Months' : 'Days';
    $('table-note').textContent = byMonth
      ? 'Measured usage per calendar month (UTC), cut to the range.'
      : 'Measured usage per UTC day.';
    var headRow = el('tr', {}, [el('th', { scope: 'col', text: byMonth ? 'Month' : 'Day' })]);
    names.forEach(function (name) {
      headRow.appendChild(el('th', { scope: 'col', className: 'num' + (name === metric ? ' selected' : ''), 'data-metric': name, text: metricLabel(name) }));
    });
    thead.appendChild(headRow);

    var rows = byMonth ? report.months : report.days;
    rows.forEach(function (row) {
      var zero = names.every(function (n) { return row.metrics[n] === 0; });
      var label = byMonth
        ? el('th', { scope: 'row' }, [el('span', { text: monthName(row.month) }), row.days < daysBetween(row.month + '-01', lastDayOfMonth(row.month))
          ? el('span', { className: 'muted cell-note', text: ' ' + shortDay(row.from) + '–' + shortDay(row.to) }) : null])
        : el('th', { scope: 'row' }, [el('span', { className: 'weekday muted', text: weekday(row.day) }), el('span', { text: row.day })]);
      var tr = el('tr', { className: zero ? 'zero' : '', 'data-period': byMonth ? row.month : row.day }, [label]);
      names.forEach(function (name) {
        tr.appendChild(el('td', {
          className: 'num' + (name === metric ? ' selected' : ''),
          'data-metric': name,
          'data-value': String(row.metrics[name]),
          title: name === 'bytes' ? humanBytes(row.metrics[name]) : '',
          text: exact(row.metrics[name]),
        }));
      });
      tbody.appendChild(tr);
    });

    var footRow = function (label, values, className) {
      var tr = el('tr', { className: className }, [el('th', { scope: 'row', text: label })]);
      names.forEach(function (name) {
        tr.appendChild(el('td', { className: 'num' + (name === metric ? ' selected' : ''), 'data-metric': name, 'data-value': String(values[name]), text: exact(values[name]) }));
      });
      tfoot.appendChild(tr);
    };
    var hasAdjustments = names.some(function (n) { return report.adjustmentTotals[n] !== 0; });
    footRow('Measured total', report.measuredTotals, 'measured-total');
    if (hasAdjustments) {
      footRow('Adjustments', report.adjustmentTotals, 'adjustment-total');
      footRow('Total', report.totals, 'grand-total');
    }
  }

  function lastDayOfMonth(month) {
    var parts = month.split('-');
    return dayOf(new Date(Date.UTC(Number(parts[0]), Number(parts[1]), 0)));
  }

  // ---------------------------------------------------------------- CSV
  function downloadCsv() {
    var query = state.loaded;
    if (!query) return;
    var button = $('csv-button');
    button.disabled = true;
    var label = button.textContent;
    button.textContent = 'Preparing…';
    request(query, 'csv')
      .then(function (response) {
        var disposition = response.headers.get('content-disposition') || '';
        var match = /filename="([^"]+)"/.exec(disposition);
        var name = match ? match[1] : 'tally-' + query.account + '-' + query.from + '-' + query.to + '.csv';
        return response.blob().then(function (blob) { return { blob: blob, name: name }; });
      })
      .then(function (file) {
        var url = URL.createObjectURL(file.blob);
        var link = el('a', { href: url, download: file.name });
        link.hidden = true;
        document.body.appendChild(link);
        link.click();
        link.remove();
        window.setTimeout(function () { URL.revokeObjectURL(url); }, 10000);
      })
      .catch(function (error) { showError(error, query); })
      .then(function () {
        button.textContent = label;
        button.disabled = false;
      });
  }

  // ---------------------------------------------------------------- wiring
  function init() {
    $('signin-form').addEventListener('submit', function (event) {
      event.preventDefault();
      var token = $('token-input').value.trim().replace(/^Bearer\s+/i, '');
      var base = $('api-base-input').value.trim();
      if (base && !/^https?:\/\/[^\s]+$/.test(base)) {
        showSignIn({ title: 'The API base URL is not valid.', detail: 'Use a URL such as https://usage.example.com, or leave it empty.' });
        return;
      }
      session(STORAGE.apiBase, base || null);
      if (!token) {
        showSignIn({ title: 'Paste your access token first.' });
        return;
      }
      signIn(token);
    });
    $('sign-out').addEventListener('click', function () { signOut(); });
    $('controls').addEventListener('submit', function (event) { event.preventDefault(); load(); });
    $('range-select').addEventListener('change', function () {
      toggleCustom();
      if ($('range-select').value !== 'custom') load();
      else $('from-input').focus();
    });
    $('granularity-select').addEventListener('change', load);
    $('account-select').addEventListener('change', load);
    $('account-input').addEventListener('change', load);
    $('metric-select').addEventListener('change', function () {
      savePrefs({ metric: $('metric-select').value });
      if (state.report) render();
    });
    $('csv-button').addEventListener('click', downloadCsv);
    $('csv-button').disabled = true;
    document.addEventListener('visibilitychange', function () {
      if (document.visibilityState === 'visible' && state.report && state.report.updatedAt) renderFreshness(state.report);
    });

    var stored = session(STORAGE.token);
    if (stored) signIn(stored);
    else showSignIn();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
}());
