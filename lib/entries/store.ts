/**
 * `agent-state-store/store`: the state store, its types and errors, the lock's interface, errors and
 * `withLock`, and the driver interface with its errors: no driver. Each driver and each lock has a
 * subpath of its own (`agent-state-store/drivers/s3`, `…/drivers/oss`, `…/drivers/fs`,
 * `…/drivers/memory`, `…/lock/dynamodb`, `…/lock/memory`), so embedding the store with S3 never
 * loads the OSS SDK, and the reverse.
 */

export * from '../contract/errors.js';
export { chainHash, EMPTY_HASH } from '../contract/hash.js';
export { LIMITS } from '../contract/limits.js';
export * from '../contract/lock.js';
export type * from '../contract/types.js';
export type { StateStore } from '../contract/types.js';
export {
  hasWorkspacePackSweep,
  type WorkspacePackSweeper,
  type WorkspaceSweepOptions,
  type WorkspaceSweepResult,
} from '../contract/workspace-snapshots.js';
export * from '../drivers/errors.js';
export type * from '../drivers/types.js';
export * from '../lock/common.js';
export { type WithLockOptions, withLock } from '../lock/with-lock.js';
export { type VerifiedDriver, type VerifyOptions, verifiedDriver } from '../store/probe.js';
export { createStateStore, type StateStoreOptions } from '../store/store.js';
