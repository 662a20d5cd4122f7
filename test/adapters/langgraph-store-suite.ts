/**
 * LangGraph's own store tests, ported: the assertions of langgraphjs's tests of `InMemoryStore`,
 * written again here (not copied) so that they run on any `BaseStore` — LangGraph's
 * `InMemoryStore` as the control, and `AgentStateMemoryStore` over the local API.
 *
 * Source: github.com/langchain-ai/langgraphjs at commit f8bdf16d4fe23a79e945ea5dc6f86bbf09abb77d
 * - libs/checkpoint/src/tests/store.test.ts, `describe("InMemoryStore")`: every test;
 * - libs/checkpoint/src/tests/namespace.test.ts: every test;
 * - libs/checkpoint/src/tests/vector.test.ts, "should combine vector search with filters": its
 *   filters, without the `query` (which only ranks there; this store has no semantic search).
 * The remaining tests of those files test `BaseStore`'s and `AsyncBatchedStore`'s own plumbing
 * with mock stores, the prototype guard of `MemorySaver`, or embeddings: nothing a store provides.
 */
import { type BaseStore, InvalidNamespaceError } from '@langchain/langgraph-checkpoint';
import { beforeEach, describe, expect, it } from 'vitest';

/** Sorts namespaces as the upstream tests do before comparing (`Array.prototype.sort`). */
const sorted = (namespaces: string[][]) => [...namespaces].sort();

/** Puts `namespaces[i]` / `id_<i>` with the upstream tests' values. */
async function putEach(store: BaseStore, namespaces: string[][]) {
  for (const [i, namespace] of namespaces.entries())
    await store.put(namespace, `id_${i}`, { data: `value_${String(i).padStart(2, '0')}` });
}

