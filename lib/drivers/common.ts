/** Checks and helpers shared by the drivers, so each backend file holds only its own protocol. */
import { createHash } from 'node:crypto';
import {
  type BackendResource,
  InvalidArgumentError,
  ObjectArchivedError,
  ObjectConditionFailedError,
  ObjectNotAppendableError,
  ObjectNotFoundError,
  ObjectStoreError,
  RangeNotSatisfiableError,
  UnavailableResourceError,
} from './errors.js';
import {
  type ByteRange,
  type CopyOptions,
  DELETE_BATCH_LIMIT,
  type ListedObject,
  type ListOptions,
  MAX_LIST_LIMIT,
  type ObjectListPage,
  type PutOptions,
  type StoredObject,
} from './types.js';

/** Longest object name accepted: OSS allows 1,023 bytes, S3 1,024. */
export const MAX_KEY_BYTES = 1023;
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const METADATA_KEY = /^[a-z0-9][a-z0-9-]*$/;
const PRINTABLE_ASCII = /^[\u0020-\u007e]*$/;
// S3's documented tag alphabet: letters, digits, spaces and + - = . _ : / @
const TAG_TEXT = /^[\p{L}\p{N} +\-=._:/@]*$/u;

/** Refuses an object key no backend can hold; returns it unchanged. */
export function checkKey(key: string, backend: string): string {
  if (typeof key !== 'string' || key.length === 0)
    throw new InvalidArgumentError('empty object key', backend);
  if (CONTROL.test(key)) throw new InvalidArgumentError('object key contains a control character', backend);
  if (LONE_SURROGATE.test(key))
    throw new InvalidArgumentError('object key contains a lone surrogate', backend);
  // HTTP clients (ali-oss among them) and some servers normalise `.` and `..` path segments, so such
  // a key would be signed as one name and stored as another. The store never builds one.
  if (key.split('/').some((s) => s === '.' || s === '..')) {
    throw new InvalidArgumentError('object key has a "." or ".." segment', backend);
  }
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) {
    throw new InvalidArgumentError(`object key longer than ${MAX_KEY_BYTES} bytes`, backend);
  }
  return key;
}

/** Refuses metadata that S3 or OSS headers cannot carry. */
export function checkMetadata(metadata: Readonly<Record<string, string>> | undefined, backend: string): void {
  for (const [k, v] of Object.entries(metadata ?? {})) {
    if (!METADATA_KEY.test(k))
      throw new InvalidArgumentError(`metadata key must match [a-z0-9-]: ${k}`, backend);
    if (!PRINTABLE_ASCII.test(v))
      throw new InvalidArgumentError(`metadata value must be printable ASCII: ${k}`, backend);
  }
}

/** Refuses tags outside the S3 / OSS limits (10 tags, keys ≤ 128 and values ≤ 256 characters). */
export function checkTags(tags: Readonly<Record<string, string>> | undefined, backend: string): void {
  const entries = Object.entries(tags ?? {});
  if (entries.length > 10) throw new InvalidArgumentError('at most 10 tags', backend);
  for (const [k, v] of entries) {
    if (k.length === 0 || k.length > 128 || v.length > 256 || !TAG_TEXT.test(k) || !TAG_TEXT.test(v)) {
      throw new InvalidArgumentError(`invalid tag: ${k}`, backend);
    }
  }
}

/** Refuses a storage class the driver does not list. */
export function checkStorageClass(
  storageClass: string | undefined,
  allowed: readonly string[],
  backend: string,
) {
  if (storageClass !== undefined && !allowed.includes(storageClass)) {
    throw new InvalidArgumentError(
      `unknown storage class ${storageClass}; use one of ${allowed.join(', ')}`,
      backend,
    );
  }
}

/** An etag without quotes and without the weak prefix. */
export function bareEtag(etag: string | undefined): string {
  return (etag ?? '').replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
}

/** The body as bytes. */
export function toBytes(body: Uint8Array | string): Uint8Array {
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
}

