/**
 * The head and segment codec of the CAS list format (docs/DESIGN.md, "CAS format"), with no driver:
 * the head's JSON (`<key>.list.hash`), a segment's bytes (a header line with an item → byte-offset
 * index, then one line per item), building, merging and packing segments, and the levels a
 * segment's item bytes put it in.
 */

import { CorruptValueError } from '../../contract/errors.js';
import { EMPTY_HASH, isHash } from '../../contract/hash.js';
import type { ListWriteResult } from '../../contract/types.js';
import { answersOf, itemBytes, KEPT_WRITES, recordedAnswer, type WriteRecord } from './format.js';
import { itemLine, parseItemLines, storedChain } from './items.js';

/** The most bytes one write record takes in a head (`[id, count, hash, action]`, an id of 64 at most). */
export const WRITE_RECORD_BYTES = 176;

/** Merge levels above the sealed chunk: ×4 each, so 4 MiB segments from 64 KiB seals. */
export const LEVELS = 3;
export const LEVEL_FACTOR = 4;
/**
 * Index entries of a segment are at most this many seals apart (384 KiB by default): a page read
 * from a segment reads at most this much before and after it, and with the head stays under the
 * page + 1 MiB.
 */
export const INDEX_SEALS = 6;

/** A sealed segment, as the head lists it. */
export interface SegmentRef {
  readonly name: string;
  readonly first: number;
  readonly count: number;
  /** The chain hash after its last item. */
  readonly hash: string;
  /** The object's size, and where its items start (after the header line). */
  readonly bytes: number;
  readonly data: number;
  /**
   * Packed (by a large append, a rewrite or a truncate): top level whatever its size, so it is
   * never merged again (docs/DESIGN.md, "CAS format": levels).
   */
  readonly packed?: true;
}

/** The head of a list (the JSON body of `<key>.list.hash`). */
export interface Head {
  readonly v: 2;
  readonly format: 'cas';
  readonly inc: string;
  readonly gen: number;
  /** A deleted list reads as absent; its head keeps the generation and the token. */
  readonly deleted: boolean;
  readonly count: number;
  readonly hash: string;
  readonly token: number | null;
  /** The number and the chain hash before `items[0]`. */
  readonly base: number;
  readonly baseHash: string;
  readonly items: unknown[];
  readonly writes: WriteRecord[];
  readonly segments: SegmentRef[];
  /**
   * Segments no longer listed, with when; deleted once older than `retireAfterMs`, or sooner when
   * more than `RETIRED_KEPT` wait (a reader that finds one gone reads the head again).
   */
  readonly retired: Array<[string, number]>;
}

/** The first line of a segment: what it holds, and an item → byte-offset index. */
export interface SegmentHeader {
  readonly v: 2;
  readonly first: number;
  readonly count: number;
  readonly baseHash: string;
  readonly hash: string;
  /** `[item number, offset into the items, chain hash before it]`, at most `indexBytes` apart. */
  readonly index: Array<[number, number, string]>;
}

/** A segment in memory: its header and its item lines (one JSON text and `\n` per item). */
export interface Segment {
  readonly header: SegmentHeader;
  readonly data: Buffer;
}

/** The sizes segments are built with: a seal's item bytes, and the most bytes between index entries. */
export interface SegmentSizes {
  readonly sealBytes: number;
  readonly indexBytes: number;
}

/** A built segment: its header, its bytes, and where its items start in them. */
export interface BuiltSegment {
  readonly header: SegmentHeader;
  readonly body: Buffer;
  readonly data: number;
}

/** The head's write records with `record` added (the last `KEPT_WRITES`). */
export function remember(writes: readonly WriteRecord[], record: WriteRecord): WriteRecord[] {
  return [...writes, record].slice(-KEPT_WRITES);
}

/** The original answer of a write the head records. */
export function recorded(
  head: Head | undefined,
  writeId: string,
  named = false,
): ListWriteResult | undefined {
  return recordedAnswer(answersOf(head?.writes ?? []), writeId, named);
}

