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
 */
import { createHash, randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import {
  checkKey,
  checkMetadata,
  checkRange,
  checkStorageClass,
  checkTags,
  compareKeys,
  contentEtag,
  copiedOptions,
  deleteBatches,
  KeyedMutex,
  type ListEntry,
  pageOf,
  resolveRange,
  toBytes,
  withoutDirectTransfer,
} from './common.js';
import { ObjectConditionFailedError, ObjectNotFoundError, ObjectStoreError } from './errors.js';
import { type FsPresignOptions, fsTransfer } from './fs-transfer.js';
import type {
  ByteRange,
  DeleteFailure,
  DriverCapabilities,
  ObjectInfo,
  ObjectStoreDriver,
  PutOptions,
  StoredObject,
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
  etag: string;
  contentType: string;
  metadata: Record<string, string>;
  tags: Record<string, string>;
  storageClass: string;
  contentEncoding?: string;
}

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
  const root = path.resolve(options.root);
  const mutex = new KeyedMutex();
  const capabilities: DriverCapabilities = {
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
  };

  function locate(key: string): { dir: string; file: string; dirs: Array<{ dir: string; segment: string }> } {
    const segments = checkKey(key, NAME).split('/');
    const last = segments.pop() as string;
    let dir = root;
    const dirs: Array<{ dir: string; segment: string }> = [];
    for (const segment of segments) {
      dir = path.join(dir, encodeSegment(segment));
      dirs.push({ dir, segment });
    }
    const file = path.join(dir, encodeSegment(last) + FILE_MARK);
    if (!file.startsWith(root + path.sep)) throw new ObjectStoreError(`key escapes the root: ${key}`, NAME);
    return { dir, file, dirs };
  }

  /**
   * The object's header, with its body when `withBody` (only the bytes of `range` when given);
   * `ifMatch` is checked before the range, as HTTP evaluates preconditions first.
   */
  async function readHeader(
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
      const stat = await handle.stat();
      const head = Buffer.alloc(4);
      await handle.read(head, 0, 4, 0);
      const length = head.readUInt32BE(0);
      const json = Buffer.alloc(length);
      await handle.read(json, 0, length, 4);
      const header = JSON.parse(json.toString('utf8')) as Header;
      const size = stat.size - 4 - length;
      if (ifMatch !== undefined && header.etag !== ifMatch) throw new ObjectConditionFailedError(key, NAME);
      let body = new Uint8Array(0);
      // One open handle: the bytes read belong to the version whose header was read (writes rename).
      const selected = range ? resolveRange(range, size, key, NAME) : { start: 0, end: size - 1 };
      if (withBody) {
        const count = selected.end - selected.start + 1;
        body = Buffer.alloc(count);
        if (count > 0) await handle.read(body, 0, count, 4 + length + selected.start);
      }
      return { ...header, body, size, lastModified: stat.mtime, ...(range ? { range: selected } : {}) };
    } finally {
      await handle.close();
    }
  }

  async function mkdirs(target: ReturnType<typeof locate>): Promise<void> {
    await fsp.mkdir(target.dir, { recursive: true });
    for (const { dir, segment } of target.dirs) {
      if (path.basename(dir).startsWith('#')) await fsp.writeFile(path.join(dir, NAME_FILE), segment);
    }
  }

  async function write(key: string, body: Uint8Array, o: PutOptions): Promise<{ etag: string }> {
    checkMetadata(o.metadata, NAME);
    checkTags(o.tags, NAME);
    checkStorageClass(o.storageClass, STORAGE_CLASSES, NAME);
    const target = locate(key);
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
    const json = Buffer.from(JSON.stringify(header), 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32BE(json.length, 0);
    // A concurrent delete may remove an emptied folder between mkdir and rename: try once more.
    for (let attempt = 0; ; attempt++) {
      await mkdirs(target);
      const temp = path.join(target.dir, `.tmp-${randomUUID()}`);
      try {
        await fsp.writeFile(temp, Buffer.concat([length, json, body]));
        if (o.ifNoneMatch === '*') {
          try {
            await fsp.link(temp, target.file);
          } catch (error) {
            if (isCode(error, 'EEXIST')) throw new ObjectConditionFailedError(key, NAME, { cause: error });
            throw error;
          }
        } else {
          await fsp.rename(temp, target.file);
        }
        return { etag: header.etag };
      } catch (error) {
        if (error instanceof ObjectStoreError) throw error;
        if (attempt === 0 && isCode(error, 'ENOENT')) continue;
        throw wrap(error, key);
      } finally {
        await fsp.rm(temp, { force: true });
      }
    }
  }

  async function checkCondition(key: string, file: string, ifMatch: string | undefined): Promise<void> {
    if (ifMatch === undefined) return;
    const current = await readHeader(file, key, false).catch((error: unknown) => {
      if (error instanceof ObjectNotFoundError) return undefined;
      throw error;
    });
    if (current?.etag !== ifMatch) throw new ObjectConditionFailedError(key, NAME);
  }

  async function remove(key: string): Promise<void> {
    const target = locate(key);
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

  async function segmentOf(dir: string, name: string): Promise<string> {
    if (!name.startsWith('#')) return decodeSegment(name);
    return fsp.readFile(path.join(dir, name, NAME_FILE), 'utf8');
  }

  async function hasObject(dir: string): Promise<boolean> {
    const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (entry.isFile() && entry.name.endsWith(FILE_MARK)) return true;
      if (entry.isDirectory() && (await hasObject(path.join(dir, entry.name)))) return true;
    }
    return false;
  }

  /** Every entry under `dir` (whose keys start with `keyPrefix`); folders become prefixes when `shallow`. */
  async function collect(dir: string, keyPrefix: string, shallow: boolean, out: ListEntry[]): Promise<void> {
    const entries = await fsp.readdir(dir, { withFileTypes: true }).catch((error: unknown) => {
      if (isCode(error, 'ENOENT', 'ENOTDIR')) return [];
      throw wrap(error, keyPrefix);
    });
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const full = path.join(dir, entry.name);
      if (entry.isFile() && entry.name.endsWith(FILE_MARK)) {
        // The header holds the key, so hashed names need no extra read; a file deleted meanwhile is skipped.
        const object = await readHeader(full, keyPrefix, false).catch(() => undefined);
        if (object)
          out.push({
            key: object.key,
            etag: object.etag,
            size: object.size,
            lastModified: object.lastModified,
            storageClass: object.storageClass,
          });
      } else if (entry.isDirectory()) {
        const sub = `${keyPrefix}${await segmentOf(dir, entry.name)}/`;
        if (shallow) {
          if (await hasObject(full)) out.push({ prefix: sub });
        } else await collect(full, sub, false, out);
      }
    }
  }

  return {
    name: NAME,
    capabilities,
    async get(key, o = {}) {
      if (o.range) checkRange(o.range, NAME);
      return readHeader(locate(key).file, key, true, o.range, o.ifMatch);
    },
    async head(key, o = {}) {
      const { body: _body, tags, ...info } = await readHeader(locate(key).file, key, false);
      return (o.tags ? { ...info, tags } : info) satisfies ObjectInfo;
    },
    async put(key, body, o = {}) {
      const { file } = locate(key);
      return mutex.run(key, async () => {
        await checkCondition(key, file, o.ifMatch);
        return write(key, toBytes(body), o);
      });
    },
    async delete(key, o = {}) {
      const { file } = locate(key);
      return mutex.run(key, async () => {
        await checkCondition(key, file, o.ifMatch);
        await remove(key);
      });
    },
    async deleteMany(keys) {
      for (const key of keys) checkKey(key, NAME);
      const deleted: string[] = [];
      const failed: DeleteFailure[] = [];
      for (const batch of deleteBatches(keys)) {
        await Promise.all(
          batch.map((key) =>
            mutex
              .run(key, () => remove(key))
              .then(
                () => deleted.push(key),
                (error: unknown) => failed.push({ key, code: 'InternalError', message: String(error) }),
              ),
          ),
        );
      }
      return { deleted, failed };
    },
    async list(o = {}) {
      const prefix = o.prefix ?? '';
      // Read only the folder that holds every key with this prefix.
      const whole = prefix.slice(0, prefix.lastIndexOf('/') + 1);
      const segments = whole === '' ? [] : whole.slice(0, -1).split('/');
      const dir = path.join(root, ...segments.map(encodeSegment));
      const entries: ListEntry[] = [];
      await collect(dir, whole, o.delimiter === '/', entries);
      entries.sort((a, b) => compareKeys('prefix' in a ? a.prefix : a.key, 'prefix' in b ? b.prefix : b.key));
      return pageOf(entries, o, NAME);
    },
    async copy(source, target, o = {}) {
      const from = await readHeader(locate(source).file, source, true);
      return mutex.run(target, () => write(target, from.body, copiedOptions(from, o)));
    },
    ...(options.presign
      ? fsTransfer(root, options.presign, {
          write: (key, body, o) => mutex.run(key, () => write(key, body, o)),
          read: (key) => readHeader(locate(key).file, key, true),
        })
      : withoutDirectTransfer(NAME)),
    async close() {},
  };
}

function isCode(error: unknown, ...codes: string[]): boolean {
  return (
    typeof error === 'object' && error !== null && codes.includes((error as { code?: string }).code ?? '')
  );
}

function wrap(error: unknown, key: string): ObjectStoreError {
  return new ObjectStoreError(`fs failed on ${key}: ${(error as Error).message}`, NAME, { cause: error });
}
