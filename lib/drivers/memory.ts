/** In-process driver: a Map, with the full conditional semantics (it can, so it does). For unit tests. */
import { randomUUID } from 'node:crypto';
import { BaseDriver } from './base.js';
import { appendEtag, compareKeys, contentEtag, copiedOptions, pageOf, resolveRange } from './common.js';
import {
  ObjectConditionFailedError,
  ObjectNotAppendableError,
  ObjectNotFoundError,
  UnsupportedError,
} from './errors.js';
import type {
  AppendObjectOptions,
  AppendObjectResult,
  CopyOptions,
  DeleteFailure,
  DeleteManyResult,
  DriverCapabilities,
  GetOptions,
  ListOptions,
  ObjectInfo,
  ObjectListPage,
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

/** An object as held: `body` is `buffer`'s first `size` bytes; an appendable one grows in place. */
interface Held extends Omit<StoredObject, 'body'> {
  buffer: Uint8Array;
  /** Appendable objects: the id drawn at creation, which with the size makes the etag. */
  readonly createdId?: string;
}

/** Creates an empty in-memory store. */
export function createMemoryDriver(options: MemoryDriverOptions = {}): ObjectStoreDriver {
  return new MemoryDriver(options);
}

class MemoryDriver extends BaseDriver {
  private readonly now: () => number;
  private readonly objects = new Map<string, Held>();

  constructor(private readonly options: MemoryDriverOptions) {
    super(NAME, {
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
      // Every call runs to completion before the next: an append is atomic against every other call.
      positionAppend: true,
    } satisfies DriverCapabilities);
    this.now = options.now ?? Date.now;
  }

  private found(key: string): Held {
    const object = this.objects.get(key);
    if (!object) throw new ObjectNotFoundError(key, NAME);
    return object;
  }

  private checkCondition(key: string, ifMatch?: string, ifNoneMatch?: '*'): void {
    const current = this.objects.get(key);
    if (ifNoneMatch === '*' && current) throw new ObjectConditionFailedError(key, NAME);
    if (ifMatch !== undefined) {
      // A missing object fails the condition, as on RGW (AWS says 404): one outcome for every driver.
      if (current?.etag !== ifMatch) throw new ObjectConditionFailedError(key, NAME);
    }
  }

  private store(
    key: string,
    body: Uint8Array,
    o: Omit<PutOptions, 'ifMatch' | 'ifNoneMatch'>,
  ): { etag: string } {
    const metadata = { ...o.metadata };
    const copy = new Uint8Array(body);
    this.objects.set(key, {
      key,
      buffer: copy,
      etag: contentEtag(copy, metadata),
      size: copy.byteLength,
      lastModified: new Date(this.now()),
      contentType: o.contentType ?? 'application/octet-stream',
      metadata,
      tags: { ...o.tags },
      storageClass: o.storageClass ?? 'STANDARD',
      ...(o.contentEncoding ? { contentEncoding: o.contentEncoding } : {}),
    });
    return { etag: this.objects.get(key)?.etag as string };
  }

  /** The stored object's attributes, without its buffer and the id behind an appendable etag. */
  private infoOf(object: Held): ObjectInfo {
    const { buffer: _buffer, createdId: _id, ...info } = object;
    return info;
  }

  protected async getObject(key: string, o: GetOptions): Promise<StoredObject> {
    const object = this.found(key);
    if (o.ifMatch !== undefined && object.etag !== o.ifMatch) throw new ObjectConditionFailedError(key, NAME);
    const whole = object.buffer.subarray(0, object.size);
    if (!o.range) return { ...this.infoOf(object), body: new Uint8Array(whole) };
    const range = resolveRange(o.range, object.size, key, NAME);
    return { ...this.infoOf(object), body: whole.slice(range.start, range.end + 1), range };
  }

  protected async headObject(key: string, withTags: boolean): Promise<ObjectInfo> {
    const { tags, ...info } = this.infoOf(this.found(key));
    return withTags ? { ...info, tags } : info;
  }

  protected async putObject(key: string, body: Uint8Array, o: PutOptions): Promise<{ etag: string }> {
    this.checkCondition(key, o.ifMatch, o.ifNoneMatch);
    return this.store(key, body, o);
  }

  protected async deleteObject(key: string, ifMatch: string | undefined): Promise<void> {
    this.checkCondition(key, ifMatch);
    this.objects.delete(key);
  }

  protected async deleteBatch(keys: readonly string[]): Promise<DeleteManyResult> {
    const deleted: string[] = [];
    const failed: DeleteFailure[] = [];
    for (const key of keys) {
      const code = this.options.deleteFault?.(key);
      if (code) failed.push({ key, code, message: 'injected fault' });
      else {
        this.objects.delete(key);
        deleted.push(key);
      }
    }
    return { deleted, failed };
  }

  protected async listObjects(o: ListOptions & { limit: number }): Promise<ObjectListPage> {
    const keys = [...this.objects.keys()].sort(compareKeys);
    const entries = keys.map((key) => {
      const { etag, size, lastModified } = this.objects.get(key) as Held;
      return { key, etag, size, lastModified };
    });
    return pageOf(entries, o, NAME);
  }

  protected async copyObject(source: string, target: string, o: CopyOptions): Promise<{ etag: string }> {
    const from = this.found(source);
    if (from.appendable) throw new UnsupportedError('copy of an appendable object', NAME);
    const body = from.buffer.subarray(0, from.size);
    return this.store(target, body, copiedOptions({ ...this.infoOf(from), body }, o));
  }

  protected override async appendObject(
    key: string,
    body: Uint8Array,
    o: AppendObjectOptions,
  ): Promise<AppendObjectResult> {
    const current = this.objects.get(key);
    if (current && !current.appendable) throw new ObjectNotAppendableError(key, NAME);
    const length = current?.size ?? 0;
    if (o.position !== length) throw new ObjectConditionFailedError(key, NAME, { nextPosition: length });
    const object: Held = current ?? {
      key,
      buffer: new Uint8Array(0),
      createdId: randomUUID(),
      etag: '',
      size: 0,
      lastModified: new Date(0),
      contentType: o.contentType ?? 'application/octet-stream',
      metadata: { ...o.metadata },
      tags: { ...o.tags },
      storageClass: o.storageClass ?? 'STANDARD',
      appendable: true,
    };
    const size = length + body.byteLength;
    if (size > object.buffer.byteLength) {
      // Grow by doubling, so n appends copy O(n) bytes in all; bytes below `size` never change.
      const grown = new Uint8Array(Math.max(size, 2 * object.buffer.byteLength, 1024));
      grown.set(object.buffer.subarray(0, length));
      object.buffer = grown;
    }
    object.buffer.set(body, length);
    const etag = appendEtag(object.createdId as string, size);
    this.objects.set(key, { ...object, size, etag, lastModified: new Date(this.now()) });
    return { etag, nextPosition: size };
  }

  protected override async closeBackend(): Promise<void> {
    this.objects.clear();
  }
}
