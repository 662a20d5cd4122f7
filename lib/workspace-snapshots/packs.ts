/**
 * Chunk encoding and packing for workspace snapshots: each chunk hashed (SHA-256 of its plain
 * bytes) and gzip-compressed on its own unless a sample shows gzip saves less than 10 %, then
 * appended to a pack of about `PACK_TARGET` bytes. A pack's name is the SHA-256 of its bytes.
 */
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzipSync, gzip, gzipSync } from 'node:zlib';
import { CHUNK_MAX } from './chunker.js';

/** A pack is closed once it reaches 16 MiB, so a 1 GiB snapshot is tens of PUTs. */
export const PACK_TARGET = 16 * 1024 * 1024;
/** Bytes of a chunk compressed to decide whether compressing it is worth it: 16 KiB. */
export const SAMPLE_BYTES = 16 * 1024;
/** Compress only when the sample shrinks to at most this share of its size (saves ≥ 10 %). */
export const WORTH_COMPRESSING = 0.9;

/** How a chunk's bytes are stored in its pack. */
export type ChunkEncoding = 'gzip' | 'identity';

/** A chunk of a file as a manifest records it. */
export interface ChunkRef {
  /** `sha256:<hex>` of the plain bytes. */
  readonly hash: string;
  /** Plain length in bytes. */
  readonly size: number;
  /** The pack holding it: hex SHA-256 of the pack's bytes. */
  readonly pack: string;
  /** Offset of its stored bytes in the pack. */
  readonly offset: number;
  /** Stored length in the pack. */
  readonly length: number;
  readonly encoding: ChunkEncoding;
}

/** `sha256:<hex>` of some bytes. */
export function chunkHash(data: Uint8Array): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** gzip's level for chunks: 4 keeps text within ~10 % of level 6's size at about twice its speed. */
export const GZIP_LEVEL = 4;

/** A chunk's stored bytes and how they are encoded. */
export interface EncodedChunk {
  readonly bytes: Uint8Array;
  readonly encoding: ChunkEncoding;
}

const gzipAsync = promisify(gzip);

/** Whether a chunk is worth compressing: its first 16 KiB, gzipped at level 1, save ≥ 10 %. */
function worthCompressing(data: Uint8Array): boolean {
  if (data.length === 0) return false;
  const sample = data.subarray(0, SAMPLE_BYTES);
  // gzip runs at tens of MB/s on incompressible data: a sample at level 1 decides cheaply.
  return gzipSync(sample, { level: 1 }).length <= sample.length * WORTH_COMPRESSING;
}

/** The stored form of a chunk compressed to `packed`: gzip when that saved ≥ 10 %. */
function storedForm(data: Uint8Array, packed: Uint8Array): EncodedChunk {
  if (packed.length > data.length * WORTH_COMPRESSING) return { bytes: data, encoding: 'identity' };
  return { bytes: packed, encoding: 'gzip' };
}

/** A chunk's stored form: gzip when the sample says it pays, the plain bytes otherwise. */
export function encodeChunk(data: Uint8Array): EncodedChunk {
  if (!worthCompressing(data)) return { bytes: data, encoding: 'identity' };
  return storedForm(data, gzipSync(data, { level: GZIP_LEVEL }));
}

/** `encodeChunk` with the compression in libuv's thread pool (a push compresses on every core). */
export async function encodeChunkAsync(data: Uint8Array): Promise<EncodedChunk> {
  if (!worthCompressing(data)) return { bytes: data, encoding: 'identity' };
  return storedForm(data, await gzipAsync(data, { level: GZIP_LEVEL }));
}

/** A chunk's plain bytes from its stored form, checked against its hash. */
export function decodeChunk(
  stored: Uint8Array,
  ref: Pick<ChunkRef, 'hash' | 'size' | 'encoding'>,
): Uint8Array {
  const plain = ref.encoding === 'gzip' ? new Uint8Array(gunzipSync(stored)) : stored;
  if (plain.length !== ref.size || chunkHash(plain) !== ref.hash) {
    throw new Error(`chunk ${ref.hash} does not match its bytes`);
  }
  return plain;
}

/** A closed pack: its name, its bytes and its MD5 (base64, for the signed `Content-MD5`). */
export interface SealedPack {
  readonly id: string;
  readonly bytes: Uint8Array;
  readonly md5: string;
}

interface PendingChunk {
  readonly hash: string;
  readonly size: number;
  readonly offset: number;
  readonly length: number;
  readonly encoding: ChunkEncoding;
}

/**
 * Packs chunks: `add` returns where the chunk will be once its pack is sealed; a pack is sealed
 * when it reaches `target` bytes or on `flush`. Chunks already added (same hash) are not stored
 * twice.
 */
export class PackWriter {
  /** The open pack's bytes (its first `size`): each chunk is copied in as it is added. */
  private bytes = new Uint8Array(0);
  private size = 0;
  private pending: PendingChunk[] = [];
  private readonly placed = new Map<string, ChunkRef>();
  private readonly waiting = new Map<string, PendingChunk>();
  readonly sealed: SealedPack[] = [];

  constructor(private readonly target = PACK_TARGET) {}

  /**
   * Adds a chunk (plain bytes), with its hash and stored form when the caller has them; returns
   * its hash. `refOf(hash)` answers once the pack is sealed. The stored bytes are copied: the
   * caller may reuse `data` once `add` returns.
   */
  add(data: Uint8Array, known: { readonly hash?: string; readonly stored?: EncodedChunk } = {}): string {
    const hash = known.hash ?? chunkHash(data);
    if (this.placed.has(hash) || this.waiting.has(hash)) return hash;
    const { bytes, encoding } = known.stored ?? encodeChunk(data);
    const chunk = { hash, size: data.length, offset: this.size, length: bytes.length, encoding };
    if (this.size + bytes.length > this.bytes.length) {
      // Room for a pack's target and one more chunk of the largest size: one buffer per pack.
      const room = this.size === 0 ? this.target + CHUNK_MAX : 2 * this.bytes.length;
      const grown = new Uint8Array(Math.max(room, this.size + bytes.length));
      grown.set(this.bytes.subarray(0, this.size));
      this.bytes = grown;
    }
    this.bytes.set(bytes, this.size);
    this.size += bytes.length;
    this.pending.push(chunk);
    this.waiting.set(hash, chunk);
    if (this.size >= this.target) this.flush();
    return hash;
  }

  /** Seals the open pack, if it holds anything. */
  flush(): void {
    if (this.pending.length === 0) return;
    const bytes = this.bytes.subarray(0, this.size);
    const id = createHash('sha256').update(bytes).digest('hex');
    const md5 = createHash('md5').update(bytes).digest('base64');
    for (const c of this.pending) {
      this.placed.set(c.hash, { ...c, pack: id });
      this.waiting.delete(c.hash);
    }
    this.sealed.push({ id, bytes, md5 });
    this.bytes = new Uint8Array(0);
    this.size = 0;
    this.pending = [];
  }

  /** Where a chunk is stored (after its pack is sealed). */
  refOf(hash: string): ChunkRef {
    const ref = this.placed.get(hash);
    if (!ref) throw new Error(`chunk ${hash} is not in a sealed pack`);
    return ref;
  }
}
