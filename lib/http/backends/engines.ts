/**
 * Engines of their own (STORE_BACKEND or LOCK_BACKEND = redis or mysql; docs/backends.md): their
 * store and lock on one client. The local server imports this module; the Lambda and Function
 * Compute entries import it only when the configuration names an engine, so a deployment on object
 * storage neither loads nor (on Lambda, whose bundle is split) reads ioredis or mysql2.
 */
import { type Config, enginesOf } from '../../config.js';
import { mysqlEngine } from '../../engines/mysql/index.js';
import { redisEngine } from '../../engines/redis/index.js';
import type { EngineParts } from '../app.js';

/** The engines the configuration names (undefined when the store and the lock are neither). */
export function engineFrom(config: Config): EngineParts | undefined {
  const engines = enginesOf(config);
  if (!engines.store && !engines.lock) return undefined;
  const redis = config.STORE_BACKEND === 'redis' || config.LOCK_BACKEND === 'redis';
  const mysql = config.STORE_BACKEND === 'mysql' || config.LOCK_BACKEND === 'mysql';
  return (metrics) => {
    const onRedis = redis
      ? redisEngine({
          url: config.REDIS_URL,
          clusterNodes: config.REDIS_CLUSTER_NODES,
          prefix: config.STATE_PREFIX,
          retentionDays: config.RETENTION_DAYS,
          keepAliveMs: config.KEEPALIVE_MS,
          maxValueBytes: config.MAX_VALUE_BYTES,
          metrics,
          store: config.STORE_BACKEND === 'redis',
          lock: config.LOCK_BACKEND === 'redis',
        })
      : undefined;
    const onMysql = mysql
      ? mysqlEngine({
          url: config.MYSQL_URL as string,
          retentionDays: config.RETENTION_DAYS,
          maxValueBytes: config.MAX_VALUE_BYTES,
          metrics,
          store: config.STORE_BACKEND === 'mysql',
          lock: config.LOCK_BACKEND === 'mysql',
        })
      : undefined;
    const store = onRedis?.store ?? onMysql?.store;
    const lock = onRedis?.lock ?? onMysql?.lock;
    return { ...(store ? { store } : {}), ...(lock ? { lock } : {}) };
  };
}
