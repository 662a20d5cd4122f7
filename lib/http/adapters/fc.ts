/**
 * Alibaba Cloud Function Compute 3.0 HTTP trigger adapter. The event arrives as a JSON buffer
 * (`rawPath`, `headers`, `queryParameters`, `body`, `isBase64Encoded`, `requestContext`); the answer
 * is `{ statusCode, headers, body, isBase64Encoded }`. The trigger's JWT authentication runs first,
 * and the function verifies the bearer token again itself (see auth.ts).
 */
import type { App } from '../app.js';
import type { HttpRequest, HttpResponse } from '../types.js';

/** The documented shape of an FC 3.0 HTTP trigger event. */
export interface FcHttpEvent {
  version?: string;
  rawPath: string;
  headers?: Record<string, string>;
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

/** The neutral request of an FC event (the buffer FC passes, or its parsed form). */
export function fromFunctionCompute(raw: Buffer | string | FcHttpEvent): HttpRequest {
  const event: FcHttpEvent =
    Buffer.isBuffer(raw) || typeof raw === 'string' ? JSON.parse(raw.toString()) : raw;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.headers ?? {})) headers[name.toLowerCase()] = value;
  const body = event.body ? Buffer.from(event.body, event.isBase64Encoded ? 'base64' : 'utf8') : undefined;
  return {
    method: event.requestContext.http.method,
    path: event.rawPath,
    query: { ...event.queryParameters },
    headers,
    body,
    requestId: event.requestContext.requestId,
  };
}

export function toFunctionCompute(response: HttpResponse): FcHttpResult {
  return {
    statusCode: response.status,
    headers: response.headers,
    body: response.body ?? '',
    isBase64Encoded: false,
  };
}

/** The FC handler: `handler(event, context)`. */
export function createFunctionComputeHandler(app: App) {
  return async (event: Buffer | string | FcHttpEvent, _context?: unknown): Promise<FcHttpResult> =>
    toFunctionCompute(await app.handle(fromFunctionCompute(event)));
}
