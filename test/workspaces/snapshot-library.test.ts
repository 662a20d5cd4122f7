import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../lib/contract/errors.js';
import {
  CHUNK_AVG,
  CHUNK_MAX,
  CHUNK_MIN,
  chunkBoundaries,
  guidedChunks,
} from '../../lib/workspace-snapshots/chunker.js';
import {
  diffWorkspaceManifests,
  restorePath,
  validateWorkspaceManifest,
} from '../../lib/workspace-snapshots/manifest.js';
import {
  chunkHash,
  decodeChunk,
  encodeChunk,
  encodeChunkAsync,
  PackWriter,
} from '../../lib/workspace-snapshots/packs.js';
import { restoreTree, scanTree } from '../../lib/workspace-snapshots/tree.js';

/** Deterministic pseudo-random bytes (xorshift32). */
function randomBytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

function hashesOf(data: Uint8Array): Map<string, number> {
  const out = new Map<string, number>();
  for (const [o, l] of chunkBoundaries(data)) out.set(chunkHash(data.subarray(o, o + l)), l);
  return out;
}

/** Bytes of `next`'s chunks that `prev` does not have: what a push of `next` would upload. */
function newBytes(prev: Uint8Array, next: Uint8Array): number {
  const old = hashesOf(prev);
  let total = 0;
  for (const [h, l] of hashesOf(next)) if (!old.has(h)) total += l;
  return total;
}

const MiB = 1024 * 1024;
const KiB = 1024;

describe('chunker', () => {
  const data = randomBytes(16 * MiB, 7);

  it('keeps files of at most 512 KiB whole and has no chunk for an empty file', () => {
    expect(chunkBoundaries(new Uint8Array(0))).toEqual([]);
    expect(chunkBoundaries(randomBytes(CHUNK_MAX, 1))).toEqual([[0, CHUNK_MAX]]);
    expect(chunkBoundaries(randomBytes(CHUNK_MAX + 1, 1)).length).toBeGreaterThan(1);
  });

  it('is deterministic, covers the file exactly and keeps chunks within min and max', () => {
    const a = chunkBoundaries(data);
    expect(chunkBoundaries(data.slice())).toEqual(a);
    let at = 0;
    for (const [o, l] of a) {
      expect(o).toBe(at);
      at += l;
    }
    expect(at).toBe(data.length);
    for (const [, l] of a.slice(0, -1)) {
      expect(l).toBeGreaterThanOrEqual(CHUNK_MIN);
      expect(l).toBeLessThanOrEqual(CHUNK_MAX);
    }
    const mean = data.length / a.length;
    expect(mean).toBeGreaterThan(CHUNK_AVG * 0.75);
    expect(mean).toBeLessThan(CHUNK_AVG * 1.5);
  });

  it('a 200 KiB in-place edit costs about 416 KiB of new chunks on average, not the file', () => {
    // Eight edits at different places: one edit's cost depends on where the cuts fall around it.
    const costs = Array.from({ length: 8 }, (_, i) => {
      const edited = data.slice();
      edited.set(randomBytes(200 * KiB, 99 + i), Math.floor((1 + i) * 1.7 * MiB));
      return newBytes(data, edited);
    });
    const mean = costs.reduce((a, b) => a + b, 0) / costs.length;
    // Both versions cut afresh (a push without a parent to guide it; a push with one costs less,
    // see the guided cuts below): a mean of about 490 KiB, each between 250 KiB and 1 MiB, against
    // ~1.6 MiB with 1 MiB chunks.
    expect(mean).toBeGreaterThanOrEqual(200 * KiB);
    expect(mean).toBeLessThanOrEqual(640 * KiB);
    for (const cost of costs) expect(cost).toBeLessThanOrEqual(1.25 * MiB);
  });

  it('a mid-file insert changes only the chunks next to it', () => {
    const inserted = new Uint8Array(data.length + 1000);
    inserted.set(data.subarray(0, 8 * MiB), 0);
    inserted.set(randomBytes(1000, 5), 8 * MiB);
    inserted.set(data.subarray(8 * MiB), 8 * MiB + 1000);
    const cost = newBytes(data, inserted);
    expect(cost).toBeGreaterThan(0);
    // Fixed-size blocks would change the whole second half (8 MiB); content-defined cuts resync.
    expect(cost).toBeLessThanOrEqual(2 * CHUNK_MAX);
  });
});

