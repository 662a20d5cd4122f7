/**
 * The one owner of what a store tells its clients it can do (`StoreCapabilities`, served at
 * `GET /v1/capabilities`): derived from its driver's own `DriverCapabilities`, never from the
 * driver's name, so every backend, present or future, answers by what it declares.
 */
import type { StoreCapabilities } from '../contract/types.js';
import type { DriverCapabilities } from '../drivers/types.js';

/** The capabilities of a store over a driver with `driver` capabilities. */
export function storeCapabilities(driver: DriverCapabilities): StoreCapabilities {
  return {
    // Every driver's objects have etags, which are the values' versions (docs/DESIGN.md).
    versioning: true,
    // Every value's object records its revision (docs/DESIGN.md, "Revisions"); on a driver without
    // conditional overwrite two racing writes may record the same one.
    revisions: true,
    conditionalOverwrite: driver.conditionalOverwrite,
    ranges: driver.ranges,
    presignedTransfer: driver.presign,
    // Object storage has no cross-key transaction: a commit is per-key atomic.
    atomicCommits: false,
  };
}
