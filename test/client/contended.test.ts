/**
 * "contended": a 409 `contended` answer guarantees nothing was written, so the typed client
 * retries it whatever the method (POST included), within its attempts, waiting per Retry-After
 * (capped, jittered); when the attempts run out it raises `ContendedError`.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createHttpClient } from '../../lib/client/index.js';
import { AppendConflictError, BackendError, ContendedError } from '../../lib/contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';

const problem = (code: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ type: 'about:blank', title: code, status: 409, code, detail: code }), {
    status: 409,
    headers: { 'content-type': 'application/problem+json', ...headers },
  });

const appended = { action: 'appended', count: 1, hash: chainHash(EMPTY_HASH, ['a']) };

/** A fake fetch answering the given responses in turn (the last one again when they run out). */
function fakeFetch(...answers: Array<() => Response>) {
  const calls: Array<{ method: string; body: unknown }> = [];
  const fetch = (async (_input: unknown, init?: RequestInit) => {
    calls.push({ method: init?.method ?? 'GET', body: init?.body });
    return (answers[calls.length - 1] ?? answers[answers.length - 1])?.() as Response;
  }) as typeof globalThis.fetch;
  return { calls, fetch };
}

describe('typed client: 409 contended', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('retries a POST append answered contended, then returns its result', async () => {
    const fake = fakeFetch(
      () => problem('contended', { 'retry-after': '0' }),
      () => Response.json(appended),
    );
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    expect(await client.appendList('s', 'k', ['a'], { expectedCount: 0 })).toEqual(appended);
    expect(fake.calls.map((c) => c.method)).toEqual(['POST', 'POST']);
    expect(fake.calls[1]?.body).toBe(fake.calls[0]?.body);
  });

  it('retries a PUT answered contended too', async () => {
    const fake = fakeFetch(
      () => problem('contended', { 'retry-after': '0' }),
      () => Response.json({ action: 'rewritten', count: 1, hash: appended.hash }),
    );
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    expect(await client.saveList('s', 'k', ['a'])).toMatchObject({ count: 1 });
    expect(fake.calls.map((c) => c.method)).toEqual(['PUT', 'PUT']);
  });

  it('waits per Retry-After: never sooner than asked', async () => {
    vi.useFakeTimers();
    const fake = fakeFetch(
      () => problem('contended', { 'retry-after': '2' }),
      () => Response.json(appended),
    );
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    const result = client.appendList('s', 'k', ['a'], { expectedCount: 0 });
    result.catch(() => {}); // awaited below; a failure must not also surface as unhandled
    await vi.advanceTimersByTimeAsync(1999);
    expect(fake.calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(402);
    expect(fake.calls).toHaveLength(2);
    expect(await result).toEqual(appended);
  });

  it('waits with the backoff when there is no Retry-After', async () => {
    const fake = fakeFetch(
      () => problem('contended'),
      () => Response.json(appended),
    );
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    expect(await client.appendList('s', 'k', ['a'], { expectedCount: 0 })).toEqual(appended);
    expect(fake.calls).toHaveLength(2);
  });

  it('gives up after its attempts with ContendedError', async () => {
    const fake = fakeFetch(() => problem('contended', { 'retry-after': '0' }));
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch, attempts: 3 });
    await expect(client.appendList('s', 'k', ['a'], { expectedCount: 0 })).rejects.toBeInstanceOf(
      ContendedError,
    );
    expect(fake.calls).toHaveLength(3);
  });

  it('does not retry another 409 of a POST', async () => {
    const fake = fakeFetch(() => problem('append-conflict'));
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    await expect(client.appendList('s', 'k', ['a'], { expectedCount: 0 })).rejects.toBeInstanceOf(
      AppendConflictError,
    );
    expect(fake.calls).toHaveLength(1);
  });

  it('does not retry a 503 backend-unsafe, even of a PUT, and raises a non-retryable BackendError', async () => {
    const unsafe = () =>
      new Response(
        JSON.stringify({ status: 503, code: 'backend-unsafe', detail: 'the s3 backend does not honour …' }),
        {
          status: 503,
          headers: { 'content-type': 'application/problem+json' },
        },
      );
    const fake = fakeFetch(unsafe);
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    const error = await client.save('s', 'k', { a: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendError);
    expect((error as BackendError).retryable).toBe(false);
    expect((error as BackendError).message).toMatch(/does not honour/);
    expect(fake.calls).toHaveLength(1);
  });
});
