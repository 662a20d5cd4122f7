/** Backends of the local server: any the configuration names. */
import type { Config } from '../../config.js';
import { createFsDriver } from '../../drivers/fs.js';
import { createMemoryDriver } from '../../drivers/memory.js';
import type { ObjectStoreDriver } from '../../drivers/types.js';
import { createMemoryLock } from '../../lock/memory.js';
import type { SessionLock } from '../../lock/types.js';
import { ossDriverFrom } from './aliyun.js';
import { dynamoDbLockFrom, s3DriverFrom } from './aws.js';

/** Any backend the configuration names (the local server: every SDK is there). */
export function backendsFrom(config: Config): { driver: ObjectStoreDriver; lock: SessionLock } {
  const driver =
    config.STORE_BACKEND === 'fs'
      ? createFsDriver({ root: config.DATA_DIR })
      : config.STORE_BACKEND === 'memory'
        ? createMemoryDriver()
        : config.STORE_BACKEND === 's3'
          ? s3DriverFrom(config)
          : ossDriverFrom(config);
  return { driver, lock: config.LOCK_BACKEND === 'memory' ? createMemoryLock() : dynamoDbLockFrom(config) };
}
