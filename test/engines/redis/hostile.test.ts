/**
 * The Redis engine under attack (standalone and a Cluster of three masters): racing appenders, a
 * stale lock holder, a reused commit id, another tenant, a connection killed mid-script; on
 * standalone, the round trips of each operation counted at the server (INFO commandstats).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AppendConflictError,
  BackendError,
  CommitMismatchError,
  CorruptValueError,
  FencedError,
  SessionNotFoundError,
} from '../../../lib/contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../../lib/contract/hash.js';
import type { SessionStore, StateStore, TurnsOnOneEngine } from '../../../lib/contract/types.js';
import type { RedisClient } from '../../../lib/engines/redis/client.js';
import { createRedisLock } from '../../../lib/engines/redis/lock.js';
import { createRedisStateStore } from '../../../lib/engines/redis/store.js';
import { commandsSince, resetCommands } from '../../servers/redis.js';
import { type RedisUnderTest, startTopology } from './harness.js';

const item = (n: number) => ({ role: n % 2 ? 'assistant' : 'user', content: `message ${n}`, n });
const items = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => item(from + i));
const sid = () => `s-${randomUUID()}`;

for (const topology of ['standalone', 'cluster'] as const) {
  describe(`Redis engine under attack, ${topology}`, () => {
    let redis: RedisUnderTest;
    let prefix: string;
    let store: StateStore;
    let alice: SessionStore;
    beforeAll(async () => {
      redis = await startTopology(topology);
      prefix = `h-${randomUUID().slice(0, 8)}/`;
      store = createRedisStateStore({ client: redis.client, prefix });
      alice = store.forUser('alice');
    });
    afterAll(() => redis.close());

    it('16 appenders on 4 connections racing at one expected count: exactly one wins each round', async () => {
      const clients: RedisClient[] = Array.from({ length: 4 }, () => redis.connect());
      try {
        const stores = clients.map((client) => createRedisStateStore({ client, prefix }).forUser('alice'));
        const s = sid();
        let count = 0;
        let hash = EMPTY_HASH;
        for (let round = 0; round < 5; round++) {
          const outcomes = await Promise.allSettled(
            Array.from({ length: 16 }, (_, i) =>
              (stores[i % 4] as SessionStore).appendList(s, 'l', [{ round, writer: i }], {
                expectedCount: count,
                expectedHash: hash,
              }),
            ),
          );
          const won = outcomes.filter((o) => o.status === 'fulfilled');
          expect(won).toHaveLength(1);
          for (const o of outcomes)
            if (o.status === 'rejected') expect(o.reason).toBeInstanceOf(AppendConflictError);
          count += 1;
          hash = (won[0] as PromiseFulfilledResult<{ hash: string }>).value.hash;
        }
        const page = await alice.getList(s, 'l');
        expect(page.count).toBe(5);
        expect(page.hash).toBe(hash);
        expect(chainHash(EMPTY_HASH, page.items)).toBe(hash);
      } finally {
        for (const c of clients) c.disconnect();
      }
    });

    it('a stale lock holder is fenced inside the scripts by every write; the new holder writes', async () => {
      const lock = createRedisLock({ client: redis.client, prefix });
      const fenced = store.forUser('alice', { authority: lock });
      const s = sid();
      const key = { userId: 'alice', sessionId: s };
      const old = await lock.acquire(key);
      await fenced.save(s, 'plan', 'by the old holder', { token: old.token });
      await lock.release(key, old.owner, old.token);
      const now = await lock.acquire(key);
      expect(now.token).toBeGreaterThan(old.token);
      const stale = { token: old.token };
      const attempts = [
        fenced.save(s, 'plan', 'stale', stale),
        fenced.save(s, 'other', 'stale', stale),
        fenced.appendList(s, 'l', [1], { expectedCount: 0, ...stale }),
        fenced.saveList(s, 'l', [1], stale),
        fenced.deleteKey(s, 'plan', stale),
        fenced.commit(s, { commitId: 'c-stale', values: [{ key: 'x', value: 1 }], ...stale }),
        fenced.delete(s, stale),
      ];
      for (const outcome of await Promise.allSettled(attempts)) {
        expect(outcome.status).toBe('rejected');
        expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(FencedError);
      }
      expect(await fenced.get(s, 'plan')).toBe('by the old holder');
      expect((await fenced.listKeys(s)).values.map((v) => v.key)).toEqual(['plan']);
      await fenced.save(s, 'plan', 'by the new holder', { token: now.token });
      expect(await fenced.get(s, 'plan')).toBe('by the new holder');
      // A token no lease holds (released) is refused too, though no higher one was ever written.
      await lock.release(key, now.owner, now.token);
      await expect(fenced.save(s, 'plan', 'after release', { token: now.token })).rejects.toBeInstanceOf(
        FencedError,
      );
    });

    it('a commitId replayed with another body is CommitMismatchError and writes nothing; the same body answers the same', async () => {
      const s = sid();
      const request = {
        commitId: 'turn-1',
        values: [{ key: 'a', value: 1 }],
        lists: [{ key: 'm', append: items(0, 2), expectedCount: 0, expectedHash: EMPTY_HASH }],
      };
      const first = await alice.commit(s, request);
      expect(await alice.commit(s, request)).toEqual(first);
      const other = await alice
        .commit(s, {
          ...request,
          values: [
            { key: 'a', value: 2 },
            { key: 'b', value: 3 },
          ],
        })
        .catch((e: unknown) => e);
      expect(other).toBeInstanceOf(CommitMismatchError);
      expect(await alice.get(s, 'a')).toBe(1);
      expect(await alice.get(s, 'b')).toBeUndefined();
      expect((await alice.getList(s, 'm')).count).toBe(2);
    });

    it("another tenant's session does not exist for anyone else, whatever the call", async () => {
      const s = sid();
      await alice.save(s, 'secret', 'alice only');
      await alice.appendList(s, 'm', [1], { expectedCount: 0 });
      const mallory = store.forUser('mallory');
      expect(await mallory.get(s, 'secret')).toBeUndefined();
      expect(await mallory.exists(s)).toBe(false);
      expect((await mallory.getList(s, 'm')).count).toBe(0);
      await expect(mallory.listKeys(s)).rejects.toBeInstanceOf(SessionNotFoundError);
      expect((await mallory.snapshot(s, { values: ['secret'] })).exists).toBe(false);
      expect((await mallory.listSessionIds()).sessions).toEqual([]);
      await mallory.delete(s);
      await mallory.save(s, 'secret', 'mallory');
      expect(await alice.get(s, 'secret')).toBe('alice only');
    });

    it('a damaged value or item is a typed error for that key only, counted; the other keys read', async () => {
      const counted: string[] = [];
      const user = createRedisStateStore({
        client: redis.client,
        prefix,
        metrics: { count: (name) => counted.push(name) },
      }).forUser('alice');
      const s = sid();
      await user.save(s, 'good', 1);
      await user.save(s, 'bad', 2);
      await user.appendList(s, 'l', [1, 2], { expectedCount: 0 });
      const base = `${prefix}{alice/${s}}:`;
      await (redis.client as unknown as { hset(k: string, f: string, v: string): Promise<number> }).hset(
        `${base}v:bad`,
        'b',
        '{broken',
      );
      await (redis.client as unknown as { lset(k: string, i: number, v: string): Promise<string> }).lset(
        `${base}l:l`,
        1,
        '[not json',
      );
      await expect(user.get(s, 'bad')).rejects.toBeInstanceOf(CorruptValueError);
      await expect(user.getList(s, 'l')).rejects.toBeInstanceOf(CorruptValueError);
      const snap = await user.snapshot(s, { values: ['good', 'bad'], lists: [{ key: 'l' }] });
      expect(snap.values).toEqual([
        { key: 'good', value: 1, etag: expect.any(String), revision: 1 },
        { key: 'bad', corrupt: true },
      ]);
      expect(snap.lists).toEqual([{ key: 'l', corrupt: true }]);
      expect(counted.filter((c) => c === 'corruptObjects').length).toBeGreaterThanOrEqual(4);
      // A save repairs the value.
      await user.save(s, 'bad', 3);
      expect(await user.get(s, 'bad')).toBe(3);
    });

    it('a connection killed mid-script leaves each commit whole or absent, never half-written', async () => {
      const victim = redis.connect();
      try {
        const writer = createRedisStateStore({ client: victim, prefix }).forUser('alice');
        const s = sid();
        const big = items(0, 1000);
        for (let round = 0; round < 12; round++) {
          const commit = writer
            .commit(s, {
              commitId: `kill-${round}`,
              values: [
                { key: `v${round}`, value: round },
                { key: `w${round}`, value: round },
              ],
              lists: [{ key: `l${round}`, replace: big }],
            })
            .catch((e: unknown) => e);
          await new Promise((r) => setTimeout(r, round % 4));
          victim.disconnect(true); // drops the socket; ioredis reconnects and may resend
          await commit;
          const [v, w, l] = await Promise.all([
            alice.get(s, `v${round}`),
            alice.get(s, `w${round}`),
            alice.getList(s, `l${round}`),
          ]);
          const whole =
            v === round && w === round && l.count === 1000 && l.hash === chainHash(EMPTY_HASH, big);
          const absent = v === undefined && w === undefined && l.count === 0;
          expect(whole || absent).toBe(true);
        }
      } finally {
        victim.disconnect();
      }
    });

    it('WAIT (REDIS_WAIT_REPLICAS) goes to the node that ran the script; with no replica it is 503 backend-unavailable', async () => {
      const waiting = redis.connect({ waitReplicas: 1, waitMs: 10 });
      try {
        const bob = createRedisStateStore({ client: waiting, prefix }).forUser('bob');
        await waiting.ping();
        for (const port of redis.ports) await resetCommands(port);
        for (const s of ['a', 'b', 'c', 'd', 'e', 'f']) {
          const refused = await bob.save(s, 'k', 1).catch((e: unknown) => e);
          expect(refused).toBeInstanceOf(BackendError);
          expect((refused as BackendError).retryable).toBe(true);
          expect((refused as Error).message).toMatch(/WAIT 1 10: 0 replica\(s\) acknowledged/);
        }
        let scripts = 0;
        for (const port of redis.ports) {
          const at = await commandsSince(port);
          const ran = (at.eval ?? 0) + (at.evalsha ?? 0);
          expect(at.wait ?? 0, `node ${port}`).toBe(ran);
          scripts += ran;
        }
        expect(scripts).toBeGreaterThanOrEqual(6);
      } finally {
        waiting.disconnect();
      }
    });
  });
}

describe('Redis round trips, counted at the server (standalone)', () => {
  let redis: RedisUnderTest;
  let store: StateStore;
  let port: number;
  beforeAll(async () => {
    redis = await startTopology('standalone');
    port = redis.port as number;
    store = createRedisStateStore({ client: redis.client, prefix: 'rt/' });
  });
  afterAll(() => redis.close());

  /**
   * The commands sent for `run` (each a round trip unless sent together), by name, as the client
   * sent them; the server's own count of script calls (INFO commandstats: a script cannot call
   * one) must agree.
   */
  async function counted(run: () => Promise<unknown>): Promise<Record<string, number>> {
    const client = redis.client as unknown as {
      sendCommand(command: { name: string }, ...rest: unknown[]): unknown;
    };
    const original = client.sendCommand;
    const sent: Record<string, number> = {};
    client.sendCommand = function (this: unknown, command: { name: string }, ...rest: unknown[]) {
      sent[command.name] = (sent[command.name] ?? 0) + 1;
      return original.call(this, command, ...rest);
    };
    await resetCommands(port);
    try {
      await run();
    } finally {
      client.sendCommand = original;
    }
    // (Redis 7 counts EVALSHA under `eval`.)
    const server = await commandsSince(port);
    expect((server.eval ?? 0) + (server.evalsha ?? 0)).toBe((sent.evalsha ?? 0) + (sent.eval ?? 0));
    return sent;
  }
  const total = (c: Record<string, number>) => Object.values(c).reduce((a, b) => a + b, 0);
  it('append with expectedHash: 1; last 50 of a 2,000-item list: 1; conditional save: 1', async () => {
    const alice = store.forUser('alice');
    const s = sid();
    // The session exists and its scripts are loaded (EVALSHA from then on).
    let list = await alice.saveList(s, 'm', items(0, 2000));
    const { version } = await alice.save(s, 'plan', 1);
    const append = await counted(async () => {
      list = await alice.appendList(s, 'm', [item(2000)], {
        expectedCount: list.count,
        expectedHash: list.hash,
      });
    });
    expect(append).toEqual({ evalsha: 1 });
    const without = await counted(() => alice.appendList(s, 'm', [item(2001)], { expectedCount: 2001 }));
    expect(total(without)).toBe(2);
    const last = await counted(async () =>
      expect((await alice.getList(s, 'm', { last: 50 })).items).toHaveLength(50),
    );
    expect(last).toEqual({ evalsha: 1 });
    const save = await counted(() => alice.save(s, 'plan', 2, { ifVersion: version }));
    expect(save).toEqual({ evalsha: 1 });
    // The time of an append stays flat in the list's length (loopback, 2 cores: a loose bound).
    let at = await alice.getList(s, 'm', { last: 1 });
    const ms: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t = performance.now();
      at = {
        ...at,
        ...(await alice.appendList(s, 'm', [item(at.count)], {
          expectedCount: at.count,
          expectedHash: at.hash,
        })),
      };
      ms.push(performance.now() - t);
    }
    const p50 = ms.sort((a, b) => a - b)[100] as number;
    console.log(`append p50 on a ${at.count}-item list: ${p50.toFixed(3)} ms`);
    expect(p50).toBeLessThan(10);
  });

  it('a two-call turn with the Redis lock: 4 round trips as separate calls, 2 as the turn routes make it', async () => {
    const lock = createRedisLock({ client: redis.client, prefix: 'rt/' });
    const alice = store.forUser('alice', { authority: lock });
    const s = sid();
    const seeded = await alice.appendList(s, 'm', items(0, 100), { expectedCount: 0 });
    await alice.save(s, 'a', 1);
    const key = { userId: 'alice', sessionId: s };
    const begin = await counted(async () => {
      const lease = await lock.acquire(key);
      await alice.snapshot(s, { values: ['a', 'b'], lists: [{ key: 'm', last: 50 }] });
      await alice.commit(s, {
        commitId: 'rt-1',
        token: lease.token,
        values: [
          { key: 'a', value: 2 },
          { key: 'b', value: 3 },
        ],
        lists: [{ key: 'm', append: items(100, 102), expectedCount: 100, expectedHash: seeded.hash }],
      });
      await lock.release(key, lease.owner, lease.token);
    });
    // Fencing is inside the commit's script: no read of the lock from Node.
    expect(begin).toEqual({ evalsha: 4 });
    // The same turn as the turn routes make it on this engine: lease + snapshot, commit + release.
    const user = alice as unknown as TurnsOnOneEngine;
    const now = await alice.getList(s, 'm', { last: 1 });
    const combined = await counted(async () => {
      const begun = await user.beginTurn(s, {}, { values: ['a', 'b'], lists: [{ key: 'm', last: 50 }] });
      if (!begun) throw new Error('not offered with the Redis lock');
      const { lease, snapshot } = await begun;
      expect(snapshot.values[0]).toMatchObject({ key: 'a', value: 2 });
      await user.commitAndRelease(
        s,
        {
          commitId: 'rt-2',
          token: lease.token,
          values: [{ key: 'a', value: 4 }],
          lists: [{ key: 'm', append: items(102, 104), expectedCount: now.count, expectedHash: now.hash }],
        },
        lease.owner,
      );
    });
    expect(combined).toEqual({ evalsha: 2 });
    expect(await lock.holderOf(key)).toBeUndefined();
    expect(await alice.get(s, 'a')).toBe(4);
    // Without the Redis lock as the authority they are not offered (the route falls back).
    expect((store.forUser('alice') as unknown as TurnsOnOneEngine).beginTurn(s, {}, {})).toBeUndefined();
  });
});
