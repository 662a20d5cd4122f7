/**
 * The client's SDK manners, on Node: a `User-Agent: agent-state-store/<version>` on every request
 * (the API's and the object store's, on the wire), a `logger` that gets one debug line per retry
 * and never a token nor a signed URL's query, `AGENT_STATE_URL` / `AGENT_STATE_TOKEN` when the
 * options leave them out (options win; no URL is a `ValidationError` naming both ways), and every
 * error raised from an answer carrying its `status`, `code`, `requestId` and `problem`.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CLIENT_VERSION, createHttpClient, USER_AGENT } from '../../lib/client/index.js';
import { createHttpClient as createNodeClient } from '../../lib/client/node/index.js';
import {
  BackendError,
  PreconditionFailedError,
  ProtocolError,
  StoreError,
  UnauthorizedError,
  UploadNotFoundError,
  ValidationError,
} from '../../lib/contract/errors.js';
import { fakeFetch, problem, scriptedServer } from './helpers.js';

const TOKEN = 'tok-very-secret-0123456789';
const SIGNED = 'http://bucket.store.test/k?X-Amz-Credential=AKIDSECRET&X-Amz-Signature=sig-secret-abcdef';
const value = (body: unknown = { a: 1 }) =>
  new Response(JSON.stringify(body), {
    status: 200,
    headers: { etag: '"v1"', 'agent-state-revision': '1', 'x-request-id': 'r-ok' },
  });
const located = () =>
  new Response(
    JSON.stringify({
      etag: 'v9',
      revision: 1,
      size: 7,
      download: { method: 'GET', url: SIGNED, headers: {} },
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
    }),
    { status: 303, headers: { 'content-type': 'application/json', 'x-request-id': 'r-303' } },
  );
const unavailable = () =>
  new Response(JSON.stringify({ message: 'Service Unavailable' }), {
    status: 503,
    headers: { 'retry-after': '0', 'x-request-id': 'r-503' },
  });

/** The rejection of a call (failing the test when it resolves). */
async function failure(call: Promise<unknown>): Promise<StoreError> {
  const error: unknown = await call.then(
    () => {
      throw new Error('the call resolved');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StoreError);
  return error as StoreError;
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('typed client: User-Agent', () => {
  it('is agent-state-store/<the package version>', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    expect(CLIENT_VERSION).toBe(pkg.version);
    expect(USER_AGENT).toBe(`agent-state-store/${pkg.version}`);
  });

  it('goes on the wire with every API call and direct transfer, from both entries', async () => {
    const server = await scriptedServer((request, response) => {
      if (request.url?.startsWith('/blob')) {
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"big":true}');
        return;
      }
      if (request.url?.includes('/state/big')) {
        response.writeHead(303, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            etag: 'v2',
            revision: 1,
            size: 12,
            download: { method: 'GET', url: `${server.url}/blob`, headers: {} },
            expiresAt: new Date(Date.now() + 60_000).toISOString(),
          }),
        );
        return;
      }
      response
        .writeHead(200, { 'content-type': 'application/json', etag: '"v1"', 'agent-state-revision': '1' })
        .end('{"a":1}');
    });
    try {
      for (const create of [createHttpClient, createNodeClient]) {
        const client = create({ baseUrl: server.url, token: TOKEN });
        expect(await client.get('s', 'small')).toEqual({ a: 1 });
        expect(await client.get('s', 'big')).toEqual({ big: true });
      }
      expect(server.requests.map((r) => r.url?.split('?')[0])).toEqual([
        '/v1/sessions/s/state/small',
        '/v1/sessions/s/state/big',
        '/blob',
        '/v1/sessions/s/state/small',
        '/v1/sessions/s/state/big',
        '/blob',
      ]);
      for (const request of server.requests) expect(request.headers['user-agent']).toBe(USER_AGENT);
    } finally {
      await server.close();
    }
  });

  it('goes through a fetch the client is given too', async () => {
    const fake = fakeFetch(() => value());
    await createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch }).get('s', 'k');
    expect(fake.calls[0]?.headers['user-agent']).toBe(USER_AGENT);
  });
});

