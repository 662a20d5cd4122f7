/**
 * Snapshots and commits (lib/store/commits.ts; docs/DESIGN.md, "Snapshots and commits"), on the
 * memory driver in both list formats (requests counted with test/store/wrappers.ts), then on the
 * OSS front (append format) and s3rver (CAS format).
 */
import { describe, expect, inject, it } from 'vitest';
import {
  BackendError,
  CommitMismatchError,
  CommitPartialError,
  CommitPreconditionError,
  ContendedError,
  FencedError,
  PreconditionUnsupportedError,
  ValidationError,
} from '../../lib/contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import type { CommitRequest, SessionStore } from '../../lib/contract/types.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createOssDriver } from '../../lib/drivers/oss.js';
import { createS3Driver } from '../../lib/drivers/s3.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { createStateStore, type ListFormatName } from '../../lib/store/store.js';
import { onTier, s3rverOptions } from '../backends.js';
import { OSS_CREDENTIALS } from '../servers/global-setup.js';
import { roundTrips, withFaults } from './wrappers.js';

function setup(listFormat: ListFormatName, inner: ObjectStoreDriver = createMemoryDriver()) {
  const faults = withFaults(inner);
  const driver = roundTrips(faults.driver);
  const store = createStateStore({ driver, listFormat });
  const user = store.forUser('u');
  // The same store with the lock as its authority over tokens (as the HTTP server has it).
  const lock = createMemoryLock();
  const leased = store.forUser('u', { authority: lock });
  const lease = (sessionId: string) => lock.acquire({ userId: 'u', sessionId });
  const measure = async <T>(fn: () => Promise<T>) => {
    driver.reset();
    driver.resetWaves();
    let result: T | undefined;
    let error: unknown;
    try {
      result = await fn();
    } catch (e) {
      error = e;
    }
    const c = driver.calls;
    return {
      result: result as T,
      error,
      gets: c.get + c.head,
      writes: c.put + c.append + c.copy + c.delete + c.deleteMany,
      lists: c.list,
      trips: driver.waves(),
      puts: [...driver.puts],
    };
  };
  return { driver, faults: faults.state, store, user, leased, lock, lease, measure };
}

const hashOf = (items: unknown[]) => chainHash(EMPTY_HASH, items);

async function failure<T extends Error>(promise: Promise<unknown>, type: new (...args: never[]) => T) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(type);
  return error as T;
}

/** The state of a session, for "nothing was written". */
async function state(user: SessionStore, s: string) {
  const snap = await user.snapshot(s, {
    values: ['v', 'w', 'd', 'x'],
    lists: [{ key: 'l' }, { key: 'r' }, { key: 't' }, { key: 'v' }],
  });
  return snap;
}

