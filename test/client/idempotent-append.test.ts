/**
 * `Idempotency-Key`: every append the client sends carries one, generated once per
 * logical append (an `appendList` call, or the append a `saveList` turns into) and sent unchanged
 * on every retry; with it an append is retried after a lost answer (a network error, a 5xx, a
 * timeout). Until the server remembers keys, a 409 `append-conflict` whose count and hash are
 * exactly what this append makes is this append, landed; any other conflict is raised.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createHttpClient } from '../../lib/client/index.js';
import { AppendConflictError, BackendError } from '../../lib/contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../../lib/protocol/schemas.js';
import { FAKE_TIMERS, fakeFetch, localApi, never, problem, until } from './helpers.js';

type Api = Awaited<ReturnType<typeof localApi>>;

interface Seen {
  method: string;
  path: string;
  key: string | null;
  status: number;
}

/**
 * A fetch to the real server that drops the answer of the POSTs `drop` picks, after the server has
 * applied them (the caller sees a network error, or `replace`'s answer instead).
 */
function losing(drop: (n: number) => boolean, replace?: () => Response) {
  const seen: Seen[] = [];
  let posts = 0;
  const wrapped: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    const method = init?.method ?? 'GET';
    const headers = new Headers(init?.headers);
    seen.push({
      method,
      path: new URL(String(input)).pathname,
      key: headers.get('idempotency-key'),
      status: response.status,
    });
    if (method === 'POST' && drop(++posts)) {
      await response.arrayBuffer(); // the server has answered: the append is applied
      if (replace) return replace();
      throw new TypeError('fetch failed', { cause: new Error('socket hang up') });
    }
    return response;
  };
  return { seen, fetch: wrapped };
}

