/**
 * Package entry point (`agent-state-store`): the client, the store and every driver and lock.
 * It imports every driver, so it loads both cloud SDKs (optional peers: install them to use it);
 * import the subpaths instead to load only what you use (`agent-state-store/client`, `…/store`,
 * `…/drivers/s3`, …; see `exports` in package.json).
 */

export {
  type AcquireLockOptions,
  type CallOptions,
  type DownloadWorkspaceOptions,
  type HttpClientOptions,
  type HttpSessionStore,
  ListChangedError,
  PayloadTooLargeError,
  ProtocolError,
  RequestTimeoutError,
  UnauthorizedError,
  type UploadWorkspaceOptions,
} from './client/index.js';
// The package's root is for Node (it loads every driver): its client is the Node one.
export { createHttpClient, type NodeHttpSessionStore } from './client/node/index.js';
export { createFsDriver, type FsDriver, type FsDriverOptions } from './drivers/fs.js';
export type { FsPresignOptions } from './drivers/fs-transfer.js';
export { createMemoryDriver, type MemoryDriverOptions } from './drivers/memory.js';
export {
  createOssClient,
  createOssDriver,
  OSS_STORAGE_CLASSES,
  type OssDriverOptions,
} from './drivers/oss.js';
export { createS3Client, createS3Driver, S3_STORAGE_CLASSES, type S3DriverOptions } from './drivers/s3.js';
export * from './entries/store.js';
export { createDynamoDbLock, createLockTable, type DynamoDbLockOptions } from './lock/dynamodb.js';
export { createMemoryLock, type MemoryLockOptions } from './lock/memory.js';
