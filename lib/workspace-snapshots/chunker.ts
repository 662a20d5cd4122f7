/**
 * Content-defined chunking for workspace snapshots (docs/DESIGN.md, "Workspace snapshots"):
 * FastCDC with a gear rolling hash and normalized chunking. Files of at most `CHUNK_MAX` bytes are
 * one chunk; larger files are cut where the hash of the last 32 bytes matches a mask, so an insert
 * moves only the cuts next to it and every later chunk keeps its bytes (and its hash).
 */

/** Smallest chunk of a chunked file: 32 KiB. */
export const CHUNK_MIN = 32 * 1024;
/** Average chunk size aimed at: 128 KiB. */
export const CHUNK_AVG = 128 * 1024;
/** Largest chunk, and the size up to which a file is one chunk: 512 KiB. */
export const CHUNK_MAX = 512 * 1024;

/** Cut-point options; the defaults are the snapshot parameters. */
export interface ChunkerOptions {
  /** Default `CHUNK_MIN`. */
  readonly min?: number;
  /** Default `CHUNK_AVG` (a power of two). */
  readonly avg?: number;
  /** Default `CHUNK_MAX`. */
  readonly max?: number;
}

// A fixed gear table from splitmix32 with a fixed seed: the cut points must be the same on every
// client and in every release, or deduplication across clients is lost.
const GEAR = (() => {
  const table = new Uint32Array(256);
  let state = 0x9e3779b9;
  for (let i = 0; i < 256; i++) {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    table[i] = (z ^ (z >>> 16)) >>> 0;
  }
  return table;
})();

/** A mask of the `bits` highest bits: with a left-shifting gear hash they depend on the most bytes. */
function topBits(bits: number): number {
  return bits >= 32 ? 0xffffffff : ~(0xffffffff >>> bits) >>> 0;
}

/**
 * The length of the first chunk of `data` (all of it when it is at most `max` bytes). Normalized
 * chunking: a harder mask (two more bits) before the average, an easier one after it, which
 * narrows the spread of sizes around the average.
 */
export function nextCut(data: Uint8Array, options: ChunkerOptions = {}): number {
  const min = options.min ?? CHUNK_MIN;
  const avg = options.avg ?? CHUNK_AVG;
  const max = options.max ?? CHUNK_MAX;
  const n = data.length;
  if (n <= min) return n;
  const bits = Math.round(Math.log2(avg));
  const maskS = topBits(bits + 2);
  const maskL = topBits(bits - 2);
  const end = Math.min(n, max);
  const normal = Math.min(avg, end);
  let hash = 0;
  let i = min;
  for (; i < normal; i++) {
    hash = ((hash << 1) + (GEAR[data[i] as number] as number)) >>> 0;
    if ((hash & maskS) === 0) return i + 1;
  }
  for (; i < end; i++) {
    hash = ((hash << 1) + (GEAR[data[i] as number] as number)) >>> 0;
    if ((hash & maskL) === 0) return i + 1;
  }
  return end;
}

/**
 * The chunk boundaries of a whole file as `[offset, length]` pairs: one chunk when the file is at
 * most `max` bytes (small files whole), content-defined cuts otherwise. An empty file has none.
 */
export function chunkBoundaries(data: Uint8Array, options: ChunkerOptions = {}): Array<[number, number]> {
  const max = options.max ?? CHUNK_MAX;
  if (data.length === 0) return [];
  if (data.length <= max) return [[0, data.length]];
  const out: Array<[number, number]> = [];
  let offset = 0;
  while (offset < data.length) {
    const length = nextCut(data.subarray(offset), options);
    out.push([offset, length]);
    offset += length;
  }
  return out;
}

/** A chunk of a file as the previous snapshot of it had it: its plain size and hash. */
export interface KnownChunk {
  readonly size: number;
  readonly hash: string;
}

/**
 * The chunks of a file with every chunk's hash, guided by the chunks the same path had before
 * (`previous`, in order), so that an in-place edit costs the chunks it touched and little more:
 *
 * - where a previous chunk starts at the same offset and its range of `data` hashes the same, it
 *   is taken as it was, without a cut search (the last previous chunk only when it also ends
 *   where `data` ends);
 * - elsewhere the cut is searched as `chunkBoundaries` searches it, but the chunk ends instead on
 *   the first previous boundary at least `min` into it, and at most `min` past the searched cut
 *   (the next chunk could not end there), whose previous chunk is intact: the cuts are back in
 *   step with the parent's as soon as the changed bytes are behind. (Ending every such chunk on
 *   the first intact boundary within `max` instead makes chunks of up to `max` around edits,
 *   which the next edits then pay for: ~390 KiB per edit.)
 *
 * Without the second rule, an edit's new chunks run on until a cut search happens to land on a
 * previous boundary (the normalized masks depend on the distance from the chunk's start): ~520
 * KiB of new chunks per 200 KiB in-place edit here, against ~360 KiB with it. The cuts are then
 * no longer those of a fresh search of the same bytes (a file pushed without its parent, or
 * renamed, is cut afresh and finds the parent's chunks again a chunk or two after each place
 * that had been edited). With no `previous` (or a file of one chunk) they are exactly
 * `chunkBoundaries`. `previous` from another chunker only makes the cuts follow it, never a
 * wrong hash.
 */
export function guidedChunks(
  data: Uint8Array,
  previous: readonly KnownChunk[],
  hash: (bytes: Uint8Array) => string,
  options: ChunkerOptions = {},
): Array<{ readonly at: number; readonly length: number; readonly hash: string }> {
  const min = options.min ?? CHUNK_MIN;
  const max = options.max ?? CHUNK_MAX;
  const hashed = ([at, length]: [number, number]) => ({
    at,
    length,
    hash: hash(data.subarray(at, at + length)),
  });
  if (data.length <= max || previous.length < 2) return chunkBoundaries(data, options).map(hashed);
  // The previous chunks by their start (the last one only where it ends with `data`), in order.
  const starts = new Map<number, KnownChunk>();
  let offset = 0;
  for (const [index, chunk] of previous.entries()) {
    const end = offset + chunk.size;
    if (index === previous.length - 1 ? end === data.length : end <= data.length) starts.set(offset, chunk);
    offset = end;
  }
  const boundaries = [...starts.keys()];
  // Whether the previous chunk at `at` is intact: its hash if so (each range hashed once).
  const checked = new Map<number, string | undefined>();
  const intact = (at: number): string | undefined => {
    if (checked.has(at)) return checked.get(at);
    const before = starts.get(at);
    const same = before && hash(data.subarray(at, at + before.size));
    const found = same === before?.hash ? same : undefined;
    checked.set(at, found);
    return found;
  };
  const out: Array<{ at: number; length: number; hash: string }> = [];
  let at = 0;
  let next = 0; // the first previous boundary not behind `at + min`
  while (at < data.length) {
    const same = intact(at);
    if (same !== undefined) {
      const length = (starts.get(at) as KnownChunk).size;
      out.push({ at, length, hash: same });
      at += length;
      continue;
    }
    let length = nextCut(data.subarray(at), options);
    // A previous boundary up to `min` past the searched cut is taken too: the next chunk could
    // not end on it.
    const reach = Math.min(at + length + min, at + max);
    while (next < boundaries.length && (boundaries[next] as number) < at + min) next++;
    for (let i = next; i < boundaries.length && (boundaries[i] as number) <= reach; i++) {
      if (intact(boundaries[i] as number) !== undefined) {
        length = (boundaries[i] as number) - at;
        break;
      }
    }
    out.push(hashed([at, length]));
    at += length;
  }
  return out;
}
