/**
 * The Redis engine through Sentinel (REDIS_SENTINELS, REDIS_SENTINEL_NAME) on a master, one replica
 * and three redis-sentinel processes: the store and its lock as on a standalone server, WAIT after
 * every write in the same round trip (counted: the commands the client sends, the writes to its
 * socket, the server's own count), too few replicas answered as 503 `backend-unavailable`, and a
 * planned failover after which the client writes to the new master and lock tokens still grow. On
 * a Cluster, WAIT goes to the node that ran the script (hostile.test.ts).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackendError, FencedError } from '../../../lib/contract/errors.js';
import { EMPTY_HASH } from '../../../lib/contract/hash.js';
import type { SessionStore, TurnsOnOneEngine } from '../../../lib/contract/types.js';
import { connectRedis, type RedisClient } from '../../../lib/engines/redis/client.js';
import { createRedisLock } from '../../../lib/engines/redis/lock.js';
import { toProblem } from '../../../lib/http/problems.js';
import { commandsSince, resetCommands, startRedisSentinels } from '../../servers/redis.js';
import { storeOn } from './harness.js';

/** Counts what a client sends: commands by name (as bench/engine-bench.ts does) and writes to its socket. */
function countOn(client: Redis) {
  const target = client as unknown as { sendCommand(command: { name: string }, ...rest: unknown[]): unknown };
  const original = target.sendCommand;
  const sent: Record<string, number> = {};
  let writes = 0;
  target.sendCommand = function (this: unknown, command: { name: string }, ...rest: unknown[]) {
    sent[command.name] = (sent[command.name] ?? 0) + 1;
    return original.call(this, command, ...rest);
  };
  const socket = client.stream as unknown as { write: (...a: unknown[]) => boolean };
  const write = socket.write;
  socket.write = function (this: unknown, ...a: unknown[]) {
    writes++;
    return write.apply(this, a);
  };
  return {
    sent,
    get writes() {
      return writes;
    },
    stop() {
      target.sendCommand = original;
      socket.write = write;
    },
  };
}