for (const listFormat of ['cas', 'append'] as const) {
  describe.runIf(onTier('fast'))(`snapshot and commit (memory, ${listFormat} lists)`, () => {
    it('snapshot: values with their etag, absent values, list pages with offset and baseHash, in one marker read', async () => {
      const { user, measure } = setup(listFormat);
      const { version } = await user.save('s', 'v', { plan: 'p' });
      await user.appendList('s', 'l', [1, 2, 3], { expectedCount: 0 });
      const m = await measure(() =>
        user.snapshot('s', { values: ['v', 'missing'], lists: [{ key: 'l', last: 2 }, { key: 'none' }] }),
      );
      expect(m.result).toEqual({
        exists: true,
        values: [
          { key: 'v', value: { plan: 'p' }, etag: version, revision: 1 },
          { key: 'missing', absent: true },
        ],
        lists: [
          { key: 'l', items: [2, 3], count: 3, hash: hashOf([1, 2, 3]), offset: 1, baseHash: hashOf([1]) },
          { key: 'none', items: [], count: 0, hash: EMPTY_HASH, offset: 0, baseHash: EMPTY_HASH },
        ],
      });
      expect(m.writes).toBe(0);
      // One marker GET for the whole snapshot, not one per key: the marker, 2 values, and per list
      // its head (CAS) or its pointer and, when it exists, its current log's tail (append).
      expect(m.gets).toBe(listFormat === 'cas' ? 5 : 6);
      expect(m.trips).toBe(listFormat === 'cas' ? 1 : 2);
    });

    it('snapshot: an absent session and another user’s session are exists: false with no data', async () => {
      const { store, user } = setup(listFormat);
      await user.save('s', 'v', 1);
      await user.appendList('s', 'l', [1], { expectedCount: 0 });
      const empty = { exists: false, values: [], lists: [] };
      expect(await user.snapshot('nope', { values: ['v'], lists: [{ key: 'l' }] })).toEqual(empty);
      expect(await store.forUser('other').snapshot('s', { values: ['v'], lists: [{ key: 'l' }] })).toEqual(
        empty,
      );
    });

    it('snapshot valuePage: the values under a prefix in key order, a page at a time; odd keys; a list-only key left out, a named key once; 1 LIST beside the marker, a GET per value, no HEAD', async () => {
      const { user, measure } = setup(listFormat);
      const keys = ['n/a', 'n/b', 'n/~c', 'n/../d', 'n/é', 'n/z'];
      for (const [i, key] of keys.entries()) await user.save('s', key, { i });
      await user.save('s', 'm/outside', 0);
      await user.appendList('s', 'n/list', [1], { expectedCount: 0 });
      const inOrder = [...keys, 'n/list'].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
      const first = await measure(() =>
        user.snapshot('s', { values: ['n/b'], valuePage: { prefix: 'n/', limit: 4 } }),
      );
      const named = first.result.values[0];
      expect(named).toMatchObject({ key: 'n/b', value: { i: 1 } });
      const paged = first.result.values.slice(1).map((v) => v.key);
      // The page's 4 keys, less the named one (answered once, in its place).
      expect(paged).toEqual(inOrder.slice(0, 4).filter((k) => k !== 'n/b' && k !== 'n/list'));
      expect(first.result.nextCursor).toEqual(expect.any(String));
      expect([first.lists, first.writes]).toEqual([1, 0]);
      // The marker, the named value, a GET per paged value: no HEAD.
      expect(first.gets).toBe(2 + paged.length);
      const rest = await user.snapshot('s', {
        valuePage: { prefix: 'n/', limit: 10, cursor: first.result.nextCursor as string },
      });
      expect(rest.values.map((v) => v.key)).toEqual(inOrder.slice(4).filter((k) => k !== 'n/list'));
      expect(rest.nextCursor).toBeUndefined();
      for (const v of rest.values) expect(v).toMatchObject({ value: { i: keys.indexOf(v.key) } });
    });

    it('snapshot valuePage: another user’s session and an absent one answer nothing; an earlier incarnation’s leftover is no key; a damaged value fails only its key; bad pages are ValidationError', async () => {
      const inner = createMemoryDriver();
      const { store, user } = setup(listFormat, inner);
      await user.save('s', 'k1', 1);
      const names = (await inner.list({ prefix: '' })).objects.map((o) => o.key);
      const oldName = names.find((n) => n.endsWith('/k1.json')) as string;
      const old = await inner.get(oldName);
      await user.delete('s');
      await user.save('s', 'k2', 2);
      // What a crashed purge could have left of the deleted session.
      await inner.put(oldName, old.body, { contentType: 'application/json', metadata: old.metadata });
      await user.save('s', 'k3', 3);
      const k3 = (await inner.list({ prefix: '' })).objects.find((o) => o.key.endsWith('/k3.json'));
      await inner.put(k3?.key as string, '{not json', {
        contentType: 'application/json',
        metadata: (await inner.head(k3?.key as string)).metadata,
      });
      const page = { prefix: 'k', limit: 10 };
      expect(await user.snapshot('s', { valuePage: page })).toEqual({
        exists: true,
        values: [
          { key: 'k2', value: 2, etag: expect.any(String), revision: 1 },
          { key: 'k3', corrupt: true },
        ],
        lists: [],
      });
      const empty = { exists: false, values: [], lists: [] };
      expect(await store.forUser('other').snapshot('s', { valuePage: page })).toEqual(empty);
      expect(await user.snapshot('nope', { valuePage: page })).toEqual(empty);
      const refused = [
        { valuePage: { limit: 0 } },
        { valuePage: { limit: 101 } },
        { values: ['a'], valuePage: { limit: 100 } },
        { valuePage: { limit: 1.5 } },
        { valuePage: { prefix: 'a\u0000', limit: 1 } },
        { valuePage: { prefix: 'x'.repeat(129), limit: 1 } },
        { valuePage: { limit: 1, cursor: 'not a cursor!' } },
        { valuePage: { limit: 1, cursor: 7 } },
        { valuePage: null },
      ];
      for (const request of refused) await failure(user.snapshot('s', request as never), ValidationError);
    });

    it('commit: another user’s commit to the same session id acts on their own session; nothing of the caller’s changes', async () => {
      const { store, user } = setup(listFormat);
      await user.save('s', 'v', 'mine');
      await user.appendList('s', 'l', ['mine'], { expectedCount: 0 });
      const before = await state(user, 's');
      const other = store.forUser('other');
      await failure(
        other.commit('s', {
          commitId: 'x',
          lists: [{ key: 'l', append: ['theirs'], expectedCount: 1, expectedHash: hashOf(['mine']) }],
        }),
        CommitPreconditionError,
      );
      await other.commit('s', {
        commitId: 'y',
        values: [{ key: 'v', value: 'theirs' }],
        lists: [{ key: 'l', append: ['theirs'], expectedCount: 0, expectedHash: EMPTY_HASH }],
      });
      expect(await state(user, 's')).toEqual(before);
      expect(await other.get('s', 'v')).toBe('theirs');
    });

    it('snapshot and commit: 101 keys, the same key twice in one kind and bad shapes are ValidationError; a value and a list may share a key', async () => {
      const { user } = setup(listFormat);
      const keys = Array.from({ length: 101 }, (_, i) => `k${i}`);
      await failure(user.snapshot('s', { values: keys }), ValidationError);
      await failure(user.snapshot('s', { values: ['a', 'a'] }), ValidationError);
      await failure(user.snapshot('s', { lists: [{ key: 'a' }, { key: 'a' }] }), ValidationError);
      expect((await user.snapshot('s', { values: ['a'], lists: [{ key: 'a' }] })).exists).toBe(false);
      const bad: CommitRequest[] = [
        { commitId: 'c', values: keys.map((key) => ({ key, value: 1 })) },
        {
          commitId: 'c',
          values: [
            { key: 'a', value: 1 },
            { key: 'a', delete: true },
          ],
        },
        {
          commitId: 'c',
          lists: [
            { key: 'l', append: [1], expectedCount: 0, expectedHash: EMPTY_HASH },
            { key: 'l', truncate: 0, expectedHash: EMPTY_HASH },
          ],
        },
        {
          commitId: 'c',
          lists: [
            {
              key: 'l',
              append: Array.from({ length: 1001 }, (_, i) => i),
              expectedCount: 0,
              expectedHash: EMPTY_HASH,
            },
          ],
        },
        { commitId: 'not a commit id' },
        { commitId: 'c', values: [{ key: 'a', value: 1, ifVersion: 'e', ifAbsent: true }] },
        { commitId: 'c', lists: [{ key: 'l', append: [1], expectedCount: 0 } as never] },
      ];
      for (const request of bad) await failure(user.commit('s', request), ValidationError);
      const shared = await user.commit('s', {
        commitId: 'c',
        values: [{ key: 'a', value: 'value' }],
        lists: [{ key: 'a', append: ['item'], expectedCount: 0, expectedHash: EMPTY_HASH }],
      });
      expect(shared.lists[0]).toMatchObject({ key: 'a', count: 1 });
      expect(await user.get('s', 'a')).toBe('value');
      expect((await user.getList('s', 'a')).items).toEqual(['item']);
    });

    it('commit: every kind of change applies, and the answer has each etag, action, count and hash', async () => {
      const { user } = setup(listFormat);
      const v = await user.save('s', 'v', 'old');
      await user.save('s', 'd', 'gone soon');
      await user.appendList('s', 'l', [1], { expectedCount: 0 });
      await user.appendList('s', 'r', ['a', 'b'], { expectedCount: 0 });
      await user.appendList('s', 't', [1, 2, 3], { expectedCount: 0 });
      const result = await user.commit('s', {
        commitId: 'turn-1',
        values: [
          { key: 'v', value: 'new', ifVersion: v.version },
          { key: 'w', value: { made: true }, ifAbsent: true },
          { key: 'd', delete: true },
        ],
        lists: [
          { key: 'l', append: [2, 3], expectedCount: 1, expectedHash: hashOf([1]) },
          { key: 'r', replace: ['z'], expectedHash: hashOf(['a', 'b']) },
          { key: 't', truncate: 1, expectedHash: hashOf([1, 2, 3]) },
        ],
      });
      const got = await user.snapshot('s', {
        values: ['v', 'w', 'd'],
        lists: [{ key: 'l' }, { key: 'r' }, { key: 't' }],
      });
      expect(result).toEqual({
        commitId: 'turn-1',
        values: [
          { key: 'v', etag: (got.values[0] as { etag: string }).etag, revision: 2 },
          { key: 'w', etag: (got.values[1] as { etag: string }).etag, revision: 1 },
          { key: 'd' },
        ],
        lists: [
          { key: 'l', action: 'appended', count: 3, hash: hashOf([1, 2, 3]) },
          { key: 'r', action: 'rewritten', count: 1, hash: hashOf(['z']) },
          { key: 't', action: 'truncated', count: 1, hash: hashOf([1]) },
        ],
      });
      expect(got.values.map((x) => ('value' in x ? x.value : 'absent'))).toEqual([
        'new',
        { made: true },
        'absent',
      ]);
      expect(got.lists.map((x) => ('items' in x ? x.items : 'corrupt'))).toEqual([[1, 2, 3], ['z'], [1]]);
      // A retry of the whole commit answers the same, writing nothing.
      const again = await user.commit('s', {
        commitId: 'turn-1',
        values: [
          { key: 'v', value: 'new', ifVersion: v.version },
          { key: 'w', value: { made: true }, ifAbsent: true },
          { key: 'd', delete: true },
        ],
        lists: [
          { key: 'l', append: [2, 3], expectedCount: 1, expectedHash: hashOf([1]) },
          { key: 'r', replace: ['z'], expectedHash: hashOf(['a', 'b']) },
          { key: 't', truncate: 1, expectedHash: hashOf([1, 2, 3]) },
        ],
      });
      expect(again.values).toEqual(result.values);
      expect(again.lists.map(({ count, hash }) => ({ count, hash }))).toEqual(
        result.lists.map(({ count, hash }) => ({ count, hash })),
      );
    });

    it('commit: every failing precondition is named with its current etag or count and hash, and nothing is written (driver-counted)', async () => {
      const { user, measure } = setup(listFormat);
      const v = await user.save('s', 'v', 1);
      const w = await user.save('s', 'w', 2);
      await user.appendList('s', 'l', [1, 2], { expectedCount: 0 });
      await user.appendList('s', 'r', ['a'], { expectedCount: 0 });
      await user.appendList('s', 't', [1, 2, 3], { expectedCount: 0 });
      const before = await state(user, 's');
      const m = await measure(() =>
        user.commit('s', {
          commitId: 'bad',
          values: [
            { key: 'v', value: 9, ifVersion: 'not-the-etag' },
            { key: 'w', value: 9, ifAbsent: true },
            { key: 'x', value: 9 }, // fine on its own: still not written
          ],
          lists: [
            { key: 'l', append: [3], expectedCount: 1, expectedHash: hashOf([1]) },
            { key: 'r', replace: ['b'], expectedHash: hashOf(['other']) },
            { key: 't', truncate: 1, expectedHash: hashOf([1, 2]) },
          ],
        }),
      );
      expect(m.writes).toBe(0);
      const error = m.error as CommitPreconditionError;
      expect(error).toBeInstanceOf(CommitPreconditionError);
      expect(error.status).toBe(409); // a count conflict among them
      expect([...error.failures].sort((a, b) => a.key.localeCompare(b.key))).toEqual([
        { kind: 'list', key: 'l', reason: 'count', count: 2, hash: hashOf([1, 2]) },
        { kind: 'list', key: 'r', reason: 'hash', count: 1, hash: hashOf(['a']) },
        { kind: 'list', key: 't', reason: 'hash', count: 3, hash: hashOf([1, 2, 3]) },
        { kind: 'value', key: 'v', reason: 'version', currentVersion: v.version, currentRevision: 1 },
        { kind: 'value', key: 'w', reason: 'version', currentVersion: w.version, currentRevision: 1 },
      ]);
      expect(await state(user, 's')).toEqual(before);
      // Versions and hashes alone: 412.
      const only = await failure(
        user.commit('s', {
          commitId: 'bad2',
          values: [{ key: 'v', value: 9, ifVersion: 'nope' }],
          lists: [{ key: 'l', append: [3], expectedCount: 2, expectedHash: hashOf([9]) }],
        }),
        CommitPreconditionError,
      );
      expect(only.status).toBe(412);
      expect(only.failures.map((f) => [f.key, f.reason])).toEqual([
        ['l', 'hash'],
        ['v', 'version'],
      ]);
      expect(await state(user, 's')).toEqual(before);
    });

    it('commit: values are written before lists; a fault on one named key of three, then on the list: each retry completes exactly the missing ones', async () => {
      const { user, measure, faults } = setup(listFormat);
      await user.appendList('s', 'l', [0], { expectedCount: 0 });
      const request: CommitRequest = {
        commitId: 'turn-f',
        values: ['a', 'b', 'c'].map((key) => ({ key, value: `${key}!` })),
        lists: [{ key: 'l', append: [1, 2], expectedCount: 1, expectedHash: hashOf([0]) }],
      };
      faults.pattern = '/s/b.json';
      const first = await measure(() => user.commit('s', request));
      expect(first.error).toBeInstanceOf(BackendError);
      expect(await user.get('s', 'a')).toBe('a!');
      expect(await user.get('s', 'b')).toBeUndefined();
      expect(await user.get('s', 'c')).toBe('c!');
      expect((await user.getList('s', 'l')).count).toBe(1); // no list change after a failed value
      // The list write fails now: the values are in, the list is not.
      faults.pattern = '.list';
      const second = await measure(() => user.commit('s', request));
      expect(second.error).toBeInstanceOf(BackendError);
      expect(second.puts.filter((name) => name.endsWith('.json'))).toEqual(['agent-state/u/s/b.json']);
      expect(await user.get('s', 'b')).toBe('b!');
      expect((await user.getList('s', 'l')).count).toBe(1);
      faults.pattern = undefined;
      const third = await measure(() => user.commit('s', request));
      expect(third.error).toBeUndefined();
      expect(third.puts.filter((name) => name.endsWith('.json'))).toEqual([]);
      expect(third.result.lists).toEqual([
        { key: 'l', action: 'appended', count: 3, hash: hashOf([0, 1, 2]) },
      ]);
      expect((await user.getList('s', 'l')).items).toEqual([0, 1, 2]);
      // Done: a fourth call writes nothing and answers the same.
      const fourth = await measure(() => user.commit('s', request));
      expect(fourth.writes).toBe(0);
      expect(fourth.result.lists[0]).toMatchObject({ count: 3, hash: hashOf([0, 1, 2]) });
    });

    it('commit: the same commitId with another body is CommitMismatchError, nothing written (values by digest, lists by recorded result)', async () => {
      const { user, measure } = setup(listFormat);
      await user.commit('s', {
        commitId: 'c1',
        values: [{ key: 'v', value: 1 }],
        lists: [{ key: 'l', append: ['x'], expectedCount: 0, expectedHash: EMPTY_HASH }],
      });
      const before = await state(user, 's');
      const m = await measure(() =>
        user.commit('s', {
          commitId: 'c1',
          values: [{ key: 'v', value: 2 }],
          lists: [{ key: 'l', append: ['x'], expectedCount: 0, expectedHash: EMPTY_HASH }],
        }),
      );
      expect(m.error).toBeInstanceOf(CommitMismatchError);
      expect(m.error).toMatchObject({ kind: 'value', key: 'v', commitId: 'c1' });
      expect(m.writes).toBe(0);
      await user.commit('s', {
        commitId: 'c2',
        lists: [{ key: 'm', append: ['x'], expectedCount: 0, expectedHash: EMPTY_HASH }],
      });
      const n = await measure(() =>
        user.commit('s', {
          commitId: 'c2',
          lists: [{ key: 'm', append: ['y'], expectedCount: 0, expectedHash: EMPTY_HASH }],
        }),
      );
      expect(n.error).toBeInstanceOf(CommitMismatchError);
      expect(n.error).toMatchObject({ kind: 'list', key: 'm' });
      expect(n.writes).toBe(0);
      expect(await state(user, 's')).toEqual(before);
    });

    it('commit: a stale token writes nothing at all, whichever key the newer holder wrote', async () => {
      const { user, measure } = setup(listFormat);
      await user.save('s', 'w', 'untouched');
      // v and l exist before the newer holder writes them: its writes create nothing, so the
      // marker's token is not raised and only the tokens v and l record fence the stale holder.
      await user.save('s', 'v', 'first');
      await user.appendList('s', 'l', ['f'], { expectedCount: 0 });
      await user.commit('s', {
        commitId: 'new',
        token: 20,
        values: [{ key: 'v', value: 'newer' }],
        lists: [{ key: 'l', append: ['n'], expectedCount: 1, expectedHash: hashOf(['f']) }],
      });
      const before = await state(user, 's');
      const stale: CommitRequest[] = [
        {
          commitId: 'old1',
          token: 10,
          values: [
            { key: 'w', value: 'stale' },
            { key: 'v', value: 'stale' },
          ],
        },
        {
          commitId: 'old2',
          token: 10,
          values: [{ key: 'w', value: 'stale' }],
          lists: [{ key: 'l', append: ['s'], expectedCount: 2, expectedHash: hashOf(['f', 'n']) }],
        },
      ];
      for (const request of stale) {
        const m = await measure(() => user.commit('s', request));
        expect(m.error).toBeInstanceOf(FencedError);
        expect(m.writes).toBe(0);
      }
      expect(await state(user, 's')).toEqual(before);
    });

    it('commit: concurrent commits on one session, without a token and with tokens: one wins the list, the others fail typed, nothing lost or doubled', async () => {
      for (const withToken of [false, true]) {
        const { user } = setup(listFormat);
        const v = await user.save('s', 'v', 'start');
        await user.appendList('s', 'l', ['start'], { expectedCount: 0 });
        const outcomes = await Promise.allSettled(
          Array.from({ length: 8 }, (_, i) =>
            user.commit('s', {
              commitId: `race-${i}`,
              ...(withToken ? { token: 100 + i } : {}),
              values: [{ key: 'v', value: `by ${i}`, ifVersion: v.version }],
              lists: [{ key: 'l', append: [`by ${i}`], expectedCount: 1, expectedHash: hashOf(['start']) }],
            }),
          ),
        );
        const won = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [i] : []));
        expect(won).toHaveLength(1);
        for (const o of outcomes) {
          if (o.status === 'rejected')
            expect(
              o.reason instanceof CommitPreconditionError ||
                o.reason instanceof CommitPartialError ||
                o.reason instanceof FencedError ||
                // Without a lock, every higher token raises the marker's: racing grants contend there.
                (withToken && o.reason instanceof ContendedError),
            ).toBe(true);
        }
        expect(await user.get('s', 'v')).toBe(`by ${won[0]}`);
        expect((await user.getList('s', 'l')).items).toEqual(['start', `by ${won[0]}`]);
      }
      // Unconditional values without a lease: every value write lands (at-least-once), one list append wins.
      const { user } = setup(listFormat);
      await user.appendList('s', 'l', ['start'], { expectedCount: 0 });
      const outcomes = await Promise.allSettled(
        Array.from({ length: 6 }, (_, i) =>
          user.commit('s', {
            commitId: `free-${i}`,
            values: [{ key: `v${i}`, value: i }],
            lists: [{ key: 'l', append: [i], expectedCount: 1, expectedHash: hashOf(['start']) }],
          }),
        ),
      );
      const won = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [i] : []));
      expect(won).toHaveLength(1);
      for (const o of outcomes)
        if (o.status === 'rejected') {
          const error: unknown = o.reason;
          // Either it saw the list moved before writing (nothing written), or at write time (partial).
          expect(error instanceof CommitPartialError || error instanceof CommitPreconditionError).toBe(true);
          if (error instanceof CommitPartialError) {
            expect(error.applied.map((a) => a.kind)).toEqual(['value']);
            expect(error.failed).toMatchObject([{ kind: 'list', key: 'l', reason: 'count', count: 2 }]);
          }
        }
      expect((await user.getList('s', 'l')).items).toEqual(['start', won[0]]);
    });

    it('seenVersion: an unconditional save tried with the version and revision the caller read (no HEAD); stale or gone, it is saved all the same', async () => {
      const { leased, lease, measure } = setup(listFormat);
      const v = await leased.save('s', 'state', { n: 0 });
      await leased.save('s', 'other', 1);
      const { token } = await lease('s');
      const hinted = await measure(() =>
        leased.commit('s', {
          commitId: 'h1',
          token,
          values: [{ key: 'state', value: { n: 1 }, seenVersion: v.version, seenRevision: v.revision }],
        }),
      );
      expect(hinted.error).toBeUndefined();
      // The marker only (the append format reads no value either): the hint is the If-Match.
      if (listFormat === 'cas') expect(hinted.gets).toBe(1);
      expect(await leased.getVersioned('s', 'state')).toMatchObject({ value: { n: 1 }, revision: 2 });
      // Without the revision it saw, the commit reads the value for it: one HEAD more.
      const seen = await leased.getVersioned('s', 'state');
      const unhinted = await measure(() =>
        leased.commit('s', {
          commitId: 'h1b',
          token,
          values: [{ key: 'state', value: { n: 1 }, seenVersion: seen?.version as string }],
        }),
      );
      if (listFormat === 'cas') expect(unhinted.gets).toBe(2);
      expect(unhinted.result.values[0]?.revision).toBe(3);
      // Stale (another write since): read, then written as a save without it.
      const stale = await leased.commit('s', {
        commitId: 'h2',
        token,
        values: [{ key: 'state', value: { n: 2 }, seenVersion: v.version }],
      });
      expect(stale.values[0]?.etag).toEqual(expect.any(String));
      expect(await leased.get('s', 'state')).toEqual({ n: 2 });
      // Gone (deleted since): created again, and the session exists.
      await leased.deleteKey('s', 'state', { token });
      await leased.deleteKey('s', 'other', { token });
      expect(await leased.exists('s')).toBe(false);
      await leased.commit('s', {
        commitId: 'h3',
        token,
        values: [{ key: 'state', value: { n: 3 }, seenVersion: v.version }],
      });
      expect(await leased.get('s', 'state')).toEqual({ n: 3 });
      expect(await leased.exists('s')).toBe(true);
      await expect(
        leased.commit('s', {
          commitId: 'h4',
          values: [{ key: 'x', value: 1, seenVersion: v.version, ifAbsent: true }],
        }),
      ).rejects.toBeInstanceOf(ValidationError);
    });

    it('budgets: the turn’s commit (one value with ifVersion, one append of 2) and the snapshot (one value, last: 50)', async () => {
      const { user, leased, lease, measure } = setup(listFormat);
      const items = Array.from({ length: 120 }, (_, i) => ({ role: 'user', n: i, text: 'x'.repeat(200) }));
      await user.save('s', 'state', { n: 0 });
      await user.appendList('s', 'memory', items, { expectedCount: 0 });
      const rows: string[] = [];
      const snap = await measure(() =>
        user.snapshot('s', { values: ['state'], lists: [{ key: 'memory', last: 50 }] }),
      );
      rows.push(`snapshot: ${snap.gets} GET, ${snap.trips} round trips`);
      const { etag, revision } = snap.result.values[0] as { etag: string; revision: number };
      const list = snap.result.lists[0] as { count: number; hash: string };
      const { token } = await lease('s');
      const turn = await measure(() =>
        leased.commit('s', {
          commitId: 'turn-b1',
          token,
          values: [{ key: 'state', value: { n: 1 }, ifVersion: etag, seenRevision: revision }],
          lists: [
            {
              key: 'memory',
              append: [{ n: 'a' }, { n: 'b' }],
              expectedCount: list.count,
              expectedHash: list.hash,
            },
          ],
        }),
      );
      expect(turn.error).toBeUndefined();
      rows.push(
        `commit with ifVersion: ${turn.writes} PUT-class, ${turn.gets} GET-class, ${turn.trips} round trips`,
      );
      const after = turn.result.lists[0] as { count: number; hash: string };
      const plain = await measure(() =>
        user.commit('s', {
          commitId: 'turn-b2',
          values: [{ key: 'state', value: { n: 2 } }],
          lists: [
            {
              key: 'memory',
              append: [{ n: 'c' }, { n: 'd' }],
              expectedCount: after.count,
              expectedHash: after.hash,
            },
          ],
        }),
      );
      expect(plain.error).toBeUndefined();
      rows.push(
        `commit without ifVersion: ${plain.writes} PUT-class, ${plain.gets} GET-class, ${plain.trips} round trips`,
      );
      console.log(`[${listFormat}] ${rows.join('; ')}`);
      expect(snap.lists + turn.lists + plain.lists).toBe(0);
      expect(turn.writes).toBeLessThanOrEqual(2);
      // A commit without a lease records its identity in an object of its own: +1 PUT, +1 GET.
      expect(plain.writes).toBeLessThanOrEqual(3);
      if (listFormat === 'cas') {
        expect(snap.gets).toBeLessThanOrEqual(3);
        expect(snap.trips).toBe(1);
        expect(turn.gets).toBeLessThanOrEqual(2);
        expect(plain.gets).toBeLessThanOrEqual(4);
      } else {
        // The append format reads the current log's tail after the pointer (docs/DESIGN.md).
        expect(snap.gets).toBeLessThanOrEqual(4);
        expect(snap.trips).toBeLessThanOrEqual(2);
        expect(turn.gets).toBeLessThanOrEqual(3);
        expect(plain.gets).toBeLessThanOrEqual(5);
      }
    });
  });
}

