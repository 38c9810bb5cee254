import { ACCOUNT_ID_RULE, isValidAccountId } from '../account-id';
import { addDays, daysBetweenInclusive, isSupportedDay, isValidDay, SUPPORTED_DAYS_TEXT } from '../days';
import { ValidationError } from '../errors';
import { parseTimeZone, UTC_ZONE, zonedHours } from './time-zones';

/** The longest range one request may ask for: a leap year. */
export const MAX_RANGE_DAYS = 366;

/**
 * The longest range `granularity=hour` answers: a month of days, up to 745 hour rows
 * (31 x 24, plus a fall-back hour). Longer ranges are a 400 naming the bound.
 */
export const MAX_HOUR_RANGE_DAYS = 31;

/** Rows per hour (with the day rows), per calendar day, or per calendar month (with the day rows). */
export type Granularity = 'hour' | 'day' | 'month';

/** How the report is written. */
export type ReportFormat = 'json' | 'csv';

/** A validated read of one account's usage. */
export interface UsageQuery {
  readonly accountId: string;
  /** First day, `YYYY-MM-DD` (UTC), included. */
  readonly from: string;
  /** Last day, included. */
  readonly to: string;
  readonly granularity: Granularity;
  /** The IANA zone whose days (and hours' labels) the report is in, canonical; `UTC` by default. */
  readonly timeZone: string;
  readonly format: ReportFormat;
  /** Add the `quota` block (this month's usage against its allowances): with granularity month, or `quota=true`. */
  readonly quota: boolean;
}

/** Query-string values as API Gateway passes them (repeated keys arrive comma-joined). */
export type QueryParameters = Readonly<Record<string, string | undefined>>;

/**
 * Validates the account id and query string of
 * `GET /v1/accounts/{accountId}/usage?from=&to=[&granularity=][&tz=][&format=]`, throwing a
 * {@link ValidationError} whose message tells the caller what to change.
 *
 * `accept` is the request's `Accept` header: `text/csv` asks for CSV like `format=csv`;
 * an explicit `format` wins.
 *
 * @example parseUsageQuery('acme', { from: '2026-11-01', to: '2026-11-30' })
 *          // { accountId: 'acme', from: '2026-11-01', to: '2026-11-30', granularity: 'day', timeZone: 'UTC', format: 'json', quota: false }
 */
export function parseUsageQuery(accountId: string, params: QueryParameters, accept?: string): UsageQuery {
  if (!isValidAccountId(accountId)) throw new ValidationError(`invalid account id: ${ACCOUNT_ID_RULE}`);
  const { from, to } = parseDayRange(params);
  const granularity = granularityOf(params.granularity);
  if (granularity === 'hour') boundHourRange(from, to);
  const timeZone = parseTimeZone(params.tz);
  // A zone whose offset is not a whole hour somewhere in the range is refused here, before any read.
  if (timeZone !== UTC_ZONE) zonedHours(timeZone, from, to);
  return { accountId, from, to, granularity, timeZone, format: formatOf(params.format, accept), quota: quotaOf(params.quota, granularity) };
}

/** `granularity=hour` answers at most {@link MAX_HOUR_RANGE_DAYS} days. */
function boundHourRange(from: string, to: string): void {
  const days = daysBetweenInclusive(from, to);
  if (days > MAX_HOUR_RANGE_DAYS) {
    throw new ValidationError(
      `granularity=hour answers at most ${MAX_HOUR_RANGE_DAYS} days per request; the range ${from}..${to} spans ${days} days (e.g. to=${addDays(from, MAX_HOUR_RANGE_DAYS - 1)})`,
    );
  }
}

/** True when the report's days are not UTC days. */
export function isZoned(query: Pick<UsageQuery, 'timeZone'>): boolean {
  return query.timeZone !== UTC_ZONE;
}

/** A validated explanation request: one account-day. */
export interface ExplainQuery {
  readonly accountId: string;
  readonly day: string;
  readonly format: ReportFormat;
  /** The page of log objects to list (`page`, from 1): see EXPLAIN_SOURCES_PER_PAGE. */
  readonly page: number;
}

/**
 * Validates `GET /v1/accounts/{accountId}/days/{day}/explain[?format=][&tz=UTC][&page=]` (CSV also by
 * `Accept: text/csv`, as the usage route). A `tz` other than UTC is refused, not ignored.
 */
export function parseExplainQuery(accountId: string, day: string, params: QueryParameters, accept?: string): ExplainQuery {
  if (!isValidAccountId(accountId)) throw new ValidationError(`invalid account id: ${ACCOUNT_ID_RULE}`);
  if (!isValidDay(day)) throw new ValidationError(`the day in the path must be a calendar day YYYY-MM-DD, got "${printable(day)}"`);
  if (!isSupportedDay(day)) throw new ValidationError(`the day in the path must be within the days Tally supports, ${SUPPORTED_DAYS_TEXT}, got "${day}"`);
  // Log objects, closing and revisions are kept by UTC day: a zone's day would be silently answered as the UTC day.
  const zone = parseTimeZone(params.tz);
  if (zone !== UTC_ZONE) {
    throw new ValidationError(
      `explain answers UTC days only (log objects, closing and revisions are kept by UTC day), got tz=${zone}: ` +
        'drop tz or give tz=UTC, and explain each UTC day a local day touches (the usage report with granularity=hour shows which)',
    );
  }
  return { accountId, day, format: formatOf(params.format, accept), page: explainPageOf(params.page) };
}

/** The most pages `page` may name: 2,000 log objects a page, 2 x 10^9 objects. */
const MAX_EXPLAIN_PAGE = 1_000_000;

