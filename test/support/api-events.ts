import type { APIGatewayProxyEventV2 } from 'aws-lambda';

/**
 * The payload v2 event API Gateway's HTTP API sends for `GET /v1/accounts/{accountId}/usage`
 * (lower-case headers, the route's path parameter, query parameters as given).
 */
export function usageApiEvent(
  options: {
    accountId?: string;
    path?: string;
    query?: Record<string, string>;
    token?: string;
    headers?: Record<string, string>;
    method?: string;
  } = {},
): APIGatewayProxyEventV2 {
  const accountId = options.accountId ?? 'acme';
  const rawPath = options.path ?? `/v1/accounts/${encodeURIComponent(accountId)}/usage`;
  const query = options.query ?? {};
  const headers: Record<string, string> = { host: 'api.example.com', ...(options.headers ?? {}) };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  return {
    version: '2.0',
    routeKey: 'GET /v1/accounts/{accountId}/usage',
    rawPath,
    rawQueryString: new URLSearchParams(query).toString(),
    headers,
    ...(Object.keys(query).length === 0 ? {} : { queryStringParameters: query }),
    pathParameters: { accountId },
    requestContext: {
      accountId: '123456789012',
      apiId: 'api',
      domainName: 'api.example.com',
      domainPrefix: 'api',
      http: { method: options.method ?? 'GET', path: rawPath, protocol: 'HTTP/1.1', sourceIp: '198.51.100.7', userAgent: 'jest' },
      requestId: `req-${Math.random().toString(36).slice(2)}`,
      routeKey: 'GET /v1/accounts/{accountId}/usage',
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    isBase64Encoded: false,
  };
}
