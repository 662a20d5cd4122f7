/**
 * Alibaba Cloud OSS driver (ali-oss).
 *
 * Create-only writes use `x-oss-forbid-overwrite: true`, which OSS evaluates atomically (409
 * FileAlreadyExists). OSS has no compare-and-swap overwrite, so `put({ ifMatch })` is refused with
 * `UnsupportedError` and never silently applied (`capabilities.conditionalOverwrite` is false).
 * DeleteMultipleObjects reports only what it deleted, so every key of a batch that is not listed
 * as deleted is reported as failed.
 */
import OSS from 'ali-oss';
import {
  bareEtag,
  checkKey,
  checkMetadata,
  checkRange,
  checkStorageClass,
  checkTags,
  deleteBatches,
  encodeTags,
  listLimit,
  parseRestore,
  rangedBody,
  rangeHeader,
  toBytes,
} from './common.js';
import {
  type BackendResource,
  ObjectArchivedError,
  ObjectConditionFailedError,
  ObjectNotFoundError,
  ObjectStoreError,
  RangeNotSatisfiableError,
  UnavailableResourceError,
  UnsupportedError,
} from './errors.js';
import type {
  DeleteFailure,
  DriverCapabilities,
  ObjectInfo,
  ObjectStoreDriver,
  PresignedRequest,
  StoredObject,
  UploadedPart,
} from './types.js';

const NAME = 'oss';
/** OSS storage classes. */
export const OSS_STORAGE_CLASSES = ['Standard', 'IA', 'Archive', 'ColdArchive', 'DeepColdArchive'] as const;

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
   * exponential backoff (ali-oss has no retries of its own for buffer bodies); default 3.
   */
  readonly maxAttempts?: number;
}

