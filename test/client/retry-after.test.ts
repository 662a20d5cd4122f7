/**
 * `Retry-After` honoured on 429 and 503 (delay-seconds or an HTTP date): never retried
 * sooner than asked (jitter adds up to a fifth), not retried at all when it asks for more than 10 s,
 * instead of the plain backoff (at most 200 ms before the second attempt), for the retries the
 * client makes: idempotent calls, appends, direct transfers.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createHttpClient } from '../../lib/client/index.js';
import { BackendError, BackendUnsafeError, MisconfiguredBackendError } from '../../lib/contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { toProblem } from '../../lib/http/problems.js';
import { FAKE_TIMERS, fakeFetch } from './helpers.js';

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const refusal = (status: number, retryAfter: string) =>
  new Response(JSON.stringify({ message: status === 429 ? 'Too Many Requests' : 'Service Unavailable' }), {
    status,
    headers: { 'content-type': 'application/json', 'retry-after': retryAfter },
  });
const value = () =>
  new Response('{"a":1}', { status: 200, headers: { etag: '"v1"', 'agent-state-revision': '1' } });
const inTwoSeconds = () => new Date(NOW + 2000).toUTCString();

describe('typed client: Retry-After on 429 and 503', () => {
  beforeEach(() => {
    vi.useFakeTimers(FAKE_TIMERS);
    vi.setSystemTime(NOW);
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  /** Calls made by `after` ms; the call under test is started first. */
  async function callsAt(
    fake: ReturnType<typeof fakeFetch>,
    run: () => Promise<unknown>,
    ...times: number[]
  ) {
    const result = run();
    result.catch(() => {});
    const counts: number[] = [];
    let elapsed = 0;
    for (const t of times) {
      await vi.advanceTimersByTimeAsync(t - elapsed);
      elapsed = t;
      counts.push(fake.calls.length);
    }
    return { counts, result };
  }

  it.each([
    ['429', 'seconds', 429, () => '2'],
    ['503', 'seconds', 503, () => '2'],
    ['429', 'an HTTP date', 429, inTwoSeconds],
    ['503', 'an HTTP date', 503, inTwoSeconds],
  ])(
    'waits per a %s Retry-After in %s (never sooner, at most a fifth later)',
    async (_s, _f, status, retryAfter) => {
      const fake = fakeFetch((_, n) => (n === 1 ? refusal(status, retryAfter()) : value()));
      const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
      const { counts, result } = await callsAt(fake, () => client.get('s', 'k'), 1990, 2401);
      expect(counts).toEqual([1, 2]);
      expect(await result).toEqual({ a: 1 });
    },
  );

  it('waits exactly the asked time, and a fifth more, at the ends of the jitter', async () => {
    for (const [random, before, after] of [
      [0, 1999, 2001],
      [0.999999, 2398, 2401],
    ] as const) {
      vi.spyOn(Math, 'random').mockReturnValue(random);
      const fake = fakeFetch((_, n) => (n === 1 ? refusal(429, '2') : value()));
      const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
      const { counts } = await callsAt(fake, () => client.get('s', 'k'), before, after);
      expect(counts).toEqual([1, 2]);
    }
  });

  it('does not wait for a Retry-After over 10 s: the retryable error is raised at once', async () => {
    for (const asked of ['3600', new Date(NOW + 86_400_000).toUTCString()]) {
      const fake = fakeFetch((_, n) => (n === 1 ? refusal(503, asked) : value()));
      const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
      const error = await client.get('s', 'k').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BackendError);
      expect((error as BackendError).retryable).toBe(true);
      expect(fake.calls).toHaveLength(1);
    }
  });

  it('takes a Retry-After date in the past as no wait', async () => {
    const past = fakeFetch((_, n) =>
      n === 1 ? refusal(429, new Date(NOW - 60_000).toUTCString()) : value(),
    );
    const again = createHttpClient({ baseUrl: 'http://api.test', fetch: past.fetch });
    expect((await callsAt(past, () => again.get('s', 'k'), 1)).counts).toEqual([2]);
  });

  it('honours it for an append (which carries its Idempotency-Key) answered 503', async () => {
    const landed = { action: 'created', count: 1, hash: chainHash(EMPTY_HASH, ['a']) };
    const fake = fakeFetch((_, n) => (n === 1 ? refusal(503, '2') : Response.json(landed)));
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    const { counts, result } = await callsAt(
      fake,
      () => client.appendList('s', 'k', ['a'], { expectedCount: 0 }),
      1990,
      2401,
    );
    expect(counts).toEqual([1, 2]);
    expect(await result).toEqual(landed);
  });

  it('honours it for a direct upload the object store answers 503', async () => {
    const fake = fakeFetch((sent, n) => {
      if (sent.url.startsWith('http://store.test'))
        return n === 2
          ? new Response('<Error><Code>SlowDown</Code></Error>', {
              status: 503,
              headers: { 'retry-after': '2' },
            })
          : new Response(null, { status: 200 });
      if (sent.url.includes('/uploads/'))
        return Response.json({
          name: 'w',
          size: 3,
          storageClass: 'standard',
          lastModified: new Date().toISOString(),
        });
      return Response.json(
        {
          uploadId: 'u1',
          expiresAt: new Date(NOW + 3600_000).toISOString(),
          upload: { method: 'PUT', url: 'http://store.test/object', headers: {} },
        },
        { status: 201 },
      );
    });
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    const { counts, result } = await callsAt(
      fake,
      () => client.uploadWorkspace('s', 'w', new Uint8Array([1, 2, 3]), { encoding: 'identity' }),
      1990,
      2401,
    );
    expect(counts).toEqual([2, 4]);
    expect(await result).toMatchObject({ name: 'w', size: 3 });
  });

  it('makes one attempt on the 503s no retry helps (backend-misconfigured, backend-unsafe); retries backend-unavailable', async () => {
    const cases = [
      [new MisconfiguredBackendError('s3', 'bucket', 's3 bucket b refused access (AccessDenied)'), 1],
      [new BackendUnsafeError('s3', 'create-only writes'), 1],
      [new BackendError('down', true), 3],
    ] as const;
    for (const [thrown, attempts] of cases) {
      // The server's own answer: backend-misconfigured carries no Retry-After.
      const { response } = toProblem(thrown, 'req-1');
      const answer = () =>
        new Response(response.body, { status: response.status, headers: response.headers });
      const fake = fakeFetch(answer);
      const client = createHttpClient({ baseUrl: 'http://api.test', attempts: 3, fetch: fake.fetch });
      const { counts, result } = await callsAt(fake, () => client.get('s', 'k'), 5000);
      expect(counts, thrown.name).toEqual([attempts]);
      const error = await result.catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BackendError);
      expect((error as BackendError).retryable).toBe(attempts === 3);
    }
    const { response } = toProblem(cases[0][0], 'req-2');
    expect(response.headers['retry-after']).toBeUndefined();
  });

  it('keeps the plain backoff on a 500, a 429 without Retry-After and a 502 with one, not on a 503', async () => {
    for (const [first, at201] of [
      [() => new Response('{}', { status: 500 }), 2],
      [() => new Response('{}', { status: 429 }), 2],
      [() => new Response('{}', { status: 502, headers: { 'retry-after': '2' } }), 2],
      [() => new Response('{}', { status: 503, headers: { 'retry-after': '2' } }), 1],
    ] as const) {
      const fake = fakeFetch((_, n) => (n === 1 ? first() : value()));
      const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
      expect((await callsAt(fake, () => client.get('s', 'k'), 201)).counts).toEqual([at201]);
    }
  });
});
