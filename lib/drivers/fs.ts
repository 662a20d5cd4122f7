/**
 * File-system driver: the embedded default. One file per object under a root folder.
 *
 * Layout: the key is split at `/`; every segment becomes one path component, encoded so that no
 * key can name a path outside the root and every component stays ≤ 255 bytes:
 * - `[a-z0-9_-]` and non-leading `.` stay as they are; every other byte is `%XX` (upper-case letters
 *   too, so a case-insensitive file system cannot merge two keys); an empty segment is `%`;
 * - a segment whose encoding is over 200 bytes is named `#<sha256>`; its text is kept in `.name`
 *   inside that folder, and in the object's header for a file;
 * - an object is a FILE named `<segment>~` (`~` never appears raw in an encoding), so the object
 *   `a` and the folder of `a/b` coexist.
 * A file holds a 4-byte header length, a JSON header (key, etag, content type, metadata, tags,
 * storage class) and the body, written to a temporary file and renamed into place (atomic). Create-
 * only uses `link`, which fails atomically when the name exists; other conditions are serialised per
 * key inside this process (one process per data folder).
 *
 * An appendable object (`append`) is a file whose header says `appendable` (and holds the id drawn
 * at its creation instead of an etag), followed by an 8-byte big-endian committed length, then the
 * body. The creating append writes a temporary file and `link`s it into place (create-only, atomic
 * across processes). Every later append runs under the key's lock of this process, with the
 * file's puts, deletes and copies: it checks the position against the committed length, cuts off
 * whatever an interrupted append left past it, writes the bytes at the end, and only then the new
 * committed length. Readers use the committed length, so they never see part of an append, and a
 * crash mid-append leaves the object as it was. Two PROCESSES appending to one key are not
 * serialised (as the other conditions are exact within one process): one process per data folder.
 * The etag of an appendable object is a hash of its creation id and its length (its bytes below the
 * length never change), so no append rehashes the object.
 */
