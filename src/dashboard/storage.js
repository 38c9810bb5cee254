// What the page keeps between loads, in this tab's session storage only: the token,
// the API base URL, the last selection and the accounts an admin looked at. One choice
// outlives the tab, in local storage: the time zone (a kind: account, browser or UTC).

const KEYS = { token: 'tally.token', apiBase: 'tally.apiBase', prefs: 'tally.prefs', accounts: 'tally.recentAccounts' };

/** Reads (`value` undefined), removes (null) or writes one item; storage may be disabled. */
function session(key, value) {
  try {
    if (value === undefined) return window.sessionStorage.getItem(key);
    if (value === null) window.sessionStorage.removeItem(key);
    else window.sessionStorage.setItem(key, value);
  } catch {
    // Storage disabled: the page still works for this load.
  }
  return null;
}

function readJson(key, fallback) {
  try {
    return JSON.parse(session(key) || 'null') ?? fallback;
  } catch {
    return fallback;
  }
}

export const storedToken = () => session(KEYS.token);
export const storeToken = (token) => session(KEYS.token, token);

/** The API base URL typed under Connection settings, or null. */
export const storedApiBase = () => session(KEYS.apiBase);
export const storeApiBase = (base) => session(KEYS.apiBase, base);

/** Where the usage API is: the stored base URL, else `config.js`'s, else this origin. */
export function apiBase() {
  const configured = (window.TALLY_CONFIG && window.TALLY_CONFIG.apiBaseUrl) || '';
  return (storedApiBase() || configured).replace(/\/+$/, '');
}

/** The last selection: account, range, from, to, granularity, metric. */
export const prefs = () => readJson(KEYS.prefs, {});
export const savePrefs = (patch) => session(KEYS.prefs, JSON.stringify(Object.assign(prefs(), patch)));

export const recentAccounts = () => readJson(KEYS.accounts, []);

/** Puts `account` first in the recent list (ten at most). */
export function rememberAccount(account) {
  const list = recentAccounts().filter((a) => a !== account);
  list.unshift(account);
  session(KEYS.accounts, JSON.stringify(list.slice(0, 10)));
}

const ZONE_KEY = 'tally.timeZone';

/** The time-zone choice kept in local storage (it outlives the tab), or null. */
export function storedZoneChoice() {
  try {
    return window.localStorage.getItem(ZONE_KEY);
  } catch {
    return null;
  }
}

/** Keeps the time-zone choice (`account`, `browser` or `utc`) for later visits. */
export function storeZoneChoice(choice) {
  try {
    window.localStorage.setItem(ZONE_KEY, choice);
  } catch {
    // Storage disabled: the choice holds for this page only.
  }
}