/** `page` of explain: a whole number from 1 (default 1). */
function explainPageOf(value: string | undefined): number {
  if (value === undefined) return 1;
  const page = /^[0-9]{1,7}$/.test(value) ? Number(value) : Number.NaN;
  if (!(page >= 1 && page <= MAX_EXPLAIN_PAGE)) throw new ValidationError(`page must be a whole number from 1 to ${MAX_EXPLAIN_PAGE}, ${got(value)}`);
  return page;
}

/** The day range of a query (`from`, `to`, at most {@link MAX_RANGE_DAYS} days). */
export function parseDayRange(params: QueryParameters): { from: string; to: string } {
  const from = requiredDay(params, 'from');
  const to = requiredDay(params, 'to');
  if (to < from) throw new ValidationError(`"to" (${to}) is before "from" (${from}); give the earlier day as "from"`);
  const days = daysBetweenInclusive(from, to);
  if (days > MAX_RANGE_DAYS) {
    throw new ValidationError(
      `the range ${from}..${to} spans ${days} days; ask for at most ${MAX_RANGE_DAYS} days per request (e.g. to=${addDays(from, MAX_RANGE_DAYS - 1)})`,
    );
  }
  return { from, to };
}

function quotaOf(value: string | undefined, granularity: Granularity): boolean {
  if (value === undefined || value === '') return granularity === 'month';
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new ValidationError(`query parameter "quota" must be "true" or "false", ${got(value)}`);
}

/** A validated read of the operator ranking: every account's usage over a day range, ranked by one metric. */
export interface RankingQuery {
  readonly from: string;
  readonly to: string;
  /** The metric accounts are ranked by (default `requests`). */
  readonly metric: string;
  /** `format=csv` (or an Accept header preferring text/csv): CSV, as the usage endpoint answers. */
  readonly format: ReportFormat;
}

/** Validates `GET /v1/accounts?from=&to=[&metric=]`; `metricNames` are the metrics the API knows. */
export function parseRankingQuery(params: QueryParameters, metricNames: readonly string[], accept?: string): RankingQuery {
  const { from, to } = parseDayRange(params);
  const metric = params.metric === undefined || params.metric === '' ? 'requests' : params.metric;
  if (!metricNames.includes(metric)) throw new ValidationError(`query parameter "metric" must be one of ${metricNames.join(', ')}, ${got(metric)}`);
  return { from, to, metric, format: formatOf(params.format, accept) };
}

function requiredDay(params: QueryParameters, name: 'from' | 'to'): string {
  const value = params[name];
  if (value === undefined || value === '') {
    throw new ValidationError(`query parameter "${name}" is required: a UTC day as YYYY-MM-DD`);
  }
  if (!isValidDay(value)) {
    throw new ValidationError(`query parameter "${name}" must be a calendar day as YYYY-MM-DD, ${got(value)}`);
  }
  if (!isSupportedDay(value)) {
    throw new ValidationError(`query parameter "${name}" must be within the days Tally supports, ${SUPPORTED_DAYS_TEXT}, got "${value}"`);
  }
  return value;
}

function granularityOf(value: string | undefined): Granularity {
  if (value === undefined || value === '' || value === 'day') return 'day';
  if (value === 'month') return 'month';
  if (value === 'hour') return 'hour';
  throw new ValidationError(`query parameter "granularity" must be "hour", "day" or "month", ${got(value)}`);
}

function formatOf(value: string | undefined, accept: string | undefined): ReportFormat {
  if (value === 'json' || value === 'csv') return value;
  if (value !== undefined && value !== '') {
    throw new ValidationError(`query parameter "format" must be "json" or "csv", ${got(value)}`);
  }
  return acceptsCsvFirst(accept) ? 'csv' : 'json';
}

/** True when `text/csv` is the most preferred type the Accept header names. */
function acceptsCsvFirst(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  let best: { type: string; q: number } | undefined;
  for (const part of accept.split(',')) {
    const [type = '', ...parameters] = part.trim().toLowerCase().split(';');
    const qParameter = parameters.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParameter === undefined ? 1 : Number(qParameter.slice(2));
    if (!Number.isFinite(q) || q <= 0) continue;
    if (type.trim() !== 'text/csv' && type.trim() !== 'application/json') continue;
    if (best === undefined || q > best.q) best = { type: type.trim(), q };
  }
  return best?.type === 'text/csv';
}

/**
 * `got "<value>"` for a message, with a hint when the value holds a comma: API Gateway's
 * payload 2.0 joins a parameter given twice with commas ("Duplicate query strings are
 * combined with commas", https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html),
 * so `from=a&from=b` arrives as `from=a,b`, which no valid value contains.
 */
function got(value: string): string {
  return `got "${printable(value)}"` + (value.includes(',') ? ' (a parameter given more than once arrives joined by commas: give it once)' : '');
}

/** Echoes caller input in a message without letting it grow or carry control characters. */
function printable(value: string): string {
  const clean = value.replace(/[^\x20-\x7e]/g, '?');
  return clean.length > 40 ? `${clean.slice(0, 40)}...` : clean;
}

/**
 * How long a client may reuse a report. Today's and yesterday's counts still grow
 * (CloudFront delivers logs hours late, and the first file of a day carries lines of
 * the day before), so ranges that reach them are reusable for a minute; older ranges
 * change only through adjustments, so five minutes, and the ETag makes revalidation
 * cheap. Always `private`: a report belongs to the bearer of one token.
 */
export function cacheControlFor(query: Pick<UsageQuery, 'to'>, today: string): string {
  return query.to >= addDays(today, -1) ? 'private, max-age=60' : 'private, max-age=300';
}