/** The etag of the fs and memory drivers: a hash of the body AND the metadata, so either change shows. */
export function contentEtag(body: Uint8Array, metadata: Readonly<Record<string, string>>): string {
  const hash = createHash('sha256').update(body);
  for (const k of Object.keys(metadata).sort()) hash.update(`\n${k}:${metadata[k]}`);
  return hash.digest('hex').slice(0, 32);
}

/** Query-string form of tags, as S3's `x-amz-tagging` and OSS's `x-oss-tagging` headers carry them. */
export function encodeTags(tags: Readonly<Record<string, string>>): string {
  // Percent-encoding (%20), not form encoding (+): RGW reads `+` literally.
  return Object.entries(tags)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .join('&');
}

/** Splits keys into batches of the backends' delete limit. */
export function deleteBatches(keys: readonly string[]): string[][] {
  const batches: string[][] = [];
  for (let i = 0; i < keys.length; i += DELETE_BATCH_LIMIT)
    batches.push(keys.slice(i, i + DELETE_BATCH_LIMIT));
  return batches;
}

/** Page size of a list call, checked. */
export function listLimit(limit: number | undefined, backend: string): number {
  const n = limit ?? MAX_LIST_LIMIT;
  if (!Number.isInteger(n) || n < 1 || n > MAX_LIST_LIMIT) {
    throw new InvalidArgumentError(`list limit must be 1 to ${MAX_LIST_LIMIT}`, backend);
  }
  return n;
}

/** S3's key order: UTF-8 bytes. */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** An entry of a listing made in process: an object, or a common prefix found without reading below it. */
export type ListEntry = ListedObject | { readonly prefix: string };

/**
 * S3 listing semantics over entries already sorted by `compareKeys`, for the drivers that list in
 * process (fs, memory). The cursor is the base64url of the last key or prefix returned, so paging
 * resumes exactly after it and a common prefix is never returned twice.
 */
export function pageOf(sorted: Iterable<ListEntry>, options: ListOptions, backend: string): ObjectListPage {
  const limit = listLimit(options.limit, backend);
  const prefix = options.prefix ?? '';
  const delimiter = options.delimiter || undefined;
  let after = options.startAfter;
  if (options.cursor !== undefined) {
    const decoded = Buffer.from(options.cursor, 'base64url').toString('utf8');
    if (
      options.cursor === '' ||
      !decoded.startsWith(prefix) ||
      Buffer.from(decoded).toString('base64url') !== options.cursor
    ) {
      throw new InvalidArgumentError('invalid list cursor', backend);
    }
    if (after === undefined || compareKeys(decoded, after) > 0) after = decoded;
  }
  const objects: ListedObject[] = [];
  const prefixes: string[] = [];
  let last: string | undefined;
  for (const entry of sorted) {
    const name = 'prefix' in entry ? entry.prefix : entry.key;
    if (!name.startsWith(prefix)) continue;
    if (after !== undefined && compareKeys(name, after) <= 0) continue;
    let common = 'prefix' in entry ? entry.prefix : undefined;
    if (delimiter !== undefined && common === undefined) {
      const at = name.indexOf(delimiter, prefix.length);
      if (at >= 0) common = name.slice(0, at + delimiter.length);
    }
    // Everything under a prefix already returned (on this page or an earlier one) is skipped.
    if (
      common !== undefined &&
      (common === last || (after !== undefined && name.startsWith(after) && after === common))
    ) {
      continue;
    }
    if (objects.length + prefixes.length === limit) {
      return { objects, prefixes, nextCursor: Buffer.from(last ?? '').toString('base64url') };
    }
    if (common !== undefined) {
      prefixes.push(common);
      last = common;
    } else {
      objects.push(entry as ListedObject);
      last = name;
    }
  }
  return { objects, prefixes };
}

/** Runs async work one at a time per key, in call order (a per-object lock inside one process). */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();
  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    const result = before.then(fn, fn);
    const tail = result.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}

