import { createHash, randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { authorizeAccount, type AccessGrant } from '../../domain/reading/access';
import { ACCOUNT_ID_RULE, isValidAccountId } from '../../domain/account-id';
import { dayOf } from '../../domain/days';
import { rankAccounts, rankingCsv, rankingCsvFileName } from '../../domain/reading/account-ranking';
import { refuseInexactFigures } from '../../domain/reading/exact-figures';
import { eachDay } from '../../domain/days';
import { AccountNotFoundError, AuthenticationError, describeError, ForbiddenError, ValidationError } from '../../domain/errors';
import { monthOf } from '../../domain/billing/quota';
import { usageCsvFileName, usageReportCsv } from '../../domain/reading/usage-csv';
import { cacheControlFor, parseExplainQuery, parseRankingQuery, parseUsageQuery, type ExplainQuery, type UsageQuery } from '../../domain/reading/usage-query';
import { explanationCsv, explanationCsvFileName, pageOfExplanation } from '../../domain/reading/explanation';
import { explainDay } from './explain';
import { parseHealthDays, type HealthReport } from '../../domain/reading/health';
import { buildUsageReport } from '../../domain/reading/usage-report';
import { buildZonedUsageReport, utcReadRange } from '../../domain/reading/usage-hours';
import { mapWithConcurrency } from '../concurrency';
import type { Log } from '../log';
import type { AccountZones, ActiveAccounts, SourceReader, TokenVerifier, UsageReader } from '../ports';
import { accountQuotas, quotaBlock, type QuotaReadDeps } from './quota-status';

export interface UsageApiDeps {
  readonly reader: UsageReader;
  readonly verifier: TokenVerifier;
  readonly log: Log;
  /** Metrics every row carries even on days without usage (base plus configured). */
  readonly metricNames: readonly string[];
  /** Browser origins allowed to read responses; `['*']` for any; empty for same origin only. */
  readonly corsOrigins: readonly string[];
  /** Allowances and crossings: `/quota` and the usage report's `quota` block (404 / no block when absent). */
  readonly quotas?: QuotaReadDeps;
  /** Accounts with usage on a day (the day index): the admin ranking `GET /v1/accounts` (404 when absent). */
  readonly accounts?: ActiveAccounts;
  /** The log objects behind an account-day: `GET /v1/accounts/{id}/days/{day}/explain` (404 when absent). */
  readonly sources?: SourceReader;
  /** Ingestion health of the last `days` days: `GET /v1/health[?days=N]`, admin tokens only (404 when absent). */
  readonly health?: (days: number) => Promise<HealthReport>;
  /** `TALLY_CLOSE_GRACE_HOURS`: an empty day past it is `closed`, not `open` (see DayStatus); absent: close records alone. */
  readonly closeGraceHours?: number;
  /** Accounts' billing zones (`tally zone set`): the usage report names one as `accountTimeZone` (none when absent). */
  readonly zones?: AccountZones;
  readonly clock?: () => Date;
  /** Log objects one explain answer lists (default EXPLAIN_SOURCES_PER_PAGE). */
  readonly explainSourcesPerPage?: number;
}

type Response = APIGatewayProxyStructuredResultV2 & { statusCode: number; headers: Record<string, string> };

/**
 * The routes, after an optional stage segment: `GET /v1/accounts/{accountId}/usage`,
 * `GET /v1/accounts/{accountId}/quota`, `GET /v1/accounts/{accountId}/days/{day}/explain`
 * and (admin tokens) `GET /v1/accounts` and `GET /v1/health`.
 */
const ACCOUNT_ROUTE = /^(?:\/[^/]+)?\/v1\/accounts\/([^/]*)\/(usage|quota)\/?$/;
const RANKING_ROUTE = /^(?:\/[^/]+)?\/v1\/accounts\/?$/;
const EXPLAIN_ROUTE = /^(?:\/[^/]+)?\/v1\/accounts\/([^/]*)\/days\/([^/]*)\/explain\/?$/;
const HEALTH_ROUTE = /^(?:\/[^/]+)?\/v1\/health\/?$/;

/** What to do when one day's (or one month's) own figure is past exact: no shorter range exists. */
const ONE_DAY_PAST_EXACT = "a day's own counter (or a month's use) holds it, a corrupt or hostile value: look at the account's items in the table";

const BEARER = /^Bearer[ ]+([A-Za-z0-9\-_.~+/]+=*)[ ]*$/i;

/**
 * The read API: API Gateway HTTP API payload v2 in, response out. The Lambda handler
 * and the local HTTP server both call this function, so they answer alike.
 *
 * ```
 * route (404/405) -> bearer token (401) -> query (400) -> grant covers account (404)
 *   -> one Query -> report -> JSON or CSV, ETag (304 when it matches)
 * ```
 *
 * Every answer is logged once as a structured line (never the token); a 5xx body
 * carries only a generic message and the request id, the log carries the details.
 */
/** What {@link handleUsageApiRequest} reads as an account's zone when its read failed. */
const ZONE_UNREAD = Symbol('zone unread');

/** Longer query strings are refused (414) before any work: the routes take a few short parameters. */
export const MAX_QUERY_STRING_LENGTH = 1024;

export async function handleUsageApiRequest(event: APIGatewayProxyEventV2, deps: UsageApiDeps): Promise<Response> {
  const started = Date.now();
  const requestId = event.requestContext?.requestId ?? randomUUID();
  const method = event.requestContext?.http?.method ?? 'GET';
  const path = event.rawPath ?? event.requestContext?.http?.path ?? '/';
  const headers = lowerCaseHeaders(event.headers);
  const cors = corsHeaders(headers.origin, deps.corsOrigins);
  const fields: Record<string, unknown> = { requestId, method, path };

  let response: Response;
  try {
    response = await route();
  } catch (error) {
    response = errorResponse(error, requestId, fields, deps.log);
  }
  response.headers = withVary({ ...response.headers, ...cors }, deps.corsOrigins);
  deps.log.info('usage api request', { ...fields, status: response.statusCode, durationMs: Date.now() - started });
  return response;

  async function route(): Promise<Response> {
    const match = ACCOUNT_ROUTE.exec(path);
    const explain = deps.sources === undefined ? null : EXPLAIN_ROUTE.exec(path);
    const health = deps.health !== undefined && HEALTH_ROUTE.test(path);
    const ranking = match === null && RANKING_ROUTE.test(path) && deps.accounts !== undefined;
    if ((match === null && !ranking && explain === null && !health) || (match?.[2] === 'quota' && deps.quotas === undefined)) {
      return json(404, { error: 'not_found', message: `no route ${method} ${path}; try GET /v1/accounts/{accountId}/usage` }, noStore());
    }
    if (method === 'OPTIONS') return preflight(headers.origin, deps.corsOrigins);
    if (method !== 'GET') {
      return json(405, { error: 'method_not_allowed', message: `${method} is not allowed here; use GET` }, { ...noStore(), allow: 'GET, OPTIONS' });
    }
    const queryLength = (event.rawQueryString ?? '').length;
    if (queryLength > MAX_QUERY_STRING_LENGTH) {
      return json(
        414,
        { error: 'uri_too_long', message: `the query string has ${queryLength} characters; at most ${MAX_QUERY_STRING_LENGTH} are accepted` },
        noStore(),
      );
    }
    const grant = await authenticate(headers.authorization, deps.verifier);
    if (grant.subject !== undefined) fields.subject = grant.subject;
    if (health) {
      if (!grant.admin) throw new ForbiddenError('ingestion health needs an admin token (npx tally token --admin)');
      const days = parseHealthDays(event.queryStringParameters?.days);
      fields.days = days;
      return json(200, await deps.health!(days), { ...noStore() });
    }
    if (explain !== null) {
      const query = parseExplainQuery(decodePathSegment(explain[1] ?? '', 'account id'), decodePathSegment(explain[2] ?? '', 'day'), event.queryStringParameters ?? {}, headers.accept);
      Object.assign(fields, { accountId: query.accountId, day: query.day, format: query.format });
      authorizeAccount(grant, query.accountId);
      return explainResponse(query, headers['if-none-match']);
    }
    if (match === null) {
      if (!grant.admin) throw new ForbiddenError('the ranking of every account needs an admin token (npx tally token --admin)');
      return rankingResponse();
    }
    const accountId = decodePathSegment(match[1] ?? '', 'account id');
    fields.accountId = accountId;
    if (match[2] === 'quota') {
      if (!isValidAccountId(accountId)) throw new ValidationError(`invalid account id: ${ACCOUNT_ID_RULE}`);
      authorizeAccount(grant, accountId);
      return quotaResponse(accountId);
    }
    const query = parseUsageQuery(accountId, event.queryStringParameters ?? {}, headers.accept);
    Object.assign(fields, { from: query.from, to: query.to, granularity: query.granularity, timeZone: query.timeZone, format: query.format });
    authorizeAccount(grant, query.accountId);
    return usageResponse(query, headers['if-none-match']);
  }

  function now(): Date {
    return (deps.clock ?? (() => new Date()))();
  }

  /** What settles an empty day's status: the clock and the grace (nothing when the grace is not configured). */
  function closing(): { closing?: { now: Date; graceHours: number } } {
    return deps.closeGraceHours === undefined ? {} : { closing: { now: now(), graceHours: deps.closeGraceHours } };
  }

  async function usageResponse(query: UsageQuery, ifNoneMatch: string | undefined): Promise<Response> {
    const range = utcReadRange(query);
    // The zone's item is outside the day range (keys.ts, accountZoneKey): one GetItem, sent beside the Query.
    const [{ records, requests }, zone] = await Promise.all([deps.reader.read(query.accountId, range.from, range.to), accountZone(query.accountId)]);
    const accountTimeZone = zone === ZONE_UNREAD ? undefined : zone;
    Object.assign(fields, { queryRequests: requests, records: records.length, ...(deps.zones === undefined ? {} : { zoneReads: 1 }) });
    if (zone === ZONE_UNREAD) fields.zoneRead = 'failed';
    const zoned = buildZonedUsageReport({ ...query, records, metricNames: deps.metricNames, ...closing() });
    const report = accountTimeZone === undefined ? zoned : { ...zoned, accountTimeZone };
    const withQuota =
      query.quota && query.format === 'json' && deps.quotas !== undefined
        ? { ...report, quota: await quotaBlock({ ...deps.quotas, reader: deps.reader, metricNames: report.metricNames }, query.accountId, now()) }
        : report;
    refuseInexactFigures(withQuota, `usage of ${query.accountId} over ${query.from}..${query.to}`);
    const body = query.format === 'csv' ? usageReportCsv(report) : JSON.stringify(withQuota);
    const response = cachedResponse(body, range, ifNoneMatch, query.format === 'csv' ? usageCsvFileName(report) : undefined);
    // A report missing its zone's name is not kept: the next request may read it.
    if (zone === ZONE_UNREAD) response.headers = { ...response.headers, 'cache-control': 'no-store' };
    return response;
  }

  /**
   * The account's billing zone (undefined when none is set), or {@link ZONE_UNREAD} when
   * its GetItem failed (throttled past the SDK's retries, or an error). The zone only
   * names a choice and changes no figure (domain/reading/account-zone.ts), so a failed
   * read costs the report its `accountTimeZone`, logged as a warning, never the usage:
   * a 500 there would turn away a request whose every number was read.
   */
  async function accountZone(accountId: string): Promise<string | undefined | typeof ZONE_UNREAD> {
    if (deps.zones === undefined) return undefined;
    try {
      return await deps.zones.zoneOf(accountId);
    } catch (error) {
      deps.log.warn('account zone unreadable', { requestId, accountId, error: describeError(error) });
      return ZONE_UNREAD;
    }
  }

  function cachedResponse(body: string, range: Pick<UsageQuery, 'to'>, ifNoneMatch: string | undefined, csvFile?: string): Response {
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    const today = dayOf(now());
    const caching = { 'cache-control': cacheControlFor(range, today), etag, vary: 'Authorization, Accept, Origin' };
    if (ifNoneMatch !== undefined && etagMatches(ifNoneMatch, etag)) {
      return { statusCode: 304, headers: caching };
    }
    const type: Record<string, string> =
      csvFile !== undefined
        ? {
            'content-type': 'text/csv; charset=utf-8',
            'content-disposition': `attachment; filename="${csvFile}"`,
          }
        : { 'content-type': 'application/json; charset=utf-8' };
    return { statusCode: 200, headers: { ...type, ...caching, 'x-content-type-options': 'nosniff' }, body, isBase64Encoded: false };
  }

  /** `GET /v1/accounts/{id}/days/{day}/explain`: the day's figures tied to its log objects (see explanation.ts). */
  async function explainResponse(query: ExplainQuery, ifNoneMatch: string | undefined): Promise<Response> {
    const explanation = await explainDay({ reader: deps.reader, sources: deps.sources!, metricNames: deps.metricNames, ...closing() }, query.accountId, query.day);
    Object.assign(fields, { sources: explanation.sources.length, complete: explanation.complete });
    refuseInexactFigures(explanation, `explain of ${query.accountId} on ${query.day}`, ONE_DAY_PAST_EXACT);
    const page = pageOfExplanation(explanation, query.page, deps.explainSourcesPerPage);
    const csv = query.format === 'csv';
    return cachedResponse(csv ? explanationCsv(page) : JSON.stringify(page), { to: query.day }, ifNoneMatch, csv ? explanationCsvFileName(page) : undefined);
  }

  /** `GET /v1/accounts/{id}/quota`: the allowances that apply to the account and this month's crossings. */
  async function quotaResponse(accountId: string): Promise<Response> {
    const month = monthOf(now());
    const { quotas, crossings } = await accountQuotas(deps.quotas!, accountId, month);
    const body = {
      accountId,
      month,
      levels: deps.quotas!.levels,
      quotas,
      thresholds: crossings.map(({ metric, level, allowance, used, crossedAt, notifiedAt, withdrawnAt }) => ({
        metric,
        level,
        allowance,
        used,
        crossedAt,
        ...(notifiedAt === undefined ? {} : { notifiedAt }),
        ...(withdrawnAt === undefined ? {} : { withdrawnAt }),
      })),
    };
    return json(200, refuseInexactFigures(body, `quota of ${accountId} in ${month}`, ONE_DAY_PAST_EXACT), { 'cache-control': 'private, max-age=60', vary: 'Authorization, Origin' });
  }

  /** `GET /v1/accounts?from=&to=[&metric=]` (admin): every account with usage in the range, ranked, with its share. */
  async function rankingResponse(): Promise<Response> {
    const query = parseRankingQuery(event.queryStringParameters ?? {}, deps.metricNames, headers.accept);
    Object.assign(fields, { from: query.from, to: query.to, metric: query.metric, format: query.format });
    const perDay = await mapWithConcurrency(eachDay(query.from, query.to), 4, (day) => deps.accounts!.accountsOn(day));
    const accounts = [...new Set(perDay.flat())].sort();
    const rows = await mapWithConcurrency(accounts, 8, async (accountId) => ({ accountId, totals: await readRangeTotals(accountId, query.from, query.to) }));
    Object.assign(fields, { accounts: accounts.length });
    const ranking = refuseInexactFigures(rankAccounts({ ...query, metricNames: deps.metricNames, rows }), `the ranking over ${query.from}..${query.to}`);
    const csv = query.format === 'csv';
    return cachedResponse(csv ? rankingCsv(ranking) : JSON.stringify(ranking), query, headers['if-none-match'], csv ? rankingCsvFileName(ranking) : undefined);
  }

  async function readRangeTotals(accountId: string, from: string, to: string) {
    const { records } = await deps.reader.read(accountId, from, to, { closedDays: false });
    return buildUsageReport({ accountId, from, to, granularity: 'day', records, metricNames: deps.metricNames }).totals;
  }
}


/**
 * The response when the API could not even be wired (for example the signing secret
 * could not be read at cold start): a generic 500 with CORS, details left to the log.
 */
export function unavailableResponse(event: APIGatewayProxyEventV2, corsOrigins: readonly string[]): Response {
  const requestId = event.requestContext?.requestId ?? randomUUID();
  const response = json(503, { error: 'service_unavailable', message: 'the usage API is starting or misconfigured; try again shortly', requestId }, noStore());
  response.headers = withVary({ ...response.headers, ...corsHeaders(lowerCaseHeaders(event.headers).origin, corsOrigins) }, corsOrigins);
  return response;
}

async function authenticate(authorization: string | undefined, verifier: TokenVerifier): Promise<AccessGrant> {
  if (authorization === undefined || authorization.trim() === '') {
    throw new AuthenticationError('missing_token', 'send a bearer token: Authorization: Bearer <token> (mint one with `npx tally token --account <id>`)');
  }
  const match = BEARER.exec(authorization);
  if (match === null) throw new AuthenticationError('invalid_token', 'the Authorization header must be "Bearer <token>"');
  return verifier.verify(match[1]!);
}

/** A path segment decoded; `what` it holds names it in the 400 when its percent-encoding is broken. */
function decodePathSegment(segment: string, what: 'account id' | 'day'): string {
  try {
    return decodeURIComponent(segment);
  } catch (error) {
    throw new ValidationError(`the ${what} in the path is not valid URL encoding`, { cause: error });
  }
}

function errorResponse(error: unknown, requestId: string, fields: Record<string, unknown>, log: Log): Response {
  if (error instanceof AuthenticationError) {
    fields.refused = error.failure;
    fields.reason = error.message;
    // RFC 6750: no error code when the request carried no credentials at all.
    const challenge =
      error.failure === 'missing_token'
        ? 'Bearer realm="tally"'
        : `Bearer realm="tally", error="invalid_token", error_description="${error.message.replace(/["\\]/g, '')}"`;
    return json(401, { error: error.failure, message: error.message }, { ...noStore(), 'www-authenticate': challenge });
  }
  if (error instanceof ValidationError) {
    fields.reason = error.message;
    return json(400, { error: 'bad_request', message: error.message }, noStore());
  }
  if (error instanceof ForbiddenError) {
    fields.refused = 'forbidden';
    return json(403, { error: 'forbidden', message: error.message }, noStore());
  }
  if (error instanceof AccountNotFoundError) {
    fields.refused = 'account_not_found';
    return json(404, { error: 'not_found', message: 'account not found' }, noStore());
  }
  log.error('usage api request failed', { ...fields, error: describeError(error), stack: (error as Error)?.stack });
  return json(500, { error: 'internal_error', message: 'the usage could not be read; try again, and quote the request id if it persists', requestId }, noStore());
}

function json(statusCode: number, body: unknown, headers: Record<string, string>): Response {
  return {
    statusCode,
    headers: { 'content-type': 'application/json; charset=utf-8', 'x-content-type-options': 'nosniff', ...headers },
    body: JSON.stringify(body),
    isBase64Encoded: false,
  };
}

function noStore(): Record<string, string> {
  return { 'cache-control': 'no-store' };
}

function lowerCaseHeaders(headers: APIGatewayProxyEventV2['headers'] | undefined): Record<string, string | undefined> {
  const lower: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(headers ?? {})) lower[name.toLowerCase()] = value;
  return lower;
}

