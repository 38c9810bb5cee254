/**
 * The requests the format benches have DuckDB write (format-count.ts, item 6 of `npm run
 * bench`; parquet-count.ts): CloudFront's 19 usual fields over half a UTC day, 500
 * accounts, every value a string as AWS writes them. Each field has its legacy `#Fields`
 * name, its Parquet column name and the SQL that makes it from the row number `i`, the
 * timestamp `ts` and the account.
 */
export interface RequestField {
  readonly legacy: string;
  readonly parquet: string;
  readonly sql: string;
}

/** The fields; with `unattributed`, one request in 50 has an IP literal for a host header and one in 97 none. */
export function requestFields(options: { readonly unattributed: boolean }): readonly RequestField[] {
  const field = (legacy: string, parquet: string, sql: string): RequestField => ({ legacy, parquet, sql });
  return [
    field('date', 'date', `strftime(ts, '%Y-%m-%d')`),
    field('time', 'time', `strftime(ts, '%H:%M:%S')`),
    field('x-edge-location', 'x_edge_location', `list_extract(['IAD89-P1','FRA56-P5','NRT57-P3','LHR61-C1','SIN2-C1'], (hash(i) % 5)::BIGINT + 1)`),
    field('sc-bytes', 'sc_bytes', `(hash(i * 3) % 200000)::VARCHAR`),
    field('c-ip', 'c_ip', `'198.51.' || (hash(i * 5) % 256) || '.' || (hash(i * 7) % 256)`),
    field('cs-method', 'cs_method', `CASE WHEN i % 9 = 0 THEN 'POST' ELSE 'GET' END`),
    field('cs(Host)', 'cs_Host', `'d111111abcdef8.cloudfront.net'`),
    field('cs-uri-stem', 'cs_uri_stem', `CASE WHEN i % 5 = 0 THEN '/api/authorization/' || (hash(i) % 1000) ELSE '/assets/' || (hash(i * 11) % 5000) || '.js' END`),
    field('sc-status', 'sc_status', `CASE WHEN i % 31 = 0 THEN '404' ELSE '200' END`),
    field('cs(Referer)', 'cs_Referer', `'https://' || account || '.example.com/app/' || (hash(i * 13) % 100)`),
    field(
      'cs(User-Agent)',
      'cs_User_Agent',
      `list_extract(['Mozilla/5.0%20(Windows%20NT%2010.0;%20Win64;%20x64)','Mozilla/5.0%20(Macintosh;%20Intel%20Mac%20OS%20X%2014_5)','curl/8.5.0','okhttp/4.12.0'], (hash(i * 17) % 4)::BIGINT + 1)`,
    ),
    field('cs-uri-query', 'cs_uri_query', `CASE WHEN i % 3 = 0 THEN 'v=' || (hash(i * 19) % 100000) ELSE '-' END`),
    field('cs(Cookie)', 'cs_Cookie', `'-'`),
    field('x-edge-result-type', 'x_edge_result_type', `CASE WHEN i % 4 = 0 THEN 'Miss' ELSE 'Hit' END`),
    field('x-edge-request-id', 'x_edge_request_id', `to_base64(unhex(md5(i::VARCHAR)))`),
    // Unattributed, or cs(Host)'s label: Tally and DuckDB must agree on those too.
    field('x-host-header', 'x_host_header', options.unattributed ? `CASE WHEN i % 50 = 0 THEN '192.0.2.10' WHEN i % 97 = 0 THEN '-' ELSE account || '.example.com' END` : `account || '.example.com'`),
    field('cs-protocol', 'cs_protocol', `'https'`),
    field('cs-bytes', 'cs_bytes', `(200 + hash(i * 23) % 800)::VARCHAR`),
    field('time-taken', 'time_taken', `((hash(i * 29) % 900) / 1000.0 + 0.001)::DECIMAL(6,3)::VARCHAR`),
  ];
}

/** The SELECT of `rows` requests in time order, columns named the legacy or the Parquet way. */
export function requestsSelect(fields: readonly RequestField[], rows: number, names: 'legacy' | 'parquet'): string {
  return `SELECT ${fields.map((field) => `${field.sql} AS "${field[names]}"`).join(', ')}
     FROM (SELECT i, make_timestamp(1795219200000000 + i * 43200000000 // ${rows}) AS ts,
                  'customer' || (hash(i * 31) % 500) AS account FROM range(${rows}) t(i)) ORDER BY ts`;
}

/** The directives a legacy log of `fields` opens with. */
export function legacyHeader(fields: readonly RequestField[]): string {
  return `#Version: 1.0\n#Fields: ${fields.map((field) => field.legacy).join(' ')}\n`;
}