describe('cuts guided by the previous chunks of a path', () => {
  const plain = (data: Uint8Array) =>
    chunkBoundaries(data).map(([at, length]) => ({
      at,
      length,
      hash: chunkHash(data.subarray(at, at + length)),
    }));
  const previousOf = (data: Uint8Array) => plain(data).map((c) => ({ size: c.length, hash: c.hash }));

  /** Chunks that cover `data` in order, each hashed right and within the sizes but the last. */
  const wellFormed = (
    data: Uint8Array,
    chunks: ReadonlyArray<{ at: number; length: number; hash: string }>,
  ) => {
    let at = 0;
    for (const [i, c] of chunks.entries()) {
      expect(c.at).toBe(at);
      if (i < chunks.length - 1) expect(c.length).toBeGreaterThanOrEqual(CHUNK_MIN);
      expect(c.length).toBeLessThanOrEqual(CHUNK_MAX);
      expect(c.hash).toBe(chunkHash(data.subarray(c.at, c.at + c.length)));
      at += c.length;
    }
    expect(at).toBe(data.length);
  };

  it('finds the cuts and hashes of a fresh search where nothing was edited in place', () => {
    const base = randomBytes(6 * MiB, 41);
    const inserted = new Uint8Array(base.length + 1000);
    inserted.set(base.subarray(0, 3 * MiB));
    inserted.set(base.subarray(3 * MiB), 3 * MiB + 1000);
    const appended = new Uint8Array(base.length + 70 * KiB);
    appended.set(base);
    appended.set(randomBytes(70 * KiB, 43), base.length);
    const cut = base.slice(0, 5 * MiB + 123);
    for (const [name, data] of Object.entries({
      same: base,
      inserted,
      appended,
      cut,
      small: base.slice(0, 300 * KiB),
      unrelated: randomBytes(5 * MiB, 47),
    }))
      expect(guidedChunks(data, previousOf(base), chunkHash), name).toEqual(plain(data));
    expect(guidedChunks(base, [], chunkHash)).toEqual(plain(base));
  });

  it('gets back in step with the previous cuts right after an in-place edit', () => {
    const base = randomBytes(6 * MiB, 41);
    const previous = plain(base);
    const edited = base.slice();
    const from = 2 * MiB;
    const to = from + 200 * KiB;
    edited.set(randomBytes(200 * KiB, 42), from);
    const guided = guidedChunks(edited, previousOf(base), chunkHash);
    wellFormed(edited, guided);
    const kept = new Set(guided.map((c) => `${c.at}:${c.hash}`));
    for (const c of previous) {
      // Every previous chunk before the edit, and after it once past one chunk's room, is kept.
      if (c.at + c.length <= from || c.at >= to + CHUNK_MIN)
        expect(kept.has(`${c.at}:${c.hash}`), `${c.at}`).toBe(true);
    }
  });

  it('costs at most ~416 KiB of new chunks per 200 KiB in-place edit, on average', () => {
    // The measure: 200 KiB edits at random places, one after the other, each push
    // guided by the previous one's chunks.
    const data = randomBytes(24 * MiB, 48);
    let previous = plain(data).map((c) => ({ size: c.length, hash: c.hash }));
    let added = 0;
    const edits = 40;
    for (let e = 0; e < edits; e++) {
      const at = Math.floor(((e * 2_654_435_761) >>> 0) % (data.length - 200 * KiB));
      data.set(randomBytes(200 * KiB, 100 + e), at);
      const known = new Set(previous.map((c) => c.hash));
      const guided = guidedChunks(data, previous, chunkHash);
      added += guided.filter((c) => !known.has(c.hash)).reduce((n, c) => n + c.length, 0);
      previous = guided.map((c) => ({ size: c.length, hash: c.hash }));
    }
    wellFormed(data, guidedChunks(data, previous, chunkHash));
    expect(added / edits).toBeLessThanOrEqual(416 * KiB);
  });

  it('skips the cut search over unchanged chunks of an in-place edit', () => {
    const base = randomBytes(8 * MiB, 44);
    const edited = base.slice();
    edited.set(randomBytes(100 * KiB, 45), 4 * MiB);
    const previous = previousOf(base);
    // Each cut search reads `min` of its options once: the searches, counted.
    let searches = 0;
    const counted = {
      get min() {
        searches++;
        return CHUNK_MIN;
      },
    };
    wellFormed(edited, guidedChunks(edited, previous, chunkHash, counted));
    // The chunk or two the edit touched (one read of `min` per search, one for the guide).
    expect(searches).toBeGreaterThan(0);
    expect(searches).toBeLessThanOrEqual(5);
    searches = 0;
    chunkBoundaries(edited, counted);
    expect(searches).toBe(plain(edited).length); // a fresh search cuts every chunk
  });

  it('follows boundaries of another chunker without a wrong hash', () => {
    const data = randomBytes(3 * MiB, 46);
    const odd = [0, 700_000, 1_500_000, data.length].flatMap((at, i, all) =>
      i === all.length - 1 ? [] : [{ at, length: (all[i + 1] as number) - at }],
    );
    const previous = odd.map((c) => ({
      size: c.length,
      hash: chunkHash(data.subarray(c.at, c.at + c.length)),
    }));
    const guided = guidedChunks(data, previous, chunkHash);
    expect(guided.map((c) => [c.at, c.length])).toEqual(odd.map((c) => [c.at, c.length]));
    for (const c of guided) expect(c.hash).toBe(chunkHash(data.subarray(c.at, c.at + c.length)));
  });
});

