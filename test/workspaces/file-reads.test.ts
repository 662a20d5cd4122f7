/**
 * The push's file reads (lib/client/node/file-reads.ts): whole files, large ones into shared
 * buffers reused once released, and their SHA-256 in a worker thread that answers what hashing
 * on the main thread answers.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileBuffers, fileHasher } from '../../lib/client/node/file-reads.js';
import { CHUNK_MAX } from '../../lib/workspace-snapshots/chunker.js';
import { chunkHash } from '../../lib/workspace-snapshots/packs.js';

const MIB = 1024 * 1024;
let dir: string;
const file = async (name: string, bytes: Uint8Array) => {
  const full = path.join(dir, name);
  await writeFile(full, bytes);
  return full;
};

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'file-reads-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('FileBuffers', () => {
  it('reads small files into their own memory and chunked ones into shared buffers', async () => {
    const buffers = new FileBuffers();
    const small = randomBytes(CHUNK_MAX);
    const large = randomBytes(CHUNK_MAX + 1);
    const readSmall = await buffers.read(await file('small', small));
    const readLarge = await buffers.read(await file('large', large));
    expect(readSmall.equals(small)).toBe(true);
    expect(readSmall.buffer instanceof SharedArrayBuffer).toBe(false);
    expect(readLarge.equals(large)).toBe(true);
    expect(readLarge.buffer instanceof SharedArrayBuffer).toBe(true);
    expect((await buffers.read(await file('empty', new Uint8Array(0)))).length).toBe(0);
  });

  it('hands a released buffer to the next file that fits, and never one still in use', async () => {
    const buffers = new FileBuffers();
    const a = await buffers.read(await file('a', randomBytes(3 * MIB)));
    const b = await buffers.read(await file('b', randomBytes(2 * MIB)));
    expect(b.buffer).not.toBe(a.buffer);
    const bBytes = Buffer.from(b);
    buffers.release(a);
    const cBytes = randomBytes(2 * MIB + 5);
    const c = await buffers.read(await file('c', cBytes));
    expect(c.buffer).toBe(a.buffer);
    expect(c.equals(cBytes)).toBe(true);
    expect(b.equals(bBytes)).toBe(true);
    // A file larger than every free buffer gets a new one.
    buffers.release(c);
    const d = await buffers.read(await file('d', randomBytes(9 * MIB)));
    expect(d.buffer).not.toBe(a.buffer);
    expect(d.length).toBe(9 * MIB);
  });

  it('answers the bytes a file holds when read, when it shrank since it was listed', async () => {
    const buffers = new FileBuffers();
    const full = await file('shrinking', randomBytes(2 * MIB));
    await truncate(full, MIB + 3);
    expect((await buffers.read(full)).length).toBe(MIB + 3);
  });
});

describe('fileHasher', () => {
  it('hashes shared buffers in the worker as chunkHash does, many at once, and others inline', async () => {
    const hasher = fileHasher();
    try {
      const shared = new SharedArrayBuffer(4 * MIB);
      const view = new Uint8Array(shared);
      view.set(randomBytes(4 * MIB));
      const ranges = Array.from({ length: 16 }, (_, i) => view.subarray(i * 1000, i * 1000 + MIB + i));
      const hashes = await Promise.all(ranges.map((r) => hasher.hash(r)));
      expect(hashes).toEqual(ranges.map((r) => chunkHash(r)));
      const plain = randomBytes(MIB);
      expect(await hasher.hash(plain)).toBe(chunkHash(plain));
      // Closed, it starts a worker again when asked.
      await hasher.close();
      expect(await hasher.hash(view)).toBe(chunkHash(view));
    } finally {
      await hasher.close();
    }
  });

  it('keeps the process alive while a hash is awaited, and lets it end once idle', () => {
    // A child that awaits hashes and nothing else: it prints the last, then exits by itself.
    const script = `
      import { fileHasher } from ${JSON.stringify(path.resolve('lib/client/node/file-reads.ts'))};
      const hasher = fileHasher();
      const shared = new Uint8Array(new SharedArrayBuffer(8 * 1024 * 1024)).fill(7);
      await hasher.hash(shared); // the worker started, then idle
      console.log(await hasher.hash(shared));
    `;
    // As a module (`--input-type=module`): the worker's code runs there too.
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(out.trim()).toBe(chunkHash(new Uint8Array(8 * 1024 * 1024).fill(7)));
  });
});
