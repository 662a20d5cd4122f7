/**
 * Workspaces (named blobs of a session, up to 5 TiB) and single values too large for a request
 * body, transferred straight between the caller and the object store with presigned requests. The
 * store only signs and checks: each URL is bound to the object the caller's own session owns, to
 * the body's length and MD5 (and SHA-256 where the backend checks it), and expires.
 *
 * A pending workspace upload is recorded (`~wsu~<inc>/<name>`: what was declared) so that the
 * complete step checks what arrived against it: every part's size and MD5, then the object's size
 * (and, for a single PUT, its MD5). Objects in an archive class are restored before a URL is given.
 */
import { randomBytes } from 'node:crypto';
import {
  PartialDeleteError,
  RestoreInProgressError,
  UnsupportedOperationError,
  UploadMismatchError,
  UploadNotFoundError,
  ValidationError,
} from '../contract/errors.js';
import { decodeId } from '../contract/ids.js';
import { parseIJson } from '../contract/json.js';
import {
  MAX_SINGLE_BYTES,
  MAX_UPLOAD_PARTS,
  MD5_PATTERN,
  MIN_PART_BYTES,
  SHA256_PATTERN,
} from '../contract/limits.js';
import type {
  DirectRequest,
  StorageTier,
  ValueWritten,
  WorkspaceDownload,
  WorkspaceInfo,
  WorkspaceUpload,
  WorkspaceUploadRequest,
} from '../contract/types.js';
import { ObjectArchivedError, ObjectNotFoundError } from '../drivers/errors.js';
import type { ObjectInfo, PresignedRequest } from '../drivers/types.js';
import { CONTENT_ENCODINGS, type ContentEncoding } from '../util/encoding.js';
import { getOrUndefined, listAll, parseJsonObject, type StoreContext } from './context.js';
import type { UserLayout } from './layout.js';
import type { Sessions } from './sessions.js';
import { type Fence, revisionOf } from './write-path.js';

/** Backend storage classes of each tier. */
const CLASSES: Record<string, Record<StorageTier, string>> = {
  s3: { standard: 'STANDARD', infrequent: 'STANDARD_IA', archive: 'GLACIER' },
  oss: { standard: 'Standard', infrequent: 'IA', archive: 'Archive' },
};
const TIERS: readonly StorageTier[] = ['standard', 'infrequent', 'archive'];

/** The tier of a backend storage class. */
export function tierOf(storageClass: string | undefined): StorageTier {
  if (!storageClass) return 'standard';
  if (/IA$|_IR$|INTELLIGENT/.test(storageClass)) return 'infrequent';
  if (/GLACIER|DEEP|Archive/.test(storageClass)) return 'archive';
  return 'standard';
}

const UPLOAD_ID = /^[0-9a-f]{24}$/;
const hexOf = (base64: string) => Buffer.from(base64, 'base64').toString('hex');

interface UploadRecord {
  readonly uploadId: string;
  readonly size: number;
  readonly md5?: string;
  readonly multipartId?: string;
  readonly parts?: ReadonlyArray<{ size: number; md5: string }>;
}

/** Checks what an uploader declares; returns it with its defaults. */
function checkUploadRequest(r: WorkspaceUploadRequest) {
  const size = r.size;
  if (!Number.isSafeInteger(size) || size < 0) throw new ValidationError('size', 'must be a byte count');
  const storageClass = r.storageClass ?? 'standard';
  if (!TIERS.includes(storageClass)) throw new ValidationError('storageClass', `must be one of ${TIERS}`);
  const contentEncoding = r.contentEncoding ?? 'identity';
  if (!CONTENT_ENCODINGS.includes(contentEncoding as ContentEncoding))
    throw new ValidationError('contentEncoding', `must be one of ${CONTENT_ENCODINGS}`);
  if (r.sha256 !== undefined && !SHA256_PATTERN.test(r.sha256))
    throw new ValidationError('sha256', 'must be a base64 SHA-256');
  if (r.parts === undefined) {
    if (size > MAX_SINGLE_BYTES)
      throw new ValidationError('size', `over ${MAX_SINGLE_BYTES} bytes needs parts`);
    if (r.md5 === undefined || !MD5_PATTERN.test(r.md5))
      throw new ValidationError('md5', 'must be a base64 MD5');
    return { ...r, storageClass, contentEncoding };
  }
  if (r.parts.length < 1 || r.parts.length > MAX_UPLOAD_PARTS)
    throw new ValidationError('parts', `must hold 1 to ${MAX_UPLOAD_PARTS} parts`);
  let total = 0;
  for (const [i, part] of r.parts.entries()) {
    const last = i === r.parts.length - 1;
    if (
      !Number.isSafeInteger(part.size) ||
      part.size < (last ? 1 : MIN_PART_BYTES) ||
      part.size > MAX_SINGLE_BYTES
    )
      throw new ValidationError(
        `parts.${i}.size`,
        `must be ${MIN_PART_BYTES} to ${MAX_SINGLE_BYTES} bytes (the last at least 1)`,
      );
    if (!MD5_PATTERN.test(part.md5)) throw new ValidationError(`parts.${i}.md5`, 'must be a base64 MD5');
    total += part.size;
  }
  if (total !== size) throw new ValidationError('size', 'must be the sum of the part sizes');
  return { ...r, storageClass, contentEncoding };
}

