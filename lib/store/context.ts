/** What every part of the store shares: the driver, the clock, the tunables, and backend error mapping. */

import { BackendError, MisconfiguredBackendError, StoreError, ValidationError } from '../contract/errors.js';
import type { MetricsSink } from '../contract/types.js';
import { ObjectNotFoundError, ObjectStoreError, UnavailableResourceError } from '../drivers/errors.js';
import type { ListedObject, ObjectInfo, ObjectStoreDriver, StoredObject } from '../drivers/types.js';
import type { ContentEncoding } from '../util/encoding.js';

/** Tunables of the store, with their defaults in `createStateStore`. */
export interface StoreContext {
  readonly driver: ObjectStoreDriver;
  readonly prefix: string;
  /** A session whose marker is older than this is gone (lifecycle deletes lazily). */
  readonly retentionMs: number;
  /** The marker, and old state objects, are refreshed at most once per this interval (R). */
  readonly keepAliveMs: number;
  /** How much longer than its marker a state object lives under the lifecycle rules. */
  readonly stateGraceMs: number;
  /** CAS format: most bytes of items a list head holds (116 KiB by default). */
  readonly listHeadBytes: number;
  /** CAS format: bytes of the oldest items sealed into a segment when the head is over `listHeadBytes`. */
  readonly listSealBytes: number;
  /** Append format: a log is sealed once its own items reach this many bytes (1 MiB by default). */
  readonly listLogBytes: number;
  /** Retired segments and superseded logs are deleted only when older than this. */
  readonly retireAfterMs: number;
  /** A writer gives up (retryable) if its read-to-commit took longer than this; well below `retireAfterMs`. */
  readonly maxCommitMs: number;
  /** How archived lists are stored. */
  readonly archiveEncoding: ContentEncoding;
  /** Whether each list's whole array is kept as `<key>.list.json` too (the reference's layout). */
  readonly listJson: 'off' | 'reference';
  /**
   * Whether a session without a marker is looked for in the reference's layout (one LIST) and
   * adopted (lib/store/reference.ts).
   */
  readonly adoptReference: boolean;
  /** Seconds a presigned URL stays valid. */
  readonly presignExpiresIn: number;
  /** Days a restored copy of an archived object stays readable. */
  readonly restoreDays: number;
  /** Largest single value committed from a presigned upload. */
  readonly maxValueBytes: number;
  readonly now: () => number;
  readonly metrics: MetricsSink;
}

/** Maps a driver failure to a store error (keeping it as `cause`). */
export function backendError(error: unknown): StoreError {
  if (error instanceof StoreError) return error;
  if (error instanceof UnavailableResourceError)
    return new MisconfiguredBackendError(error.backend, error.resource, error.message, {
      cause: error,
      resourceName: error.resourceName,
      identity: error.identity,
    });
  if (error instanceof ObjectStoreError) {
    if (error.name === 'InvalidArgumentError') return new ValidationError('id', error.message);
    return new BackendError(error.message, error.retryable, { cause: error });
  }
  return new BackendError(String(error), true, { cause: error });
}

/** A GET that answers undefined for a missing object. */
export async function getOrUndefined(
  driver: ObjectStoreDriver,
  name: string,
): Promise<StoredObject | undefined> {
  try {
    return await driver.get(name);
  } catch (error) {
    if (error instanceof ObjectNotFoundError) return undefined;
    throw error;
  }
}

/** A HEAD that answers undefined for a missing object. */
export async function headOrUndefined(
  driver: ObjectStoreDriver,
  name: string,
): Promise<ObjectInfo | undefined> {
  try {
    return await driver.head(name);
  } catch (error) {
    if (error instanceof ObjectNotFoundError) return undefined;
    throw error;
  }
}

/** The fencing token a value object records (its `token` metadata), or undefined. */
export function storedToken(object: ObjectInfo | undefined): number | undefined {
  const stored = Number(object?.metadata.token);
  return Number.isSafeInteger(stored) ? stored : undefined;
}

/** Parses a JSON object body, or undefined when it is not one. */
export function parseJsonObject(body: Uint8Array): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(body).toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Every object name under a prefix (all pages). */
export async function listAll(driver: ObjectStoreDriver, prefix: string): Promise<ListedObject[]> {
  const out: ListedObject[] = [];
  let cursor: string | undefined;
  do {
    const page = await driver.list({ prefix, cursor });
    out.push(...page.objects);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

/** The names of the folders directly under a prefix (all pages of a `/`-delimited listing). */
export async function folderNames(driver: ObjectStoreDriver, prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await driver.list({ prefix, delimiter: '/', cursor });
    for (const folder of page.prefixes) out.push(folder.slice(prefix.length, -1));
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

/** Most attempts of a write that keeps losing races to other writers. */
export const MAX_WRITE_ATTEMPTS = 12;
