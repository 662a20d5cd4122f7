/** Backends of the local server: any the configuration names. */
import type { Config } from '../../config.js';
import type { SessionLock } from '../../contract/lock.js';
import { createFsDriver, type FsDriver } from '../../drivers/fs.js';
import { createMemoryDriver } from '../../drivers/memory.js';
import type { ObjectStoreDriver } from '../../drivers/types.js';
import { createMemoryLock } from '../../lock/memory.js';
import { ossDriverFrom } from './aliyun.js';
import { dynamoDbLockFrom, s3DriverFrom } from './aws.js';

/**
 * Any backend the configuration names (the local server: every SDK is there). The fs driver signs
 * URLs the local server answers itself, at `baseUrl` (`PUBLIC_URL`, else the server's own address).
 */
export function backendsFrom(
  config: Config,
  baseUrl: () => string = () => config.PUBLIC_URL ?? `http://${config.HOST}:${config.PORT}`,
): { driver?: FsDriver | ObjectStoreDriver; lock?: SessionLock } {
  // Redis and MySQL are engines of their own, store and lock: the app builds them (lib/http/app.ts).
  const driver =
    config.STORE_BACKEND === 'redis' || config.STORE_BACKEND === 'mysql'
      ? undefined
      : config.STORE_BACKEND === 'fs'
        ? createFsDriver({ root: config.DATA_DIR, presign: { baseUrl } })
        : config.STORE_BACKEND === 'memory'
          ? createMemoryDriver()
          : config.STORE_BACKEND === 's3'
            ? s3DriverFrom(config)
            : ossDriverFrom(config);
  const lock =
    config.LOCK_BACKEND === 'redis' || config.LOCK_BACKEND === 'mysql'
      ? undefined
      : config.LOCK_BACKEND === 'memory'
        ? createMemoryLock()
        : dynamoDbLockFrom(config);
  return { ...(driver ? { driver } : {}), ...(lock ? { lock } : {}) };
}