describe('chunk encoding and packs', () => {
  it('skips compression of incompressible chunks and compresses text', () => {
    const noise = randomBytes(128 * KiB, 3);
    expect(encodeChunk(noise).encoding).toBe('identity');
    const text = new TextEncoder().encode('export const answer = 42;\n'.repeat(5000));
    const encoded = encodeChunk(text);
    expect(encoded.encoding).toBe('gzip');
    expect(encoded.bytes.length).toBeLessThan(text.length / 10);
    expect(
      decodeChunk(encoded.bytes, { hash: chunkHash(text), size: text.length, encoding: 'gzip' }),
    ).toEqual(text);
  });

  it('encodes in the thread pool exactly as it does inline', async () => {
    const noise = randomBytes(128 * KiB, 4);
    const text = new TextEncoder().encode('const plan = { step: 1 };\n'.repeat(4000));
    for (const data of [noise, text, new Uint8Array(0)]) {
      const [inline, pooled] = [encodeChunk(data), await encodeChunkAsync(data)];
      expect(pooled.encoding).toBe(inline.encoding);
      expect(Buffer.from(pooled.bytes).equals(Buffer.from(inline.bytes))).toBe(true);
    }
    expect((await encodeChunkAsync(text)).encoding).toBe('gzip');
  });

  it('refuses a chunk whose bytes do not match its hash', () => {
    const a = randomBytes(1000, 1);
    expect(() =>
      decodeChunk(randomBytes(1000, 2), { hash: chunkHash(a), size: 1000, encoding: 'identity' }),
    ).toThrow(/does not match/);
  });

  it('packs chunks into packs of about the target, once per hash, readable at their offsets', () => {
    const writer = new PackWriter(1 * MiB);
    const chunks = Array.from({ length: 20 }, (_, i) => randomBytes(128 * KiB, i + 1));
    const hashes = chunks.map((c) => writer.add(c));
    writer.add(chunks[0] as Uint8Array); // a duplicate is stored once
    writer.flush();
    const total = writer.sealed.reduce((s, p) => s + p.bytes.length, 0);
    expect(total).toBe(20 * 128 * KiB);
    expect(writer.sealed.length).toBe(Math.ceil(20 / 8));
    hashes.forEach((h, i) => {
      const ref = writer.refOf(h);
      const pack = writer.sealed.find((p) => p.id === ref.pack);
      expect(pack).toBeDefined();
      const stored = (pack as { bytes: Uint8Array }).bytes.subarray(ref.offset, ref.offset + ref.length);
      expect(chunkHash(decodeChunk(stored, ref))).toBe(chunkHash(chunks[i] as Uint8Array));
    });
  });

  it('copies what it packs: the caller may reuse its buffer once add returns', () => {
    const writer = new PackWriter(1 * MiB);
    const buffer = randomBytes(64 * KiB, 9);
    const first = chunkHash(buffer);
    writer.add(buffer, { hash: first, stored: { bytes: buffer, encoding: 'identity' } });
    buffer.fill(0); // the next file read into the same buffer
    writer.add(buffer);
    writer.flush();
    const [pack] = writer.sealed;
    const ref = writer.refOf(first);
    const stored = (pack as { bytes: Uint8Array }).bytes.subarray(ref.offset, ref.offset + ref.length);
    expect(chunkHash(decodeChunk(stored, ref))).toBe(first);
    expect(writer.refOf(chunkHash(buffer)).offset).toBe(64 * KiB);
  });
});

