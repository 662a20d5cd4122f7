/**
 * The manifest of a workspace snapshot (`WorkspaceManifest`) and its validation: every entry's
 * path, kind, mode, size, mtime, SHA-256 and chunks; symlinks as links. A path is relative, uses
 * `/`, has no empty, `.` or `..` segment, no NUL and no backslash, appears once, and never lies
 * below a symlink of the same manifest, so a restore can never write outside its target.
 */
import pathModule from 'node:path';
import { ValidationError } from '../contract/errors.js';
import type { ChunkRef } from './packs.js';

/** One entry of a manifest. */
export interface WorkspaceManifestEntry {
  readonly path: string;
  readonly type: 'file' | 'dir' | 'symlink';
  /** Permission bits (`0o7777` at most). */
  readonly mode: number;
  /** Plain size in bytes (files). */
  readonly size: number;
  readonly mtimeMs: number;
  /** The inode it was read from (files; for a client's stat cache, never used by a restore). */
  readonly ino?: number;
  /** `sha256:<hex>` of the whole file (files). */
  readonly sha256?: string;
  /** Chunks in order (files). */
  readonly chunks?: readonly ChunkRef[];
  /** Link target (symlinks), as stored; never followed by a restore. */
  readonly target?: string;
}

/** A snapshot's manifest, format 1. */
export interface WorkspaceManifest {
  readonly format: 1;
  readonly entries: readonly WorkspaceManifestEntry[];
}

const HASH = /^sha256:[0-9a-f]{64}$/;
const PACK = /^[0-9a-f]{64}$/;

function fail(field: string, message: string): never {
  throw new ValidationError(field, message);
}

/** Checks a manifest path; throws `ValidationError` naming `field`. */
export function checkManifestPath(path: unknown, field: string): string {
  if (typeof path !== 'string' || path.length === 0) fail(field, 'must be a non-empty string');
  if (path.includes('\0')) fail(field, 'must not contain NUL');
  if (path.includes('\\')) fail(field, 'must not contain a backslash');
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) fail(field, 'must be relative');
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.' || segment === '..')
      fail(field, 'must not have an empty, "." or ".." segment');
  }
  return path;
}

/**
 * Validates a manifest read from a client or from storage; `packSizes`, when given, maps each
 * pack to its stored size so that a chunk outside its pack is refused. Throws `ValidationError`
 * naming the field (`entries[3].path`, `entries[3].chunks[0].offset`).
 */
