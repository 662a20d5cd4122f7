/**
 * The parts of a cloud entry (Lambda, Function Compute): the engine the configuration names, imported
 * only then (engines.ts, with its client library: a split bundle keeps it out of a cold start on
 * object storage), and the platform's driver and lock for what is not the engine's.
 */
import { type Config, enginesOf } from '../../config.js';
import type { SessionLock } from '../../contract/lock.js';
import type { ObjectStoreDriver } from '../../drivers/types.js';
import type { AppParts } from '../app.js';
import { type BlobDrivers, blobDriverFrom } from './blobs.js';

/** How a platform makes its object store's driver and its lock, and which blob drivers it has. */
export interface PlatformBackends {
  readonly driver: (config: Config) => ObjectStoreDriver;
  readonly lock: (config: Config) => SessionLock;
  /** The drivers BLOB_BACKEND may name here (an engine store's blobs; blobs.ts). */
  readonly blobs: BlobDrivers;
}

/** The app's backends on a cloud platform. */
export async function cloudParts(config: Config, platform: PlatformBackends): Promise<AppParts> {
  const engines = enginesOf(config);
  const engine =
    engines.store || engines.lock ? await (await import('./engines.js')).loadEngine(config) : undefined;
  const blobDriver = blobDriverFrom(config, platform.blobs);
  return {
    ...(engines.store ? {} : { driver: platform.driver(config) }),
    ...(engines.lock ? {} : { lock: platform.lock(config) }),
    ...(blobDriver ? { blobDriver } : {}),
    engine,
  };
}