type Headers = Record<string, string | undefined>;
type TaggingClient = { getObjectTagging(name: string): Promise<{ tag: Record<string, string> }> };

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
  const client = withRetries(options.client ?? createOssClient(options), options.maxAttempts ?? 3);
  const capabilities: DriverCapabilities = {
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
  };

  /** A presigned request; OSS V1 signs Content-MD5, Content-Type and the x-oss-* headers. */
  function presigned(
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
    const url = client.signatureUrl(key, signed as OSS.SignatureUrlOptions);
    return { method: 'PUT', url, headers, expiresAt: new Date(Date.now() + expiresIn * 1000) };
  }

  /** The x-oss-* headers of what an upload is stored with. */
  function storedWith(o: {
    readonly storageClass?: string;
    readonly tags?: Readonly<Record<string, string>>;
    readonly metadata?: Readonly<Record<string, string>>;
    readonly contentEncoding?: string;
  }): Record<string, string> {
    checkMetadata(o.metadata, NAME);
    checkTags(o.tags, NAME);
    checkStorageClass(o.storageClass, OSS_STORAGE_CLASSES, NAME);
    return {
      ...(o.contentEncoding ? { 'content-encoding': o.contentEncoding } : {}),
      ...(o.storageClass ? { 'x-oss-storage-class': o.storageClass } : {}),
      ...(o.tags && Object.keys(o.tags).length > 0 ? { 'x-oss-tagging': encodeTags(o.tags) } : {}),
      ...Object.fromEntries(Object.entries(o.metadata ?? {}).map(([k, v]) => [`x-oss-meta-${k}`, v])),
    };
  }

  function info(key: string, headers: Headers, size: number): Omit<StoredObject, 'body'> {
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
    };
  }

  async function tagsOf(key: string): Promise<Record<string, string>> {
    // ali-oss has getObjectTagging; its type declarations lack it.
    const out = await (client as unknown as TaggingClient).getObjectTagging(key);
    return { ...out.tag };
  }

  async function head(key: string, withTags = false): Promise<ObjectInfo> {
    checkKey(key, NAME);
    try {
      const [out, tags] = await Promise.all([client.head(key), withTags ? tagsOf(key) : undefined]);
      const headers = out.res.headers as Headers;
      return { ...info(key, headers, Number(headers['content-length'] ?? 0)), ...(tags ? { tags } : {}) };
    } catch (error) {
      throw mapError(error, key);
    }
  }

  return {
    name: NAME,
    capabilities,
    async get(key, o = {}) {
      checkKey(key, NAME);
      try {
        if (o.range) checkRange(o.range, NAME);
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
        if (!o.range) return { ...info(key, answered, whole.byteLength), body: whole };
        const { body, size, range } = rangedBody(whole, o.range, answered['content-range'], key, NAME);
        return { ...info(key, answered, size), body, range };
      } catch (error) {
        throw mapError(error, key);
      }
    },
    head: (key, o = {}) => head(key, o.tags),
    async put(key, body, o = {}) {
      checkKey(key, NAME);
      checkMetadata(o.metadata, NAME);
      checkTags(o.tags, NAME);
      checkStorageClass(o.storageClass, OSS_STORAGE_CLASSES, NAME);
      if (o.ifMatch !== undefined) throw new UnsupportedError('conditional overwrite', NAME);
      const headers: Headers = {};
      if (o.ifNoneMatch === '*') headers['x-oss-forbid-overwrite'] = 'true';
      if (o.tags && Object.keys(o.tags).length > 0) headers['x-oss-tagging'] = encodeTags(o.tags);
      if (o.storageClass) headers['x-oss-storage-class'] = o.storageClass;
      if (o.contentEncoding) headers['content-encoding'] = o.contentEncoding;
      try {
        const out = await client.put(key, Buffer.from(toBytes(body)), {
          mime: o.contentType ?? 'application/octet-stream',
          meta: { ...o.metadata } as OSS.UserMeta,
          headers,
        });
        return { etag: bareEtag((out.res.headers as Headers).etag) };
      } catch (error) {
        throw mapError(error, key);
      }
    },
    async delete(key, o = {}) {
      checkKey(key, NAME);
      if (o.ifMatch !== undefined) throw new UnsupportedError('conditional delete', NAME);
      try {
        await client.delete(key);
      } catch (error) {
        const mapped = mapError(error, key);
        if (!(mapped instanceof ObjectNotFoundError)) throw mapped;
      }
    },
    async deleteMany(keys) {
      for (const key of keys) checkKey(key, NAME);
      const deleted: string[] = [];
      const failed: DeleteFailure[] = [];
      for (const batch of deleteBatches(keys)) {
        try {
          const out = await client.deleteMulti(batch, { quiet: false });
          const done = new Set((out.deleted as unknown as Array<{ Key: string }>).map((d) => d.Key));
          for (const key of batch) {
            if (done.has(key)) deleted.push(key);
            else failed.push({ key, code: 'NotDeleted', message: 'OSS did not report the key as deleted' });
          }
        } catch (error) {
          const code = (error as { code?: string }).code ?? 'RequestFailed';
          for (const key of batch) failed.push({ key, code, message: (error as Error).message });
        }
      }
      return { deleted, failed };
    },
    async list(o = {}) {
      const limit = listLimit(o.limit, NAME);
      const query: Record<string, string> = { 'max-keys': String(limit) };
      if (o.prefix) query.prefix = o.prefix;
      if (o.delimiter) query.delimiter = o.delimiter;
      if (o.startAfter !== undefined) query['start-after'] = o.startAfter;
      if (o.cursor !== undefined) query['continuation-token'] = o.cursor;
      try {
        const out = await client.listV2(query as OSS.ListV2ObjectsQuery, {});
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
      } catch (error) {
        throw mapError(error, o.prefix ?? '');
      }
    },
    async copy(source, target, o = {}) {
      checkKey(target, NAME);
      checkMetadata(o.metadata, NAME);
      checkTags(o.tags, NAME);
      checkStorageClass(o.storageClass, OSS_STORAGE_CLASSES, NAME);
      // Everything is restated (REPLACE), so a copy onto itself is valid and nothing is lost.
      const from =
        o.metadata && o.tags && o.contentType && o.storageClass ? undefined : await head(source, !o.tags);
      const tags = o.tags ?? from?.tags ?? {};
      const headers: Headers = {
        'content-type': o.contentType ?? from?.contentType ?? 'application/octet-stream',
        'x-oss-tagging-directive': 'Replace',
        'x-oss-tagging': encodeTags(tags),
        'x-oss-storage-class': o.storageClass ?? from?.storageClass ?? 'Standard',
        ...(from?.contentEncoding ? { 'content-encoding': from.contentEncoding } : {}),
      };
      try {
        const out = await client.copy(target, source, {
          meta: { ...(o.metadata ?? from?.metadata) } as OSS.UserMeta,
          headers,
        } as OSS.CopyObjectOptions);
        return { etag: bareEtag(out.data?.etag) };
      } catch (error) {
        throw mapError(error, source);
      }
    },
    async presignGet(key, o = {}) {
      checkKey(key, NAME);
      return client.signatureUrl(key, { method: 'GET', expires: o.expiresIn ?? 900 });
    },
    async presignPut(key, o = {}) {
      checkKey(key, NAME);
      return client.signatureUrl(key, {
        method: 'PUT',
        expires: o.expiresIn ?? 900,
        ...(o.contentType ? { 'Content-Type': o.contentType } : {}),
      } as OSS.SignatureUrlOptions);
    },
    async presignUpload(key, o) {
      checkKey(key, NAME);
      return presigned(key, o.expiresIn ?? 900, {
        'content-length': String(o.contentLength),
        'content-md5': o.contentMd5,
        'content-type': o.contentType ?? 'application/octet-stream',
        ...storedWith(o),
      });
    },
    async createMultipart(key, o = {}) {
      checkKey(key, NAME);
      try {
        const out = await client.initMultipartUpload(key, {
          mime: o.contentType ?? 'application/octet-stream',
          headers: storedWith(o),
        } as OSS.InitMultipartUploadOptions);
        return out.uploadId;
      } catch (error) {
        throw mapError(error, key);
      }
    },
    async presignPart(key, uploadId, partNumber, o) {
      checkKey(key, NAME);
      return presigned(
        key,
        o.expiresIn ?? 900,
        { 'content-length': String(o.contentLength), 'content-md5': o.contentMd5 },
        { partNumber: String(partNumber), uploadId },
      );
    },
    async listParts(key, uploadId) {
      checkKey(key, NAME);
      const parts: UploadedPart[] = [];
      let marker: string | undefined;
      try {
        do {
          const out = await client.listParts(key, uploadId, {
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
      } catch (error) {
        throw mapError(error, key);
      }
    },
    async completeMultipart(key, uploadId, parts) {
      checkKey(key, NAME);
      try {
        const out = await client.completeMultipartUpload(
          key,
          uploadId,
          parts.map((p) => ({ number: p.partNumber, etag: `"${p.etag}"` })),
        );
        const etag = bareEtag((out.res.headers as Headers).etag ?? (out.data as { ETag?: string })?.ETag);
        return { etag: etag || (await head(key)).etag };
      } catch (error) {
        throw mapError(error, key);
      }
    },
    async abortMultipart(key, uploadId) {
      checkKey(key, NAME);
      try {
        await client.abortMultipartUpload(key, uploadId);
      } catch (error) {
        const mapped = mapError(error, key);
        if (!(mapped instanceof ObjectNotFoundError)) throw mapped;
      }
    },
    async restore(key, o = {}) {
      checkKey(key, NAME);
      try {
        const current = await head(key);
        await client.restore(key, {
          type: current.storageClass,
          Days: o.days ?? 1,
        } as Parameters<OSS['restore']>[1]);
        return 'started';
      } catch (error) {
        const { status, code } = error as { status?: number; code?: string };
        // ali-oss expects 202 only; OSS answers 200 when the restored copy is already there.
        if (status === 200) return 'done';
        if (code === 'RestoreAlreadyInProgress') return 'ongoing';
        if (code === 'OperationNotSupported') return 'done';
        throw mapError(error, key);
      }
    },
    async close() {},
  };
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
            await new Promise((r) => setTimeout(r, Math.random() * Math.min(2000, 100 * 2 ** attempt)));
            return retry(attempt + 1, value.apply(target, args));
          }
        };
        return retry(1, first);
      };
    },
  });
}

