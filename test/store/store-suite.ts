/**
 * The store suite: the reference contract and every fault REFERENCE.md lists, run on every backend
 * (memory, fs, s3rver, OSS and, in CI, Ceph RGW) through `test/backends.ts`.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AppendConflictError,
  CommitMismatchError,
  CommitPreconditionError,
  ContendedError,
  CorruptValueError,
  FencedError,
  IdempotencyKeyReusedError,
  ListPreconditionFailedError,
  ListTooShortError,
  PreconditionFailedError,
  PreconditionUnsupportedError,
  SessionNotFoundError,
  ValidationError,
} from '../../lib/contract/errors.js';
import { chainHash, commitDigest, EMPTY_HASH } from '../../lib/contract/hash.js';
import type {
  CommitRequest,
  MetricsSink,
  SessionStore,
  StateStore,
  StoreCounter,
} from '../../lib/contract/types.js';
import { ObjectStoreError } from '../../lib/drivers/errors.js';
import type {
  AppendObjectOptions,
  GetOptions,
  ObjectStoreDriver,
  PutOptions,
} from '../../lib/drivers/types.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { createStateStore, type ListFormatName, type StateStoreOptions } from '../../lib/store/store.js';
import type { Backend } from '../backends.js';
import { httpStateStore } from './http-store.js';
import { type CountingDriver, counting } from './wrappers.js';

const EMPTY_PAGE = { items: [], count: 0, hash: EMPTY_HASH, offset: 0, baseHash: EMPTY_HASH };
const msg = (i: number) => ({ role: i % 2 ? 'assistant' : 'user', content: `message ${i}`, n: i });
const msgs = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => msg(from + i));
/** The count and hashes of a page of `all` from `offset`. */
const pageHashes = (all: unknown[], offset: number) => ({
  count: all.length,
  hash: chainHash(EMPTY_HASH, all),
  baseHash: chainHash(EMPTY_HASH, all.slice(0, offset)),
});

/**
 * The list format a backend runs: memory and fs offer both, so the suite runs each there. Small
 * caps (a 2 KiB head, 1 KiB seals; 2 KiB logs) make seals, merges and rollovers happen within a
 * few dozen items.
 */
export type SuiteFormat = ListFormatName;

/**
 * An engine under test (lib/engines/<name>/): a fresh `StateStore` reporting to `metrics`. The
 * suite runs on it what is not about object storage (the tests that read or damage objects, or
 * count a driver's requests, are the object store's: `objectsIt`).
 */
export interface Engine {
  readonly name: string;
  makeStore(options: { metrics: MetricsSink }): Promise<{
    store: StateStore;
    close(): Promise<void>;
    /** Writes the engine's server has made so far (the tests' "nothing written" checks). */
    changes(): Promise<number>;
  }>;
}

