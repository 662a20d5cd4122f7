/**
 * "one protocol module": every answer carries X-Request-Id (router answers through all
 * three adapters, and the answers the adapters make themselves); every typed error the client
 * raises carries it; an answer that is not what the protocol says is a ProtocolError; and every
 * problem code of the table goes from the server's problem to the client's typed error of its class.
 */
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import type { APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient } from '../../lib/client/index.js';
import { loadConfig } from '../../lib/config.js';
import {
  AppendConflictError,
  BackendError,
  BackendUnsafeError,
  CommitMismatchError,
  CommitPartialError,
  CommitPreconditionError,
  ContendedError,
  CorruptValueError,
  FencedError,
  IdempotencyKeyReusedError,
  LockConflictError,
  LockLostError,
  MisconfiguredBackendError,
  PreconditionFailedError,
  PreconditionUnsupportedError,
  ReferenceIdUnsupportedError,
  StoreError,
  UnsupportedOperationError,
  UploadMismatchError,
  UploadNotFoundError,
  UserMismatchError,
  ValidationError,
} from '../../lib/contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createApiGatewayHandler } from '../../lib/http/adapters/apigw.js';
import { createFunctionComputeHandler } from '../../lib/http/adapters/fc.js';
import { withRequestId } from '../../lib/http/adapters/guard.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { type App, createApp } from '../../lib/http/app.js';
import { HttpProblem, toProblem } from '../../lib/http/problems.js';
import { compileRoutes, createRouter, ROUTES } from '../../lib/http/router.js';
import type { Route } from '../../lib/http/routes/route.js';
import type { HttpResponse } from '../../lib/http/types.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import {
  PATHS,
  PayloadTooLargeError,
  PROBLEM_CODES,
  PROBLEMS,
  type ProblemCode,
  type ProblemSpec,
  ProtocolError,
  paths,
  UnauthorizedError,
} from '../../lib/protocol/index.js';
import {
  type Answer,
  type ApiHarness,
  apiGatewayHarness,
  functionComputeHarness,
  hsToken,
  nodeHarness,
  platformApp,
  SECRET,
} from './harness.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const config = loadConfig({ STORE_BACKEND: 'memory', AUTH_JWT_SECRET: SECRET, LOG_LEVEL: 'SILENT' });

for (const make of [nodeHarness, apiGatewayHarness, functionComputeHarness]) {
  describe(`X-Request-Id on every router answer via ${make.name}`, () => {
    let api: ApiHarness;
    beforeAll(async () => {
      api = await make({ driver: createMemoryDriver(), lock: createMemoryLock() });
    });
    afterAll(() => api.close());

    const ids = new Set<string>();
    const expectId = (answer: Answer, status: number) => {
      expect(answer.status).toBe(status);
      const id = answer.headers['x-request-id'];
      expect(id, `X-Request-Id of a ${status}`).toMatch(UUID);
      expect(ids.has(id as string), 'one id per request').toBe(false);
      ids.add(id as string);
      return answer;
    };

    it('a success, a 204, a HEAD, a problem, a 401, a 404 and a 405', async () => {
      expectId(await api.call(null, 'GET', '/v1/health'), 200);
      expectId(await api.call('alice', 'PUT', '/v1/sessions/s/state/k', { body: '1' }), 200);
      expectId(await api.call('alice', 'HEAD', '/v1/sessions/s'), 200);
      expectId(await api.call('alice', 'DELETE', '/v1/sessions/s/state/k'), 204);
      const problem = expectId(await api.call('alice', 'DELETE', '/v1/sessions'), 400);
      expect(problem.json()).toMatchObject({ code: 'invalid-request', field: 'all' });
      expectId(await api.call(null, 'GET', '/v1/sessions'), 401);
      expectId(await api.call('alice', 'GET', '/v1/nothing/here'), 404);
      const wrong = expectId(await api.call('alice', 'PATCH', '/v1/sessions/s/state/k'), 405);
      expect(wrong.headers.allow).toBe('PUT, GET, HEAD, DELETE');
    });

    it('the router answers with the id the adapter gave the request', async () => {
      const answer = await api.app.handle({
        method: 'GET',
        path: '/v1/sessions/s/state/k',
        query: {},
        headers: { authorization: 'Bearer x' },
        requestId: 'req-from-the-platform',
      });
      // The router answers with the request id the adapter gave it, whatever the outcome.
      expect(answer.headers['x-request-id']).toBe('req-from-the-platform');
    });
  });
}