/** OSS's codes for a missing bucket and refused credentials. */
const UNAVAILABLE = new Map<string, BackendResource>([
  ['NoSuchBucket', 'bucket'],
  ['InvalidAccessKeyId', 'credentials'],
  ['SignatureDoesNotMatch', 'credentials'],
  ['InvalidSecurityToken', 'credentials'],
  ['SecurityTokenExpired', 'credentials'],
]);

function mapError(error: unknown, key: string): ObjectStoreError {
  if (error instanceof ObjectStoreError) return error;
  const { status, code } = error as { status?: number; code?: string };
  const unavailable = UNAVAILABLE.get(code ?? '');
  if (unavailable) return new UnavailableResourceError(unavailable, NAME, code as string, { cause: error });
  if (status === 404 || code === 'NoSuchKey') return new ObjectNotFoundError(key, NAME, { cause: error });
  if (status === 412 || code === 'PreconditionFailed' || code === 'FileAlreadyExists') {
    return new ObjectConditionFailedError(key, NAME, { cause: error });
  }
  if (code === 'InvalidObjectState') return new ObjectArchivedError(key, NAME, { cause: error });
  if (status === 416 || code === 'InvalidRange')
    return new RangeNotSatisfiableError(key, NAME, undefined, { cause: error });
  if (code === 'NoSuchUpload') return new ObjectNotFoundError(key, NAME, { cause: error });
  const retryable = transient(error);
  return new ObjectStoreError(`oss ${code ?? 'error'} on ${key}: ${(error as Error).message}`, NAME, {
    cause: error,
    retryable,
  });
}
