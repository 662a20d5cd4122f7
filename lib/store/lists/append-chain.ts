/**
 * Reading and following the chain of an append-format list (docs/DESIGN.md, "Append format"):
 * the pointer `.list.hash`, a log's tail, a whole log or a byte range of it, the current log found
 * by following seals from what the pointer names (the pointer may lag; a writer creates a rollover
 * successor that is missing, and a damaged pointer is repaired from a LIST of the logs), and pages
 * and whole lists read from the logs and segments an index names, verified against their trailers.
 */

import { BackendError, ContendedError } from '../../contract/errors.js';
import { EMPTY_HASH } from '../../contract/hash.js';
import type { ListPage, PageOptions } from '../../contract/types.js';
import {
  ObjectConditionFailedError,
  ObjectNotFoundError,
  ObjectStoreError,
  RangeNotSatisfiableError,
} from '../../drivers/errors.js';
import type { StoredObject } from '../../drivers/types.js';
import { KIB } from '../../util/units.js';
import { getOrUndefined, listAll, type StoreContext } from '../context.js';
import { parseLogName, type UserLayout } from '../layout.js';
import { isReferenceListHash } from '../reference.js';
import {
  buildLog,
  CARRIED,
  type Chunk,
  DamageError,
  type Entry,
  entryAt,
  FIRST_TAG,
  groupOf,
  ITEM_KINDS,
  indexOf,
  type Kind,
  type LogInfo,
  type LogRef,
  later,
  marksOf,
  PACK_RECORD_BYTES,
  type Part,
  parseChunk,
  parseInfo,
  type Rec,
  refOf,
  type Span,
  sameRef,
  spanOf,
  successorOf,
  TRAILER_BYTES,
  writesOf,
} from './append-codec.js';
import { checkWholeRead, emptyPage, NDJSON, READ_ATTEMPTS, rangeOf, type WriteRecord } from './format.js';
import { resolveItems } from './items.js';

/** The tail a writer reads: always enough for the state; at the default sizes, about 50 records. */
const SUFFIX_BYTES = 64 * KIB;
/** Largest tail a `last: n` read asks for at once. */
const MAX_SUFFIX_BYTES = 8 * 1024 * KIB;
/** A successor carries at most this much of its predecessor's newest records (a quarter log when logs are small). */
const MAX_CARRY_BYTES = 64 * KIB;
/** Index marks of a sealed log are at most this far apart (a quarter log when logs are small). */
const MAX_MARK_BYTES = 256 * KIB;
/** Seals a read or a write follows before it gives up (retryable). */
const MAX_HOPS = 8;

/** What `.list.hash` holds. */
export interface PointerRead {
  readonly info?: LogInfo;
  readonly corrupt?: boolean;
}

/** The end of the current log of a list, as read. */
export interface Tail {
  readonly name: string;
  readonly ref: LogRef;
  readonly size: number;
  readonly chunk: Chunk;
  readonly last: Rec;
  /** When the log was last written. */
  readonly modified: Date;
  /** The log's index record, when known without reading it. */
  info?: LogInfo;
}

/** The whole content of a generation, and where it ends. */
export interface Whole {
  readonly items: unknown[];
  readonly count: number;
  readonly hash: string;
  readonly writes: readonly WriteRecord[];
  readonly ref: LogRef;
  readonly size: number;
}

/** An object the pointer or an index names is gone (a concurrent session delete): read again. */
export class LogGoneError extends Error {}

/** What the pointer holds, seen from incarnation `inc`: one of another incarnation is a leftover. */
export function mine(pointer: PointerRead, inc: string | undefined): PointerRead {
  if (pointer.corrupt || !pointer.info) return pointer;
  return pointer.info.inc === inc ? pointer : {};
}

/** An error after which the write surely did not happen (any other may have landed). */
export function definite(error: unknown): boolean {
  return (
    error instanceof ObjectStoreError && !error.retryable && !(error instanceof ObjectConditionFailedError)
  );
}

