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
}

/** An object with its body. */
export interface StoredObject extends ObjectInfo {
  readonly body: Uint8Array;
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
  /**
   * Write only if the current etag equals this one; a missing object fails the condition too
   * (`ObjectConditionFailedError`). Needs `capabilities.conditionalOverwrite`.
   */
  readonly ifMatch?: string;
  /** `'*'`: write only if no object exists (create-only). */
  readonly ifNoneMatch?: '*';
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

/** The object-storage driver interface. */
export interface ObjectStoreDriver {
  /** Short backend name: `s3`, `oss`, `fs`, `memory`. */
  readonly name: string;
  readonly capabilities: DriverCapabilities;
  /** The object, or `ObjectNotFoundError`; with `ifMatch`, `ObjectConditionFailedError` on a different etag. */
  get(key: string, options?: { readonly ifMatch?: string }): Promise<StoredObject>;
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
  /** Server-side copy (also onto itself, which refreshes the last-modified time). */
  copy(source: string, target: string, options?: CopyOptions): Promise<{ etag: string }>;
  /** A URL that GETs the object; `UnsupportedError` unless `capabilities.presign`. */
  presignGet(key: string, options?: PresignOptions): Promise<string>;
  /** A URL that PUTs the object; `UnsupportedError` unless `capabilities.presign`. */
  presignPut(key: string, options?: PresignOptions): Promise<string>;
  /** Releases sockets or handles; the driver is unusable afterwards. */
  close(): Promise<void>;
}

/** Most keys one `deleteMany` request may carry on S3 and OSS. */
export const DELETE_BATCH_LIMIT = 1000;
/** Largest page `list` returns. */
export const MAX_LIST_LIMIT = 1000;
