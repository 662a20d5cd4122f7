/** The lock conformance suite on the Redis lock, on a standalone server and a Cluster of three masters. */
import { randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type RedisClient } from '../../../lib/engines/redis/client.js';
import { createRedisLock } from '../../../lib/engines/redis/lock.js';
import { lockName } from '../../../lib/lock/common.js';
import { describeLockSuite } from '../../lock/lock-suite.js';
import { startRedis, startRedisCluster } from '../../servers/redis.js';

for (const topology of ['standalone', 'cluster'] as const) {
  describe(`Redis lock, ${topology}`, () => {
    let client: RedisClient;
    let close: () => Promise<void>;
    const prefix = `lock-${randomUUID().slice(0, 8)}/`;
    beforeAll(async () => {
      if (topology === 'standalone') {
        const server = await startRedis();
        client = connectRedis({ url: server.url });
        close = server.close;
      } else {
        const cluster = await startRedisCluster();
        client = connectRedis({ clusterNodes: cluster.nodes });
        close = cluster.close;
      }
    });
    afterAll(async () => {
      client.disconnect();
      await close();
    });

    describeLockSuite(`redis ${topology}`, async () => {
      const clock = { t: Date.now() };
      const make = () => createRedisLock({ client, prefix, now: () => clock.t });
      return {
        lock: make(),
        clock,
        forget: async (key) => {
          // As an eviction or a failover that lost the key would: the counter is gone.
          await (client as Redis | Cluster).del(`${prefix}{${lockName(key)}}:lock`);
          return make();
        },
      };
    });

    it('grants tokens from the server clock without a test clock: at least its TIME in ms', async () => {
      const lock = createRedisLock({ client, prefix });
      const before = Date.now();
      const lease = await lock.acquire({ userId: 'u', sessionId: `s-${randomUUID()}` });
      // Loopback: the server's clock is this machine's.
      expect(lease.token).toBeGreaterThanOrEqual(before - 5);
      expect(lease.token).toBeLessThanOrEqual(Date.now() + 5);
    });
  });
}
