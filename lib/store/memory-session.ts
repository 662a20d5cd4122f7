/**
 * The memory session's tags (docs/DESIGN.md, "Sessions"): every object of the memory session
 * (lib/contract/ids.ts, `MEMORY_SESSION`) that the store would tag `kind=state` or `kind=marker` is
 * written `kind=memory` instead, which no lifecycle rule selects, so the bucket's rules never
 * expire long-term memory. Done here, on the driver the store writes through, so that no writer of
 * the store (values, lists, commits, markers, keep-alive) has a second rule to follow; archives and
 * workspaces keep their own tags and rules.
 */
import { MEMORY_KIND } from '../contract/ids.js';
import type { ObjectStoreDriver } from '../drivers/types.js';
import { inMemorySession } from './layout.js';

/** The tags an object is written with, `kind=memory` for the memory session's markers and state. */
export function tagsFor(
  prefix: string,
  name: string,
  tags: Readonly<Record<string, string>> | undefined,
): Readonly<Record<string, string>> | undefined {
  if (tags === undefined || (tags.kind !== 'state' && tags.kind !== 'marker')) return tags;
  return inMemorySession(prefix, name) ? { ...tags, kind: MEMORY_KIND } : tags;
}

/** `options` with the tags of an object written at `name`. */
function tagged<O extends { readonly tags?: Readonly<Record<string, string>> }>(
  prefix: string,
  name: string,
  options: O,
): O {
  const tags = tagsFor(prefix, name, options.tags);
  return tags === options.tags ? options : { ...options, tags };
}

/**
 * `driver`, writing the memory session's markers and state objects under `prefix` as `kind=memory`:
 * the three writes that carry tags (`put`, `append`, `copy` by its target) choose them here; every
 * other member is the driver's own (a member added to the interface must be listed here).
 */
export function withMemoryTags(driver: ObjectStoreDriver, prefix: string): ObjectStoreDriver {
  return {
    name: driver.name,
    capabilities: driver.capabilities,
    get: (key, options) => driver.get(key, options),
    head: (key, options) => driver.head(key, options),
    put: (key, body, options) => driver.put(key, body, options && tagged(prefix, key, options)),
    delete: (key, options) => driver.delete(key, options),
    deleteMany: (keys) => driver.deleteMany(keys),
    list: (options) => driver.list(options),
    copy: (source, target, options) =>
      driver.copy(source, target, options && tagged(prefix, target, options)),
    append: (key, body, options) => driver.append(key, body, tagged(prefix, key, options)),
    presignGet: (key, options) => driver.presignGet(key, options),
    presignPut: (key, options) => driver.presignPut(key, options),
    presignUpload: (key, options) => driver.presignUpload(key, options),
    createMultipart: (key, options) => driver.createMultipart(key, options),
    presignPart: (key, uploadId, part, options) => driver.presignPart(key, uploadId, part, options),
    listParts: (key, uploadId) => driver.listParts(key, uploadId),
    completeMultipart: (key, uploadId, parts) => driver.completeMultipart(key, uploadId, parts),
    abortMultipart: (key, uploadId) => driver.abortMultipart(key, uploadId),
    restore: (key, options) => driver.restore(key, options),
    close: () => driver.close(),
  };
}
