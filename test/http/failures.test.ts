/** Backend failures and gateway-made errors: the right problem, no internals, the same typed errors in the client. */
import { describe, expect, it } from 'vitest';
import { createHttpClient, PayloadTooLargeError, UnauthorizedError } from '../../lib/client/index.js';
import { BackendError } from '../../lib/contract/errors.js';
import { ObjectStoreError } from '../../lib/drivers/errors.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { nodeHarness } from './harness.js';

function failing(retryable: boolean): ObjectStoreDriver {
  const inner = createMemoryDriver();
  const fail = async () => {
    throw new ObjectStoreError('s3 InternalError at secret-internal-host:9000 bucket prod-state', 's3', {
      retryable,
    });
  };
  return { ...inner, get: fail, head: fail, put: fail, list: fail };
}

describe('backend failures over HTTP', () => {
  it('a retryable backend failure is 503 backend-unavailable with Retry-After', async () => {
    const api = await nodeHarness({ driver: failing(true), lock: createMemoryLock() });
    const res = await api.call('alice', 'GET', '/v1/sessions/s/state/k');
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.json()).toMatchObject({ code: 'backend-unavailable' });
    await api.close();
  });

  it('an unexpected failure is 500 internal with the request id and no internals', async () => {
    const api = await nodeHarness({ driver: failing(false), lock: createMemoryLock() });
    const res = await api.call('alice', 'PUT', '/v1/sessions/s/state/k', { body: '1' });
    expect(res.status).toBe(500);
    const body = res.json();
    expect(body.code).toBe('internal');
    expect(body.requestId).toMatch(/[0-9a-f-]{36}/);
    expect(res.body).not.toMatch(/secret-internal-host|prod-state|stack/);
    await api.close();
  });
});

describe('typed client on gateway-made errors', () => {
  const answering = (status: number, body: unknown, calls: { n: number }) =>
    (async () => {
      calls.n++;
      return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
    }) as typeof fetch;

  it('maps API Gateway 401 and 413 to typed errors, retries 429 then reports it as retryable', async () => {
    const calls = { n: 0 };
    const unauthorized = createHttpClient({
      baseUrl: 'http://127.0.0.1:9',
      fetch: answering(401, { message: 'Unauthorized' }, calls),
    });
    await expect(unauthorized.get('s', 'k')).rejects.toBeInstanceOf(UnauthorizedError);
    const tooLarge = createHttpClient({
      baseUrl: 'http://127.0.0.1:9',
      fetch: answering(413, { message: 'Request Entity Too Large' }, calls),
    });
    await expect(tooLarge.save('s', 'k', 'x')).rejects.toBeInstanceOf(PayloadTooLargeError);
    const throttled = { n: 0 };
    const slow = createHttpClient({
      baseUrl: 'http://127.0.0.1:9',
      attempts: 3,
      fetch: answering(429, { message: 'Too Many Requests' }, throttled),
    });
    const error = await slow.get('s', 'k').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendError);
    expect((error as BackendError).retryable).toBe(true);
    expect(throttled.n).toBe(3);
    const post = { n: 0 };
    const once = createHttpClient({
      baseUrl: 'http://127.0.0.1:9',
      attempts: 3,
      fetch: answering(503, { message: 'Service Unavailable' }, post),
    });
    await expect(once.acquireLock('s')).rejects.toBeInstanceOf(BackendError);
    expect(post.n).toBe(1); // POST is not idempotent: never retried blindly
    // An append carries an Idempotency-Key: it is retried (test/client/idempotent-append.test.ts).
    await expect(once.appendList('s', 'k', [1], { expectedCount: 0 })).rejects.toBeInstanceOf(BackendError);
    expect(post.n).toBe(4);
  });
});