describe('manifest validation', () => {
  const file = (path: string) => ({
    path,
    type: 'file',
    mode: 0o644,
    size: 0,
    mtimeMs: 1,
    sha256: chunkHash(new Uint8Array(0)),
    chunks: [],
  });
  const refusal = (manifest: unknown, packs?: Map<string, number>) => {
    try {
      validateWorkspaceManifest(manifest, packs);
    } catch (e) {
      expect(e).toBeInstanceOf(ValidationError);
      return (e as ValidationError).field;
    }
    return 'accepted';
  };

  it('accepts odd but safe paths', () => {
    expect(refusal({ format: 1, entries: [file('a b/ü/ñ.txt'), file('.hidden'), file('a/...')] })).toBe(
      'accepted',
    );
  });

  it.each([
    ['../x', 'entries[0].path'],
    ['a/../../x', 'entries[0].path'],
    ['/etc/passwd', 'entries[0].path'],
    ['C:/x', 'entries[0].path'],
    ['a\0b', 'entries[0].path'],
    ['a//b', 'entries[0].path'],
    ['a\\..\\b', 'entries[0].path'],
    ['', 'entries[0].path'],
  ])('refuses the path %j naming %s', (path, field) => {
    expect(refusal({ format: 1, entries: [file(path)] })).toBe(field);
  });

  it('refuses duplicates, paths below a symlink, and a chunk outside its pack', () => {
    expect(refusal({ format: 1, entries: [file('a'), file('a')] })).toBe('entries[1].path');
    const link = { path: 'l', type: 'symlink', mode: 0o777, size: 0, mtimeMs: 1, target: '/etc' };
    expect(refusal({ format: 1, entries: [link, file('l/passwd')] })).toBe('entries');
    const pack = 'a'.repeat(64);
    const chunk = {
      hash: chunkHash(new Uint8Array(10)),
      size: 10,
      pack,
      offset: 95,
      length: 10,
      encoding: 'identity',
    };
    const big = { ...file('f'), size: 10, chunks: [chunk] };
    expect(refusal({ format: 1, entries: [big] }, new Map([[pack, 100]]))).toBe(
      'entries[0].chunks[0].offset',
    );
    expect(refusal({ format: 1, entries: [big] }, new Map([[pack, 105]]))).toBe('accepted');
    expect(refusal({ format: 1, entries: [{ ...big, size: 11 }] })).toBe('entries[0].size');
  });

  it('a restore path never resolves outside the target', () => {
    expect(restorePath('/tmp/t', 'a/b')).toBe('/tmp/t/a/b');
    expect(() => restorePath('/tmp/t', '../t2/x')).toThrow(ValidationError);
    expect(() => restorePath('/tmp/t', '/abs')).toThrow(ValidationError);
  });
});