export function validateWorkspaceManifest(
  value: unknown,
  packSizes?: ReadonlyMap<string, number>,
): WorkspaceManifest {
  if (typeof value !== 'object' || value === null) fail('manifest', 'must be an object');
  const m = value as { format?: unknown; entries?: unknown };
  if (m.format !== 1) fail('format', 'must be 1');
  if (!Array.isArray(m.entries)) fail('entries', 'must be an array');
  const seen = new Set<string>();
  const links: string[] = [];
  m.entries.forEach((raw: unknown, i: number) => {
    const at = `entries[${i}]`;
    if (typeof raw !== 'object' || raw === null) fail(at, 'must be an object');
    const e = raw as Record<string, unknown>;
    const path = checkManifestPath(e.path, `${at}.path`);
    if (seen.has(path)) fail(`${at}.path`, 'is a duplicate');
    seen.add(path);
    if (e.type !== 'file' && e.type !== 'dir' && e.type !== 'symlink')
      fail(`${at}.type`, 'must be file, dir or symlink');
    if (!Number.isInteger(e.mode) || (e.mode as number) < 0 || (e.mode as number) > 0o7777)
      fail(`${at}.mode`, 'must be permission bits');
    if (!Number.isSafeInteger(e.size) || (e.size as number) < 0)
      fail(`${at}.size`, 'must be a non-negative integer');
    if (typeof e.mtimeMs !== 'number' || !Number.isFinite(e.mtimeMs))
      fail(`${at}.mtimeMs`, 'must be a number');
    if (e.ino !== undefined && (!Number.isSafeInteger(e.ino) || (e.ino as number) < 0))
      fail(`${at}.ino`, 'must be a non-negative integer');
    if (e.type === 'symlink') {
      if (typeof e.target !== 'string' || e.target.length === 0 || e.target.includes('\0'))
        fail(`${at}.target`, 'must be a non-empty string without NUL');
      links.push(path);
    }
    if (e.type === 'file') {
      if (typeof e.sha256 !== 'string' || !HASH.test(e.sha256))
        fail(`${at}.sha256`, 'must be sha256:<64 hex>');
      if (!Array.isArray(e.chunks)) fail(`${at}.chunks`, 'must be an array');
      let total = 0;
      e.chunks.forEach((c: unknown, j: number) => {
        const cat = `${at}.chunks[${j}]`;
        const r = c as Record<string, unknown>;
        if (typeof r !== 'object' || r === null) fail(cat, 'must be an object');
        if (typeof r.hash !== 'string' || !HASH.test(r.hash)) fail(`${cat}.hash`, 'must be sha256:<64 hex>');
        if (typeof r.pack !== 'string' || !PACK.test(r.pack)) fail(`${cat}.pack`, 'must be 64 hex');
        for (const k of ['size', 'offset', 'length'] as const) {
          if (!Number.isSafeInteger(r[k]) || (r[k] as number) < 0)
            fail(`${cat}.${k}`, 'must be a non-negative integer');
        }
        if (r.encoding !== 'gzip' && r.encoding !== 'identity')
          fail(`${cat}.encoding`, 'must be gzip or identity');
        const packSize = packSizes?.get(r.pack as string);
        if (packSizes && packSize === undefined) fail(`${cat}.pack`, 'is not a stored pack');
        if (packSize !== undefined && (r.offset as number) + (r.length as number) > packSize)
          fail(`${cat}.offset`, 'lies outside its pack');
        total += r.size as number;
      });
      if (total !== e.size) fail(`${at}.size`, 'must equal the sum of its chunks');
    }
  });
  // A path below a symlink would let a restore write through the link, outside its target.
  for (const path of seen) {
    for (const link of links) {
      if (path.startsWith(`${link}/`)) fail('entries', `"${path}" lies below the symlink "${link}"`);
    }
  }
  return value as WorkspaceManifest;
}

/**
 * The absolute path a restore writes an entry to: the checked path joined under `target`, refused
 * (ValidationError) if it would resolve outside it. The restore also creates symlinks last and
 * refuses to follow one, so a link in the target cannot redirect a later write.
 */
export function restorePath(target: string, path: string, field = 'path'): string {
  const { resolve, sep } = pathModule;
  checkManifestPath(path, field);
  const root = resolve(target);
  const full = resolve(root, ...path.split('/'));
  if (full !== root && !full.startsWith(root + sep)) fail(field, 'resolves outside the target');
  return full;
}

/** What changed from one manifest to another, from the manifests alone. */
export interface WorkspaceManifestDiff {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  readonly changed: readonly string[];
  /** Plain bytes of the chunks `next` references that `prev` does not. */
  readonly newChunkBytes: number;
}

function signature(e: WorkspaceManifestEntry): string {
  return JSON.stringify([e.type, e.mode, e.size, e.sha256 ?? null, e.target ?? null]);
}

/** Added, removed and changed paths (type, mode, size, content or link target) and new chunk bytes. */
export function diffWorkspaceManifests(
  prev: WorkspaceManifest,
  next: WorkspaceManifest,
): WorkspaceManifestDiff {
  const before = new Map(prev.entries.map((e) => [e.path, e]));
  const after = new Map(next.entries.map((e) => [e.path, e]));
  const known = new Set(prev.entries.flatMap((e) => (e.chunks ?? []).map((c) => c.hash)));
  const added: string[] = [];
  const changed: string[] = [];
  const counted = new Set<string>();
  let newChunkBytes = 0;
  for (const [path, e] of after) {
    const old = before.get(path);
    if (!old) added.push(path);
    else if (signature(old) !== signature(e)) changed.push(path);
    for (const c of e.chunks ?? []) {
      if (known.has(c.hash) || counted.has(c.hash)) continue;
      counted.add(c.hash);
      newChunkBytes += c.size;
    }
  }
  const removed = [...before.keys()].filter((path) => !after.has(path));
  return { added: added.sort(), removed: removed.sort(), changed: changed.sort(), newChunkBytes };
}
