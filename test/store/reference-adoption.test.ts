/**
 * Adoption of data written by the AgentScope reference's OSS store (lib/store/reference.ts) on
 * every backend of the tier: the objects are written with the driver exactly as the reference
 * writes them (`<prefix><user>/<session>/<key>.json`, `.list.json`, `.list.hash`; no marker, no
 * metadata, no tags), then read, listed and written through the store; the cost of adoption is
 * counted.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AppendConflictError,
  ListPreconditionFailedError,
  ReferenceIdUnsupportedError,
} from '../../lib/contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { encodeId } from '../../lib/contract/ids.js';
import type { SessionStore } from '../../lib/contract/types.js';
import { ObjectNotFoundError } from '../../lib/drivers/errors.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { adoptPrefix } from '../../lib/store/adopt.js';
import { isReferenceListHash, referenceListHash } from '../../lib/store/reference.js';
import { createStateStore, type StateStoreOptions } from '../../lib/store/store.js';
import { backends } from '../backends.js';
import { counting } from './wrappers.js';

/** Writes one reference session as `OssAgentStateStore` does: no metadata, no tags, no marker. */
async function writeReference(
  driver: ObjectStoreDriver,
  root: string,
  session: string,
  state: { values?: Record<string, unknown>; lists?: Record<string, unknown[]> },
) {
  for (const [key, value] of Object.entries(state.values ?? {}))
    await driver.put(`${root}${session}/${key}.json`, JSON.stringify(value), {
      contentType: 'application/json',
    });
  for (const [key, items] of Object.entries(state.lists ?? {})) {
    await driver.put(`${root}${session}/${key}.list.json`, JSON.stringify(items), {
      contentType: 'application/json',
    });
    await driver.put(`${root}${session}/${key}.list.hash`, referenceListHash(items), {
      contentType: 'text/plain',
    });
  }
}

/** Appends one item as a writer without a base does: read the count, append on it, again on a conflict. */
async function appendRetrying(store: SessionStore, item: unknown) {
  for (;;) {
    const { count, hash } = await store.getList('chat-1', 'memory', { last: 0 });
    try {
      return await store.appendList('chat-1', 'memory', [item], { expectedCount: count, expectedHash: hash });
    } catch (error) {
      if (!(error instanceof AppendConflictError || error instanceof ListPreconditionFailedError))
        throw error;
    }
  }
}

const MESSAGES = [
  { role: 'user', content: 'hello' },
  { role: 'assistant', content: 'hi, how can I help?' },
  { role: 'user', content: 'plan a trip' },
];
const AGENT_STATE = { name: 'Friday', memory: { turns: 3 }, toolkit: ['search'] };

describe('referenceListHash: the form the reference writes', () => {
  it('is empty:0 or 1 to 8 hex digits, and told apart from this store’s heads', () => {
    expect(referenceListHash([])).toBe('empty:0');
    for (let n = 1; n < 40; n++) {
      const hash = referenceListHash(Array.from({ length: n }, (_, i) => ({ i })));
      expect(hash).toMatch(/^[0-9a-f]{1,8}$/);
      expect(isReferenceListHash(Buffer.from(hash))).toBe(true);
    }
    expect(isReferenceListHash(Buffer.from(JSON.stringify({ v: 1, inc: 'x' })))).toBe(false);
    expect(isReferenceListHash(Buffer.from('sha256:'))).toBe(false);
  });
});

