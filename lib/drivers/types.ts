/**
 * The one interface every object-storage backend implements. It covers what the state store needs
 * and no more; a driver knows nothing about sessions, users or lists.
 */

/** What a backend can do; callers and tests read this instead of guessing from the driver's name. */
export interface DriverCapabilities {
  /** `put({ ifMatch })` is evaluated atomically by the backend (S3, fs, memory; not OSS). */
  readonly conditionalOverwrite: boolean;
  /** `put({ ifNoneMatch: '*' })`: exactly one concurrent creator wins (every driver here). */
  readonly createOnly: boolean;
  /** `get({ ifMatch })` fails with a precondition error when the etag differs. */
  readonly conditionalGet: boolean;
  /** `delete({ ifMatch })` is evaluated by the backend. */
  readonly conditionalDelete: boolean;
  /** `presignGet` / `presignPut` return URLs a plain HTTP client can use. */
  readonly presign: boolean;
  /** Object tags are stored and read back. */
  readonly tags: boolean;
  /** Storage classes accepted by `put({ storageClass })` (empty: the option is ignored). */
  readonly storageClasses: readonly string[];
  /** `createMultipart`, `presignPart`, `listParts`, `completeMultipart`, `abortMultipart` work. */
  readonly multipart: boolean;
  /** The etag of an object written by one PUT is the hex MD5 of its body (S3 without SSE-KMS, OSS). */
  readonly md5Etags: boolean;
  /** Presigned uploads can be bound to a SHA-256 checksum the backend verifies (AWS S3). */
  readonly checksumSha256: boolean;
  /**
   * Storage classes whose objects must be restored (`restore`) before they can be read; empty where
   * every class reads directly (Ceph RGW, fs, memory).
   */
  readonly restoreClasses: readonly string[];
  /** `get({ range })` returns just the asked bytes, with the whole object's size (every driver here). */
  readonly ranges: boolean;
  /**
   * `append(key, body, { position })` adds bytes at the end of an appendable object only when
   * `position` is its current length, atomically (OSS AppendObject; memory; fs within one process).
   * Without it `append` throws `UnsupportedError` (s3).
   */
  readonly positionAppend: boolean;
}

/**
 * Bytes of an object to read, as HTTP `Range` says them: `{ start, end }` with an inclusive `end`
 * (`bytes=start-end`; `end` omitted: to the end of the object), or `{ suffix }`, the last `suffix`
 * bytes (`bytes=-suffix`). An `end` past the object is clipped and a suffix longer than the object
 * reads all of it; a `start` at or past the object's size (and any range of an empty object) fails
 * with `RangeNotSatisfiableError`.
 */
export type ByteRange =
  | { readonly start: number; readonly end?: number; readonly suffix?: never }
  | { readonly suffix: number; readonly start?: never; readonly end?: never };

/** Options of `get`. */
export interface GetOptions {
  /** Read only if the current etag equals this one (`ObjectConditionFailedError` otherwise). */
  readonly ifMatch?: string;
  /** Read only these bytes; needs `capabilities.ranges`. */
  readonly range?: ByteRange;
}

/** The restore state of an object in an archive class (`x-amz-restore` / `x-oss-restore`). */
export interface RestoreStatus {
  /** True while the restore runs; false once the restored copy can be read. */
  readonly ongoing: boolean;
  /** When the restored copy goes away again. */
  readonly expiresAt?: Date;
}

/** An object's attributes, as returned by `head` and `get`. */
export interface ObjectInfo {
  readonly key: string;
  /** The backend's etag without quotes and without `W/`: opaque, unordered, may repeat. */
  readonly etag: string;
  readonly size: number;
  readonly lastModified: Date;
  readonly contentType?: string;
  /** User metadata; keys are lower case. */
  readonly metadata: Readonly<Record<string, string>>;
  /** Present when the driver read them (`head(key, { tags: true })`, or cheaply with the object). */
  readonly tags?: Readonly<Record<string, string>>;
  readonly storageClass?: string;
  /** The `Content-Encoding` the object was stored with (`gzip`, `br`). */
  readonly contentEncoding?: string;
  /** Present when a restore was asked for (objects in `capabilities.restoreClasses`). */
  readonly restore?: RestoreStatus;
  /**
   * True for an object written by `append` (OSS `x-oss-object-type: Appendable`); absent for a
   * normal object. A `put` over an appendable object makes it a normal one.
   */
  readonly appendable?: boolean;
}

/** An object with its body. */
export interface StoredObject extends ObjectInfo {
  /** The whole object, or with `get({ range })` the bytes of `range` (while `size` is the whole object's). */
  readonly body: Uint8Array;
  /** With `get({ range })`: the bytes `body` holds, inclusive offsets into the object. */
  readonly range?: { readonly start: number; readonly end: number };
}

