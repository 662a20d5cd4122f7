/**
 * Alibaba Cloud Function Compute 3.0 HTTP trigger adapter. The event arrives as a JSON buffer
 * (`rawPath`, `headers`, `queryParameters`, `body`, `isBase64Encoded`, `requestContext`); the answer
 * is `{ statusCode, headers, body, isBase64Encoded }`. The trigger's JWT authentication runs first,
 * and the function verifies the bearer token again itself (see auth.ts). The handler never throws:
 * a malformed event is a 400 problem, an error while answering a 500 (guard.ts).
 */
import type { App } from '../app.js';
import type { HttpRequest, HttpResponse } from '../types.js';
import { eventParts, eventRequestIds, guarded, isHead, logTo, malformed, type RequestIds } from './guard.js';

/** The documented shape of an FC 3.0 HTTP trigger event. */
export interface FcHttpEvent {
  version?: string;
  rawPath: string;
  headers: Record<string, string>;
  queryParameters?: Record<string, string>;
  body?: string;
  isBase64Encoded?: boolean;
  requestContext: { requestId: string; http: { method: string; path?: string } };
}

export interface FcHttpResult {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
  isBase64Encoded: boolean;
}

/** The event in what FC passes (a JSON buffer, or its parsed form); undefined when it is not JSON. */
function parseEvent(raw: Buffer | string | FcHttpEvent): unknown {
  if (!Buffer.isBuffer(raw) && typeof raw !== 'string') return raw;
  try {
    return JSON.parse(raw.toString());
  } catch {
    return undefined;
  }
}

/** The neutral request of a parsed event; `ValidationError` when it is malformed. */
function requestOf(event: unknown, ids?: RequestIds): HttpRequest {
  const parts = eventParts(event, ids);
  const query = (event as { queryParameters?: unknown }).queryParameters ?? {};
  if (typeof query !== 'object' || Object.values(query).some((v) => typeof v !== 'string'))
    throw malformed('queryParameters', 'not a map of strings');
  return { ...parts, query: { ...(query as Record<string, string>) } };
}

/** The neutral request of an FC event (the buffer FC passes, or its parsed form). */
export function fromFunctionCompute(raw: Buffer | string | FcHttpEvent): HttpRequest {
  return requestOf(parseEvent(raw));
}

/**
 * The FC result of a neutral response: a compressed body base64-encoded with `isBase64Encoded`;
 * `head` (a HEAD request): no body. Without Content-Length: FC's HTTP trigger sets it itself and
 * takes none from the function (its documented response-header limits).
 */
export function toFunctionCompute(response: HttpResponse, head = false): FcHttpResult {
  const { 'content-length': _, ...headers } = response.headers;
  return {
    statusCode: response.status,
    headers,
    body: head ? '' : (response.body ?? ''),
    isBase64Encoded: !head && response.isBase64Encoded === true,
  };
}

/** The FC handler: `handler(event, context)`. */
export function createFunctionComputeHandler(app: App) {
  const onError = logTo(app.logger);
  return async (raw: Buffer | string | FcHttpEvent, context?: unknown): Promise<FcHttpResult> => {
    const event = parseEvent(raw);
    // The client's X-Request-Id (or a fresh one) in X-Request-Id and the logs; Function Compute's
    // id (the context's for an event without one) logged beside it.
    const fallback =
      typeof context === 'object' && context !== null
        ? (context as { requestId?: unknown }).requestId
        : undefined;
    const ids = eventRequestIds(event, fallback);
    return toFunctionCompute(
      await guarded(ids, onError, () => app.handle(requestOf(event, ids))),
      isHead(event),
    );
  };
}
