/** Redis servers for the engine's tests: a standalone server and a Cluster of three masters, each shared by a file. */
import { randomUUID } from 'node:crypto';
import type { MetricsSink } from '../../../lib/contract/types.js';
import { connectRedis, type RedisClient } from '../../../lib/engines/redis/client.js';
import { createRedisStateStore, type RedisStateStoreOptions } from '../../../lib/engines/redis/store.js';
import { startRedis, startRedisCluster } from '../../servers/redis.js';

export type Topology = 'standalone' | 'cluster';

/** A running topology and a client of it. */
export interface RedisUnderTest {
  readonly topology: Topology;
  readonly client: RedisClient;
  /** The standalone server's port (command counts are read there). */
  readonly port?: number;
  /** A new client of the same servers. */
  connect(): RedisClient;
  close(): Promise<void>;
}

/** Starts a topology. */
export async function startTopology(topology: Topology): Promise<RedisUnderTest> {
  if (topology === 'standalone') {
    const server = await startRedis();
    const connect = () => connectRedis({ url: server.url });
    const client = connect();
    return {
      topology,
      client,
      port: server.port,
      connect,
      close: async () => {
        client.disconnect();
        await server.close();
      },
    };
  }
  const cluster = await startRedisCluster();
  const connect = () => connectRedis({ clusterNodes: cluster.nodes });
  const client = connect();
  return {
    topology,
    client,
    connect,
    close: async () => {
      client.disconnect();
      await cluster.close();
    },
  };
}

/** A store on a fresh prefix. */
export function storeOn(
  redis: { client: RedisClient },
  options: Partial<RedisStateStoreOptions> & { metrics?: MetricsSink } = {},
) {
  return createRedisStateStore({
    client: redis.client,
    prefix: `t-${randomUUID().slice(0, 8)}/`,
    ...options,
  });
}