describe('typed client: logger', () => {
  it('gets a debug line for each retry of an API call and of a direct transfer, never the token or a signature', async () => {
    const lines: string[] = [];
    const fake = fakeFetch((sent, n) => {
      if (sent.url.startsWith('http://bucket.store.test/')) return n === 4 ? unavailable() : value('direct');
      if (n <= 2) return unavailable();
      return located();
    });
    const client = createHttpClient({
      baseUrl: 'http://api.test',
      token: () => TOKEN,
      fetch: fake.fetch,
      logger: { debug: (line) => lines.push(line) },
    });
    expect(await client.get('s', 'k')).toBe('direct');
    expect(fake.calls.map((c) => c.url.split('?')[0])).toEqual([
      'http://api.test/v1/sessions/s/state/k',
      'http://api.test/v1/sessions/s/state/k',
      'http://api.test/v1/sessions/s/state/k',
      'http://bucket.store.test/k',
      'http://bucket.store.test/k',
    ]);
    // The token went out with every API call, and stayed out of every line.
    expect(fake.calls.slice(0, 3).every((c) => c.headers.authorization === `Bearer ${TOKEN}`)).toBe(true);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /^agent-state-store: GET \/v1\/sessions\/s\/state\/k: attempt 1 of 4 answered 503 \(request id r-503\); retrying in \d+ ms$/,
    );
    expect(lines[1]).toMatch(/attempt 2 of 4 answered 503/);
    expect(lines[2]).toMatch(
      /^agent-state-store: object store GET bucket\.store\.test: attempt 1 of 4 answered 503 \(request id r-503\); retrying in \d+ ms$/,
    );
    for (const line of lines) {
      expect(line).not.toContain(TOKEN);
      expect(line).not.toContain('secret');
      expect(line).not.toContain('Bearer');
    }
  });

  it('names network failures and timeouts; says nothing when nothing is retried; a throwing logger fails nothing', async () => {
    const lines: string[] = [];
    let n = 0;
    const fetch = (async () => {
      n++;
      if (n === 1) throw new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } });
      if (n === 2) return new Promise<Response>(() => {});
      return value();
    }) as typeof globalThis.fetch;
    const client = createHttpClient({
      baseUrl: 'http://api.test',
      token: TOKEN,
      fetch,
      timeoutMs: 50,
      logger: { debug: (line) => lines.push(line) },
    });
    expect(await client.get('s', 'k')).toEqual({ a: 1 });
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/attempt 1 of 4 failed: fetch failed \(ECONNRESET\); retrying in/);
    expect(lines[1]).toMatch(/attempt 2 of 4 timed out after 50 ms; retrying in/);
    lines.length = 0;
    await client.get('s', 'k');
    expect(lines).toEqual([]);
    const throwing = createHttpClient({
      baseUrl: 'http://api.test',
      fetch: fakeFetch((_, i) => (i === 1 ? unavailable() : value())).fetch,
      logger: {
        debug: () => {
          throw new Error('logger down');
        },
      },
    });
    expect(await throwing.get('s', 'k')).toEqual({ a: 1 });
  });
});

describe('typed client: AGENT_STATE_URL and AGENT_STATE_TOKEN', () => {
  it('are read when the options leave them out', async () => {
    vi.stubEnv('AGENT_STATE_URL', 'http://env.test/');
    vi.stubEnv('AGENT_STATE_TOKEN', 'env-token');
    const fake = fakeFetch(() => value());
    for (const create of [createHttpClient, createNodeClient])
      await create({ fetch: fake.fetch }).get('s', 'k');
    expect(fake.calls.map((c) => [c.url, c.headers.authorization])).toEqual([
      ['http://env.test/v1/sessions/s/state/k', 'Bearer env-token'],
      ['http://env.test/v1/sessions/s/state/k', 'Bearer env-token'],
    ]);
  });

  it('lose to the options', async () => {
    vi.stubEnv('AGENT_STATE_URL', 'http://env.test');
    vi.stubEnv('AGENT_STATE_TOKEN', 'env-token');
    const fake = fakeFetch(() => value());
    await createHttpClient({ baseUrl: 'http://option.test', token: 'option-token', fetch: fake.fetch }).get(
      's',
      'k',
    );
    await createHttpClient({
      baseUrl: 'http://option.test',
      token: async () => 'fn-token',
      fetch: fake.fetch,
    }).get('s', 'k');
    expect(fake.calls.map((c) => [c.url.split('/v1')[0], c.headers.authorization])).toEqual([
      ['http://option.test', 'Bearer option-token'],
      ['http://option.test', 'Bearer fn-token'],
    ]);
  });

  it('without a URL either way (or an empty one), createHttpClient throws a ValidationError naming the option and the variable', () => {
    vi.stubEnv('AGENT_STATE_URL', undefined);
    for (const make of [
      () => createHttpClient(),
      () => createHttpClient({}),
      () => createNodeClient({ token: 't' }),
      () => {
        vi.stubEnv('AGENT_STATE_URL', '');
        return createHttpClient();
      },
    ]) {
      const error = (() => {
        try {
          make();
        } catch (e) {
          return e;
        }
        throw new Error('no error');
      })();
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe('baseUrl');
      expect((error as Error).message).toMatch(/baseUrl option/);
      expect((error as Error).message).toMatch(/AGENT_STATE_URL/);
    }
    expect(() => createHttpClient({ baseUrl: 'api.test/no-scheme' })).toThrow(ValidationError);
  });

  it('with no token either way, no Authorization is sent (an anonymous local server)', async () => {
    vi.stubEnv('AGENT_STATE_TOKEN', undefined);
    const fake = fakeFetch(() => value());
    await createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch }).get('s', 'k');
    expect(fake.calls[0]?.headers.authorization).toBeUndefined();
  });
});

