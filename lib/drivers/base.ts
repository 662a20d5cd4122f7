/**
 * The one base of the four drivers (s3, oss, fs, memory). It owns what every driver did alike:
 * argument checks before any request (keys, metadata, tags, storage classes, ranges, list page
 * sizes, append positions), the refusals of what `capabilities` does not declare
 * (`UnsupportedError`), the batching of `deleteMany` into `DELETE_BATCH_LIMIT` keys with every key
 * reported, and the mapping of whatever a backend call throws to a typed `ObjectStoreError`
 * (`mapError`, which the S3 and OSS drivers give their error table). A driver implements only the
 * backend calls, the protected hooks below, each called with checked arguments.
 *
 * The public methods are own, bound properties of every driver, so a wrapper made by spreading a
 * driver (`{ ...driver, put }`) keeps working, as it did when drivers were object literals.
 */
import {
  checkKey,
  checkMetadata,
  checkPosition,
  checkRange,
  checkStorageClass,
  checkTags,
  deleteBatches,
  listLimit,
  toBytes,
} from './common.js';
import { ObjectStoreError, UnsupportedError } from './errors.js';
import type {
  AppendObjectOptions,
  AppendObjectResult,
  CopyOptions,
  DeleteFailure,
  DeleteManyResult,
  DriverCapabilities,
  GetOptions,
  ListOptions,
  MultipartOptions,
  ObjectInfo,
  ObjectListPage,
  ObjectStoreDriver,
  PresignedRequest,
  PresignOptions,
  PresignUploadOptions,
  PutOptions,
  StoredObject,
  UploadedPart,
} from './types.js';

/** Every method of the driver interface, made an own bound property of each driver. */
const METHODS = [
  'get',
  'head',
  'put',
  'delete',
  'deleteMany',
  'list',
  'copy',
  'append',
  'presignGet',
  'presignPut',
  'presignUpload',
  'createMultipart',
  'presignPart',
  'listParts',
  'completeMultipart',
  'abortMultipart',
  'restore',
  'close',
] as const satisfies readonly (keyof ObjectStoreDriver)[];

/** Options of the part presigning hook. */
export type PartOptions = Pick<PresignUploadOptions, 'expiresIn' | 'contentLength' | 'contentMd5'>;

