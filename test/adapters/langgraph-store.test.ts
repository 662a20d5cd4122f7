/**
 * The LangGraph.js memory store (`AgentStateMemoryStore`) against the local API in-process:
 * langgraphjs's own store assertions (langgraph-store-suite.ts, which names their source and
 * commit) on LangGraph's `InMemoryStore` as the control and on this store over the memory and the
 * fs driver; the filters, pages and times compared with the control; odd and long labels and keys
 * (the key encoding is injective and keeps prefixes); the refusals (semantic search, indexing, a
 * namespace too long); the reserved memory session; and the HTTP calls and object-store requests
 * each operation costs, counted.
 */
import { randomUUID } from 'node:crypto';
import {
  AsyncBatchedStore,
  type BaseStore,
  InMemoryStore,
  InvalidNamespaceError,
  type Item,
  type SearchItem,
} from '@langchain/langgraph-checkpoint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { threadSession } from '../../lib/adapters/langgraph.js';
import {
  escapeLabel,
  itemKey,
  LABEL_BYTES,
  matchesFilter,
  namespaceOfKey,
  prefixKey,
  unescapeLabel,
} from '../../lib/adapters/langgraph-store.js';
import { UnsupportedOperationError } from '../../lib/contract/errors.js';
import { checkId, MEMORY_SESSION } from '../../lib/contract/ids.js';
import { LIMITS } from '../../lib/contract/limits.js';
import { AgentStateMemoryStore, AgentStateSaver } from '../../lib/entries/langgraph.js';
import { seededRandom } from '../seeded-random.js';
import { type CountingDriver, counting } from '../store/wrappers.js';
import { localApi } from './langgraph-api.js';
import { describeLangGraphStoreSuite } from './langgraph-store-suite.js';

type Api = Awaited<ReturnType<typeof localApi>>;

describeLangGraphStoreSuite('InMemoryStore (control)', () => new InMemoryStore());

for (const backend of ['memory', 'fs'] as const) {
  describe(`on the ${backend} driver`, () => {
    let api: Api;
    beforeAll(async () => {
      api = await localApi(backend);
    });
    afterAll(() => api.close());
    // Each store is a user of its own: what one wrote, the next does not see.
    describeLangGraphStoreSuite(
      `AgentStateMemoryStore (${backend} driver)`,
      () => new AgentStateMemoryStore({ client: api.client(`mem-${randomUUID()}`).client }),
    );
  });
}

