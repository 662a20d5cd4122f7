/**
 * The append list format (docs/DESIGN.md, "Lists: the append format"), for backends with position
 * append (OSS AppendObject; memory and fs too) and no conditional overwrite.
 *
 * A list generation is a chain of appendable logs. A log starts with an index record (the
 * generation's older logs and segments, with their item ranges and end hashes, and the last write
 * ids), then possibly the predecessor's newest records carried over, then one record per write.
 * Every record ends with a fixed-size trailer (kind, count and chain hash after it, the highest
 * fencing token, the write id, where the record starts), so the last 169 bytes of a log are its
 * state, and any byte range of a log can be parsed from its first trailer on. An append is one
 * position-conditional write at the length read: the position is the compare-and-swap, so the
 * token and count checks hold atomically with it. A log whose own items reach `listLogBytes` is
 * sealed by the append that crosses it (`sealed → successor`, in the same request); the successor
 * is created at position 0 (create-only) by whoever finds it missing, then the pointer
 * `.list.hash` (written without condition, so it may lag: readers follow seals) names it.
 */

import { createHash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import {
  AppendConflictError,
  BackendError,
  ContendedError,
  CorruptValueError,
  ListPreconditionFailedError,
} from '../../contract/errors.js';
import { chainHash, EMPTY_HASH, isHash } from '../../contract/hash.js';
import { decodeId } from '../../contract/ids.js';
import { jsonBody } from '../../contract/json.js';
import { HASH_PREFIX } from '../../contract/limits.js';
import { checkPage } from '../../contract/turns.js';
import type {
  AppendOptions,
  ListAction,
  ListPage,
  ListWriteResult,
  PageOptions,
  TruncateOptions,
} from '../../contract/types.js';
import {
  ObjectConditionFailedError,
  ObjectNotFoundError,
  ObjectStoreError,
  RangeNotSatisfiableError,
} from '../../drivers/errors.js';
import type { ListedObject, StoredObject } from '../../drivers/types.js';
import { BACKOFF, backoff } from '../../util/backoff.js';
import { getOrUndefined, listAll, MAX_WRITE_ATTEMPTS, type StoreContext } from '../context.js';
import type { UserLayout } from '../layout.js';
import type { Marker, MarkerRead, Sessions, StateKeeper } from '../sessions.js';
import { RECORD_ID } from '../write-path.js';
import { Archives } from './archives.js';
import {
  checkTruncate,
  emptyPage,
  type Fenced,
  itemBytes,
  KEPT_WRITES,
  type ListAppend,
  type ListFormat,
  type ListPeek,
  type ListSave,
  type ListStat,
  type ListTruncate,
  maxToken,
  newWriteId,
  prefixHashes,
  READ_ATTEMPTS,
  rangeOf,
  recordedAnswer,
  replayOf,
} from './format.js';
import {
  ITEM_REF,
  type ItemObject,
  isItemRef,
  resolveItem,
  storedChain,
  storedItems,
  storedPrefixes,
} from './items.js';

const KIB = 1024;
/** Bytes of a record trailer (with its newline). */
export const TRAILER_BYTES = 169;
/** The tail a writer reads: always enough for the state; at the default sizes, about 50 records. */
const SUFFIX_BYTES = 64 * KIB;
/** Largest tail a `last: n` read asks for at once. */
const MAX_SUFFIX_BYTES = 8 * 1024 * KIB;
/** A successor carries at most this much of its predecessor's newest records (a quarter log when logs are small). */
const MAX_CARRY_BYTES = 64 * KIB;
/** Index marks of a sealed log are at most this far apart (a quarter log when logs are small). */
const MAX_MARK_BYTES = 256 * KIB;
/** Writes pack items into records of at most this many bytes (at least one item each). */
const PACK_RECORD_BYTES = 16 * KIB;
/** The tail `stat` reads: the last trailer, and a seal's body when the log is sealed. */
const STAT_SUFFIX_BYTES = KIB;
/** Seals a read or a write follows before it gives up (retryable). */
const MAX_HOPS = 8;
/** The tag of a list's first generation: fixed, so two first appends race on one name. */
const FIRST_TAG = '0';
const NDJSON = 'application/x-ndjson';

/**
 * Record kinds: `x` the index record (position 0), `n` `a` `r` items (created, appended,
 * rewritten), `N` `A` `R` the same carried over from the predecessor, `k` keep-alive, `s` sealed.
 */
type Kind = 'x' | 'n' | 'a' | 'r' | 'N' | 'A' | 'R' | 'k' | 's';
const ITEM_KINDS: ReadonlySet<string> = new Set(['n', 'a', 'r', 'N', 'A', 'R']);
const ACTIONS: Readonly<Record<string, ListAction>> = {
  n: 'created',
  a: 'appended',
  r: 'rewritten',
  N: 'created',
  A: 'appended',
  R: 'rewritten',
};
const CARRIED: Readonly<Record<string, Kind>> = { n: 'N', a: 'A', r: 'R', N: 'N', A: 'A', R: 'R' };

/** What a record's trailer says: the state after the record. */
interface Trailer {
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
interface Rec extends Trailer {
  /** Where its trailer starts, and ends. */
  readonly at: number;
  readonly end: number;
  /** Its body, when the whole record is in the chunk. */
  readonly body?: Buffer;
  /** The trailer before it when in the chunk; null for the record at position 0. */
  readonly prev?: Trailer | null;
}

/** Some bytes of a log, parsed. */
interface Chunk {
  /** Where the bytes start in the object, and the object's size. */
  readonly lo: number;
  readonly size: number;
  readonly recs: readonly Rec[];
}

/** A log or segment: generation, number in the generation, and the generation's tag. */
interface LogRef {
  readonly gen: number;
  readonly seq: number;
  readonly tag: string;
}

/** An older log or segment of a generation, as an index lists it. */
interface Entry extends LogRef {
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

/** `[write id hash, count after, hash after, action]`. */
type WriteRecord = readonly [string, number, string, ListAction];

/** The index record of a log (and, without `writes`, the pointer's body). */
interface LogInfo extends LogRef {
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

/** What `.list.hash` holds. */
interface PointerRead {
  readonly info?: LogInfo;
  readonly corrupt?: boolean;
}

/** The end of the current log of a list, as read. */
interface Tail {
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

/** Items `[offset, end)` of a chain, verified, with the hashes before and after them. */
interface Span {
  readonly items: unknown[];
  readonly offset: number;
  readonly baseHash: string;
  readonly end: number;
  readonly endHash: string;
}

/** The whole content of a generation, and where it ends. */
interface Whole {
  readonly items: unknown[];
  readonly count: number;
  readonly hash: string;
  readonly writes: readonly WriteRecord[];
  readonly ref: LogRef;
  readonly size: number;
}

/** One record to put in a new log. */
interface Part {
  readonly kind: Kind;
  readonly body: Buffer;
  readonly count: number;
  readonly hash: string;
  readonly wid: string;
  /** Its items are the log's own (not carried). */
  readonly own: boolean;
}

/** A log or a segment is damaged (reported as `CorruptValueError` for the list). */
class DamageError extends Error {}
/** An object the pointer or an index names is gone (a concurrent session delete): read again. */
class LogGoneError extends Error {}

/** The objects of a rewrite, prepared before the seal that commits them. */
interface Prepared {
  readonly gen: number;
  readonly objects: ReadonlyArray<{
    readonly name: string;
    readonly body: Buffer;
    readonly appendable: boolean;
  }>;
  /** Its items stored as objects of their own, created before its logs and segments. */
  readonly items: readonly ItemObject[];
  readonly info: LogInfo;
  readonly result: ListWriteResult;
}

/** What a rewrite carries between its attempts. */
interface RewriteCache {
  prepared?: Prepared;
  content?: Whole;
}

export class AppendFormat implements ListFormat, StateKeeper {
  private readonly archives: Archives;
  private readonly logBytes: number;
  private readonly carryBytes: number;
  private readonly markBytes: number;

  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
    private readonly sessions: Sessions,
  ) {
    this.archives = new Archives(ctx, layout);
    this.logBytes = ctx.listLogBytes;
    this.carryBytes = Math.min(MAX_CARRY_BYTES, Math.floor(ctx.listLogBytes / 4));
    this.markBytes = Math.min(MAX_MARK_BYTES, Math.floor(ctx.listLogBytes / 4));
    sessions.keeper = this;
  }

  private name(s: string, k: string, inc: string, ref: LogRef): string {
    return this.layout.log(s, k, inc, ref.gen, ref.seq, ref.tag);
  }

  private damaged(k: string, cause?: unknown): CorruptValueError {
    this.ctx.metrics.count('corruptObjects');
    return new CorruptValueError(k, cause === undefined ? undefined : { cause });
  }

  /** Runs `fn`, reporting damage as `CorruptValueError` for the list `k`. */
  private async guard<T>(k: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      if (error instanceof DamageError) throw this.damaged(k, error);
      throw error;
    }
  }

  // ---- reading objects -----------------------------------------------------------------------

  private async readPointer(s: string, k: string): Promise<PointerRead> {
    const object = await getOrUndefined(this.ctx.driver, this.layout.listHash(s, k));
    if (!object) return {};
    if (object.body.byteLength !== object.size) throw new BackendError(`short read of ${object.key}`, true);
    const info = parseInfo(Buffer.from(object.body).toString('utf8'));
    return info ? { info } : { corrupt: true };
  }

  /** The last `suffix` bytes of a log, parsed; undefined when it is absent. */
  private async tailAt(s: string, k: string, inc: string, ref: LogRef, suffix = SUFFIX_BYTES) {
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
  private async wholeAt(name: string): Promise<Chunk | undefined> {
    const object = await getOrUndefined(this.ctx.driver, name);
    if (!object) return undefined;
    if (object.body.byteLength !== object.size) throw new BackendError(`short read of ${name}`, true);
    const chunk = parseChunk(Buffer.from(object.body), 0, object.size);
    if (chunk.recs[0]?.kind !== 'x' || chunk.recs[0].start !== 0 || chunk.recs.at(-1)?.end !== object.size)
      throw new DamageError('a log that is not whole');
    return chunk;
  }

  private async rangeAt(name: string, lo: number, hi: number): Promise<Chunk> {
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
  private async infoOf(inc: string, tail: Tail): Promise<LogInfo> {
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
  private async locate(
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
  private async current(
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

  private async writePointer(s: string, k: string, info: LogInfo): Promise<void> {
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
    const prefix = `${this.layout.logs(s, k)}${inc}~`;
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

  // ---- reading lists -------------------------------------------------------------------------

  async read(s: string, k: string, page: PageOptions, marker?: Promise<MarkerRead>): Promise<ListPage> {
    checkPage(page);
    return this.guard(k, async () => {
      for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
        const [read, raw] = await Promise.all([
          attempt === 0 && marker ? marker : this.sessions.read(s),
          this.readPointer(s, k),
        ]);
        if (!read.live) return emptyPage();
        const pointer = mine(raw, read.live.inc);
        if (!pointer.info && !pointer.corrupt) return emptyPage();
        try {
          return await this.resolve(await this.pageOf(s, k, read.live.inc, pointer, page));
        } catch (error) {
          if (!(error instanceof LogGoneError)) throw error;
        }
      }
      throw new DamageError('objects the list names stay gone');
    });
  }

  /**
   * The pointer, then the last bytes of the log it names (following seals): 2 GET in 2 round
   * trips. A deleted generation not appended to since is absent.
   */
  async stat(s: string, k: string, inc: string): Promise<ListStat | undefined> {
    return this.guard(k, async () => {
      const pointer = mine(await this.readPointer(s, k), inc);
      if (!pointer.info && !pointer.corrupt) return undefined;
      const tail = await this.current(s, k, inc, pointer, false, STAT_SUFFIX_BYTES);
      if (!tail) return undefined;
      const { count, hash } = tail.last;
      if (count === 0 && (await this.infoOf(inc, tail)).deleted) return undefined;
      return { count, hash, lastModified: tail.modified };
    });
  }

  /**
   * Items as they were sent: those stored as objects of their own are read (in parallel) and
   * checked against their leaf hashes (one gone: read again, as for a vanished log).
   */
  private async resolve<T extends { readonly items: readonly unknown[] }>(page: T): Promise<T> {
    const items = await Promise.all(
      page.items.map(async (item) => {
        const got = await resolveItem(this.ctx.driver, item);
        if ('gone' in got) throw new LogGoneError();
        if ('corrupt' in got) throw new DamageError('an item object that is not its item');
        return got.value;
      }),
    );
    return { ...page, items };
  }

  async itemObject(s: string, k: string, n: number): Promise<string | undefined> {
    if (!Number.isSafeInteger(n) || n < 0) return undefined;
    return this.guard(k, async () => {
      for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
        const [read, raw] = await Promise.all([this.sessions.read(s), this.readPointer(s, k)]);
        if (!read.live) return undefined;
        const pointer = mine(raw, read.live.inc);
        if (!pointer.info && !pointer.corrupt) return undefined;
        try {
          const page = await this.pageOf(s, k, read.live.inc, pointer, { offset: n, limit: 1 });
          const [item] = page.offset === n ? page.items : [];
          return isItemRef(item) ? item[ITEM_REF] : undefined;
        } catch (error) {
          if (!(error instanceof LogGoneError)) throw error;
        }
      }
      throw new DamageError('objects the list names stay gone');
    });
  }

  /** Creates item objects (create-only: one already there holds that item of that generation). */
  private async createItems(objects: readonly ItemObject[]): Promise<void> {
    await Promise.all(
      objects.map((o) =>
        this.ctx.driver
          .put(o.name, o.body, { contentType: 'application/json', tags: { kind: 'state' }, ifNoneMatch: '*' })
          .catch((error: unknown) => {
            if (!(error instanceof ObjectConditionFailedError)) throw error;
          }),
      ),
    );
  }

  private async pageOf(s: string, k: string, inc: string, pointer: PointerRead, page: PageOptions) {
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
  private async spanOfLog(tail: Tail, info: LogInfo, from: number, to: number, toEnd: boolean) {
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
  private async readEntry(
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
  private async readWhole(s: string, k: string, inc: string, start: LogInfo): Promise<Whole> {
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

  // ---- writing -------------------------------------------------------------------------------

  async append(
    s: string,
    k: string,
    items: readonly unknown[],
    options: ListAppend,
  ): Promise<ListWriteResult> {
    return this.guard(k, async () => {
      const writeId = options.writeId ?? newWriteId();
      const [read, raw] = await Promise.all([this.sessions.read(s), this.readPointer(s, k)]);
      const inc = read.live?.inc;
      const tail = inc ? await this.current(s, k, inc, mine(raw, inc), true) : undefined;
      // A replay is answered from its record, before the fence (docs/DESIGN.md, "The write path").
      if (tail && options.writeId !== undefined) {
        const wid = widOf(writeId);
        const { count, hash } = tail.last;
        const moved =
          count !== options.expectedCount ||
          (options.expectedHash !== undefined && options.expectedHash !== hash);
        // Deep (the current log's history, +1 GET) when the list moved on, or is empty: a deleted
        // list's generation carries its records in its index.
        const deep = moved || tail.last.count === 0;
        const landed =
          findWrite(tail.chunk, wid, true) ?? (deep ? await this.deepReplay(tail, wid, true) : undefined);
        if (landed) return landed;
      }
      const marker = await this.sessions.forWrite(s, read, options.fence, !tail || tail.last.count === 0);
      const start = marker.inc === inc ? tail : undefined;
      return this.commitAppend(s, k, marker, start, items, options, writeId, options.writeId !== undefined);
    });
  }

  /**
   * The pre-read of a commit (lib/store/commits.ts): the pointer and the current log's tail
   * (following seals), as `append` reads them.
   */
  async peek(s: string, k: string, marker: Promise<MarkerRead>): Promise<ListPeek> {
    return this.guard(k, async () => {
      const [read, raw] = await Promise.all([marker, this.readPointer(s, k)]);
      const inc = read.live?.inc;
      const tail = inc ? await this.current(s, k, inc, mine(raw, inc), true) : undefined;
      const last = tail?.last;
      const peek: ListPeek = {
        count: last?.count ?? 0,
        hash: last?.hash ?? EMPTY_HASH,
        token: last?.token ?? null,
        // As `append` decides it: an empty chain (a deleted list is one) is created again.
        creates: !tail || last?.count === 0,
        recorded: async (writeId, deep) => {
          if (!tail) return undefined;
          const wid = widOf(writeId);
          return (
            findWrite(tail.chunk, wid, true) ?? (deep ? await this.deepReplay(tail, wid, true) : undefined)
          );
        },
      };
      this.peeked.set(peek, { inc, tail });
      return peek;
    });
  }

  /** What `peek` read, for `appendPeeked`. */
  private readonly peeked = new WeakMap<ListPeek, { inc: string | undefined; tail: Tail | undefined }>();

  async appendPeeked(
    s: string,
    k: string,
    items: readonly unknown[],
    options: ListAppend & { readonly writeId: string },
    marker: Marker,
    peek: ListPeek,
  ): Promise<ListWriteResult> {
    const read = this.peeked.get(peek);
    if (!read) return this.append(s, k, items, options);
    return this.guard(k, async () => {
      const start = marker.inc === read.inc ? read.tail : undefined;
      return this.commitAppend(s, k, marker, start, items, options, options.writeId, true);
    });
  }

  /**
   * Appends one record at the length read, until one attempt lands. A failed position (another
   * writer appended) or an unknown outcome (a lost answer, a 5xx) reads the tail again: this
   * write's id there means it landed; otherwise it decides again on what it read.
   */
  private async commitAppend(
    s: string,
    k: string,
    marker: Marker,
    first: Tail | undefined,
    items: readonly unknown[],
    options: ListAppend,
    writeId: string,
    named: boolean,
  ): Promise<ListWriteResult> {
    const wid = widOf(writeId);
    const { driver } = this.ctx;
    let tail = first;
    for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
      if (!tail) {
        if (options.expectedCount !== 0 || (options.expectedHash ?? EMPTY_HASH) !== EMPTY_HASH) {
          this.ctx.metrics.count('appendConflicts');
          throw new AppendConflictError(0, EMPTY_HASH);
        }
        const made = await this.createFirst(s, k, marker, items, options.fence.token, wid);
        if ('result' in made) return made.result;
        tail = made.tail;
        continue;
      }
      const landed = findWrite(tail.chunk, wid, named);
      if (landed) return landed;
      const { count, hash, token } = tail.last;
      await options.fence.check(token);
      if (
        count !== options.expectedCount ||
        (options.expectedHash !== undefined && options.expectedHash !== hash)
      ) {
        const replay =
          replayOf(options, items, count, hash) ??
          (named ? await this.deepReplay(tail, wid, true) : undefined) ??
          (await this.replayOfTail(marker.inc, tail, options, items));
        if (replay) return replay;
        this.ctx.metrics.count('appendConflicts');
        throw new AppendConflictError(count, hash);
      }
      const action: ListAction = count === 0 ? 'created' : 'appended';
      const next = chainHash(hash, items);
      const { gen } = tail.ref;
      const own = storedItems(items, (i, tag) => this.layout.listItem(s, k, marker.inc, gen, count + i, tag));
      await this.createItems(own.objects);
      const prefixes = prefixHashes(items, hash);
      const records: Buffer[] = [];
      let after: Trailer = tail.last;
      let start = tail.size;
      for (const part of recordsOf(
        own.stored,
        count,
        (n) => prefixes[n] as string,
        action === 'created' ? 'n' : 'a',
        wid,
      )) {
        after = {
          kind: part.kind,
          count: part.count,
          hash: part.hash,
          token: maxToken(token, options.fence.token),
          wid: part.wid,
          start,
          indexEnd: tail.last.indexEnd,
          bytes: after.bytes + part.body.length,
        };
        const record = encodeRecord(part.body, after);
        records.push(record);
        start += record.length;
      }
      const record = Buffer.concat(records);
      // The append whose items fill the log seals it in the same request.
      const seals = after.bytes >= this.logBytes;
      const successor = { ...tail.ref, seq: tail.ref.seq + 1 };
      const out = seals
        ? Buffer.concat([record, sealRecord({ ...after, wid: '' }, tail.size + record.length, successor)])
        : record;
      const startedAt = performance.now();
      try {
        await driver.append(tail.name, out, { position: tail.size });
      } catch (error) {
        if (definite(error)) throw error;
        if (!(error instanceof ObjectConditionFailedError)) await backoff(BACKOFF.storeRace, attempt);
        tail = await this.again(s, k, marker.inc, tail);
        continue;
      }
      const result: ListWriteResult = { action, count: count + items.length, hash: next };
      if (seals) await this.rollOver(s, k, marker.inc, tail.ref, startedAt);
      return result;
    }
    throw new ContendedError('the list is too contended; nothing was written; retry');
  }

  /** The current log again after a failed or unknown write to `tail`'s log (from that log on). */
  private async again(s: string, k: string, inc: string, tail: Tail): Promise<Tail | undefined> {
    try {
      return await this.locate(s, k, inc, { ref: tail.ref }, true);
    } catch (error) {
      if (!(error instanceof LogGoneError)) throw error;
      return this.current(s, k, inc, mine(await this.readPointer(s, k), inc), true);
    }
  }

  /** After a sealing append: the successor (create-only at position 0), then the pointer. */
  private async rollOver(s: string, k: string, inc: string, sealed: LogRef, startedAt: number) {
    try {
      const info = await this.createSuccessor(s, k, inc, sealed);
      if (info && performance.now() - startedAt <= this.ctx.maxCommitMs) await this.writePointer(s, k, info);
    } catch {
      // The next writer or reader follows the seal (and a writer creates the successor).
      this.ctx.metrics.count('persistenceFailures');
    }
  }

  /**
   * Creates the successor of a sealed log "the same way" whoever does it: its index record (the
   * generation's index with the sealed log added, its marks, the last write ids), then the sealed
   * log's newest records carried over (up to `carryBytes`), so `last: n` reads one log.
   */
  private async createSuccessor(s: string, k: string, inc: string, sealed: LogRef) {
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
  private async createLog(name: string, body: Buffer): Promise<boolean> {
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

  /** The first append of a list: its first log, holding the index record and the items (then the pointer). */
  private async createFirst(
    s: string,
    k: string,
    marker: Marker,
    items: readonly unknown[],
    token: number | undefined,
    wid: string,
  ): Promise<{ result: ListWriteResult } | { tail: Tail | undefined }> {
    const ref: LogRef = { gen: 0, seq: 0, tag: FIRST_TAG };
    const hash = chainHash(EMPTY_HASH, items);
    const info: LogInfo = {
      v: 2,
      format: 'append',
      inc: marker.inc,
      ...ref,
      deleted: false,
      held: 0,
      start: 0,
      startHash: EMPTY_HASH,
      data: 0,
      index: [],
      writes: [],
    };
    if (items.reduce((n: number, item) => n + itemBytes(item), 0) > this.logBytes / 2)
      return this.createPacked(s, k, marker, items, token, wid);
    const own = storedItems(items, (i, tag) => this.layout.listItem(s, k, marker.inc, ref.gen, i, tag));
    await this.createItems(own.objects);
    const prefixes = prefixHashes(items);
    const parts = recordsOf(own.stored, 0, (n) => prefixes[n] as string, 'n', wid);
    const built = buildLog(info, { count: 0, hash: EMPTY_HASH }, token ?? null, parts);
    const name = this.name(s, k, marker.inc, ref);
    try {
      await this.ctx.driver.append(name, built.body, {
        position: 0,
        contentType: NDJSON,
        metadata: { inc: marker.inc },
        tags: { kind: 'state' },
      });
    } catch (error) {
      if (definite(error)) throw error;
      // There already (a concurrent first append, or this one with its answer lost: then it holds
      // this write id), or unknown: read it (the pointer is written if it is missing).
      try {
        return { tail: await this.locate(s, k, marker.inc, { ref, repair: true }, true) };
      } catch (again) {
        if (again instanceof LogGoneError) return { tail: undefined };
        throw again;
      }
    }
    // Answered only once readers can find it.
    await this.writePointer(s, k, built.info);
    return { result: { action: 'created', count: items.length, hash } };
  }

  /**
   * The first write of a list of more than half a log: generation 1 packed as a rewrite packs it
   * (segments, then the first log), committed by creating the first generation's log (position 0:
   * whoever creates it owns the list) as an index record and a seal naming that log, so `last: n`
   * and pages read ~1 MiB objects whatever the first write held.
   */
  private async createPacked(
    s: string,
    k: string,
    marker: Marker,
    items: readonly unknown[],
    token: number | undefined,
    wid: string,
  ): Promise<{ result: ListWriteResult } | { tail: Tail | undefined }> {
    const { inc } = marker;
    const prefixes = prefixHashes(items);
    const count = items.length;
    const hash = prefixes[count] as string;
    const recorded = maxToken(null, token);
    const prepared = this.pack(s, k, inc, 1, items, prefixes, recorded, [[wid, count, hash, 'created']]);
    const ref: LogRef = { gen: 0, seq: 0, tag: FIRST_TAG };
    const built = buildLog(
      this.infoFor(inc, ref, false, 0, EMPTY_HASH, [], []),
      { count: 0, hash: EMPTY_HASH },
      recorded,
      [],
    );
    const state: Trailer = {
      kind: 's',
      count: 0,
      hash: EMPTY_HASH,
      token: recorded,
      wid,
      start: 0,
      indexEnd: built.body.length,
      bytes: 0,
    };
    const body = Buffer.concat([built.body, sealRecord(state, built.body.length, prepared.info)]);
    const cache: RewriteCache = {};
    try {
      await this.createItems(prepared.items);
      await this.createPrepared(prepared, cache);
      try {
        await this.ctx.driver.append(this.name(s, k, inc, ref), body, {
          position: 0,
          contentType: NDJSON,
          metadata: { inc },
          tags: { kind: 'state' },
        });
      } catch (error) {
        if (definite(error)) throw error;
        // Someone else's first write, or this one with its answer lost: landed only if the log
        // ends with this seal. If even that cannot be read, the prepared objects are left to the
        // keep-alive (never deleted while they may be the list).
        const after = await this.tailAt(s, k, inc, ref).catch((again: unknown) => {
          cache.prepared = undefined;
          throw again;
        });
        if (!(after?.last.kind === 's' && after.last.wid === wid)) {
          try {
            return { tail: await this.locate(s, k, inc, { ref, repair: true }, true) };
          } catch (again) {
            if (again instanceof LogGoneError) return { tail: undefined };
            throw again;
          }
        }
      }
      cache.prepared = undefined;
    } finally {
      await this.dropPrepared(cache);
    }
    await this.writePointer(s, k, prepared.info);
    return { result: { action: 'created', count, hash } };
  }

  /** A replay whose id is older than the tail: the whole current log and its index record's ids. */
  private async deepReplay(tail: Tail, wid: string, named: boolean): Promise<ListWriteResult | undefined> {
    const chunk = await this.wholeAt(tail.name);
    if (!chunk) return undefined;
    const found = findWrite(chunk, wid, named);
    if (found) return found;
    const x = parseInfo((chunk.recs[0]?.body ?? Buffer.alloc(0)).toString('utf8'));
    const records = (x?.writes ?? [])
      .map((w) => [w[0], { action: w[3], count: w[1], hash: w[2] }] as const)
      .reverse();
    return recordedAnswer(records, wid, named);
  }

  /** Without an expected hash, a retried append is recognised by the list's tail. */
  private async replayOfTail(
    inc: string,
    tail: Tail,
    options: AppendOptions,
    items: readonly unknown[],
  ): Promise<ListWriteResult | undefined> {
    const { count, hash } = tail.last;
    if (options.expectedHash !== undefined || count !== options.expectedCount + items.length)
      return undefined;
    let span = spanOf(tail.chunk, options.expectedCount, count);
    if (!span || span.offset !== options.expectedCount) {
      const info = await this.infoOf(inc, tail);
      if (options.expectedCount < info.held) return undefined;
      span = await this.spanOfLog(tail, info, options.expectedCount, count, true);
    }
    return span.items.length === items.length && chainHash(span.baseHash, items) === hash
      ? { action: 'unchanged', count, hash }
      : undefined;
  }

  async save(s: string, k: string, items: readonly unknown[], options: ListSave): Promise<ListWriteResult> {
    return this.guard(k, async () => {
      const [read, raw] = await Promise.all([this.sessions.read(s), this.readPointer(s, k)]);
      const inc = read.live?.inc;
      let tail: Tail | undefined;
      let damaged = false;
      try {
        tail = inc ? await this.current(s, k, inc, mine(raw, inc), true) : undefined;
      } catch (error) {
        if (!(error instanceof DamageError)) throw error;
        this.ctx.metrics.count('corruptObjects');
        damaged = true;
      }
      const shown = tail?.last.hash ?? EMPTY_HASH;
      if (options.ifHash !== undefined && !damaged && options.ifHash !== shown)
        throw new ListPreconditionFailedError(shown);
      // Saving [] over an absent list changes nothing: no session is created for it.
      if (items.length === 0 && (tail?.last.count ?? 0) === 0 && !damaged)
        return { action: 'unchanged', count: 0, hash: EMPTY_HASH };
      const marker = await this.sessions.forWrite(s, read, options.fence, (tail?.last.count ?? 0) === 0);
      if (marker.inc !== inc) {
        tail = undefined;
        damaged = false;
      }
      const prefixes = prefixHashes(items);
      const writeId = newWriteId();
      const cache: RewriteCache = {};
      try {
        for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
          const count = tail?.last.count ?? 0;
          const hash = tail?.last.hash ?? EMPTY_HASH;
          if (damaged && options.ifHash !== undefined) throw new DamageError('a damaged list');
          if (options.ifHash !== undefined && options.ifHash !== hash)
            throw new ListPreconditionFailedError(hash);
          await options.fence.check(tail?.last.token);
          if (!damaged && count <= items.length && prefixes[count] === hash) {
            if (count === items.length) return { action: 'unchanged', count, hash };
            try {
              const options2 = { expectedCount: count, expectedHash: hash, fence: options.fence };
              return await this.commitAppend(
                s,
                k,
                marker,
                tail,
                items.slice(count),
                options2,
                writeId,
                false,
              );
            } catch (error) {
              if (!(error instanceof AppendConflictError)) throw error;
            }
          } else {
            // Shrunk, or an earlier item changed: a compaction. The previous list is archived first.
            const done = await this.replace(
              s,
              k,
              marker,
              tail,
              damaged,
              items,
              prefixes,
              options.fence.token,
              writeId,
              cache,
            );
            if ('result' in done) return done.result;
          }
          damaged = false;
          try {
            tail = await this.current(s, k, marker.inc, mine(await this.readPointer(s, k), marker.inc), true);
          } catch (error) {
            if (!(error instanceof DamageError)) throw error;
            damaged = true;
          }
        }
        throw new ContendedError('the list is too contended; nothing was written; retry');
      } finally {
        await this.dropPrepared(cache);
      }
    });
  }

  async remove(s: string, k: string, options: Fenced): Promise<Marker | undefined> {
    const { fence } = options;
    return this.guard(k, async (): Promise<Marker | undefined> => {
      const [read, raw] = await Promise.all([this.sessions.read(s), this.readPointer(s, k)]);
      const inc = read.live?.inc;
      if (!inc) return fence.check().then(() => undefined);
      let tail: Tail | undefined;
      let damaged = false;
      const look = async (pointer: PointerRead) => {
        damaged = false;
        try {
          tail = await this.current(s, k, inc, pointer, true);
        } catch (error) {
          if (!(error instanceof DamageError)) throw error;
          damaged = true;
        }
      };
      await look(mine(raw, inc));
      if (!damaged && (!tail || tail.last.count === 0))
        return fence.check(tail?.last.token).then(() => undefined);
      const marker = await this.sessions.forWrite(s, read, fence, false);
      if (marker.inc !== inc) return undefined;
      const cache: RewriteCache = {};
      try {
        for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
          const at = tail as Tail | undefined;
          await fence.check(at?.last.token);
          const done = await this.replace(
            s,
            k,
            marker,
            at,
            damaged,
            undefined,
            [EMPTY_HASH],
            fence.token,
            newWriteId(),
            cache,
          );
          if ('result' in done) return marker;
          await look(mine(await this.readPointer(s, k), inc));
          const now = tail as Tail | undefined;
          if (!damaged && (!now || now.last.count === 0)) return marker;
        }
        // Never answered as deleted unless it was: under contention, a retryable 409.
        throw new ContendedError('the list is too contended to delete; nothing was deleted; retry');
      } finally {
        await this.dropPrepared(cache);
      }
    });
  }

  async truncate(s: string, k: string, options: ListTruncate): Promise<ListWriteResult> {
    return this.guard(k, async () => {
      const writeId = options.writeId ?? newWriteId();
      const [read, raw] = await Promise.all([this.sessions.read(s), this.readPointer(s, k)]);
      const inc = read.live?.inc;
      let tail = inc ? await this.current(s, k, inc, mine(raw, inc), true) : undefined;
      // Decided on what was read, without a write, before the marker is touched.
      const early = await this.decideTruncate(tail, options, writeId, read.live?.token ?? null);
      if (early) return early;
      const marker = await this.sessions.forWrite(s, read, options.fence, false);
      if (marker.inc !== inc) tail = undefined;
      const cache: RewriteCache = {};
      try {
        for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
          const result = await this.decideTruncate(tail, options, writeId, null);
          if (result) return result;
          const done = await this.cut(s, k, marker, tail as Tail, options, writeId, cache);
          if ('result' in done) return done.result;
          // Lost its seal to another writer (a keep-alive record leaves the list as it was).
          tail = await this.current(s, k, marker.inc, mine(await this.readPointer(s, k), marker.inc), true);
        }
        throw new ContendedError('the list is too contended; nothing was written; retry');
      } finally {
        await this.dropPrepared(cache);
      }
    });
  }

  /**
   * What a truncate answers without writing (the unchanged list; a replay of its write id, looked
   * for only when the list has another hash and the caller named the write), or refuses (fenced,
   * another hash, too few items); undefined when it has items to remove.
   */
  private async decideTruncate(
    tail: Tail | undefined,
    options: ListTruncate,
    writeId: string,
    markerToken: number | null,
  ): Promise<ListWriteResult | undefined> {
    const count = tail?.last.count ?? 0;
    const hash = tail?.last.hash ?? EMPTY_HASH;
    // A replay is answered from its record, before the fence; a named truncate looks for its key
    // in the current log's history (+1 GET) even when the hash matches, so a reused key is caught.
    if (tail && options.writeId !== undefined) {
      const wid = widOf(writeId);
      const replay = findWrite(tail.chunk, wid, true) ?? (await this.deepReplay(tail, wid, true));
      if (replay) return replay;
    }
    await options.fence.check(tail?.last.token, markerToken);
    return checkTruncate(options, count, hash);
  }

  /**
   * Keeps the first `options.count` items: archives the removed ones, creates generation `gen + 1`
   * whose index lists the older logs and segments wholly inside the kept prefix as they are (their
   * names keep their generation), the kept items of the object the cut falls in packed after them
   * as a rewrite packs, then seals the current log naming it (the commit, as for a rewrite). Reads
   * only the object the cut falls in, those after it and the current log. Answers `{ tail }` when
   * its seal lost.
   */
  private async cut(
    s: string,
    k: string,
    marker: Marker,
    tail: Tail,
    options: TruncateOptions,
    writeId: string,
    cache: RewriteCache,
  ): Promise<{ result: ListWriteResult } | { tail: undefined }> {
    const { inc } = marker;
    const keep = options.count;
    const startedAt = performance.now();
    const info = await this.infoOf(inc, tail);
    // The older objects wholly inside the kept prefix stay; the cut falls in object `at` (or, at
    // the index's end, in the current log).
    const at =
      keep >= info.start
        ? info.index.length
        : info.index.findIndex((e) => e.first <= keep && keep < e.first + e.count);
    if (at < 0) throw new DamageError('an index without the cut');
    const kept = info.index.slice(0, at);
    const cutIn = info.index[at];
    const from = cutIn ? cutIn.first : info.start;
    const fromHash = cutIn ? (kept.at(-1)?.hash ?? EMPTY_HASH) : info.startHash;
    // The objects from the cut on, whole (verified against the index), and the current log up to
    // the tail read (its own items and the write ids it keeps).
    const [spans, log] = await Promise.all([
      Promise.all(info.index.slice(at).map((e) => this.readEntry(s, k, inc, e, e.first, e.first + e.count))),
      tail.chunk.lo === 0 ? tail.chunk : this.rangeAt(tail.name, 0, tail.size - 1),
    ]);
    const own = spanOf(log, info.start, tail.last.count);
    if (!own || own.offset !== info.start || own.end !== tail.last.count || own.endHash !== tail.last.hash)
      throw new DamageError('a log whose items do not match its tail');
    let count = from;
    let hash = fromHash;
    const stored: unknown[] = [];
    for (const span of [...spans, own]) {
      if (span.offset !== count || span.baseHash !== hash)
        throw new DamageError('an object that does not continue the chain');
      stored.push(...span.items);
      count = span.end;
      hash = span.endHash;
    }
    const keptItems = stored.slice(0, keep - from);
    const removed = await this.resolve({ items: stored.slice(keep - from) });
    const prefixes = storedPrefixes(keptItems, fromHash);
    const next = prefixes[keptItems.length] as string;
    // The removed items are archived before the seal that drops them (with the new generation).
    const archive = this.archives.write(
      s,
      k,
      inc,
      tail.ref.gen,
      { items: removed.items, count: removed.items.length, hash: chainHash(EMPTY_HASH, removed.items) },
      keep,
    );
    archive.catch(() => undefined);
    const gen = tail.ref.gen + 1;
    if (cache.prepared && cache.prepared.gen !== gen) await this.dropPrepared(cache);
    let prepared = cache.prepared;
    if (!prepared) {
      const wid = widOf(writeId);
      const writes = [...writesOf(indexOf(log, inc, tail.ref), log), [wid, keep, next, 'truncated'] as const];
      prepared = this.packStored(s, k, inc, gen, {
        stored: keptItems,
        from,
        prefixes,
        token: maxToken(tail.last.token, options.token),
        writes: writes.slice(-KEPT_WRITES),
        kept,
        keepsFrom: info.keepsFrom ?? info.gen,
        action: 'truncated',
      });
      await this.createPrepared(prepared, cache);
    }
    await archive;
    if (performance.now() - startedAt > this.ctx.maxCommitMs)
      throw new BackendError('list write took too long between read and commit; retry', true);
    if (!(await this.seal(s, k, inc, tail, options.token, writeId, prepared, cache)))
      return { tail: undefined };
    cache.prepared = undefined;
    await this.writePointer(s, k, prepared.info).catch(() => this.ctx.metrics.count('persistenceFailures'));
    return { result: prepared.result };
  }

  /**
   * Replaces the list (`items`) or deletes it (undefined): archives what it holds, creates the
   * next generation (segments create-only, its first log at position 0), then seals the current
   * log naming it, at the position read: the seal is the commit (whoever appends first wins). A
   * damaged chain is not sealed: the pointer moves past it. Answers `{ tail }` when it lost.
   */
  private async replace(
    s: string,
    k: string,
    marker: Marker,
    tail: Tail | undefined,
    damaged: boolean,
    items: readonly unknown[] | undefined,
    prefixes: readonly string[],
    token: number | undefined,
    writeId: string,
    cache: RewriteCache,
  ): Promise<{ result: ListWriteResult } | { tail: undefined }> {
    const { inc } = marker;
    const startedAt = performance.now();
    let writes: readonly WriteRecord[] = [];
    if (tail && !damaged) {
      const content = await this.contentOf(s, k, inc, tail, cache.content);
      cache.content = content;
      writes = content.writes;
      if (content.count > 0) await this.archives.write(s, k, inc, tail.ref.gen, await this.resolve(content));
    }
    // A damaged chain is replaced in a generation above any it can have had.
    const gen = damaged || !tail ? Math.max(this.ctx.now(), (tail?.ref.gen ?? 0) + 1) : tail.ref.gen + 1;
    if (cache.prepared && cache.prepared.gen !== gen) await this.dropPrepared(cache);
    let prepared = cache.prepared;
    if (!prepared) {
      prepared = this.pack(
        s,
        k,
        inc,
        gen,
        items,
        prefixes,
        maxToken(tail?.last.token ?? null, token),
        writes,
      );
      // Item objects first (never deleted with a rewrite that lost: a winner of the same generation
      // may name the same ones; they go with their generation, see `keepList`).
      await this.createItems(prepared.items);
      await this.createPrepared(prepared, cache);
    }
    if (performance.now() - startedAt > this.ctx.maxCommitMs)
      throw new BackendError('list write took too long between read and commit; retry', true);
    if (tail && !damaged) {
      if (!(await this.seal(s, k, inc, tail, token, writeId, prepared, cache))) return { tail: undefined };
      await this.writePointer(s, k, prepared.info).catch(() => this.ctx.metrics.count('persistenceFailures'));
    } else await this.writePointer(s, k, prepared.info);
    cache.prepared = undefined;
    if (items) this.ctx.metrics.count('listRewrites');
    await this.materialize(s, k, inc, prepared.info, prepared.result, items ?? []).catch(() =>
      this.ctx.metrics.count('persistenceFailures'),
    );
    return { result: prepared.result };
  }

  /**
   * The commit of a rewrite or a truncate: a seal naming the `prepared` generation
   * appended to the current log at the position read. False when it lost to another writer. On an
   * unknown outcome it landed only if the log ends with this seal; if even that cannot be read, the
   * prepared objects are left to the keep-alive (never deleted while they may be the list).
   */
  private async seal(
    s: string,
    k: string,
    inc: string,
    tail: Tail,
    token: number | undefined,
    writeId: string,
    prepared: Prepared,
    cache: RewriteCache,
  ): Promise<boolean> {
    const wid = widOf(writeId);
    const state = { ...tail.last, token: maxToken(tail.last.token, token), wid };
    try {
      await this.ctx.driver.append(tail.name, sealRecord(state, tail.size, prepared.info), {
        position: tail.size,
      });
      return true;
    } catch (error) {
      if (definite(error)) throw error;
      const after = await this.tailAt(s, k, inc, tail.ref).catch((again: unknown) => {
        cache.prepared = undefined;
        throw again;
      });
      return after?.last.kind === 's' && after.last.wid === wid;
    }
  }

  /** What the list holds, for its archive: from the last attempt's content when only the tail grew. */
  private async contentOf(s: string, k: string, inc: string, tail: Tail, cached?: Whole): Promise<Whole> {
    if (cached && sameRef(cached.ref, tail.ref) && cached.count <= tail.last.count) {
      const span = spanOf(tail.chunk, cached.count, tail.last.count);
      if (span && span.offset === cached.count && span.baseHash === cached.hash) {
        const grown = tail.chunk.recs.filter((r) => r.at >= cached.size && ITEM_KINDS.has(r.kind) && r.wid);
        return {
          items: [...cached.items, ...span.items],
          count: span.end,
          hash: span.endHash,
          writes: [...cached.writes, ...grown.map(writeOf)].slice(-KEPT_WRITES),
          ref: tail.ref,
          size: tail.size,
        };
      }
    }
    return this.readWhole(s, k, inc, await this.infoOf(inc, tail));
  }

  /** Creates a prepared generation's segments and first log (create-only), recorded in `cache`. */
  private async createPrepared(prepared: Prepared, cache: RewriteCache): Promise<void> {
    cache.prepared = prepared;
    await Promise.all(
      prepared.objects.map((o) =>
        o.appendable
          ? this.createLog(o.name, o.body)
          : this.ctx.driver
              .put(o.name, o.body, { contentType: NDJSON, tags: { kind: 'state' }, ifNoneMatch: '*' })
              .catch((error: unknown) => {
                if (!(error instanceof ObjectConditionFailedError)) throw error;
              }),
      ),
    );
  }

  /** Deletes the objects of a rewrite that did not land (nothing names them). */
  private async dropPrepared(cache: RewriteCache): Promise<void> {
    const prepared = cache.prepared;
    cache.prepared = undefined;
    if (!prepared) return;
    await Promise.all(
      prepared.objects.map((o) =>
        this.ctx.driver.delete(o.name).catch(() => this.ctx.metrics.count('persistenceFailures')),
      ),
    );
  }

  /**
   * The objects of a new generation holding `items` (none: a deleted list): the older items packed
   * into normal segments of at least a log's worth each, the newest (up to half a log) in its
   * first, appendable log, whose index lists the segments.
   */
  private pack(
    s: string,
    k: string,
    inc: string,
    gen: number,
    items: readonly unknown[] | undefined,
    prefixes: readonly string[],
    token: number | null,
    writes: readonly WriteRecord[],
  ): Prepared {
    const own = storedItems(items ?? [], (i, leaf) => this.layout.listItem(s, k, inc, gen, i, leaf));
    return {
      ...this.packStored(s, k, inc, gen, {
        stored: items === undefined ? undefined : own.stored,
        from: 0,
        prefixes,
        token,
        writes,
        kept: [],
        action: 'rewritten',
      }),
      items: own.objects,
    };
  }

  /**
   * A new generation from items as stored (`stored`; none: a deleted list), numbered from `from`
   * (`prefixes[i]`: the chain hash before item `from + i`), after the older objects `kept` (a
   * truncate's, contiguous from item 0 to `from`): the items packed into normal segments of at
   * least a log's worth each, the newest (up to half a log) in its first, appendable log, whose
   * index lists `kept` and the segments. Creates no item objects (`items` is empty).
   */
  private packStored(
    s: string,
    k: string,
    inc: string,
    gen: number,
    o: {
      readonly stored: readonly unknown[] | undefined;
      readonly from: number;
      readonly prefixes: readonly string[];
      readonly token: number | null;
      readonly writes: readonly WriteRecord[];
      readonly kept: readonly Entry[];
      readonly keepsFrom?: number;
      readonly action: 'rewritten' | 'truncated';
    },
  ): Prepared {
    const { from, prefixes, token } = o;
    const tag = randomBytes(4).toString('hex');
    const list = o.stored ?? [];
    const sizes = list.map(itemBytes);
    const at = (i: number) => (n: number) => prefixes[i + n] as string;
    let split = list.length;
    for (let b = 0; split > 0 && b + (sizes[split - 1] as number) <= this.logBytes / 2; split--)
      b += sizes[split - 1] as number;
    const objects: Array<{ name: string; body: Buffer; appendable: boolean }> = [];
    const index: Entry[] = [...o.kept];
    let seq = 0;
    for (let i = 0; i < split; seq++) {
      let end = i;
      for (let b = 0; end < split && b < this.logBytes; end++) b += sizes[end] as number;
      const ref: LogRef = { gen, seq, tag };
      const base = { count: from + i, hash: prefixes[i] as string };
      const info = this.infoFor(inc, ref, false, from + i, base.hash, [], []);
      const built = buildLog(info, base, token, recordsOf(list.slice(i, end), from + i, at(i), 'r', ''));
      const chunk = parseChunk(built.body, 0, built.body.length);
      index.push({
        ...ref,
        first: from + i,
        count: end - i,
        hash: prefixes[end] as string,
        bytes: built.body.length,
        data: built.info.data,
        marks: marksOf(chunk, from + i, built.info.data, this.markBytes),
      });
      objects.push({ name: this.name(s, k, inc, ref), body: built.body, appendable: false });
      i = end;
    }
    const ref: LogRef = { gen, seq, tag };
    const info: LogInfo = {
      ...this.infoFor(
        inc,
        ref,
        o.stored === undefined,
        from + split,
        prefixes[split] as string,
        index,
        o.writes,
      ),
      ...(o.keepsFrom !== undefined ? { keepsFrom: o.keepsFrom } : {}),
    };
    const base = { count: from + split, hash: prefixes[split] as string };
    const built = buildLog(info, base, token, recordsOf(list.slice(split), from + split, at(split), 'r', ''));
    objects.push({ name: this.name(s, k, inc, ref), body: built.body, appendable: true });
    const count = from + list.length;
    const hash = prefixes[list.length] as string;
    return {
      gen,
      objects,
      items: [],
      info: built.info,
      result: o.stored
        ? { action: o.action, count, hash }
        : { action: 'unchanged', count: 0, hash: EMPTY_HASH },
    };
  }

  private infoFor(
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

  /** `.list.json`, the reference's whole array, after a rewrite (removed with the list); only with `listJson: 'reference'`. */
  private async materialize(
    s: string,
    k: string,
    inc: string,
    info: LogInfo,
    result: ListWriteResult,
    items: readonly unknown[],
  ) {
    if (this.ctx.listJson !== 'reference') return;
    if (items.length === 0) {
      await this.ctx.driver.delete(this.layout.listJson(s, k));
      return;
    }
    await this.ctx.driver.put(this.layout.listJson(s, k), jsonBody(items), {
      contentType: 'application/json',
      metadata: { inc, gen: String(info.gen), count: String(result.count), hash: result.hash },
      tags: { kind: 'state' },
    });
  }

  // ---- keep-alive (sessions.ts calls it with the marker's refresh, at most once per R) ------------

  async keep(
    s: string,
    inc: string,
    objects: readonly ListedObject[],
    cutoff: number,
  ): Promise<ReadonlySet<string>> {
    const marks = ['.list~l~', '.list~i~'];
    const logs = objects.filter((o) => marks.some((mark) => o.key.includes(mark)));
    const byList = new Map<string, ListedObject[]>();
    for (const o of logs) {
      const base = o.key.slice(0, Math.max(...marks.map((mark) => o.key.lastIndexOf(mark))));
      byList.set(base, [...(byList.get(base) ?? []), o]);
    }
    const session = this.layout.session(s);
    for (const [base, group] of byList) {
      try {
        await this.keepList(s, decodeId('key', base.slice(session.length)), inc, group, cutoff);
      } catch {
        // The next keep-alive tries again (a list damaged or changing meanwhile).
        this.ctx.metrics.count('persistenceFailures');
      }
    }
    return new Set(logs.map((o) => o.key));
  }

  /**
   * One list: its current log gets a keep-alive record when idle past the cutoff; an older log or
   * segment past it is refreshed (a sealed log once stored again as a normal object, the same
   * bytes; a normal one copied onto itself); objects no chain names (superseded generations,
   * rewrites that lost) go once older than `retireAfterMs`; so do item objects of another
   * generation than the current one (those of the current one are refreshed like segments).
   */
  private async keepList(s: string, k: string, inc: string, group: readonly ListedObject[], cutoff: number) {
    const pointer = mine(await this.readPointer(s, k), inc);
    const tail = await this.current(s, k, inc, pointer, true);
    if (!tail) return;
    const info = await this.infoOf(inc, tail);
    const live = new Set([tail.name, ...info.index.map((e) => this.name(s, k, inc, e))]);
    const prefix = `${this.layout.logs(s, k)}${inc}~`;
    const itemPrefix = this.layout.listItem(s, k, inc, 0, 0, '').replace(/~\d{16}~\d{16}~$/, '~');
    const { driver } = this.ctx;
    for (const o of group) {
      if (o.key.startsWith(itemPrefix)) {
        const gen = /^(\d{16})~\d{16}~[0-9a-f]{12}$/.exec(o.key.slice(itemPrefix.length))?.[1];
        if (gen === undefined) continue;
        // A truncate's generation still references the item objects of the generations it kept.
        if (Number(gen) <= tail.ref.gen && Number(gen) >= (info.keepsFrom ?? tail.ref.gen)) {
          if (o.lastModified.getTime() < cutoff) await driver.copy(o.key, o.key, { tags: { kind: 'state' } });
        } else if (this.ctx.now() - o.lastModified.getTime() > this.ctx.retireAfterMs)
          await driver.delete(o.key);
        continue;
      }
      if (!o.key.startsWith(prefix) || !parseLogName(o.key.slice(prefix.length))) continue;
      const old = o.lastModified.getTime() < cutoff;
      if (o.key === tail.name) {
        if (old) await this.keepAliveRecord(tail);
      } else if (live.has(o.key)) {
        if (old) await this.refreshSegment(o.key);
      } else if (this.ctx.now() - o.lastModified.getTime() > this.ctx.retireAfterMs) {
        await driver.delete(o.key);
      }
    }
  }

  /** An empty record at the end of an idle log: its last-modified time moves, nothing else. */
  private async keepAliveRecord(tail: Tail): Promise<void> {
    const record = encodeRecord(Buffer.alloc(0), { ...tail.last, kind: 'k', wid: '', start: tail.size });
    try {
      await this.ctx.driver.append(tail.name, record, { position: tail.size });
    } catch (error) {
      // Appended to meanwhile: then it is fresh.
      if (!(error instanceof ObjectConditionFailedError)) throw error;
    }
  }

  private async refreshSegment(name: string): Promise<void> {
    const { driver } = this.ctx;
    const head = await driver.head(name);
    if (!head.appendable) {
      await driver.copy(name, name, { tags: { kind: 'state' } });
      return;
    }
    // A sealed log cannot be copied (OSS refuses appendable sources): stored again as a normal
    // object with the same bytes (it never changes once sealed; a late append to it fails).
    const object = await driver.get(name);
    const chunk = parseChunk(Buffer.from(object.body), 0, object.size);
    if (chunk.recs.at(-1)?.kind !== 's') return;
    await driver.put(name, object.body, { contentType: NDJSON, tags: { kind: 'state' } });
  }
}

// ---- pure helpers ----------------------------------------------------------------------------

/** The 16 hex digits a trailer keeps of a write id: a record id (`recordId`) as it is, any other id hashed. */
function widOf(writeId: string): string {
  return RECORD_ID.test(writeId) ? writeId : createHash('sha256').update(writeId).digest('hex').slice(0, 16);
}

/**
 * Items (stored forms) as records of at most `PACK_RECORD_BYTES` of lines each (an item alone may
 * be bigger), so every range of a log parses from a trailer within that much; `first` is the
 * count before them, `hashAfter(n)` the chain hash after n of them. A write's id (`wid`) is on
 * its last record, and a write of no items is one empty record.
 */
function recordsOf(
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

function itemLines(items: readonly unknown[]): Buffer {
  return Buffer.from(items.map((item) => `${jsonBody(item)}\n`).join(''), 'utf8');
}

/** An error after which the write surely did not happen (any other may have landed). */
function definite(error: unknown): boolean {
  return (
    error instanceof ObjectStoreError && !error.retryable && !(error instanceof ObjectConditionFailedError)
  );
}

/** Just the name fields of a log reference (an info or a tail carries much more). */
function refOf(ref: LogRef): LogRef {
  return { gen: ref.gen, seq: ref.seq, tag: ref.tag };
}

function sameRef(a: LogRef, b: LogRef): boolean {
  return a.gen === b.gen && a.seq === b.seq && a.tag === b.tag;
}

/** True when `a` is a later log than `b` (a later generation, or later in the same one). */
function later(a: LogRef, b: LogRef): boolean {
  return a.gen > b.gen || (a.gen === b.gen && a.tag === b.tag && a.seq > b.seq);
}

function groupOf(ref: LogRef): string {
  return `${ref.gen}~${ref.tag}`;
}

/** What the pointer holds, seen from incarnation `inc`: one of another incarnation is a leftover. */
function mine(pointer: PointerRead, inc: string | undefined): PointerRead {
  if (pointer.corrupt || !pointer.info) return pointer;
  return pointer.info.inc === inc ? pointer : {};
}

function entryAt(info: LogInfo, item: number): Entry | undefined {
  return info.index.find((e) => e.first <= item && item < e.first + e.count);
}

function parseLogName(tail: string): LogRef | undefined {
  const match = /^(\d{16})~(\d{16})~([0-9a-z]{1,16})$/.exec(tail);
  return match ? { gen: Number(match[1]), seq: Number(match[2]), tag: match[3] as string } : undefined;
}

function digits(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/** A seal record at `start` after the state `after`, naming `successor`. */
function sealRecord(after: Trailer, start: number, successor: LogRef): Buffer {
  const { gen, seq, tag } = successor;
  const body = Buffer.from(`${JSON.stringify({ successor: { gen, seq, tag } })}\n`, 'utf8');
  return encodeRecord(body, { ...after, kind: 's', start });
}

/** A record: its body, then its trailer (whose checksum covers both). */
function encodeRecord(body: Buffer, t: Trailer): Buffer {
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
function parseChunk(buf: Buffer, lo: number, size: number): Chunk {
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

function parseItems(body: Buffer): unknown[] {
  const text = body.toString('utf8');
  if (text === '') return [];
  if (!text.endsWith('\n')) throw new DamageError('an item record without its last line');
  try {
    return text
      .slice(0, -1)
      .split('\n')
      .map((line) => JSON.parse(line) as unknown);
  } catch (error) {
    throw new DamageError('an item that is not JSON', { cause: error });
  }
}

/**
 * Items `[from, to)` of a chunk, from the first it holds after a known base at or after `from`,
 * each record's items checked against its trailer's count and chain hash; undefined when the
 * chunk holds nothing with a known base up to `from`.
 */
function spanOf(chunk: Chunk, from: number, to: number): Span | undefined {
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
function indexOf(chunk: Chunk, inc: string, ref: LogRef): LogInfo {
  const first = chunk.recs[0];
  if (chunk.lo !== 0 || first?.kind !== 'x' || !first.body) throw new DamageError('a log without its index');
  const info = parseInfo(first.body.toString('utf8'));
  if (!info || info.inc !== inc || !sameRef(info, ref) || info.held !== first.count)
    throw new DamageError('an index record of another log');
  return info;
}

/** The write records of a log: those its index record keeps, then its own records'. */
function writesOf(x: LogInfo, chunk: Chunk): WriteRecord[] {
  const own = chunk.recs.filter((r) => r.at >= x.data && ITEM_KINDS.has(r.kind) && r.wid);
  return [...(x.writes ?? []), ...own.map(writeOf)].slice(-KEPT_WRITES);
}

function writeOf(r: Trailer): WriteRecord {
  return [r.wid, r.count, r.hash, ACTIONS[r.kind] as ListAction];
}

/** The answer a write recorded in a chunk's trailers, if its id is there. */
function findWrite(chunk: Chunk, wid: string, named: boolean): ListWriteResult | undefined {
  const records = chunk.recs
    .filter((rec) => rec.wid && ITEM_KINDS.has(rec.kind))
    .map((r) => [r.wid, { action: ACTIONS[r.kind] as ListAction, count: r.count, hash: r.hash }] as const)
    .reverse();
  return recordedAnswer(records, wid, named);
}

function successorOf(seal: Rec): LogRef {
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
function marksOf(chunk: Chunk, start: number, data: number, every: number): Array<[number, number]> {
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
function buildLog(
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

/** The index record or pointer in a text, or undefined when it is not one. */
function parseInfo(text: string): LogInfo | undefined {
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
