/**
 * The API Gateway and Function Compute adapters never throw. A malformed event is a 400
 * problem; an error thrown by the router is a 500 `internal` problem with the request id, logged once.
 */
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { createApiGatewayHandler } from '../../lib/http/adapters/apigw.js';
import { createFunctionComputeHandler } from '../../lib/http/adapters/fc.js';
import { platformApp } from '../http/harness.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const app = platformApp;

const context = {
  functionName: 'agent-state-api',
  awsRequestId: randomUUID(),
  getRemainingTimeInMillis: () => 30_000,
} as unknown as Context;

/** A well-formed API Gateway v2 event for GET /v1/health, with `change` applied. */
function apigwEvent(change: (event: Record<string, unknown>) => void = () => {}) {
  const event: Record<string, unknown> = {
    version: '2.0',
    routeKey: '$default',
    rawPath: '/v1/health',
    rawQueryString: '',
    headers: { host: 'api.example.com' },
    requestContext: {
      requestId: 'apigw-request-1',
      http: { method: 'GET', path: '/v1/health', protocol: 'HTTP/1.1', sourceIp: '127.0.0.1' },
    },
    isBase64Encoded: false,
  };
  change(event);
  return event as unknown as APIGatewayProxyEventV2WithJWTAuthorizer;
}

/** A well-formed FC 3 event for GET /v1/health, with `change` applied. */
function fcEvent(change: (event: Record<string, unknown>) => void = () => {}) {
  const event: Record<string, unknown> = {
    version: 'v1',
    rawPath: '/v1/health',
    headers: { Host: 'fc.example.com' },
    queryParameters: {},
    body: '',
    isBase64Encoded: false,
    requestContext: { requestId: 'fc-request-1', http: { method: 'GET', path: '/v1/health' } },
  };
  change(event);
  return event;
}

const ctx = (event: Record<string, unknown>) => event.requestContext as Record<string, unknown>;

/** Malformed variants, shared by both adapters: a name, the change, and the field the 400 names. */
const MALFORMED: Array<[string, (event: Record<string, unknown>) => void, string]> = [
  ['no requestContext', (e) => delete e.requestContext, 'requestContext'],
  ['no requestContext.http', (e) => delete ctx(e).http, 'requestContext.http.method'],
  ['no method', (e) => delete (ctx(e).http as Record<string, unknown>).method, 'requestContext.http.method'],
  ['no rawPath', (e) => delete e.rawPath, 'rawPath'],
  ['no headers', (e) => delete e.headers, 'headers'],
  ['a header that is not a string', (e) => Object.assign(e, { headers: { host: 42 } }), 'headers'],
  [
    'a body flagged base64 that is not',
    (e) => Object.assign(e, { body: 'this is not base64!', isBase64Encoded: true }),
    'body',
  ],
  [
    'a text body with a lone surrogate (the platform decoded it; it cannot be stored as sent)',
    (e) => Object.assign(e, { body: '{"a":"\ud800"}', isBase64Encoded: false }),
    'body',
  ],
];

interface Result {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

describe('API Gateway v2 adapter: malformed events', () => {
  const handler = createApiGatewayHandler(app());

  it('answers a well-formed event (control)', async () => {
    const result = (await handler(apigwEvent(), context)) as Result;
    expect(result.statusCode).toBe(200);
  });

  it.each(MALFORMED)('%s: a 400 invalid-request problem', async (_name, change, field) => {
    const result = (await handler(apigwEvent(change), context)) as Result;
    expect(result.statusCode).toBe(400);
    expect(result.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(result.body)).toMatchObject({ code: 'invalid-request', field });
  });

  it("a router that throws: a 500 internal problem with a request id, logged once with the platform's", async () => {
    const broken = app(true);
    const logged = vi.spyOn(broken.logger, 'error');
    const result = (await createApiGatewayHandler(broken)(apigwEvent(), context)) as Result;
    expect(result.statusCode).toBe(500);
    expect(result.headers['content-type']).toBe('application/problem+json');
    // The event has no X-Request-Id: a fresh one answers, the platform's is logged beside it.
    const { requestId } = JSON.parse(result.body);
    expect(JSON.parse(result.body)).toMatchObject({
      code: 'internal',
      requestId: expect.stringMatching(UUID),
    });
    expect(result.headers['x-request-id']).toBe(requestId);
    expect(logged).toHaveBeenCalledTimes(1);
    expect(logged.mock.calls[0]?.[1]).toMatchObject({ requestId, platformRequestId: 'apigw-request-1' });
  });

  it('a base64 body of 3.5 MB is checked without overflowing the stack (then refused by size, not a 500)', async () => {
    const body = Buffer.alloc(3.5 * 1024 * 1024, 'x').toString('base64');
    const result = (await handler(
      apigwEvent((e) => Object.assign(e, { body, isBase64Encoded: true })),
      context,
    )) as Result;
    expect(result.statusCode).toBe(413);
    expect(JSON.parse(result.body)).toMatchObject({ code: 'payload-too-large' });
  });

  it('without a request id in the event, the 500 carries a fresh one', async () => {
    const result = (await createApiGatewayHandler(app(true))(
      apigwEvent((e) => delete ctx(e).requestId),
      context,
    )) as Result;
    expect(result.statusCode).toBe(500);
    expect(JSON.parse(result.body).requestId).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('Function Compute 3 adapter: malformed events', () => {
  const handler = createFunctionComputeHandler(app());
  const call = (event: unknown) => handler(Buffer.from(JSON.stringify(event)));

  it('answers a well-formed event (control)', async () => {
    expect((await call(fcEvent())).statusCode).toBe(200);
  });

  it.each(MALFORMED)('%s: a 400 invalid-request problem', async (_name, change, field) => {
    const result = await call(fcEvent(change));
    expect(result.statusCode).toBe(400);
    expect(result.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(result.body)).toMatchObject({ code: 'invalid-request', field });
  });

  it('an event that is not JSON: a 400 invalid-request problem', async () => {
    const result = await handler(Buffer.from('{"rawPath": "/v1/hea'));
    expect(result.statusCode).toBe(400);
    expect(JSON.parse(result.body)).toMatchObject({ code: 'invalid-request', field: 'event' });
  });

  it("a router that throws: a 500 internal problem with a request id, logged once with the platform's", async () => {
    const broken = app(true);
    const logged = vi.spyOn(broken.logger, 'error');
    const result = await createFunctionComputeHandler(broken)(Buffer.from(JSON.stringify(fcEvent())));
    expect(result.statusCode).toBe(500);
    expect(result.headers['content-type']).toBe('application/problem+json');
    // The event has no X-Request-Id: a fresh one answers, the platform's is logged beside it.
    const { requestId } = JSON.parse(result.body);
    expect(JSON.parse(result.body)).toMatchObject({
      code: 'internal',
      requestId: expect.stringMatching(UUID),
    });
    expect(result.headers['x-request-id']).toBe(requestId);
    expect(logged).toHaveBeenCalledTimes(1);
    expect(logged.mock.calls[0]?.[1]).toMatchObject({ requestId, platformRequestId: 'fc-request-1' });
  });
});
