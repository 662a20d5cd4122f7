/**
 * The MySQL engine (lib/engines/mysql/) on a MariaDB the test starts, and on a real MySQL when
 * MYSQL_URL is set: the store's semantics (as test/store/store-suite.ts asserts them on the object
 * store), the hostile cases (racing appenders, a stale token, a reused commit id, another user, a
 * connection killed mid-transaction), expiry, and the round trips each operation costs.
 */
import { randomUUID } from 'node:crypto';
import type mysql from 'mysql2/promise';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  AppendConflictError,
  BackendError,
  CommitMismatchError,
  CommitPreconditionError,
  FencedError,
  IdempotencyKeyReusedError,
  ListPreconditionFailedError,
  ListTooShortError,
  PreconditionFailedError,
  SessionNotFoundError,
  UnsupportedOperationError,
  ValidationError,
} from '../../lib/contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import type { SessionLock } from '../../lib/contract/lock.js';
import type { SessionStore, StoreCounter } from '../../lib/contract/types.js';
import { databaseOf, type MysqlConnection } from '../../lib/engines/mysql/connection.js';
import { createMysqlLock } from '../../lib/engines/mysql/lock.js';
import { tablesOf } from '../../lib/engines/mysql/schema.js';
import { createMysqlStateStore, type MysqlStateStore } from '../../lib/engines/mysql/store.js';
import { DAY_MS } from '../../lib/util/units.js';
import { adminConnection, type MysqlServer, mysqlTargets, openTables, type Trips } from './mysql-target.js';

const msg = (i: number) => ({ role: i % 2 ? 'assistant' : 'user', content: `message ${i}`, n: i });
const msgs = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => msg(from + i));
const sid = () => `s-${randomUUID()}`;

describe('MySQL names', () => {
  it('accepts [A-Za-z_][A-Za-z0-9_]{0,63} for tables and the database, and refuses anything else', () => {
    expect(tablesOf('agent_state_').values).toBe('`agent_state_values`');
    expect(databaseOf('mysql://u:p@127.0.0.1:3306/agent_state')).toBe('agent_state');
    for (const bad of ['1x_', 'a-b_', 'a b', 'x`;DROP', 'é_', 'a'.repeat(60)])
      expect(() => tablesOf(bad), bad).toThrow(ValidationError);
    for (const bad of ['mysql://h/bad-db', 'mysql://h/', 'postgres://h/db', 'mysql://h/a%60b'])
      expect(() => databaseOf(bad), bad).toThrow(ValidationError);
  });
});

