/**
 * The record codec of the append list format (docs/DESIGN.md, "Append format"): the bytes of its
 * logs and segments and what they say, with no driver.
 *
 * A log is a sequence of records; every record is its body (JSON lines) and a fixed 169-byte
 * trailer line (kind, count and chain hash after it, the highest fencing token, the write id, where
 * the record starts, where the log's index record ends, the log's own item bytes, a CRC-32 over
 * body and trailer), so the last 169 bytes of a log are its state and any byte range of a log
 * parses from its first whole trailer on. The first record of each log is its index record (the
 * generation's older logs and segments, with their item ranges, end hashes and marks, and the last
 * write ids); a sealed log ends with a record naming its successor.
 */

import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { isHash } from '../../contract/hash.js';
import { HASH_PREFIX } from '../../contract/limits.js';
import type { ListAction, ListWriteResult } from '../../contract/types.js';
import { KIB } from '../../util/units.js';
import { RECORD_ID } from '../write-path.js';
import { itemBytes, KEPT_WRITES, recordedAnswer, type WriteRecord } from './format.js';
import { itemLines, parseItemLines, storedChain } from './items.js';

/** Bytes of a record trailer (with its newline). */
export const TRAILER_BYTES = 169;
/** Writes pack items into records of at most this many bytes (at least one item each). */
export const PACK_RECORD_BYTES = 16 * KIB;
/** The tag of a list's first generation: fixed, so two first appends race on one name. */
export const FIRST_TAG = '0';

/**
 * Record kinds: `x` the index record (position 0), `n` `a` `r` items (created, appended,
 * rewritten), `N` `A` `R` the same carried over from the predecessor, `k` keep-alive, `s` sealed.
 */
export type Kind = 'x' | 'n' | 'a' | 'r' | 'N' | 'A' | 'R' | 'k' | 's';
export const ITEM_KINDS: ReadonlySet<string> = new Set(['n', 'a', 'r', 'N', 'A', 'R']);
export const ACTIONS: Readonly<Record<string, ListAction>> = {
  n: 'created',
  a: 'appended',
  r: 'rewritten',
  N: 'created',
  A: 'appended',
  R: 'rewritten',
};
export const CARRIED: Readonly<Record<string, Kind>> = { n: 'N', a: 'A', r: 'R', N: 'N', A: 'A', R: 'R' };

/** What a record's trailer says: the state after the record. */
export interface Trailer {
  readonly kind: Kind;
  readonly count: number;
  readonly hash: string;
  /** The highest fencing token of the chain so far. */
  readonly token: number | null;
  /** The first 16 hex digits of SHA-256 of the write id; '' for none. */
  readonly wid: string;
  /** Where the record (its body) starts. */
  readonly start: number;
  /** Where the log's index record ends. */
  readonly indexEnd: number;
  /** Bytes of the log's own item lines up to this record (what rolls a log over). */
  readonly bytes: number;
}

/** A record found in a chunk of a log. */
export interface Rec extends Trailer {
  /** Where its trailer starts, and ends. */
  readonly at: number;
  readonly end: number;
  /** Its body, when the whole record is in the chunk. */
  readonly body?: Buffer;
  /** The trailer before it when in the chunk; null for the record at position 0. */
  readonly prev?: Trailer | null;
}

/** Some bytes of a log, parsed. */
export interface Chunk {
  /** Where the bytes start in the object, and the object's size. */
  readonly lo: number;
  readonly size: number;
  readonly recs: readonly Rec[];
}

/** A log or segment: generation, number in the generation, and the generation's tag. */
export interface LogRef {
  readonly gen: number;
  readonly seq: number;
  readonly tag: string;
}

/** An older log or segment of a generation, as an index lists it. */
export interface Entry extends LogRef {
  /** Its own items: `[first, first + count)`, the chain hash after them. */
  readonly first: number;
  readonly count: number;
  readonly hash: string;
  /** Its size, and where its own records start. */
  readonly bytes: number;
  readonly data: number;
  /** `[item number, position of the trailer before it]`, at most a mark stride apart. */
  readonly marks: ReadonlyArray<readonly [number, number]>;
}

