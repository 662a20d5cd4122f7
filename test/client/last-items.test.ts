/**
 * `getList(…, { last: n })` answers the last n items whole. A server may cut a `last` answer at its
 * old end (what it reads at once: a young log or head, an answer's cap); the client reads the items
 * before the cut forward and checks them against the cut page's `baseHash`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient, ListChangedError } from '../../lib/client/index.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { fakeFetch, localApi } from './helpers.js';

const big = (i: number) => ({ role: 'tool', n: i, content: `${i} ${'x'.repeat(10_000)}` });

describe('the last n items of a list, whole', () => {
  let api: Awaited<ReturnType<typeof localApi>>;
  const all = Array.from({ length: 400 }, (_, i) => big(i));
  beforeAll(async () => {
    api = await localApi();
    let hash = EMPTY_HASH;
    for (let i = 0; i < all.length; i++)
      ({ hash } = await api.store.appendList('s', 'l', [all[i]], { expectedCount: i, expectedHash: hash }));
  });
  afterAll(() => api.close());

  it('the server cuts last: 50 of 10 KB items; the client reads the rest and answers all 50', async () => {
    const raw = await api.store.getList('s', 'l', { last: 50 });
    expect(raw.items.length).toBeLessThan(50); // what makes this test mean something
    const client = api.client();
    for (const n of [1, 50, 120, 399, 400, 1_000]) {
      const page = await client.getList('s', 'l', { last: n });
      const from = Math.max(0, all.length - n);
      expect(page.offset).toBe(from);
      expect(page.items).toEqual(all.slice(from));
      expect(page.baseHash).toBe(chainHash(EMPTY_HASH, all.slice(0, from)));
      expect(page).toMatchObject({ count: all.length, hash: chainHash(EMPTY_HASH, all) });
    }
    // An absent list is empty.
    expect(await client.getList('s', 'absent', { last: 5 })).toMatchObject({ items: [], count: 0 });
  });

  it('items before the cut that do not chain to its baseHash (a rewrite meanwhile) read again, then ListChangedError', async () => {
    const items = ['a', 'b', 'c', 'd'];
    const hash = chainHash(EMPTY_HASH, items);
    const fake = fakeFetch((sent) => {
      const url = new URL(sent.url);
      if (url.searchParams.has('last'))
        return Response.json(
          { items: ['d'], count: 4, hash, offset: 3, baseHash: chainHash(EMPTY_HASH, items.slice(0, 3)) },
          { headers: { etag: `"${hash}"` } },
        );
      // The forward read answers other items than the list held (rewritten in between).
      return Response.json(
        { items: ['x', 'y'], count: 4, hash, offset: 1, baseHash: chainHash(EMPTY_HASH, ['a']) },
        { headers: { etag: `"${hash}"` } },
      );
    });
    const client = createHttpClient({ baseUrl: 'http://127.0.0.1:9', token: () => 't', fetch: fake.fetch });
    await expect(client.getList('s', 'l', { last: 3 })).rejects.toBeInstanceOf(ListChangedError);
    // Each attempt: the last page, then the items before its cut.
    expect(fake.calls.length).toBe(8);
    expect(new URL(fake.calls[1]?.url ?? '').searchParams.get('offset')).toBe('1');
    expect(new URL(fake.calls[1]?.url ?? '').searchParams.get('limit')).toBe('2');
  });
});
