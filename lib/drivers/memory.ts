/** In-process driver: a Map, with the full conditional semantics (it can, so it does). For unit tests. */
import {
  checkKey,
  checkMetadata,
  checkRange,
  checkStorageClass,
  checkTags,
  compareKeys,
  contentEtag,
  copiedOptions,
  deleteBatches,
  pageOf,
  resolveRange,
  toBytes,
  withoutDirectTransfer,
} from './common.js';
import { ObjectConditionFailedError, ObjectNotFoundError } from './errors.js';
import type {
  DeleteFailure,
  DriverCapabilities,
  ObjectInfo,
  ObjectStoreDriver,
  PutOptions,
  StoredObject,
} from './types.js';

const NAME = 'memory';
const STORAGE_CLASSES = ['STANDARD', 'STANDARD_IA', 'GLACIER_IR', 'GLACIER', 'DEEP_ARCHIVE'] as const;

/** Options of the memory driver. */
export interface MemoryDriverOptions {
  /** The clock used for last-modified times; default `Date.now`. Tests pass a fake one. */
  readonly now?: () => number;
  /**
   * Fault injection for tests: a code returned for a key makes `deleteMany` report that key as
   * failed (and keep it), as a backend refusing one key would. Default none.
   */
  readonly deleteFault?: (key: string) => string | undefined;
}

/** Creates an empty in-memory store. */
export function createMemoryDriver(options: MemoryDriverOptions = {}): ObjectStoreDriver {
  const now = options.now ?? Date.now;
  const objects = new Map<string, StoredObject>();
  const capabilities: DriverCapabilities = {
    conditionalOverwrite: true,
    createOnly: true,
    conditionalGet: true,
    conditionalDelete: true,
    presign: false,
    tags: true,
    storageClasses: STORAGE_CLASSES,
    md5Etags: false,
    multipart: false,
    checksumSha256: false,
    restoreClasses: [],
    ranges: true,
  };

  function found(key: string): StoredObject {
    const object = objects.get(checkKey(key, NAME));
    if (!object) throw new ObjectNotFoundError(key, NAME);
    return object;
  }

  function checkCondition(key: string, ifMatch?: string, ifNoneMatch?: '*'): void {
    const current = objects.get(key);
    if (ifNoneMatch === '*' && current) throw new ObjectConditionFailedError(key, NAME);
    if (ifMatch !== undefined) {
      // A missing object fails the condition, as on RGW (AWS says 404): one outcome for every driver.
      if (current?.etag !== ifMatch) throw new ObjectConditionFailedError(key, NAME);
    }
  }

  function store(
    key: string,
    body: Uint8Array,
    o: Omit<PutOptions, 'ifMatch' | 'ifNoneMatch'>,
  ): { etag: string } {
    checkMetadata(o.metadata, NAME);
    checkTags(o.tags, NAME);
    checkStorageClass(o.storageClass, STORAGE_CLASSES, NAME);
    const metadata = { ...o.metadata };
    const copy = new Uint8Array(body);
    const object: StoredObject = {
      key,
      body: copy,
      etag: contentEtag(copy, metadata),
      size: copy.byteLength,
      lastModified: new Date(now()),
      contentType: o.contentType ?? 'application/octet-stream',
      metadata,
      tags: { ...o.tags },
      storageClass: o.storageClass ?? 'STANDARD',
      ...(o.contentEncoding ? { contentEncoding: o.contentEncoding } : {}),
    };
    objects.set(key, object);
    return { etag: object.etag };
  }

  return {
    name: NAME,
    capabilities,
    async get(key, o = {}) {
      if (o.range) checkRange(o.range, NAME);
      const object = found(key);
      if (o.ifMatch !== undefined && object.etag !== o.ifMatch)
        throw new ObjectConditionFailedError(key, NAME);
      if (!o.range) return { ...object, body: new Uint8Array(object.body) };
      const range = resolveRange(o.range, object.size, key, NAME);
      return { ...object, body: object.body.slice(range.start, range.end + 1), range };
    },
    async head(key, o = {}) {
      const { body: _body, tags, ...info } = found(key);
      return (o.tags ? { ...info, tags } : info) satisfies ObjectInfo;
    },
    async put(key, body, o = {}) {
      checkKey(key, NAME);
      checkCondition(key, o.ifMatch, o.ifNoneMatch);
      return store(key, toBytes(body), o);
    },
    async delete(key, o = {}) {
      checkKey(key, NAME);
      checkCondition(key, o.ifMatch);
      objects.delete(key);
    },
    async deleteMany(keys) {
      for (const key of keys) checkKey(key, NAME);
      const deleted: string[] = [];
      const failed: DeleteFailure[] = [];
      for (const batch of deleteBatches(keys)) {
        for (const key of batch) {
          const code = options.deleteFault?.(key);
          if (code) failed.push({ key, code, message: 'injected fault' });
          else {
            objects.delete(key);
            deleted.push(key);
          }
        }
      }
      return { deleted, failed };
    },
    async list(o = {}) {
      const keys = [...objects.keys()].sort(compareKeys);
      const entries = keys.map((key) => {
        const { etag, size, lastModified } = objects.get(key) as StoredObject;
        return { key, etag, size, lastModified };
      });
      return pageOf(entries, o, NAME);
    },
    async copy(source, target, o = {}) {
      const from = found(source);
      checkKey(target, NAME);
      return store(target, from.body, copiedOptions(from, o));
    },
    ...withoutDirectTransfer(NAME),
    async close() {
      objects.clear();
    },
  };
}