/** CORS response headers for `origin` when it is allowed; none otherwise (the browser then refuses). */
export function corsHeaders(origin: string | undefined, allowed: readonly string[]): Record<string, string> {
  if (origin === undefined || allowed.length === 0) return {};
  const any = allowed.includes('*');
  if (!any && !allowed.includes(origin)) return {};
  return {
    'access-control-allow-origin': any ? '*' : origin,
    'access-control-expose-headers': 'ETag, Content-Disposition, WWW-Authenticate',
  };
}

/** Adds `Origin` to `Vary` when the answer depends on it (a list of allowed origins). */
function withVary(headers: Record<string, string>, allowed: readonly string[]): Record<string, string> {
  if (allowed.length === 0 || allowed.includes('*')) return headers;
  const vary = (headers.vary ?? '').split(',').map((v) => v.trim()).filter((v) => v !== '');
  if (!vary.includes('Origin')) vary.push('Origin');
  return { ...headers, vary: vary.join(', ') };
}

function preflight(origin: string | undefined, allowed: readonly string[]): Response {
  const cors = corsHeaders(origin, allowed);
  if (Object.keys(cors).length === 0) return { statusCode: 204, headers: noStore() };
  return {
    statusCode: 204,
    headers: {
      'access-control-allow-methods': 'GET, OPTIONS',
      'access-control-allow-headers': 'Authorization, Accept, If-None-Match',
      'access-control-max-age': '600',
    },
  };
}

/** `If-None-Match` holds `etag` (weak comparison, as RFC 9110 asks for GET), or `*`. */
export function etagMatches(ifNoneMatch: string, etag: string): boolean {
  const strip = (tag: string) => tag.trim().replace(/^W\//, '');
  return ifNoneMatch.split(',').some((tag) => tag.trim() === '*' || strip(tag) === strip(etag));
}
