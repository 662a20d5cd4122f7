/**
 * The Redis engine as a deployment configures it (docs/backends.md, "Redis"): one client, the
 * store over it and, with the lock on the same engine, the lock whose key the store's scripts
 * read (fencing inside the scripts, no extra round trip).
 */

import type { BlobStore } from '../../contract/blobs.js';
import type { SessionLock } from '../../contract/lock.js';
import type { MetricsSink, StateStore } from '../../contract/types.js';
import { connectRedis, type RedisClient, type RedisConnection } from './client.js';
import { createRedisLock } from './lock.js';
import { createRedisStateStore } from './store.js';

export {
  checkRedisServer,
  connectRedis,
  DEFAULT_WAIT_MS,
  type IoRedis,
  loadScripts,
  type RedisClient,
  type RedisConnection,
  type RedisServerFacts,
} from './client.js';
export { createRedisLock, type RedisLockOptions } from './lock.js';
export { createRedisStateStore, REDIS_CAPABILITIES, type RedisStateStoreOptions } from './store.js';

/** What a deployment of Redis needs. */
export interface RedisEngineOptions extends RedisConnection {
  readonly prefix: string;
  readonly retentionDays: number;
  readonly keepAliveMs: number;
  readonly maxValueBytes: number;
  readonly metrics: MetricsSink;
  /** Where the store keeps workspaces and snapshots (BLOB_BACKEND; lib/contract/blobs.ts). */
  readonly blobs?: BlobStore;
  /** Make the store (STORE_BACKEND=redis). */
  readonly store: boolean;
  /** Make the lock (LOCK_BACKEND=redis). */
  readonly lock: boolean;
}

/** The client, and the store and lock asked for, on it. */
export function redisEngine(options: RedisEngineOptions): {
  client: RedisClient;
  store?: StateStore;
  lock?: SessionLock;
} {
  const client = connectRedis(options);
  const lock = options.lock
    ? createRedisLock({ client, prefix: options.prefix, retentionDays: options.retentionDays })
    : undefined;
  const store = options.store
    ? createRedisStateStore({
        client,
        prefix: options.prefix,
        retentionDays: options.retentionDays,
        keepAliveMs: options.keepAliveMs,
        maxValueBytes: options.maxValueBytes,
        metrics: options.metrics,
        ...(lock ? { authority: lock } : {}),
        ...(options.blobs ? { blobs: options.blobs } : {}),
      })
    : undefined;
  return { client, ...(store ? { store } : {}), ...(lock ? { lock } : {}) };
}