/** The index record of a log (and, without `writes`, the pointer's body). */
export interface LogInfo extends LogRef {
  readonly v: 2;
  readonly format: 'append';
  readonly inc: string;
  /** A generation started by a list delete (it reads as absent until appended to). */
  readonly deleted: boolean;
  /** The first item the log holds (carried records included), and its own first item. */
  readonly held: number;
  readonly start: number;
  readonly startHash: string;
  /** Where its own records start. */
  readonly data: number;
  /** The generation's older logs and segments, contiguous from item 0 to `start`. */
  readonly index: readonly Entry[];
  /** The last write ids before `start` (index records only). */
  readonly writes?: readonly WriteRecord[];
  /**
   * The oldest generation whose item objects the chain may still reference (a truncate keeps the
   * older generations' objects inside the kept prefix as they are); absent: this generation only.
   */
  readonly keepsFrom?: number;
}

/** Items `[offset, end)` of a chain, verified, with the hashes before and after them. */
export interface Span {
  readonly items: unknown[];
  readonly offset: number;
  readonly baseHash: string;
  readonly end: number;
  readonly endHash: string;
}

/** One record to put in a new log. */
export interface Part {
  readonly kind: Kind;
  readonly body: Buffer;
  readonly count: number;
  readonly hash: string;
  readonly wid: string;
  /** Its items are the log's own (not carried). */
  readonly own: boolean;
}

/** A log or a segment is damaged (reported as `CorruptValueError` for the list). */
export class DamageError extends Error {}

/** The 16 hex digits a trailer keeps of a write id: a record id (`recordId`) as it is, any other id hashed. */
export function widOf(writeId: string): string {
  return RECORD_ID.test(writeId) ? writeId : createHash('sha256').update(writeId).digest('hex').slice(0, 16);
}

/**
 * Items (stored forms) as records of at most `PACK_RECORD_BYTES` of lines each (an item alone may
 * be bigger), so every range of a log parses from a trailer within that much; `first` is the
 * count before them, `hashAfter(n)` the chain hash after n of them. A write's id (`wid`) is on
 * its last record, and a write of no items is one empty record.
 */
export function recordsOf(
  stored: readonly unknown[],
  first: number,
  hashAfter: (n: number) => string,
  kind: Kind,
  wid: string,
): Part[] {
  const parts: Part[] = [];
  for (let i = 0; i < stored.length; ) {
    let end = i;
    for (
      let b = 0;
      end < stored.length && (end === i || b + itemBytes(stored[end]) <= PACK_RECORD_BYTES);
      end++
    )
      b += itemBytes(stored[end]);
    const last = end === stored.length;
    parts.push({
      kind,
      body: itemLines(stored.slice(i, end)),
      count: first + end,
      hash: hashAfter(end),
      wid: last ? wid : '',
      own: true,
    });
    i = end;
  }
  if (parts.length === 0 && wid !== '')
    parts.push({ kind, body: Buffer.alloc(0), count: first, hash: hashAfter(0), wid, own: true });
  return parts;
}

/** Just the name fields of a log reference (an info or a tail carries much more). */
export function refOf(ref: LogRef): LogRef {
  return { gen: ref.gen, seq: ref.seq, tag: ref.tag };
}

export function sameRef(a: LogRef, b: LogRef): boolean {
  return a.gen === b.gen && a.seq === b.seq && a.tag === b.tag;
}

/** True when `a` is a later log than `b` (a later generation, or later in the same one). */
export function later(a: LogRef, b: LogRef): boolean {
  return a.gen > b.gen || (a.gen === b.gen && a.tag === b.tag && a.seq > b.seq);
}

export function groupOf(ref: LogRef): string {
  return `${ref.gen}~${ref.tag}`;
}

export function entryAt(info: LogInfo, item: number): Entry | undefined {
  return info.index.find((e) => e.first <= item && item < e.first + e.count);
}