describe('typed client: what an error carries', () => {
  it('a problem answer: its status, code, request id and the problem itself', async () => {
    const fake = fakeFetch(() =>
      problem(412, 'precondition-failed', { currentEtag: 'v7' }, { 'x-request-id': 'r-412' }),
    );
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    const error = await failure(client.save('s', 'k', 1, { ifVersion: 'v1' }));
    expect(error).toBeInstanceOf(PreconditionFailedError);
    expect(error).toMatchObject({ status: 412, code: 'precondition-failed', requestId: 'r-412' });
    expect(error.problem).toMatchObject({ status: 412, code: 'precondition-failed', currentEtag: 'v7' });
    expect((error as PreconditionFailedError).currentVersion).toBe('v7');
  });

  it('an error the client raises for a status (an upload gone): the problem of that answer too', async () => {
    const fake = fakeFetch(() => problem(404, 'not-found', {}, { 'x-request-id': 'r-404' }));
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    const error = await failure(client.commitValueUpload('s', 'k', 'u1'));
    expect(error).toBeInstanceOf(UploadNotFoundError);
    expect(error).toMatchObject({ status: 404, code: 'not-found', requestId: 'r-404' });
    expect(error.problem?.title).toBe('not-found');
  });

  it('a gateway’s own answer (not a problem): status and request id, no code, no problem', async () => {
    const fake = fakeFetch(
      () =>
        new Response(JSON.stringify({ message: 'Unauthorized' }), {
          status: 401,
          headers: { 'x-amzn-requestid': 'gw', 'x-request-id': 'r-401' },
        }),
    );
    const error = await failure(
      createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch }).get('s', 'k'),
    );
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error).toMatchObject({ status: 401, requestId: 'r-401' });
    expect(error.code).toBeUndefined();
    expect(error.problem).toBeUndefined();
  });

  it('a malformed answer: a ProtocolError with its status; the object store’s refusal: its status, error code and request id', async () => {
    const malformed = fakeFetch(
      () => new Response('{"etag": 5}', { status: 200, headers: { 'x-request-id': 'r-m' } }),
    );
    const bad = await failure(
      createHttpClient({ baseUrl: 'http://api.test', fetch: malformed.fetch }).save('s', 'k', 1),
    );
    expect(bad).toBeInstanceOf(ProtocolError);
    expect(bad).toMatchObject({ status: 200, requestId: 'r-m' });
    const refused = fakeFetch((sent) =>
      sent.url.startsWith('http://bucket.store.test/')
        ? new Response('<Error><Code>AccessDenied</Code></Error>', {
            status: 403,
            headers: { 'x-amz-request-id': 'S3REQ' },
          })
        : located(),
    );
    const error = await failure(
      createHttpClient({ baseUrl: 'http://api.test', fetch: refused.fetch }).get('s', 'k'),
    );
    expect(error).toBeInstanceOf(BackendError);
    expect(error).toMatchObject({ status: 403, code: 'AccessDenied', requestId: 'S3REQ' });
    expect(error.problem).toBeUndefined();
  });

  it('no answer at all: none of them', async () => {
    const fetch = (async () => {
      throw new TypeError('fetch failed');
    }) as typeof globalThis.fetch;
    const error = await failure(
      createHttpClient({ baseUrl: 'http://api.test', fetch, attempts: 1 }).get('s', 'k'),
    );
    expect(error).toBeInstanceOf(BackendError);
    expect([error.status, error.code, error.requestId, error.problem]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});
