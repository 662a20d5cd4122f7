/**
 * Alibaba Cloud OSS driver (ali-oss).
 *
 * Create-only writes use `x-oss-forbid-overwrite: true`, which OSS evaluates atomically (409
 * FileAlreadyExists). OSS has no compare-and-swap overwrite, so `put({ ifMatch })` is refused with
 * `UnsupportedError` and never silently applied (`capabilities.conditionalOverwrite` is false).
 * DeleteMultipleObjects reports only what it deleted, so every key of a batch that is not listed
 * as deleted is reported as failed. PutObject never carries `If-Match` / `If-None-Match` (OSS
 * answers them 400 NotImplemented).
 *
 * `append` is AppendObject (`POST /<key>?append&position=P`, ali-oss `client.append`), sent ONCE:
 * it is the one call the driver never retries (a retry cannot apply twice, it gets the 409, but the
 * caller must learn that the first answer was lost). 409 PositionNotEqualToLength becomes
 * `ObjectConditionFailedError` with `nextPosition` from the answer's `x-oss-next-append-position`
 * (ali-oss drops the headers of an error answer, so the driver's client keeps them; a HEAD asks
 * when they are missing), 409 ObjectNotAppendable `ObjectNotAppendableError`. The creating append
 * (`position: 0`) carries the content type, `x-oss-meta-*`, `x-oss-tagging` and the storage class;
 * later appends carry none of them (OSS ignores or refuses them there). `head` and `get` report
 * `appendable` from `x-oss-object-type: Appendable`. OSS refuses to CopyObject an appendable object;
 * the driver reports that as `UnsupportedError`, as the other drivers do.
 */

