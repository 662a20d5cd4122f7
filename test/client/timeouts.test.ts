/**
 * per-request timeout: every attempt has `timeoutMs` (default 30 s) to be answered, its
 * body included; a timed-out attempt of an idempotent call is retried like a network error, one of
 * any other call is a `RequestTimeoutError` (a retryable `BackendError`) at once.
 */
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createHttpClient, RequestTimeoutError } from '../../lib/client/index.js';
import { BackendError } from '../../lib/contract/errors.js';
import { FAKE_TIMERS, scriptedServer, until } from './helpers.js';

describe('typed client: per-request timeout', () => {
  beforeAll(async () => {
    // Load fetch (undici) with real timers before any test fakes them.
    const warm = await scriptedServer((_, res) => res.end('{}'));
    await (await fetch(warm.url)).text();
    await warm.close();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('times out each attempt of a GET to a server that never answers after 30 s, retries, then raises', async () => {
    const hanging = await scriptedServer(() => {});
    vi.useFakeTimers(FAKE_TIMERS);
    const client = createHttpClient({ baseUrl: hanging.url, attempts: 2 });
    const result = client.get('s', 'k').catch((e: unknown) => e);
    await until(() => hanging.requests.length === 1);
    await vi.advanceTimersByTimeAsync(29_990);
    expect(hanging.requests).toHaveLength(1);
    // The first attempt times out; the retry follows after a backoff (at most 200 ms).
    await vi.advanceTimersByTimeAsync(220);
    await until(() => hanging.requests.length === 2);
    await vi.advanceTimersByTimeAsync(30_000);
    const error = await result;
    expect(error).toBeInstanceOf(RequestTimeoutError);
    expect(error).toBeInstanceOf(BackendError);
    expect((error as BackendError).retryable).toBe(true);
    expect((error as Error).message).toBe('GET /v1/sessions/s/state/k: no answer within 30000 ms');
    expect(hanging.requests).toHaveLength(2);
    await hanging.close();
  });

  it('raises a timed-out POST that is not an append at once, without sending it again', async () => {
    const hanging = await scriptedServer(() => {});
    vi.useFakeTimers(FAKE_TIMERS);
    const client = createHttpClient({ baseUrl: hanging.url, attempts: 4, timeoutMs: 5000 });
    const result = client.acquireLock('s').catch((e: unknown) => e);
    await until(() => hanging.requests.length === 1);
    await vi.advanceTimersByTimeAsync(5000);
    const error = await result;
    expect(error).toBeInstanceOf(RequestTimeoutError);
    expect((error as RequestTimeoutError).timeoutMs).toBe(5000);
    expect(hanging.requests).toHaveLength(1);
    await hanging.close();
  });

  it('gives a lock request that waits its waitMs on top of the timeout', async () => {
    const hanging = await scriptedServer(() => {});
    vi.useFakeTimers(FAKE_TIMERS);
    const client = createHttpClient({ baseUrl: hanging.url, attempts: 1, timeoutMs: 1000 });
    let settled = false;
    const result = client
      .acquireLock('s', { waitMs: 5000 })
      .catch((e: unknown) => e)
      .finally(() => {
        settled = true;
      });
    await until(() => hanging.requests.length === 1);
    await vi.advanceTimersByTimeAsync(5990);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(20);
    expect(await result).toBeInstanceOf(RequestTimeoutError);
    await hanging.close();
  });

  it('retries a timed-out GET like a network error and returns the answer of the next attempt', async () => {
    const server = await scriptedServer((_, res, n) => {
      if (n === 1) return; // the first attempt is never answered
      res.writeHead(200, { 'content-type': 'application/json', etag: '"v1"', 'agent-state-revision': '1' });
      res.end('{"answer":42}');
    });
    vi.useFakeTimers(FAKE_TIMERS);
    const client = createHttpClient({ baseUrl: server.url });
    const result = client.getVersioned('s', 'k');
    await until(() => server.requests.length === 1);
    await vi.advanceTimersByTimeAsync(30_200);
    expect(await result).toEqual({ value: { answer: 42 }, version: 'v1', revision: 1 });
    expect(server.requests).toHaveLength(2);
    await server.close();
  });

  it('times out an answer whose body stops half way, per call (timeoutMs overrides the client’s)', async () => {
    const stalling = await scriptedServer((_, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"items":[');
    });
    vi.useFakeTimers(FAKE_TIMERS);
    const client = createHttpClient({ baseUrl: stalling.url, attempts: 1 });
    const result = client.getList('s', 'k', { timeoutMs: 250 }).catch((e: unknown) => e);
    await until(() => stalling.requests.length === 1);
    await vi.advanceTimersByTimeAsync(250);
    const error = await result;
    expect(error).toBeInstanceOf(RequestTimeoutError);
    expect((error as RequestTimeoutError).timeoutMs).toBe(250);
    await stalling.close();
  });
});
