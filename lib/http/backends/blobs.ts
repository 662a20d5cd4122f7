/**
 * The blob store of an engine store (docs/DESIGN.md, "What lives where"): BLOB_BACKEND turned into
 * the driver Redis and MySQL keep workspaces, workspace snapshots and (Redis) archives on — none,
 * the S3 bucket (S3_*), the OSS bucket (OSS_*) or the local server's DATA_DIR (fs). Each entry
 * passes the drivers it bundles; the app makes the blob side's object store over the driver
 * (lib/http/app.ts, lib/contract/blobs.ts). An object store (STORE_BACKEND=fs|memory|s3|oss) keeps
 * its blobs itself: BLOB_BACKEND is then not read.
 */
import { createHash } from 'node:crypto';
import { type Config, enginesOf } from '../../config.js';
import type { BlobStore, BlobUserStore } from '../../contract/blobs.js';
import { namedUser } from '../../contract/ids.js';
import type { MetricsSink } from '../../contract/types.js';
import { ObjectConditionFailedError } from '../../drivers/errors.js';
import type { ObjectStoreDriver } from '../../drivers/types.js';
import { backendError, type StoreContext } from '../../store/context.js';
import { layoutFor } from '../../store/layout.js';
import { createStateStore } from '../../store/store.js';
import { readRestoring } from '../../store/workspaces.js';
import { DAY_MS } from '../../util/units.js';

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

/**
 * The incarnation an engine's archives are named under in the blob side's session folder
 * (`<key>.list~a~engine~<sha256>`): an archive's name, so the object store's keep-alive, a new
 * incarnation's purge and its archive listing leave them alone, and a session delete takes them.
 */
const ENGINE_ARCHIVES = 'engine';

/**
 * An engine store's blob side (lib/contract/blobs.ts) on BLOB_BACKEND's driver (verified first):
 * the object store over it, under the same prefix, whose sessions outlive the engine's by at most
 * twice the keep-alive interval (the engine's writes touch them at most once per interval), never
 * expiring first; and the engine's archives, written create-only under their content's SHA-256.
 */
export function blobStoreOn(config: Config, driver: ObjectStoreDriver, metrics: MetricsSink): BlobStore {
  const store = createStateStore({
    driver,
    prefix: config.STATE_PREFIX,
    retentionDays: config.RETENTION_DAYS + (2 * config.KEEPALIVE_MS) / DAY_MS,
    keepAliveMs: config.KEEPALIVE_MS,
    stateGraceDays: config.STATE_GRACE_DAYS,
    archiveEncoding: config.ARCHIVE_ENCODING,
    presignExpiresIn: config.PRESIGN_EXPIRES_SECONDS,
    restoreDays: config.RESTORE_DAYS,
    maxValueBytes: config.MAX_VALUE_BYTES,
    metrics,
  });
  const archiveName = (userId: string | null, sessionId: string, key: string, id: string) =>
    `${layoutFor(config.STATE_PREFIX, namedUser(userId)).archives(sessionId, key, ENGINE_ARCHIVES)}${id}`;
  const typed = <T>(run: () => Promise<T>) =>
    run().catch((error: unknown) => {
      throw backendError(error);
    });
  return {
    // The object store's user store has the workspace snapshot, sweep and touch calls too.
    forUser: (userId, options) => store.forUser(userId, options) as BlobUserStore,
    sweepWorkspacePacks: (options) => store.sweepWorkspacePacks(options),
    keepAliveMs: config.KEEPALIVE_MS,
    putArchive: (userId, sessionId, key, body) =>
      typed(async () => {
        const id = createHash('sha256').update(body).digest('hex');
        try {
          await driver.put(archiveName(userId, sessionId, key, id), body, {
            contentType: 'application/json',
            tags: { kind: 'archive' },
            ifNoneMatch: '*',
          });
        } catch (error) {
          // Content-named: an object there already holds these very bytes.
          if (!(error instanceof ObjectConditionFailedError)) throw error;
        }
        return id;
      }),
    getArchive: (userId, sessionId, key, id) =>
      typed(async () => {
        const ctx = { driver, restoreDays: config.RESTORE_DAYS } as StoreContext;
        const object = await readRestoring(ctx, archiveName(userId, sessionId, key, id), 'the archive');
        return object ? Buffer.from(object.body).toString('utf8') : undefined;
      }),
  };
}