import OSS from 'ali-oss';
import { DEFAULTS } from '../contract/defaults.js';
import { BACKOFF, backoff } from '../util/backoff.js';
import { callerIdentity } from '../util/identity.js';
import { BaseDriver, type PartOptions } from './base.js';
import { bareEtag, encodeTags, mapBackendError, parseRestore, rangedBody, rangeHeader } from './common.js';
import {
  type BackendResource,
  ObjectConditionFailedError,
  ObjectNotFoundError,
  type ObjectStoreError,
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

const NAME = 'oss';
/** OSS storage classes. */
export const OSS_STORAGE_CLASSES = ['Standard', 'IA', 'Archive', 'ColdArchive', 'DeepColdArchive'] as const;
/** The classes an appendable object may be created in (AppendObject refuses the cold archives). */
const APPENDABLE_CLASSES = ['Standard', 'IA', 'Archive'] as const;

/** Options of the OSS driver. */
export interface OssDriverOptions {
  readonly bucket: string;
  /** A client to use (tests inject one); default one built from the options below. */
  readonly client?: OSS;
  /** For example `oss-cn-hangzhou`; needed unless `endpoint` is given. */
  readonly region?: string;
  /** A custom or local endpoint (`http://localhost:9000` turns on path-style addressing). */
  readonly endpoint?: string;
  readonly accessKeyId: string;
  readonly accessKeySecret: string;
  /** An STS token, for temporary credentials (Function Compute's role). */
  readonly stsToken?: string;
  /** Request timeout in ms; default 60,000. */
  readonly timeoutMs?: number;
  /**
   * Attempts per request, retries included, on 5xx, 429 and network errors, with jittered
   * exponential backoff (ali-oss has no retries of its own for buffer bodies); default 3. `append`
   * is never retried.
   */
  readonly maxAttempts?: number;
}

type Headers = Record<string, string | undefined>;
type TaggingClient = { getObjectTagging(name: string): Promise<{ tag: Record<string, string> }> };
/** What ali-oss's private `requestError` turns an error answer into (it keeps no headers). */
type ErrorMaker = { requestError(result: { headers?: Headers }): Promise<Error> };

/** Builds the ali-oss client the driver uses. */
export function createOssClient(options: Omit<OssDriverOptions, 'client'>): OSS {
  const local =
    options.endpoint !== undefined && /^http:\/\/(localhost|127\.0\.0\.1)[:/]/.test(options.endpoint);
  return new OSS({
    bucket: options.bucket,
    region: options.region,
    endpoint: options.endpoint,
    accessKeyId: options.accessKeyId,
    accessKeySecret: options.accessKeySecret,
    stsToken: options.stsToken,
    secure: !local,
    timeout: options.timeoutMs ?? 60_000,
    // Path-style (`/<bucket>/<key>`) for a local endpoint, as OSS's second-level-domain mode.
    ...(local ? { sldEnable: true } : {}),
  } as OSS.Options);
}

/** Creates an OSS driver for one bucket. */
export function createOssDriver(options: OssDriverOptions): ObjectStoreDriver {
  return new OssDriver(options);
}

class OssDriver extends BaseDriver {
  /** Every call but `append`, retried on transient errors. */
  private readonly client: OSS;
  /** `append` only: never retried, and its error answers keep their headers. */
  private readonly appender: OSS;
  /** The bucket and the access key id, for the log line of a refusal. */
  private readonly named: { readonly bucket?: string; readonly accessKeyId?: string };

  constructor(options: OssDriverOptions) {
    super(NAME, {
      conditionalOverwrite: false,
      createOnly: true,
      conditionalGet: true,
      conditionalDelete: false,
      presign: true,
      tags: true,
      storageClasses: OSS_STORAGE_CLASSES,
      md5Etags: true,
      multipart: true,
      checksumSha256: false,
      restoreClasses: ['Archive', 'ColdArchive', 'DeepColdArchive'],
      ranges: true,
      positionAppend: true,
    } satisfies DriverCapabilities);
    const raw = options.client ?? createOssClient(options);
    this.client = withRetries(raw, options.maxAttempts ?? 3);
    this.appender = keepingErrorHeaders(raw);
    this.named = (raw as unknown as { options?: OssDriver['named'] }).options ?? {};
  }

  protected override get appendStorageClasses(): readonly string[] {
    return APPENDABLE_CLASSES;
  }

  protected override mapError(error: unknown, key: string): ObjectStoreError {
    const { status, code, message } = (error ?? {}) as { status?: number; code?: string; message?: string };
    return mapBackendError(
      error,
      key,
      NAME,
      {
        status,
        code,
        retryable: transient(error),
        ...(this.named.bucket ? { bucket: this.named.bucket } : {}),
        identity: callerIdentity(message, this.named.accessKeyId),
      },
      UNAVAILABLE,
    );
  }

  /** A presigned request; OSS V1 signs Content-MD5, Content-Type and the x-oss-* headers. */
  private presigned(
    key: string,
    expiresIn: number,
    headers: Record<string, string>,
    subResource?: Record<string, string>,
  ): PresignedRequest {
    const signed: Record<string, unknown> = { method: 'PUT', expires: expiresIn };
    for (const [name, value] of Object.entries(headers)) {
      if (name === 'content-md5') signed['Content-MD5'] = value;
      else if (name === 'content-type') signed['Content-Type'] = value;
      else if (name.startsWith('x-oss-')) signed[name] = value;
    }
    if (subResource) signed.subResource = subResource;
    const url = this.client.signatureUrl(key, signed as OSS.SignatureUrlOptions);
    return { method: 'PUT', url, headers, expiresAt: new Date(Date.now() + expiresIn * 1000) };
  }

  private info(key: string, headers: Headers, size: number): Omit<StoredObject, 'body'> {
    const metadata: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) {
      if (name.startsWith('x-oss-meta-') && value !== undefined)
        metadata[name.slice('x-oss-meta-'.length)] = value;
    }
    return {
      key,
      etag: bareEtag(headers.etag),
      size,
      lastModified: new Date(headers['last-modified'] ?? 0),
      contentType: headers['content-type'],
      metadata,
      storageClass: headers['x-oss-storage-class'] ?? 'Standard',
      ...(headers['content-encoding'] ? { contentEncoding: headers['content-encoding'] } : {}),
      ...(headers['x-oss-restore'] ? { restore: parseRestore(headers['x-oss-restore']) } : {}),
      ...(headers['x-oss-object-type'] === 'Appendable' ? { appendable: true } : {}),
    };
  }

  private async tagsOf(key: string): Promise<Record<string, string>> {
    // ali-oss has getObjectTagging; its type declarations lack it.
    const out = await (this.client as unknown as TaggingClient).getObjectTagging(key);
    return { ...out.tag };
  }

  protected async headObject(key: string, withTags: boolean): Promise<ObjectInfo> {
    const [out, tags] = await Promise.all([this.client.head(key), withTags ? this.tagsOf(key) : undefined]);
    const headers = out.res.headers as Headers;
    return { ...this.info(key, headers, Number(headers['content-length'] ?? 0)), ...(tags ? { tags } : {}) };
  }

  protected async getObject(key: string, o: GetOptions): Promise<StoredObject> {
    const { client } = this;
    const headers: Headers = o.ifMatch === undefined ? {} : { 'If-Match': `"${o.ifMatch}"` };
    if (o.range) {
      headers.Range = rangeHeader(o.range);
      // Without it OSS ignores a range reaching past the object (200, the whole object) instead
      // of clipping its end (206) or refusing a start past it (416 InvalidRange), as S3 does.
      headers['x-oss-range-behavior'] = 'standard';
    }
    // As a stream: urllib would gunzip a body stored with Content-Encoding: gzip. A streamed
    // error is not parsed (no OSS error code): the plain GET is asked again for it.
    const out = await client
      .getStream(key, { headers } as OSS.GetStreamOptions)
      .catch(async (error: { status?: number; code?: string }) => {
        if ((error.status ?? 0) >= 400 && (!error.code || error.code === 'UnknownError'))
          await client.get(key, undefined, { headers } as OSS.GetObjectOptions);
        throw error;
      });
    const chunks: Buffer[] = [];
    for await (const chunk of out.stream as AsyncIterable<Buffer>) chunks.push(chunk);
    const whole = new Uint8Array(Buffer.concat(chunks));
    const answered = out.res.headers as Headers;
    if (!o.range) return { ...this.info(key, answered, whole.byteLength), body: whole };
    const { body, size, range } = rangedBody(whole, o.range, answered['content-range'], key, NAME);
    return { ...this.info(key, answered, size), body, range };
  }

  protected async putObject(key: string, body: Uint8Array, o: PutOptions): Promise<{ etag: string }> {
    // Never If-Match / If-None-Match (OSS: 400 NotImplemented); create-only is x-oss-forbid-overwrite.
    const headers: Headers = {};
    if (o.ifNoneMatch === '*') headers['x-oss-forbid-overwrite'] = 'true';
    if (o.tags && Object.keys(o.tags).length > 0) headers['x-oss-tagging'] = encodeTags(o.tags);
    if (o.storageClass) headers['x-oss-storage-class'] = o.storageClass;
    if (o.contentEncoding) headers['content-encoding'] = o.contentEncoding;
    const out = await this.client.put(key, Buffer.from(body), {
      mime: o.contentType ?? 'application/octet-stream',
      meta: { ...o.metadata } as OSS.UserMeta,
      headers,
    });
    return { etag: bareEtag((out.res.headers as Headers).etag) };
  }

  protected override async appendObject(
    key: string,
    body: Uint8Array,
    o: AppendObjectOptions,
  ): Promise<AppendObjectResult> {
    const creating = o.position === 0;
    const headers: Headers = {};
    if (creating && o.tags && Object.keys(o.tags).length > 0) headers['x-oss-tagging'] = encodeTags(o.tags);
    if (creating && o.storageClass) headers['x-oss-storage-class'] = o.storageClass;
    try {
      const out = await this.appender.append(key, Buffer.from(body), {
        position: String(o.position),
        mime: (creating ? o.contentType : undefined) ?? 'application/octet-stream',
        ...(creating && o.metadata ? { meta: { ...o.metadata } as OSS.UserMeta } : {}),
        headers,
      });
      const answered = out.res.headers as Headers;
      const next = Number(out.nextAppendPosition ?? answered['x-oss-next-append-position']);
      return {
        etag: bareEtag(answered.etag),
        nextPosition: Number.isSafeInteger(next) ? next : o.position + body.byteLength,
      };
    } catch (error) {
      const { code, headers: answered } = error as { code?: string; headers?: Headers };
      if (code !== 'PositionNotEqualToLength') throw error;
      const said = Number(answered?.['x-oss-next-append-position'] ?? Number.NaN);
      // Without the header (a client that drops it), the current length from a HEAD; absent: 0.
      const nextPosition = Number.isSafeInteger(said)
        ? said
        : await this.headObject(key, false).then(
            (info) => info.size,
            (e: unknown) => {
              if (this.mapError(e, key) instanceof ObjectNotFoundError) return 0;
              throw e;
            },
          );
      throw new ObjectConditionFailedError(key, NAME, { cause: error, nextPosition });
    }
  }

  protected async deleteObject(key: string): Promise<void> {
    try {
      await this.client.delete(key);
    } catch (error) {
      const mapped = this.mapError(error, key);
      if (!(mapped instanceof ObjectNotFoundError)) throw mapped;
    }
  }

  protected async deleteBatch(keys: readonly string[]): Promise<DeleteManyResult> {
    const out = await this.client.deleteMulti([...keys], { quiet: false });
    const done = new Set((out.deleted as unknown as Array<{ Key: string }>).map((d) => d.Key));
    const deleted: string[] = [];
    const failed: DeleteFailure[] = [];
    for (const key of keys) {
      if (done.has(key)) deleted.push(key);
      else failed.push({ key, code: 'NotDeleted', message: 'OSS did not report the key as deleted' });
    }
    return { deleted, failed };
  }

  protected async listObjects(o: ListOptions & { limit: number }): Promise<ObjectListPage> {
    const query: Record<string, string> = { 'max-keys': String(o.limit) };
    if (o.prefix) query.prefix = o.prefix;
    if (o.delimiter) query.delimiter = o.delimiter;
    if (o.startAfter !== undefined) query['start-after'] = o.startAfter;
    if (o.cursor !== undefined) query['continuation-token'] = o.cursor;
    const out = await this.client.listV2(query as OSS.ListV2ObjectsQuery, {});
    return {
      objects: (out.objects ?? []).map((c) => ({
        key: c.name,
        etag: bareEtag(c.etag),
        size: Number(c.size),
        lastModified: new Date(c.lastModified),
        storageClass: c.storageClass ?? 'Standard',
      })),
      prefixes: out.prefixes ?? [],
      ...(out.isTruncated && out.nextContinuationToken ? { nextCursor: out.nextContinuationToken } : {}),
    };
  }

  protected async copyObject(source: string, target: string, o: CopyOptions): Promise<{ etag: string }> {
    // Everything is restated (REPLACE), so a copy onto itself is valid and nothing is lost.
    const from =
      o.metadata && o.tags && o.contentType && o.storageClass
        ? undefined
        : await this.headObject(source, !o.tags);
    if (from?.appendable) throw new UnsupportedError('copy of an appendable object', NAME);
    const tags = o.tags ?? from?.tags ?? {};
    const headers: Headers = {
      'content-type': o.contentType ?? from?.contentType ?? 'application/octet-stream',
      'x-oss-tagging-directive': 'Replace',
      'x-oss-tagging': encodeTags(tags),
      'x-oss-storage-class': o.storageClass ?? from?.storageClass ?? 'Standard',
      ...(from?.contentEncoding ? { 'content-encoding': from.contentEncoding } : {}),
    };
    try {
      const out = await this.client.copy(target, source, {
        meta: { ...(o.metadata ?? from?.metadata) } as OSS.UserMeta,
        headers,
      } as OSS.CopyObjectOptions);
      return { etag: bareEtag(out.data?.etag) };
    } catch (error) {
      // OSS refuses to copy an appendable object (the source was not read when every option was given).
      const status = (error as { status?: number }).status ?? 0;
      if (!from && status >= 400 && status < 500 && status !== 404) {
        const current = await this.headObject(source, false).catch(() => undefined);
        if (current?.appendable) throw new UnsupportedError('copy of an appendable object', NAME);
      }
      throw error;
    }
  }

  protected override async signGet(key: string, o: PresignOptions): Promise<string> {
    return this.client.signatureUrl(key, {
      method: 'GET',
      expires: o.expiresIn ?? DEFAULTS.presignExpiresSeconds,
    });
  }

  protected override async signPut(key: string, o: PresignOptions): Promise<string> {
    return this.client.signatureUrl(key, {
      method: 'PUT',
      expires: o.expiresIn ?? DEFAULTS.presignExpiresSeconds,
      ...(o.contentType ? { 'Content-Type': o.contentType } : {}),
    } as OSS.SignatureUrlOptions);
  }

  protected override async signUpload(key: string, o: PresignUploadOptions): Promise<PresignedRequest> {
    return this.presigned(key, o.expiresIn ?? DEFAULTS.presignExpiresSeconds, {
      'content-length': String(o.contentLength),
      'content-md5': o.contentMd5,
      'content-type': o.contentType ?? 'application/octet-stream',
      ...storedWith(o),
    });
  }

  protected override async startUpload(key: string, o: MultipartOptions): Promise<string> {
    const out = await this.client.initMultipartUpload(key, {
      mime: o.contentType ?? 'application/octet-stream',
      headers: storedWith(o),
    } as OSS.InitMultipartUploadOptions);
    return out.uploadId;
  }

  protected override async signPart(
    key: string,
    uploadId: string,
    partNumber: number,
    o: PartOptions,
  ): Promise<PresignedRequest> {
    return this.presigned(
      key,
      o.expiresIn ?? DEFAULTS.presignExpiresSeconds,
      { 'content-length': String(o.contentLength), 'content-md5': o.contentMd5 },
      { partNumber: String(partNumber), uploadId },
    );
  }

  protected override async partsOf(key: string, uploadId: string): Promise<UploadedPart[]> {
    const parts: UploadedPart[] = [];
    let marker: string | undefined;
    do {
      const out = await this.client.listParts(key, uploadId, {
        'max-parts': '1000',
        ...(marker ? { 'part-number-marker': marker } : {}),
      } as unknown as OSS.ListPartsQuery);
      // One part comes back as an object, not an array.
      const listed = ([] as unknown[]).concat(out.parts) as Array<{
        PartNumber: string;
        ETag: string;
        Size: string;
      }>;
      for (const p of listed)
        parts.push({ partNumber: Number(p.PartNumber), etag: bareEtag(p.ETag), size: Number(p.Size) });
      const next = out.nextPartNumberMarker as unknown as string | undefined;
      marker = String(out.isTruncated) === 'true' && next ? next : undefined;
    } while (marker);
    return parts;
  }

  protected override async finishUpload(
    key: string,
    uploadId: string,
    parts: readonly Pick<UploadedPart, 'partNumber' | 'etag'>[],
  ): Promise<{ etag: string }> {
    const out = await this.client.completeMultipartUpload(
      key,
      uploadId,
      parts.map((p) => ({ number: p.partNumber, etag: `"${p.etag}"` })),
    );
    const etag = bareEtag((out.res.headers as Headers).etag ?? (out.data as { ETag?: string })?.ETag);
    return { etag: etag || (await this.headObject(key, false)).etag };
  }

  protected override async abortUpload(key: string, uploadId: string): Promise<void> {
    try {
      await this.client.abortMultipartUpload(key, uploadId);
    } catch (error) {
      const mapped = this.mapError(error, key);
      if (!(mapped instanceof ObjectNotFoundError)) throw mapped;
    }
  }

  protected override async restoreObject(key: string, days: number): Promise<'started' | 'ongoing' | 'done'> {
    try {
      const current = await this.headObject(key, false);
      await this.client.restore(key, {
        type: current.storageClass,
        Days: days,
      } as Parameters<OSS['restore']>[1]);
      return 'started';
    } catch (error) {
      const { status, code } = error as { status?: number; code?: string };
      // ali-oss expects 202 only; OSS answers 200 when the restored copy is already there.
      if (status === 200) return 'done';
      if (code === 'RestoreAlreadyInProgress') return 'ongoing';
      if (code === 'OperationNotSupported') return 'done';
      throw error;
    }
  }
}