/** The shared checks and refusals; subclasses implement the backend calls. */
export abstract class BaseDriver implements ObjectStoreDriver {
  constructor(
    readonly name: string,
    readonly capabilities: DriverCapabilities,
  ) {
    for (const method of METHODS) {
      const fn = this[method] as (...args: never[]) => unknown;
      Object.defineProperty(this, method, {
        value: fn.bind(this),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }

  // ---- what each backend implements (arguments already checked) ----

  /** The object (only `range`'s bytes when given); `ifMatch` checked by the backend. */
  protected abstract getObject(key: string, options: GetOptions): Promise<StoredObject>;
  protected abstract headObject(key: string, withTags: boolean): Promise<ObjectInfo>;
  /** `ifMatch` arrives only where `capabilities.conditionalOverwrite`. */
  protected abstract putObject(key: string, body: Uint8Array, options: PutOptions): Promise<{ etag: string }>;
  /** `ifMatch` arrives only where `capabilities.conditionalDelete`; absent is success without it. */
  protected abstract deleteObject(key: string, ifMatch: string | undefined): Promise<void>;
  /**
   * Deletes at most `DELETE_BATCH_LIMIT` keys, reporting each as deleted or failed; a throw fails
   * the whole batch (every key of it is reported with `errorCode` of what was thrown).
   */
  protected abstract deleteBatch(keys: readonly string[]): Promise<DeleteManyResult>;
  protected abstract listObjects(options: ListOptions & { readonly limit: number }): Promise<ObjectListPage>;
  protected abstract copyObject(
    source: string,
    target: string,
    options: CopyOptions,
  ): Promise<{ etag: string }>;

  /** Needed where `capabilities.positionAppend`. */
  protected appendObject(
    _key: string,
    _body: Uint8Array,
    _options: AppendObjectOptions,
  ): Promise<AppendObjectResult> {
    return this.unsupported('position append');
  }
  /** Storage classes an appendable object may have; default every class of `capabilities`. */
  protected get appendStorageClasses(): readonly string[] {
    return this.capabilities.storageClasses;
  }

  /** Direct transfer, needed where `capabilities.presign` (and `multipart` for the upload hooks). */
  protected signGet(_key: string, _options: PresignOptions): Promise<string> {
    return this.unsupported('presigned transfers');
  }
  protected signPut(_key: string, _options: PresignOptions): Promise<string> {
    return this.unsupported('presigned transfers');
  }
  protected signUpload(_key: string, _options: PresignUploadOptions): Promise<PresignedRequest> {
    return this.unsupported('presigned transfers');
  }
  protected startUpload(_key: string, _options: MultipartOptions): Promise<string> {
    return this.unsupported('multipart uploads');
  }
  protected signPart(
    _key: string,
    _uploadId: string,
    _partNumber: number,
    _options: PartOptions,
  ): Promise<PresignedRequest> {
    return this.unsupported('multipart uploads');
  }
  protected partsOf(_key: string, _uploadId: string): Promise<UploadedPart[]> {
    return this.unsupported('multipart uploads');
  }
  protected finishUpload(
    _key: string,
    _uploadId: string,
    _parts: readonly Pick<UploadedPart, 'partNumber' | 'etag'>[],
  ): Promise<{ etag: string }> {
    return this.unsupported('multipart uploads');
  }
  protected abortUpload(_key: string, _uploadId: string): Promise<void> {
    return this.unsupported('multipart uploads');
  }
  /** Called only where `capabilities.restoreClasses` is not empty (else every object reads: `done`). */
  protected restoreObject(_key: string, _days: number): Promise<'started' | 'ongoing' | 'done'> {
    return this.unsupported('restore');
  }
  protected async closeBackend(): Promise<void> {}

  /** The typed error for what a backend call threw (typed errors pass through unchanged). */
  protected mapError(error: unknown, key: string): ObjectStoreError {
    if (error instanceof ObjectStoreError) return error;
    return new ObjectStoreError(`${this.name} failed on ${key}: ${(error as Error)?.message}`, this.name, {
      cause: error,
    });
  }
  /** The code a failed `deleteBatch` reports for each key of the batch. */
  protected errorCode(error: unknown): string | undefined {
    return (error as { code?: string } | undefined)?.code;
  }

  // ---- the interface: checks, refusals, batching, error mapping ----

  async get(key: string, options: GetOptions = {}): Promise<StoredObject> {
    checkKey(key, this.name);
    if (options.range) {
      if (!this.capabilities.ranges) throw new UnsupportedError('ranges', this.name);
      checkRange(options.range, this.name);
    }
    return this.call(key, () => this.getObject(key, options));
  }

  async head(key: string, options: { readonly tags?: boolean } = {}): Promise<ObjectInfo> {
    checkKey(key, this.name);
    return this.call(key, () => this.headObject(key, options.tags === true));
  }

  async put(key: string, body: Uint8Array | string, options: PutOptions = {}): Promise<{ etag: string }> {
    checkKey(key, this.name);
    this.checkStored(options);
    if (options.ifMatch !== undefined && !this.capabilities.conditionalOverwrite) {
      throw new UnsupportedError('conditional overwrite', this.name);
    }
    return this.call(key, () => this.putObject(key, toBytes(body), options));
  }

  async delete(key: string, options: { readonly ifMatch?: string } = {}): Promise<void> {
    checkKey(key, this.name);
    if (options.ifMatch !== undefined && !this.capabilities.conditionalDelete) {
      throw new UnsupportedError('conditional delete', this.name);
    }
    return this.call(key, () => this.deleteObject(key, options.ifMatch));
  }

  async deleteMany(keys: readonly string[]): Promise<DeleteManyResult> {
    for (const key of keys) checkKey(key, this.name);
    const deleted: string[] = [];
    const failed: DeleteFailure[] = [];
    for (const batch of deleteBatches(keys)) {
      try {
        const result = await this.deleteBatch(batch);
        deleted.push(...result.deleted);
        failed.push(...result.failed);
      } catch (error) {
        // The whole batch failed: every key in it is reported, none is silently dropped.
        const code = this.errorCode(error) ?? 'RequestFailed';
        for (const key of batch) failed.push({ key, code, message: (error as Error)?.message ?? '' });
      }
    }
    return { deleted, failed };
  }

  async list(options: ListOptions = {}): Promise<ObjectListPage> {
    const limit = listLimit(options.limit, this.name);
    return this.call(options.prefix ?? '', () => this.listObjects({ ...options, limit }));
  }

  async copy(source: string, target: string, options: CopyOptions = {}): Promise<{ etag: string }> {
    checkKey(source, this.name);
    checkKey(target, this.name);
    this.checkStored(options);
    return this.call(source, () => this.copyObject(source, target, options));
  }

  async append(
    key: string,
    body: Uint8Array | string,
    options: AppendObjectOptions,
  ): Promise<AppendObjectResult> {
    if (!this.capabilities.positionAppend) throw new UnsupportedError('position append', this.name);
    checkKey(key, this.name);
    checkPosition(options?.position, this.name);
    checkMetadata(options.metadata, this.name);
    checkTags(options.tags, this.name);
    checkStorageClass(options.storageClass, this.appendStorageClasses, this.name);
    return this.call(key, () => this.appendObject(key, toBytes(body), options));
  }

  async presignGet(key: string, options: PresignOptions = {}): Promise<string> {
    this.transfers(key, false);
    return this.call(key, () => this.signGet(key, options));
  }

  async presignPut(key: string, options: PresignOptions = {}): Promise<string> {
    this.transfers(key, false);
    return this.call(key, () => this.signPut(key, options));
  }

  async presignUpload(key: string, options: PresignUploadOptions): Promise<PresignedRequest> {
    this.transfers(key, false);
    this.checkStored(options);
    return this.call(key, () => this.signUpload(key, options));
  }

  async createMultipart(key: string, options: MultipartOptions = {}): Promise<string> {
    this.transfers(key, true);
    this.checkStored(options);
    return this.call(key, () => this.startUpload(key, options));
  }

  async presignPart(
    key: string,
    uploadId: string,
    partNumber: number,
    options: PartOptions,
  ): Promise<PresignedRequest> {
    this.transfers(key, true);
    return this.call(key, () => this.signPart(key, uploadId, partNumber, options));
  }

  async listParts(key: string, uploadId: string): Promise<UploadedPart[]> {
    this.transfers(key, true);
    return this.call(key, () => this.partsOf(key, uploadId));
  }

  async completeMultipart(
    key: string,
    uploadId: string,
    parts: readonly Pick<UploadedPart, 'partNumber' | 'etag'>[],
  ): Promise<{ etag: string }> {
    this.transfers(key, true);
    return this.call(key, () => this.finishUpload(key, uploadId, parts));
  }

  async abortMultipart(key: string, uploadId: string): Promise<void> {
    this.transfers(key, true);
    return this.call(key, () => this.abortUpload(key, uploadId));
  }

  async restore(
    key: string,
    options: { readonly days?: number } = {},
  ): Promise<'started' | 'ongoing' | 'done'> {
    checkKey(key, this.name);
    if (this.capabilities.restoreClasses.length === 0) return 'done';
    return this.call(key, () => this.restoreObject(key, options.days ?? 1));
  }

  async close(): Promise<void> {
    await this.closeBackend();
  }

  // ---- helpers ----

  /** Runs a backend call, mapping what it throws. */
  protected async call<T>(key: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw this.mapError(error, key);
    }
  }

  /** Refuses what an object cannot be stored with (metadata, tags, a storage class not listed). */
  protected checkStored(options: {
    readonly metadata?: Readonly<Record<string, string>>;
    readonly tags?: Readonly<Record<string, string>>;
    readonly storageClass?: string;
  }): void {
    checkMetadata(options.metadata, this.name);
    checkTags(options.tags, this.name);
    checkStorageClass(options.storageClass, this.capabilities.storageClasses, this.name);
  }

  /** The refusal of a direct transfer the driver does not declare, then the key check. */
  private transfers(key: string, multipart: boolean): void {
    if (!this.capabilities.presign) throw new UnsupportedError('presigned transfers', this.name);
    if (multipart && !this.capabilities.multipart) throw new UnsupportedError('multipart uploads', this.name);
    checkKey(key, this.name);
  }

  private async unsupported(capability: string): Promise<never> {
    throw new UnsupportedError(capability, this.name);
  }
}