/** The logs and segments of one user's append-format lists, as their chains name them. */
export class AppendChain {
  /** A log is sealed once its own items reach this many bytes. */
  readonly logBytes: number;
  /** How much of its predecessor's newest records a successor carries. */
  private readonly carryBytes: number;
  /** How far apart the marks of an index entry are at most. */
  readonly markBytes: number;

  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
  ) {
    this.logBytes = ctx.listLogBytes;
    this.carryBytes = Math.min(MAX_CARRY_BYTES, Math.floor(ctx.listLogBytes / 4));
    this.markBytes = Math.min(MAX_MARK_BYTES, Math.floor(ctx.listLogBytes / 4));
  }

  /** The object name of log or segment `ref` of the list. */
  name(s: string, k: string, inc: string, ref: LogRef): string {
    return this.layout.log(s, k, inc, ref.gen, ref.seq, ref.tag);
  }

  // ---- reading objects -----------------------------------------------------------------------

  async readPointer(s: string, k: string): Promise<PointerRead> {
    const object = await getOrUndefined(this.ctx.driver, this.layout.listHash(s, k));
    if (!object) return {};
    checkWholeRead(object, object.key);
    // The AgentScope reference's hash (an adopted session's unconverted list) points nowhere: the
    // list is absent to this format until its first log exists (lists/reference-lists.ts).
    if (isReferenceListHash(object.body)) return {};
    const info = parseInfo(Buffer.from(object.body).toString('utf8'));
    return info ? { info } : { corrupt: true };
  }

  /** The last `suffix` bytes of a log, parsed; undefined when it is absent. */
  async tailAt(s: string, k: string, inc: string, ref: LogRef, suffix = SUFFIX_BYTES) {
    const name = this.name(s, k, inc, ref);
    let object: StoredObject;
    try {
      object = await this.ctx.driver.get(name, { range: { suffix } });
    } catch (error) {
      if (error instanceof ObjectNotFoundError) return undefined;
      if (error instanceof RangeNotSatisfiableError) throw new DamageError('an empty log');
      throw error;
    }
    const body = Buffer.from(object.body);
    const lo = object.size - body.length;
    if (lo < 0 || (object.range && object.range.end !== object.size - 1))
      throw new BackendError(`short read of ${name}`, true);
    const chunk = parseChunk(body, lo, object.size);
    const last = chunk.recs.at(-1);
    if (!last || last.end !== object.size) throw new DamageError('a log that does not end with a trailer');
    return {
      name,
      ref,
      size: object.size,
      chunk,
      last,
      modified: object.lastModified,
    } satisfies Tail as Tail;
  }

  /** A whole log or segment, parsed (it starts with its index record and ends with a trailer). */
  async wholeAt(name: string): Promise<Chunk | undefined> {
    const object = await getOrUndefined(this.ctx.driver, name);
    if (!object) return undefined;
    checkWholeRead(object, name);
    const chunk = parseChunk(Buffer.from(object.body), 0, object.size);
    if (chunk.recs[0]?.kind !== 'x' || chunk.recs[0].start !== 0 || chunk.recs.at(-1)?.end !== object.size)
      throw new DamageError('a log that is not whole');
    return chunk;
  }

  async rangeAt(name: string, lo: number, hi: number): Promise<Chunk> {
    let object: StoredObject;
    try {
      object = await this.ctx.driver.get(name, { range: { start: lo, end: hi } });
    } catch (error) {
      if (error instanceof ObjectNotFoundError) throw new LogGoneError();
      if (error instanceof RangeNotSatisfiableError)
        throw new DamageError('a log shorter than its index says');
      throw error;
    }
    const expected = Math.min(hi, object.size - 1) - lo + 1;
    if (object.body.byteLength !== expected) throw new BackendError(`short read of ${name}`, true);
    return parseChunk(Buffer.from(object.body), lo, object.size);
  }

  /** The index record of the log `tail` ends (from the pointer, the chunk, or one ranged read). */
  async infoOf(inc: string, tail: Tail): Promise<LogInfo> {
    if (tail.info) return tail.info;
    const chunk = tail.chunk.lo === 0 ? tail.chunk : await this.rangeAt(tail.name, 0, tail.last.indexEnd - 1);
    const info = indexOf(chunk, inc, tail.ref);
    tail.info = info;
    return info;
  }

  /**
   * The current log of a list, from the log `from` names: follows seals (the pointer may lag),
   * and as a writer creates a rollover successor that is missing (a writer sealed, then stopped).
   * A reader that finds the successor missing answers from the sealed log (nothing was appended
   * after the seal). The pointer is rewritten when it did not name the current log.
   */
  async locate(
    s: string,
    k: string,
    inc: string,
    from: { readonly info?: LogInfo; readonly ref?: LogRef; readonly repair?: boolean },
    writer: boolean,
    suffix = SUFFIX_BYTES,
  ): Promise<Tail> {
    let ref = refOf((from.ref ?? from.info) as LogRef);
    let known = from.info;
    let moved = from.repair === true;
    let sealed: Tail | undefined;
    for (let hop = 0; hop < MAX_HOPS; hop++) {
      const tail = await this.tailAt(s, k, inc, ref, suffix);
      if (!tail) {
        if (!sealed) throw new LogGoneError();
        if (!writer) return sealed;
        // The pointer may have moved past this log (it was superseded and deleted): follow it.
        const pointer = mine(await this.readPointer(s, k), inc).info;
        if (pointer && later(pointer, sealed.ref) && !sameRef(pointer, ref)) {
          ref = refOf(pointer);
          known = pointer;
          sealed = undefined;
          continue;
        }
        // A rewrite creates its generation before the seal that names it: one missing is damage.
        if (ref.gen !== sealed.ref.gen || ref.tag !== sealed.ref.tag)
          throw new DamageError('a lost generation');
        await this.createSuccessor(s, k, inc, sealed.ref);
        continue;
      }
      if (known && sameRef(known, ref)) tail.info = known;
      if (tail.last.kind === 's') {
        sealed = tail;
        ref = successorOf(tail.last);
        known = undefined;
        moved = true;
        continue;
      }
      if (moved) await this.repairPointer(s, k, inc, tail);
      return tail;
    }
    throw new ContendedError('the list moved on too often while it was read; retry');
  }

  /** The current log from what the pointer says (undefined: no list), reading again if a log vanished. */
  async current(
    s: string,
    k: string,
    inc: string,
    pointer: PointerRead,
    writer: boolean,
    suffix = SUFFIX_BYTES,
  ): Promise<Tail | undefined> {
    let read = pointer;
    for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
      const info = read.info ?? (read.corrupt ? await this.repair(s, k, inc) : undefined);
      if (!info) return undefined;
      try {
        return await this.locate(s, k, inc, { info }, writer, suffix);
      } catch (error) {
        if (!(error instanceof LogGoneError)) throw error;
      }
      read = mine(await this.readPointer(s, k), inc);
    }
    throw new BackendError('the list changed while it was read; retry', true);
  }

  /** Writes the pointer to the log `tail` ends (best effort: a lagging pointer is followed). */
  private async repairPointer(s: string, k: string, inc: string, tail: Tail): Promise<void> {
    try {
      await this.writePointer(s, k, await this.infoOf(inc, tail));
      this.ctx.metrics.count('manifestRepairs');
    } catch (error) {
      if (error instanceof DamageError) throw error;
      this.ctx.metrics.count('persistenceFailures');
    }
  }

  async writePointer(s: string, k: string, info: LogInfo): Promise<void> {
    const { writes: _writes, ...pointer } = info;
    await this.ctx.driver.put(this.layout.listHash(s, k), JSON.stringify(pointer), {
      contentType: 'application/json',
      metadata: { inc: info.inc },
      tags: { kind: 'state' },
    });
  }

  /**
   * A damaged pointer: the list's logs are listed (the one LIST, on this repair path only), and the
   * current one is the unsealed log of the newest generation some seal leads to (or the first
   * generation); the pointer is written again.
   */
  private async repair(s: string, k: string, inc: string): Promise<LogInfo | undefined> {
    const prefix = this.layout.incarnationLogs(s, k, inc);
    const groups = new Map<string, LogRef>();
    for (const object of await listAll(this.ctx.driver, prefix)) {
      const ref = parseLogName(object.key.slice(prefix.length));
      if (!ref) continue;
      const key = `${ref.gen}~${ref.tag}`;
      const seen = groups.get(key);
      if (!seen || seen.seq < ref.seq) groups.set(key, ref);
    }
    const refs = [...groups.values()].sort((a, b) => b.gen - a.gen || b.seq - a.seq);
    const tails = await Promise.all(refs.map((ref) => this.tailAt(s, k, inc, ref).catch(() => undefined)));
    const reached = new Set(
      tails.flatMap((t) => (t?.last.kind === 's' ? [groupOf(successorOf(t.last))] : [])),
    );
    reached.add(`0~${FIRST_TAG}`);
    const open = tails.filter((t): t is Tail => t !== undefined && t.last.kind !== 's');
    const pick =
      open.find((t) => reached.has(groupOf(t.ref))) ??
      open[0] ??
      tails.find((t): t is Tail => t !== undefined);
    if (!pick) return undefined;
    this.ctx.metrics.count('manifestRepairs');
    const tail = await this.locate(s, k, inc, { ref: pick.ref }, true);
    const info = await this.infoOf(inc, tail);
    await this.writePointer(s, k, info).catch(() => this.ctx.metrics.count('persistenceFailures'));
    return info;
  }

  // ---- creating logs -------------------------------------------------------------------------

  /**
   * Creates the successor of a sealed log "the same way" whoever does it: its index record (the
   * generation's index with the sealed log added, its marks, the last write ids), then the sealed
   * log's newest records carried over (up to `carryBytes`), so `last: n` reads one log.
   */
  async createSuccessor(s: string, k: string, inc: string, sealed: LogRef) {
    const chunk = await this.wholeAt(this.name(s, k, inc, sealed));
    if (!chunk) throw new LogGoneError();
    const x = indexOf(chunk, inc, sealed);
    const last = chunk.recs.at(-1) as Rec;
    if (last.kind !== 's') return undefined;
    const ref = successorOf(last);
    if (ref.gen !== sealed.gen || ref.tag !== sealed.tag || ref.seq !== sealed.seq + 1) return undefined;
    const span = spanOf(chunk, x.start, Number.POSITIVE_INFINITY);
    if (!span || span.offset !== x.start || span.end !== last.count || span.endHash !== last.hash)
      throw new DamageError('a sealed log that does not verify');
    const entry: Entry = {
      ...refOf(sealed),
      first: x.start,
      count: last.count - x.start,
      hash: last.hash,
      bytes: chunk.size,
      data: x.data,
      marks: marksOf(chunk, x.start, x.data, this.markBytes),
    };
    // The newest item records, carried (their items are the predecessor's, not this log's own).
    const carried: Rec[] = [];
    let bytes = 0;
    for (let i = chunk.recs.length - 1; i >= 0 && bytes < this.carryBytes; i--) {
      const r = chunk.recs[i] as Rec;
      if (r.kind === 'x') break;
      if (!ITEM_KINDS.has(r.kind) || !r.body) continue;
      carried.unshift(r);
      bytes += r.body.length;
    }
    const base = carried[0]?.prev ?? last;
    if (!base) throw new DamageError('a carried record without a base');
    const info: LogInfo = {
      v: 2,
      format: 'append',
      inc,
      ...ref,
      deleted: false,
      held: base.count,
      start: last.count,
      startHash: last.hash,
      data: 0,
      index: [...x.index, entry],
      writes: writesOf(x, chunk),
      ...(x.keepsFrom !== undefined ? { keepsFrom: x.keepsFrom } : {}),
    };
    const parts = carried.map(
      (r): Part => ({
        kind: CARRIED[r.kind] as Kind,
        body: r.body as Buffer,
        count: r.count,
        hash: r.hash,
        wid: r.wid,
        own: false,
      }),
    );
    const built = buildLog(info, base, last.token, parts);
    await this.createLog(this.name(s, k, inc, ref), built.body);
    return built.info;
  }

  /** Creates an appendable log (position 0: create-only); one already there is left as it is. */
  async createLog(name: string, body: Buffer): Promise<boolean> {
    try {
      await this.ctx.driver.append(name, body, {
        position: 0,
        contentType: NDJSON,
        tags: { kind: 'state' },
      });
      return true;
    } catch (error) {
      if (error instanceof ObjectConditionFailedError) return false;
      throw error;
    }
  }

  // ---- reading lists -------------------------------------------------------------------------

  /**
   * Items as they were sent: those stored as objects of their own are read (in parallel) and
   * checked against their leaf hashes (one gone: read again, as for a vanished log).
   */
  async resolve<T extends { readonly items: readonly unknown[] }>(page: T): Promise<T> {
    const items = await resolveItems(this.ctx.driver, page.items, {
      gone: () => new LogGoneError(),
      corrupt: () => new DamageError('an item object that is not its item'),
    });
    return { ...page, items };
  }

  /**
   * A page from the chain the pointer names (a damaged pointer is repaired first), its items as
   * stored (see `resolve`): the whole list, or the older object the page starts in read with the
   * current log's tail, or the current log.
   */
  async pageOf(s: string, k: string, inc: string, pointer: PointerRead, page: PageOptions) {
    const info = pointer.info ?? (await this.repair(s, k, inc));
    if (!info) return emptyPage();
    if (page.limit === undefined && page.last === undefined && (page.offset ?? 0) === 0) {
      const whole = await this.readWhole(s, k, inc, info);
      if (whole.count === 0) return emptyPage();
      return { items: whole.items, count: whole.count, hash: whole.hash, offset: 0, baseHash: EMPTY_HASH };
    }
    // A page in an older object is read with the tail, in one round trip.
    const offset = page.offset ?? 0;
    const upto = page.limit === undefined ? undefined : offset + page.limit;
    const older = page.last === undefined ? entryAt(info, offset) : undefined;
    const [tail, part] = await Promise.all([
      this.locate(s, k, inc, { info }, false, this.suffixFor(page, info)),
      older ? this.readEntry(s, k, inc, older, offset, Math.max(upto ?? offset + 1, offset + 1)) : undefined,
    ]);
    const { count, hash } = tail.last;
    if (count === 0) return emptyPage();
    const { from, to, keep } = rangeOf(page, count);
    const answer = (span: Span): ListPage => ({
      items: span.items.slice(0, Math.max(0, to - span.offset)),
      count,
      hash,
      offset: span.offset,
      baseHash: span.baseHash,
    });
    if (from === count) return { items: [], count, hash, offset: count, baseHash: hash };
    if (part && tail.ref.gen === info.gen && tail.ref.tag === info.tag) return answer(part);
    const own = await this.infoOf(inc, tail);
    if (keep === 'old' && from < own.start) {
      const entry = entryAt(own, from);
      if (!entry) throw new DamageError('an index without the page');
      return answer(await this.readEntry(s, k, inc, entry, from, Math.max(to, from + 1)));
    }
    // In the current log (a `last` page reaching before what the log holds is cut there).
    const want = Math.max(from, own.held);
    if (want >= count) {
      // The log holds none of the page's items (a generation whose newest items all went into its
      // segments: one over half a log, or a truncate cut at an object's end): the newest older
      // object answers, cut at its start.
      const entry = entryAt(own, count - 1);
      if (!entry) throw new DamageError('an index without the page');
      return answer(await this.readEntry(s, k, inc, entry, Math.max(from, entry.first), count));
    }
    return answer(await this.spanOfLog(tail, own, want, Math.max(to, want + 1), keep === 'new'));
  }

  /**
   * The tail a page reads: 64 KiB, or for `last: n` what n items take in the older logs (at least
   * 64 KiB), plus a record's worth (the tail's first record is cut off).
   */
  private suffixFor(page: PageOptions, info: LogInfo): number {
    if (page.last === undefined) return SUFFIX_BYTES;
    let bytes = 0;
    let items = 0;
    for (const e of info.index) {
      bytes += e.bytes - e.data;
      items += e.count;
    }
    const want = items === 0 ? 0 : Math.ceil((page.last * bytes * 1.1) / items) + 2 * TRAILER_BYTES + 4 * KIB;
    return Math.min(MAX_SUFFIX_BYTES, Math.max(SUFFIX_BYTES, want) + PACK_RECORD_BYTES);
  }

  /**
   * Items `[from, to)` of the current log: from its tail when it reaches, else from a byte range
   * estimated from the log's size and counts (a wider one when the estimate missed).
   */
  async spanOfLog(tail: Tail, info: LogInfo, from: number, to: number, toEnd: boolean) {
    const span = spanOf(tail.chunk, from, to);
    if (span && span.offset === from && (span.items.length > 0 || from >= to)) return span;
    const first = tail.last.indexEnd - TRAILER_BYTES;
    const { count } = tail.last;
    const at = (item: number) =>
      count <= info.held
        ? first
        : Math.floor(first + ((item - info.held) / (count - info.held)) * (tail.size - first));
    const window = this.markBytes;
    const ranges: Array<[number, number]> = [
      [
        Math.max(first, at(from) - window),
        toEnd || to >= count ? tail.size - 1 : Math.min(tail.size - 1, at(to) + window),
      ],
      [first, tail.size - 1],
    ];
    for (const [lo, hi] of ranges) {
      const got = spanOf(await this.rangeAt(tail.name, lo, hi), from, to);
      if (got && got.offset === from && (got.items.length > 0 || from >= to)) return got;
    }
    throw new DamageError('a log without the items its trailers count');
  }

  /** Items `[from, to)` of an older log or segment, cut at its end (a byte range between its marks). */
  async readEntry(
    s: string,
    k: string,
    inc: string,
    e: Entry,
    from: number,
    to: number | undefined,
  ): Promise<Span> {
    const name = this.name(s, k, inc, e);
    const end = e.first + e.count;
    const upto = Math.min(to ?? end, end);
    const a = e.marks.findLast((m) => m[0] <= from);
    const b = e.marks.find((m) => m[0] >= upto && m[0] > from);
    const lo = a ? a[1] : 0;
    const hi = b ? b[1] + TRAILER_BYTES - 1 : e.bytes - 1;
    let chunk: Chunk;
    if (!a || hi - lo + 1 >= e.bytes * 0.75) {
      const whole = await this.wholeAt(name);
      if (!whole) throw new LogGoneError();
      chunk = whole;
    } else chunk = await this.rangeAt(name, lo, hi);
    if (chunk.size !== e.bytes) throw new DamageError('an object of another size than its index says');
    const span = spanOf(chunk, from, upto);
    if (!span || span.offset !== from || span.items.length === 0)
      throw new DamageError('an object without the items its index says');
    if (span.end === end && span.endHash !== e.hash) throw new DamageError('an object with another hash');
    return span;
  }

  /** The whole list: the index's objects and the current log in parallel, verified end to end. */
  async readWhole(s: string, k: string, inc: string, start: LogInfo): Promise<Whole> {
    let info = start;
    for (let generation = 0; generation < MAX_HOPS; generation++) {
      const [older, current] = await Promise.all([
        Promise.all(info.index.map((e) => this.wholeAt(this.name(s, k, inc, e)))),
        this.wholeAt(this.name(s, k, inc, info)),
      ]);
      const items: unknown[] = [];
      let count = 0;
      let hash = EMPTY_HASH;
      info.index.forEach((e, i) => {
        const chunk = older[i];
        if (!chunk) throw new LogGoneError();
        const span = spanOf(chunk, e.first, e.first + e.count);
        if (
          e.first !== count ||
          chunk.size !== e.bytes ||
          !span ||
          span.offset !== e.first ||
          span.baseHash !== hash ||
          span.end !== e.first + e.count ||
          span.endHash !== e.hash
        )
          throw new DamageError('an older object that does not continue the chain');
        items.push(...span.items);
        count = span.end;
        hash = span.endHash;
      });
      if (!current) throw new LogGoneError();
      let chunk = current;
      let ref: LogRef = info;
      let next: LogInfo | undefined;
      for (let hop = 0; hop < MAX_HOPS; hop++) {
        const x = indexOf(chunk, inc, ref);
        if (x.start !== count || x.startHash !== hash) throw new DamageError('a log that does not continue');
        const span = spanOf(chunk, x.start, Number.POSITIVE_INFINITY);
        if (!span || span.offset !== x.start) throw new DamageError('a log without its items');
        items.push(...span.items);
        count = span.end;
        hash = span.endHash;
        const last = chunk.recs.at(-1) as Rec;
        if (last.count !== count || last.hash !== hash) throw new DamageError('a log whose tail disagrees');
        const writes = writesOf(x, chunk);
        const result: Whole = { items, count, hash, writes, ref, size: chunk.size };
        if (last.kind !== 's') return result;
        const successor = successorOf(last);
        const following = await this.wholeAt(this.name(s, k, inc, successor));
        // Sealed, its successor not created yet: the list ends here.
        if (!following) return result;
        if (successor.gen !== ref.gen || successor.tag !== ref.tag) {
          next = indexOf(following, inc, successor);
          break;
        }
        chunk = following;
        ref = successor;
      }
      if (!next) throw new ContendedError('the list moved on too often while it was read; retry');
      info = next;
    }
    throw new ContendedError('the list moved on too often while it was read; retry');
  }
}