/** The x-oss-* headers of what an upload is stored with (checked by the base). */
function storedWith(o: {
  readonly storageClass?: string;
  readonly tags?: Readonly<Record<string, string>>;
  readonly metadata?: Readonly<Record<string, string>>;
  readonly contentEncoding?: string;
}): Record<string, string> {
  return {
    ...(o.contentEncoding ? { 'content-encoding': o.contentEncoding } : {}),
    ...(o.storageClass ? { 'x-oss-storage-class': o.storageClass } : {}),
    ...(o.tags && Object.keys(o.tags).length > 0 ? { 'x-oss-tagging': encodeTags(o.tags) } : {}),
    ...Object.fromEntries(Object.entries(o.metadata ?? {}).map(([k, v]) => [`x-oss-meta-${k}`, v])),
  };
}

/**
 * The client for `append`: a view of `client` (its prototype) whose error answers keep their
 * headers (`x-oss-next-append-position`), and that never retries on its own even when the client
 * was built with ali-oss's `retryMax`. The client itself is not changed.
 */
function keepingErrorHeaders(client: OSS): OSS {
  const view = Object.create(client) as OSS & ErrorMaker & { options?: { retryMax?: number } };
  const make = (client as unknown as ErrorMaker).requestError;
  view.requestError = async function (this: unknown, result: { headers?: Headers }) {
    const error = await make.call(this, result);
    if (error && result?.headers) Object.defineProperty(error, 'headers', { value: result.headers });
    return error;
  };
  const own = (client as unknown as { options?: { retryMax?: number } }).options;
  if (own?.retryMax) view.options = { ...own, retryMax: 0 };
  return view;
}