for (const backend of backends()) {
  const formats =
    backend.name === 'memory' || backend.name === 'fs' ? (['cas', 'append'] as const) : [undefined];
  for (const listFormat of formats) {
    describe(`adopting the reference's objects on ${backend.name}${listFormat ? ` (${listFormat})` : ''}`, () => {
      let driver: ObjectStoreDriver;
      let close: () => Promise<void>;
      beforeAll(async () => {
        ({ driver, close } = await backend.make());
      });
      afterAll(() => close());

      /** A fresh prefix and a store over it (adoption on unless told otherwise). */
      function setup(options: Partial<StateStoreOptions> = {}, inner = driver) {
        const prefix = `ref-${randomBytes(6).toString('hex')}/`;
        const make = (o: Partial<StateStoreOptions> = {}, d = inner) =>
          createStateStore({
            driver: d,
            prefix,
            adoptReference: true,
            ...(listFormat ? { listFormat } : {}),
            ...options,
            ...o,
          }).forUser('alice');
        return { prefix, root: `${prefix}alice/`, store: make(), make };
      }

      it('reads values and whole lists, lists keys and sessions, and says the session exists', async () => {
        const { root, store } = setup();
        await writeReference(driver, root, 'chat-1', {
          values: { agent_state: AGENT_STATE },
          lists: { memory: MESSAGES, empty: [] },
        });

        expect(await store.get('chat-1', 'agent_state')).toEqual(AGENT_STATE);
        const page = await store.getList('chat-1', 'memory');
        expect(page.items).toEqual(MESSAGES);
        expect(page.hash).toBe(chainHash(EMPTY_HASH, MESSAGES));
        expect((await store.getList('chat-1', 'memory', { last: 1 })).items).toEqual([MESSAGES[2]]);
        expect((await store.getList('chat-1', 'empty')).items).toEqual([]);
        expect(await store.exists('chat-1')).toBe(true);
        expect((await store.listSessionIds()).sessions.map((i) => i.sessionId)).toContain('chat-1');
        // A session never accessed is adopted by the listing.
        await writeReference(driver, root, 'chat-2', { values: { agent_state: AGENT_STATE } });
        expect((await store.listSessionIds()).sessions.map((i) => i.sessionId).sort()).toEqual([
          'chat-1',
          'chat-2',
        ]);
        const keys = await store.listKeys('chat-1');
        expect(keys.values.map((v) => v.key)).toEqual(['agent_state']);
        expect(keys.lists.map((l) => [l.key, l.count])).toEqual([['memory', 3]]);
      });

      it('without adoption shows nothing of it, and a first write there deletes none of it', async () => {
        const { root, store, make } = setup({ adoptReference: false });
        await writeReference(driver, root, 'chat-1', {
          values: { agent_state: AGENT_STATE },
          lists: { memory: MESSAGES },
        });

        expect(await store.get('chat-1', 'agent_state')).toBeUndefined();
        expect(await store.exists('chat-1')).toBe(false);
        await store.save('chat-1', 'other', { x: 1 });
        // The purge of leftovers of the new incarnation kept every object without an incarnation.
        expect(Buffer.from((await driver.get(`${root}chat-1/agent_state.json`)).body).toString()).toBe(
          JSON.stringify(AGENT_STATE),
        );
        expect(isReferenceListHash((await driver.get(`${root}chat-1/memory.list.hash`)).body)).toBe(true);
        expect((await driver.get(`${root}chat-1/memory.list.json`)).body.byteLength).toBeGreaterThan(0);
        // The session is this store's now: the reference's objects are another incarnation's.
        expect(await make().get('chat-1', 'agent_state')).toBeUndefined();
      });

      it('costs one LIST per access to a session without a marker, none once adopted', async () => {
        const counted = counting(driver);
        const { root, make } = setup({}, counted);
        const off = make({ adoptReference: false });
        const on = make();
        await writeReference(driver, root, 'chat-1', { values: { agent_state: AGENT_STATE } });

        counted.reset();
        await off.get('absent', 'agent_state');
        const offLists = counted.calls.list;
        counted.reset();
        await on.get('absent', 'agent_state');
        const onLists = counted.calls.list;
        expect([offLists, onLists]).toEqual([0, 1]);

        counted.reset();
        expect(await on.get('chat-1', 'agent_state')).toEqual(AGENT_STATE);
        // The LIST, the HEAD of the value it found and the marker's create, beside the two GETs.
        expect([counted.calls.list, counted.calls.put]).toEqual([1, 1]);
        counted.reset();
        expect(await on.get('chat-1', 'agent_state')).toEqual(AGENT_STATE);
        expect([counted.calls.list, counted.calls.put, counted.calls.get + counted.calls.head]).toEqual([
          0, 0, 2,
        ]);

        // A list read, then an append, of a converted list: GETs more with adoption on, nothing else.
        await on.appendList('chat-1', 'memory', [0], { expectedCount: 0 });
        const cost = async (store: SessionStore, n: number) => {
          counted.reset();
          await store.getList('chat-1', 'memory');
          const read = counted.calls.get;
          await store.appendList('chat-1', 'memory', [n], { expectedCount: n });
          return {
            read,
            write: counted.calls.get - read,
            list: counted.calls.list,
            writes: counted.calls.put + counted.calls.append,
          };
        };
        const withOff = await cost(off, 1);
        const withOn = await cost(on, 2);
        console.log(
          `list read: ${withOff.read} GET off, ${withOn.read} on; append: ${withOff.write} GET off, ${withOn.write} on`,
        );
        expect([withOn.read - withOff.read, withOn.write - withOff.write]).toEqual([1, 1]);
        expect([withOn.list, withOn.writes]).toEqual([withOff.list, withOff.writes]);
      });

      it('converts a list on its first write, in place, keeping every item; a value write tags it', async () => {
        const { root, store } = setup();
        await writeReference(driver, root, 'chat-1', {
          values: { agent_state: AGENT_STATE },
          lists: { memory: MESSAGES },
        });

        const more = { role: 'assistant', content: 'where to?' };
        const page = await store.getList('chat-1', 'memory');
        const result = await store.appendList('chat-1', 'memory', [more], {
          expectedCount: page.count,
          expectedHash: page.hash,
        });
        expect(result).toMatchObject({ count: 4, hash: chainHash(EMPTY_HASH, [...MESSAGES, more]) });
        expect((await store.getList('chat-1', 'memory')).items).toEqual([...MESSAGES, more]);
        expect(isReferenceListHash((await driver.get(`${root}chat-1/memory.list.hash`)).body)).toBe(false);
        // The reference's whole-list copy, stale once converted and without a tag the lifecycle
        // rules select, is gone (this deployment keeps no `.list.json`).
        expect(await driver.head(`${root}chat-1/memory.list.json`).catch((e: unknown) => e)).toBeInstanceOf(
          ObjectNotFoundError,
        );

        await store.save('chat-1', 'agent_state', { ...AGENT_STATE, name: 'Saturday' });
        const head = await driver.head(`${root}chat-1/agent_state.json`);
        expect(head.metadata.inc).toBe('ref');
        expect((await store.get('chat-1', 'agent_state')) as object).toMatchObject({ name: 'Saturday' });
      });

      it('loses no item when two writers race the first write of a list', async () => {
        const { root, make } = setup();
        await writeReference(driver, root, 'chat-1', { lists: { memory: MESSAGES } });
        const a = make();
        const b = make();

        const writes = await Promise.allSettled([
          appendRetrying(a, { from: 'a' }),
          appendRetrying(b, { from: 'b' }),
        ]);
        expect(writes.map((w) => (w.status === 'rejected' ? String(w.reason) : w.status))).toEqual([
          'fulfilled',
          'fulfilled',
        ]);
        const items = (await make().getList('chat-1', 'memory')).items;
        expect(items.slice(0, 3)).toEqual(MESSAGES);
        expect(items.slice(3)).toHaveLength(2);
        expect(items.slice(3)).toEqual(expect.arrayContaining([{ from: 'a' }, { from: 'b' }]));
      });

      it('resumes a conversion that broke off after its first object', async () => {
        const { root, make } = setup();
        await writeReference(driver, root, 'chat-1', { lists: { memory: MESSAGES } });
        // The first object the conversion writes lands, then the writer dies.
        let writes = 0;
        const dying = {
          ...driver,
          list: driver.list.bind(driver),
          get: driver.get.bind(driver),
          head: driver.head.bind(driver),
          delete: driver.delete.bind(driver),
          deleteMany: driver.deleteMany.bind(driver),
          copy: driver.copy.bind(driver),
          put: async (...args: Parameters<ObjectStoreDriver['put']>) => {
            if (!args[0].includes('~sessions/') && writes++ >= 1) throw new Error('crashed');
            return driver.put(...args);
          },
          ...(driver.append
            ? {
                append: async (...args: Parameters<NonNullable<ObjectStoreDriver['append']>>) => {
                  const result = await (driver.append as NonNullable<ObjectStoreDriver['append']>)(...args);
                  writes++;
                  return result;
                },
              }
            : {}),
        } as ObjectStoreDriver;
        await make({}, dying)
          .appendList('chat-1', 'memory', [{ n: 4 }], { expectedCount: 3 })
          .catch(() => undefined);

        const store = make();
        expect((await store.getList('chat-1', 'memory')).items.slice(0, 3)).toEqual(MESSAGES);
        await appendRetrying(store, { n: 5 });
        const items = (await store.getList('chat-1', 'memory')).items;
        expect(items.slice(0, 3)).toEqual(MESSAGES);
        expect(items.at(-1)).toEqual({ n: 5 });
        expect(items.filter((i) => JSON.stringify(i) === '{"n":5}')).toHaveLength(1);
      });

      it('refuses writes to a session the reference wrote under names this store does not write', async () => {
        const { prefix } = setup();
        await writeReference(driver, `${prefix}a@b.example/`, 'a b', { values: { k: { theirs: 1 } } });
        await writeReference(driver, `${prefix}__anon__/`, 's1', { lists: { memory: MESSAGES } });
        const counted = counting(driver);
        const format = listFormat ? { listFormat } : {};
        const user = createStateStore({ driver: counted, prefix, adoptReference: true, ...format }).forUser(
          'a@b.example',
        );
        const anonymous = createStateStore({ driver, prefix, adoptReference: true, ...format }).forUser(null);

        // Readable as they are, before `npm run adopt`: values, whole lists, the keys, existence.
        expect(await user.getVersioned('a b', 'k')).toEqual({
          value: { theirs: 1 },
          version: expect.any(String),
          revision: 1,
        });
        expect(await anonymous.getList('s1', 'memory', { last: 2 })).toMatchObject({
          items: MESSAGES.slice(1),
          count: 3,
          hash: chainHash(EMPTY_HASH, MESSAGES),
          offset: 1,
        });
        expect(await user.getList('a b', 'none')).toMatchObject({ items: [], count: 0 });
        expect(await user.get('a b', 'none')).toBeUndefined();
        const keys = await anonymous.listKeys('s1');
        expect([keys.values, keys.lists.map((l) => [l.key, l.count, l.hash])]).toEqual([
          [],
          [['memory', 3, chainHash(EMPTY_HASH, MESSAGES)]],
        ]);
        expect((await user.listKeys('a b')).values.map((v) => [v.key, v.revision])).toEqual([['k', 1]]);
        expect([await user.exists('a b'), await user.exists('e f')]).toEqual([true, false]);
        // Another user's store sees none of it.
        expect(await anonymous.get('a b', 'k')).toBeUndefined();

        await expect(user.save('a b', 'k', { ours: 1 })).rejects.toBeInstanceOf(ReferenceIdUnsupportedError);
        await expect(anonymous.appendList('s1', 'memory', [1], { expectedCount: 0 })).rejects.toBeInstanceOf(
          ReferenceIdUnsupportedError,
        );
        // Nothing written: no marker, the reference's objects as they were.
        expect(await user.get('a b', 'k')).toEqual({ theirs: 1 });
        expect(
          (await driver.list({ prefix: `${prefix}${encodeId('userId', 'a@b.example')}/` })).objects,
        ).toEqual([]);
        // Another session of that user starts as usual, with one LIST for its reference folder.
        counted.reset();
        await user.save('c d', 'k', { ours: 1 });
        // The adoption's LIST, the leftovers' LIST of a new session, and the reference folder's.
        expect(counted.calls.list).toBe(3);
        expect(await user.get('c d', 'k')).toEqual({ ours: 1 });

        await adoptPrefix({ driver, prefix, ...(listFormat ? { listFormat } : {}) });
        await user.save('a b', 'k', { ours: 2 });
        expect(await user.get('a b', 'k')).toEqual({ ours: 2 });
        expect((await anonymous.appendList('s1', 'memory', [1], { expectedCount: 3 })).count).toBe(4);
      });

      it('npm run adopt converts a whole prefix, ids rewritten, resumed after a failure', async () => {
        const { prefix, make } = setup({ adoptReference: false });
        await writeReference(driver, `${prefix}alice/`, 'chat-1', {
          values: { agent_state: AGENT_STATE },
          lists: { memory: MESSAGES },
        });
        await writeReference(driver, `${prefix}__anon__/`, 's1', { lists: { memory: MESSAGES.slice(0, 1) } });
        await writeReference(driver, `${prefix}a@b.example/`, 'a b', {
          values: { 'x y': { odd: true } },
          lists: { 'x y': MESSAGES.slice(0, 2) },
        });
        // A reference object whose encoded name another object holds already: reported, left alone.
        await writeReference(driver, `${prefix}a@b.example/`, 'c d', { values: { k: { theirs: 1 } } });
        const odd = `${prefix}${encodeId('userId', 'a@b.example')}/${encodeId('sessionId', 'c d')}/k.json`;
        await driver.put(odd, JSON.stringify({ ours: 1 }), { metadata: { inc: 'm0b1x2c3d4e5' } });

        // The first run dies at its fourth write.
        let writes = 0;
        const failing = counting(driver);
        for (const name of ['put', 'copy', 'append'] as const) {
          const inner = failing[name];
          if (typeof inner !== 'function') continue;
          Object.assign(failing, {
            [name]: (...args: unknown[]) =>
              ++writes > 3
                ? Promise.reject(new Error('crashed'))
                : (inner as (...a: unknown[]) => Promise<unknown>).apply(failing, args),
          });
        }
        const lines: string[] = [];
        await expect(
          adoptPrefix({ driver: failing, prefix, ...(listFormat ? { listFormat } : {}) }),
        ).rejects.toThrow();
        const report = await adoptPrefix({
          driver,
          prefix,
          ...(listFormat ? { listFormat } : {}),
          onStep: (step) => lines.push(`${step.action} ${step.name}`),
        });
        expect(report.sessions).toBe(3);
        expect(lines.filter((l) => l.startsWith('collision'))).toEqual([
          `collision ${prefix}a@b.example/c d/k.json`,
        ]);

        // Adoption off: everything reads back from this store's names.
        const alice = make();
        expect(await alice.get('chat-1', 'agent_state')).toEqual(AGENT_STATE);
        expect((await alice.getList('chat-1', 'memory')).items).toEqual(MESSAGES);
        const anonymous = createStateStore({ driver, prefix, ...(listFormat ? { listFormat } : {}) }).forUser(
          null,
        );
        expect((await anonymous.getList('s1', 'memory')).items).toEqual(MESSAGES.slice(0, 1));
        const odder = createStateStore({ driver, prefix, ...(listFormat ? { listFormat } : {}) }).forUser(
          'a@b.example',
        );
        expect(await odder.get('a b', 'x y')).toEqual({ odd: true });
        expect((await odder.getList('a b', 'x y')).items).toEqual(MESSAGES.slice(0, 2));
        expect(await driver.head(`${prefix}alice/chat-1/agent_state.json`)).toMatchObject({
          metadata: { inc: 'ref' },
        });
        expect(isReferenceListHash((await driver.get(`${prefix}alice/chat-1/memory.list.hash`)).body)).toBe(
          false,
        );
        // Nothing is left under the reference's names of non-plain ids (but the collision).
        const left = (await driver.list({ prefix: `${prefix}a@b.example/` })).objects.map((o) => o.key);
        expect(left).toEqual([`${prefix}a@b.example/c d/k.json`]);
        expect((await driver.list({ prefix: `${prefix}__anon__/` })).objects).toEqual([]);

        // A third run finds nothing to do.
        const again: string[] = [];
        await adoptPrefix({ driver, prefix, onStep: (step) => again.push(step.action) });
        expect(
          again.filter((a) => a === 'renamed' || a === 'converted-list' || a === 'tagged-value'),
        ).toEqual([]);
        expect(again).toContain('adopted');
      });
    });
  }
}