describe('X-Request-Id on the answers the adapters make themselves', () => {
  const app = platformApp;
  const context = {
    functionName: 'f',
    awsRequestId: 'lambda-id',
    getRemainingTimeInMillis: () => 1000,
  } as Context;
  /** An event whose client sent `requestId` as X-Request-Id (none: undefined); the platform's id is another. */
  const event = (requestId: string | undefined, change: (e: Record<string, unknown>) => void = () => {}) => {
    const e: Record<string, unknown> = {
      version: '2.0',
      rawPath: '/v1/health',
      rawQueryString: '',
      headers: requestId ? { 'X-Request-Id': requestId } : {},
      queryParameters: {},
      requestContext: { requestId: 'platform-id', http: { method: 'GET', path: '/v1/health' } },
      isBase64Encoded: false,
    };
    change(e);
    return e;
  };
  type Result = { statusCode: number; headers: Record<string, string>; body: string };
  const apigw = (a: App, e: Record<string, unknown>) =>
    createApiGatewayHandler(a)(
      e as unknown as APIGatewayProxyEventV2WithJWTAuthorizer,
      context,
    ) as Promise<Result>;
  const fc = (a: App, e: unknown) => createFunctionComputeHandler(a)(Buffer.from(JSON.stringify(e)));

  it("API Gateway: the client's request id on a success, a malformed event (400) and a router that throws (500)", async () => {
    expect((await apigw(app(), event('gw-1'))).headers['x-request-id']).toBe('gw-1');
    const malformed = await apigw(
      app(),
      event('gw-2', (e) => delete e.rawPath),
    );
    expect(malformed.statusCode).toBe(400);
    expect(malformed.headers['x-request-id']).toBe('gw-2');
    const broken = await apigw(app(true), event('gw-3'));
    expect(broken.statusCode).toBe(500);
    expect(broken.headers['x-request-id']).toBe('gw-3');
    expect(JSON.parse(broken.body).requestId).toBe('gw-3');
  });

  it("API Gateway: an event without X-Request-Id gets one (not the platform's), the same in the header and the body", async () => {
    const ok = await apigw(app(), event(undefined));
    expect(ok.headers['x-request-id']).toMatch(UUID);
    expect(ok.headers['x-request-id']).not.toBe('platform-id');
    const broken = await apigw(app(true), event(undefined));
    expect(broken.headers['x-request-id']).toMatch(UUID);
    expect(JSON.parse(broken.body).requestId).toBe(broken.headers['x-request-id']);
  });

  it("Function Compute: the client's request id on a success, a malformed event (400) and a router that throws (500)", async () => {
    expect((await fc(app(), event('fc-1'))).headers['x-request-id']).toBe('fc-1');
    const malformed = await fc(
      app(),
      event('fc-2', (e) => Object.assign(e, { queryParameters: { a: 1 } })),
    );
    expect(malformed.statusCode).toBe(400);
    expect(malformed.headers['x-request-id']).toBe('fc-2');
    const broken = await fc(app(true), event('fc-3'));
    expect(broken.statusCode).toBe(500);
    expect(broken.headers['x-request-id']).toBe('fc-3');
    const notJson = await createFunctionComputeHandler(app())(Buffer.from('not json'));
    expect(notJson.statusCode).toBe(400);
    expect(notJson.headers['x-request-id']).toMatch(UUID);
  });

  describe('node:http', () => {
    let server: http.Server;
    let port: number;
    beforeAll(async () => {
      const handle = app().handle;
      server = createNodeServer(
        async (request) => {
          if (request.path === '/test/boom') throw new Error('handler boom');
          return handle(request);
        },
        1024,
        undefined,
        { onError: () => {} },
      );
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      port = (server.address() as AddressInfo).port;
    });
    afterAll(() => new Promise<void>((r) => server.close(() => r())));

    /** The status and X-Request-Id of a raw request (fetch would normalise the target). */
    const raw = (bytes: string) =>
      new Promise<{ status: number; id: string | undefined; body: string }>((resolve) => {
        const socket = net.connect(port, '127.0.0.1');
        let text = '';
        socket.on('data', (chunk: Buffer) => {
          text += chunk.toString('latin1');
        });
        socket.on('error', () => {});
        socket.on('close', () => {
          const [head = '', body = ''] = text.split('\r\n\r\n');
          resolve({
            status: Number(head.split(' ')[1]),
            id: /\r\nx-request-id: ([^\r]+)/i.exec(head)?.[1],
            body,
          });
        });
        socket.end(bytes);
      });
    const request = (target: string, method = 'GET') =>
      raw(`${method} ${target} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n`);

    it('a router answer, OPTIONS *, a target it cannot route (400), a handler that throws (500), what the parser refuses (400)', async () => {
      expect((await request('/v1/health')).id).toMatch(UUID);
      const options = await request('*', 'OPTIONS');
      expect(options.status).toBe(204);
      expect(options.id).toMatch(UUID);
      const badTarget = await request('/v1/%zz');
      expect(badTarget.status).toBe(400);
      expect(badTarget.id).toMatch(UUID);
      const boom = await request('/test/boom');
      expect(boom.status).toBe(500);
      expect(boom.id).toMatch(UUID);
      expect(boom.body).toContain(boom.id);
      const refused = await raw('NOT HTTP AT ALL\r\n\r\n');
      expect(refused.status).toBe(400);
      expect(refused.id).toMatch(UUID);
    });
  });
});

