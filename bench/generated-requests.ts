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

/**
 * All 33 fields of CloudFront's standard log, as AWS's Athena DDL for its v2 Parquet
 * output declares them: every column a string, `date`, `time` and `sc_bytes` included
 * (https://docs.aws.amazon.com/athena/latest/ug/create-cloudfront-table-manual-parquet.html).
 * Values of real length and cardinality: about 50,000 distinct byte sizes (so `sc_bytes`
 * is PLAIN-encoded, as `time` over two days), user agents of 70–140 characters, URIs
 * of 30–70, a unique request id. `typed`: `date` a DATE and `sc_bytes` a BIGINT, as
 * another writer (or a future one of AWS's) might type them.
 */
export function awsParquetFields(options: { readonly typed: boolean }): readonly RequestField[] {
  const field = (legacy: string, parquet: string, sql: string): RequestField => ({ legacy, parquet, sql });
  const agents = [
    'Mozilla/5.0%20(Windows%20NT%2010.0;%20Win64;%20x64)%20AppleWebKit/537.36%20(KHTML,%20like%20Gecko)%20Chrome/131.0.0.0%20Safari/537.36',
    'Mozilla/5.0%20(Macintosh;%20Intel%20Mac%20OS%20X%2014_5)%20AppleWebKit/605.1.15%20(KHTML,%20like%20Gecko)%20Version/17.5%20Safari/605.1.15',
    'Mozilla/5.0%20(iPhone;%20CPU%20iPhone%20OS%2017_5%20like%20Mac%20OS%20X)%20AppleWebKit/605.1.15%20(KHTML,%20like%20Gecko)%20Mobile/15E148',
    'Mozilla/5.0%20(X11;%20Linux%20x86_64;%20rv:132.0)%20Gecko/20100101%20Firefox/132.0',
    'Mozilla/5.0%20(Linux;%20Android%2014;%20Pixel%208)%20AppleWebKit/537.36%20(KHTML,%20like%20Gecko)%20Chrome/131.0.6778.39%20Mobile%20Safari/537.36',
    'okhttp/4.12.0',
    'curl/8.5.0',
    'Amazon%20CloudFront',
  ];
  const pick = (list: readonly string[], salt: number) => `list_extract([${list.map((v) => `'${v}'`).join(',')}], (hash(i * ${salt}) % ${list.length})::BIGINT + 1)`;
  const bytes = `(200 + hash(i * 3) % 50000)`;
  return [
    field('date', 'date', options.typed ? `ts::DATE` : `strftime(ts, '%Y-%m-%d')`),
    field('time', 'time', `strftime(ts, '%H:%M:%S')`),
    field('x-edge-location', 'x_edge_location', `'EDGE' || (hash(i) % 40) || '-P' || (hash(i) % 7)`),
    field('sc-bytes', 'sc_bytes', options.typed ? `${bytes}::BIGINT` : `${bytes}::VARCHAR`),
    field('c-ip', 'c_ip', `(hash(i * 5) % 223 + 1) || '.' || (hash(i * 7) % 256) || '.' || (hash(i * 9) % 256) || '.' || (hash(i * 13) % 256)`),
    field('cs-method', 'cs_method', `CASE WHEN i % 23 = 0 THEN 'POST' WHEN i % 101 = 0 THEN 'HEAD' ELSE 'GET' END`),
    field('cs(Host)', 'cs_Host', `'d111111abcdef8.cloudfront.net'`),
    field('cs-uri-stem', 'cs_uri_stem', `CASE WHEN i % 5 = 0 THEN '/api/authorization/v2/tokens/' || (hash(i) % 1000) ELSE '/static/assets/' || (hash(i * 11) % 20000) || '/bundle-' || substr(md5((hash(i * 11) % 20000)::VARCHAR), 1, 16) || '.min.js' END`),
    field('sc-status', 'sc_status', `CASE WHEN i % 31 = 0 THEN '404' WHEN i % 7 = 0 THEN '304' ELSE '200' END`),
    field('cs(Referer)', 'cs_Referer', `'https://' || account || '.example.com/app/dashboard/' || (hash(i * 13) % 100)`),
    field('cs(User-Agent)', 'cs_User_Agent', pick(agents, 17)),
    field('cs-uri-query', 'cs_uri_query', `CASE WHEN i % 3 = 0 THEN 'v=' || (hash(i * 19) % 100000) || '&locale=en-US' ELSE '-' END`),
    field('cs(Cookie)', 'cs_Cookie', `'-'`),
    field('x-edge-result-type', 'x_edge_result_type', pick(['Hit', 'Miss', 'RefreshHit'], 23)),
    field('x-edge-request-id', 'x_edge_request_id', `replace(replace(to_base64(unhex(md5(i::VARCHAR) || md5((i + 1)::VARCHAR))), '+', '-'), '/', '_')`),
    // One request in 50 for an IP literal, one in 97 with no host header: unattributed.
    field('x-host-header', 'x_host_header', `CASE WHEN i % 50 = 0 THEN '192.0.2.10' WHEN i % 97 = 0 THEN '-' ELSE account || '.example.com' END`),
    field('cs-protocol', 'cs_protocol', `'https'`),
    field('cs-bytes', 'cs_bytes', `(200 + hash(i * 23) % 800)::VARCHAR`),
    field('time-taken', 'time_taken', `((hash(i * 29) % 900) / 1000.0 + 0.001)::DECIMAL(6,3)::VARCHAR`),
    field('x-forwarded-for', 'x_forwarded_for', `'-'`),
    field('ssl-protocol', 'ssl_protocol', pick(['TLSv1.3', 'TLSv1.2'], 31)),
    field('ssl-cipher', 'ssl_cipher', pick(['TLS_AES_128_GCM_SHA256', 'ECDHE-RSA-AES128-GCM-SHA256'], 31)),
    field('x-edge-response-result-type', 'x_edge_response_result_type', pick(['Hit', 'Miss', 'RefreshHit'], 23)),
    field('cs-protocol-version', 'cs_protocol_version', pick(['HTTP/2.0', 'HTTP/1.1', 'HTTP/3.0'], 37)),
    field('fle-status', 'fle_status', `'-'`),
    field('fle-encrypted-fields', 'fle_encrypted_fields', `'-'`),
    field('c-port', 'c_port', `(1024 + hash(i * 41) % 64000)::VARCHAR`),
    field('time-to-first-byte', 'time_to_first_byte', `((hash(i * 29) % 800) / 1000.0 + 0.001)::DECIMAL(6,3)::VARCHAR`),
    field('x-edge-detailed-result-type', 'x_edge_detailed_result_type', pick(['Hit', 'Miss', 'RefreshHit'], 23)),
    field('sc-content-type', 'sc_content_type', pick(['application/javascript', 'application/json', 'text/html;%20charset=utf-8', 'image/png'], 43)),
    field('sc-content-len', 'sc_content_len', `${bytes}::VARCHAR`),
    field('sc-range-start', 'sc_range_start', `'-'`),
    field('sc-range-end', 'sc_range_end', `'-'`),
  ];
}

/** The SELECT of `rows` requests in time order over `hours` from 2026-11-21 00:00 UTC, `accounts` of them, columns named the legacy or the Parquet way. */
export function requestsSelect(fields: readonly RequestField[], rows: number, names: 'legacy' | 'parquet', spread: { readonly accounts: number; readonly hours: number } = { accounts: 500, hours: 12 }): string {
  return `SELECT ${fields.map((field) => `${field.sql} AS "${field[names]}"`).join(', ')}
     FROM (SELECT i, make_timestamp(1795219200000000 + i * ${spread.hours * 3_600_000_000} // ${rows}) AS ts,
                  'customer' || (hash(i * 31) % ${spread.accounts}) AS account FROM range(${rows}) t(i)) ORDER BY ts`;
}

/** The directives a legacy log of `fields` opens with. */
export function legacyHeader(fields: readonly RequestField[]): string {
  return `#Version: 1.0\n#Fields: ${fields.map((field) => field.legacy).join(' ')}\n`;
}
