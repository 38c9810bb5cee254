// The usage API client: GET /v1/accounts/{accountId}/usage as JSON (with its quota
// block) or CSV, and the admin ranking GET /v1/accounts, with the
// token as a bearer header (never in the URL).
import { apiBase } from './storage.js';

/** An answer other than 2xx; status 0 means the API could not be reached. */
export class ApiError extends Error {
  constructor(status, code, message, requestId) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.requestId = requestId;
  }
}

function usageUrl(query, format) {
  const params = new URLSearchParams({ from: query.from, to: query.to });
  if (query.granularity === 'month' || query.granularity === 'hour') params.set('granularity', query.granularity);
  // Days in another zone are the API's sums of whole UTC hours; UTC needs no parameter.
  if (query.tz && query.tz !== 'UTC') params.set('tz', query.tz);
  if (format === 'csv') params.set('format', 'csv');
  else if (format === 'json') params.set('quota', 'true');
  return apiBase() + '/v1/accounts/' + encodeURIComponent(query.account) + '/usage?' + params.toString();
}

async function requestUsage(token, query, format, signal) {
  return request(token, usageUrl(query, format), format, signal);
}

async function request(token, url, format, signal) {
  let response;
  try {
    response = await fetch(url, {
      headers: { Authorization: 'Bearer ' + token, Accept: format === 'csv' ? 'text/csv' : 'application/json' },
      cache: 'no-cache',
      credentials: 'omit',
      signal,
    });
  } catch (error) {
    if (error && error.name === 'AbortError') throw error;
    throw new ApiError(0, 'network', 'The usage API could not be reached.');
  }
  if (response.ok) return response;
  const text = await response.text();
  let body = {};
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: keep the status.
  }
  throw new ApiError(response.status, body.error || 'http_' + response.status, body.message || response.statusText, body.requestId);
}

/** The JSON usage report of `query`. */
export async function fetchReport(token, query, signal) {
  return (await requestUsage(token, query, 'json', signal)).json();
}

/**
 * The hours of `query`'s range in its zone: the report with `granularity=hour`
 * (`hours[]` rows `{start, metrics, totals}`, and `days[]` whose `hours` is null, with a
 * reason, when they were counted before hours existed).
 */
export async function fetchHours(token, query, signal) {
  return (await requestUsage(token, { ...query, granularity: 'hour' }, 'hours', signal)).json();
}

/** The CSV of `query` and the file name the API suggests for it. */
export async function fetchCsv(token, query) {
  const response = await requestUsage(token, query, 'csv');
  const match = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') || '');
  const name = match ? match[1] : 'tally-' + query.account + '-' + query.from + '-' + query.to + '.csv';
  return { blob: await response.blob(), name };
}

/** The operator ranking (admin tokens): every account with usage in the range, by `metric`. */
export async function fetchRanking(token, query, metric, signal) {
  const params = new URLSearchParams({ from: query.from, to: query.to, metric });
  return (await request(token, apiBase() + '/v1/accounts?' + params.toString(), 'json', signal)).json();
}

/** One account-day down to its log objects: GET /v1/accounts/{id}/days/{day}/explain. */
export async function fetchExplanation(token, account, day, signal) {
  const url = apiBase() + '/v1/accounts/' + encodeURIComponent(account) + '/days/' + encodeURIComponent(day) + '/explain';
  return (await request(token, url, 'json', signal)).json();
}

/** Days of ingestion health the operator view shows per day of the logs. */
export const HEALTH_DAYS = 7;

/** Ingestion health (admin tokens): GET /v1/health?days=7. */
export async function fetchHealth(token, signal) {
  return (await request(token, apiBase() + '/v1/health?days=' + HEALTH_DAYS, 'json', signal)).json();
}