/** The ported suite on the store `make` answers (a fresh, empty one per test). */
export function describeLangGraphStoreSuite(name: string, make: () => BaseStore | Promise<BaseStore>) {
  describe(`${name}: store.test.ts (InMemoryStore), ported`, () => {
    let store: BaseStore;
    beforeEach(async () => {
      store = await make();
    });

    it('get answers the item put', async () => {
      await store.put(['test'], '123', { value: 1 });
      expect(await store.get(['test'], '123')).toEqual({
        value: { value: 1 },
        key: '123',
        namespace: ['test'],
        createdAt: expect.any(Date),
        updatedAt: expect.any(Date),
      });
    });

    it('search answers the items of the namespace, in order', async () => {
      await store.put(['test'], '123', { value: 1 });
      await store.put(['test'], '456', { value: 2 });
      const result = await store.search(['test']);
      expect(result).toHaveLength(2);
      expect(result[0]).toMatchObject({ value: { value: 1 }, key: '123', namespace: ['test'] });
      expect(result[1]).toMatchObject({ value: { value: 2 }, key: '456', namespace: ['test'] });
    });

    it('put stores the item', async () => {
      await store.put(['test'], '123', { value: 1 });
      expect(await store.get(['test'], '123')).toMatchObject({
        value: { value: 1 },
        key: '123',
        namespace: ['test'],
      });
    });

    it('delete removes the item (get answers null)', async () => {
      await store.put(['test'], '123', { value: 1 });
      await store.delete(['test'], '123');
      expect(await store.get(['test'], '123')).toBeNull();
    });

    it('listNamespaces answers every namespace', async () => {
      await putEach(store, [
        ['a', 'b', 'c'],
        ['a', 'b', 'd'],
        ['x', 'y', 'z'],
      ]);
      expect(await store.listNamespaces({})).toEqual([
        ['a', 'b', 'c'],
        ['a', 'b', 'd'],
        ['x', 'y', 'z'],
      ]);
    });

    it('listNamespaces filters by prefix', async () => {
      await putEach(store, [
        ['a', 'b', 'c'],
        ['a', 'b', 'd'],
        ['x', 'y', 'z'],
      ]);
      expect(await store.listNamespaces({ prefix: ['a'] })).toEqual([
        ['a', 'b', 'c'],
        ['a', 'b', 'd'],
      ]);
    });

    it('listNamespaces applies maxDepth', async () => {
      await putEach(store, [
        ['a', 'b', 'c'],
        ['a', 'b', 'd'],
        ['x', 'y', 'z'],
      ]);
      expect(await store.listNamespaces({ maxDepth: 2 })).toEqual([
        ['a', 'b'],
        ['x', 'y'],
      ]);
    });

    it('put refuses invalid namespaces; a reserved root label is refused by put only', async () => {
      await blocksInvalidNamespaces(store, ['langgraph', 'foo'], 'bar');
    });
  });

  describe(`${name}: namespace.test.ts, ported`, () => {
    let store: BaseStore;
    beforeEach(async () => {
      store = await make();
    });

    it('basic namespace operations: prefix, suffix, both, maxDepth, limit, offset', async () => {
      await putEach(store, [
        ['a', 'b', 'c'],
        ['a', 'b', 'd', 'e'],
        ['a', 'b', 'd', 'i'],
        ['a', 'b', 'f'],
        ['a', 'c', 'f'],
        ['b', 'a', 'f'],
        ['users', '123'],
        ['users', '456', 'settings'],
        ['admin', 'users', '789'],
      ]);
      expect(sorted(await store.listNamespaces({ prefix: ['a', 'b'] }))).toEqual(
        sorted([
          ['a', 'b', 'c'],
          ['a', 'b', 'd', 'e'],
          ['a', 'b', 'd', 'i'],
          ['a', 'b', 'f'],
        ]),
      );
      expect(sorted(await store.listNamespaces({ suffix: ['f'] }))).toEqual(
        sorted([
          ['a', 'b', 'f'],
          ['a', 'c', 'f'],
          ['b', 'a', 'f'],
        ]),
      );
      expect(sorted(await store.listNamespaces({ prefix: ['a'], suffix: ['f'] }))).toEqual(
        sorted([
          ['a', 'b', 'f'],
          ['a', 'c', 'f'],
        ]),
      );
      expect(sorted(await store.listNamespaces({ prefix: ['a', 'b'], maxDepth: 3 }))).toEqual(
        sorted([
          ['a', 'b', 'c'],
          ['a', 'b', 'd'],
          ['a', 'b', 'f'],
        ]),
      );
      expect(await store.listNamespaces({ prefix: ['a', 'b'], limit: 2 })).toEqual([
        ['a', 'b', 'c'],
        ['a', 'b', 'd', 'e'],
      ]);
      expect(await store.listNamespaces({ prefix: ['a', 'b'], offset: 2 })).toEqual([
        ['a', 'b', 'd', 'i'],
        ['a', 'b', 'f'],
      ]);
    });

    it('wildcards in prefixes and suffixes', async () => {
      await putEach(store, [
        ['users', '123'],
        ['users', '456'],
        ['users', '789', 'settings'],
        ['admin', 'users', '789'],
        ['guests', '123'],
        ['guests', '456', 'preferences'],
      ]);
      expect(sorted(await store.listNamespaces({ prefix: ['users', '*'] }))).toEqual(
        sorted([
          ['users', '123'],
          ['users', '456'],
          ['users', '789', 'settings'],
        ]),
      );
      expect(await store.listNamespaces({ suffix: ['*', 'preferences'] })).toEqual([
        ['guests', '456', 'preferences'],
      ]);
      expect(await store.listNamespaces({ prefix: ['*', 'users'], suffix: ['*', 'settings'] })).toEqual([]);
      await store.put(['admin', 'users', 'settings', '789'], 'foo', { data: 'some_val' });
      expect(
        sorted(await store.listNamespaces({ prefix: ['*', 'users'], suffix: ['settings', '*'] })),
      ).toEqual([['admin', 'users', 'settings', '789']]);
    });

    it('pagination of namespaces (limit and offset)', async () => {
      for (let i = 0; i < 20; i++) {
        const n = String(i).padStart(2, '0');
        await store.put(['namespace', `sub_${n}`], `id_${n}`, { data: `value_${n}` });
      }
      const subs = (from: number) =>
        Array.from({ length: 5 }, (_, i) => ['namespace', `sub_${String(from + i).padStart(2, '0')}`]);
      for (const offset of [0, 5, 15])
        expect(await store.listNamespaces({ prefix: ['namespace'], limit: 5, offset })).toEqual(subs(offset));
    });

    it('maxDepth of namespaces', async () => {
      await putEach(store, [
        ['a', 'b', 'c', 'd'],
        ['a', 'b', 'c', 'e'],
        ['a', 'b', 'f'],
        ['a', 'g'],
        ['h', 'i', 'j', 'k'],
      ]);
      expect(sorted(await store.listNamespaces({ maxDepth: 2 }))).toEqual(
        sorted([
          ['a', 'b'],
          ['a', 'g'],
          ['h', 'i'],
        ]),
      );
    });

    it('an empty store has no namespaces', async () => {
      expect(await store.listNamespaces({})).toEqual([]);
    });

    it('put refuses invalid namespaces; batch writes a valid one', async () => {
      await blocksInvalidNamespaces(store, ['valid', 'namespace'], 'key');
    });
  });

  describe(`${name}: vector.test.ts's filters (without the query), ported`, () => {
    let store: BaseStore;
    beforeEach(async () => {
      store = await make();
      const docs = [
        ['doc1', { text: 'red apple', color: 'red', score: 4.5 }],
        ['doc2', { text: 'red car', color: 'red', score: 3.0 }],
        ['doc3', { text: 'green apple', color: 'green', score: 4.0 }],
        ['doc4', { text: 'blue car', color: 'blue', score: 3.5 }],
      ] as const;
      for (const [key, value] of docs) await store.put(['test'], key, value);
    });
    const keys = async (filter: Record<string, unknown>) =>
      (await store.search(['test'], { filter })).map((r) => r.key).sort();

    it('equality, $gt, and $gte with equality together', async () => {
      expect(await keys({ color: 'red' })).toEqual(['doc1', 'doc2']);
      expect(await keys({ score: { $gt: 3.2 } })).toEqual(['doc1', 'doc3', 'doc4']);
      expect(await keys({ score: { $gte: 4.0 }, color: 'green' })).toEqual(['doc3']);
    });
  });
}

/**
 * The upstream "block invalid namespaces" test: put refuses an empty namespace, a label with a
 * period, an empty label, and the root label `langgraph`; `foo/langgraph/foo` works through get,
 * search and delete; a batch put of `batched` works through the same.
 */
async function blocksInvalidNamespaces(store: BaseStore, batched: string[], key: string) {
  const doc = { foo: 'bar' };
  for (const namespace of [[], ['the', 'thing.about'], ['some', 'fun', ''], ['langgraph', 'foo']])
    await expect(store.put(namespace, 'foo', doc)).rejects.toThrow(InvalidNamespaceError);
  for (const [namespace, k, viaBatch] of [
    [['foo', 'langgraph', 'foo'], 'bar', false],
    [batched, key, true],
  ] as const) {
    if (viaBatch) await store.batch([{ namespace: [...namespace], key: k, value: doc }]);
    else await store.put([...namespace], k, doc);
    expect((await store.get([...namespace], k))?.value).toEqual(doc);
    expect((await store.search([...namespace]))[0]?.value).toEqual(doc);
    await store.delete([...namespace], k);
    expect(await store.get([...namespace], k)).toBeNull();
  }
}