describe.runIf(onTier('servers'))('snapshot and commit on the local servers', () => {
  it('OSS front (append format): a turn, its retry, a snapshot; ifVersion is refused as unsupported', async () => {
    const driver = createOssDriver({
      bucket: inject('servers').bucket,
      endpoint: inject('servers').oss,
      ...OSS_CREDENTIALS,
    });
    const prefix = `commits-${Date.now()}-${Math.random().toString(36).slice(2)}/`;
    const user = createStateStore({ driver, prefix }).forUser('u');
    const request: CommitRequest = {
      commitId: 'oss-1',
      values: [{ key: 'v', value: { a: 1 }, ifAbsent: true }],
      lists: [{ key: 'l', append: [1, 2], expectedCount: 0, expectedHash: EMPTY_HASH }],
    };
    const result = await user.commit('s', request);
    expect(result.lists).toEqual([{ key: 'l', action: 'created', count: 2, hash: hashOf([1, 2]) }]);
    expect(await user.commit('s', request)).toEqual(result);
    const snap = await user.snapshot('s', { values: ['v'], lists: [{ key: 'l', last: 1 }] });
    expect(snap.values).toEqual([{ key: 'v', value: { a: 1 }, etag: result.values[0]?.etag, revision: 1 }]);
    expect(snap.lists).toMatchObject([{ key: 'l', items: [2], count: 2, offset: 1 }]);
    await failure(
      user.commit('s', { commitId: 'oss-2', values: [{ key: 'v', value: 2, ifVersion: 'x' }] }),
      PreconditionUnsupportedError,
    );
    await user.delete('s');
  });

  it('s3rver (CAS format): a turn with ifVersion from the snapshot, a stale precondition, the retry', async () => {
    const driver = createS3Driver(s3rverOptions());
    const prefix = `commits-${Date.now()}-${Math.random().toString(36).slice(2)}/`;
    const user = createStateStore({ driver, prefix }).forUser('u');
    await user.save('s', 'v', 0);
    const snap = await user.snapshot('s', { values: ['v'], lists: [{ key: 'l', last: 50 }] });
    const etag = (snap.values[0] as { etag: string }).etag;
    const request: CommitRequest = {
      commitId: 's3-1',
      values: [{ key: 'v', value: 1, ifVersion: etag }],
      lists: [{ key: 'l', append: ['a', 'b'], expectedCount: 0, expectedHash: EMPTY_HASH }],
    };
    const result = await user.commit('s', request);
    expect(result.lists[0]).toMatchObject({ count: 2, hash: hashOf(['a', 'b']) });
    expect(await user.commit('s', request)).toEqual(result);
    const stale = await failure(user.commit('s', { ...request, commitId: 's3-2' }), CommitPreconditionError);
    expect(stale.failures).toEqual([
      { kind: 'list', key: 'l', reason: 'count', count: 2, hash: hashOf(['a', 'b']) },
      {
        kind: 'value',
        key: 'v',
        reason: 'version',
        currentVersion: result.values[0]?.etag,
        currentRevision: 2,
      },
    ]);
    expect(await user.get('s', 'v')).toBe(1);
    await user.delete('s');
    await driver.close();
  });
});