/** The head of an empty list: a first one, or after a deletion (keeping its generation and token). */
export function freshHead(inc: string, deleted: Head | undefined): Head {
  return {
    v: 2,
    format: 'cas',
    inc,
    gen: deleted?.gen ?? 0,
    deleted: false,
    count: 0,
    hash: EMPTY_HASH,
    token: deleted?.token ?? null,
    base: 0,
    baseHash: EMPTY_HASH,
    items: [],
    writes: deleted?.writes ?? [],
    segments: [],
    retired: deleted?.retired ?? [],
  };
}

/** Concatenates contiguous segments: their lines as they are, their indexes shifted and thinned. */
export function mergeSegments(parts: readonly Segment[], indexBytes: number): BuiltSegment {
  const first = parts[0] as Segment;
  const entries: Array<[number, number, string]> = [];
  let offset = 0;
  let count = 0;
  let hash = first.header.baseHash;
  for (const part of parts) {
    if (part.header.baseHash !== hash || part.header.first !== first.header.first + count)
      throw new CorruptValueError('segment');
    for (const [item, at, h] of part.header.index) entries.push([item, at + offset, h]);
    offset += part.data.length;
    count += part.header.count;
    hash = part.header.hash;
  }
  // Keep an entry only where dropping it would leave a gap over `indexBytes`.
  const index: Array<[number, number, string]> = [entries[0] as [number, number, string]];
  for (let i = 1; i < entries.length; i++) {
    const next = entries[i + 1]?.[1] ?? offset;
    if (next - (index.at(-1) as [number, number, string])[1] > indexBytes)
      index.push(entries[i] as [number, number, string]);
  }
  const header: SegmentHeader = {
    v: 2,
    first: first.header.first,
    count,
    baseHash: first.header.baseHash,
    hash,
    index,
  };
  const top = Buffer.from(`${JSON.stringify(header)}\n`, 'utf8');
  return { header, body: Buffer.concat([top, ...parts.map((part) => part.data)]), data: top.length };
}

/** A segment's bytes as its header and its item lines; undefined when its header does not parse. */
export function splitSegment(body: Buffer): Segment | undefined {
  const end = body.indexOf(10);
  if (end < 0) return undefined;
  const header = parseHeader(body.subarray(0, end));
  return header ? { header, data: body.subarray(end + 1) } : undefined;
}

/** A segment's header line, or undefined when it is not a well-formed one. */
export function parseHeader(bytes: Uint8Array): SegmentHeader | undefined {
  try {
    const h = JSON.parse(Buffer.from(bytes).toString('utf8')) as SegmentHeader;
    const ok =
      h?.v === 2 &&
      Number.isSafeInteger(h.first) &&
      Number.isSafeInteger(h.count) &&
      isHash(h.baseHash) &&
      isHash(h.hash) &&
      Array.isArray(h.index) &&
      h.index.length > 0;
    return ok ? h : undefined;
  } catch {
    return undefined;
  }
}

/** The stored items of a segment's item lines (`CorruptValueError` for the list `k` when they are not). */
export function parseItems(data: Uint8Array, k: string): unknown[] {
  return parseItemLines(data, (_reason, options) => new CorruptValueError(k, options));
}

/** A new segment of `items`, numbered from `first`, whose chain starts at `baseHash`. */
export function buildSegment(
  first: number,
  baseHash: string,
  items: readonly unknown[],
  indexBytes: number,
): Segment {
  const index: Array<[number, number, string]> = [[first, 0, baseHash]];
  const lines: string[] = [];
  let hash = baseHash;
  let offset = 0;
  let last = 0;
  items.forEach((item, i) => {
    const line = itemLine(item);
    const size = Buffer.byteLength(line);
    if (offset > last && offset - last + size > indexBytes) {
      index.push([first + i, offset, hash]);
      last = offset;
    }
    lines.push(line);
    offset += size;
    hash = storedChain(hash, [item]);
  });
  return {
    header: { v: 2, first, count: items.length, baseHash, hash, index },
    data: Buffer.from(lines.join(''), 'utf8'),
  };
}

