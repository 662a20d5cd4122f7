/**
 * What the adapters share so that one request never stops a server: what the platform should not
 * have sent is a 400 problem naming the field, and anything else thrown while answering becomes that
 * request's 500 `internal` problem with its request id, reported once.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import { ValidationError } from '../../contract/errors.js';
import { REQUEST_ID_HEADER, REQUEST_ID_PATTERN } from '../../protocol/schemas.js';
import { toProblem } from '../problems.js';
import type { HttpRequest, HttpResponse } from '../types.js';

/** Told of each error that became a 500 answer, with the request's ids (to log it once). */
export type OnError = (error: unknown, requestId: string, platformRequestId?: string) => void;

/** Reports errors to a logger, as the router logs the ones it catches. */
export const logTo =
  (logger: Logger): OnError =>
  (error, requestId, platformRequestId) =>
    logger.error('request failed', { requestId, platformRequestId, error: error as Error });

/** An answer with the request's id in its `X-Request-Id` header. */
export function withRequestId<A extends { readonly headers: Record<string, string> }>(
  answer: A,
  requestId: string,
): A {
  return { ...answer, headers: { ...answer.headers, [REQUEST_ID_HEADER.toLowerCase()]: requestId } };
}

/**
 * What `answer` resolves to; whatever it throws becomes the request's problem answer (with its
 * `X-Request-Id`: the router sets it on the answers it makes).
 */
export async function guarded<T>(
  { requestId, platformRequestId }: RequestIds,
  onError: OnError,
  answer: () => Promise<T>,
): Promise<T | HttpResponse> {
  try {
    return await answer();
  } catch (error) {
    const { response, internal } = toProblem(error, requestId);
    if (internal) onError(error, requestId, platformRequestId);
    return withRequestId(response, requestId);
  }
}

/**
 * Canonical padded base64, as API Gateway and Function Compute encode bodies: checked by length and
 * by re-encoding (a regular expression over a 4 MiB body overflows the stack).
 */
const isBase64 = (text: string) =>
  text.length % 4 === 0 && Buffer.from(text, 'base64').toString('base64') === text;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A field of an event that is missing or of the wrong type (a 400 naming it). */
export const malformed = (field: string, what: string) =>
  new ValidationError(field, `malformed event: ${what}`);

/** A request's ids: the one its answer and logs carry, and the platform's own (logged beside it). */
export interface RequestIds {
  readonly requestId: string;
  readonly platformRequestId?: string;
}

/**
 * The request id of a request whose `X-Request-Id` is `sent` (a header value, any case of its name
 * already resolved): kept when it matches `REQUEST_ID_PATTERN`, otherwise a fresh UUID.
 */
export const requestIdOf = (sent: unknown): string =>
  typeof sent === 'string' && REQUEST_ID_PATTERN.test(sent) ? sent : randomUUID();

/** The value of the header `name` (lower case) in a map of headers of any case; never throws. */
function headerOf(headers: unknown, name: string): unknown {
  if (!isObject(headers)) return undefined;
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}

/**
 * The ids of an event (API Gateway v2, FC 3): the client's `X-Request-Id` when valid, otherwise a
 * fresh one; the platform's from `requestContext.requestId`, else `fallback` (Lambda's context).
 * Never throws.
 */
export function eventRequestIds(event: unknown, fallback?: unknown): RequestIds {
  const context = isObject(event) ? event.requestContext : undefined;
  const own = isObject(context) ? context.requestId : undefined;
  const platform = typeof own === 'string' && own !== '' ? own : fallback;
  return {
    requestId: requestIdOf(headerOf(isObject(event) ? event.headers : undefined, REQUEST_ID)),
    ...(typeof platform === 'string' && platform !== '' ? { platformRequestId: platform } : {}),
  };
}

const REQUEST_ID = REQUEST_ID_HEADER.toLowerCase();

/** Whether an event (API Gateway v2 or FC 3) is a HEAD request, whose answer has no body; never throws. */
export function isHead(event: unknown): boolean {
  const context = isObject(event) ? event.requestContext : undefined;
  const http = isObject(context) ? context.http : undefined;
  return isObject(http) && typeof http.method === 'string' && http.method.toUpperCase() === 'HEAD';
}

/**
 * The parts API Gateway v2 and Function Compute 3 HTTP events share (`requestContext.http.method`,
 * `rawPath`, `headers`, `body`, `isBase64Encoded`), checked; a `ValidationError` names the first bad
 * field. `ids` are the event's (`eventRequestIds`), as the adapter logged them.
 */
export function eventParts(
  event: unknown,
  ids: RequestIds = eventRequestIds(event),
): Omit<HttpRequest, 'query' | 'claims'> {
  if (!isObject(event)) throw malformed('event', 'not a JSON object');
  const context = event.requestContext;
  if (!isObject(context)) throw malformed('requestContext', 'missing');
  const method = isObject(context.http) ? context.http.method : undefined;
  if (typeof method !== 'string' || method === '') throw malformed('requestContext.http.method', 'missing');
  const path = event.rawPath;
  if (typeof path !== 'string' || !path.startsWith('/')) throw malformed('rawPath', 'not a path');
  if (!isObject(event.headers)) throw malformed('headers', 'missing');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.headers)) {
    if (value === undefined) continue;
    if (typeof value !== 'string') throw malformed('headers', `${name} is not a string`);
    headers[name.toLowerCase()] = value;
  }
  const { body, isBase64Encoded } = event;
  if (body !== undefined && body !== null && typeof body !== 'string')
    throw malformed('body', 'not a string');
  if (isBase64Encoded === true && typeof body === 'string' && !isBase64(body))
    throw malformed('body', 'flagged base64 but is not');
  // A text body arrives decoded: a lone surrogate in it would be stored as U+FFFD, so it is refused.
  if (isBase64Encoded !== true && typeof body === 'string' && !body.isWellFormed())
    throw new ValidationError('body', 'is not valid UTF-8');
  return {
    method,
    path,
    headers,
    body: body ? Buffer.from(body, isBase64Encoded === true ? 'base64' : 'utf8') : undefined,
    ...ids,
  };
}
