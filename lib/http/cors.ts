/**
 * Cross-origin calls from browsers (CORS), with the origins CORS_ORIGINS configures (off when it is
 * unset). The router answers preflights of allowed origins and marks the answers they may read;
 * API Gateway is configured from the same lists (serverless.yml's `httpApi.cors`, rendered by
 * `apiGatewayCors` at package time), and there it answers preflights itself. Each list is defined
 * here once: the request headers the API reads, the answer headers clients read.
 */
import type { CorsOrigins } from '../config.js';
import { HEADER_NAMES, REQUEST_ID_HEADER } from '../protocol/schemas.js';
import { addVary } from './compression.js';
import { ANSWER_HEADERS, API_METHODS } from './routes/index.js';
import type { HttpRequest, HttpResponse } from './types.js';

/**
 * Request headers a browser may send: the bearer token, the body's type, every header a route
 * reads, and the request id the router keeps when the client sends a valid one.
 */
export const CORS_ALLOWED_HEADERS: readonly string[] = [
  'Authorization',
  'Content-Type',
  ...Object.values(HEADER_NAMES),
  REQUEST_ID_HEADER,
];

/**
 * Answer headers a browser lets scripts read beyond the safelisted ones (Content-Type,
 * Content-Length, Cache-Control...): those answers carry (ETag, Location, Retry-After), the
 * request id, and the Allow of a 405.
 */
export const CORS_EXPOSED_HEADERS: readonly string[] = [...ANSWER_HEADERS, REQUEST_ID_HEADER, 'Allow'];

/** The methods a preflight allows: every method of the API. */
export const CORS_METHODS: readonly string[] = API_METHODS;

/** Seconds a browser may keep a preflight's answer. */
export const CORS_MAX_AGE_SECONDS = 600;

/** The Access-Control-Allow-Origin of an `Origin`: `*`, the origin itself, or none when it is not allowed. */
export function allowedOrigin(
  origins: CorsOrigins | undefined,
  origin: string | undefined,
): string | undefined {
  if (!origins || origin === undefined) return undefined;
  if (origins === '*') return '*';
  return origins.includes(origin) ? origin : undefined;
}

/**
 * The answer to a CORS preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) from
 * an allowed origin: 204 with what it may send and read. Undefined for anything else (CORS off, not
 * a preflight, an origin not allowed): the request is then answered as any other.
 */
export function preflight(origins: CorsOrigins | undefined, request: HttpRequest): HttpResponse | undefined {
  if (request.method.toUpperCase() !== 'OPTIONS') return undefined;
  if (request.headers['access-control-request-method'] === undefined) return undefined;
  const allow = allowedOrigin(origins, request.headers.origin);
  if (allow === undefined) return undefined;
  return {
    status: 204,
    headers: {
      'access-control-allow-origin': allow,
      'access-control-allow-methods': CORS_METHODS.join(', '),
      'access-control-allow-headers': CORS_ALLOWED_HEADERS.join(', '),
      'access-control-max-age': String(CORS_MAX_AGE_SECONDS),
      'cache-control': 'no-store',
      ...(allow === '*' ? {} : { vary: 'Origin' }),
    },
  };
}

/**
 * An answer with its CORS headers: for an allowed origin, Access-Control-Allow-Origin and
 * Access-Control-Expose-Headers; with exact origins configured, `Vary: Origin` on every answer (it
 * depends on the request's Origin). Unchanged when CORS is off.
 */
export function withCors(
  response: HttpResponse,
  origins: CorsOrigins | undefined,
  request: HttpRequest,
): HttpResponse {
  if (!origins) return response;
  let headers = origins === '*' ? response.headers : addVary(response.headers, 'Origin');
  const allow = allowedOrigin(origins, request.headers.origin);
  if (allow !== undefined && headers['access-control-allow-origin'] === undefined)
    headers = {
      ...headers,
      'access-control-allow-origin': allow,
      'access-control-expose-headers': CORS_EXPOSED_HEADERS.join(', '),
    };
  return headers === response.headers ? response : { ...response, headers };
}

/**
 * serverless.yml's `provider.httpApi.cors` for the origins (osls renders it as the HTTP API's
 * CorsConfiguration): false when CORS is off.
 */
export function apiGatewayCors(origins: CorsOrigins | undefined) {
  if (!origins) return false;
  return {
    allowedOrigins: origins === '*' ? ['*'] : [...origins],
    allowedMethods: [...CORS_METHODS],
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    exposedResponseHeaders: [...CORS_EXPOSED_HEADERS],
    maxAge: CORS_MAX_AGE_SECONDS,
  };
}