/** True for what a retry may fix: 5xx, 429, and network errors (ali-oss reports status -1). */
function transient(error: unknown): boolean {
  const { status } = error as { status?: number };
  return status === undefined || status < 0 || status >= 500 || status === 429;
}

/**
 * The client with every promise-returning call retried on transient errors (jittered exponential
 * backoff, at most 2 s); `signatureUrl` and the other synchronous calls are left as they are.
 */
function withRetries(client: OSS, attempts: number): OSS {
  return new Proxy(client, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const first = value.apply(target, args);
        if (!(first instanceof Promise)) return first;
        const retry = async (attempt: number, pending: Promise<unknown>): Promise<unknown> => {
          try {
            return await pending;
          } catch (error) {
            if (attempt >= attempts || !transient(error)) throw error;
            await backoff(BACKOFF.transient, attempt);
            return retry(attempt + 1, value.apply(target, args));
          }
        };
        return retry(1, first);
      };
    },
  });
}

/** OSS's codes for a missing bucket, a bucket that refuses these credentials, and refused credentials. */
const UNAVAILABLE = new Map<string, BackendResource>([
  ['NoSuchBucket', 'bucket'],
  ['AccessDenied', 'bucket'],
  ['InvalidAccessKeyId', 'credentials'],
  ['SignatureDoesNotMatch', 'credentials'],
  ['InvalidSecurityToken', 'credentials'],
  ['SecurityTokenExpired', 'credentials'],
]);
