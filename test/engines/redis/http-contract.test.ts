/**
 * The HTTP contract suites (test/http/*-suite.ts: routes, turns, the write path, revisions, keys
 * and truncate) on the Redis engine, standalone and a Cluster of three masters, with the store and
 * the lock on the engine (STORE_BACKEND=redis, LOCK_BACKEND=redis: one client, fencing inside the
 * store's scripts), through each adapter (local node:http, API Gateway v2 events, FC 3 events).
 * Each API gets a prefix of its own on the file's servers.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { createRedisLock } from '../../../lib/engines/redis/lock.js';
import { createRedisStateStore, REDIS_CAPABILITIES } from '../../../lib/engines/redis/store.js';
import { type ContractBackend, contractHarnesses } from '../../http/harness.js';
import { keysTruncateSuite } from '../../http/keys-truncate-suite.js';
import { revisionsSuite } from '../../http/revisions-suite.js';
import { routesSuite } from '../../http/routes-suite.js';
import { turnsSuite } from '../../http/turns-suite.js';
import { writePathSuite } from '../../http/write-path-suite.js';
import { type RedisUnderTest, startTopology, type Topology } from './harness.js';

const running = new Map<Topology, RedisUnderTest>();
beforeAll(async () => {
  for (const topology of ['standalone', 'cluster'] as const)
    running.set(topology, await startTopology(topology));
});
afterAll(async () => {
  for (const redis of running.values()) await redis.close();
});

/** The engine as lib/engines/redis/index.ts wires it (the lock the store's authority), on a fresh prefix. */
const redisBackend = (topology: Topology): ContractBackend => ({
  name: `redis ${topology}`,
  capabilities: REDIS_CAPABILITIES,
  deleteFaults: false,
  make: async (options = {}) => {
    const redis = running.get(topology);
    if (!redis) throw new Error(`redis ${topology} is not running`);
    const { client } = redis;
    const prefix = `h-${randomUUID().slice(0, 8)}/`;
    const lock = createRedisLock({ client, prefix, ...(options.now ? { now: options.now } : {}) });
    return {
      parts: {
        engine: (metrics) => ({
          store: createRedisStateStore({ client, prefix, metrics, authority: lock }),
          lock,
        }),
      },
      lock,
      close: async () => {},
    };
  },
});

for (const topology of ['standalone', 'cluster'] as const) {
  for (const h of contractHarnesses(redisBackend(topology))) {
    routesSuite(h);
    turnsSuite(h);
    writePathSuite(h);
    revisionsSuite(h);
    keysTruncateSuite(h);
  }
}
