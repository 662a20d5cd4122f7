/**
 * Amazon S3 driver (@aws-sdk/client-s3), also for S3-compatible servers (Ceph RGW, s3rver).
 *
 * Conditional writes use S3's `If-Match` / `If-None-Match: *` on PutObject
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html). A 409
 * ConditionalRequestConflict (a concurrent write won the race) is re-read and retried once, then
 * reported as a failed precondition.
 */

import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  RestoreObjectCommand,
  S3Client,
  type S3ClientConfig,
  S3ServiceException,
  type StorageClass,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { DEFAULTS } from '../contract/defaults.js';
import { callerIdentity, rememberSigningKey } from '../util/identity.js';
import { MIB } from '../util/units.js';
import { BaseDriver, type PartOptions } from './base.js';
import {
  bareEtag,
  encodeTags,
  mapBackendError,
  parseRestore,
  rangedBody,
  rangeHeader,
  unsatisfiedSize,
} from './common.js';
import {
  type BackendResource,
  ObjectConditionFailedError,
  ObjectNotFoundError,
  type ObjectStoreError,
} from './errors.js';
import type {
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

const NAME = 's3';
/** S3's storage classes that a PutObject may name. */
export const S3_STORAGE_CLASSES = [
  'STANDARD',
  'STANDARD_IA',
  'ONEZONE_IA',
  'INTELLIGENT_TIERING',
  'GLACIER_IR',
  'GLACIER',
  'DEEP_ARCHIVE',
] as const;

/** Options of the S3 driver. */
export interface S3DriverOptions {
  readonly bucket: string;
  /** A client to use (tests inject one); default a client built from the options below. */
  readonly client?: S3Client;
  /** A local or S3-compatible endpoint; default AWS's. Turns on path-style addressing. */
  readonly endpoint?: string;
  /** Default `AWS_REGION`, else `us-east-1`. */
  readonly region?: string;
  /** Default the SDK's credential chain. */
  readonly credentials?: S3ClientConfig['credentials'];
  /** SDK attempts per request, retries included; default 3. */
  readonly maxAttempts?: number;
  /**
   * Which S3 implementation is behind the endpoint; default `aws`. `ceph-rgw` (Ceph RGW 16, checked
   * in CI) works around its deviations: it matches `If-Match` only without quotes (with quotes it
   * always answers 412), ignores `If-Match` on DeleteObject (so conditional delete is declared
   * unsupported), drops tags on CopyObject and on multipart uploads (so the driver restates them
   * with PutObjectTagging, one more request, not atomic with the copy or the completion), accepts
   * `x-amz-checksum-sha256` without checking it, and has no RestoreObject (501; every class reads
   * directly).
   */
  readonly dialect?: 'aws' | 'ceph-rgw';
  /**
   * Unconditional bodies larger than this go up in parts (multipart upload); default 64 MiB, at
   * least 5 MiB. Conditional writes always use one PutObject (S3 takes up to 5 GB in one).
   */
  readonly multipartThresholdBytes?: number;
  /** Part size of multipart uploads; default 8 MiB, at least 5 MiB (S3's minimum). */
  readonly partSizeBytes?: number;
}

/** Metadata carrying a multipart upload's tags on RGW, which drops them. */
const RGW_TAGS = 'rgw-tagging';

/** Builds the S3 client the driver uses, with the settings local and compatible servers need. */
export function createS3Client(
  options: Omit<S3DriverOptions, 'bucket' | 'client'>,
  /** For presigning: the SDK's default checksums would sign a CRC32 of an empty body into the URL. */
  forPresigning = false,
): S3Client {
  const local = options.endpoint !== undefined || forPresigning;
  return new S3Client({
    region: options.region ?? process.env.AWS_REGION ?? 'us-east-1',
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    ...(options.credentials ? { credentials: options.credentials } : {}),
    forcePathStyle: options.endpoint !== undefined,
    maxAttempts: options.maxAttempts ?? 3,
    // The SDK's default checksums stream the body with chunk framing, which s3rver stores verbatim and
    // RGW refuses (411); send checksums only where S3 requires them.
    ...(local
      ? { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' }
      : {}),
  });
}

/** Creates an S3 driver for one bucket. */
export function createS3Driver(options: S3DriverOptions): ObjectStoreDriver {
  return new S3Driver(options);
}

class S3Driver extends BaseDriver {
  private readonly client: S3Client;
  private readonly signer: S3Client;
  private readonly Bucket: string;
  private readonly rgw: boolean;
  private readonly multipartThreshold: number;
  private readonly partSize: number;
  /** The access key id of the last request signed (for the log line of a refusal). */
  private readonly signingKey: () => string | undefined;

  constructor(private readonly options: S3DriverOptions) {
    const rgw = options.dialect === 'ceph-rgw';
    super(NAME, {
      conditionalOverwrite: true,
      createOnly: true,
      conditionalGet: true,
      conditionalDelete: !rgw,
      presign: true,
      tags: true,
      storageClasses: S3_STORAGE_CLASSES,
      md5Etags: true,
      multipart: true,
      // RGW 16 accepts x-amz-checksum-sha256 without checking it, and has no archive tier to restore from.
      checksumSha256: !rgw,
      restoreClasses: rgw ? [] : ['GLACIER', 'DEEP_ARCHIVE'],
      ranges: true,
      // S3 has no append with a position (S3 Express's append is not conditional on one).
      positionAppend: false,
    } satisfies DriverCapabilities);
    this.rgw = rgw;
    this.client = options.client ?? createS3Client(options);
    this.signer = options.client ?? createS3Client(options, true);
    this.signingKey = rememberSigningKey(this.client);
    this.Bucket = options.bucket;
    this.multipartThreshold = Math.max(5 * MIB, options.multipartThresholdBytes ?? 64 * MIB);
    this.partSize = Math.max(5 * MIB, options.partSizeBytes ?? 8 * MIB);
  }

  private ifMatchHeader(etag: string): string {
    return this.rgw ? etag : `"${etag}"`;
  }

  protected override mapError(error: unknown, key: string): ObjectStoreError {
    const status = statusOf(error);
    const code = errorCode(error);
    const headers = (error as { $response?: { headers?: Record<string, string> } })?.$response?.headers;
    return mapBackendError(
      error,
      key,
      NAME,
      {
        status,
        code,
        retryable: status === undefined || status >= 500 || status === 429 || code === 'SlowDown',
        size: unsatisfiedSize(headers?.['content-range']),
        bucket: this.Bucket,
        identity: callerIdentity((error as Error | undefined)?.message, this.signingKey()),
      },
      UNAVAILABLE,
    );
  }

  protected override errorCode(error: unknown): string | undefined {
    return errorCode(error);
  }

  protected async headObject(key: string, withTags: boolean): Promise<ObjectInfo> {
    const { client, Bucket } = this;
    const [out, tags] = await Promise.all([
      client.send(new HeadObjectCommand({ Bucket, Key: key })),
      withTags ? client.send(new GetObjectTaggingCommand({ Bucket, Key: key })) : undefined,
    ]);
    return {
      key,
      etag: bareEtag(out.ETag),
      size: out.ContentLength ?? 0,
      lastModified: out.LastModified ?? new Date(0),
      contentType: out.ContentType,
      metadata: out.Metadata ?? {},
      storageClass: out.StorageClass ?? 'STANDARD',
      ...(out.ContentEncoding ? { contentEncoding: out.ContentEncoding } : {}),
      ...(out.Restore ? { restore: parseRestore(out.Restore) } : {}),
      ...(tags
        ? { tags: Object.fromEntries((tags.TagSet ?? []).map((t) => [t.Key ?? '', t.Value ?? ''])) }
        : {}),
    };
  }

  /** A large unconditional body, in parts. RGW answers CompleteMultipartUpload with an empty ETag: ask HEAD. */
  private async putInParts(key: string, body: Uint8Array, o: PutOptions): Promise<{ etag: string }> {
    const upload = new Upload({
      client: this.client,
      partSize: this.partSize,
      queueSize: 4,
      leavePartsOnError: false,
      params: {
        Bucket: this.Bucket,
        Key: key,
        Body: body,
        ContentType: o.contentType ?? 'application/octet-stream',
        ContentEncoding: o.contentEncoding,
        Metadata: o.metadata ? { ...o.metadata } : undefined,
        StorageClass: o.storageClass as StorageClass,
      },
      tags: Object.entries(o.tags ?? {}).map(([Key, Value]) => ({ Key, Value })),
    });
    const out = await upload.done();
    const etag = bareEtag(out.ETag);
    return { etag: etag || (await this.headObject(key, false)).etag };
  }

  protected async putObject(
    key: string,
    body: Uint8Array,
    o: PutOptions,
    retried = false,
  ): Promise<{ etag: string }> {
    const conditional = o.ifMatch !== undefined || o.ifNoneMatch !== undefined;
    if (!conditional && body.byteLength > this.multipartThreshold) return this.putInParts(key, body, o);
    try {
      const out = await this.client.send(
        new PutObjectCommand({
          Bucket: this.Bucket,
          Key: key,
          Body: body,
          ContentLength: body.byteLength,
          ContentType: o.contentType ?? 'application/octet-stream',
          ContentEncoding: o.contentEncoding,
          Metadata: o.metadata ? { ...o.metadata } : undefined,
          Tagging: o.tags && Object.keys(o.tags).length > 0 ? encodeTags(o.tags) : undefined,
          StorageClass: o.storageClass as StorageClass,
          IfMatch: o.ifMatch === undefined ? undefined : this.ifMatchHeader(o.ifMatch),
          IfNoneMatch: o.ifNoneMatch,
        }),
      );
      return { etag: bareEtag(out.ETag) };
    } catch (error) {
      if (conditional && errorCode(error) === 'ConditionalRequestConflict' && !retried) {
        // Another conditional write to the key was in flight: S3 asks the caller to retry.
        return this.putObject(key, body, o, true);
      }
      // AWS answers 404 to If-Match on a missing key, RGW 412: both mean the condition failed.
      if (conditional && (statusOf(error) === 404 || statusOf(error) === 409)) {
        throw new ObjectConditionFailedError(key, NAME, { cause: error });
      }
      throw error;
    }
  }

  protected async getObject(key: string, o: GetOptions): Promise<StoredObject> {
    const out = await this.client.send(
      new GetObjectCommand({
        Bucket: this.Bucket,
        Key: key,
        IfMatch: o.ifMatch === undefined ? undefined : this.ifMatchHeader(o.ifMatch),
        Range: o.range ? rangeHeader(o.range) : undefined,
      }),
    );
    const whole = out.Body ? await out.Body.transformToByteArray() : new Uint8Array(0);
    const { body, size, range } = o.range
      ? rangedBody(whole, o.range, out.ContentRange, key, NAME)
      : { body: whole, size: whole.byteLength, range: undefined };
    return {
      key,
      body,
      ...(range ? { range } : {}),
      etag: bareEtag(out.ETag),
      size,
      lastModified: out.LastModified ?? new Date(0),
      contentType: out.ContentType,
      metadata: out.Metadata ?? {},
      storageClass: out.StorageClass ?? 'STANDARD',
      ...(out.ContentEncoding ? { contentEncoding: out.ContentEncoding } : {}),
    };
  }

  protected async deleteObject(key: string, ifMatch: string | undefined): Promise<void> {
    try {
      await this.client.send(
        new DeleteObjectCommand({
          Bucket: this.Bucket,
          Key: key,
          IfMatch: ifMatch === undefined ? undefined : this.ifMatchHeader(ifMatch),
        }),
      );
    } catch (error) {
      if (ifMatch !== undefined && [404, 412].includes(statusOf(error) ?? 0)) {
        throw new ObjectConditionFailedError(key, NAME, { cause: error });
      }
      throw error;
    }
  }

  protected async deleteBatch(keys: readonly string[]): Promise<DeleteManyResult> {
    const out = await this.client.send(
      new DeleteObjectsCommand({
        Bucket: this.Bucket,
        Delete: { Quiet: true, Objects: keys.map((Key) => ({ Key })) },
      }),
    );
    const errors = new Map((out.Errors ?? []).map((e) => [e.Key ?? '', e]));
    const deleted: string[] = [];
    const failed: DeleteFailure[] = [];
    for (const key of keys) {
      const e = errors.get(key);
      if (e) failed.push({ key, code: e.Code ?? 'Unknown', message: e.Message ?? '' });
      else deleted.push(key);
    }
    return { deleted, failed };
  }

  protected async listObjects(o: ListOptions & { limit: number }): Promise<ObjectListPage> {
    const out = await this.client.send(
      new ListObjectsV2Command({
        Bucket: this.Bucket,
        Prefix: o.prefix || undefined,
        Delimiter: o.delimiter || undefined,
        StartAfter: o.startAfter,
        ContinuationToken: o.cursor,
        MaxKeys: o.limit,
      }),
    );
    return {
      objects: (out.Contents ?? []).map((c) => ({
        key: c.Key ?? '',
        etag: bareEtag(c.ETag),
        size: c.Size ?? 0,
        lastModified: c.LastModified ?? new Date(0),
        storageClass: c.StorageClass ?? 'STANDARD',
      })),
      prefixes: (out.CommonPrefixes ?? []).map((p) => p.Prefix ?? ''),
      ...(out.IsTruncated && out.NextContinuationToken ? { nextCursor: out.NextContinuationToken } : {}),
    };
  }

  protected async copyObject(source: string, target: string, o: CopyOptions): Promise<{ etag: string }> {
    const { client, Bucket } = this;
    // Everything is restated (REPLACE), so a copy onto itself is valid and nothing is lost.
    const from = o.metadata && o.tags && o.contentType ? undefined : await this.headObject(source, !o.tags);
    const tags = o.tags ?? from?.tags ?? {};
    const out = await client.send(
      new CopyObjectCommand({
        Bucket,
        Key: target,
        CopySource: `${Bucket}/${encodeURIComponent(source)}`,
        MetadataDirective: 'REPLACE',
        Metadata: { ...(o.metadata ?? from?.metadata) },
        ContentType: o.contentType ?? from?.contentType,
        ContentEncoding: from?.contentEncoding,
        TaggingDirective: 'REPLACE',
        Tagging: encodeTags(tags),
        StorageClass: (o.storageClass ?? from?.storageClass) as StorageClass,
      }),
    );
    if (this.rgw && Object.keys(tags).length > 0) {
      await client.send(
        new PutObjectTaggingCommand({
          Bucket,
          Key: target,
          Tagging: { TagSet: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) },
        }),
      );
    }
    return { etag: bareEtag(out.CopyObjectResult?.ETag) };
  }

  protected override signGet(key: string, o: PresignOptions): Promise<string> {
    return getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.Bucket, Key: key }), {
      expiresIn: o.expiresIn ?? DEFAULTS.presignExpiresSeconds,
    });
  }

  protected override signPut(key: string, o: PresignOptions): Promise<string> {
    return getSignedUrl(
      this.client,
      new PutObjectCommand({ Bucket: this.Bucket, Key: key, ContentType: o.contentType }),
      { expiresIn: o.expiresIn ?? DEFAULTS.presignExpiresSeconds },
    );
  }

  protected override signUpload(key: string, o: PresignUploadOptions): Promise<PresignedRequest> {
    const sha256 = this.capabilities.checksumSha256 ? o.checksumSha256 : undefined;
    const command = new PutObjectCommand({
      Bucket: this.Bucket,
      Key: key,
      ContentLength: o.contentLength,
      ContentMD5: o.contentMd5,
      ContentType: o.contentType ?? 'application/octet-stream',
      ContentEncoding: o.contentEncoding,
      StorageClass: o.storageClass as StorageClass,
      Tagging: o.tags && Object.keys(o.tags).length > 0 ? encodeTags(o.tags) : undefined,
      Metadata: o.metadata ? { ...o.metadata } : undefined,
      ChecksumSHA256: sha256,
    });
    return this.presigned((opts) => getSignedUrl(this.signer, command, opts), o.expiresIn, {
      'content-length': String(o.contentLength),
      'content-md5': o.contentMd5,
      'content-type': o.contentType ?? 'application/octet-stream',
      ...(o.contentEncoding ? { 'content-encoding': o.contentEncoding } : {}),
      ...(o.storageClass ? { 'x-amz-storage-class': o.storageClass } : {}),
      ...(o.tags && Object.keys(o.tags).length > 0 ? { 'x-amz-tagging': encodeTags(o.tags) } : {}),
      ...Object.fromEntries(Object.entries(o.metadata ?? {}).map(([k, v]) => [`x-amz-meta-${k}`, v])),
      ...(sha256 ? { 'x-amz-checksum-sha256': sha256 } : {}),
    });
  }

  protected override async startUpload(key: string, o: MultipartOptions): Promise<string> {
    const out = await this.client.send(
      new CreateMultipartUploadCommand({
        Bucket: this.Bucket,
        Key: key,
        ContentType: o.contentType ?? 'application/octet-stream',
        ContentEncoding: o.contentEncoding,
        StorageClass: o.storageClass as StorageClass,
        Tagging: o.tags && Object.keys(o.tags).length > 0 ? encodeTags(o.tags) : undefined,
        // RGW drops the tags of a multipart upload: they ride in metadata and are restated at completion.
        Metadata:
          this.rgw && o.tags && Object.keys(o.tags).length > 0
            ? { ...o.metadata, [RGW_TAGS]: encodeTags(o.tags) }
            : o.metadata && { ...o.metadata },
      }),
    );
    return out.UploadId ?? '';
  }

  protected override signPart(
    key: string,
    uploadId: string,
    partNumber: number,
    o: PartOptions,
  ): Promise<PresignedRequest> {
    const command = new UploadPartCommand({
      Bucket: this.Bucket,
      Key: key,
      UploadId: uploadId,
      PartNumber: partNumber,
      ContentLength: o.contentLength,
      ContentMD5: o.contentMd5,
    });
    return this.presigned((opts) => getSignedUrl(this.signer, command, opts), o.expiresIn, {
      'content-length': String(o.contentLength),
      'content-md5': o.contentMd5,
    });
  }

  protected override async partsOf(key: string, uploadId: string): Promise<UploadedPart[]> {
    const parts: UploadedPart[] = [];
    let marker: string | undefined;
    do {
      const out = await this.client.send(
        new ListPartsCommand({ Bucket: this.Bucket, Key: key, UploadId: uploadId, PartNumberMarker: marker }),
      );
      for (const p of out.Parts ?? [])
        parts.push({ partNumber: p.PartNumber ?? 0, etag: bareEtag(p.ETag), size: p.Size ?? 0 });
      marker = out.IsTruncated ? out.NextPartNumberMarker : undefined;
    } while (marker);
    return parts;
  }

  protected override async finishUpload(
    key: string,
    uploadId: string,
    parts: readonly Pick<UploadedPart, 'partNumber' | 'etag'>[],
  ): Promise<{ etag: string }> {
    const { client, Bucket } = this;
    const out = await client.send(
      new CompleteMultipartUploadCommand({
        Bucket,
        Key: key,
        UploadId: uploadId,
        MultipartUpload: {
          Parts: parts.map((p) => ({ PartNumber: p.partNumber, ETag: `"${p.etag}"` })),
        },
      }),
    );
    if (!this.rgw) return { etag: bareEtag(out.ETag) };
    // RGW answers with an empty ETag, and has dropped the tags (see startUpload).
    const info = await this.headObject(key, false);
    const tags = info.metadata[RGW_TAGS];
    if (tags) {
      await client.send(
        new PutObjectTaggingCommand({
          Bucket,
          Key: key,
          Tagging: { TagSet: [...new URLSearchParams(tags)].map(([Key, Value]) => ({ Key, Value })) },
        }),
      );
    }
    return { etag: info.etag };
  }

  protected override async abortUpload(key: string, uploadId: string): Promise<void> {
    try {
      await this.client.send(
        new AbortMultipartUploadCommand({ Bucket: this.Bucket, Key: key, UploadId: uploadId }),
      );
    } catch (error) {
      const mapped = this.mapError(error, key);
      if (!(mapped instanceof ObjectNotFoundError)) throw mapped;
    }
  }

  protected override async restoreObject(key: string, days: number): Promise<'started' | 'ongoing' | 'done'> {
    try {
      const out = await this.client.send(
        new RestoreObjectCommand({
          Bucket: this.Bucket,
          Key: key,
          RestoreRequest: { Days: days, GlacierJobParameters: { Tier: 'Standard' } },
        }),
      );
      // 202: a restore started; 200: the restored copy is already there.
      return out.$metadata.httpStatusCode === 202 ? 'started' : 'done';
    } catch (error) {
      const code = errorCode(error);
      if (code === 'RestoreAlreadyInProgress') return 'ongoing';
      // Not in an archive class: readable as it is.
      if (code === 'InvalidObjectState') return 'done';
      throw error;
    }
  }

  protected override async closeBackend(): Promise<void> {
    if (!this.options.client) {
      this.client.destroy();
      this.signer.destroy();
    }
  }

  /** A presigned request whose headers stay headers (RGW ignores x-amz-* moved into the query). */
  private async presigned(
    sign: (options: Parameters<typeof getSignedUrl>[2]) => Promise<string>,
    expiresIn = 900,
    headers: Record<string, string>,
  ): Promise<PresignedRequest> {
    const url = await sign({
      expiresIn,
      unhoistableHeaders: new Set(Object.keys(headers).filter((h) => h.startsWith('x-amz-'))),
    });
    return { method: 'PUT', url, headers, expiresAt: new Date(Date.now() + expiresIn * 1000) };
  }
}

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}

function errorCode(error: unknown): string | undefined {
  if (error instanceof S3ServiceException) return error.name;
  return (error as { name?: string; code?: string })?.code ?? (error as { name?: string })?.name;
}

/**
 * S3's codes for a missing bucket, a bucket that refuses these credentials (a policy, or on Ceph
 * RGW 16 `BlockPublicAcls`, which refuses even the owner's writes) and refused credentials (a
 * HEAD's 404 cannot tell a missing bucket).
 */
const UNAVAILABLE = new Map<string, BackendResource>([
  ['NoSuchBucket', 'bucket'],
  ['AccessDenied', 'bucket'],
  ['AllAccessDisabled', 'bucket'],
  ['InvalidAccessKeyId', 'credentials'],
  ['SignatureDoesNotMatch', 'credentials'],
  ['ExpiredToken', 'credentials'],
  ['InvalidToken', 'credentials'],
]);
