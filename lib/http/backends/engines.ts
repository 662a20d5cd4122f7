/**
 * Engines of their own (STORE_BACKEND or LOCK_BACKEND = redis or mysql; docs/backends.md): their
 * store and lock on one client. The local server imports this module; the Lambda and Function
 * Compute entries import it only when the configuration names an engine (`loadEngine`, which also
 * imports the engine's client library, so the bundles carry it), and a deployment on object storage
 * neither evaluates nor, on Lambda, whose bundle is split, reads any of it.
 */
import type { Config } from '../../config.js';
import type { BlobStore } from '../../contract/blobs.js';
import type { MetricsSink } from '../../contract/types.js';
import { type Mysql2, mysqlEngine } from '../../engines/mysql/index.js';
import { type IoRedis, type RedisConnection, redisEngine } from '../../engines/redis/index.js';
import type { EngineParts } from '../app.js';

/** The engines' client libraries, when the caller has them (else each is loaded as an optional peer). */
export interface EngineLibraries {
  readonly ioredis?: IoRedis;
  readonly mysql2?: Mysql2;
}

/**
 * The engines the configuration names, with their client libraries imported (a bundler then bundles
 * them, behind this dynamic import); undefined when the store and the lock are neither.
 */
export async function loadEngine(config: Config): Promise<EngineParts | undefined> {
  const named = [config.STORE_BACKEND, config.LOCK_BACKEND];
  // CommonJS packages: their `module.exports` (`default`), as require gives it (ioredis's is the
  // Redis class, with Redis and Cluster on it).
  const interop = <T>(loaded: { default?: unknown }): T => (loaded.default ?? loaded) as T;
  return engineFrom(config, {
    ...(named.includes('redis') ? { ioredis: interop<IoRedis>(await import('ioredis')) } : {}),
    ...(named.includes('mysql') ? { mysql2: interop<Mysql2>(await import('mysql2/promise')) } : {}),
  });
}

/** The engines the configuration names (undefined when the store and the lock are neither). */
export function engineFrom(config: Config, libraries: EngineLibraries = {}): EngineParts | undefined {
  const redis = config.STORE_BACKEND === 'redis' || config.LOCK_BACKEND === 'redis';
  const mysql = config.STORE_BACKEND === 'mysql' || config.LOCK_BACKEND === 'mysql';
  if (!redis && !mysql) return undefined;
  return (metrics, blobs) => {
    const onRedis = redis
      ? redisEngineOf(config, metrics, { ...libraries, ...(blobs ? { blobs } : {}) })
      : undefined;
    const onMysql = mysql
      ? mysqlEngine({
          url: config.MYSQL_URL as string,
          ...(libraries.mysql2 ? { mysql2: libraries.mysql2 } : {}),
          retentionDays: config.RETENTION_DAYS,
          maxValueBytes: config.MAX_VALUE_BYTES,
          metrics,
          ...(blobs ? { blobs } : {}),
          store: config.STORE_BACKEND === 'mysql',
          lock: config.LOCK_BACKEND === 'mysql',
        })
      : undefined;
    const store = onRedis?.store ?? onMysql?.store;
    const lock = onRedis?.lock ?? onMysql?.lock;
    return { ...(store ? { store } : {}), ...(lock ? { lock } : {}) };
  };
}

/** The Redis engine the configuration names (the server's, and bootstrap's, which loads its scripts). */
export function redisEngineOf(
  config: Config,
  metrics: MetricsSink,
  extras: { readonly ioredis?: IoRedis; readonly blobs?: BlobStore } = {},
): ReturnType<typeof redisEngine> {
  return redisEngine({
    ...redisConnectionFrom(config),
    ...(extras.ioredis ? { ioredis: extras.ioredis } : {}),
    prefix: config.STATE_PREFIX,
    retentionDays: config.RETENTION_DAYS,
    keepAliveMs: config.KEEPALIVE_MS,
    maxValueBytes: config.MAX_VALUE_BYTES,
    metrics,
    ...(extras.blobs ? { blobs: extras.blobs } : {}),
    store: config.STORE_BACKEND === 'redis',
    lock: config.LOCK_BACKEND === 'redis',
  });
}

/** Where the configuration points at Redis (REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS) and its WAIT. */
export function redisConnectionFrom(config: Config): RedisConnection {
  return {
    ...(config.REDIS_URL ? { url: config.REDIS_URL } : {}),
    ...(config.REDIS_CLUSTER_NODES ? { clusterNodes: config.REDIS_CLUSTER_NODES } : {}),
    ...(config.REDIS_SENTINELS ? { sentinels: config.REDIS_SENTINELS } : {}),
    ...(config.REDIS_SENTINEL_NAME ? { sentinelName: config.REDIS_SENTINEL_NAME } : {}),
    waitReplicas: config.REDIS_WAIT_REPLICAS,
    ...(config.REDIS_WAIT_MS !== undefined ? { waitMs: config.REDIS_WAIT_MS } : {}),
  };
}