describe('typed client errors carry the request id', () => {
  let server: http.Server;
  let baseUrl: string;
  /** The X-Request-Id of every answer the client was given, in order. */
  const seen: string[] = [];
  beforeAll(async () => {
    const app = createApp(config, { driver: createMemoryDriver(), lock: createMemoryLock() });
    server = createNodeServer(app.handle, config.BODY_LIMIT_BYTES);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  const client = () =>
    createHttpClient({
      baseUrl,
      attempts: 1,
      token: () => hsToken({ sub: 'alice' }),
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        seen.push(response.headers.get('x-request-id') ?? '');
        return response;
      },
    });
  const failure = async (call: Promise<unknown>) => {
    const error = await call.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).requestId).toMatch(UUID);
    expect((error as StoreError).requestId).toBe(seen.at(-1));
    return error;
  };

  it('problems of the store, of the lock and of the router', async () => {
    const c = client();
    const s = `s-${randomUUID()}`;
    const { version } = await c.save(s, 'k', 1);
    expect(await failure(c.save(s, 'k', 2, { ifVersion: `${version}x` }))).toBeInstanceOf(
      PreconditionFailedError,
    );
    await c.appendList(s, 'l', ['a'], { expectedCount: 0 });
    expect(await failure(c.appendList(s, 'l', ['b'], { expectedCount: 5 }))).toBeInstanceOf(
      AppendConflictError,
    );
    expect(await c.getLock(s)).toBeUndefined();
    const lease = await c.acquireLock(s, { owner: 'one' });
    expect(await c.getLock(s)).toEqual({ owner: 'one', token: lease.token, expiresAt: lease.expiresAt });
    const held = await failure(c.acquireLock(s, { owner: 'two' }));
    expect(held).toBeInstanceOf(LockConflictError);
    expect((held as LockConflictError).holder).toBe('one');
    expect(await failure(c.releaseLock(s, { owner: 'two', token: 1 }))).toBeInstanceOf(LockLostError);
    await c.releaseLock(s, lease);
    expect(await c.getLock(s)).toBeUndefined();
    expect(await failure(c.listSessionIds({ cursor: 'Li4vYm9i' }))).toBeInstanceOf(ValidationError);
    // Memory has no presigned transfers: 501 unsupported.
    expect(await failure(c.uploadWorkspace(s, 'w', new Uint8Array(8)))).toBeInstanceOf(
      UnsupportedOperationError,
    );
    expect(await failure(c.commitValueUpload(s, 'k', 'no-such-upload'))).toBeInstanceOf(UploadNotFoundError);
  });
});