describe('AgentStateMemoryStore', () => {
  let api: Api;
  let driver: CountingDriver;
  beforeAll(async () => {
    api = await localApi('memory', {
      wrap: (d) => {
        driver = counting(d);
        return driver;
      },
    });
  });
  afterAll(() => api.close());
  const fresh = () => {
    const user = `mem-${randomUUID()}`;
    const c = api.client(user);
    return { user, c, store: new AgentStateMemoryStore({ client: c.client }) };
  };

  describe('answers what InMemoryStore answers', () => {
    /** The user of the last store `both` made. */
    let lastUser = '';
    /** Both stores, with the same items put in the same order. */
    async function both(items: ReadonlyArray<[string[], string, Record<string, unknown>]>) {
      const control = new InMemoryStore();
      const { user, store: ours } = fresh();
      lastUser = user;
      for (const [namespace, key, value] of items) {
        await control.put(namespace, key, value);
        await ours.put(namespace, key, value);
      }
      return [control, ours] as [BaseStore, BaseStore];
    }
    const items: Array<[string[], string, Record<string, unknown>]> = Array.from({ length: 12 }, (_, i) => [
      ['docs', i < 6 ? 'a' : 'b'],
      `k${String(i).padStart(2, '0')}`,
      {
        n: i,
        text: String(i),
        tag: ['x', 'y', 'z'][i % 3],
        flag: i % 2 === 0,
        nested: { i },
        ...(i % 4 === 0 ? {} : { maybe: i }),
      },
    ]);
    const project = (results: Awaited<ReturnType<BaseStore['search']>>) =>
      results.map((r) => [r.namespace, r.key, r.value]);

    it('for filters: equality and every operator, together, on missing fields and objects', async () => {
      const [control, ours] = await both(items);
      const filters: Array<Record<string, unknown>> = [
        {},
        { tag: 'x' },
        { flag: true, tag: 'y' },
        { n: { $eq: 3 } },
        { n: { $ne: 3 } },
        { n: { $gt: 4 } },
        { n: { $gte: 4, $lt: 8 } },
        { n: { $lte: 2 } },
        { text: { $gt: '5' } },
        { tag: { $in: ['x', 'z'] } },
        { tag: { $nin: ['x'] } },
        { tag: { $in: 'x' } },
        { maybe: { $ne: 4 } },
        { maybe: undefined },
        { missing: { $nin: [1] } },
        { nested: { i: 1 } },
        { nested: {} },
        { n: 3, tag: 'z' },
      ];
      for (const filter of filters) {
        const expected = project(await control.search(['docs'], { filter, limit: 100 }));
        expect(project(await ours.search(['docs'], { filter, limit: 100 })), JSON.stringify(filter)).toEqual(
          expected,
        );
      }
    });

    it('for pages: limit and offset, with and without a filter, across namespaces (and short key pages)', async () => {
      const [control, ours] = await both(items);
      // A server may answer fewer keys than asked: one that answers 3 at most, read page by page.
      const { client } = api.client(lastUser);
      const short = new AgentStateMemoryStore({
        client: {
          ...client,
          listKeys: (s, o = {}) => client.listKeys(s, { ...o, limit: Math.min(o.limit ?? 1000, 3) }),
        },
      });
      for (const prefix of [['docs'], ['docs', 'a'], ['docs', 'b'], [], ['nothing']])
        for (const [limit, offset] of [
          [10, 0],
          [3, 0],
          [3, 2],
          [5, 9],
          [100, 11],
          [1, 12],
        ] as const)
          for (const filter of [undefined, { flag: false }]) {
            const options = { limit, offset, ...(filter ? { filter } : {}) };
            const expected = project(await control.search(prefix, options));
            const named = JSON.stringify({ prefix, ...options });
            expect(project(await ours.search(prefix, options)), named).toEqual(expected);
            expect(project(await short.search(prefix, options)), named).toEqual(expected);
          }
      for (const options of [
        {},
        { prefix: ['docs'], limit: 1, offset: 1 },
        { suffix: ['b'] },
        { maxDepth: 1 },
      ])
        expect(await short.listNamespaces(options)).toEqual(await control.listNamespaces(options));
    });

    it('for times: createdAt kept by an update, updatedAt moved', async () => {
      for (const store of await both([[['t'], 'k', { v: 1 }]])) {
        // (InMemoryStore answers its stored item itself, which an update changes: take the times now.)
        const first = await store.get(['t'], 'k');
        const [created, updated] = [first?.createdAt.getTime(), first?.updatedAt.getTime() ?? Number.NaN];
        await new Promise((r) => setTimeout(r, 5));
        await store.put(['t'], 'k', { v: 2 });
        const second = await store.get(['t'], 'k');
        expect(second?.value).toEqual({ v: 2 });
        expect(second?.createdAt.getTime()).toBe(created);
        expect(second?.updatedAt.getTime()).toBeGreaterThan(updated);
      }
    });

    it('for a batch: reads see the store before the batch, then the last write of an item wins', async () => {
      const stores = await both([[['b'], 'k', { v: 1 }]]);
      for (const store of stores) {
        const results = (await store.batch([
          { namespace: ['b'], key: 'k', value: { v: 2 } },
          { namespace: ['b'], key: 'k' },
          { namespacePrefix: ['b'], limit: 10, offset: 0 },
          { namespace: ['b'], key: 'k', value: { v: 3 } },
          { namespace: ['b'], key: 'new', value: { v: 4 } },
          { namespace: ['b'], key: 'new', value: null },
        ])) as unknown[];
        const [put, got, found] = results as [null, Item | null, SearchItem[]];
        // A put answers null in a batch (as InMemoryStore's do).
        expect(put).toBeNull();
        // (InMemoryStore's get answers its stored item itself, which the batch's put then changes.)
        expect(got?.key).toBe('k');
        if (store !== stores[0]) expect(got?.value).toEqual({ v: 1 });
        expect(found.map((r) => [r.key, r.value])).toEqual([['k', { v: 1 }]]);
        expect(results).toHaveLength(6);
        expect((await store.get(['b'], 'k'))?.value).toEqual({ v: 3 });
        expect(await store.get(['b'], 'new')).toBeNull();
      }
    });
  });

  describe('keys', () => {
    const odd = [
      'a/b',
      'a b',
      'a  b',
      ' ',
      '%',
      '%20',
      '#',
      '#x',
      '~',
      '!',
      '*',
      'ünïcødé',
      '日本語',
      '😀',
      'tab\there',
      'nul\u0000',
      'del\u007f',
      'c1\u0085',
      'lone\ud800',
      'trail\udc00x',
      'x'.repeat(LABEL_BYTES),
      'y'.repeat(LABEL_BYTES + 1),
      '€'.repeat(20),
    ];

    it('are valid store keys, one per (namespace, key), and a namespace prefix is a key prefix', () => {
      const random = seededRandom(7);
      const pick = () => odd[Math.floor(random() * odd.length)] as string;
      const seen = new Map<string, string>();
      for (let i = 0; i < 3000; i++) {
        const namespace = Array.from({ length: 1 + Math.floor(random() * 3) }, pick);
        const key = random() < 0.2 ? 'k'.repeat(Math.floor(random() * 120)) : pick();
        const k = itemKey(namespace, key);
        if (k === undefined) continue;
        expect(checkId('key', k)).toBe(k);
        expect(Buffer.byteLength(k)).toBeLessThanOrEqual(LIMITS.key);
        const pair = JSON.stringify([namespace, key]);
        expect(seen.get(k) ?? pair, k).toBe(pair);
        seen.set(k, pair);
        for (let depth = 0; depth <= namespace.length; depth++)
          expect(k.startsWith(prefixKey(namespace.slice(0, depth)))).toBe(true);
        // Its namespace reads back from the key (a hashed label only from the item's value).
        const labels = namespaceOfKey(k)?.labels;
        expect(labels?.length).toBe(namespace.length);
        for (const [j, label] of (labels ?? []).entries())
          if (label !== undefined) expect(label).toBe(namespace[j]);
      }
      expect(seen.size).toBeGreaterThan(2000);
      // Pairs a joined string would confuse stay apart, and a namespace is no prefix of a sibling.
      expect(itemKey(['a b'], 'c')).not.toBe(itemKey(['a'], 'b c'));
      expect(itemKey(['a', 'b'], 'c')).not.toBe(itemKey(['a'], 'b c'));
      expect(itemKey(['a', ''], 'c')).not.toBe(itemKey(['a'], ' c'));
      expect(itemKey(['ab'], 'k')?.startsWith(prefixKey(['a']))).toBe(false);
      for (const text of odd) expect(unescapeLabel(escapeLabel(text))).toBe(text);
    });

    it('sort as namespaces do, label by label (a namespace before its extensions), then by key', () => {
      const order = [
        [['a'], 'z'],
        [['a', 'a'], 'k'],
        [['a', 'b'], 'k'],
        [['a-b'], 'k'],
        [['b'], ''],
        [['b'], 'a'],
      ] as const;
      const keys = order.map(([ns, k]) => itemKey([...ns], k) as string);
      expect([...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)))).toEqual(keys);
    });

    it('round-trip odd and long labels and keys through put, get, search and listNamespaces', async () => {
      const { store } = fresh();
      const long = 'ł'.repeat(40); // 80 bytes: a hashed label
      const cases: Array<[string[], string]> = [
        [['a/b', 'c'], 'k/1'],
        [['a b'], 'c'],
        [['a'], 'b c'],
        [['%20'], '%'],
        [['#', '~!*'], '#'],
        [['ünïcødé', '日本語', '😀'], 'ключ'],
        [['tab\there'], 'line\nbreak'],
        [['x', long], 'in a hashed namespace'],
        [['x'], 'K'.repeat(200)],
        [['x'], ''],
        [['x'], 'dots.and:colons'],
      ];
      for (const [i, [namespace, key]] of cases.entries()) await store.put(namespace, key, { i });
      for (const [i, [namespace, key]] of cases.entries()) {
        const item = await store.get(namespace, key);
        expect(item, JSON.stringify([namespace, key])).toMatchObject({ namespace, key, value: { i } });
      }
      expect((await store.search(['a'])).map((r) => r.key)).toEqual(['b c']);
      expect((await store.search(['x'], { limit: 100 })).map((r) => [r.namespace, r.key])).toEqual([
        [['x'], ''],
        [['x'], 'K'.repeat(200)],
        [['x'], 'dots.and:colons'],
        [['x', long], 'in a hashed namespace'],
      ]);
      expect(await store.listNamespaces({ prefix: ['x'] })).toEqual([['x'], ['x', long]]);
      const all = await store.listNamespaces({});
      expect(all).toHaveLength(9);
      expect(all).toContainEqual(['ünïcødé', '日本語', '😀']);
      expect(await store.listNamespaces({ suffix: [long] })).toEqual([['x', long]]);
    });

    it('refuse a namespace too long to store (InvalidNamespaceError); reads of one find nothing', async () => {
      const { store } = fresh();
      const namespace = ['n'.repeat(40), 'm'.repeat(40), 'o'.repeat(20)];
      await expect(store.put(namespace, 'k', { v: 1 })).rejects.toThrow(InvalidNamespaceError);
      await expect(store.put(namespace, 'k', { v: 1 })).rejects.toThrow(/too long for AgentStateMemoryStore/);
      expect(await store.get(namespace, 'k')).toBeNull();
      expect(await store.search(namespace)).toEqual([]);
      await store.delete(namespace, 'k');
      // Long labels are hashed, so a deep namespace of long labels fits.
      const hashed = ['h'.repeat(100), 'i'.repeat(100)];
      await store.put(hashed, 'k'.repeat(300), { v: 2 });
      expect((await store.get(hashed, 'k'.repeat(300)))?.value).toEqual({ v: 2 });
    });
  });

  describe('refuses what it does not do, writing nothing', () => {
    it('semantic search: search with a query', async () => {
      const { store } = fresh();
      await store.put(['docs'], 'a', { text: 'apple' });
      const refused = store.search(['docs'], { query: 'fruit' });
      await expect(refused).rejects.toThrow(UnsupportedOperationError);
      await expect(store.search(['docs'], { query: 'fruit' })).rejects.toThrow(
        'AgentStateMemoryStore does not support semantic search',
      );
      expect((await store.search(['docs'], { query: '' })).map((r) => r.key)).toEqual(['a']);
    });

    it('indexing: put with an index (false is no index)', async () => {
      const { store } = fresh();
      await expect(store.put(['docs'], 'a', { text: 'apple' }, ['text'])).rejects.toThrow(
        /AgentStateMemoryStore does not support indexing for semantic search/,
      );
      await expect(store.put(['docs'], 'a', { text: 'apple' }, [])).rejects.toThrow(
        UnsupportedOperationError,
      );
      expect(await store.get(['docs'], 'a')).toBeNull();
      await store.put(['docs'], 'a', { text: 'apple' }, false);
      expect((await store.get(['docs'], 'a'))?.value).toEqual({ text: 'apple' });
    });

    it('a batch with a refused operation writes none of its puts', async () => {
      const { store } = fresh();
      await expect(
        store.batch([
          { namespace: ['docs'], key: 'b', value: { v: 1 } },
          { namespacePrefix: ['docs'], query: 'anything', limit: 10, offset: 0 },
        ]),
      ).rejects.toThrow(UnsupportedOperationError);
      expect(await store.get(['docs'], 'b')).toBeNull();
    });
  });

  describe('the memory session', () => {
    it('holds the items, and the checkpointer never maps a thread to it', async () => {
      const { user, c, store } = fresh();
      await store.put(['memories', 'u1'], 'likes', { food: 'pizza' });
      const keys = (await api.store(user).listKeys(MEMORY_SESSION)).values.map((v) => v.key);
      expect(keys).toEqual([itemKey(['memories', 'u1'], 'likes')]);
      expect(threadSession(MEMORY_SESSION)).not.toBe(MEMORY_SESSION);
      expect(threadSession(MEMORY_SESSION)).toMatch(/^h\.[0-9a-f]{64}$/);
      // A thread named as the memory session is a session of its own: deleting it keeps the memory.
      const saver = new AgentStateSaver({ client: c.client });
      await saver.put(
        { configurable: { thread_id: MEMORY_SESSION, checkpoint_ns: '' } },
        {
          v: 4,
          id: 'c1',
          ts: new Date(0).toISOString(),
          channel_values: {},
          channel_versions: {},
          versions_seen: {},
        },
        { source: 'input', step: 0, parents: {} },
        {},
      );
      await saver.deleteThread(MEMORY_SESSION);
      expect((await store.get(['memories', 'u1'], 'likes'))?.value).toEqual({ food: 'pizza' });
    });
  });

  describe('costs', () => {
    /** HTTP calls and object-store requests (GET-class: get and head; LIST) of one operation. */
    async function measure<T>(c: ReturnType<Api['client']>, run: () => Promise<T>) {
      c.reset();
      driver.reset();
      const result = await run();
      return {
        result,
        http: c.sent.length,
        list: driver.calls.list,
        getClass: driver.calls.get + driver.calls.head,
        putClass: driver.calls.put + driver.calls.copy + driver.calls.list + driver.calls.deleteMany,
      };
    }

    it('search of 10 in a namespace of 50: 1 HTTP call, 1 LIST, the marker and 10 values read; get 1 call; listNamespaces 1 call', async () => {
      const { c, store } = fresh();
      for (let i = 0; i < 50; i++)
        await store.put(['memories', 'u1'], `m${String(i).padStart(3, '0')}`, { i });
      await store.put(['memories', 'u2'], 'other', { i: -1 });
      const search = await measure(c, () => store.search(['memories', 'u1'], { limit: 10 }));
      const paged = await measure(c, () => store.search(['memories', 'u1'], { limit: 10, offset: 20 }));
      const get = await measure(c, () => store.get(['memories', 'u1'], 'm007'));
      const namespaces = await measure(c, () => store.listNamespaces({ prefix: ['memories'] }));
      console.log(
        `langgraph memory store costs: search(limit 10) ${JSON.stringify({ ...search, result: undefined })}; ` +
          `offset 20 ${JSON.stringify({ ...paged, result: undefined })}; get ${JSON.stringify({ ...get, result: undefined })}; ` +
          `listNamespaces ${JSON.stringify({ ...namespaces, result: undefined })}`,
      );
      expect(search.result.map((r) => r.value.i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(paged.result.map((r) => r.value.i)).toEqual([20, 21, 22, 23, 24, 25, 26, 27, 28, 29]);
      // One snapshot of a value page: 1 LIST beside the marker, then a GET per value (no HEAD).
      expect([search.http, search.list, search.getClass]).toEqual([1, 1, 1 + 10]);
      expect([paged.http, paged.list, paged.getClass]).toEqual([1, 1, 1 + 30]);
      expect([get.http, get.list, get.getClass, get.result?.value]).toEqual([1, 0, 2, { i: 7 }]);
      expect([namespaces.http, namespaces.list, namespaces.result]).toEqual([
        1,
        1,
        [
          ['memories', 'u1'],
          ['memories', 'u2'],
        ],
      ]);
    });

    it('put: a new item 1 call, one read or written before 1, one unknown 3; delete 1; concurrent gets 1 snapshot', async () => {
      const { user, c, store } = fresh();
      const create = await measure(c, () => store.put(['p'], 'k', { v: 1 }));
      const update = await measure(c, () => store.put(['p'], 'k', { v: 2 }));
      const other = new AgentStateMemoryStore({ client: api.client(user).client });
      const blind = api.client(user);
      const unknown = new AgentStateMemoryStore({ client: blind.client });
      await other.put(['p'], 'k2', { v: 1 });
      const stale = await measure(blind, () => unknown.put(['p'], 'k2', { v: 2 }));
      const deleted = await measure(c, () => store.delete(['p'], 'k'));
      const batched = new AsyncBatchedStore(store);
      batched.start();
      const gets = await measure(c, () =>
        Promise.all([batched.get(['p'], 'k'), batched.get(['p'], 'k2'), batched.get(['p'], 'none')]),
      );
      await batched.stop();
      expect([create.http, update.http, stale.http, deleted.http, gets.http]).toEqual([1, 1, 3, 1, 1]);
      expect(gets.result.map((r) => r?.value ?? null)).toEqual([null, { v: 2 }, null]);
      expect((await other.get(['p'], 'k2'))?.createdAt).toEqual((await unknown.get(['p'], 'k2'))?.createdAt);
    });
  });

  it('matchesFilter reads own fields only', () => {
    expect(matchesFilter({}, { constructor: { $ne: undefined } })).toBe(false);
    expect(matchesFilter({ a: 1 }, { a: 1, toString: undefined })).toBe(true);
  });
});