import { createHash, randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { BaseDriver, type PartOptions } from './base.js';
import {
  appendEtag,
  checkKey,
  compareKeys,
  contentEtag,
  copiedOptions,
  KeyedMutex,
  type ListEntry,
  pageOf,
  resolveRange,
} from './common.js';
import {
  ObjectConditionFailedError,
  ObjectNotAppendableError,
  ObjectNotFoundError,
  ObjectStoreError,
  UnsupportedError,
} from './errors.js';
import { type FsPresignOptions, fsTransfer } from './fs-transfer.js';
import type {
  AppendObjectOptions,
  AppendObjectResult,
  ByteRange,
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

const NAME = 'fs';
const STORAGE_CLASSES = ['STANDARD', 'STANDARD_IA', 'GLACIER_IR', 'GLACIER', 'DEEP_ARCHIVE'] as const;
const MAX_ENCODED = 200;
const FILE_MARK = '~';
const NAME_FILE = '.name';

/** Options of the file-system driver. */
export interface FsDriverOptions {
  /** Folder holding the objects; created when missing. */
  readonly root: string;
  /** Presigned URLs served by the local server (fs-transfer.ts); without it, presigning is unsupported. */
  readonly presign?: FsPresignOptions;
}

/** The fs driver; with `presign`, `serveBlob` answers its presigned URLs. */
export type FsDriver = ObjectStoreDriver & { serveBlob?: ReturnType<typeof fsTransfer>['serveBlob'] };

interface Header {
  key: string;
  /** Normal objects; an appendable one's etag comes from `createdId` and its length. */
  etag?: string;
  contentType: string;
  metadata: Record<string, string>;
  tags: Record<string, string>;
  storageClass: string;
  contentEncoding?: string;
  /** Appendable objects: the committed length (8 bytes) follows the header. */
  appendable?: true;
  createdId?: string;
}

/** Bytes of an appendable object's committed length, after its header. */
const COMMITTED_BYTES = 8;

/** One path component for a key segment (see the layout above). */
export function encodeSegment(segment: string): string {
  if (segment === '') return '%';
  let out = '';
  for (const byte of Buffer.from(segment, 'utf8')) {
    const c = String.fromCharCode(byte);
    const keep =
      (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c === '_' || c === '-' || (c === '.' && out !== '');
    out += keep ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out.length > MAX_ENCODED ? `#${createHash('sha256').update(segment).digest('hex')}` : out;
}

/** Inverse of `encodeSegment` for names that are not hashed. */
function decodeSegment(name: string): string {
  if (name === '%') return '';
  const bytes: number[] = [];
  for (let i = 0; i < name.length; i++) {
    if (name[i] === '%') {
      bytes.push(Number.parseInt(name.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(name.charCodeAt(i));
  }
  return Buffer.from(bytes).toString('utf8');
}

/** Creates a driver storing objects under `root`. */
export function createFsDriver(options: FsDriverOptions): FsDriver {
  return new FileSystemDriver(options);
}

class FileSystemDriver extends BaseDriver {
  private readonly root: string;
  private readonly mutex = new KeyedMutex();
  private readonly transfer: ReturnType<typeof fsTransfer> | undefined;
  /** Answers the presigned URLs (only with `presign`). */
  declare readonly serveBlob?: ReturnType<typeof fsTransfer>['serveBlob'];

  constructor(options: FsDriverOptions) {
    super(NAME, {
      conditionalOverwrite: true,
      createOnly: true,
      conditionalGet: true,
      conditionalDelete: true,
      presign: Boolean(options.presign),
      tags: true,
      storageClasses: STORAGE_CLASSES,
      md5Etags: false,
      multipart: Boolean(options.presign),
      checksumSha256: false,
      restoreClasses: [],
      ranges: true,
      // Exact within one process, as the other conditions (see the layout above).
      positionAppend: true,
    } satisfies DriverCapabilities);
    this.root = path.resolve(options.root);
    if (options.presign) {
      this.transfer = fsTransfer(this.root, options.presign, {
        write: (key, body, o) => this.mutex.run(key, () => this.write(key, body, o)),
        read: (key) => this.readHeader(this.locate(key).file, key, true),
      });
      Object.defineProperty(this, 'serveBlob', { value: this.transfer.serveBlob, enumerable: true });
    }
  }

  private locate(key: string): { dir: string; file: string; dirs: Array<{ dir: string; segment: string }> } {
    const segments = checkKey(key, NAME).split('/');
    const last = segments.pop() as string;
    let dir = this.root;
    const dirs: Array<{ dir: string; segment: string }> = [];
    for (const segment of segments) {
      dir = path.join(dir, encodeSegment(segment));
      dirs.push({ dir, segment });
    }
    const file = path.join(dir, encodeSegment(last) + FILE_MARK);
    if (!file.startsWith(this.root + path.sep))
      throw new ObjectStoreError(`key escapes the root: ${key}`, NAME);
    return { dir, file, dirs };
  }

  /** The header of an open object file, and where its body starts and how long it is. */
  private async parse(
    handle: fsp.FileHandle,
  ): Promise<{ header: Header; headerBytes: number; start: number; size: number; mtime: Date }> {
    const stat = await handle.stat();
    const head = Buffer.alloc(4);
    await handle.read(head, 0, 4, 0);
    const length = head.readUInt32BE(0);
    const json = Buffer.alloc(length);
    await handle.read(json, 0, length, 4);
    const header = JSON.parse(json.toString('utf8')) as Header;
    if (!header.appendable)
      return {
        header,
        headerBytes: length,
        start: 4 + length,
        size: stat.size - 4 - length,
        mtime: stat.mtime,
      };
    const committed = Buffer.alloc(COMMITTED_BYTES);
    await handle.read(committed, 0, COMMITTED_BYTES, 4 + length);
    const start = 4 + length + COMMITTED_BYTES;
    // Bytes past the committed length are an append still being written (or cut off by a crash).
    const size = Math.min(Number(committed.readBigUInt64BE(0)), stat.size - start);
    return { header, headerBytes: length, start, size, mtime: stat.mtime };
  }

  /**
   * The object's header, with its body when `withBody` (only the bytes of `range` when given);
   * `ifMatch` is checked before the range, as HTTP evaluates preconditions first.
   */
  private async readHeader(
    file: string,
    key: string,
    withBody: boolean,
    range?: ByteRange,
    ifMatch?: string,
  ): Promise<StoredObject> {
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(file, 'r');
    } catch (error) {
      if (isCode(error, 'ENOENT', 'ENOTDIR')) throw new ObjectNotFoundError(key, NAME, { cause: error });
      throw wrap(error, key);
    }
    try {
      const { header, start, size, mtime } = await this.parse(handle);
      const { appendable, createdId, etag: stored, ...attributes } = header;
      const etag = appendable ? appendEtag(createdId as string, size) : (stored as string);
      if (ifMatch !== undefined && etag !== ifMatch) throw new ObjectConditionFailedError(key, NAME);
      let body = new Uint8Array(0);
      // One open handle: the bytes read belong to the version whose header was read (writes rename).
      const selected = range ? resolveRange(range, size, key, NAME) : { start: 0, end: size - 1 };
      if (withBody) {
        const count = selected.end - selected.start + 1;
        body = Buffer.alloc(count);
        if (count > 0) await handle.read(body, 0, count, start + selected.start);
      }
      return {
        ...attributes,
        etag,
        body,
        size,
        lastModified: mtime,
        ...(appendable ? { appendable: true } : {}),
        ...(range ? { range: selected } : {}),
      };
    } finally {
      await handle.close();
    }
  }

  private async mkdirs(target: ReturnType<FileSystemDriver['locate']>): Promise<void> {
    await fsp.mkdir(target.dir, { recursive: true });
    for (const { dir, segment } of target.dirs) {
      if (path.basename(dir).startsWith('#')) await fsp.writeFile(path.join(dir, NAME_FILE), segment);
    }
  }

  /**
   * Writes `content` to a temporary file in the key's folder and moves it into place: `link`
   * (create-only: `ObjectConditionFailedError` when the name exists) or `rename`.
   */
  private async place(key: string, content: Buffer, createOnly: boolean): Promise<void> {
    const target = this.locate(key);
    // A concurrent delete may remove an emptied folder between mkdir and rename: try once more.
    for (let attempt = 0; ; attempt++) {
      await this.mkdirs(target);
      const temp = path.join(target.dir, `.tmp-${randomUUID()}`);
      try {
        await fsp.writeFile(temp, content);
        if (createOnly) {
          try {
            await fsp.link(temp, target.file);
          } catch (error) {
            if (isCode(error, 'EEXIST')) throw new ObjectConditionFailedError(key, NAME, { cause: error });
            throw error;
          }
        } else {
          await fsp.rename(temp, target.file);
        }
        return;
      } catch (error) {
        if (error instanceof ObjectStoreError) throw error;
        if (attempt === 0 && isCode(error, 'ENOENT')) continue;
        throw wrap(error, key);
      } finally {
        await fsp.rm(temp, { force: true });
      }
    }
  }

  private async write(key: string, body: Uint8Array, o: PutOptions): Promise<{ etag: string }> {
    const metadata = { ...o.metadata };
    const header: Header = {
      key,
      etag: contentEtag(body, metadata),
      contentType: o.contentType ?? 'application/octet-stream',
      metadata,
      tags: { ...o.tags },
      storageClass: o.storageClass ?? 'STANDARD',
      ...(o.contentEncoding ? { contentEncoding: o.contentEncoding } : {}),
    };
    await this.place(key, Buffer.concat([framed(header), body]), o.ifNoneMatch === '*');
    return { etag: header.etag as string };
  }

  private async checkCondition(key: string, file: string, ifMatch: string | undefined): Promise<void> {
    if (ifMatch === undefined) return;
    const current = await this.readHeader(file, key, false).catch((error: unknown) => {
      if (error instanceof ObjectNotFoundError) return undefined;
      throw error;
    });
    if (current?.etag !== ifMatch) throw new ObjectConditionFailedError(key, NAME);
  }

  private async remove(key: string): Promise<void> {
    const target = this.locate(key);
    try {
      await fsp.unlink(target.file);
    } catch (error) {
      if (!isCode(error, 'ENOENT', 'ENOTDIR')) throw wrap(error, key);
    }
    // Remove the folders this delete emptied, deepest first; stop at the first that still holds something.
    for (const { dir, segment } of [...target.dirs].reverse()) {
      const left = await fsp.readdir(dir).catch(() => [NAME_FILE]);
      if (left.some((name) => name !== NAME_FILE)) break;
      await fsp.rm(path.join(dir, NAME_FILE), { force: true });
      try {
        await fsp.rmdir(dir);
      } catch {
        // A writer got in first: give its hashed folder its name back.
        if (path.basename(dir).startsWith('#'))
          await fsp.writeFile(path.join(dir, NAME_FILE), segment).catch(() => {});
        break;
      }
    }
  }

  private async segmentOf(dir: string, name: string): Promise<string> {
    if (!name.startsWith('#')) return decodeSegment(name);
    return fsp.readFile(path.join(dir, name, NAME_FILE), 'utf8');
  }

  private async hasObject(dir: string): Promise<boolean> {
    const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (entry.isFile() && entry.name.endsWith(FILE_MARK)) return true;
      if (entry.isDirectory() && (await this.hasObject(path.join(dir, entry.name)))) return true;
    }
    return false;
  }

  /** Every entry under `dir` (whose keys start with `keyPrefix`); folders become prefixes when `shallow`. */
  private async collect(dir: string, keyPrefix: string, shallow: boolean, out: ListEntry[]): Promise<void> {
    const entries = await fsp.readdir(dir, { withFileTypes: true }).catch((error: unknown) => {
      if (isCode(error, 'ENOENT', 'ENOTDIR')) return [];
      throw wrap(error, keyPrefix);
    });
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const full = path.join(dir, entry.name);
      if (entry.isFile() && entry.name.endsWith(FILE_MARK)) {
        // The header holds the key, so hashed names need no extra read; a file deleted meanwhile is skipped.
        const object = await this.readHeader(full, keyPrefix, false).catch(() => undefined);
        if (object)
          out.push({
            key: object.key,
            etag: object.etag,
            size: object.size,
            lastModified: object.lastModified,
            storageClass: object.storageClass,
          });
      } else if (entry.isDirectory()) {
        const sub = `${keyPrefix}${await this.segmentOf(dir, entry.name)}/`;
        if (shallow) {
          if (await this.hasObject(full)) out.push({ prefix: sub });
        } else await this.collect(full, sub, false, out);
      }
    }
  }

  protected getObject(key: string, o: GetOptions): Promise<StoredObject> {
    return this.readHeader(this.locate(key).file, key, true, o.range, o.ifMatch);
  }

  protected async headObject(key: string, withTags: boolean): Promise<ObjectInfo> {
    const { body: _body, tags, ...info } = await this.readHeader(this.locate(key).file, key, false);
    return withTags ? { ...info, tags } : info;
  }

  protected putObject(key: string, body: Uint8Array, o: PutOptions): Promise<{ etag: string }> {
    const { file } = this.locate(key);
    return this.mutex.run(key, async () => {
      await this.checkCondition(key, file, o.ifMatch);
      return this.write(key, body, o);
    });
  }

  protected deleteObject(key: string, ifMatch: string | undefined): Promise<void> {
    const { file } = this.locate(key);
    return this.mutex.run(key, async () => {
      await this.checkCondition(key, file, ifMatch);
      await this.remove(key);
    });
  }

  protected async deleteBatch(keys: readonly string[]): Promise<DeleteManyResult> {
    const deleted: string[] = [];
    const failed: DeleteFailure[] = [];
    await Promise.all(
      keys.map((key) =>
        this.mutex
          .run(key, () => this.remove(key))
          .then(
            () => deleted.push(key),
            (error: unknown) => failed.push({ key, code: 'InternalError', message: String(error) }),
          ),
      ),
    );
    return { deleted, failed };
  }

  protected async listObjects(o: ListOptions & { limit: number }): Promise<ObjectListPage> {
    const prefix = o.prefix ?? '';
    // Read only the folder that holds every key with this prefix.
    const whole = prefix.slice(0, prefix.lastIndexOf('/') + 1);
    const segments = whole === '' ? [] : whole.slice(0, -1).split('/');
    const dir = path.join(this.root, ...segments.map(encodeSegment));
    const entries: ListEntry[] = [];
    await this.collect(dir, whole, o.delimiter === '/', entries);
    entries.sort((a, b) => compareKeys('prefix' in a ? a.prefix : a.key, 'prefix' in b ? b.prefix : b.key));
    return pageOf(entries, o, NAME);
  }

  protected async copyObject(source: string, target: string, o: CopyOptions): Promise<{ etag: string }> {
    const from = await this.readHeader(this.locate(source).file, source, true);
    if (from.appendable) throw new UnsupportedError('copy of an appendable object', NAME);
    return this.mutex.run(target, () => this.write(target, from.body, copiedOptions(from, o)));
  }

  protected override appendObject(
    key: string,
    body: Uint8Array,
    o: AppendObjectOptions,
  ): Promise<AppendObjectResult> {
    return this.mutex.run(key, async () => {
      const { file } = this.locate(key);
      // A creating append that loses a `link` race to another process finds the object the second time.
      for (let attempt = 0; ; attempt++) {
        let handle: fsp.FileHandle;
        try {
          handle = await fsp.open(file, 'r+');
        } catch (error) {
          if (!isCode(error, 'ENOENT', 'ENOTDIR')) throw wrap(error, key);
          if (o.position !== 0) throw new ObjectConditionFailedError(key, NAME, { nextPosition: 0 });
          const created = await this.create(key, body, o).catch((e: unknown) => {
            if (attempt === 0 && e instanceof ObjectConditionFailedError) return undefined;
            throw e;
          });
          if (created) return created;
          continue;
        }
        try {
          return await this.extend(handle, key, body, o.position);
        } finally {
          await handle.close();
        }
      }
    });
  }

  /** The creating append: the whole file, linked into place (create-only). */
  private async create(key: string, body: Uint8Array, o: AppendObjectOptions): Promise<AppendObjectResult> {
    const header: Header = {
      key,
      contentType: o.contentType ?? 'application/octet-stream',
      metadata: { ...o.metadata },
      tags: { ...o.tags },
      storageClass: o.storageClass ?? 'STANDARD',
      appendable: true,
      createdId: randomUUID(),
    };
    const committed = Buffer.alloc(COMMITTED_BYTES);
    committed.writeBigUInt64BE(BigInt(body.byteLength), 0);
    await this.place(key, Buffer.concat([framed(header), committed, body]), true);
    return { etag: appendEtag(header.createdId as string, body.byteLength), nextPosition: body.byteLength };
  }

  /** An append to an existing object (the key's lock held). */
  private async extend(
    handle: fsp.FileHandle,
    key: string,
    body: Uint8Array,
    position: number,
  ): Promise<AppendObjectResult> {
    const { header, headerBytes, start, size } = await this.parse(handle);
    if (!header.appendable) throw new ObjectNotAppendableError(key, NAME);
    if (position !== size) throw new ObjectConditionFailedError(key, NAME, { nextPosition: size });
    try {
      // Whatever an interrupted append left past the committed length goes; then the bytes; then the length.
      await handle.truncate(start + size);
      for (let written = 0; written < body.byteLength; ) {
        const { bytesWritten } = await handle.write(
          body,
          written,
          body.byteLength - written,
          start + size + written,
        );
        written += bytesWritten;
      }
      const next = size + body.byteLength;
      const committed = Buffer.alloc(COMMITTED_BYTES);
      committed.writeBigUInt64BE(BigInt(next), 0);
      await handle.write(committed, 0, COMMITTED_BYTES, 4 + headerBytes);
      return { etag: appendEtag(header.createdId as string, next), nextPosition: next };
    } catch (error) {
      throw wrap(error, key);
    }
  }

  protected override signGet(key: string, o: PresignOptions): Promise<string> {
    return (this.transfer as NonNullable<FileSystemDriver['transfer']>).presignGet(key, o);
  }
  protected override signPut(key: string, o: PresignOptions): Promise<string> {
    return (this.transfer as NonNullable<FileSystemDriver['transfer']>).presignPut(key, o);
  }
  protected override signUpload(key: string, o: PresignUploadOptions): Promise<PresignedRequest> {
    return (this.transfer as NonNullable<FileSystemDriver['transfer']>).presignUpload(key, o);
  }
  protected override startUpload(key: string, o: MultipartOptions): Promise<string> {
    return (this.transfer as NonNullable<FileSystemDriver['transfer']>).createMultipart(key, o);
  }
  protected override signPart(key: string, id: string, n: number, o: PartOptions): Promise<PresignedRequest> {
    return (this.transfer as NonNullable<FileSystemDriver['transfer']>).presignPart(key, id, n, o);
  }
  protected override partsOf(key: string, id: string): Promise<UploadedPart[]> {
    return (this.transfer as NonNullable<FileSystemDriver['transfer']>).listParts(key, id);
  }
  protected override finishUpload(
    key: string,
    id: string,
    parts: readonly Pick<UploadedPart, 'partNumber' | 'etag'>[],
  ): Promise<{ etag: string }> {
    return (this.transfer as NonNullable<FileSystemDriver['transfer']>).completeMultipart(key, id, parts);
  }
  protected override abortUpload(key: string, id: string): Promise<void> {
    return (this.transfer as NonNullable<FileSystemDriver['transfer']>).abortMultipart(key, id);
  }

  protected override mapError(error: unknown, key: string): ObjectStoreError {
    return error instanceof ObjectStoreError ? error : wrap(error, key);
  }
}

/** A header as the file starts: its 4-byte length, then its JSON. */
function framed(header: Header): Buffer {
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32BE(json.length, 0);
  return Buffer.concat([length, json]);
}

function isCode(error: unknown, ...codes: string[]): boolean {
  return (
    typeof error === 'object' && error !== null && codes.includes((error as { code?: string }).code ?? '')
  );
}

function wrap(error: unknown, key: string): ObjectStoreError {
  return new ObjectStoreError(`fs failed on ${key}: ${(error as Error).message}`, NAME, { cause: error });
}