describe('typed client: Idempotency-Key and lost answers of appends', () => {
  let api: Api;
  beforeAll(async () => {
    api = await localApi();
  });
  afterAll(() => api.close());

  it('after a lost answer, with another writer behind it, the retry is known by its Idempotency-Key and answers as the first', async () => {
    // The first POST is applied and its answer lost; before the retry, bob appends behind it.
    const bob = api.client();
    let bobDone = false;
    const wire = losing((n) => n === 1, undefined);
    const wrapped: typeof fetch = async (input, init) => {
      const answer = await wire.fetch(input, init).catch(async (error: unknown) => {
        if (!bobDone) {
          bobDone = true;
          await bob.appendList('lost-behind', 'memory', ['bob'], { expectedCount: 1 });
        }
        throw error;
      });
      return answer;
    };
    const alice = api.client({ fetch: wrapped });
    const result = await alice.appendList('lost-behind', 'memory', ['alice'], { expectedCount: 0 });
    expect(result).toEqual({ action: 'created', count: 1, hash: chainHash(EMPTY_HASH, ['alice']) });
    const posts = wire.seen.filter((s) => s.method === 'POST');
    // The server remembers the key: the retry answers 200 with the first answer, nothing written.
    expect(posts.map((p) => p.status)).toEqual([200, 200]);
    expect(new Set(posts.map((p) => p.key)).size).toBe(1);
    expect((await api.store.getList('lost-behind', 'memory')).items).toEqual(['alice', 'bob']);
  });

  it('an append from an unknown base is not retried after a lost answer: the outcome cannot be checked', async () => {
    const wire = losing((n) => n === 1);
    await api.client().appendList('unknown-base', 'memory', ['a'], { expectedCount: 0 });
    const alice = api.client({ fetch: wire.fetch });
    await expect(
      alice.appendList('unknown-base', 'memory', ['b'], { expectedCount: 1 }),
    ).rejects.toBeInstanceOf(BackendError);
    expect(wire.seen.filter((s) => s.method === 'POST')).toHaveLength(1);
  });

  it('sends one key per append, the same on the retry after a lost answer, and takes the conflict as its own append', async () => {
    const wire = losing((n) => n === 1);
    const alice = api.client({ fetch: wire.fetch });
    const items = [{ role: 'user', content: 'hi' }, { role: 'assistant' }];
    const result = await alice.appendList('lost-1', 'memory', items, { expectedCount: 0 });
    expect(result).toEqual({ action: 'created', count: 2, hash: chainHash(EMPTY_HASH, items) });
    const posts = wire.seen.filter((s) => s.method === 'POST');
    expect(posts).toHaveLength(2);
    expect(posts[0]?.status).toBe(200); // applied, answer lost
    // The server does not remember keys yet: the retry meets the list it made, which the store
    // answers as a replay (200 `unchanged`) or a conflict with exactly its count and hash (409).
    expect([200, 409]).toContain(posts[1]?.status);
    expect(posts[0]?.key).toMatch(IDEMPOTENCY_KEY_PATTERN);
    expect(posts[1]?.key).toBe(posts[0]?.key);
    const stored = await api.store.getList('lost-1', 'memory');
    expect(stored.items).toEqual(items);
    // The client knows the list now: the next append goes on from it.
    const next = await alice.appendList('lost-1', 'memory', ['x'], { expectedCount: 2 });
    expect(next.count).toBe(3);
    const keys = wire.seen.filter((s) => s.method === 'POST').map((s) => s.key);
    expect(new Set(keys).size).toBe(2); // another logical append, another key
  });

  it('recognises an append to a known list (appended), from the hash it read or the expectedHash given', async () => {
    await api.store.saveList('lost-2', 'memory', ['a', 'b']);
    const reader = losing((n) => n === 1);
    const alice = api.client({ fetch: reader.fetch });
    await alice.getList('lost-2', 'memory');
    expect(await alice.appendList('lost-2', 'memory', ['c'], { expectedCount: 2 })).toEqual({
      action: 'appended',
      count: 3,
      hash: chainHash(EMPTY_HASH, ['a', 'b', 'c']),
    });
    const fresh = api.client({ fetch: losing((n) => n === 1).fetch });
    const hash = chainHash(EMPTY_HASH, ['a', 'b', 'c']);
    expect(
      await fresh.appendList('lost-2', 'memory', [{ d: 1, e: [2] }], {
        expectedCount: 3,
        expectedHash: hash,
      }),
    ).toEqual({ action: 'appended', count: 4, hash: chainHash(hash, [{ d: 1, e: [2] }]) });
    expect((await api.store.getList('lost-2', 'memory')).items).toEqual(['a', 'b', 'c', { d: 1, e: [2] }]);
  });

  it('retries an append whose answer was a 502 after the server applied it', async () => {
    const wire = losing(
      (n) => n === 1,
      () => new Response('{"message":"Bad Gateway"}', { status: 502 }),
    );
    const alice = api.client({ fetch: wire.fetch });
    const result = await alice.appendList('lost-3', 'memory', ['a'], { expectedCount: 0 });
    expect(result.count).toBe(1);
    expect((await api.store.getList('lost-3', 'memory')).items).toEqual(['a']);
  });

  it('keeps one key through the append a saveList turns into, and lands it once', async () => {
    const wire = losing((n) => n === 1);
    const alice = api.client({ fetch: wire.fetch });
    await alice.saveList('lost-4', 'memory', ['a']);
    const result = await alice.saveList('lost-4', 'memory', ['a', 'b', 'c']);
    expect(result).toEqual({ action: 'appended', count: 3, hash: chainHash(EMPTY_HASH, ['a', 'b', 'c']) });
    const posts = wire.seen.filter((s) => s.method === 'POST');
    expect(posts).toHaveLength(2);
    expect(posts[1]?.key).toBe(posts[0]?.key);
    // No rewrite: only the first save was a PUT.
    expect(wire.seen.filter((s) => s.method === 'PUT')).toHaveLength(1);
    expect((await api.store.getList('lost-4', 'memory')).items).toEqual(['a', 'b', 'c']);
  });

  it('still raises a genuine conflict: other items landed, or the expectedHash was wrong', async () => {
    await api.store.saveList('lost-5', 'memory', ['a', 'theirs']);
    // The first refusal is lost too: the retry, with the same key, is refused again; the items at
    // its place are not its own, so it is raised.
    const wire = losing((n) => n === 1);
    const alice = api.client({ fetch: wire.fetch });
    const error = await alice
      .appendList('lost-5', 'memory', ['mine'], {
        expectedCount: 1,
        expectedHash: chainHash(EMPTY_HASH, ['a']),
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppendConflictError);
    expect(error).toMatchObject({ count: 2, hash: chainHash(EMPTY_HASH, ['a', 'theirs']) });
    const posts = wire.seen.filter((s) => s.method === 'POST');
    expect(posts.map((p) => p.status)).toEqual([409, 409]);
    expect(posts[1]?.key).toBe(posts[0]?.key);
    // A wrong expectedHash is no base: what it would make is not what the list holds.
    await expect(
      alice.appendList('lost-5', 'memory', ['theirs'], { expectedCount: 1, expectedHash: EMPTY_HASH }),
    ).rejects.toBeInstanceOf(AppendConflictError);
    expect((await api.store.getList('lost-5', 'memory')).items).toEqual(['a', 'theirs']);
  });
});

describe('typed client: appends against a fake API', () => {
  it('takes an append-conflict reporting exactly its result as landed, on the first answer too', async () => {
    const items = ['a', { b: [1, 2] }];
    const hash = chainHash(EMPTY_HASH, items);
    const fake = fakeFetch(() => problem(409, 'append-conflict', { count: 2, hash }));
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    expect(await client.appendList('s', 'k', items, { expectedCount: 0 })).toEqual({
      action: 'created',
      count: 2,
      hash,
    });
    expect(fake.calls[0]?.headers['idempotency-key']).toMatch(IDEMPOTENCY_KEY_PATTERN);
    // Without a known base hash (expectedCount 1, the client has not seen the list): raised.
    const base = chainHash(EMPTY_HASH, ['x']);
    const unknown = fakeFetch(() =>
      problem(409, 'append-conflict', { count: 3, hash: chainHash(base, items) }),
    );
    const blind = createHttpClient({ baseUrl: 'http://api.test', fetch: unknown.fetch });
    await expect(blind.appendList('s', 'k', items, { expectedCount: 1 })).rejects.toBeInstanceOf(
      AppendConflictError,
    );
    // With it (as expectedHash): landed.
    expect(await blind.appendList('s', 'k', items, { expectedCount: 1, expectedHash: base })).toEqual({
      action: 'appended',
      count: 3,
      hash: chainHash(base, items),
    });
    // A count one off, or another hash: raised.
    for (const other of [
      { count: 3, hash },
      { count: 2, hash: chainHash(EMPTY_HASH, ['a', { b: [2, 1] }]) },
    ]) {
      const refusing = fakeFetch(() => problem(409, 'append-conflict', other));
      const c = createHttpClient({ baseUrl: 'http://api.test', fetch: refusing.fetch });
      await expect(c.appendList('s', 'k', items, { expectedCount: 0 })).rejects.toBeInstanceOf(
        AppendConflictError,
      );
    }
  });

  it('retries a timed-out append with its key; raises RequestTimeoutError when every attempt times out', async () => {
    vi.useFakeTimers(FAKE_TIMERS);
    try {
      const landed = { action: 'created', count: 1, hash: chainHash(EMPTY_HASH, ['a']) };
      const fake = fakeFetch((_, n) => (n === 1 ? never<Response>() : Response.json(landed)));
      const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch, timeoutMs: 1000 });
      const result = client.appendList('s', 'k', ['a'], { expectedCount: 0 });
      await until(() => fake.calls.length === 1);
      await vi.advanceTimersByTimeAsync(1200);
      expect(await result).toEqual(landed);
      expect(fake.calls).toHaveLength(2);
      expect(fake.calls[1]?.headers['idempotency-key']).toBe(fake.calls[0]?.headers['idempotency-key']);
      expect(fake.calls[1]?.body).toBe(fake.calls[0]?.body);

      const hanging = fakeFetch(() => never<Response>());
      const stuck = createHttpClient({
        baseUrl: 'http://api.test',
        fetch: hanging.fetch,
        timeoutMs: 1000,
        attempts: 3,
      });
      const failed = stuck.appendList('s', 'k', ['a'], { expectedCount: 0 }).catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(5000);
      const error = await failed;
      expect(error).toBeInstanceOf(BackendError);
      expect(error).toMatchObject({ name: 'RequestTimeoutError', retryable: true });
      expect(hanging.calls).toHaveLength(3);
    } finally {
      vi.useRealTimers();
    }
  });
});
