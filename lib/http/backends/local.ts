/** Backends of the local server: any the configuration names. */
import { type Config, enginesOf } from '../../config.js';
import type { SessionLock } from '../../contract/lock.js';
import { createFsDriver, type FsDriver } from '../../drivers/fs.js';
import { createMemoryDriver } from '../../drivers/memory.js';
import type { ObjectStoreDriver } from '../../drivers/types.js';
import { createMemoryLock } from '../../lock/memory.js';
import type { EngineParts } from '../app.js';
import { ossDriverFrom } from './aliyun.js';
import { dynamoDbLockFrom, s3DriverFrom } from './aws.js';
import { blobDriverFrom } from './blobs.js';
import { engineFrom } from './engines.js';

/**
 * Any backend the configuration names (the local server: every SDK is there). The fs driver signs
 * URLs the local server answers itself, at `baseUrl` (`PUBLIC_URL`, else the server's own address).
 */
export function backendsFrom(
  config: Config,
  baseUrl: () => string = () => config.PUBLIC_URL ?? `http://${config.HOST}:${config.PORT}`,
): {
  driver?: FsDriver | ObjectStoreDriver;
  lock?: SessionLock;
  engine?: EngineParts;
  blobDriver?: FsDriver | ObjectStoreDriver;
} {
  // Redis and MySQL are engines of their own, store and lock (engines.ts).
  const engines = enginesOf(config);
  const driver = engines.store
    ? undefined
    : config.STORE_BACKEND === 'fs'
      ? createFsDriver({ root: config.DATA_DIR, presign: { baseUrl } })
      : config.STORE_BACKEND === 'memory'
        ? createMemoryDriver()
        : config.STORE_BACKEND === 's3'
          ? s3DriverFrom(config)
          : ossDriverFrom(config);
  const lock = engines.lock
    ? undefined
    : config.LOCK_BACKEND === 'memory'
      ? createMemoryLock()
      : dynamoDbLockFrom(config);
  const engine = engineFrom(config);
  // An engine store's workspaces and (Redis) archives: BLOB_BACKEND (blobs.ts).
  const blobDriver = blobDriverFrom(config, {
    fs: () => createFsDriver({ root: config.DATA_DIR, presign: { baseUrl } }),
    s3: s3DriverFrom,
    oss: ossDriverFrom,
  });
  return {
    ...(driver ? { driver } : {}),
    ...(lock ? { lock } : {}),
    ...(engine ? { engine } : {}),
    ...(blobDriver ? { blobDriver } : {}),
  };
}