const direct = (r: PresignedRequest): DirectRequest => ({ method: r.method, url: r.url, headers: r.headers });

export class Workspaces {
  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
    private readonly sessions: Sessions,
  ) {}

  private requireTransfer(multipart = false): void {
    const { driver } = this.ctx;
    if (!driver.capabilities.presign || (multipart && !driver.capabilities.multipart)) {
      throw new UnsupportedOperationError('direct transfer (presigned URLs)', driver.name);
    }
  }

  private info(name: string, object: ObjectInfo): WorkspaceInfo {
    return {
      name,
      size: object.size,
      storageClass: tierOf(object.storageClass),
      lastModified: object.lastModified,
      ...(object.contentEncoding ? { contentEncoding: object.contentEncoding } : {}),
    };
  }

  private async record(name: string): Promise<UploadRecord | undefined> {
    const object = await getOrUndefined(this.ctx.driver, name);
    const body = object ? parseJsonObject(object.body) : undefined;
    return typeof body?.uploadId === 'string' ? (body as unknown as UploadRecord) : undefined;
  }

  async createUpload(
    s: string,
    name: string,
    request: WorkspaceUploadRequest,
    fence: Fence,
  ): Promise<WorkspaceUpload> {
    const r = checkUploadRequest(request);
    this.requireTransfer(r.parts !== undefined);
    const { driver, presignExpiresIn: expiresIn } = this.ctx;
    const marker = await this.sessions.forWrite(s, await this.sessions.read(s), fence, true);
    const key = this.layout.workspace(s, marker.inc, name);
    const recordName = this.layout.workspaceUpload(s, marker.inc, name);
    const previous = await this.record(recordName);
    if (previous?.multipartId) await driver.abortMultipart(key, previous.multipartId);
    const stored = {
      contentType: r.contentType ?? 'application/octet-stream',
      ...(r.contentEncoding !== 'identity' ? { contentEncoding: r.contentEncoding } : {}),
      storageClass: (CLASSES[driver.name] ?? (CLASSES.s3 as Record<StorageTier, string>))[r.storageClass],
      tags: { kind: 'workspace' },
      metadata: { inc: marker.inc },
    };
    const uploadId = randomBytes(12).toString('hex');
    let record: UploadRecord;
    let upload: WorkspaceUpload;
    if (r.parts === undefined) {
      const md5 = r.md5 as string;
      const put = await driver.presignUpload(key, {
        ...stored,
        contentLength: r.size,
        contentMd5: md5,
        ...(r.sha256 ? { checksumSha256: r.sha256 } : {}),
        expiresIn,
      });
      record = { uploadId, size: r.size, md5 };
      upload = { uploadId, expiresAt: put.expiresAt, upload: direct(put) };
    } else {
      const multipartId = await driver.createMultipart(key, stored);
      const parts = await Promise.all(
        r.parts.map((p, i) =>
          driver.presignPart(key, multipartId, i + 1, {
            contentLength: p.size,
            contentMd5: p.md5,
            expiresIn,
          }),
        ),
      );
      record = {
        uploadId,
        size: r.size,
        multipartId,
        parts: r.parts.map((p) => ({ size: p.size, md5: p.md5 })),
      };
      upload = {
        uploadId,
        expiresAt: new Date(Date.now() + expiresIn * 1000),
        parts: parts.map((p, i) => ({ partNumber: i + 1, ...direct(p) })),
      };
    }
    await driver.put(recordName, JSON.stringify({ v: 1, ...record }), {
      contentType: 'application/json',
      tags: { kind: 'workspace' },
      metadata: { inc: marker.inc },
    });
    return upload;
  }

  async completeUpload(s: string, name: string, uploadId: string, fence: Fence): Promise<WorkspaceInfo> {
    if (!UPLOAD_ID.test(uploadId)) throw new UploadNotFoundError(uploadId);
    const { driver } = this.ctx;
    const read = await this.sessions.read(s);
    if (!read.live) throw new UploadNotFoundError(uploadId);
    const marker = await this.sessions.forWrite(s, read, fence, true);
    const key = this.layout.workspace(s, marker.inc, name);
    const recordName = this.layout.workspaceUpload(s, marker.inc, name);
    const record = await this.record(recordName);
    if (!record || record.uploadId !== uploadId) throw new UploadNotFoundError(uploadId);
    // An upload no longer listed was completed by an earlier call whose answer was lost: the checks
    // of the object below decide.
    const listed =
      record.multipartId &&
      (await driver.listParts(key, record.multipartId).catch((error: unknown) => {
        if (error instanceof ObjectNotFoundError) return undefined;
        throw error;
      }));
    if (record.multipartId && record.parts && listed) {
      const bad = record.parts.flatMap((declared, i) => {
        const got = listed.find((p) => p.partNumber === i + 1);
        return got && got.size === declared.size && got.etag.toLowerCase() === hexOf(declared.md5)
          ? []
          : [i + 1];
      });
      if (bad.length > 0 || listed.length !== record.parts.length) {
        throw new UploadMismatchError(
          `parts missing or not as declared: ${bad.length > 0 ? bad.join(', ') : 'extra parts'}`,
        );
      }
      await driver.completeMultipart(key, record.multipartId, listed);
    }
    let object: ObjectInfo;
    try {
      object = await driver.head(key);
    } catch (error) {
      if (error instanceof ObjectNotFoundError) throw new UploadMismatchError('nothing was uploaded');
      throw error;
    }
    const md5Differs =
      !record.multipartId &&
      driver.capabilities.md5Etags &&
      object.etag.toLowerCase() !== hexOf(record.md5 ?? '');
    if (object.size !== record.size || md5Differs) {
      throw new UploadMismatchError(`the stored object (${object.size} bytes) is not the one declared`);
    }
    await driver.delete(recordName);
    return this.info(name, object);
  }

  async list(s: string): Promise<WorkspaceInfo[]> {
    const read = await this.sessions.read(s);
    if (!read.live) return [];
    const prefix = this.layout.workspaces(s, read.live.inc);
    return (await listAll(this.ctx.driver, prefix)).flatMap((o) => {
      try {
        const name = decodeId('workspace', o.key.slice(prefix.length));
        return [{ name, size: o.size, storageClass: tierOf(o.storageClass), lastModified: o.lastModified }];
      } catch {
        return [];
      }
    });
  }

  async get(s: string, name: string): Promise<WorkspaceDownload | undefined> {
    this.requireTransfer();
    const { driver } = this.ctx;
    const read = await this.sessions.read(s);
    if (!read.live) return undefined;
    const key = this.layout.workspace(s, read.live.inc, name);
    let object: ObjectInfo;
    try {
      object = await driver.head(key);
    } catch (error) {
      if (error instanceof ObjectNotFoundError) return undefined;
      throw error;
    }
    const info = this.info(name, object);
    if (driver.capabilities.restoreClasses.includes(object.storageClass ?? '')) {
      const state = object.restore
        ? object.restore.ongoing
          ? 'ongoing'
          : 'done'
        : await driver.restore(key, { days: this.ctx.restoreDays });
      if (state !== 'done') return { ...info, status: 'restoring' };
    }
    const url = await driver.presignGet(key, { expiresIn: this.ctx.presignExpiresIn });
    return {
      ...info,
      status: 'ready',
      download: { method: 'GET', url, headers: {} },
      expiresAt: new Date(Date.now() + this.ctx.presignExpiresIn * 1000),
    };
  }

  async delete(s: string, name: string, fence: Fence): Promise<void> {
    const { driver } = this.ctx;
    const read = await this.sessions.read(s);
    if (!read.live) return fence.check();
    const marker = await this.sessions.forWrite(s, read, fence, true);
    const key = this.layout.workspace(s, marker.inc, name);
    const recordName = this.layout.workspaceUpload(s, marker.inc, name);
    const record = await this.record(recordName);
    if (record?.multipartId) await driver.abortMultipart(key, record.multipartId);
    const { failed } = await driver.deleteMany([key, recordName]);
    if (failed.length > 0) throw new PartialDeleteError(failed);
  }

  // ---- single values too large for a request or an answer ---------------------------------------

  async createValueUpload(s: string, k: string, request: { size: number; md5: string }) {
    this.requireTransfer();
    const { size, md5 } = request;
    if (!Number.isSafeInteger(size) || size < 1 || size > this.ctx.maxValueBytes)
      throw new ValidationError('size', `must be 1 to ${this.ctx.maxValueBytes} bytes`);
    if (typeof md5 !== 'string' || !MD5_PATTERN.test(md5))
      throw new ValidationError('md5', 'must be a base64 MD5');
    const uploadId = randomBytes(12).toString('hex');
    const put = await this.ctx.driver.presignUpload(this.layout.valueUpload(s, k, uploadId), {
      contentLength: size,
      contentMd5: md5,
      contentType: 'application/json',
      tags: { kind: 'workspace' },
      expiresIn: this.ctx.presignExpiresIn,
    });
    return { uploadId, upload: direct(put), expiresAt: put.expiresAt };
  }

  /** Reads an uploaded value and hands it to `save` (the normal, conditional and fenced write). */
  async commitValueUpload(
    s: string,
    k: string,
    uploadId: string,
    save: (value: unknown) => Promise<ValueWritten>,
  ): Promise<ValueWritten> {
    if (!UPLOAD_ID.test(uploadId)) throw new UploadNotFoundError(uploadId);
    const name = this.layout.valueUpload(s, k, uploadId);
    const object = await getOrUndefined(this.ctx.driver, name);
    if (!object) throw new UploadNotFoundError(uploadId);
    // An uploaded value is a body like any other: I-JSON, or refused (and kept for another try).
    const result = await save(parseIJson(object.body));
    await this.ctx.driver.delete(name);
    return result;
  }

  /** A presigned GET of a stored object (a list item of its own), with its size. */
  async locateObject(name: string) {
    const { driver, presignExpiresIn: expiresIn } = this.ctx;
    const [object, url] = await Promise.all([driver.head(name), driver.presignGet(name, { expiresIn })]);
    return {
      download: { method: 'GET' as const, url, headers: {} },
      size: object.size,
      expiresAt: new Date(Date.now() + expiresIn * 1000),
    };
  }

  async locateValue(s: string, k: string) {
    this.requireTransfer();
    const { driver } = this.ctx;
    const name = this.layout.value(s, k);
    const [read, object] = await Promise.all([
      this.sessions.read(s),
      driver.head(name).catch((error: unknown) => {
        if (error instanceof ObjectNotFoundError) return undefined;
        throw error;
      }),
    ]);
    if (!read.live || !object || object.metadata.inc !== read.live.inc) return undefined;
    const url = await driver.presignGet(name, { expiresIn: this.ctx.presignExpiresIn });
    return {
      download: { method: 'GET' as const, url, headers: {} },
      version: object.etag,
      revision: revisionOf(object),
      size: object.size,
      expiresAt: new Date(Date.now() + this.ctx.presignExpiresIn * 1000),
    };
  }
}

/** Reads an object, asking for a restore when it is archived (then `RestoreInProgressError`). */
export async function readRestoring(
  ctx: StoreContext,
  name: string,
  what: string,
): Promise<Awaited<ReturnType<typeof getOrUndefined>>> {
  try {
    return await getOrUndefined(ctx.driver, name);
  } catch (error) {
    if (!(error instanceof ObjectArchivedError)) throw error;
    if ((await ctx.driver.restore(name, { days: ctx.restoreDays })) === 'done')
      return getOrUndefined(ctx.driver, name);
    throw new RestoreInProgressError(what);
  }
}