/** Options of `put`. */
export interface PutOptions {
  /** Default `application/octet-stream`. */
  readonly contentType?: string;
  /** Keys `[a-z0-9-]`, values printable ASCII (what S3 and OSS headers carry). */
  readonly metadata?: Readonly<Record<string, string>>;
  /** At most 10 tags (the S3 and OSS limit). */
  readonly tags?: Readonly<Record<string, string>>;
  /** One of `capabilities.storageClasses`; default the backend's standard class. */
  readonly storageClass?: string;
  /** Stored as the object's `Content-Encoding` (the body is already encoded). */
  readonly contentEncoding?: string;
  /**
   * Write only if the current etag equals this one; a missing object fails the condition too
   * (`ObjectConditionFailedError`). Needs `capabilities.conditionalOverwrite`.
   */
  readonly ifMatch?: string;
  /** `'*'`: write only if no object exists (create-only). */
  readonly ifNoneMatch?: '*';
}

/**
 * Options of `append`. `position` must equal the object's current length (0 creates an absent
 * object). `contentType`, `metadata`, `tags` and `storageClass` take effect only on the append that
 * creates the object and are ignored afterwards, as on OSS.
 */
export interface AppendObjectOptions {
  /** The byte offset the body goes to: the object's current length; 0 for a new object. */
  readonly position: number;
  /** Default `application/octet-stream`. */
  readonly contentType?: string;
  readonly metadata?: Readonly<Record<string, string>>;
  /** At most 10 tags; OSS stores them from the creating append's `x-oss-tagging`. */
  readonly tags?: Readonly<Record<string, string>>;
  /** One of `capabilities.storageClasses` an appendable object may have (OSS: not the cold archives). */
  readonly storageClass?: string;
}

/** Result of `append`: the object's new etag and the position of the next append (its new length). */
export interface AppendObjectResult {
  readonly etag: string;
  readonly nextPosition: number;
}

/** Options of `list`. */
export interface ListOptions {
  /** Only keys starting with this. */
  readonly prefix?: string;
  /** Group keys that share the prefix up to this string into `prefixes` (usually `/`). */
  readonly delimiter?: string;
  /** Only keys strictly after this one (UTF-8 byte order). */
  readonly startAfter?: string;
  /** `nextCursor` of the previous page; opaque. */
  readonly cursor?: string;
  /** Page size, 1 to 1,000; default 1,000. */
  readonly limit?: number;
}

/** One object in a listing. */
export interface ListedObject {
  readonly key: string;
  readonly etag: string;
  readonly size: number;
  readonly lastModified: Date;
  /** The storage class, where the listing reports it (S3, OSS). */
  readonly storageClass?: string;
}

/** One page of a listing, in UTF-8 byte order of keys. */
export interface ObjectListPage {
  readonly objects: ListedObject[];
  /** Common prefixes (with `delimiter`), each ending with the delimiter. */
  readonly prefixes: string[];
  /** Present when there is more to list. */
  readonly nextCursor?: string;
}

/** A key `deleteMany` could not delete. */
export interface DeleteFailure {
  readonly key: string;
  readonly code: string;
  readonly message: string;
}

/** Result of `deleteMany`: every key is either deleted or reported. */
export interface DeleteManyResult {
  readonly deleted: string[];
  readonly failed: DeleteFailure[];
}

/** Options of `copy`; anything given replaces the source's value, anything omitted is kept. */
export interface CopyOptions {
  readonly metadata?: Readonly<Record<string, string>>;
  readonly tags?: Readonly<Record<string, string>>;
  readonly storageClass?: string;
  readonly contentType?: string;
}

/** Options of the presigned URLs. */
export interface PresignOptions {
  /** Seconds the URL stays valid; default 900. */
  readonly expiresIn?: number;
  /** PUT only: the content type the uploader must send. */
  readonly contentType?: string;
}

/** What a presigned upload binds: the backend refuses a body that does not match. */
export interface PresignUploadOptions {
  /** Seconds the URL stays valid; default 900. */
  readonly expiresIn?: number;
  /** Exact body length in bytes (a signed header where the backend signs it). */
  readonly contentLength: number;
  /** Base64 MD5 of the body: S3, RGW and OSS refuse another body (400 BadDigest / InvalidDigest). */
  readonly contentMd5: string;
  /** Base64 SHA-256 of the body, where `capabilities.checksumSha256`. */
  readonly checksumSha256?: string;
  readonly contentType?: string;
  readonly contentEncoding?: string;
  readonly storageClass?: string;
  readonly tags?: Readonly<Record<string, string>>;
  readonly metadata?: Readonly<Record<string, string>>;
}

/** A request a plain HTTP client makes: the URL and the headers it must send as they are. */
export interface PresignedRequest {
  readonly method: 'GET' | 'PUT';
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly expiresAt: Date;
}

/** Options of `createMultipart`: what the assembled object is stored with. */
export interface MultipartOptions {
  readonly contentType?: string;
  readonly contentEncoding?: string;
  readonly storageClass?: string;
  readonly tags?: Readonly<Record<string, string>>;
  readonly metadata?: Readonly<Record<string, string>>;
}

