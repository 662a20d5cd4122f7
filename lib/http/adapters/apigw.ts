/**
 * API Gateway HTTP API (payload format 2.0) adapter, as a middy handler. The JWT authorizer's
 * verified claims come from the request context; the router never reads a user from the request.
 * It never throws: a malformed event is a 400 problem, an error while answering a 500 (guard.ts).
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type {
  APIGatewayProxyEventV2WithJWTAuthorizer,
  APIGatewayProxyStructuredResultV2,
  Context,
} from 'aws-lambda';
import type { App } from '../app.js';
import type { HttpRequest, HttpResponse } from '../types.js';
import { eventParts, eventRequestIds, guarded, isHead, logTo, type RequestIds } from './guard.js';

/** The neutral request of an API Gateway v2 event; `ValidationError` when the event is malformed. */
export function fromApiGateway(
  event: APIGatewayProxyEventV2WithJWTAuthorizer,
  ids: RequestIds = eventRequestIds(event),
): HttpRequest {
  return {
    ...eventParts(event, ids),
    query: Object.fromEntries(new URLSearchParams(event.rawQueryString ?? '')),
    claims: event.requestContext.authorizer?.jwt?.claims,
  };
}

/**
 * The API Gateway result of a neutral response: a compressed body base64-encoded with
 * `isBase64Encoded` (API Gateway decodes it to bytes); `head` (a HEAD request): no body.
 */
export function toApiGateway(response: HttpResponse, head = false): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode: response.status,
    headers: response.headers,
    body: head ? '' : (response.body ?? ''),
    isBase64Encoded: !head && response.isBase64Encoded === true,
  };
}

/** The Lambda handler: middy chain (logger context, EMF metrics), then the router. */
export function createApiGatewayHandler(app: App) {
  const onError = logTo(app.logger);
  const base = async (event: APIGatewayProxyEventV2WithJWTAuthorizer, context: Context) => {
    // The client's X-Request-Id (or a fresh one) in X-Request-Id and the logs; API Gateway's id
    // (Lambda's for an event without one) logged beside it.
    const ids = eventRequestIds(event, context?.awsRequestId);
    return toApiGateway(
      await guarded(ids, onError, () => app.handle(fromApiGateway(event, ids))),
      isHead(event),
    );
  };
  const handler = middy(base).use(injectLambdaContext(app.logger));
  return app.metrics ? handler.use(logMetrics(app.metrics)) : handler;
}