/** A fake fetch answering each request with `answer()`. */
const answering = (answer: () => Response) => (async () => answer()) as typeof fetch;
const withId = (body: string, status = 200, headers: Record<string, string> = {}) =>
  new Response(body, {
    status,
    headers: { 'content-type': 'application/json', 'x-request-id': 'fake-1', ...headers },
  });

describe('typed client: an answer that is not what the protocol says is a ProtocolError', () => {
  it.each<[string, (c: ReturnType<typeof createHttpClient>) => Promise<unknown>, () => Response]>([
    ['a lease that is not JSON', (c) => c.acquireLock('s'), () => withId('<html>proxy</html>')],
    [
      'a lock holder without its token',
      (c) => c.getLock('s'),
      () => withId(JSON.stringify({ owner: 'one', expiresAt: new Date().toISOString() })),
    ],
    [
      'a list page whose hash is not a chain hash',
      (c) => c.getList('s', 'k', { limit: 10 }),
      () => withId(JSON.stringify({ items: [], count: 0, hash: 'md5:x' })),
    ],
    [
      'a list write without its count',
      (c) => c.saveList('s', 'k', ['a']),
      () => withId(JSON.stringify({ action: 'created', hash: EMPTY_HASH })),
    ],
    ['a save answered without an etag', (c) => c.save('s', 'k', 1), () => withId('{}')],
    ['a value answered without an ETag header', (c) => c.get('s', 'k'), () => withId('{"a":1}')],
    [
      'a session page whose sessions are not an array',
      (c) => c.listSessionIds(),
      () => withId(JSON.stringify({ sessions: {}, nextCursor: null })),
    ],
    ['a 2xx a route never answers', (c) => c.deleteKey('s', 'k'), () => withId('', 202)],
  ])('%s', async (_name, call, answer) => {
    const error = await call(
      createHttpClient({ baseUrl: 'http://api.test', fetch: answering(answer) }),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).toBeInstanceOf(BackendError);
    expect((error as ProtocolError).retryable).toBe(false);
    expect((error as ProtocolError).requestId).toBe('fake-1');
  });

  it('a JSON value passes through validation as it is (own __proto__ members kept)', async () => {
    const text = '{"__proto__":{"polluted":true},"a":[1,{"__proto__":2}]}';
    const client = createHttpClient({
      baseUrl: 'http://api.test',
      fetch: answering(() => withId(text, 200, { etag: '"v1"', 'agent-state-revision': '1' })),
    });
    const value = (await client.get('s', 'k')) as Record<string, unknown>;
    expect(JSON.stringify(value)).toBe(text);
    expect(Object.hasOwn(value, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const items = [JSON.parse('{"__proto__":1}'), 'b'];
    const hash = chainHash(EMPTY_HASH, items);
    const page = JSON.stringify({ items, count: 2, hash, offset: 0, baseHash: EMPTY_HASH });
    const lists = createHttpClient({ baseUrl: 'http://api.test', fetch: answering(() => withId(page)) });
    expect(JSON.stringify((await lists.getList('s', 'k')).items)).toBe('[{"__proto__":1},"b"]');
  });
});

describe('the problem table, server to client', () => {
  it('answers each error class on one row (rows that share a class are told apart by `when`)', () => {
    const rows = new Map<unknown, string[]>();
    for (const code of PROBLEM_CODES)
      for (const answer of (PROBLEMS[code] as ProblemSpec).answers ?? [])
        rows.set(answer.raisedBy, [
          ...(rows.get(answer.raisedBy) ?? []),
          `${code}${answer.when ? ' (when)' : ''}`,
        ]);
    const ambiguous = [...rows.values()].filter(
      (codes) => codes.length > 1 && codes.some((c) => !c.endsWith('(when)')),
    );
    expect(rows.size).toBeGreaterThan(20);
    expect(ambiguous).toEqual([]);
  });

  /** For each code: an error the server maps to it, the client class it becomes, and a check of its members. */
  const hash = chainHash(EMPTY_HASH, ['a']);
  const expiresAt = new Date(Date.now() + 30_000);
  const cases: Record<ProblemCode, [unknown, abstract new (...args: never[]) => Error, (e: never) => void]> =
    {
      'invalid-request': [
        new ValidationError('limit', 'must be 1 to 1000'),
        ValidationError,
        (e: ValidationError) => expect([e.field, e.message]).toEqual(['limit', 'limit: must be 1 to 1000']),
      ],
      unauthorized: [new HttpProblem('unauthorized', 'no token'), UnauthorizedError, () => {}],
      'user-mismatch': [new UserMismatchError('x'), UserMismatchError, () => {}],
      'not-found': [
        new UploadNotFoundError('u1'),
        ProtocolError,
        (e: ProtocolError) => expect(e.status).toBe(404),
      ],
      'method-not-allowed': [
        new HttpProblem('method-not-allowed', 'use GET', {}, { allow: 'GET' }),
        ProtocolError,
        (e: ProtocolError) => expect(e.status).toBe(405),
      ],
      'append-conflict': [
        new AppendConflictError(3, hash),
        AppendConflictError,
        (e: AppendConflictError) => expect([e.count, e.hash]).toEqual([3, hash]),
      ],
      fenced: [new FencedError(1, 2), FencedError, () => {}],
      'idempotency-key-reused': [new IdempotencyKeyReusedError(), IdempotencyKeyReusedError, () => {}],
      'lock-held': [
        new LockConflictError('agent-1', expiresAt),
        LockConflictError,
        (e: LockConflictError) => expect([e.holder, e.expiresAt]).toEqual(['agent-1', expiresAt]),
      ],
      'lock-lost': [
        new LockLostError(),
        LockLostError,
        (e: LockLostError) => expect(e.message).toMatch(/no longer/),
      ],
      'precondition-failed': [
        new PreconditionFailedError('v1'),
        PreconditionFailedError,
        (e: PreconditionFailedError) => expect(e.currentVersion).toBe('v1'),
      ],
      'commit-conflict': [
        new CommitPreconditionError('c1', [{ kind: 'list', key: 'l', reason: 'count', count: 2, hash }]),
        CommitPreconditionError,
        (e: CommitPreconditionError) =>
          expect([e.commitId, e.failures, e.status]).toEqual([
            'c1',
            [{ kind: 'list', key: 'l', reason: 'count', count: 2, hash }],
            409,
          ]),
      ],
      'commit-partial': [
        new CommitPartialError(
          'c2',
          [{ kind: 'value', key: 'a' }],
          [{ kind: 'value', key: 'b', reason: 'version', currentVersion: null }],
        ),
        CommitPartialError,
        (e: CommitPartialError) =>
          expect([e.commitId, e.applied, e.failed]).toEqual([
            'c2',
            [{ kind: 'value', key: 'a' }],
            [{ kind: 'value', key: 'b', reason: 'version', currentVersion: null }],
          ]),
      ],
      'commit-mismatch': [
        new CommitMismatchError('c3', 'list', 'l'),
        CommitMismatchError,
        (e: CommitMismatchError) => expect([e.commitId, e.kind, e.key]).toEqual(['c3', 'list', 'l']),
      ],
      'reference-id-unsupported': [
        new ReferenceIdUnsupportedError('a b'),
        ReferenceIdUnsupportedError,
        (e: ReferenceIdUnsupportedError) => expect(e.message).toContain('"a b"'),
      ],
      'payload-too-large': [
        new HttpProblem('payload-too-large', 'too large', { limit: 10 }),
        PayloadTooLargeError,
        (e: PayloadTooLargeError) => expect(e.limit).toBe(10),
      ],
      'precondition-unsupported': [
        new PreconditionUnsupportedError('oss'),
        PreconditionUnsupportedError,
        () => {},
      ],
      'backend-unavailable': [
        new BackendError('down', true),
        BackendError,
        (e: BackendError) => expect(e.retryable).toBe(true),
      ],
      'backend-misconfigured': [
        new MisconfiguredBackendError(
          's3',
          'bucket',
          's3 bucket agent-state refused access (AccessDenied); credentials: access key id AKIA…MPLE',
          { resourceName: 'agent-state', identity: 'access key id AKIA…MPLE' },
        ),
        BackendError,
        (e: BackendError) => {
          // Not retried, and neither the bucket nor the credentials reach the caller.
          expect(e.retryable).toBe(false);
          expect(e.message).not.toMatch(/agent-state|AKIA/);
        },
      ],
      'backend-unsafe': [
        new BackendUnsafeError('s3', 'create-only writes'),
        BackendError,
        (e: BackendError) =>
          expect([e.retryable, e.message]).toEqual([false, expect.stringMatching(/honour/)]),
      ],
      contended: [new ContendedError('others kept winning'), ContendedError, () => {}],
      'upload-mismatch': [new UploadMismatchError('sizes differ'), UploadMismatchError, () => {}],
      unsupported: [new UnsupportedOperationError('presign', 'memory'), UnsupportedOperationError, () => {}],
      internal: [
        new CorruptValueError('plan'),
        CorruptValueError,
        (e: CorruptValueError) => expect(e.key).toBe('plan'),
      ],
    };

  it('covers every code of the table', () => {
    expect(Object.keys(cases).sort()).toEqual([...PROBLEM_CODES].sort());
  });

  it.each(PROBLEM_CODES)('%s', async (code) => {
    const [thrown, expected, check] = cases[code];
    const { response } = toProblem(thrown, 'req-table');
    const answer: HttpResponse = withRequestId(response, 'req-table');
    const body = JSON.parse(answer.body ?? '{}');
    expect(answer.status).toBe(PROBLEMS[code].status);
    expect(body).toMatchObject({ code, status: PROBLEMS[code].status, title: PROBLEMS[code].title });
    expect(answer.headers['content-type']).toBe('application/problem+json');
    if ('retryAfter' in PROBLEMS[code]) expect(answer.headers['retry-after']).toMatch(/^\d+$/);
    else expect(answer.headers['retry-after']).toBeUndefined();
    const client = createHttpClient({
      baseUrl: 'http://api.test',
      attempts: 1,
      fetch: answering(() => new Response(answer.body, { status: answer.status, headers: answer.headers })),
    });
    const error = await client.deleteKey('s', 'k').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(expected);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).requestId).toBe('req-table');
    check(error as never);
  });

  it('an internal error without a corrupt key is a retryable BackendError', async () => {
    const { response } = toProblem(new Error('boom'), 'req-x');
    const client = createHttpClient({
      baseUrl: 'http://api.test',
      attempts: 1,
      fetch: answering(
        () => new Response(response.body, { status: response.status, headers: response.headers }),
      ),
    });
    const error = await client.deleteKey('s', 'k').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendError);
    expect(error).not.toBeInstanceOf(CorruptValueError);
    expect((error as BackendError).retryable).toBe(true);
  });
});

