/**
 * Bootstrap's last step (lib/lifecycle/bootstrap.ts, `writeCheck`): one write, read and delete of
 * a probe object, as the store writes a session's value, so that a bucket set up in a way that
 * refuses the service's requests (a policy, or Ceph RGW 16's `BlockPublicAcls`, which refuses even
 * the owner's PutObject) fails at bootstrap, named, and not at the first request. The object is
 * named and tagged as the backend probe's (`probeNames`, `PUT_OPTIONS` in probe.ts:
 * `<prefix><24 hex>/<24 hex>/<8 hex>.json`, `kind=state`, so lifecycle removes a leftover), written
 * create-only where the driver has it, and deleted whatever failed.
 */
import { ObjectStoreError, UnavailableResourceError } from '../drivers/errors.js';
import type { ObjectStoreDriver } from '../drivers/types.js';
import { probeNames } from './layout.js';
import { PUT_OPTIONS } from './probe.js';

/** The backend calls of the check, by the names S3 and OSS give them. */
export type WriteCheckCall = 'PutObject' | 'GetObject' | 'DeleteObject';

/** What the check found: the object it used, and the first call that failed, if one did. */
export interface WriteCheckOutcome {
  /** The probe object's name. */
  readonly key: string;
  readonly failed?: {
    readonly call: WriteCheckCall;
    /** The backend's own error (the SDK's), or a `BodyMismatch` error for a read of other bytes. */
    readonly error: unknown;
    /** Who the backend refused (lib/util/identity.ts), when it refused. */
    readonly identity?: string;
  };
}

const BODY = '{"probe":"bootstrap"}';

/** The backend's own error under a driver's typed one, and who it refused. */
function failure(call: WriteCheckCall, error: unknown): NonNullable<WriteCheckOutcome['failed']> {
  const own = error instanceof ObjectStoreError && error.cause !== undefined ? error.cause : error;
  const identity = error instanceof UnavailableResourceError ? error.identity : undefined;
  return identity === undefined ? { call, error: own } : { call, error: own, identity };
}

/** Writes, reads back and deletes one probe object under `prefix`; never throws for what the backend answers. */
export async function writeReadDelete(driver: ObjectStoreDriver, prefix: string): Promise<WriteCheckOutcome> {
  const key = probeNames.value(probeNames.session(prefix));
  let failed: WriteCheckOutcome['failed'];
  try {
    await driver.put(key, BODY, {
      ...PUT_OPTIONS,
      ...(driver.capabilities.createOnly ? { ifNoneMatch: '*' as const } : {}),
    });
    try {
      const read = new TextDecoder().decode((await driver.get(key)).body);
      if (read !== BODY) {
        const mismatch = new Error(`read back ${JSON.stringify(read.slice(0, 80))}, not what was written`);
        mismatch.name = 'BodyMismatch';
        failed = failure('GetObject', mismatch);
      }
    } catch (error) {
      failed = failure('GetObject', error);
    }
  } catch (error) {
    failed = failure('PutObject', error);
  }
  // Deleted whatever failed (a PUT that timed out may have landed); its own failure is reported
  // only when nothing failed before it.
  try {
    await driver.delete(key);
  } catch (error) {
    failed ??= failure('DeleteObject', error);
  }
  return failed ? { key, failed } : { key };
}