/** Runs the store suite on one backend (an object-storage driver) or engine. */
export function describeStoreSuite(
  backend: Backend | Engine,
  via: 'library' | 'http' = 'library',
  listFormat?: SuiteFormat,
): void {
  const objects = 'make' in backend;
  /** A test of the object store's own behaviour: skipped on an engine. */
  const objectsIt = objects ? it : it.skip;
  const label = `${backend.name}${listFormat ? `, ${listFormat} lists` : ''}${via === 'http' ? ', through the HTTP client' : ''}`;
  describe(`state store on ${label}`, () => {
    let driver: CountingDriver;
    let close: () => Promise<void>;
    let store: StateStore;
    let prefix: string;
    const counters = new Map<StoreCounter, number>();
    let alice: SessionStore;
    let bob: SessionStore;
    /** The lock of the suite, on a clock the tests move (`clock` ms ahead), and alice's store under it. */
    let clock = 0;
    const lock = createMemoryLock({ now: () => Date.now() + clock });
    let authorized: SessionStore;
    const cas = () => store.capabilities.conditionalOverwrite;
    const format = (): ListFormatName => listFormat ?? (cas() ? 'cas' : 'append');
    /** Writes of any kind (the append format writes by `append`). */
    const writes = () => driver.calls.put + driver.calls.append + driver.calls.copy;
    /** What the server of an engine counts as its writes. */
    let engineChanges: () => Promise<number> = async () => 0;
    let engineBase = 0;
    /**
     * Writes since `reset`, on any backend: an object store's requests (writes, or writes and
     * deletes), an engine server's own count of changes.
     */
    const meter = {
      reset: async () => {
        if (objects) driver.reset();
        else engineBase = await engineChanges();
      },
      writes: async () => (objects ? writes() : (await engineChanges()) - engineBase),
      changes: async () =>
        objects
          ? writes() + driver.calls.delete + driver.calls.deleteMany
          : (await engineChanges()) - engineBase,
    };

    beforeAll(async () => {
      const metrics: MetricsSink = {
        count: (name, value = 1) => counters.set(name, (counters.get(name) ?? 0) + value),
      };
      if (!('make' in backend)) {
        const made = await backend.makeStore({ metrics });
        close = made.close;
        engineChanges = made.changes;
        if (via === 'http') {
          const served = await httpStateStore(made.store, lock);
          store = served.store;
          closeServer = served.close;
        } else store = made.store;
        alice = store.forUser('alice');
        bob = store.forUser('bob');
        authorized = store.forUser('alice', { authority: lock });
        return;
      }
      const made = await backend.make();
      driver = counting(made.driver);
      close = made.close;
      prefix = `store-${randomUUID()}/`;
      const options: StateStoreOptions = {
        driver,
        prefix,
        listHeadBytes: 2048,
        listSealBytes: 1024,
        listLogBytes: 2048,
        ...(listFormat ? { listFormat } : {}),
        metrics,
      };
      if (via === 'http') {
        const served = await httpStateStore(options, lock);
        store = served.store;
        closeServer = served.close;
      } else store = createStateStore(options);
      alice = store.forUser('alice');
      bob = store.forUser('bob');
      // Through HTTP, the server's store has the lock as its authority already.
      authorized = store.forUser('alice', { authority: lock });
    });
    let closeServer = async () => {};
    afterAll(async () => {
      await closeServer();
      await close();
    });

    const sid = () => `s-${randomUUID()}`;

    describe('single values', () => {
      it('saves, reads back, versions, overwrites', async () => {
        const s = sid();
        expect(await alice.get(s, 'plan')).toBeUndefined();
        const { version } = await alice.save(s, 'plan', { steps: ['a', 'b'] });
        expect(await alice.get(s, 'plan')).toEqual({ steps: ['a', 'b'] });
        expect(await alice.getVersioned(s, 'plan')).toEqual({
          value: { steps: ['a', 'b'] },
          version,
          revision: 1,
        });
        const next = await alice.save(s, 'plan', { steps: ['c'] });
        expect(next.version).not.toBe(version);
        expect(await alice.get(s, 'plan')).toEqual({ steps: ['c'] });
      });

      it('revisions: 1 on create, +1 on every write (identical content and A, B, A included), a refused write changes nothing, a delete starts again at 1', async () => {
        const s = sid();
        const first = await alice.save(s, 'r', 'A');
        expect(first.revision).toBe(1);
        expect((await alice.save(s, 'r', 'A')).revision).toBe(2);
        expect((await alice.save(s, 'r', 'B')).revision).toBe(3);
        const back = await alice.save(s, 'r', 'A');
        expect(back.revision).toBe(4);
        expect(await alice.getVersioned(s, 'r')).toEqual({ value: 'A', version: back.version, revision: 4 });
        const refused = await alice.save(s, 'r', 'X', { ifAbsent: true }).catch((e: unknown) => e);
        expect(refused).toBeInstanceOf(PreconditionFailedError);
        expect((refused as PreconditionFailedError).currentRevision).toBe(4);
        if (cas()) {
          const stale = await alice.save(s, 'r', 'X', { ifRevision: 3 }).catch((e: unknown) => e);
          expect(stale).toBeInstanceOf(PreconditionFailedError);
          expect((stale as PreconditionFailedError).currentRevision).toBe(4);
          expect((stale as PreconditionFailedError).currentVersion).toBe(back.version);
          expect((await alice.save(s, 'r', 'C', { ifRevision: 4 })).revision).toBe(5);
          const absent = await alice.save(s, 'none', 'X', { ifRevision: 1 }).catch((e: unknown) => e);
          expect((absent as PreconditionFailedError).currentRevision).toBeNull();
        } else
          await expect(alice.save(s, 'r', 'X', { ifRevision: 4 })).rejects.toBeInstanceOf(
            PreconditionUnsupportedError,
          );
        const now = cas() ? 5 : 4;
        expect((await alice.getVersioned(s, 'r'))?.revision).toBe(now);
        await expect(alice.save(s, 'r', 'X', { ifRevision: 0 })).rejects.toBeInstanceOf(ValidationError);
        // Listed and snapshotted with it.
        expect((await alice.listKeys(s)).values.map((v) => [v.key, v.revision])).toEqual([['r', now]]);
        expect((await alice.snapshot(s, { values: ['r'] })).values[0]).toMatchObject({ revision: now });
        await alice.deleteKey(s, 'r');
        expect((await alice.save(s, 'r', 'A')).revision).toBe(1);
        // A commit writes the next revision, and answers it; ifRevision is its precondition.
        const committed = await alice.commit(s, {
          commitId: `c-${randomUUID()}`,
          values: [{ key: 'r', value: 'B' }],
        });
        expect(committed.values).toEqual([{ key: 'r', etag: expect.any(String), revision: 2 }]);
        if (cas()) {
          const failed = await alice
            .commit(s, { commitId: `c-${randomUUID()}`, values: [{ key: 'r', value: 'X', ifRevision: 1 }] })
            .catch((e: unknown) => e);
          expect(failed).toBeInstanceOf(CommitPreconditionError);
          expect((failed as CommitPreconditionError).failures).toEqual([
            expect.objectContaining({ key: 'r', currentRevision: 2 }),
          ]);
          const over = await alice.commit(s, {
            commitId: `c-${randomUUID()}`,
            values: [{ key: 'r', value: 'C', ifRevision: 2 }],
          });
          expect(over.values[0]?.revision).toBe(3);
          // A hint with the revision the caller read writes the next one without reading the value.
          const seen = await alice.getVersioned(s, 'r');
          const hinted = await alice.commit(s, {
            commitId: `c-${randomUUID()}`,
            values: [{ key: 'r', value: 'D', seenVersion: seen?.version as string, seenRevision: 3 }],
          });
          expect(hinted.values[0]?.revision).toBe(4);
          // A hint beside a stale ifRevision does not skip the check: the value is read.
          const now = await alice.getVersioned(s, 'r');
          const hostile = await alice
            .commit(s, {
              commitId: `c-${randomUUID()}`,
              values: [
                { key: 'r', value: 'E', seenVersion: now?.version as string, seenRevision: 3, ifRevision: 3 },
              ],
            })
            .catch((e: unknown) => e);
          expect(hostile).toBeInstanceOf(CommitPreconditionError);
          expect(await alice.getVersioned(s, 'r')).toMatchObject({ value: 'D', revision: 4 });
        }
      });

      it('of 8 concurrent saves of one value every one lands and counts a revision (best effort without conditional overwrite)', async () => {
        const s = sid();
        await alice.save(s, 'many', 0);
        const saved = await Promise.all(Array.from({ length: 8 }, (_, i) => alice.save(s, 'many', i + 1)));
        const revisions = saved.map((r) => r.revision).sort((a, b) => a - b);
        const last = await alice.getVersioned(s, 'many');
        if (cas()) {
          expect(revisions).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
          expect(last?.revision).toBe(9);
        } else {
          for (const r of revisions) expect(r).toBeGreaterThanOrEqual(2);
          expect(last?.revision).toBeGreaterThanOrEqual(2);
        }
      });

      it('create-only refuses an existing value with its current version', async () => {
        const s = sid();
        const { version } = await alice.save(s, 'task', 1, { ifAbsent: true });
        const error = await alice.save(s, 'task', 2, { ifAbsent: true }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(PreconditionFailedError);
        expect((error as PreconditionFailedError).currentVersion).toBe(version);
        expect(await alice.get(s, 'task')).toBe(1);
      });

      it('if-version writes on a match and refuses a stale or absent one (or is unsupported, never applied)', async () => {
        const s = sid();
        const { version } = await alice.save(s, 'ctx', 'v1');
        if (!cas()) {
          await expect(alice.save(s, 'ctx', 'v2', { ifVersion: version })).rejects.toBeInstanceOf(
            PreconditionUnsupportedError,
          );
          expect(await alice.get(s, 'ctx')).toBe('v1');
          return;
        }
        const { version: v2 } = await alice.save(s, 'ctx', 'v2', { ifVersion: version });
        const stale = await alice.save(s, 'ctx', 'v3', { ifVersion: version }).catch((e: unknown) => e);
        expect(stale).toBeInstanceOf(PreconditionFailedError);
        expect((stale as PreconditionFailedError).currentVersion).toBe(v2);
        const absent = await alice.save(s, 'other', 'x', { ifVersion: version }).catch((e: unknown) => e);
        expect((absent as PreconditionFailedError).currentVersion).toBeNull();
        expect(await alice.get(s, 'ctx')).toBe('v2');
      });

      it('of 8 concurrent conditional saves exactly one wins', async () => {
        const s = sid();
        const { version } = await alice.save(s, 'race', 'base');
        const results = await Promise.allSettled(
          Array.from({ length: 8 }, (_, i) =>
            alice.save(s, 'race', `w${i}`, cas() ? { ifVersion: version } : { ifAbsent: true }),
          ),
        );
        const won = results.filter((r) => r.status === 'fulfilled');
        if (cas()) expect(won).toHaveLength(1);
        else expect(won).toHaveLength(0); // ifAbsent on an existing value: none may win
        for (const r of results)
          if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(PreconditionFailedError);
        const fresh = await Promise.allSettled(
          Array.from({ length: 8 }, (_, i) => alice.save(s, 'fresh', `w${i}`, { ifAbsent: true })),
        );
        expect(fresh.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      });

      it('deletes one key and keeps the others (reference fault 6: per-key delete is defined)', async () => {
        const s = sid();
        await alice.save(s, 'a', 1);
        await alice.save(s, 'b', 2);
        await alice.saveList(s, 'a', [1, 2]);
        await alice.deleteKey(s, 'a');
        expect(await alice.get(s, 'a')).toBeUndefined();
        expect(await alice.get(s, 'b')).toBe(2);
        expect((await alice.getList(s, 'a')).items).toEqual([1, 2]);
        await alice.deleteKey(s, 'never');
      });

      objectsIt('a corrupt value is a typed error for that key only', async () => {
        const s = sid();
        await alice.save(s, 'good', { ok: true });
        await alice.save(s, 'bad', { ok: true });
        const name = `${prefix}alice/${s}/bad.json`;
        const object = await driver.get(name);
        await driver.put(name, '{not json', { metadata: object.metadata });
        await expect(alice.get(s, 'bad')).rejects.toBeInstanceOf(CorruptValueError);
        expect(await alice.get(s, 'good')).toEqual({ ok: true });
      });

      it('refuses values that are not JSON', async () => {
        await expect(alice.save(sid(), 'k', undefined)).rejects.toBeInstanceOf(ValidationError);
        await expect(alice.save(sid(), 'k', () => 1)).rejects.toBeInstanceOf(ValidationError);
      });
    });

    describe('lists', () => {
      objectsIt('saveList: created, unchanged (no writes), appended, rewritten after archiving', async () => {
        const s = sid();
        expect(await alice.saveList(s, 'memory', msgs(0, 3))).toMatchObject({ action: 'created', count: 3 });
        await meter.reset();
        const same = await alice.saveList(s, 'memory', msgs(0, 3));
        expect(same).toEqual({ action: 'unchanged', count: 3, hash: chainHash(EMPTY_HASH, msgs(0, 3)) });
        expect(driver.calls.put + driver.calls.delete + driver.calls.copy).toBe(0);
        expect(driver.calls.get + driver.calls.head + driver.calls.list).toBeLessThanOrEqual(3);
        expect(await alice.saveList(s, 'memory', msgs(0, 5))).toMatchObject({ action: 'appended', count: 5 });
        const compacted = [{ role: 'system', content: 'summary of 0..4' }];
        expect(await alice.saveList(s, 'memory', compacted)).toMatchObject({ action: 'rewritten', count: 1 });
        expect((await alice.getList(s, 'memory')).items).toEqual(compacted);
        const archives = await alice.listArchives(s, 'memory');
        expect(archives).toHaveLength(1);
        expect(archives[0]).toMatchObject({ count: 5, hash: chainHash(EMPTY_HASH, msgs(0, 5)) });
        const archived = await alice.getArchive(s, 'memory', archives[0]?.archiveId ?? '');
        expect(archived?.items).toEqual(msgs(0, 5));
      });

      it('detects a change of an earlier item as a rewrite, and key order inside an item as no change', async () => {
        const s = sid();
        await alice.saveList(s, 'l', [{ a: 1, b: 2 }, { c: 3 }]);
        expect((await alice.saveList(s, 'l', [{ b: 2, a: 1 }, { c: 3 }])).action).toBe('unchanged');
        expect((await alice.saveList(s, 'l', [{ a: 1, b: 9 }, { c: 3 }, { d: 4 }])).action).toBe('rewritten');
        expect(await alice.listArchives(s, 'l')).toHaveLength(1);
      });

      it('a change at any position of a 50-item list is detected (reference fault 1: sampled hash)', async () => {
        const base = msgs(0, 50);
        const hash = chainHash(EMPTY_HASH, base);
        for (let i = 0; i < 50; i++) {
          const changed = base.map((m, j) => (j === i ? { ...m, content: `${m.content}!` } : m));
          expect(chainHash(EMPTY_HASH, changed)).not.toBe(hash);
        }
        const s = sid();
        await alice.saveList(s, 'l', base);
        const changed = base.map((m, j) => (j === 37 ? { ...m, n: -1 } : m));
        expect((await alice.saveList(s, 'l', changed)).action).toBe('rewritten');
        expect((await alice.getList(s, 'l')).items).toEqual(changed);
      });

      it('[] over an absent list is unchanged and creates nothing; over a non-empty list it is an archived rewrite', async () => {
        const s = sid();
        expect(await alice.saveList(s, 'l', [])).toEqual({ action: 'unchanged', count: 0, hash: EMPTY_HASH });
        expect(await alice.exists(s)).toBe(false);
        await alice.saveList(s, 'l', [1]);
        expect((await alice.saveList(s, 'l', [])).action).toBe('rewritten');
        expect((await alice.getList(s, 'l')).count).toBe(0);
        expect((await alice.listArchives(s, 'l'))[0]?.count).toBe(1);
      });

      it('appendList: appends at the expected count, recognises a replay, refuses anything else', async () => {
        const s = sid();
        const first = await alice.appendList(s, 'l', msgs(0, 2), { expectedCount: 0 });
        expect(first).toMatchObject({ action: 'created', count: 2 });
        const second = await alice.appendList(s, 'l', msgs(2, 3), {
          expectedCount: 2,
          expectedHash: first.hash,
        });
        expect(second).toEqual({ action: 'appended', count: 3, hash: chainHash(EMPTY_HASH, msgs(0, 3)) });
        const replay = await alice.appendList(s, 'l', msgs(2, 3), {
          expectedCount: 2,
          expectedHash: first.hash,
        });
        expect(replay).toEqual({ ...second, action: 'unchanged' });
        const replayNoHash = await alice.appendList(s, 'l', msgs(2, 3), { expectedCount: 2 });
        expect(replayNoHash.action).toBe('unchanged');
        const conflict = await alice
          .appendList(s, 'l', [msg(9)], { expectedCount: 1 })
          .catch((e: unknown) => e);
        expect(conflict).toBeInstanceOf(AppendConflictError);
        expect(conflict).toMatchObject({ count: 3, hash: second.hash });
        const badHash = await alice
          .appendList(s, 'l', [msg(9)], { expectedCount: 3, expectedHash: first.hash })
          .catch((e: unknown) => e);
        expect(badHash).toBeInstanceOf(AppendConflictError);
        expect((await alice.getList(s, 'l')).items).toEqual(msgs(0, 3));
        await expect(alice.appendList(s, 'l', [], { expectedCount: 3 })).rejects.toBeInstanceOf(
          ValidationError,
        );
        await expect(
          alice.appendList(
            s,
            'l',
            Array.from({ length: 1001 }, () => 1),
            { expectedCount: 3 },
          ),
        ).rejects.toBeInstanceOf(ValidationError);
      });

      it('getList pages with the full count and hash; an absent list is empty', async () => {
        const s = sid();
        expect(await alice.getList(s, 'none')).toEqual(EMPTY_PAGE);
        await alice.saveList(s, 'l', msgs(0, 10));
        const page = await alice.getList(s, 'l', { offset: 3, limit: 4 });
        expect(page).toEqual({
          items: msgs(3, 7),
          count: 10,
          hash: chainHash(EMPTY_HASH, msgs(0, 10)),
          offset: 3,
          baseHash: chainHash(EMPTY_HASH, msgs(0, 3)),
        });
        expect(await alice.getList(s, 'l', { last: 3 })).toMatchObject({ items: msgs(7, 10), offset: 7 });
        expect(await alice.getList(s, 'l', { last: 30 })).toMatchObject({ items: msgs(0, 10), offset: 0 });
        expect(await alice.getList(s, 'l', { offset: 12 })).toMatchObject({ items: [], offset: 10 });
        await expect(alice.getList(s, 'l', { offset: -1 })).rejects.toBeInstanceOf(ValidationError);
        await expect(alice.getList(s, 'l', { last: 2, limit: 1 })).rejects.toBeInstanceOf(ValidationError);
      });

      it('survives many appends across folds and rollovers, in order, exactly once', async () => {
        const s = sid();
        let count = 0;
        let hash = EMPTY_HASH;
        for (let i = 0; i < 30; i++) {
          const r = await alice.appendList(s, 'long', [msg(i)], { expectedCount: count, expectedHash: hash });
          ({ count, hash } = r);
        }
        const all = await alice.getList(s, 'long');
        expect(all.items).toEqual(msgs(0, 30));
        expect(all.hash).toBe(chainHash(EMPTY_HASH, msgs(0, 30)));
        expect(await alice.listArchives(s, 'long')).toEqual([]); // rollovers are not compactions
      });

      it('deleteList archives, then removes', async () => {
        const s = sid();
        await alice.saveList(s, 'l', msgs(0, 4));
        await alice.deleteList(s, 'l');
        expect(await alice.getList(s, 'l')).toEqual(EMPTY_PAGE);
        const [archive] = await alice.listArchives(s, 'l');
        expect(archive?.count).toBe(4);
        expect((await alice.getArchive(s, 'l', archive?.archiveId ?? ''))?.items).toEqual(msgs(0, 4));
        expect(await alice.getArchive(s, 'l', '999')).toBeUndefined();
        expect(await alice.getArchive(s, 'l', '../x')).toBeUndefined();
      });

      it('16 appenders racing with the same expected count: exactly one wins, nothing lost or doubled', async () => {
        const s = sid();
        await alice.saveList(s, 'race', msgs(0, 2));
        const results = await Promise.allSettled(
          Array.from({ length: 16 }, (_, i) =>
            alice.appendList(s, 'race', [{ writer: i }], { expectedCount: 2 }),
          ),
        );
        const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
        expect(won).toHaveLength(1);
        for (const r of results)
          if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(AppendConflictError);
        expect((await alice.getList(s, 'race')).items).toEqual([...msgs(0, 2), { writer: won[0] }]);
      });

      it('a rewrite racing 8 appenders loses no acknowledged append', async () => {
        const s = sid();
        await alice.saveList(s, 'mix', msgs(0, 3));
        const appenders = Array.from({ length: 8 }, async (_, i) => {
          for (let attempt = 0; attempt < 20; attempt++) {
            const { count, hash } = await alice.getList(s, 'mix', { limit: 0 });
            try {
              await alice.appendList(s, 'mix', [{ appender: i }], {
                expectedCount: count,
                expectedHash: hash,
              });
              return i;
            } catch (error) {
              if (!(error instanceof AppendConflictError)) throw error;
            }
          }
          return -1;
        });
        // Through the typed client the save carries the hash it last saw: a 412 is re-read and retried.
        const rewrite = (async () => {
          for (;;) {
            try {
              return await alice.saveList(s, 'mix', [{ summary: true }]);
            } catch (error) {
              if (!(error instanceof ListPreconditionFailedError)) throw error;
              await alice.getList(s, 'mix', { limit: 0 });
            }
          }
        })();
        const [results] = await Promise.all([Promise.all(appenders), rewrite]);
        const acked = results.filter((i) => i >= 0);
        const current = (await alice.getList(s, 'mix')).items;
        const archives = await alice.listArchives(s, 'mix');
        const archived = (
          await Promise.all(archives.map((a) => alice.getArchive(s, 'mix', a.archiveId)))
        ).flatMap((a) => a?.items ?? []);
        for (const i of acked) {
          const seen = [...current, ...archived].filter((m) => (m as { appender?: number }).appender === i);
          expect(seen.length).toBeGreaterThanOrEqual(1);
        }
        expect(
          current.filter((m) => (m as { appender?: number }).appender !== undefined).length,
        ).toBeLessThanOrEqual(8);
      });

      objectsIt(
        'a damaged pointer or materialization still serves the list, repaired and counted (append format)',
        async () => {
          if (format() !== 'append') return;
          const s = sid();
          await alice.saveList(s, 'l', msgs(0, 6));
          const before = counters.get('manifestRepairs') ?? 0;
          await driver.put(`${prefix}alice/${s}/l.list.hash`, '{broken');
          await driver.put(`${prefix}alice/${s}/l.list.json`, '[1,2,3]');
          expect((await alice.getList(s, 'l')).items).toEqual(msgs(0, 6));
          expect((await alice.appendList(s, 'l', [msg(6)], { expectedCount: 6 })).count).toBe(7);
          expect((await alice.getList(s, 'l')).items).toEqual(msgs(0, 7));
          expect(counters.get('manifestRepairs') ?? 0).toBeGreaterThan(before);
        },
      );
    });

    describe('lists, storage v2', () => {
      objectsIt(
        'a damaged head (CAS) or log (append) fails that list only (counted); the other keys read; a delete resets it',
        async () => {
          const s = sid();
          await alice.saveList(s, 'l', msgs(0, 6));
          await alice.saveList(s, 'other', msgs(0, 2));
          await alice.save(s, 'plan', { step: 1 });
          const before = counters.get('corruptObjects') ?? 0;
          // The CAS format's authority is its head; the append format's, its logs (the current one here).
          const logs = (await driver.list({ prefix: `${prefix}alice/${s}/l.list~l~` })).objects;
          const damaged = format() === 'cas' ? `${prefix}alice/${s}/l.list.hash` : logs.at(-1)?.key;
          expect(damaged).toBeDefined();
          await driver.put(damaged as string, '{broken');
          await expect(alice.getList(s, 'l')).rejects.toBeInstanceOf(CorruptValueError);
          await expect(alice.appendList(s, 'l', [msg(6)], { expectedCount: 6 })).rejects.toBeInstanceOf(
            CorruptValueError,
          );
          expect(counters.get('corruptObjects') ?? 0).toBeGreaterThan(before);
          expect((await alice.getList(s, 'other')).items).toEqual(msgs(0, 2));
          expect(await alice.get(s, 'plan')).toEqual({ step: 1 });
          // A damaged materialization is not read at all.
          await driver.put(`${prefix}alice/${s}/other.list.json`, '[1,2,3]');
          expect((await alice.getList(s, 'other')).items).toEqual(msgs(0, 2));
          await alice.deleteList(s, 'l');
          expect(await alice.getList(s, 'l')).toEqual(EMPTY_PAGE);
          expect((await alice.appendList(s, 'l', [msg(0)], { expectedCount: 0 })).count).toBe(1);
        },
      );

      it('a replayed write id answers the original result and writes nothing', async () => {
        const s = sid();
        const first = await alice.appendList(s, 'w', msgs(0, 2), { expectedCount: 0, writeId: 'turn-1' });
        expect(first.action).toBe('created');
        await alice.appendList(s, 'w', msgs(2, 3), { expectedCount: 2, writeId: 'turn-2' });
        const before = await meter.writes();
        // The same id again (its answer lost): the original answer, even though the list moved on.
        expect(await alice.appendList(s, 'w', msgs(0, 2), { expectedCount: 0, writeId: 'turn-1' })).toEqual(
          first,
        );
        expect(await meter.writes()).toBe(before);
        expect((await alice.getList(s, 'w')).items).toEqual(msgs(0, 3));
        // Still found after more writes than a tail holds (in the append format, across rollovers).
        for (let i = 3; i < 40; i++)
          await alice.appendList(s, 'w', [{ ...msg(i), pad: 'x'.repeat(100) }], { expectedCount: i });
        const after = await meter.writes();
        expect(
          await alice.appendList(s, 'w', msgs(2, 3), { expectedCount: 2, writeId: 'turn-2' }),
        ).toMatchObject({ action: 'appended', count: 3 });
        expect(await meter.writes()).toBe(after);
        await expect(
          alice.appendList(s, 'w', [msg(9)], { expectedCount: 3, writeId: 'bad id!' }),
        ).rejects.toBeInstanceOf(ValidationError);
      });

      it('an Idempotency-Key reused for another request is refused (appends and truncates), nothing written; the same request is a replay, after a delete too', async () => {
        const s = sid();
        const first = await alice.appendList(s, 'k', [msg(0)], { expectedCount: 0, writeId: 'k1' });
        const before = await meter.writes();
        for (const other of [
          () => alice.appendList(s, 'k', [msg(1)], { expectedCount: 1, writeId: 'k1' }),
          () => alice.appendList(s, 'k', [msg(9)], { expectedCount: 0, writeId: 'k1' }),
        ])
          await expect(other()).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
        expect(await meter.writes()).toBe(before);
        expect((await alice.getList(s, 'k')).items).toEqual([msg(0)]);
        expect(await alice.appendList(s, 'k', [msg(0)], { expectedCount: 0, writeId: 'k1' })).toEqual(first);
        const grown = await alice.appendList(s, 'k', msgs(1, 4), { expectedCount: 1 });
        const cut = await alice.truncateList(s, 'k', { count: 2, expectedHash: grown.hash, writeId: 't1' });
        const afterCut = await meter.writes();
        await expect(
          alice.truncateList(s, 'k', { count: 1, expectedHash: cut.hash, writeId: 't1' }),
        ).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
        expect(await meter.writes()).toBe(afterCut);
        expect((await alice.getList(s, 'k')).items).toEqual(msgs(0, 2));
        // After the list is deleted, the replay answers what it answered, and writes nothing back.
        await alice.deleteList(s, 'k');
        const afterDelete = await meter.writes();
        expect(await alice.appendList(s, 'k', [msg(0)], { expectedCount: 0, writeId: 'k1' })).toEqual(first);
        expect(await meter.writes()).toBe(afterDelete);
        expect(await alice.getList(s, 'k')).toEqual(EMPTY_PAGE);
      });

      objectsIt(
        'a save with a base (ifHash) that is not the current hash is refused and writes nothing',
        async () => {
          const s = sid();
          const { hash } = await alice.saveList(s, 'b', msgs(0, 3));
          await alice.appendList(s, 'b', [msg(3)], { expectedCount: 3 });
          const writes = driver.calls.put;
          const stale = alice.saveList(s, 'b', [{ summary: 1 }], { ifHash: hash });
          await expect(stale).rejects.toBeInstanceOf(ListPreconditionFailedError);
          await expect(stale).rejects.toMatchObject({ currentHash: chainHash(EMPTY_HASH, msgs(0, 4)) });
          expect(driver.calls.put).toBe(writes);
          expect(await alice.listArchives(s, 'b')).toEqual([]);
          const current = chainHash(EMPTY_HASH, msgs(0, 4));
          expect((await alice.saveList(s, 'b', msgs(0, 5), { ifHash: current })).action).toBe('appended');
          await expect(alice.saveList(sid(), 'b', msgs(0, 1), { ifHash: current })).rejects.toMatchObject({
            currentHash: EMPTY_HASH,
          });
        },
      );

      objectsIt(
        '500 appends across seals and merges read back whole, by page at every offset, and by last',
        async () => {
          const s = sid();
          let count = 0;
          let hash = EMPTY_HASH;
          const all: unknown[] = [];
          const segmentsBefore = driver.puts.filter((name) => name.includes('.list~g~')).length;
          for (let i = 0; i < 500; i++) {
            const items = [{ ...msg(i), pad: 'x'.repeat(i % 7 === 0 ? 400 : 20) }];
            ({ count, hash } = await alice.appendList(s, 'seg', items, {
              expectedCount: count,
              expectedHash: hash,
            }));
            all.push(...items);
          }
          if (format() === 'cas') {
            // Seals and merges each create a segment: well over 10 of each in 500 appends.
            const created = driver.puts.filter((name) => name.includes('.list~g~')).length - segmentsBefore;
            expect(created).toBeGreaterThan(40);
          }
          const whole = await alice.getList(s, 'seg');
          expect(whole.items).toEqual(all);
          expect(whole.hash).toBe(chainHash(EMPTY_HASH, all));
          // Pages may be short (a page ends where a stored segment ends): read on from where it stopped.
          for (const limit of [13, 60]) {
            const read: unknown[] = [];
            while (read.length < all.length) {
              const page = await alice.getList(s, 'seg', { offset: read.length, limit });
              expect(page.offset).toBe(read.length);
              expect(page.baseHash).toBe(chainHash(EMPTY_HASH, all.slice(0, read.length)));
              expect(page.items.length).toBeGreaterThan(0);
              expect(page.items.length).toBeLessThanOrEqual(limit);
              read.push(...page.items);
            }
            expect(read).toEqual(all);
          }
          for (const last of [1, 5, 60]) {
            const page = await alice.getList(s, 'seg', { last });
            expect(page.items).toEqual(all.slice(page.offset));
            expect(page.offset).toBeGreaterThanOrEqual(all.length - last);
            expect(page.items.length).toBeGreaterThan(0);
          }
          const names = (await driver.list({ prefix: `${prefix}alice/${s}/` })).objects.map((o) => o.key);
          const stored = format() === 'cas' ? '.list~g~' : '.list~l~';
          expect(names.filter((n) => n.includes(stored)).length).toBeGreaterThan(1);
          // A rewrite of a long list keeps the whole content, in a new generation.
          const rewritten = all.slice(all.length - 100);
          expect((await alice.saveList(s, 'seg', rewritten)).action).toBe('rewritten');
          expect((await alice.getList(s, 'seg')).items).toEqual(rewritten);
          expect((await alice.getList(s, 'seg', { offset: 10, limit: 5 })).items).toEqual(
            rewritten.slice(10, 15),
          );
          const [archive] = await alice.listArchives(s, 'seg');
          expect((await alice.getArchive(s, 'seg', archive?.archiveId ?? ''))?.items).toEqual(all);
        },
      );

      objectsIt(
        'an append whose answer is lost is applied once: by the store reading the head back, or by the caller retrying its write id',
        async () => {
          const s = sid();
          await alice.saveList(s, 'lost', msgs(0, 2));
          // The next list write lands, then its answer is lost (a 5xx after the fact); the read after
          // it fails too, so the whole call fails and the caller retries.
          let mode: 'none' | 'lose-write' | 'lose-write-and-read' = 'lose-write';
          const head = `${prefix}alice/${s}/lost.list`;
          const lossy = {
            ...driver,
            put: async (key: string, body: Uint8Array | string, options?: PutOptions) => {
              const written = await driver.put(key, body, options);
              if (mode !== 'none' && key.startsWith(head)) {
                if (mode === 'lose-write') mode = 'none';
                else mode = 'lose-read' as never;
                throw new ObjectStoreError('answer lost after the write', driver.name, { retryable: true });
              }
              return written;
            },
            // The append format writes by position append: its answer is lost the same way.
            append: async (key: string, body: Uint8Array | string, options: AppendObjectOptions) => {
              const written = await driver.append(key, body, options);
              if (mode !== 'none' && key.startsWith(head)) {
                if (mode === 'lose-write') mode = 'none';
                else mode = 'lose-read' as never;
                throw new ObjectStoreError('answer lost after the write', driver.name, { retryable: true });
              }
              return written;
            },
            get: async (key: string, options?: GetOptions) => {
              if ((mode as string) === 'lose-read' && key.startsWith(head)) {
                mode = 'none';
                throw new ObjectStoreError('read failed', driver.name, { retryable: true });
              }
              return driver.get(key, options);
            },
          } as ObjectStoreDriver;
          const user = createStateStore({
            driver: lossy,
            prefix,
            listLogBytes: 2048,
            ...(listFormat ? { listFormat } : {}),
          }).forUser('alice');
          const base = chainHash(EMPTY_HASH, msgs(0, 2));
          const once = await user.appendList(s, 'lost', [msg(2)], {
            expectedCount: 2,
            expectedHash: base,
            writeId: 'a-1',
          });
          expect(once.count).toBe(3);
          mode = 'lose-write-and-read';
          const at3 = chainHash(EMPTY_HASH, msgs(0, 3));
          const options = { expectedCount: 3, expectedHash: at3, writeId: 'a-2' };
          const failed = await user.appendList(s, 'lost', [msg(3)], options).catch((error: unknown) => error);
          // The store either recognised its own write or gave up with a retryable error; the caller retries.
          const retried =
            failed instanceof Error ? await user.appendList(s, 'lost', [msg(3)], options) : failed;
          expect(retried).toMatchObject({ count: 4, hash: chainHash(EMPTY_HASH, msgs(0, 4)) });
          expect((await alice.getList(s, 'lost')).items).toEqual(msgs(0, 4));
        },
      );

      objectsIt(
        'items over 1 MiB are objects of their own; items that look like references read back as sent',
        async () => {
          const s = sid();
          const big = { role: 'tool', content: 'b'.repeat(1536 * 1024) };
          const lookalikes = [
            { '~ref': 'not/a/ref', '~leaf': 'x' },
            { '~esc': { '~ref': 1 } },
            { '~esc': 2 },
          ];
          const all = [...msgs(0, 3), big, ...lookalikes];
          await alice.appendList(s, 'big', msgs(0, 3), { expectedCount: 0 });
          await alice.appendList(s, 'big', [big], { expectedCount: 3 });
          await alice.appendList(s, 'big', lookalikes, { expectedCount: 4 });
          for (let i = 0; i < 40; i++)
            await alice.appendList(s, 'big', [{ ...msg(i), pad: 'z'.repeat(100) }], {
              expectedCount: all.length + i,
            });
          const tail = Array.from({ length: 40 }, (_, i) => ({ ...msg(i), pad: 'z'.repeat(100) }));
          const whole = await alice.getList(s, 'big');
          expect(whole.items).toEqual([...all, ...tail]);
          expect(whole.hash).toBe(chainHash(EMPTY_HASH, [...all, ...tail]));
          const page = await alice.getList(s, 'big', { offset: 2, limit: 3 });
          expect(page.items.slice(0, 2)).toEqual(all.slice(2, 4));
          expect(page.baseHash).toBe(chainHash(EMPTY_HASH, all.slice(0, 2)));
          const objects = (await driver.list({ prefix: `${prefix}alice/${s}/big.list~i~` })).objects;
          expect(objects).toHaveLength(1);
          expect(objects[0]?.size).toBeGreaterThan(1024 * 1024);
          if (format() === 'cas') {
            // The head holds a reference, not the item.
            const head = await driver.get(`${prefix}alice/${s}/big.list.hash`);
            expect(head.body.byteLength).toBeLessThan(200 * 1024);
          } else {
            // The logs hold a reference, not the item.
            const logs = (await driver.list({ prefix: `${prefix}alice/${s}/big.list~l~` })).objects;
            expect(logs.reduce((n, o) => n + o.size, 0)).toBeLessThan(200 * 1024);
          }
          // A rewrite keeps it whole; the archive holds the old list with it.
          expect((await alice.saveList(s, 'big', [big, msg(9)])).action).toBe('rewritten');
          expect((await alice.getList(s, 'big')).items).toEqual([big, msg(9)]);
          const [archive] = await alice.listArchives(s, 'big');
          expect((await alice.getArchive(s, 'big', archive?.archiveId ?? ''))?.items).toEqual([
            ...all,
            ...tail,
          ]);
        },
      );

      objectsIt(
        'a session deleted under readers of a long list: each read answers the list or nothing, never a damaged list',
        async () => {
          const s = sid();
          const items = Array.from({ length: 120 }, (_, i) => ({ ...msg(i), pad: 'y'.repeat(60) }));
          await alice.saveList(s, 'gone', items);
          const before = counters.get('corruptObjects') ?? 0;
          let deleted = false;
          const readers = Array.from({ length: 4 }, async () => {
            const seen: number[] = [];
            for (let n = 0; n < 12; n++) {
              const page = await alice.getList(s, 'gone', n % 2 ? { offset: 30, limit: 40 } : {});
              seen.push(page.count);
              if (page.count > 0) expect(page.items[0]).toEqual(items[page.offset]);
              if (deleted) break;
            }
            return seen;
          });
          const deleter = alice.delete(s).then(() => {
            deleted = true;
          });
          const seen = (await Promise.all([...readers, deleter])).slice(0, 4).flat() as number[];
          expect(seen.every((count) => count === 0 || count === items.length)).toBe(true);
          expect(await alice.getList(s, 'gone')).toEqual(EMPTY_PAGE);
          expect(counters.get('corruptObjects') ?? 0).toBe(before);
        },
      );

      it('a delete that answers has deleted: under 8 appenders, a read after it holds nothing acknowledged before it', async () => {
        const s = sid();
        await alice.saveList(s, 'd', msgs(0, 3));
        let stop = false;
        const acked: Array<{ id: string; at: number }> = [];
        const appenders = Array.from({ length: 8 }, async (_, writer) => {
          for (let n = 0; !stop && n < 40; n++) {
            const { count, hash } = await alice.getList(s, 'd', { limit: 0 });
            await alice
              .appendList(s, 'd', [{ id: `${writer}.${n}` }], { expectedCount: count, expectedHash: hash })
              .then(() => acked.push({ id: `${writer}.${n}`, at: performance.now() }))
              .catch((error: unknown) => {
                if (!(error instanceof AppendConflictError) && !(error instanceof ContendedError))
                  throw error;
              });
          }
        });
        await new Promise((resolve) => setTimeout(resolve, 20));
        let answered = false;
        let startedAt = 0;
        for (let attempt = 0; attempt < 20 && !answered; attempt++) {
          startedAt = performance.now();
          try {
            await alice.deleteList(s, 'd');
            answered = true;
          } catch (error) {
            if (!(error instanceof ContendedError)) throw error;
          }
        }
        const after = await alice.getList(s, 'd');
        stop = true;
        await Promise.all(appenders);
        expect(answered).toBe(true);
        const before = new Set(acked.filter((a) => a.at < startedAt).map((a) => a.id));
        const ids = after.items.map((m) => (m as { id?: string }).id);
        expect(ids.filter((id) => id === undefined || before.has(id))).toEqual([]);
      });
    });

    // `listKeys` and `truncateList`, on every direct backend and through the typed HTTP
    // client (GET …/keys, POST …/lists/{key}/truncate), which raises the same typed errors.
    describe('keys and truncate', () => {
      const utf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
      /** Every item of every archive of a list, with the archive's offset. */
      const archivedOf = async (user: SessionStore, s: string, k: string) => {
        const out = [];
        for (const a of await user.listArchives(s, k)) {
          const page = await user.getArchive(s, k, a.archiveId);
          out.push({ ...a, items: page?.items ?? [] });
        }
        return out;
      };

      it('listKeys: values and lists in UTF-8 order, odd keys included; pages by cursor, prefix and startAfter; no internal object, no deleted list', async () => {
        const s = sid();
        const valueKeys = [
          'plan',
          '../up',
          '/',
          '~',
          'a',
          'a-b',
          'a.b',
          'a.k',
          'a.z',
          'x.json',
          'ünï',
          '😀',
          '～',
          ' sp',
          'A',
          '_',
          '.',
          '%41',
        ];
        const listKeys = ['a', 'a.list', 'memory', '日本', 'a-b', 'gone'];
        const versions = new Map<string, string>();
        for (const k of valueKeys) versions.set(k, (await alice.save(s, k, { k })).version);
        for (const k of listKeys) await alice.saveList(s, k, msgs(0, 3));
        // Internal objects: segments or logs, a rewrite's archive and `.list.json`, a deleted list.
        for (let i = 3; i < 40; i += 3)
          await alice.appendList(s, 'memory', msgs(i, i + 3), { expectedCount: i });
        await alice.saveList(s, 'memory', msgs(1, 30));
        await alice.deleteList(s, 'gone');
        const lists = listKeys.filter((k) => k !== 'gone').sort(utf8);
        await meter.reset();
        const page = await alice.listKeys(s);
        // One LIST (the session's folder from its start, by `~`), the marker, a HEAD per value.
        if (objects) {
          expect(driver.calls.list).toBe(1);
          expect(driver.calls.head).toBe(valueKeys.length);
        }
        expect(page.values.map((v) => v.key)).toEqual([...valueKeys].sort(utf8));
        for (const v of page.values) {
          expect(v.etag).toBe(versions.get(v.key));
          expect(v.size).toBe(Buffer.byteLength(JSON.stringify({ k: v.key })));
          expect(Date.now() - v.lastModified.getTime()).toBeLessThan(600_000);
        }
        expect(page.lists.map((l) => l.key)).toEqual(lists);
        for (const l of page.lists) {
          const items = l.key === 'memory' ? msgs(1, 30) : msgs(0, 3);
          expect(l).toMatchObject({ count: items.length, hash: chainHash(EMPTY_HASH, items) });
          expect(Date.now() - l.lastModified.getTime()).toBeLessThan(600_000);
        }
        expect(page.nextCursor).toBeUndefined();
        // Every key once, in order, whatever the page size.
        const all = [...new Set([...valueKeys, ...lists])].sort(utf8);
        const walk = async (options: { prefix?: string; startAfter?: string }, limit: number) => {
          const seen: string[] = [];
          let cursor: string | undefined;
          for (let n = 0; n < 100; n++) {
            const p = await alice.listKeys(s, { ...options, limit, ...(cursor ? { cursor } : {}) });
            const keys = [...new Set([...p.values, ...p.lists].map((e) => e.key))].sort(utf8);
            expect(keys.length).toBeLessThanOrEqual(limit);
            seen.push(...keys);
            cursor = p.nextCursor;
            if (!cursor) break;
          }
          return seen;
        };
        expect(await walk({}, 3)).toEqual(all);
        expect(await walk({ prefix: 'a' }, 2)).toEqual(all.filter((k) => k.startsWith('a')));
        expect(await walk({ prefix: '日' }, 5)).toEqual(['日本']);
        expect(await walk({ startAfter: 'a-b' }, 4)).toEqual(all.filter((k) => utf8(k, 'a-b') > 0));
        expect(await walk({ startAfter: 'ünï', prefix: '' }, 1000)).toEqual(
          all.filter((k) => utf8(k, 'ünï') > 0),
        );
        expect(await walk({ prefix: 'zzz' }, 10)).toEqual([]);
        await expect(alice.listKeys(s, { limit: 0 })).rejects.toBeInstanceOf(ValidationError);
        await expect(alice.listKeys(s, { limit: 1001 })).rejects.toBeInstanceOf(ValidationError);
        await expect(alice.listKeys(s, { cursor: 'not a cursor' })).rejects.toBeInstanceOf(ValidationError);
      });

      objectsIt(
        "listKeys: another incarnation's leftovers never appear; another user's session and an absent one are SessionNotFoundError",
        async () => {
          const s = sid();
          await alice.save(s, 'ghost', 'old');
          await alice.saveList(s, 'ghostlist', ['old']);
          const folder = `${prefix}alice/${s}/`;
          const kept = await Promise.all(
            [`${folder}ghost.json`, `${folder}ghostlist.list.hash`].map((name) => driver.get(name)),
          );
          // The marker expires (lifecycle): the session is gone for every reader.
          await driver.delete(`${prefix}alice/~sessions/${s}`);
          await expect(alice.listKeys(s)).rejects.toBeInstanceOf(SessionNotFoundError);
          await alice.save(s, 'new', 'new');
          // A stale writer of the old incarnation puts its objects back after the new one began.
          for (const object of kept)
            await driver.put(object.key, object.body, {
              metadata: object.metadata,
              ...(object.contentType ? { contentType: object.contentType } : {}),
            });
          const page = await alice.listKeys(s);
          expect(page.values.map((v) => v.key)).toEqual(['new']);
          expect(page.lists).toEqual([]);
          await expect(bob.listKeys(s)).rejects.toBeInstanceOf(SessionNotFoundError);
          await expect(alice.listKeys(sid())).rejects.toBeInstanceOf(SessionNotFoundError);
        },
      );

      it('truncateList keeps the first count items exactly and archives only the removed ones, with their offset; the list goes on', async () => {
        const s = sid();
        // Appended one at a time: seals and merges (CAS), rollovers (append) with the suite's small caps.
        let items: unknown[] = msgs(0, 10);
        await alice.saveList(s, 't', items);
        for (let i = 10; i < 70; i += 3) {
          await alice.appendList(s, 't', msgs(i, i + 3), { expectedCount: i });
          items.push(...msgs(i, i + 3));
        }
        let n = 0;
        for (const keep of [67, 41, 41, 12, 0]) {
          const before = await alice.getList(s, 't', { limit: 0 });
          expect(before.hash).toBe(chainHash(EMPTY_HASH, items));
          const result = await alice.truncateList(s, 't', { count: keep, expectedHash: before.hash });
          const kept = items.slice(0, keep);
          expect(result).toEqual({
            action: keep === items.length ? 'unchanged' : 'truncated',
            count: keep,
            hash: chainHash(EMPTY_HASH, kept),
          });
          const whole = await alice.getList(s, 't');
          expect(whole).toEqual({
            items: kept,
            count: keep,
            hash: result.hash,
            offset: 0,
            baseHash: EMPTY_HASH,
          });
          for (let offset = 0; offset < keep; offset += 13) {
            const page = await alice.getList(s, 't', { offset, limit: 4 });
            expect(page.offset).toBe(offset);
            expect(page.items).toEqual(kept.slice(offset, offset + page.items.length));
            expect(page.baseHash).toBe(chainHash(EMPTY_HASH, kept.slice(0, offset)));
          }
          // `last` may be cut at the old end of what the head (CAS) or current log holds.
          const tail = await alice.getList(s, 't', { last: 3 });
          expect(tail.offset).toBeGreaterThanOrEqual(Math.max(0, keep - 3));
          expect(tail.items).toEqual(kept.slice(tail.offset));
          if (keep > 0) expect(tail.items.length).toBeGreaterThan(0);
          const archives = await archivedOf(alice, s, 't');
          if (keep < items.length) {
            n++;
            const archive = archives.at(-1);
            expect(archive).toMatchObject({
              offset: keep,
              count: items.length - keep,
              hash: chainHash(EMPTY_HASH, items.slice(keep)),
            });
            expect(archive?.items).toEqual(items.slice(keep));
          }
          expect(archives).toHaveLength(n);
          // Archive ids are never reused; positions are.
          expect(new Set(archives.map((a) => a.archiveId)).size).toBe(archives.length);
          items = kept;
          // Appended again at the positions the truncate freed.
          const more = [
            { after: keep, i: 0 },
            { after: keep, i: 1 },
            { after: keep, i: 2 },
          ];
          await alice.appendList(s, 't', more, { expectedCount: keep, expectedHash: result.hash });
          items = [...items, ...more];
          expect((await alice.getList(s, 't')).items).toEqual(items);
        }
      });

      it('truncateList: unchanged, a stale hash (412), too few items and bad options write nothing; a named retry answers once; an append at the old count and hash is refused', async () => {
        const s = sid();
        const { hash } = await alice.saveList(s, 'u', msgs(0, 5));
        await meter.reset();
        expect(await alice.truncateList(s, 'u', { count: 5, expectedHash: hash })).toEqual({
          action: 'unchanged',
          count: 5,
          hash,
        });
        const stale = await alice
          .truncateList(s, 'u', { count: 2, expectedHash: chainHash(EMPTY_HASH, msgs(0, 4)) })
          .catch((e: unknown) => e);
        expect(stale).toBeInstanceOf(ListPreconditionFailedError);
        expect((stale as ListPreconditionFailedError).currentHash).toBe(hash);
        const short = await alice
          .truncateList(s, 'u', { count: 6, expectedHash: hash })
          .catch((e: unknown) => e);
        expect(short).toBeInstanceOf(ListTooShortError);
        expect(short).toBeInstanceOf(ValidationError);
        expect(short).toMatchObject({ count: 6, currentCount: 5 });
        for (const bad of [
          { count: -1, expectedHash: hash },
          { count: 1.5, expectedHash: hash },
          { count: 1, expectedHash: 'sha256:xyz' },
          { count: 1, expectedHash: hash, writeId: 'not ok!' },
        ])
          await expect(alice.truncateList(s, 'u', bad)).rejects.toBeInstanceOf(ValidationError);
        // An absent list is empty: keeping 0 of it changes nothing (and creates no session).
        const none = sid();
        expect(await alice.truncateList(none, 'u', { count: 0, expectedHash: EMPTY_HASH })).toEqual({
          action: 'unchanged',
          count: 0,
          hash: EMPTY_HASH,
        });
        await expect(
          alice.truncateList(none, 'u', { count: 1, expectedHash: EMPTY_HASH }),
        ).rejects.toBeInstanceOf(ListTooShortError);
        expect(await meter.changes()).toBe(0);
        expect(await alice.exists(none)).toBe(false);
        expect((await alice.getList(s, 'u')).items).toEqual(msgs(0, 5));
        expect(await alice.listArchives(s, 'u')).toEqual([]);

        // A named truncate retried after it landed answers its result again, writing nothing.
        const options = { count: 3, expectedHash: hash, writeId: 'pop-1' };
        const once = await alice.truncateList(s, 'u', options);
        await meter.reset();
        expect(await alice.truncateList(s, 'u', options)).toEqual(once);
        expect(await meter.changes()).toBe(0);
        // Back at 5 items, other ones: an append made for the old 5 is refused (the hash differs).
        await alice.appendList(s, 'u', [{ other: 3 }, { other: 4 }], {
          expectedCount: 3,
          expectedHash: once.hash,
        });
        const late = await alice
          .appendList(s, 'u', [msg(5)], { expectedCount: 5, expectedHash: hash })
          .catch((e: unknown) => e);
        expect(late).toBeInstanceOf(AppendConflictError);
        expect((await alice.getList(s, 'u')).items).toEqual([...msgs(0, 3), { other: 3 }, { other: 4 }]);
      });

      it.skipIf(via === 'http')(
        'truncateList is fenced as every list write (no lock): a stale token writes nothing',
        async () => {
          const s = sid();
          const { hash } = await alice.saveList(s, 'f', msgs(0, 6), { token: 5 });
          await meter.reset();
          await expect(
            alice.truncateList(s, 'f', { count: 2, expectedHash: hash, token: 4 }),
          ).rejects.toBeInstanceOf(FencedError);
          expect(await meter.changes()).toBe(0);
          const cut = await alice.truncateList(s, 'f', { count: 2, expectedHash: hash, token: 6 });
          expect(cut.count).toBe(2);
          await expect(
            alice.appendList(s, 'f', [msg(2)], { expectedCount: 2, expectedHash: cut.hash, token: 5 }),
          ).rejects.toBeInstanceOf(FencedError);
          expect((await alice.getList(s, 'f')).items).toEqual(msgs(0, 2));
        },
      );

      it('a truncate racing 8 appenders loses no acknowledged append: each is in the list or in the archive of a truncate', async () => {
        const s = sid();
        await alice.saveList(s, 'r', msgs(0, 6));
        let stop = false;
        const appenders = Array.from({ length: 8 }, async (_, i) => {
          const acked: number[] = [];
          for (let n = 0; n < 12 && !stop; n++) {
            const { count, hash } = await alice.getList(s, 'r', { limit: 0 });
            await alice
              .appendList(s, 'r', [{ appender: i, n }], { expectedCount: count, expectedHash: hash })
              .then(() => acked.push(n))
              .catch((error: unknown) => {
                if (!(error instanceof AppendConflictError) && !(error instanceof ContendedError))
                  throw error;
              });
          }
          return acked.map((n) => `${i}.${n}`);
        });
        // Truncates to two items fewer, three times, each retried on a stale hash.
        const truncates = (async () => {
          let done = 0;
          for (let attempt = 0; done < 3 && attempt < 200; attempt++) {
            const { count, hash } = await alice.getList(s, 'r', { limit: 0 });
            try {
              await alice.truncateList(s, 'r', { count: Math.max(0, count - 2), expectedHash: hash });
              done++;
            } catch (error) {
              if (!(error instanceof ListPreconditionFailedError) && !(error instanceof ContendedError))
                throw error;
            }
          }
          stop = true;
          return done;
        })();
        const [acked, done] = await Promise.all([Promise.all(appenders), truncates]);
        expect(done).toBe(3);
        const id = (m: unknown) => {
          const { appender, n } = m as { appender?: number; n?: number };
          return appender === undefined ? undefined : `${appender}.${n}`;
        };
        const current = (await alice.getList(s, 'r')).items.map(id);
        const archived = (await archivedOf(alice, s, 'r')).flatMap((a) => a.items.map(id));
        for (const a of acked.flat()) expect([...current, ...archived]).toContain(a);
        // Nothing is in the list twice.
        const inList = current.filter((x) => x !== undefined);
        expect(new Set(inList).size).toBe(inList.length);
      });
    });

    describe('snapshot and commit', () => {
      it('a commit of every kind of change, read back by one snapshot; its retry answers the same and writes nothing but unconditional values', async () => {
        const s = sid();
        const v = await alice.save(s, 'v', 'old');
        await alice.save(s, 'd', 'gone soon');
        const l = await alice.saveList(s, 'l', msgs(0, 3));
        const r = await alice.saveList(s, 'r', msgs(0, 2));
        const t = await alice.saveList(s, 't', msgs(0, 5));
        const request = {
          commitId: `c-${randomUUID()}`,
          values: [
            cas() ? { key: 'v', value: 'new', ifVersion: v.version } : { key: 'v', value: 'new' },
            { key: 'w', value: { made: true }, ifAbsent: true },
            { key: 'd', delete: true as const },
          ],
          lists: [
            { key: 'l', append: msgs(3, 5), expectedCount: 3, expectedHash: l.hash },
            { key: 'r', replace: [msg(9)], expectedHash: r.hash },
            { key: 't', truncate: 2, expectedHash: t.hash },
          ],
        };
        const result = await alice.commit(s, request);
        expect(result.lists).toEqual([
          { key: 'l', action: 'appended', count: 5, hash: chainHash(EMPTY_HASH, msgs(0, 5)) },
          { key: 'r', action: 'rewritten', count: 1, hash: chainHash(EMPTY_HASH, [msg(9)]) },
          { key: 't', action: 'truncated', count: 2, hash: chainHash(EMPTY_HASH, msgs(0, 2)) },
        ]);
        const got = await alice.snapshot(s, {
          values: ['v', 'w', 'd'],
          lists: [{ key: 'l', last: 2 }, { key: 'r' }, { key: 't' }],
        });
        expect(got.exists).toBe(true);
        expect(got.values).toEqual([
          { key: 'v', value: 'new', etag: result.values[0]?.etag, revision: 2 },
          { key: 'w', value: { made: true }, etag: result.values[1]?.etag, revision: 1 },
          { key: 'd', absent: true },
        ]);
        expect(result.values.map((r) => r.revision)).toEqual([2, 1, undefined]);
        expect(result.values[2]).toEqual({ key: 'd' });
        expect(got.lists).toEqual([
          { key: 'l', items: msgs(3, 5), offset: 3, ...pageHashes(msgs(0, 5), 3) },
          { key: 'r', items: [msg(9)], offset: 0, ...pageHashes([msg(9)], 0) },
          { key: 't', items: msgs(0, 2), offset: 0, ...pageHashes(msgs(0, 2), 0) },
        ]);
        // The truncate archived only the removed items.
        const archives = await alice.listArchives(s, 't');
        expect(archives.map((a) => ({ count: a.count, offset: a.offset }))).toContainEqual({
          count: 3,
          offset: 2,
        });
        // The retry: every conditional key records this commit and is skipped.
        await meter.reset();
        const again = await alice.commit(s, request);
        expect(again.values.slice(0, 2)).toEqual(result.values.slice(0, 2));
        expect(again.lists.map(({ key, count, hash }) => ({ key, count, hash }))).toEqual(
          result.lists.map(({ key, count, hash }) => ({ key, count, hash })),
        );
        // At most the unconditional value (OSS: `v`) and the delete are written again.
        expect(await meter.writes()).toBeLessThanOrEqual(cas() ? 0 : 1);
        expect((await alice.getList(s, 'l')).items).toEqual(msgs(0, 5));
        // Another user sees none of it.
        expect(await bob.snapshot(s, { values: ['v'], lists: [{ key: 'l' }] })).toEqual({
          exists: false,
          values: [],
          lists: [],
        });
      });

      it('failing preconditions name each key with its current state and write nothing; the same commitId with another body is CommitMismatchError', async () => {
        const s = sid();
        await alice.save(s, 'v', 1);
        const l = await alice.saveList(s, 'l', msgs(0, 3));
        await meter.reset();
        const stale = await alice
          .commit(s, {
            commitId: `c-${randomUUID()}`,
            values: [
              { key: 'v', value: 2, ifAbsent: true },
              { key: 'fresh', value: 'x' },
            ],
            lists: [
              { key: 'l', append: [msg(3)], expectedCount: 2, expectedHash: l.hash },
              { key: 'm', truncate: 0, expectedHash: chainHash(EMPTY_HASH, ['not this']) },
            ],
          })
          .catch((e: unknown) => e);
        expect(stale).toBeInstanceOf(CommitPreconditionError);
        const failures = (stale as CommitPreconditionError).failures;
        expect(failures.map((f) => `${f.kind} ${f.key} ${f.reason}`).sort()).toEqual([
          'list l count',
          'list m hash',
          'value v version',
        ]);
        expect(failures.find((f) => f.key === 'l')).toMatchObject({ count: 3, hash: l.hash });
        expect(failures.find((f) => f.key === 'm')).toMatchObject({ count: 0, hash: EMPTY_HASH });
        expect(await meter.changes()).toBe(0);
        expect(await alice.get(s, 'fresh')).toBeUndefined();
        const commitId = `c-${randomUUID()}`;
        await alice.commit(s, { commitId, values: [{ key: 'fresh', value: 'x', ifAbsent: true }] });
        await meter.reset();
        await expect(
          alice.commit(s, { commitId, values: [{ key: 'fresh', value: 'other', ifAbsent: true }] }),
        ).rejects.toBeInstanceOf(CommitMismatchError);
        expect(await meter.changes()).toBe(0);
        expect(await alice.get(s, 'fresh')).toBe('x');
      });

      it.skipIf(via === 'http')(
        'a stale token writes nothing at all, whichever key the newer holder wrote (no lock)',
        async () => {
          const s = sid();
          const l = await alice.saveList(s, 'l', msgs(0, 2), { token: 7 });
          await alice.save(s, 'held', 'by 7', { token: 7 });
          await meter.reset();
          await expect(
            alice.commit(s, {
              commitId: `c-${randomUUID()}`,
              token: 6,
              values: [{ key: 'untouched', value: 'by 6' }],
              lists: [{ key: 'l', append: [msg(2)], expectedCount: 2, expectedHash: l.hash }],
            }),
          ).rejects.toBeInstanceOf(FencedError);
          expect(await meter.changes()).toBe(0);
          const ok = await alice.commit(s, {
            commitId: `c-${randomUUID()}`,
            token: 8,
            values: [{ key: 'untouched', value: 'by 8' }],
            lists: [{ key: 'l', append: [msg(2)], expectedCount: 2, expectedHash: l.hash }],
          });
          expect(ok.lists[0]?.count).toBe(3);
          expect(await alice.get(s, 'untouched')).toBe('by 8');
        },
      );
    });

    describe('sessions', () => {
      it('exists, lists with last activity and paging, only the user own sessions, ids exact', async () => {
        const user = store.forUser(`lister-${randomUUID()}`);
        const ids = [
          'plain',
          'sandbox/session/1',
          '../up',
          'ünï cødé ✓',
          '~tilde',
          '%41',
          'anon',
          'x'.repeat(180),
        ];
        for (const id of ids) await user.save(id, 'k', 1);
        expect(await user.exists('sandbox/session/1')).toBe(true);
        expect(await user.exists('sandbox')).toBe(false); // reference fault 5: "s" must not match "s/x"
        const seen: string[] = [];
        let cursor: string | null = null;
        let calls = 0;
        do {
          const page = await user.listSessionIds({ limit: 3, ...(cursor ? { cursor } : {}) });
          for (const info of page.sessions) {
            seen.push(info.sessionId);
            expect(Date.now() - info.lastActivity.getTime()).toBeLessThan(600_000);
          }
          cursor = page.nextCursor;
          calls++;
        } while (cursor && calls < 10);
        expect(seen.sort()).toEqual([...ids].sort());
        expect((await bob.listSessionIds()).sessions.map((x) => x.sessionId)).not.toContain('plain');
        if (!objects) return;
        await meter.reset();
        await user.listSessionIds();
        expect(driver.calls.list).toBe(1);
      });

      it('a session whose last key is deleted no longer exists nor is listed; a new key brings it back', async () => {
        const user = store.forUser(`emptied-${randomUUID()}`);
        const listed = async () => (await user.listSessionIds()).sessions.map((x) => x.sessionId).sort();
        await user.save('a', 'only', 1);
        await user.saveList('b', 'memory', msgs(0, 2));
        await user.save('b', 'plan', 'p');
        // A list under a key that is encoded in object names (not plain).
        await user.saveList('b', 'odd/list ✓', msgs(0, 1));
        await user.save('c', 'kept', 1);
        await user.deleteKey('a', 'only');
        expect(await user.exists('a')).toBe(false);
        expect(await listed()).toEqual(['b', 'c']);
        // A value gone, a list left: the session holds something.
        await user.deleteKey('b', 'plan');
        expect(await user.exists('b')).toBe(true);
        await user.deleteList('b', 'memory');
        expect(await user.exists('b')).toBe(true);
        await user.deleteList('b', 'odd/list ✓');
        expect(await user.exists('b')).toBe(false);
        expect(await listed()).toEqual(['c']);
        expect((await user.snapshot('b', { values: ['plan'] })).exists).toBe(false);
        await user.appendList('a', 'memory', [msg(0)], { expectedCount: 0 });
        expect(await user.exists('a')).toBe(true);
        expect(await listed()).toEqual(['a', 'c']);
        expect((await user.getList('a', 'memory')).items).toEqual([msg(0)]);
      });

      it('refuses a forged cursor', async () => {
        await expect(alice.listSessionIds({ cursor: 'Li4vYm9iL35zZXNzaW9ucy94' })).rejects.toBeInstanceOf(
          ValidationError,
        );
        await expect(alice.listSessionIds({ cursor: '!!!' })).rejects.toBeInstanceOf(ValidationError);
        await expect(alice.listSessionIds({ limit: 0 })).rejects.toBeInstanceOf(ValidationError);
      });

      objectsIt('delete removes everything, is idempotent, and a new write starts empty', async () => {
        const s = sid();
        await alice.save(s, 'a', 1);
        await alice.saveList(s, 'l', [1, 2]);
        await alice.saveList(s, 'l', [3]);
        await alice.delete(s);
        await alice.delete(s);
        expect(await alice.exists(s)).toBe(false);
        expect(await alice.get(s, 'a')).toBeUndefined();
        expect((await alice.getList(s, 'l')).count).toBe(0);
        expect((await driver.list({ prefix: `${prefix}alice/${s}/` })).objects).toEqual([]);
        await alice.save(s, 'b', 2);
        expect(await alice.get(s, 'a')).toBeUndefined();
        expect(await alice.listArchives(s, 'l')).toEqual([]);
      });

      objectsIt(
        'a marker removed by lifecycle makes the whole session absent, and nothing old comes back',
        async () => {
          const s = sid();
          await alice.save(s, 'a', 'old');
          await alice.saveList(s, 'l', ['old']);
          await driver.delete(`${prefix}alice/~sessions/${s}`);
          expect(await alice.get(s, 'a')).toBeUndefined();
          expect((await alice.getList(s, 'l')).items).toEqual([]);
          await alice.save(s, 'b', 'new');
          expect(await alice.get(s, 'a')).toBeUndefined();
          expect((await alice.getList(s, 'l')).items).toEqual([]);
          expect(await alice.appendList(s, 'l', ['new'], { expectedCount: 0 })).toMatchObject({ count: 1 });
        },
      );

      it('deleteAllSessions deletes only the user own sessions', async () => {
        const user = store.forUser(`wiper-${randomUUID()}`);
        await user.save('one', 'k', 1);
        await user.save('two', 'k', 1);
        await bob.save('kept', 'k', 1);
        await user.deleteAllSessions();
        expect((await user.listSessionIds()).sessions).toEqual([]);
        expect(await bob.get('kept', 'k')).toBe(1);
      });
    });

    // Tokens made up by the test: the per-object rule of a store given no lock (the HTTP server always has one).
    describe.skipIf(via === 'http')('fencing without a lock', () => {
      it('a stale holder cannot delete the session: a write with a higher token raises the marker', async () => {
        const s = sid();
        await alice.save(s, 'plan', 'by 100', { token: 100 });
        await alice.save(s, 'plan', 'by 200', { token: 200 });
        await expect(alice.delete(s, { token: 100 })).rejects.toBeInstanceOf(FencedError);
        expect(await alice.get(s, 'plan')).toBe('by 200');
        // The commit's fast path (one value with ifVersion) is fenced by the value's token too.
        const v = await alice.getVersioned(s, 'plan');
        await expect(
          alice.commit(s, {
            commitId: `c-${randomUUID()}`,
            token: 100,
            values: [
              cas()
                ? { key: 'plan', value: 'stale', ifVersion: v?.version as string }
                : { key: 'plan', value: 'stale' },
            ],
          }),
        ).rejects.toBeInstanceOf(FencedError);
        expect(await alice.get(s, 'plan')).toBe('by 200');
      });

      it('token 5 lands; token 4 on the same key is refused; token 4 on another key is refused through the marker', async () => {
        const s = sid();
        await alice.save(s, 'state', 'five', { token: 5 });
        await expect(alice.save(s, 'state', 'four', { token: 4 })).rejects.toBeInstanceOf(FencedError);
        expect(await alice.get(s, 'state')).toBe('five');
        await expect(alice.save(s, 'untouched', 'four', { token: 4 })).rejects.toBeInstanceOf(FencedError);
        expect(await alice.get(s, 'untouched')).toBeUndefined();
        await expect(alice.appendList(s, 'l', [1], { expectedCount: 0, token: 4 })).rejects.toBeInstanceOf(
          FencedError,
        );
        await expect(alice.deleteKey(s, 'state', { token: 4 })).rejects.toBeInstanceOf(FencedError);
        await alice.save(s, 'state', 'six', { token: 6 });
        expect(await alice.get(s, 'state')).toBe('six');
        await alice.save(s, 'free', 'no token');
      });

      it('a stale holder cannot resurrect a session deleted with a newer token', async () => {
        const s = sid();
        await alice.save(s, 'a', 1, { token: 7 });
        await alice.delete(s, { token: 8 });
        await expect(alice.save(s, 'a', 'zombie', { token: 7 })).rejects.toBeInstanceOf(FencedError);
        expect(await alice.exists(s)).toBe(false);
        await alice.save(s, 'a', 'next holder', { token: 9 });
        expect(await alice.get(s, 'a')).toBe('next holder');
      });
    });

    describe('fencing by the lock (the session authority)', () => {
      /** A session's lease now, and the stale holder's: a lease that expired before B's was granted. */
      async function holders(s: string) {
        const key = { userId: 'alice', sessionId: s };
        const a = await lock.acquire(key, { leaseMs: 1000 });
        await authorized.save(s, 'plan', 'by A', { token: a.token });
        await authorized.save(s, 'old', 'by A', { token: a.token });
        await authorized.saveList(s, 'l', msgs(0, 3), { token: a.token });
        clock += 2000; // A's lease expires
        const b = await lock.acquire(key, { leaseMs: 60_000 });
        await authorized.save(s, 'plan', 'by B', { token: b.token });
        return { key, a, b };
      }
      const identity = (request: CommitRequest) => ({
        commitId: request.commitId,
        digest: commitDigest(request),
      });
      const everything = async (s: string) => ({
        plan: await authorized.get(s, 'plan'),
        old: await authorized.get(s, 'old'),
        fresh: await authorized.get(s, 'fresh'),
        list: (await authorized.getList(s, 'l')).items,
        exists: await authorized.exists(s),
      });

      objectsIt(
        'a stale holder writes nothing by any route, a key the new holder has not written included',
        async () => {
          const s = sid();
          const { a } = await holders(s);
          const before = await everything(s);
          const t = { token: a.token };
          const l = await authorized.getList(s, 'l');
          const attempts: Array<[string, () => Promise<unknown>]> = [
            ['new key', () => authorized.save(s, 'fresh', 'stale', t)],
            ['update', () => authorized.save(s, 'plan', 'stale', t)],
            ['delete key', () => authorized.deleteKey(s, 'old', t)],
            ['append', () => authorized.appendList(s, 'l', [msg(3)], { expectedCount: 3, ...t })],
            ['list delete', () => authorized.deleteList(s, 'l', t)],
            ['truncate', () => authorized.truncateList(s, 'l', { count: 1, expectedHash: l.hash, ...t })],
            ['session delete', () => authorized.delete(s, t)],
          ];
          if (driver.capabilities.presign)
            attempts.push([
              'workspace upload',
              () =>
                authorized.createWorkspaceUpload(s, 'ws', { size: 3, md5: 'ICy5YqxZB1uWSwcVLSNLcA==' }, t),
            ]);
          await meter.reset();
          for (const [route, attempt] of attempts) {
            const error = await attempt().then(
              () => undefined,
              (e: unknown) => e,
            );
            expect(error, route).toBeInstanceOf(FencedError);
          }
          expect(await meter.changes()).toBe(0);
          expect(await everything(s)).toEqual(before);
        },
      );

      it('every commit form with a stale token is fenced, the fast path included; nothing written', async () => {
        const s = sid();
        const { a } = await holders(s);
        const before = await everything(s);
        const plan = await authorized.getVersioned(s, 'plan');
        const l = await authorized.getList(s, 'l');
        const all: CommitRequest[] = [
          { commitId: 'f1', values: [{ key: 'plan', value: 'x', ifVersion: plan?.version as string }] },
          { commitId: 'f2', values: [{ key: 'fresh', value: 'x', ifAbsent: true }] },
          { commitId: 'f3', values: [{ key: 'plan', value: 'x' }] },
          { commitId: 'f4', values: [{ key: 'old', delete: true as const }] },
          {
            commitId: 'f5',
            lists: [{ key: 'l', append: [msg(3)], expectedCount: 3, expectedHash: l.hash }],
          },
          { commitId: 'f6', lists: [{ key: 'l', replace: [msg(9)] }] },
          { commitId: 'f7', lists: [{ key: 'l', truncate: 1, expectedHash: l.hash }] },
          // A save with the version read as a hint: not read first, fenced all the same.
          { commitId: 'f8', values: [{ key: 'plan', value: 'x', seenVersion: plan?.version as string }] },
        ];
        const forms = all.filter((f) => cas() || f.commitId !== 'f1');
        await meter.reset();
        for (const form of forms)
          await expect(
            authorized.commit(s, { ...form, token: a.token }),
            form.commitId,
          ).rejects.toBeInstanceOf(FencedError);
        expect(await meter.changes()).toBe(0);
        expect(await everything(s)).toEqual(before);
      });

      it('a token the lock never granted is refused, and does not fence out the real holder', async () => {
        const s = sid();
        const { key, b } = await holders(s);
        const made = b.token + 1_000_000_000;
        const error = await authorized.save(s, 'plan', 'forged', { token: made }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(FencedError);
        if (via === 'library') expect((error as FencedError).seen).toBeNull();
        await expect(
          authorized.commit(s, { commitId: 'forged', token: made, values: [{ key: 'fresh', value: 1 }] }),
        ).rejects.toBeInstanceOf(FencedError);
        // No lock item at all: no token is granted.
        await expect(authorized.save(sid(), 'k', 1, { token: b.token })).rejects.toBeInstanceOf(FencedError);
        // Another user's session of the same id is another lock: alice's token is not granted there.
        const bobAuthorized = store.forUser('bob', { authority: lock });
        await expect(bobAuthorized.save(s, 'plan', 'by bob', { token: b.token })).rejects.toBeInstanceOf(
          FencedError,
        );
        expect(await bobAuthorized.get(s, 'plan')).toBeUndefined();
        await authorized.save(s, 'plan', 'by B again', { token: b.token });
        expect(await authorized.get(s, 'plan')).toBe('by B again');
        expect(await authorized.get(s, 'fresh')).toBeUndefined();
        // A released lease's token is no longer granted.
        await lock.release(key, b.owner, b.token);
        await expect(authorized.save(s, 'plan', 'after release', { token: b.token })).rejects.toBeInstanceOf(
          FencedError,
        );
        expect(await authorized.get(s, 'plan')).toBe('by B again');
      });

      it('a commitId reused with another body is commit-mismatch whatever it shares with the first, leased or not; nothing written', async () => {
        for (const leased of [false, true]) {
          const s = sid();
          const key = { userId: 'alice', sessionId: s };
          await authorized.save(s, 'other', 'kept');
          const lease = leased ? await lock.acquire(key) : undefined;
          const token = lease ? { token: lease.token } : {};
          const first: CommitRequest = {
            commitId: 'c1',
            ...token,
            values: [{ key: 'v', value: 1 }],
            lists: [{ key: 'l', append: ['x'], expectedCount: 0, expectedHash: EMPTY_HASH }],
          };
          const answer = await authorized.commit(s, first);
          if (lease) await lock.release(key, lease.owner, lease.token, { commit: identity(first) });
          const again = leased ? await lock.acquire(key) : undefined;
          const next = again ? { token: again.token } : {};
          const before = await everything(s);
          const others: CommitRequest[] = [
            { commitId: 'c1', values: [{ key: 'w', value: 2 }] },
            {
              commitId: 'c1',
              values: [{ key: 'v', value: 1 }],
              lists: [
                ...(first.lists ?? []),
                { key: 'm', append: [1], expectedCount: 0, expectedHash: EMPTY_HASH },
              ],
            },
            {
              commitId: 'c1',
              values: [
                { key: 'v', value: 1 },
                { key: 'l', value: 'a value now' },
              ],
            },
            { commitId: 'c1', values: [{ key: 'other', delete: true }] },
            { commitId: 'c1', values: [{ key: 'v', value: 2 }], lists: first.lists ?? [] },
          ];
          await meter.reset();
          for (const other of others)
            await expect(
              authorized.commit(s, { ...other, ...next }),
              JSON.stringify(other),
            ).rejects.toBeInstanceOf(CommitMismatchError);
          expect(await meter.changes()).toBe(0);
          expect(await everything(s)).toEqual(before);
          expect(await authorized.get(s, 'other')).toBe('kept');
          // The same body is a replay.
          expect(await authorized.commit(s, { ...first, ...next })).toEqual(answer);
        }
      });

      it('a commit retried after its lease was released answers complete from its records (values not read first included)', async () => {
        const s = sid();
        const key = { userId: 'alice', sessionId: s };
        const plan = await authorized.save(s, 'plan', 'first');
        const state = await authorized.save(s, 'state', 1);
        const lease = await lock.acquire(key);
        const request: CommitRequest = {
          commitId: `c-${randomUUID()}`,
          token: lease.token,
          values: [
            // The fast path (one ifVersion) and a seenVersion hint: neither is read before its write.
            cas() ? { key: 'plan', value: 'done', ifVersion: plan.version } : { key: 'plan', value: 'done' },
            { key: 'state', value: 2, seenVersion: state.version },
            { key: 'fresh', value: 'new' },
          ],
          lists: [{ key: 'l', append: [msg(0)], expectedCount: 0, expectedHash: EMPTY_HASH }],
        };
        const first = await authorized.commit(s, request);
        await lock.release(key, lease.owner, lease.token);
        await meter.reset();
        expect(await authorized.commit(s, request)).toEqual(first);
        expect(await meter.changes()).toBe(0);
      });
    });

    describe('ids (reference fault 4: raw ids in keys)', () => {
      it('keeps look-alike triples apart', async () => {
        const ab = store.forUser('a/b');
        const a = store.forUser('a');
        await ab.save('c', 'k', 'a/b + c');
        await a.save('b/c', 'k', 'a + b/c');
        expect(await ab.get('c', 'k')).toBe('a/b + c');
        expect(await a.get('b/c', 'k')).toBe('a + b/c');
        const anonymous = store.forUser(null);
        const named = store.forUser('anon');
        await anonymous.save('s', 'k', 'anonymous');
        await named.save('s', 'k', 'named anon');
        expect(await anonymous.get('s', 'k')).toBe('anonymous');
        expect(await store.forUser('  ').get('s', 'k')).toBe('anonymous');
        expect(await named.get('s', 'k')).toBe('named anon');
        await alice.save('ids', 'x.list', 'single');
        await alice.saveList('ids', 'x', ['list']);
        expect(await alice.get('ids', 'x.list')).toBe('single');
        expect((await alice.getList('ids', 'x')).items).toEqual(['list']);
        await alice.save('..', '..', 'dots');
        expect(await alice.get('..', '..')).toBe('dots');
      });

      it('refuses empty, blank, control-character and over-long ids', async () => {
        for (const bad of ['', '   ', 'a\u0000b', 'tab\there', 'x'.repeat(181), '\ud800']) {
          await expect(alice.save(bad, 'k', 1)).rejects.toBeInstanceOf(ValidationError);
        }
        await expect(alice.save('s', 'k'.repeat(129), 1)).rejects.toBeInstanceOf(ValidationError);
        expect(() => store.forUser('u'.repeat(129))).toThrow(ValidationError);
      });
    });
  });
}
