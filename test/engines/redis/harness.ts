/** Redis servers for the engine's tests: a standalone server and a Cluster of three masters, each shared by a file. */
import { randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import type { MetricsSink } from '../../../lib/contract/types.js';
import { connectRedis, type RedisClient, type RedisConnection } from '../../../lib/engines/redis/client.js';
import { createRedisStateStore, type RedisStateStoreOptions } from '../../../lib/engines/redis/store.js';
import { startRedis, startRedisCluster } from '../../servers/redis.js';

export type Topology = 'standalone' | 'cluster';

/** A running topology and a client of it. */
export interface RedisUnderTest {
  readonly topology: Topology;
  readonly client: RedisClient;
  /** The standalone server's port (command counts are read there). */
  readonly port?: number;
  /** Every server's port (the standalone one, or the Cluster's three masters). */
  readonly ports: readonly number[];
  /** A new client of the same servers (with WAIT, when asked). */
  connect(wait?: Pick<RedisConnection, 'waitReplicas' | 'waitMs'>): RedisClient;
  /** The writes the servers have made (INFO persistence: `rdb_changes_since_last_save`, never saved here). */
  changes(): Promise<number>;
  close(): Promise<void>;
}

/** Starts a topology. */
/** The changes a server counts since its last save (every write command counts, within scripts too). */
async function changesOf(node: { info(section: string): Promise<string> }): Promise<number> {
  const info = await node.info('persistence');
  return Number(/rdb_changes_since_last_save:(\d+)/.exec(info)?.[1] ?? Number.NaN);
}

export async function startTopology(topology: Topology): Promise<RedisUnderTest> {
  if (topology === 'standalone') {
    const server = await startRedis();
    const connect = (wait = {}) => connectRedis({ url: server.url, ...wait });
    const client = connect();
    return {
      topology,
      client,
      port: server.port,
      ports: [server.port],
      connect,
      changes: () => changesOf(client as Redis),
      close: async () => {
        client.disconnect();
        await server.close();
      },
    };
  }
  const cluster = await startRedisCluster();
  const connect = (wait = {}) => connectRedis({ clusterNodes: cluster.nodes, ...wait });
  const client = connect();
  return {
    topology,
    client,
    ports: cluster.ports,
    connect,
    changes: async () =>
      (await Promise.all((client as Cluster).nodes('master').map(changesOf))).reduce((a, b) => a + b, 0),
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