/** Retries `fn` while it fails retryably (a write during a failover), at most `times`. */
async function retrying<T>(fn: () => Promise<T>, times = 300): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (error) {
      if (i >= times || !(error instanceof BackendError && error.retryable)) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

describe('the Redis engine through Sentinel, with WAIT', () => {
  let sentinel: Awaited<ReturnType<typeof startRedisSentinels>>;
  const clients: RedisClient[] = [];
  const connect = (waitReplicas: number, waitMs = 1000, url?: string) => {
    const client = connectRedis({
      sentinels: sentinel.sentinels,
      sentinelName: sentinel.name,
      waitReplicas,
      waitMs,
      ...(url ? { url } : {}),
    });
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    sentinel = await startRedisSentinels();
  });
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await sentinel?.close();
  });

  it('the store and its lock work through Sentinel: an append, a two-call turn, a lock (in the database REDIS_URL names)', async () => {
    // With Sentinels, REDIS_URL gives only the credentials, the database and TLS: not its host.
    const client = connect(1, 1000, 'redis://not-this-host.invalid:1/3');
    const lock = createRedisLock({ client, prefix: 'sen/' });
    const store = storeOn({ client }, { prefix: 'sen/', authority: lock });
    const alice = store.forUser('alice') as SessionStore & TurnsOnOneEngine;
    const appended = await alice.appendList('s1', 'm', [{ n: 1 }], {
      expectedCount: 0,
      expectedHash: EMPTY_HASH,
    });
    expect(appended).toMatchObject({ action: 'created', count: 1 });
    const begun = alice.beginTurn('s1', { leaseMs: 60_000 }, { values: ['plan'], lists: [{ key: 'm' }] });
    if (!begun) throw new Error('no one-script turn with the Redis lock');
    const { lease, snapshot } = await begun;
    expect(snapshot.lists[0]).toMatchObject({ count: 1 });
    const committed = alice.commitAndRelease(
      's1',
      {
        commitId: 'c1',
        token: lease.token,
        values: [{ key: 'plan', value: { step: 1 } }],
        lists: [{ key: 'm', append: [{ n: 2 }], expectedCount: 1, expectedHash: appended.hash }],
      },
      lease.owner,
    );
    await committed;
    expect(await alice.get('s1', 'plan')).toEqual({ step: 1 });
    expect((await alice.getList('s1', 'm')).items).toEqual([{ n: 1 }, { n: 2 }]);
    const held = await lock.acquire({ userId: 'alice', sessionId: 's1' }, { leaseMs: 60_000 });
    expect(held.token).toBeGreaterThan(lease.token);
    expect((await lock.holderOf({ userId: 'alice', sessionId: 's1' }))?.owner).toBe(held.owner);
    const inDb = async (db: number) => {
      const direct = new Redis({ host: '127.0.0.1', port: await sentinel.masterPort(), db });
      try {
        return await direct.dbsize();
      } finally {
        direct.disconnect();
      }
    };
    expect(await inDb(3)).toBeGreaterThan(0);
    expect(await inDb(0)).toBe(0);
  });

  it('WAIT 1 with the replica up: a save is one round trip (EVALSHA and WAIT in one write), counted at the master too', async () => {
    const client = connect(1) as Redis;
    const store = storeOn({ client });
    const alice = store.forUser('alice');
    await alice.save('s2', 'k', 0); // the script is loaded (EVAL on a new socket) and the session made
    const master = await sentinel.masterPort();
    await resetCommands(master);
    const count = countOn(client);
    await alice.save('s2', 'k', 1);
    count.stop();
    expect(count.sent).toEqual({ evalsha: 1, wait: 1 });
    expect(count.writes).toBe(1);
    const atServer = await commandsSince(master);
    expect((atServer.eval ?? 0) + (atServer.evalsha ?? 0)).toBe(1);
    expect(atServer.wait).toBe(1);
  });

  it('WAIT 2 with one replica: the write is answered 503 backend-unavailable, saying it may or may not be applied', async () => {
    const client = connect(2, 50);
    const store = storeOn({ client });
    const alice = store.forUser('alice');
    const refused = await alice.save('s3', 'k', 'v').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(BackendError);
    expect((refused as BackendError).retryable).toBe(true);
    expect((refused as Error).message).toMatch(/WAIT 2 50: 1 replica\(s\) acknowledged/);
    expect((refused as Error).message).toContain('may or may not have been applied');
    const { response } = toProblem(refused, 'req-1');
    expect(response.status).toBe(503);
    expect(JSON.parse(response.body ?? '{}')).toMatchObject({ code: 'backend-unavailable' });
    // What we observe: the master did apply it (WAIT does not undo a write); a read shows it.
    expect(await alice.get('s3', 'k')).toBe('v');
    // A refusal writes nothing: it is answered as such, whatever WAIT says.
    const stale = await alice.save('s3', 'k', 'w', { ifVersion: 'not-the-version' }).catch((e: unknown) => e);
    expect(stale).toMatchObject({ name: 'PreconditionFailedError' });
  });

  it('a planned failover: the client follows the new master, acknowledged writes are there, tokens still grow', async () => {
    const client = connect(1, 200);
    const lock = createRedisLock({ client, prefix: 'fo/' });
    const store = storeOn({ client }, { prefix: 'fo/', authority: lock });
    const alice = store.forUser('alice');
    const key = { userId: 'alice', sessionId: 'fo' };
    const first = await lock.acquire(key, { leaseMs: 1000 });
    const { version } = await alice.save('fo', 'k', 'before', { token: first.token });
    const oldMaster = await sentinel.masterPort();
    const newMaster = await sentinel.failover();
    expect(newMaster).not.toBe(oldMaster);
    // The first writes after the switch may fail retryably: a demoted master's READONLY (nothing
    // written), or WAIT timing out while the old master resyncs as a replica — then the grant MAY
    // have been made: a retry names the same owner, so it gets that grant back instead of a conflict.
    const second = await retrying(() =>
      lock.acquire(key, { leaseMs: 60_000, waitMs: 2000, owner: 'runner-after-failover' }),
    );
    expect(second.token).toBeGreaterThan(first.token);
    // Acknowledged by the replica (WAIT 1) before the failover: on the new master.
    expect(await alice.getVersioned('fo', 'k')).toMatchObject({ value: 'before', version });
    const stale = await alice.save('fo', 'k', 'stale', { token: first.token }).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(FencedError);
    await retrying(() => alice.save('fo', 'k', 'after', { token: second.token }));
    expect(await alice.get('fo', 'k')).toBe('after');
    const info = await (client as Redis).info('server');
    expect(info).toContain(`tcp_port:${newMaster}`);
  });
});
