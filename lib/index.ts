/** Package entry point: the object-storage drivers and their typed errors. */

export {
  createHttpClient,
  type HttpClientOptions,
  type HttpSessionStore,
  ListChangedError,
  PayloadTooLargeError,
  UnauthorizedError,
  type UploadWorkspaceOptions,
} from './client/index.js';
export * from './drivers/errors.js';
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
export type * from './drivers/types.js';
export { createDynamoDbLock, createLockTable, type DynamoDbLockOptions } from './lock/dynamodb.js';
export { createMemoryLock, type MemoryLockOptions } from './lock/memory.js';
export * from './lock/types.js';
export { type WithLockOptions, withLock } from './lock/with-lock.js';
export * from './store/errors.js';
export { chainHash, EMPTY_HASH } from './store/hash.js';
export { LIMITS } from './store/ids.js';
export { type VerifiedDriver, type VerifyOptions, verifiedDriver } from './store/probe.js';
export { createStateStore, type StateStore, type StateStoreOptions } from './store/store.js';
export type * from './store/types.js';