/** The options of the object a copy writes: what `options` gives, else the source's (fs and memory). */
export function copiedOptions(from: StoredObject, options: CopyOptions): PutOptions {
  return {
    contentType: options.contentType ?? from.contentType,
    metadata: options.metadata ?? from.metadata,
    tags: options.tags ?? from.tags,
    storageClass: options.storageClass ?? from.storageClass,
    contentEncoding: from.contentEncoding,
  };
}

/**
 * Parses `x-amz-restore` (and `x-oss-restore`, the same syntax):
 * `ongoing-request="false", expiry-date="Fri, 21 Dec 2012 00:00:00 GMT"`. Here rather than in s3.ts,
 * so that the OSS driver does not load the AWS SDK.
 */
export function parseRestore(header: string): { ongoing: boolean; expiresAt?: Date } {
  const ongoing = /ongoing-request="true"/i.test(header);
  const expiry = /expiry-date="([^"]+)"/i.exec(header)?.[1];
  return { ongoing, ...(expiry ? { expiresAt: new Date(expiry) } : {}) };
}

/** Refuses a malformed `ByteRange` (before any request); returns it unchanged. */
export function checkRange(range: ByteRange, backend: string): ByteRange {
  const whole = (n: unknown, min: number) => Number.isSafeInteger(n) && (n as number) >= min;
  const ok =
    range.suffix !== undefined
      ? range.start === undefined && range.end === undefined && whole(range.suffix, 1)
      : whole(range.start, 0) && (range.end === undefined || whole(range.end, range.start as number));
  if (!ok) {
    throw new InvalidArgumentError(
      'range must be { start ≥ 0, end ≥ start (optional) } or { suffix ≥ 1 }, integers',
      backend,
    );
  }
  return range;
}

/** The HTTP `Range` header of a checked range. */
export function rangeHeader(range: ByteRange): string {
  if (range.suffix !== undefined) return `bytes=-${range.suffix}`;
  return `bytes=${range.start}-${range.end ?? ''}`;
}

/**
 * The inclusive bytes a range selects from an object of `size` bytes, as S3 answers: an end past the
 * object is clipped, a suffix longer than it reads all of it; `RangeNotSatisfiableError` when no byte
 * is selected (a start at or past the size, any range of an empty object).
 */
export function resolveRange(
  range: ByteRange,
  size: number,
  key: string,
  backend: string,
): { start: number; end: number } {
  const start = range.suffix !== undefined ? Math.max(0, size - range.suffix) : (range.start as number);
  const end = range.suffix !== undefined ? size - 1 : Math.min(range.end ?? size - 1, size - 1);
  if (size === 0 || start >= size) throw new RangeNotSatisfiableError(key, backend, size);
  return { start, end };
}

/** `Content-Range: bytes a-b/size` → its numbers; undefined when absent or not of that form. */
export function parseContentRange(
  header: string | undefined,
): { start: number; end: number; size: number } | undefined {
  const match = /^bytes (\d+)-(\d+)\/(\d+)$/.exec((header ?? '').trim());
  if (!match) return undefined;
  return { start: Number(match[1]), end: Number(match[2]), size: Number(match[3]) };
}

/** The object size of a 416 answer's `Content-Range: bytes *\/size`, when it has one. */
export function unsatisfiedSize(header: string | undefined): number | undefined {
  const size = /^bytes \*\/(\d+)$/.exec((header ?? '').trim())?.[1];
  return size === undefined ? undefined : Number(size);
}

/**
 * The body and `range` of a ranged answer: from its `Content-Range` when the backend honoured the
 * range (206), else by slicing the whole body it sent (a backend or proxy that ignored `Range`).
 */
