/**
 * The blob store of an engine store (docs/DESIGN.md, "What lives where"): BLOB_BACKEND turned into
 * the driver Redis and MySQL keep workspaces, workspace snapshots and (Redis) archives on — none,
 * the S3 bucket (S3_*), the OSS bucket (OSS_*) or the local server's DATA_DIR (fs). Each entry
 * passes the drivers it bundles; the app makes the blob side's object store over the driver
 * (lib/http/app.ts, lib/engines/blobs.ts). An object store (STORE_BACKEND=fs|memory|s3|oss) keeps
 * its blobs itself: BLOB_BACKEND is then not read.
 */
import { type Config, enginesOf } from '../../config.js';
import type { ObjectStoreDriver } from '../../drivers/types.js';

/** The blob drivers an entry can make (each platform bundles only its own SDKs). */
export type BlobDrivers = Partial<
  Record<Exclude<Config['BLOB_BACKEND'], 'none'>, (config: Config) => ObjectStoreDriver>
>;

/** The blob driver BLOB_BACKEND names for an engine store; undefined with `none` or an object store. */
export function blobDriverFrom(config: Config, drivers: BlobDrivers): ObjectStoreDriver | undefined {
  const backend = config.BLOB_BACKEND;
  if (backend === 'none' || !enginesOf(config).store) return undefined;
  const make = drivers[backend];
  if (!make) throw new Error(`BLOB_BACKEND=${backend} is not available on this platform`);
  return make(config);
}