describe('route table and paths', () => {
  it('every route uses a protocol path, and the client builds each with ids encoded', () => {
    const patterns = new Set<string>(Object.values(PATHS));
    for (const route of ROUTES) expect(patterns.has(route.pattern), route.pattern).toBe(true);
    expect(paths.list('sandbox/a', 'memory')).toBe(
      `/v1/sessions/~${Buffer.from('sandbox/a').toString('base64url')}/lists/memory`,
    );
    expect(paths.archive('s', '..', '12')).toBe(
      `/v1/sessions/s/lists/~${Buffer.from('..').toString('base64url')}/archives/12`,
    );
    expect(paths.sessions()).toBe('/v1/sessions');
    expect(() => paths.value('s', '')).toThrow(ValidationError);
  });

  it('is compiled once and refuses ambiguous or duplicate routes at start', () => {
    const base = ROUTES[0] as Route;
    const at = (method: string, pattern: string) => ({ ...base, method, pattern }) as Route;
    expect(() => compileRoutes([at('GET', PATHS.session), at('GET', '/v1/sessions/all')])).toThrow(
      /parameter|segment/,
    );
    expect(() => compileRoutes([at('GET', PATHS.lock), at('GET', PATHS.lock)])).toThrow(/twice/);
    expect(() => compileRoutes([at('GET', '/v1/{nope}')])).toThrow(/unknown path parameter/);
    expect(() => createRouter({} as never)).not.toThrow();
  });
});