export function rangedBody(
  body: Uint8Array,
  range: ByteRange,
  contentRange: string | undefined,
  key: string,
  backend: string,
): { body: Uint8Array; size: number; range: { start: number; end: number } } {
  const sent = parseContentRange(contentRange);
  if (sent) return { body, size: sent.size, range: { start: sent.start, end: sent.end } };
  const selected = resolveRange(range, body.byteLength, key, backend);
  return {
    body: body.subarray(selected.start, selected.end + 1),
    size: body.byteLength,
    range: selected,
  };
}

/** Refuses an `append` position that is not a whole number of bytes; returns it unchanged. */
export function checkPosition(position: number, backend: string): number {
  if (!Number.isSafeInteger(position) || position < 0) {
    throw new InvalidArgumentError('append position must be an integer ≥ 0', backend);
  }
  return position;
}

/**
 * The etag of an appendable object on the fs and memory drivers: its bytes never change below its
 * length, so the id drawn when it was created and its length name its content (no rehash per append).
 */
export function appendEtag(createdId: string, size: number): string {
  return createHash('sha256').update(`${createdId}:${size}`).digest('hex').slice(0, 32);
}

/** What an HTTP backend's error says, as the S3 and OSS drivers read it from their SDK's error. */
export interface BackendFailure {
  readonly status?: number;
  readonly code?: string;
  /** True when retrying the same call may succeed (5xx, throttling, network). */
  readonly retryable: boolean;
  /** The object's size, where a 416 answer said it. */
  readonly size?: number;
  /** The bucket, named in an `UnavailableResourceError`. */
  readonly bucket?: string;
  /** Who made the request (`callerIdentity`), named in an `UnavailableResourceError`. */
  readonly identity?: string | undefined;
}

/** The code of a 403 answer without one: a HEAD's (its answer has no body to say which refusal). */
const HEAD_REFUSED = 'Forbidden';

/**
 * The typed error for an S3 or OSS error answer (the two share their codes): a missing bucket,
 * access denied or refused credentials (`unavailable`, and a 403 without a code), a missing object or upload, a failed condition (412,
 * `PreconditionFailed`, OSS's `FileAlreadyExists`), OSS's `ObjectNotAppendable`, an archived object,
 * an unsatisfiable range; anything else is an `ObjectStoreError` with `retryable`.
 */
export function mapBackendError(
  error: unknown,
  key: string,
  backend: string,
  failure: BackendFailure,
  unavailable: ReadonlyMap<string, BackendResource>,
): ObjectStoreError {
  if (error instanceof ObjectStoreError) return error;
  const { status } = failure;
  // The SDKs name a bodiless 403 `Unknown` (AWS SDK) or leave it without a code (ali-oss).
  const code =
    status === 403 && (failure.code === undefined || /^(Unknown|UnknownError|Forbidden)$/.test(failure.code))
      ? HEAD_REFUSED
      : failure.code;
  const resource = code === HEAD_REFUSED ? 'bucket' : unavailable.get(code ?? '');
  if (resource) {
    return new UnavailableResourceError(resource, backend, code as string, {
      cause: error,
      resourceName: failure.bucket,
      identity: failure.identity,
    });
  }
  if (status === 404 || code === 'NoSuchKey' || code === 'NotFound' || code === 'NoSuchUpload') {
    return new ObjectNotFoundError(key, backend, { cause: error });
  }
  if (code === 'ObjectNotAppendable') return new ObjectNotAppendableError(key, backend, { cause: error });
  if (status === 412 || code === 'PreconditionFailed' || code === 'FileAlreadyExists') {
    return new ObjectConditionFailedError(key, backend, { cause: error });
  }
  if (code === 'InvalidObjectState') return new ObjectArchivedError(key, backend, { cause: error });
  if (status === 416 || code === 'InvalidRange') {
    return new RangeNotSatisfiableError(key, backend, failure.size, { cause: error });
  }
  return new ObjectStoreError(
    `${backend} ${code ?? 'error'} on ${key}: ${(error as Error).message}`,
    backend,
    {
      cause: error,
      retryable: failure.retryable,
    },
  );
}