/**
 * `items`, numbered from `first` (`prefixes[i]`: the chain hash before item `first + i`), as
 * top-level segments (64 seals or a little more each, the last one shorter).
 */
export function packSegments(
  first: number,
  prefixes: readonly string[],
  items: readonly unknown[],
  sizes: SegmentSizes,
): BuiltSegment[] {
  const top = topLevelBytes(sizes.sealBytes);
  const bytes = items.map(itemBytes);
  const outs: BuiltSegment[] = [];
  for (let start = 0; start < items.length; ) {
    let end = start;
    // At least `top` bytes, so each but the last is in the top level and is never merged again.
    for (let total = 0; end < items.length && total < top; end++) total += bytes[end] as number;
    const segment = buildSegment(
      first + start,
      prefixes[start] as string,
      items.slice(start, end),
      sizes.indexBytes,
    );
    outs.push(mergeSegments([segment], sizes.indexBytes));
    start = end;
  }
  return outs;
}

/** The item bytes from which a segment is in the top level (64 seals): it is never merged again. */
export function topLevelBytes(sealBytes: number): number {
  return sealBytes * LEVEL_FACTOR ** LEVELS;
}

/** The level of a segment of `bytes` item bytes: 0 below 4 seals, … , `LEVELS` from 64 seals. */
export function levelOf(bytes: number, sealBytes: number): number {
  let level = 0;
  let cap = sealBytes * LEVEL_FACTOR;
  while (level < LEVELS && bytes >= cap) {
    level++;
    cap *= LEVEL_FACTOR;
  }
  return level;
}

/**
 * Where items of these `sizes` split when a head starts at its low mark (`low` bytes of the newest
 * items, at least one item in a segment when there are any): the items before it go into segments.
 */
export function lowMarkSplit(sizes: readonly number[], low: number): number {
  let split = sizes.length;
  for (let bytes = 0; split > 0 && bytes + (sizes[split - 1] as number) <= low; split--)
    bytes += sizes[split - 1] as number;
  if (split === sizes.length && split > 0) split--;
  return split;
}

/** The head with `segments` listed, the segments `retired` added to its retired ones at `now`. */
export function withSegments(
  head: Head,
  segments: SegmentRef[],
  retired: readonly SegmentRef[],
  now: number,
): Head {
  return {
    ...head,
    segments,
    retired: [...head.retired, ...retired.map((ref): [string, number] => [ref.name, now])],
  };
}

/** The head without the retired objects `names` (deleted with its write). */
export function withoutRetired(head: Head, names: readonly string[]): Head {
  const gone = new Set(names);
  return { ...head, retired: head.retired.filter(([name]) => !gone.has(name)) };
}

/** The head in a body, or undefined when it is not a well-formed CAS head. */
export function parseHead(body: Uint8Array): Head | undefined {
  let h: Head;
  try {
    h = JSON.parse(Buffer.from(body).toString('utf8')) as Head;
  } catch {
    return undefined;
  }
  if (h?.v !== 2 || h.format !== 'cas' || typeof h.inc !== 'string') return undefined;
  const ints = [h.gen, h.count, h.base].every((n) => Number.isSafeInteger(n) && n >= 0);
  if (!ints || !isHash(h.hash) || !isHash(h.baseHash) || typeof h.deleted !== 'boolean') return undefined;
  if (h.token !== null && !Number.isSafeInteger(h.token)) return undefined;
  if (!Array.isArray(h.items) || h.base + h.items.length !== h.count) return undefined;
  if (!Array.isArray(h.writes) || !Array.isArray(h.segments) || !Array.isArray(h.retired)) return undefined;
  let next = 0;
  for (const ref of h.segments) {
    if (ref?.first !== next || typeof ref.name !== 'string' || !isHash(ref.hash)) return undefined;
    next += ref.count;
  }
  return next === h.base ? h : undefined;
}
