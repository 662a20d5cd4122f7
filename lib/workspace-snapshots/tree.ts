/**
 * A directory tree to a manifest and packs, and back: the local half of a workspace push and
 * restore, with the chunk source injected (the client reads it with ranged GETs of packs).
 */
import { createHash } from 'node:crypto';
import { chmod, lstat, mkdir, open, readdir, readFile, readlink, symlink, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { chunkBoundaries } from './chunker.js';
import {
  restorePath,
  validateWorkspaceManifest,
  type WorkspaceManifest,
  type WorkspaceManifestEntry,
} from './manifest.js';
import { type ChunkRef, decodeChunk, type PackWriter } from './packs.js';

/** Reads a manifest's tree from `dir`, adding every chunk to `writer` (flushed at the end). */
export async function scanTree(dir: string, writer: PackWriter): Promise<WorkspaceManifest> {
  const pending: Array<{ entry: Omit<WorkspaceManifestEntry, 'chunks'>; hashes: string[] }> = [];
  const walk = async (abs: string, rel: string): Promise<void> => {
    const names = (await readdir(abs)).sort();
    for (const name of names) {
      const full = join(abs, name);
      const path = rel ? `${rel}/${name}` : name;
      const st = await lstat(full);
      const base = { path, mode: st.mode & 0o7777, mtimeMs: st.mtimeMs };
      if (st.isSymbolicLink()) {
        pending.push({
          entry: { ...base, type: 'symlink', size: 0, target: await readlink(full) },
          hashes: [],
        });
      } else if (st.isDirectory()) {
        pending.push({ entry: { ...base, type: 'dir', size: 0 }, hashes: [] });
        await walk(full, path);
      } else if (st.isFile()) {
        const data = new Uint8Array(await readFile(full));
        const hashes = chunkBoundaries(data).map(([o, l]) => writer.add(data.subarray(o, o + l)));
        const sha256 = `sha256:${createHash('sha256').update(data).digest('hex')}`;
        pending.push({ entry: { ...base, type: 'file', size: data.length, sha256 }, hashes });
      }
    }
  };
  await walk(dir, '');
  writer.flush();
  const entries = pending.map(({ entry, hashes }) =>
    entry.type === 'file' ? { ...entry, chunks: hashes.map((h) => writer.refOf(h)) } : entry,
  );
  return validateWorkspaceManifest({ format: 1, entries });
}

/** Reads `length` stored bytes of a pack at `offset`. */
export type PackRangeReader = (pack: string, offset: number, length: number) => Promise<Uint8Array>;

/** Options of `restoreTree`. */
export interface RestoreOptions {
  /**
   * Continue a restore that was cut off: `target` may hold what an earlier attempt wrote. A file
   * already there with its size and SHA-256 is kept (not read again); any other file is written
   * again; a symlink, or anything but a directory where a directory belongs, is refused.
   */
  readonly resume?: boolean;
  /** Called after each file: plain bytes of the manifest's files done (kept ones included), of `total`. */
  readonly onProgress?: (done: number, total: number) => void;
}

/** The SHA-256 of a regular file already in place, or undefined when there is none. */
async function existingFile(full: string, size: number): Promise<string | undefined> {
  const st = await lstat(full).catch(() => undefined);
  if (!st) return undefined;
  if (!st.isFile()) throw new Error(`${full} is in the way of a file (not a regular file)`);
  if (st.size !== size) return '';
  return `sha256:${createHash('sha256')
    .update(await readFile(full))
    .digest('hex')}`;
}

/**
 * Restores a manifest into `target` (created if absent, refused unless empty, or with `resume`
 * continued): directories, then files (created exclusively, each chunk and the whole file checked
 * against their SHA-256), then modes, then symlinks last, so no write can pass through a link.
 */
export async function restoreTree(
  manifest: WorkspaceManifest,
  target: string,
  read: PackRangeReader,
  options: RestoreOptions = {},
): Promise<void> {
  const checked = validateWorkspaceManifest(manifest);
  await mkdir(target, { recursive: true });
  if (!options.resume && (await readdir(target)).length > 0)
    throw new Error(`restore target ${target} is not empty`);
  const total = checked.entries.reduce((n, e) => n + (e.type === 'file' ? e.size : 0), 0);
  let done = 0;
  const dirs = checked.entries.filter((e) => e.type === 'dir');
  for (const e of dirs) {
    const full = restorePath(target, e.path);
    if (options.resume) {
      const st = await lstat(full).catch(() => undefined);
      if (st && !st.isDirectory()) throw new Error(`${full} is in the way of a directory`);
    }
    await mkdir(full, { recursive: true });
  }
  for (const e of checked.entries) {
    if (e.type !== 'file') continue;
    const full = restorePath(target, e.path);
    await mkdir(join(full, '..'), { recursive: true });
    if (options.resume) {
      const have = await existingFile(full, e.size);
      if (have === e.sha256) {
        done += e.size;
        options.onProgress?.(done, total);
        continue;
      }
      if (have !== undefined) await unlink(full);
    }
    const handle = await open(full, 'wx', 0o600);
    const whole = createHash('sha256');
    try {
      for (const ref of e.chunks ?? ([] as ChunkRef[])) {
        const plain = decodeChunk(await read(ref.pack, ref.offset, ref.length), ref);
        whole.update(plain);
        await handle.write(plain);
      }
    } finally {
      await handle.close();
    }
    if (`sha256:${whole.digest('hex')}` !== e.sha256) throw new Error(`${e.path} does not match its SHA-256`);
    done += e.size;
    options.onProgress?.(done, total);
  }
  for (const e of checked.entries) if (e.type !== 'symlink') await chmod(restorePath(target, e.path), e.mode);
  for (const e of checked.entries) {
    if (e.type !== 'symlink') continue;
    const full = restorePath(target, e.path);
    if (options.resume) {
      const st = await lstat(full).catch(() => undefined);
      if (st?.isSymbolicLink() && (await readlink(full)) === e.target) continue;
      if (st) throw new Error(`${full} is in the way of a symlink`);
    }
    await symlink(e.target as string, full);
  }
}