for (const target of mysqlTargets()) {
  describe(`MySQL engine on ${target.name}`, () => {
    let server: MysqlServer;
    let conn: MysqlConnection;
    let trips: Trips;
    let admin: mysql.Connection;
    let lock: SessionLock;
    let store: MysqlStateStore;
    /** Without a lock: tokens are checked against what the rows record. */
    let plain: MysqlStateStore;
    let clock = 0;
    const counters = new Map<StoreCounter, number>();
    let alice: SessionStore;
    let bob: SessionStore;
    let unlocked: SessionStore;

    beforeAll(async () => {
      server = await target.open();
      ({ conn, trips, admin } = await openTables(server.url));
      await conn.bootstrap(); // idempotent: a second run changes nothing
      const now = () => Date.now() + clock;
      lock = createMysqlLock({ connection: conn, now });
      const metrics = {
        count: (name: StoreCounter, n = 1) => counters.set(name, (counters.get(name) ?? 0) + n),
      };
      store = createMysqlStateStore({ connection: conn, authority: lock, metrics, now, allowTruncate: true });
      plain = createMysqlStateStore({ connection: conn, now });
      alice = store.forUser('alice');
      bob = store.forUser('bob');
      unlocked = plain.forUser('carol');
    });
    afterAll(async () => {
      await admin?.end();
      await conn?.close();
      await server?.stop();
    });
    beforeEach(() => {
      trips.log.length = 0;
      trips.before = undefined;
      clock = 0;
    });

    /** The round trips made by `fn`, and how many of them were in a transaction. */
    async function counted<T>(fn: () => Promise<T>) {
      trips.log.length = 0;
      const result = await fn();
      const log = [...trips.log];
      const statements = log.flatMap((t) => t.statements);
      return {
        result,
        trips: log.length,
        statements,
        transactions: statements.filter((s) => s === 'START TRANSACTION').length,
        commits: statements.filter((s) => s === 'COMMIT').length,
      };
    }

    it('is ready, and says a missing table is a misconfiguration', async () => {
      await expect(store.checkReady()).resolves.toBeUndefined();
      const other = await openTables(server.url);
      await other.admin.query(`DROP TABLE ${other.conn.tables.sessions}`);
      const broken = createMysqlStateStore({ connection: other.conn });
      await expect(broken.checkReady()).rejects.toMatchObject({
        name: 'MisconfiguredBackendError',
        resource: 'table',
      });
      await other.admin.end();
      await other.conn.close();
    });

    // ---- values --------------------------------------------------------------------------------

    it('saves and reads values, keeps the exact JSON text, counts revisions', async () => {
      const s = sid();
      expect(await alice.get(s, 'k')).toBeUndefined();
      const { version: v1 } = await alice.save(s, 'k', { b: 1, a: [1, 2], é: 'ü' });
      expect(await alice.getVersioned(s, 'k')).toEqual({
        value: { b: 1, a: [1, 2], é: 'ü' },
        version: v1,
        revision: 1,
      });
      const row = async () =>
        (
          (await admin.query(
            `SELECT body, revision FROM ${conn.tables.values} WHERE user_id = ? AND session_id = ? AND value_key = ?`,
            [Buffer.from('alice'), Buffer.from(s), Buffer.from('k')],
          )) as unknown as [Array<{ body: string; revision: number }>]
        )[0][0];
      // Byte for byte what was sent (the JSON type would reorder the keys).
      expect(await row()).toMatchObject({ body: '{"b":1,"a":[1,2],"é":"ü"}', revision: 1 });
      const { version: v2, revision } = await alice.save(s, 'k', 2, { ifVersion: v1 });
      expect(v2).not.toBe(v1);
      expect([revision, (await row())?.revision]).toEqual([2, 2]);
      // The same content again is a write too; ifRevision is a precondition like ifVersion.
      expect((await alice.save(s, 'k', 2, { ifRevision: 2 })).revision).toBe(3);
      await expect(alice.save(s, 'k', 9, { ifRevision: 2 })).rejects.toMatchObject({
        name: 'PreconditionFailedError',
        currentRevision: 3,
      });
      expect((await alice.listKeys(s)).values.map((v) => v.revision)).toEqual([3]);
      expect((await alice.snapshot(s, { values: ['k'] })).values).toEqual([
        { key: 'k', value: 2, etag: expect.any(String), revision: 3 },
      ]);
      const committed = await alice.commit(s, { commitId: 'rev-1', values: [{ key: 'k', value: 4 }] });
      expect(committed.values[0]?.revision).toBe(4);
      await alice.deleteKey(s, 'k');
      expect(await alice.get(s, 'k')).toBeUndefined();
      expect((await alice.save(s, 'k', 3)).revision).toBe(1);
      expect((await row())?.revision).toBe(1);
    });

    it('refuses a failed condition with the current version, writing nothing', async () => {
      const s = sid();
      const { version } = await alice.save(s, 'k', 1, { ifAbsent: true });
      await expect(alice.save(s, 'k', 2, { ifAbsent: true })).rejects.toMatchObject({
        name: 'PreconditionFailedError',
        currentVersion: version,
      });
      const wrong = await alice.save(s, 'k', 3, { ifVersion: 'nope' }).catch((e: unknown) => e);
      expect(wrong).toBeInstanceOf(PreconditionFailedError);
      expect(wrong).toMatchObject({ currentVersion: version });
      await expect(alice.save(sid(), 'k', 1, { ifVersion: version })).rejects.toMatchObject({
        currentVersion: null,
      });
      expect(await alice.getVersioned(s, 'k')).toEqual({ value: 1, version, revision: 1 });
      await expect(alice.save(s, 'k', 1, { ifVersion: version, ifAbsent: true })).rejects.toThrow(
        ValidationError,
      );
    });

    // ---- lists ---------------------------------------------------------------------------------

    it('appends at the expected count and hash, pages by offset, limit and last with their base hashes', async () => {
      const s = sid();
      const all = msgs(0, 10);
      expect(await alice.appendList(s, 'l', all.slice(0, 4), { expectedCount: 0 })).toEqual({
        action: 'created',
        count: 4,
        hash: chainHash(EMPTY_HASH, all.slice(0, 4)),
      });
      const second = await alice.appendList(s, 'l', all.slice(4), {
        expectedCount: 4,
        expectedHash: chainHash(EMPTY_HASH, all.slice(0, 4)),
      });
      expect(second).toEqual({ action: 'appended', count: 10, hash: chainHash(EMPTY_HASH, all) });
      expect(await alice.getList(s, 'l')).toEqual({
        items: all,
        count: 10,
        hash: second.hash,
        offset: 0,
        baseHash: EMPTY_HASH,
      });
      expect(await alice.getList(s, 'l', { last: 3 })).toEqual({
        items: all.slice(7),
        count: 10,
        hash: second.hash,
        offset: 7,
        baseHash: chainHash(EMPTY_HASH, all.slice(0, 7)),
      });
      expect(await alice.getList(s, 'l', { offset: 2, limit: 3 })).toMatchObject({
        items: all.slice(2, 5),
        offset: 2,
        baseHash: chainHash(EMPTY_HASH, all.slice(0, 2)),
      });
      expect(await alice.getList(s, 'l', { offset: 20 })).toMatchObject({
        items: [],
        offset: 10,
        baseHash: second.hash,
      });
      expect(await alice.getList(s, 'l', { last: 50 })).toMatchObject({ items: all, offset: 0 });
      expect(await alice.getList(s, 'absent')).toEqual({
        items: [],
        count: 0,
        hash: EMPTY_HASH,
        offset: 0,
        baseHash: EMPTY_HASH,
      });
    });

    it('refuses an append at another count or hash with the list as it is, and recognises a retry', async () => {
      const s = sid();
      const first = await alice.appendList(s, 'l', msgs(0, 2), { expectedCount: 0 });
      const moved = await alice.appendList(s, 'l', [msg(9)], { expectedCount: 0 }).catch((e: unknown) => e);
      expect(moved).toBeInstanceOf(AppendConflictError);
      expect(moved).toMatchObject({ count: 2, hash: first.hash });
      await expect(
        alice.appendList(s, 'l', [msg(9)], { expectedCount: 2, expectedHash: EMPTY_HASH }),
      ).rejects.toMatchObject({ name: 'AppendConflictError', count: 2 });
      // A retry of the append that landed, with or without its hash: unchanged, nothing written.
      expect(
        await alice.appendList(s, 'l', msgs(0, 2), { expectedCount: 0, expectedHash: EMPTY_HASH }),
      ).toEqual({
        action: 'unchanged',
        count: 2,
        hash: first.hash,
      });
      expect(await alice.appendList(s, 'l', msgs(0, 2), { expectedCount: 0 })).toMatchObject({
        action: 'unchanged',
      });
      expect((await alice.getList(s, 'l')).count).toBe(2);
      expect(counters.get('appendConflicts')).toBeGreaterThanOrEqual(2);
    });

    it('replays an Idempotency-Key with the same body and refuses it with another', async () => {
      const s = sid();
      const first = await alice.appendList(s, 'l', [msg(0)], { expectedCount: 0, writeId: 'key-1' });
      await alice.appendList(s, 'l', [msg(1)], { expectedCount: 1 });
      expect(await alice.appendList(s, 'l', [msg(0)], { expectedCount: 0, writeId: 'key-1' })).toEqual(first);
      await expect(
        alice.appendList(s, 'l', [msg(5)], { expectedCount: 2, writeId: 'key-1' }),
      ).rejects.toThrow(IdempotencyKeyReusedError);
      expect((await alice.getList(s, 'l')).items).toEqual(msgs(0, 2));
    });

    it('saves whole lists (unchanged, appended, archived rewrite) and truncates with an archive of the cut', async () => {
      const s = sid();
      const all = msgs(0, 6);
      expect(await alice.saveList(s, 'l', [])).toMatchObject({ action: 'unchanged', count: 0 });
      expect(await alice.exists(s)).toBe(false);
      expect(await alice.saveList(s, 'l', all.slice(0, 3))).toMatchObject({ action: 'created', count: 3 });
      expect(await alice.saveList(s, 'l', all.slice(0, 3))).toMatchObject({ action: 'unchanged', count: 3 });
      expect(await alice.saveList(s, 'l', all)).toMatchObject({ action: 'appended', count: 6 });
      await expect(alice.saveList(s, 'l', [msg(7)], { ifHash: EMPTY_HASH })).rejects.toMatchObject({
        name: 'ListPreconditionFailedError',
        currentHash: chainHash(EMPTY_HASH, all),
      });
      expect(await alice.saveList(s, 'l', [msg(7)])).toEqual({
        action: 'rewritten',
        count: 1,
        hash: chainHash(EMPTY_HASH, [msg(7)]),
      });
      const [rewrite] = await alice.listArchives(s, 'l');
      expect(rewrite).toMatchObject({ count: 6, hash: chainHash(EMPTY_HASH, all), offset: 0 });
      expect((await alice.getArchive(s, 'l', rewrite?.archiveId as string))?.items).toEqual(all);
      // Truncate: keep 2 of 4, the cut archived with its own count and hash, at its offset.
      await alice.saveList(s, 'l', all.slice(0, 4));
      const h4 = chainHash(EMPTY_HASH, all.slice(0, 4));
      await expect(alice.truncateList(s, 'l', { count: 2, expectedHash: EMPTY_HASH })).rejects.toThrow(
        ListPreconditionFailedError,
      );
      await expect(alice.truncateList(s, 'l', { count: 5, expectedHash: h4 })).rejects.toThrow(
        ListTooShortError,
      );
      expect(await alice.truncateList(s, 'l', { count: 4, expectedHash: h4 })).toMatchObject({
        action: 'unchanged',
      });
      const cut = await alice.truncateList(s, 'l', { count: 2, expectedHash: h4, writeId: 'cut-1' });
      expect(cut).toEqual({ action: 'truncated', count: 2, hash: chainHash(EMPTY_HASH, all.slice(0, 2)) });
      expect(await alice.truncateList(s, 'l', { count: 2, expectedHash: h4, writeId: 'cut-1' })).toEqual(cut);
      const archives = await alice.listArchives(s, 'l');
      expect(archives.at(-1)).toMatchObject({
        count: 2,
        hash: chainHash(EMPTY_HASH, all.slice(2, 4)),
        offset: 2,
      });
      expect(
        await alice.getArchive(s, 'l', archives.at(-1)?.archiveId as string, { offset: 1 }),
      ).toMatchObject({
        items: [all[3]],
        offset: 1,
        baseHash: chainHash(EMPTY_HASH, [all[2]]),
      });
      expect((await alice.getList(s, 'l')).items).toEqual(all.slice(0, 2));
      // Delete: archived whole, then gone.
      await alice.deleteList(s, 'l');
      expect((await alice.getList(s, 'l')).count).toBe(0);
      expect((await alice.listArchives(s, 'l')).at(-1)).toMatchObject({ count: 2, offset: 0 });
      expect(await alice.getArchive(s, 'l', '999999999')).toBeUndefined();
    });

    it('racing appenders at one position: exactly one wins, the others get the list as it is', async () => {
      const s = sid();
      await alice.appendList(s, 'l', [msg(0)], { expectedCount: 0 });
      const racers = await Promise.allSettled(
        Array.from({ length: 8 }, (_, i) => alice.appendList(s, 'l', [{ racer: i }], { expectedCount: 1 })),
      );
      const won = racers.filter((r) => r.status === 'fulfilled');
      expect(won).toHaveLength(1);
      for (const r of racers)
        if (r.status === 'rejected')
          expect(r.reason).toMatchObject({ name: 'AppendConflictError', count: 2 });
      const list = await alice.getList(s, 'l');
      expect(list.count).toBe(2);
      expect(list.hash).toBe(chainHash(EMPTY_HASH, list.items));
    });

    it('racing creators of one session: every write lands, none purges what another wrote', async () => {
      const s = sid();
      // Every writer reads (the session is absent for all) before any writes: a barrier on the reads.
      let reads = 0;
      let release: () => void = () => {};
      const allRead = new Promise<void>((resolve) => {
        release = resolve;
      });
      trips.before = async (trip) => {
        if (!trip.transaction) return;
        if (trip.statements[0] === 'START TRANSACTION' && ++reads === 8) release();
        if (trip.statements.includes('COMMIT')) await allRead;
      };
      await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          i % 2
            ? alice.appendList(s, `l${i}`, [i], { expectedCount: 0 })
            : alice.save(s, `v${i}`, i, { ifAbsent: true }),
        ),
      );
      const keys = await alice.listKeys(s);
      expect(keys.values.map((v) => v.key)).toEqual(['v0', 'v2', 'v4', 'v6']);
      expect(keys.lists.map((l) => [l.key, l.count])).toEqual([
        ['l1', 1],
        ['l3', 1],
        ['l5', 1],
        ['l7', 1],
      ]);
    });

    // ---- keys, sessions, users -----------------------------------------------------------------

    it('lists keys in UTF-8 byte order, a page at a time, values and lists together', async () => {
      const s = sid();
      for (const key of ['b', 'a-b', 'é', 'Z', 'a']) await alice.save(s, key, key);
      await alice.appendList(s, 'a', [1], { expectedCount: 0 });
      await alice.appendList(s, 'm', [1, 2], { expectedCount: 0 });
      const first = await alice.listKeys(s, { limit: 3 });
      expect([...first.values.map((v) => v.key)]).toEqual(['Z', 'a', 'a-b']);
      expect(first.lists).toMatchObject([{ key: 'a', count: 1 }]);
      const second = await alice.listKeys(s, { limit: 3, cursor: first.nextCursor as string });
      expect(second.values.map((v) => v.key)).toEqual(['b', 'é']);
      expect(second.lists.map((l) => l.key)).toEqual(['m']);
      expect(second.nextCursor).toBeUndefined();
      expect((await alice.listKeys(s, { prefix: 'a' })).values.map((v) => v.key)).toEqual(['a', 'a-b']);
      expect((await alice.listKeys(s)).values[0]).toMatchObject({ key: 'Z', size: 3 });
      await expect(alice.listKeys(sid())).rejects.toThrow(SessionNotFoundError);
    });

    it("keeps users apart: another user's session is absent for every read and untouched by their writes", async () => {
      const s = sid();
      await alice.save(s, 'k', 'alice');
      await alice.appendList(s, 'l', [1], { expectedCount: 0 });
      expect(await bob.get(s, 'k')).toBeUndefined();
      expect(await bob.exists(s)).toBe(false);
      expect((await bob.getList(s, 'l')).count).toBe(0);
      expect(await bob.snapshot(s, { values: ['k'] })).toEqual({ exists: false, values: [], lists: [] });
      await expect(bob.listKeys(s)).rejects.toThrow(SessionNotFoundError);
      expect((await bob.listSessionIds()).sessions.map((x) => x.sessionId)).not.toContain(s);
      await bob.save(s, 'k', 'bob');
      await bob.delete(s);
      expect(await alice.get(s, 'k')).toBe('alice');
      expect((await alice.listSessionIds()).sessions.map((x) => x.sessionId)).toContain(s);
    });

    it('lists, empties and deletes sessions', async () => {
      const user = store.forUser(`u-${randomUUID()}`);
      const ids = ['s-c', 's-a', 's-b'];
      for (const s of ids) await user.save(s, 'k', 1);
      const page = await user.listSessionIds({ limit: 2 });
      expect(page.sessions.map((x) => x.sessionId)).toEqual(['s-a', 's-b']);
      const rest = await user.listSessionIds({ limit: 2, cursor: page.nextCursor as string });
      expect(rest).toMatchObject({ sessions: [{ sessionId: 's-c' }], nextCursor: null });
      await expect(user.listSessionIds({ cursor: 'not*a*cursor' })).rejects.toThrow(ValidationError);
      // Emptied by its last key's delete: no longer a session; a new key brings it back.
      await user.deleteKey('s-a', 'k');
      expect(await user.exists('s-a')).toBe(false);
      await user.save('s-a', 'k2', 1);
      expect(await user.exists('s-a')).toBe(true);
      await user.delete('s-b');
      expect(await user.exists('s-b')).toBe(false);
      expect(await user.get('s-b', 'k')).toBeUndefined();
      await user.delete('s-b'); // idempotent
      await user.deleteAllSessions();
      expect((await user.listSessionIds()).sessions).toEqual([]);
    });

    it('expires a session after the retention, and sweeps it by its indexed expiry', async () => {
      const s = sid();
      await alice.save(s, 'k', 1);
      await alice.appendList(s, 'l', [1], { expectedCount: 0 });
      clock = 31 * DAY_MS;
      expect(await alice.exists(s)).toBe(false);
      expect(await alice.get(s, 'k')).toBeUndefined();
      expect((await alice.getList(s, 'l')).count).toBe(0);
      // A new session under the id starts empty (what the expired one left is purged first).
      await alice.save(s, 'other', 1);
      expect((await alice.listKeys(s)).values.map((v) => v.key)).toEqual(['other']);
      clock = 62 * DAY_MS;
      expect(await store.sweepExpired(1000)).toBeGreaterThanOrEqual(1);
      const [rows] = (await admin.query(
        `SELECT COUNT(*) AS n FROM ${conn.tables.values} WHERE session_id = ?`,
        [Buffer.from(s)],
      )) as unknown as [Array<{ n: number }>];
      expect(Number(rows[0]?.n)).toBe(0);
      const [plan] = (await admin.query(
        `EXPLAIN SELECT user_id, session_id FROM ${conn.tables.sessions} WHERE expires_at < NOW() ORDER BY expires_at LIMIT 100`,
      )) as unknown as [Array<{ key: string | null; type: string }>];
      expect(plan[0]?.type).not.toBe('ALL');
    });

    // ---- snapshots and commits -----------------------------------------------------------------

    it('snapshots values, a value page and the last items of lists in one SELECT', async () => {
      const s = sid();
      await alice.save(s, 'a', 1);
      await alice.save(s, 'p:1', 'one');
      await alice.save(s, 'p:2', 'two');
      await alice.save(s, 'p:3', 'three');
      await alice.appendList(s, 'l', msgs(0, 5), { expectedCount: 0 });
      const {
        result,
        trips: n,
        statements,
      } = await counted(() =>
        alice.snapshot(s, {
          values: ['a', 'missing', 'p:1'],
          lists: [{ key: 'l', last: 2 }, { key: 'none' }],
          valuePage: { prefix: 'p:', limit: 2 },
        }),
      );
      expect(n).toBe(1);
      expect(statements).toHaveLength(1);
      expect(result.exists).toBe(true);
      expect(result.values).toEqual([
        { key: 'a', value: 1, etag: expect.any(String), revision: 1 },
        { key: 'missing', absent: true },
        { key: 'p:1', value: 'one', etag: expect.any(String), revision: 1 },
        { key: 'p:2', value: 'two', etag: expect.any(String), revision: 1 },
      ]);
      expect(result.nextCursor).toBeDefined();
      expect(result.lists).toEqual([
        {
          key: 'l',
          items: msgs(3, 5),
          count: 5,
          hash: chainHash(EMPTY_HASH, msgs(0, 5)),
          offset: 3,
          baseHash: chainHash(EMPTY_HASH, msgs(0, 3)),
        },
        { key: 'none', items: [], count: 0, hash: EMPTY_HASH, offset: 0, baseHash: EMPTY_HASH },
      ]);
      const next = await alice.snapshot(s, {
        valuePage: { prefix: 'p:', limit: 2, cursor: result.nextCursor },
      });
      expect(next.values.map((v) => v.key)).toEqual(['p:3']);
      expect(next.nextCursor).toBeUndefined();
    });

    it('commits atomically across keys: one failing precondition writes nothing at all', async () => {
      const s = sid();
      const { version } = await alice.save(s, 'v', 1);
      await alice.appendList(s, 'l', [msg(0)], { expectedCount: 0 });
      const h1 = chainHash(EMPTY_HASH, [msg(0)]);
      const failed = await alice
        .commit(s, {
          commitId: 'c-fail',
          values: [
            { key: 'v', value: 2, ifVersion: version },
            { key: 'w', value: 'new' },
          ],
          lists: [
            { key: 'l', append: [msg(1)], expectedCount: 1, expectedHash: h1 },
            { key: 'm', append: [msg(1)], expectedCount: 3, expectedHash: EMPTY_HASH },
          ],
        })
        .catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(CommitPreconditionError);
      expect(failed).toMatchObject({
        status: 409,
        failures: [{ kind: 'list', key: 'm', reason: 'count', count: 0, hash: EMPTY_HASH }],
      });
      expect(await alice.getVersioned(s, 'v')).toEqual({ value: 1, version, revision: 1 });
      expect(await alice.get(s, 'w')).toBeUndefined();
      expect((await alice.getList(s, 'l')).count).toBe(1);
      const stale = await alice
        .commit(s, { commitId: 'c-v', values: [{ key: 'v', value: 3, ifVersion: 'other' }] })
        .catch((e: unknown) => e);
      expect(stale).toMatchObject({
        name: 'CommitPreconditionError',
        status: 412,
        failures: [{ kind: 'value', key: 'v', reason: 'version', currentVersion: version }],
      });
      const ok = await alice.commit(s, {
        commitId: 'c-ok',
        values: [
          { key: 'v', value: 2, ifVersion: version },
          { key: 'w', value: 'new' },
          { key: 'gone', delete: true },
        ],
        lists: [
          { key: 'l', append: [msg(1)], expectedCount: 1, expectedHash: h1 },
          { key: 'r', replace: [1, 2, 3] },
        ],
      });
      expect(ok.lists).toEqual([
        { key: 'l', action: 'appended', count: 2, hash: chainHash(EMPTY_HASH, msgs(0, 2)) },
        { key: 'r', action: 'created', count: 3, hash: chainHash(EMPTY_HASH, [1, 2, 3]) },
      ]);
      expect(ok.values.map((v) => v.key)).toEqual(['v', 'w', 'gone']);
      expect(await alice.get(s, 'w')).toBe('new');
      expect(await alice.getVersioned(s, 'v')).toEqual({
        value: 2,
        version: ok.values[0]?.etag,
        revision: 2,
      });
    });

    it('answers a replayed commitId with the same answer, and refuses it with another body', async () => {
      const s = sid();
      const request = {
        commitId: 'turn-1',
        values: [{ key: 'v', value: { n: 1 } }],
        lists: [{ key: 'l', append: [msg(0)], expectedCount: 0, expectedHash: EMPTY_HASH }],
      };
      const first = await alice.commit(s, request);
      await alice.appendList(s, 'l', [msg(1)], { expectedCount: 1 });
      expect(await alice.commit(s, request)).toEqual(first);
      expect((await alice.getList(s, 'l')).count).toBe(2);
      const other = await alice
        .commit(s, { ...request, values: [{ key: 'v', value: { n: 2 } }] })
        .catch((e: unknown) => e);
      expect(other).toBeInstanceOf(CommitMismatchError);
      expect(other).toMatchObject({ kind: 'commit', commitId: 'turn-1' });
      expect(await alice.get(s, 'v')).toEqual({ n: 1 });
    });

    // ---- fencing -------------------------------------------------------------------------------

    it('fences a stale token: below a newer lease, or not granted, writes nothing', async () => {
      const s = sid();
      const key = { userId: 'alice', sessionId: s };
      const old = await lock.acquire(key, { owner: 'agent-1', leaseMs: 5000 });
      await alice.save(s, 'v', 'one', { token: old.token });
      await lock.release(key, 'agent-1', old.token);
      const fresh = await lock.acquire(key, { owner: 'agent-2' });
      expect(fresh.token).toBeGreaterThan(old.token);
      const stale = await alice.save(s, 'v', 'stale', { token: old.token }).catch((e: unknown) => e);
      expect(stale).toBeInstanceOf(FencedError);
      expect(stale).toMatchObject({ token: old.token, seen: fresh.token });
      await expect(alice.appendList(s, 'l', [1], { expectedCount: 0, token: old.token })).rejects.toThrow(
        FencedError,
      );
      await expect(
        alice.commit(s, { commitId: 'c-stale', token: old.token, values: [{ key: 'v', value: 'x' }] }),
      ).rejects.toThrow(FencedError);
      await expect(alice.delete(s, { token: old.token })).rejects.toThrow(FencedError);
      await expect(alice.save(s, 'v', 'x', { token: fresh.token + 1 })).rejects.toMatchObject({ seen: null });
      expect(await alice.get(s, 'v')).toBe('one');
      await alice.save(s, 'v', 'two', { token: fresh.token });
      expect(await alice.get(s, 'v')).toBe('two');
      expect(counters.get('fencedWrites')).toBeGreaterThanOrEqual(5);
      // Without a lock, what the rows record fences: the session's and the value's tokens.
      const u = sid();
      await unlocked.save(u, 'v', 1, { token: 10 });
      await expect(unlocked.save(u, 'v', 2, { token: 5 })).rejects.toMatchObject({ token: 5, seen: 10 });
      await expect(unlocked.appendList(u, 'l', [1], { expectedCount: 0, token: 9 })).rejects.toThrow(
        FencedError,
      );
      await unlocked.delete(u, { token: 11 });
      await expect(unlocked.save(u, 'v', 3, { token: 10 })).rejects.toThrow(FencedError);
      // A delete without a token keeps the token the session recorded (a tombstone).
      const w = sid();
      await unlocked.save(w, 'v', 1, { token: 20 });
      await unlocked.delete(w);
      expect(await unlocked.exists(w)).toBe(false);
      await expect(unlocked.save(w, 'v', 2, { token: 19 })).rejects.toMatchObject({ seen: 20 });
      await unlocked.save(w, 'v', 3);
      expect(await unlocked.get(w, 'v')).toBe(3);
    });

    // ---- a connection killed mid-transaction -----------------------------------------------------

    it('a connection killed between the reads and the writes leaves nothing half-written; the retry lands once', async () => {
      const s = sid();
      await alice.appendList(s, 'l', msgs(0, 2), { expectedCount: 0 });
      const h2 = chainHash(EMPTY_HASH, msgs(0, 2));
      const killOnCommit = () => {
        let killed = false;
        trips.before = async (trip) => {
          if (!killed && trip.transaction && trip.statements.includes('COMMIT')) {
            killed = true;
            await admin.query(`KILL CONNECTION ${trip.connectionId}`);
          }
        };
      };
      killOnCommit();
      const request = {
        commitId: 'c-killed',
        values: [{ key: 'v', value: 1 }],
        lists: [{ key: 'l', append: msgs(2, 4), expectedCount: 2, expectedHash: h2 }],
      };
      const lost = await alice.commit(s, request).catch((e: unknown) => e);
      expect(lost).toBeInstanceOf(BackendError);
      expect(lost).toMatchObject({ retryable: true });
      expect(await alice.get(s, 'v')).toBeUndefined();
      expect(await alice.getList(s, 'l')).toMatchObject({ count: 2, hash: h2 });
      const done = await alice.commit(s, request);
      expect(await alice.commit(s, request)).toEqual(done);
      expect((await alice.getList(s, 'l')).items).toEqual(msgs(0, 4));
      killOnCommit();
      await expect(alice.appendList(s, 'l', [msg(4)], { expectedCount: 4, writeId: 'k-1' })).rejects.toThrow(
        BackendError,
      );
      expect((await alice.getList(s, 'l')).count).toBe(4);
      expect(await alice.appendList(s, 'l', [msg(4)], { expectedCount: 4, writeId: 'k-1' })).toMatchObject({
        action: 'appended',
        count: 5,
      });
    });

    it('replaces pooled connections the server closed while idle: the next read and write succeed', async () => {
      const s = sid();
      await Promise.all([alice.save(s, 'a', 1), alice.save(sid(), 'b', 2), alice.get(s, 'a')]);
      const [idle] = (await admin.query(
        "SELECT ID AS id FROM information_schema.PROCESSLIST WHERE USER = CURRENT_USER() OR USER = SUBSTRING_INDEX(CURRENT_USER(), '@', 1)",
      )) as unknown as [Array<{ id: number }>];
      const [[mine]] = (await admin.query('SELECT CONNECTION_ID() AS id')) as unknown as [
        Array<{ id: number }>,
      ];
      const others = idle.filter((r) => r.id !== mine?.id);
      expect(others.length).toBeGreaterThan(0);
      for (const { id } of others) await admin.query(`KILL CONNECTION ${id}`);
      expect(await alice.get(s, 'a')).toBe(1);
      await alice.save(s, 'a', 2);
      expect(await alice.get(s, 'a')).toBe(2);
    });

    it('a server killed with SIGKILL mid-load and restarted loses no acknowledged append; every list stays whole', async () => {
      if (!server.crashAndRestart) return; // a server this test did not start is not crashed
      const s = sid();
      const acked = new Map<string, unknown[]>();
      let stop = false;
      const writer = async (key: string) => {
        const items: unknown[] = [];
        acked.set(key, items);
        while (!stop) {
          const item = { key, n: items.length };
          try {
            await alice.appendList(s, key, [item], { expectedCount: items.length });
            items.push(item);
          } catch {
            return; // the server is gone: what was acknowledged is what counts
          }
        }
      };
      const writers = ['w1', 'w2', 'w3', 'w4'].map(writer);
      while ([...acked.values()].reduce((n, items) => n + items.length, 0) < 80)
        await new Promise((resolve) => setTimeout(resolve, 5));
      const crashed = server.crashAndRestart();
      await Promise.all(writers);
      stop = true;
      await crashed;
      // The test's own connection died with the server too.
      await admin.end().catch(() => {});
      admin = await adminConnection(server.url);
      for (const [key, items] of acked) {
        let list: Awaited<ReturnType<SessionStore['getList']>> | undefined;
        // The pool's connections to the crashed server are dropped as they fail.
        for (let attempt = 0; !list && attempt < 20; attempt++)
          list = await alice.getList(s, key).catch(() => undefined);
        expect(list?.items.slice(0, items.length)).toEqual(items);
        // An append in flight at the crash landed whole or not at all.
        expect(list?.count).toBeGreaterThanOrEqual(items.length);
        expect(list?.count).toBeLessThanOrEqual(items.length + 1);
        expect(list?.hash).toBe(chainHash(EMPTY_HASH, list?.items ?? []));
      }
    });

    // ---- what each operation costs -------------------------------------------------------------

    it('costs: append ≤ 3 round trips, last: 50 one SELECT, conditional save ≤ 3, a turn ≤ 2 transactions + 2 lease statements', async () => {
      const s = sid();
      const items = msgs(0, 2000);
      await alice.saveList(s, 'l', items);
      const h = chainHash(EMPTY_HASH, items);
      const withHash = await counted(() =>
        alice.appendList(s, 'l', [msg(2000)], { expectedCount: 2000, expectedHash: h }),
      );
      // The budget is 3 round trips including COMMIT; the engine needs 2 (docs/backends.md).
      expect(withHash.trips).toBeLessThanOrEqual(3);
      expect(withHash.trips).toBe(2);
      expect(withHash.transactions).toBe(1);
      expect(withHash.commits).toBe(1);
      const without = await counted(() => alice.appendList(s, 'l', [msg(2001)], { expectedCount: 2001 }));
      expect(without.trips).toBeLessThanOrEqual(3);
      expect(without.transactions).toBe(1);
      const last = await counted(() => alice.getList(s, 'l', { last: 50 }));
      expect(last.trips).toBe(1);
      expect(last.statements).toHaveLength(1);
      expect(last.statements[0]).toMatch(/^SELECT/);
      expect(last.result.items).toHaveLength(50);
      expect(last.result.baseHash).toBe(
        chainHash(EMPTY_HASH, [...items, msg(2000), msg(2001)].slice(0, 1952)),
      );
      const { version } = await alice.save(s, 'v', 1);
      const save = await counted(() => alice.save(s, 'v', 2, { ifVersion: version }));
      expect(save.trips).toBe(2);
      expect(save.transactions).toBe(1);
      // The turn: lease + snapshot (2 values, last 50), then commit (2 values, 2 items) + release.
      const key = { userId: 'alice', sessionId: s };
      const turn = await counted(async () => {
        const lease = await lock.acquire(key);
        const snap = await alice.snapshot(s, { values: ['v', 'w'], lists: [{ key: 'l', last: 50 }] });
        const l = snap.lists[0] as { count: number; hash: string };
        const v = snap.values[0] as { etag: string };
        await alice.commit(s, {
          commitId: `turn-${randomUUID()}`,
          token: lease.token,
          values: [
            { key: 'v', value: 3, ifVersion: v.etag },
            { key: 'w', value: 'w' },
          ],
          lists: [{ key: 'l', append: [msg(1), msg(2)], expectedCount: l.count, expectedHash: l.hash }],
        });
        await lock.release(key, lease.owner, lease.token);
      });
      const leaseStatements = turn.statements.filter((x) => x.includes(conn.tables.leases));
      expect(turn.transactions).toBeLessThanOrEqual(2);
      expect(turn.transactions).toBe(1);
      // Outside the transactions: the acquire and the release (the commit reads the lease row inside its own).
      expect(leaseStatements.filter((x) => !x.includes('LOCK IN SHARE MODE'))).toHaveLength(2);
      expect(turn.trips).toBe(5);
      expect((await alice.getList(s, 'l')).count).toBe(2004);
    });

    it('sends and receives bytes per append in proportion to the items, not to the list', async () => {
      const traffic = async () => {
        const [rows] = (await admin.query(
          "SHOW GLOBAL STATUS WHERE Variable_name IN ('Bytes_received', 'Bytes_sent')",
        )) as unknown as [Array<{ Value: string }>];
        return rows.reduce((n, r) => n + Number(r.Value), 0);
      };
      const bytesOfAppend = async (length: number) => {
        const s = sid();
        const r = await alice.saveList(s, 'l', msgs(0, length));
        const before = await traffic();
        await alice.appendList(s, 'l', [msg(length)], { expectedCount: r.count, expectedHash: r.hash });
        return (await traffic()) - before;
      };
      const short = await bytesOfAppend(10);
      const long = await bytesOfAppend(2000);
      expect(short).toBeGreaterThan(0);
      // The same statements and rows either way (a position's digits more, and the SHOW's own bytes).
      expect(Math.abs(long - short)).toBeLessThan(200);
    });

    it('answers workspaces and direct uploads as unsupported, naming BLOB_BACKEND', async () => {
      const s = sid();
      const refused = await alice
        .createWorkspaceUpload(s, 'ws', { size: 1, md5: 'x' })
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(UnsupportedOperationError);
      expect((refused as Error).message).toContain('BLOB_BACKEND');
      await expect(alice.createValueUpload(s, 'k', { size: 1, md5: 'x' })).rejects.toThrow(
        UnsupportedOperationError,
      );
      await expect(alice.listWorkspaces(s)).rejects.toThrow(UnsupportedOperationError);
      expect(await alice.locateValue(s, 'k')).toBeUndefined();
      expect(store.capabilities).toMatchObject({ atomicCommits: true, presignedTransfer: false });
    });

    it('truncates every session only when allowed', async () => {
      expect(plain.truncateAllSessions).toBeUndefined();
      const s = sid();
      await alice.save(s, 'k', 1);
      await store.truncateAllSessions?.();
      expect(await alice.exists(s)).toBe(false);
    });
  });
}