/** An uploaded part, as `listParts` reports it. */
export interface UploadedPart {
  readonly partNumber: number;
  /** The part's etag: the hex MD5 of its bytes on S3, RGW and OSS (case may differ). */
  readonly etag: string;
  readonly size: number;
}

/** The object-storage driver interface. */
export interface ObjectStoreDriver {
  /** Short backend name: `s3`, `oss`, `fs`, `memory`. */
  readonly name: string;
  readonly capabilities: DriverCapabilities;
  /**
   * The object, or `ObjectNotFoundError`; with `ifMatch`, `ObjectConditionFailedError` on a different
   * etag; with `range`, only those bytes (`RangeNotSatisfiableError` when none of the object is in it).
   */
  get(key: string, options?: GetOptions): Promise<StoredObject>;
  /** The object's attributes, or `ObjectNotFoundError`; `tags: true` also reads its tags. */
  head(key: string, options?: { readonly tags?: boolean }): Promise<ObjectInfo>;
  /** Writes the whole object and returns its new etag. */
  put(key: string, body: Uint8Array | string, options?: PutOptions): Promise<{ etag: string }>;
  /** Deletes one object; absent is success unless `ifMatch` is given (then it fails the condition). */
  delete(key: string, options?: { readonly ifMatch?: string }): Promise<void>;
  /** Deletes many objects, in batches of at most 1,000; never throws for a per-key failure. */
  deleteMany(keys: readonly string[]): Promise<DeleteManyResult>;
  /** One page of keys. */
  list(options?: ListOptions): Promise<ObjectListPage>;
  /**
   * Server-side copy (also onto itself, which refreshes the last-modified time). An appendable
   * source is refused with `UnsupportedError` on every driver, as OSS refuses to copy one.
   */
  copy(source: string, target: string, options?: CopyOptions): Promise<{ etag: string }>;
  /**
   * Appends `body` at `options.position`, which must be the object's current length (0 creates an
   * absent object, or appends to an empty appendable one). A wrong position writes nothing and
   * throws `ObjectConditionFailedError` whose `nextPosition` is the current length; an existing
   * normal object (written by `put`, `copy` or a multipart upload) throws `ObjectNotAppendableError`
   * (a subclass of it, without `nextPosition`). Never retried by the driver: an error without an
   * answer (network, 5xx) leaves the outcome unknown, and a retry at the same position cannot apply
   * twice. Needs `capabilities.positionAppend` (`UnsupportedError` otherwise).
   */
  append(key: string, body: Uint8Array | string, options: AppendObjectOptions): Promise<AppendObjectResult>;
  /** A URL that GETs the object; `UnsupportedError` unless `capabilities.presign`. */
  presignGet(key: string, options?: PresignOptions): Promise<string>;
  /** A URL that PUTs the object; `UnsupportedError` unless `capabilities.presign`. */
  presignPut(key: string, options?: PresignOptions): Promise<string>;
  /** A PUT bound to the body's length and digest (and what it is stored with); needs `presign`. */
  presignUpload(key: string, options: PresignUploadOptions): Promise<PresignedRequest>;
  /** Starts a multipart upload and returns its id; needs `capabilities.multipart`. */
  createMultipart(key: string, options?: MultipartOptions): Promise<string>;
  /** A PUT of one part (1 to 10,000), bound to its length and MD5. */
  presignPart(
    key: string,
    uploadId: string,
    partNumber: number,
    options: Pick<PresignUploadOptions, 'expiresIn' | 'contentLength' | 'contentMd5'>,
  ): Promise<PresignedRequest>;
  /** Every uploaded part, in part order; `ObjectNotFoundError` for an unknown upload. */
  listParts(key: string, uploadId: string): Promise<UploadedPart[]>;
  /** Assembles the parts into the object; returns its etag. */
  completeMultipart(
    key: string,
    uploadId: string,
    parts: readonly Pick<UploadedPart, 'partNumber' | 'etag'>[],
  ): Promise<{ etag: string }>;
  /** Drops an unfinished upload and its parts (absent is success). */
  abortMultipart(key: string, uploadId: string): Promise<void>;
  /**
   * Asks for a readable copy of an object in an archive class for `days`; `started` when this call
   * started it, `ongoing` while one runs, `done` when the copy is readable.
   */
  restore(key: string, options?: { readonly days?: number }): Promise<'started' | 'ongoing' | 'done'>;
  /** Releases sockets or handles; the driver is unusable afterwards. */
  close(): Promise<void>;
}

/** The driver methods of direct transfer (presigned URLs, multipart, restore). */
export type DirectTransfer = Pick<
  ObjectStoreDriver,
  | 'presignGet'
  | 'presignPut'
  | 'presignUpload'
  | 'createMultipart'
  | 'presignPart'
  | 'listParts'
  | 'completeMultipart'
  | 'abortMultipart'
  | 'restore'
>;

/** Most keys one `deleteMany` request may carry on S3 and OSS. */
export const DELETE_BATCH_LIMIT = 1000;
/** Largest page `list` returns. */
export const MAX_LIST_LIMIT = 1000;