describe('manifest diff', () => {
  it('names added, removed and changed paths and the new chunk bytes, from the manifests alone', () => {
    const chunk = (seed: number, size: number) => ({
      hash: chunkHash(randomBytes(size, seed)),
      size,
      pack: 'b'.repeat(64),
      offset: 0,
      length: size,
      encoding: 'identity' as const,
    });
    const entry = (path: string, chunks: ReturnType<typeof chunk>[], mode = 0o644) => ({
      path,
      type: 'file' as const,
      mode,
      size: chunks.reduce((s, c) => s + c.size, 0),
      mtimeMs: 1,
      sha256: chunkHash(new TextEncoder().encode(chunks.map((c) => c.hash).join())),
      chunks,
    });
    const a = chunk(1, 100);
    const b = chunk(2, 200);
    const c = chunk(3, 300);
    const prev = {
      format: 1 as const,
      entries: [entry('keep', [a]), entry('edit', [a, b]), entry('gone', [b]), entry('chmod', [a])],
    };
    const next = {
      format: 1 as const,
      entries: [entry('keep', [a]), entry('edit', [a, c]), entry('new', [c, b]), entry('chmod', [a], 0o755)],
    };
    expect(diffWorkspaceManifests(prev, next)).toEqual({
      added: ['new'],
      removed: ['gone'],
      changed: ['chmod', 'edit'],
      newChunkBytes: 300,
    });
    expect(diffWorkspaceManifests(next, next)).toEqual({
      added: [],
      removed: [],
      changed: [],
      newChunkBytes: 0,
    });
  });
});

describe('tree round trip', () => {
  it('restores odd paths, empty files and directories, symlinks and modes byte for byte', async () => {
    const root = await mkdtemp(join(tmpdir(), 'wsnap-'));
    try {
      const src = join(root, 'src');
      await mkdir(join(src, 'a b', 'ü', 'd1', 'd2', 'd3'), { recursive: true });
      await mkdir(join(src, 'empty dir'));
      await writeFile(join(src, 'a b', 'ü', 'd1', 'd2', 'd3', 'deep ñ.txt'), 'deep\n');
      await writeFile(join(src, 'empty'), '');
      await writeFile(join(src, 'big.bin'), randomBytes(3 * MiB, 11));
      await writeFile(join(src, 'run.sh'), '#!/bin/sh\n');
      await chmod(join(src, 'run.sh'), 0o755);
      await symlink('a b/ü', join(src, 'link'));
      const writer = new PackWriter(1 * MiB);
      const manifest = await scanTree(src, writer);
      const packs = new Map(writer.sealed.map((p) => [p.id, p.bytes]));
      let reads = 0;
      const out = join(root, 'out');
      await restoreTree(manifest, out, async (pack, offset, length) => {
        reads++;
        return (packs.get(pack) as Uint8Array).subarray(offset, offset + length);
      });
      expect(reads).toBeGreaterThan(3);
      const list = async (d: string, rel = ''): Promise<string[]> =>
        (
          await Promise.all(
            (
              await readdir(d, { withFileTypes: true })
            ).map(async (e) => {
              const p = rel ? `${rel}/${e.name}` : e.name;
              return e.isDirectory() ? [p, ...(await list(join(d, e.name), p))] : [p];
            }),
          )
        )
          .flat()
          .sort();
      expect(await list(out)).toEqual(await list(src));
      expect(await readFile(join(out, 'big.bin'))).toEqual(await readFile(join(src, 'big.bin')));
      expect(await readFile(join(out, 'a b', 'ü', 'd1', 'd2', 'd3', 'deep ñ.txt'), 'utf8')).toBe('deep\n');
      expect((await stat(join(out, 'empty'))).size).toBe(0);
      expect((await stat(join(out, 'run.sh'))).mode & 0o777).toBe(0o755);
      expect((await lstat(join(out, 'link'))).isSymbolicLink()).toBe(true);
      expect(await readlink(join(out, 'link'))).toBe('a b/ü');
      // A restore into a non-empty target is refused, so nothing there can redirect a write.
      await expect(restoreTree(manifest, out, async () => new Uint8Array(0))).rejects.toThrow(/not empty/);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