function digits(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/** A seal record at `start` after the state `after`, naming `successor`. */
export function sealRecord(after: Trailer, start: number, successor: LogRef): Buffer {
  const { gen, seq, tag } = successor;
  const body = Buffer.from(`${JSON.stringify({ successor: { gen, seq, tag } })}\n`, 'utf8');
  return encodeRecord(body, { ...after, kind: 's', start });
}

/** A record: its body, then its trailer (whose checksum covers both). */
export function encodeRecord(body: Buffer, t: Trailer): Buffer {
  const head = Buffer.from(
    `~A ${t.kind} ${digits(t.count, 16)} ${t.hash.slice(HASH_PREFIX.length)} ${
      t.token === null ? '-'.repeat(16) : digits(t.token, 16)
    } ${t.wid || '-'.repeat(16)} ${digits(t.start, 12)} ${digits(t.indexEnd, 12)} ${digits(t.bytes, 12)} `,
    'latin1',
  );
  const sum = (crc32(head, crc32(body)) >>> 0).toString(16).padStart(8, '0');
  return Buffer.concat([body, head, Buffer.from(`${sum}\n`, 'latin1')]);
}

const TRAILER =
  /^~A ([xnarNARks]) (\d{16}) ([0-9a-f]{64}) (\d{16}|-{16}) ([0-9a-f]{16}|-{16}) (\d{12}) (\d{12}) (\d{12}) ([0-9a-f]{8})$/;

/**
 * Parses bytes `[lo, lo + buf.length)` of a log of `size` bytes: every trailer line in them (item
 * lines are JSON, so none starts with `~`), each record whole in them checked against its checksum.
 */
export function parseChunk(buf: Buffer, lo: number, size: number): Chunk {
  const recs: Rec[] = [];
  let prev: Rec | undefined;
  for (let line = 0; line < buf.length; ) {
    const nl = buf.indexOf(10, line);
    if (nl < 0) break;
    if (
      nl - line === TRAILER_BYTES - 1 &&
      buf[line] === 0x7e &&
      buf[line + 1] === 0x41 &&
      buf[line + 2] === 0x20
    ) {
      const m = TRAILER.exec(buf.toString('latin1', line, nl));
      if (!m) throw new DamageError('a damaged trailer');
      const at = lo + line;
      const t: Trailer = {
        kind: m[1] as Kind,
        count: Number(m[2]),
        hash: `${HASH_PREFIX}${m[3]}`,
        token: (m[4] as string).startsWith('-') ? null : Number(m[4]),
        wid: (m[5] as string).startsWith('-') ? '' : (m[5] as string),
        start: Number(m[6]),
        indexEnd: Number(m[7]),
        bytes: Number(m[8]),
      };
      if (t.start > at) throw new DamageError('a record that starts after its trailer');
      let known: Trailer | null | undefined;
      if (t.start === 0) known = null;
      else if (prev) {
        if (prev.end !== t.start) throw new DamageError('records that do not follow each other');
        known = prev;
      }
      let body: Buffer | undefined;
      if (t.start >= lo) {
        body = buf.subarray(t.start - lo, line);
        const sum = crc32(buf.subarray(line, nl - 8), crc32(body)) >>> 0;
        if (sum !== Number.parseInt(m[9] as string, 16))
          throw new DamageError('a record whose checksum fails');
      }
      if ((known === null) !== (t.kind === 'x')) throw new DamageError('an index record out of place');
      const rec: Rec = {
        ...t,
        at,
        end: at + TRAILER_BYTES,
        ...(body ? { body } : {}),
        ...(known !== undefined ? { prev: known } : {}),
      };
      recs.push(rec);
      prev = rec;
    }
    line = nl + 1;
  }
  return { lo, size, recs };
}

/** The stored items of an item record's body. */
function parseItems(body: Buffer): unknown[] {
  return parseItemLines(body, (reason, options) => new DamageError(reason, options));
}

/**
 * Items `[from, to)` of a chunk, from the first it holds after a known base at or after `from`,
 * each record's items checked against its trailer's count and chain hash; undefined when the
 * chunk holds nothing with a known base up to `from`.
 */
export function spanOf(chunk: Chunk, from: number, to: number): Span | undefined {
  const recs = chunk.recs;
  let i = recs.findIndex((r) => r.prev !== undefined && r.body !== undefined);
  if (i < 0) return undefined;
  const head = recs[i] as Rec;
  let count = head.prev ? head.prev.count : head.count;
  let hash = head.prev ? head.prev.hash : head.hash;
  if (head.prev === null) i++;
  const start = Math.max(from, count);
  let baseHash = start === count ? hash : undefined;
  const items: unknown[] = [];
  for (; i < recs.length && count < to; i++) {
    const r = recs[i] as Rec;
    if (!r.body) throw new DamageError('a record cut inside a chunk');
    if (!ITEM_KINDS.has(r.kind)) {
      if (r.kind === 'x' || r.count !== count || r.hash !== hash)
        throw new DamageError('a record that moves the chain');
      continue;
    }
    if (r.count <= start) {
      count = r.count;
      hash = r.hash;
      if (count === start) baseHash = hash;
      continue;
    }
    const its = parseItems(r.body);
    if (count + its.length !== r.count || storedChain(hash, its) !== r.hash)
      throw new DamageError('items that do not match their trailer');
    for (let j = 0; j < its.length; j++) {
      const n = count + j;
      if (n === start && baseHash === undefined) baseHash = storedChain(hash, its.slice(0, j));
      if (n >= start && n < to) items.push(its[j]);
    }
    count = r.count;
    hash = r.hash;
  }
  if (baseHash === undefined) return undefined;
  return { items, offset: start, baseHash, end: count, endHash: hash };
}

/** The index record of a chunk that starts at position 0, checked to be the log `ref` of `inc`. */
export function indexOf(chunk: Chunk, inc: string, ref: LogRef): LogInfo {
  const first = chunk.recs[0];
  if (chunk.lo !== 0 || first?.kind !== 'x' || !first.body) throw new DamageError('a log without its index');
  const info = parseInfo(first.body.toString('utf8'));
  if (!info || info.inc !== inc || !sameRef(info, ref) || info.held !== first.count)
    throw new DamageError('an index record of another log');
  return info;
}

/** The write records of a log: those its index record keeps, then its own records'. */
export function writesOf(x: LogInfo, chunk: Chunk): WriteRecord[] {
  const own = chunk.recs.filter((r) => r.at >= x.data && ITEM_KINDS.has(r.kind) && r.wid);
  return [...(x.writes ?? []), ...own.map(writeOf)].slice(-KEPT_WRITES);
}

export function writeOf(r: Trailer): WriteRecord {
  return [r.wid, r.count, r.hash, ACTIONS[r.kind] as ListAction];
}

/** The answer a write recorded in a chunk's trailers, if its id is there. */
export function findWrite(chunk: Chunk, wid: string, named: boolean): ListWriteResult | undefined {
  const records = chunk.recs
    .filter((rec) => rec.wid && ITEM_KINDS.has(rec.kind))
    .map((r) => [r.wid, { action: ACTIONS[r.kind] as ListAction, count: r.count, hash: r.hash }] as const)
    .reverse();
  return recordedAnswer(records, wid, named);
}

export function successorOf(seal: Rec): LogRef {
  if (!seal.body) throw new DamageError('a seal cut off');
  let ref: LogRef | undefined;
  try {
    ref = (JSON.parse(seal.body.toString('utf8')) as { successor?: LogRef }).successor;
  } catch {
    ref = undefined;
  }
  if (
    !ref ||
    !Number.isSafeInteger(ref.gen) ||
    !Number.isSafeInteger(ref.seq) ||
    typeof ref.tag !== 'string' ||
    !/^[0-9a-z]{1,16}$/.test(ref.tag)
  )
    throw new DamageError('a seal that names no successor');
  return { gen: ref.gen, seq: ref.seq, tag: ref.tag };
}

/** `[item, trailer position]` at the start of the log's own records, then at most `every` bytes apart. */
export function marksOf(chunk: Chunk, start: number, data: number, every: number): Array<[number, number]> {
  const marks: Array<[number, number]> = [[start, data - TRAILER_BYTES]];
  let last = data - TRAILER_BYTES;
  for (const r of chunk.recs) {
    if (r.at < data || !ITEM_KINDS.has(r.kind)) continue;
    if (r.at - last >= every) {
      marks.push([r.count, r.at]);
      last = r.at;
    }
  }
  return marks;
}

/**
 * The bytes of a new log or segment: its index record (whose `data` says where its own records
 * start), then `parts`, all carrying `token`.
 */
export function buildLog(
  info: LogInfo,
  base: { readonly count: number; readonly hash: string },
  token: number | null,
  parts: readonly Part[],
): { body: Buffer; info: LogInfo } {
  const carried = parts.filter((p) => !p.own).reduce((n, p) => n + p.body.length + TRAILER_BYTES, 0);
  let data = 0;
  let x = Buffer.alloc(0);
  for (let i = 0; i < 6; i++) {
    x = Buffer.from(`${JSON.stringify({ ...info, data })}\n`, 'utf8');
    const next = x.length + TRAILER_BYTES + carried;
    if (next === data) break;
    data = next;
  }
  const done: LogInfo = { ...info, data };
  const indexEnd = x.length + TRAILER_BYTES;
  const out = [
    encodeRecord(x, {
      kind: 'x',
      count: base.count,
      hash: base.hash,
      token,
      wid: '',
      start: 0,
      indexEnd,
      bytes: 0,
    }),
  ];
  let at = indexEnd;
  let bytes = 0;
  for (const p of parts) {
    if (p.own) bytes += p.body.length;
    const record = encodeRecord(p.body, {
      kind: p.kind,
      count: p.count,
      hash: p.hash,
      token,
      wid: p.wid,
      start: at,
      indexEnd,
      bytes: p.own ? bytes : 0,
    });
    out.push(record);
    at += record.length;
  }
  return { body: Buffer.concat(out), info: done };
}

/** The index record of a new log of `inc` whose own items start at `start` (chain hash `startHash` before it). */
export function newLogInfo(
  inc: string,
  ref: LogRef,
  deleted: boolean,
  start: number,
  startHash: string,
  index: Entry[],
  writes: readonly WriteRecord[],
): LogInfo {
  return {
    v: 2,
    format: 'append',
    inc,
    ...ref,
    deleted,
    held: start,
    start,
    startHash,
    data: 0,
    index,
    writes,
  };
}

/** The index record or pointer in a text, or undefined when it is not one. */
export function parseInfo(text: string): LogInfo | undefined {
  let i: LogInfo;
  try {
    i = JSON.parse(text.endsWith('\n') ? text.slice(0, -1) : text) as LogInfo;
  } catch {
    return undefined;
  }
  if (i?.v !== 2 || i.format !== 'append' || typeof i.inc !== 'string' || !/^[a-z0-9]+$/.test(i.inc))
    return undefined;
  const ints = [i.gen, i.seq, i.held, i.start, i.data].every((n) => Number.isSafeInteger(n) && n >= 0);
  if (!ints || typeof i.tag !== 'string' || !/^[0-9a-z]{1,16}$/.test(i.tag) || typeof i.deleted !== 'boolean')
    return undefined;
  if (!isHash(i.startHash) || i.held > i.start || !Array.isArray(i.index)) return undefined;
  if (i.writes !== undefined && !Array.isArray(i.writes)) return undefined;
  if (i.keepsFrom !== undefined && !(Number.isSafeInteger(i.keepsFrom) && i.keepsFrom <= i.gen))
    return undefined;
  let next = 0;
  for (const e of i.index) {
    const ok =
      e?.first === next &&
      [e.gen, e.seq, e.count, e.bytes, e.data].every((n) => Number.isSafeInteger(n) && n >= 0) &&
      typeof e.tag === 'string' &&
      isHash(e.hash) &&
      Array.isArray(e.marks);
    if (!ok) return undefined;
    next += e.count;
  }
  if (i.index.length > 0 && next !== i.start) return undefined;
  return i;
}
