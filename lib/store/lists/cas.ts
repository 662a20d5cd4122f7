/**
 * The CAS list format (docs/DESIGN.md, "Lists", "CAS format"), for backends whose PUT takes
 * `If-Match` (S3, Ceph RGW, fs, memory).
 *
 * The head `<key>.list.hash` is the one authority and changes only by a compare-and-swap on its
 * etag (`If-None-Match: *` for the first write). It holds the count, the chain hash, the highest
 * fencing token, the most recent items (`headBytes` at most, about `headBytes − sealBytes` at
 * least), the last 64 write ids, the sealed segments (immutable, create-only, content-addressed)
 * and the retired ones. Segments merge in levels (×4 from `sealBytes` up to 64 × `sealBytes`),
 * each call reading at most two of them, so a whole read needs few objects and bytes rewritten per
 * item stay bounded. Every head write carries a write id: after a lost answer, a 412 or (Ceph RGW)
 * a 5xx, the head is read again, and the id there means the write landed.
 */

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
import { checkPage } from '../../contract/turns.js';
import type { ListPage, ListWriteResult, PageOptions } from '../../contract/types.js';
import { ObjectConditionFailedError, ObjectNotFoundError, ObjectStoreError } from '../../drivers/errors.js';
import type { ListedObject } from '../../drivers/types.js';
import { BACKOFF, backoff } from '../../util/backoff.js';
import { getOrUndefined, MAX_WRITE_ATTEMPTS, type StoreContext } from '../context.js';
import type { UserLayout } from '../layout.js';
import type { Marker, MarkerRead, Sessions, StateKeeper } from '../sessions.js';
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
import { ITEM_REF, isItemRef, resolveItem, storedChain, storedItems, storedPrefixes } from './items.js';

/** The most bytes one write record takes in a head (`[id, count, hash, action]`, an id of 64 at most). */
const WRITE_RECORD_BYTES = 176;

/** Merge levels above the sealed chunk: ×4 each, so 4 MiB segments from 64 KiB seals. */
const LEVELS = 3;
const LEVEL_FACTOR = 4;
/**
 * Index entries of a segment are at most this many seals apart (384 KiB by default): a page read
 * from a segment reads at most this much before and after it, and with the head stays under the
 * page + 1 MiB.
 */
const INDEX_SEALS = 6;
/** Retired segments a head keeps waiting for `retireAfterMs`; older ones go at the next chance. */
const RETIRED_KEPT = 8;

/** `[writeId, count after, hash after, action]`: what a replay of the write answers. */
type WriteRecord = [string, number, string, ListWriteResult['action']];

/** A sealed segment, as the head lists it. */
interface SegmentRef {
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
   * never merged again (docs/DESIGN.md, "Levels").
   */
  readonly packed?: true;
}

/** The head of a list (the JSON body of `<key>.list.hash`). */
interface Head {
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
interface SegmentHeader {
  readonly v: 2;
  readonly first: number;
  readonly count: number;
  readonly baseHash: string;
  readonly hash: string;
  /** `[item number, offset into the items, chain hash before it]`, at most `indexBytes` apart. */
  readonly index: Array<[number, number, string]>;
}

/** A segment in memory: its header and its item lines (one JSON text and `\n` per item). */
interface Segment {
  readonly header: SegmentHeader;
  readonly data: Buffer;
}

/** What is stored under the head's name. */
interface Current {
  /** The head of this incarnation (a deleted one too); undefined when absent or a leftover. */
  readonly head?: Head;
  /** The etag of the object there, whatever it is (the CAS is on it). */
  readonly etag?: string;
  /** The object there cannot be read as a head. */
  readonly corrupt?: boolean;
  /** When the object there was written. */
  readonly modified?: Date;
}

/** What a write decided: the head to write (and the segments it needs first), or an answer. */
type Plan =
  | { readonly result: ListWriteResult; readonly next?: undefined }
  | {
      readonly result: ListWriteResult;
      readonly next: Head;
      readonly segments: ReadonlyArray<{ readonly name: string; readonly body: Buffer }>;
      /** Retired segments to delete once the head is written. */
      readonly drop: readonly string[];
      /** Written with the segments, before the head (a truncate's archive). */
      readonly before?: () => Promise<void>;
      readonly after?: () => Promise<void>;
    };

/** What `maintain` did: the head with its new segments, the segments to create, the segments it read. */
interface Maintenance {
  readonly next: Head;
  readonly segments: ReadonlyArray<{ readonly name: string; readonly body: Buffer }>;
  readonly reads: number;
}

/** Most requests a sealing or merging call makes (marker, head, 2 reads, segment, head). */
const MAX_CALL_REQUESTS = 6;

/** A segment vanished under a read (a concurrent session delete or retirement): read again. */
class SegmentGoneError extends Error {}

export class CasFormat implements ListFormat, StateKeeper {
  private readonly archives: Archives;
  private readonly sealBytes: number;
  private readonly headBytes: number;
  private readonly indexBytes: number;

  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
    private readonly sessions: Sessions,
  ) {
    this.archives = new Archives(ctx, layout);
    this.sealBytes = ctx.listSealBytes;
    this.headBytes = ctx.listHeadBytes;
    this.indexBytes = INDEX_SEALS * ctx.listSealBytes;
    sessions.keeper = this;
  }

  /**
   * With the session's keep-alive (at most once per interval): brings `.list.json` up to date for
   * each list whose materialization lags its head. Owns no object (the generic keep-alive refreshes
   * heads and segments).
   */
  async keep(s: string, inc: string, objects: readonly ListedObject[]): Promise<ReadonlySet<string>> {
    if (this.ctx.listJson !== 'reference') return new Set();
    const folder = this.layout.session(s);
    for (const object of objects) {
      const segment = object.key.slice(folder.length);
      if (!segment.endsWith('.list.hash') || segment.includes('/')) continue;
      let k: string;
      try {
        k = decodeId('key', segment.slice(0, -'.list.hash'.length));
      } catch {
        continue; // not a name this store wrote
      }
      await this.materializeIfLagging(s, k, inc).catch(() => this.ctx.metrics.count('persistenceFailures'));
    }
    return new Set();
  }

  private async materializeIfLagging(s: string, k: string, inc: string): Promise<void> {
    const [current, json] = await Promise.all([
      this.readCurrent(s, k),
      this.ctx.driver.head(this.layout.listJson(s, k)).catch((error: unknown) => {
        if (error instanceof ObjectNotFoundError) return undefined;
        throw error;
      }),
    ]);
    const head = mine(current, inc).head;
    if (!head || head.deleted) return;
    const stamp = json?.metadata;
    if (stamp?.inc === inc && stamp.count === String(head.count) && stamp.hash === head.hash) return;
    const whole = await this.resolve(k, await this.pageOf(s, k, head, {}));
    await this.materialize(s, k, inc, head, whole.items);
  }

  // ---- reading -------------------------------------------------------------------------------

  /** The object under the head's name (of any incarnation: see `mine`). */
  private async readCurrent(s: string, k: string, again = true): Promise<Current> {
    const object = await getOrUndefined(this.ctx.driver, this.layout.listHash(s, k));
    if (!object) return {};
    // A body shorter than the object is a read that broke off, not damage: retryable.
    if (object.body.byteLength !== object.size) throw new BackendError(`short read of ${object.key}`, true);
    const head = parseHead(object.body);
    // A head that does not parse is read once more before it counts as damaged (a read can break off
    // where the driver cannot tell).
    if (!head && again) return this.readCurrent(s, k, false);
    if (!head) {
      this.ctx.metrics.count('corruptObjects');
      return { etag: object.etag, corrupt: true };
    }
    return { head, etag: object.etag, modified: object.lastModified };
  }

  /** The head alone (one GET): count, hash and when it was written. */
  async stat(s: string, k: string, inc: string): Promise<ListStat | undefined> {
    const current = mine(await this.readCurrent(s, k), inc);
    if (current.corrupt) throw new CorruptValueError(k);
    const head = current.head;
    if (!head || head.deleted) return undefined;
    return { count: head.count, hash: head.hash, lastModified: current.modified ?? new Date(0) };
  }

  async read(s: string, k: string, page: PageOptions, marker?: Promise<MarkerRead>): Promise<ListPage> {
    checkPage(page);
    for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
      const [read, raw] = await Promise.all([
        attempt === 0 && marker ? marker : this.sessions.read(s),
        this.readCurrent(s, k),
      ]);
      if (!read.live) return emptyPage();
      const current = mine(raw, read.live.inc);
      // A damaged head fails this list only.
      if (current.corrupt) throw new CorruptValueError(k);
      const head = current.head;
      if (!head || head.deleted) return emptyPage();
      try {
        return await this.resolve(k, await this.pageOf(s, k, head, page));
      } catch (error) {
        if (!(error instanceof SegmentGoneError)) throw error;
      }
    }
    this.ctx.metrics.count('corruptObjects');
    throw new CorruptValueError(k);
  }

  /** The page with its items as they were sent: items stored as objects of their own are read (in parallel). */
  private async resolve(k: string, page: ListPage): Promise<ListPage> {
    const items = await Promise.all(
      page.items.map(async (item) => {
        const got = await resolveItem(this.ctx.driver, item);
        if ('gone' in got) throw new SegmentGoneError();
        if ('corrupt' in got) {
          this.ctx.metrics.count('corruptObjects');
          throw new CorruptValueError(k);
        }
        return got.value;
      }),
    );
    return { ...page, items };
  }

  /**
   * A page from the head and at most one segment (a page that would need two is cut at a segment
   * end), its items as stored (see `resolve`).
   */
  private async pageOf(_s: string, k: string, head: Head, page: PageOptions): Promise<ListPage> {
    const { from, to, keep } = rangeOf(page, head.count);
    const answer = (items: unknown[], offset: number, baseHash: string): ListPage => ({
      items,
      count: head.count,
      hash: head.hash,
      offset,
      baseHash,
    });
    if (from >= head.base) {
      const items = head.items.slice(from - head.base, to - head.base);
      return answer(items, from, storedChain(head.baseHash, head.items.slice(0, from - head.base)));
    }
    if (page.limit === undefined && page.last === undefined && from === 0) {
      const segments = await Promise.all(head.segments.map((ref) => this.readSegment(k, ref)));
      const items = segments.flatMap((segment) => parseItems(segment.data, k));
      this.verify(k, EMPTY_HASH, items, head.baseHash);
      return answer(items.concat(head.items), 0, EMPTY_HASH);
    }
    // The one segment the page reads: where it starts, or (for `last`) the newest one it reaches.
    const refs = head.segments;
    const index =
      keep === 'new'
        ? refs.length - 1
        : refs.findIndex((ref) => ref.first <= from && from < ref.first + ref.count);
    const ref = refs[index];
    if (!ref) throw new CorruptValueError(k);
    const start = Math.max(from, ref.first);
    const end = Math.min(to, ref.first + ref.count);
    const part = await this.readRange(k, ref, refs[index - 1]?.hash ?? EMPTY_HASH, start, end);
    const items =
      end === head.base && to > head.base
        ? part.items.concat(head.items.slice(0, to - head.base))
        : part.items;
    return answer(items, start, part.baseHash);
  }

  /** A whole segment, checked against its reference. */
  private async readSegment(k: string, ref: SegmentRef): Promise<Segment> {
    const object = await getOrUndefined(this.ctx.driver, ref.name);
    if (!object) throw new SegmentGoneError();
    if (object.body.byteLength !== object.size) throw new BackendError(`short read of ${ref.name}`, true);
    const segment = splitSegment(Buffer.from(object.body));
    const header = segment?.header;
    if (!segment || header?.first !== ref.first || header.count !== ref.count || header.hash !== ref.hash) {
      this.ctx.metrics.count('corruptObjects');
      throw new CorruptValueError(k);
    }
    return segment;
  }

  /** Items `[start, end)` of a segment whose chain starts at `baseHash`, with the hash before `start`. */
  private async readRange(k: string, ref: SegmentRef, baseHash: string, start: number, end: number) {
    const { driver } = this.ctx;
    if (ref.bytes <= this.indexBytes) {
      const items = parseItems((await this.readSegment(k, ref)).data, k);
      this.verify(k, baseHash, items, ref.hash);
      const at = start - ref.first;
      return { items: items.slice(at, end - ref.first), baseHash: storedChain(baseHash, items.slice(0, at)) };
    }
    const top = await getRange(driver, ref.name, 0, ref.data - 1);
    const header = parseHeader(top.subarray(0, top.indexOf(10)));
    if (header?.first !== ref.first || header.count !== ref.count || header.hash !== ref.hash) {
      this.ctx.metrics.count('corruptObjects');
      throw new CorruptValueError(k);
    }
    const entries = header.index;
    const from = entries.findLast((entry) => entry[0] <= start) ?? entries[0];
    const upto = entries.find((entry) => entry[0] >= end);
    if (!from) throw new CorruptValueError(k);
    const last = (upto?.[1] ?? ref.bytes - ref.data) - 1;
    const items =
      last < from[1]
        ? []
        : parseItems(await getRange(driver, ref.name, ref.data + from[1], ref.data + last), k);
    this.verify(k, from[2], items, upto?.[2] ?? ref.hash);
    const at = start - from[0];
    return { items: items.slice(at, end - from[0]), baseHash: storedChain(from[2], items.slice(0, at)) };
  }

  private verify(k: string, from: string, items: readonly unknown[], expected: string): void {
    if (storedChain(from, items) !== expected) {
      this.ctx.metrics.count('corruptObjects');
      throw new CorruptValueError(k);
    }
  }

  // ---- writing -------------------------------------------------------------------------------

  async append(
    s: string,
    k: string,
    items: readonly unknown[],
    options: ListAppend,
  ): Promise<ListWriteResult> {
    const writeId = options.writeId ?? newWriteId();
    const [read, raw] = await Promise.all([this.sessions.read(s), this.readCurrent(s, k)]);
    const seen = mine(raw, read.live?.inc).head;
    // A replay is answered from its record, before the fence (docs/DESIGN.md, "The write path").
    const landed = options.writeId === undefined ? undefined : recorded(seen, writeId, true);
    if (landed) return landed;
    const marker = await this.sessions.forWrite(s, read, options.fence, !seen || seen.deleted);
    return this.appendOn(s, k, items, options, writeId, marker, raw);
  }

  /** The pre-read of a commit (lib/store/commits.ts): the head alone, one GET. */
  async peek(s: string, k: string, marker: Promise<MarkerRead>): Promise<ListPeek> {
    const [read, raw] = await Promise.all([marker, this.readCurrent(s, k)]);
    const current = mine(raw, read.live?.inc);
    if (current.corrupt) throw new CorruptValueError(k);
    const head = current.head;
    const live = head && !head.deleted ? head : undefined;
    const peek: ListPeek = {
      count: live?.count ?? 0,
      hash: live?.hash ?? EMPTY_HASH,
      token: head?.token ?? null,
      creates: !live,
      recorded: async (writeId) => recorded(head, writeId, true),
    };
    this.peeked.set(peek, raw);
    return peek;
  }

  /** What `peek` read, for `appendPeeked`. */
  private readonly peeked = new WeakMap<ListPeek, Current>();

  async appendPeeked(
    s: string,
    k: string,
    items: readonly unknown[],
    options: ListAppend & { readonly writeId: string },
    marker: Marker,
    peek: ListPeek,
  ): Promise<ListWriteResult> {
    const raw = this.peeked.get(peek) ?? (await this.readCurrent(s, k));
    return this.appendOn(s, k, items, options, options.writeId, marker, raw);
  }

  private appendOn(
    s: string,
    k: string,
    items: readonly unknown[],
    options: ListAppend,
    writeId: string,
    marker: Marker,
    raw: Current,
  ): Promise<ListWriteResult> {
    return this.commit(s, k, marker, mine(raw, marker.inc), writeId, async (head, corrupt) => {
      if (corrupt) throw new CorruptValueError(k);
      // A replay of an applied write id: its original answer, nothing written.
      const landed = recorded(head, writeId, options.writeId !== undefined);
      if (landed) return { result: landed };
      const live = head && !head.deleted ? head : undefined;
      const count = live?.count ?? 0;
      const hash = live?.hash ?? EMPTY_HASH;
      await options.fence.check(head?.token);
      if (
        count === options.expectedCount &&
        (options.expectedHash === undefined || options.expectedHash === hash)
      )
        return this.planAppend(s, k, marker, head, items, options.fence.token, writeId);
      const replay =
        replayOf(options, items, count, hash) ??
        (live && (await this.replayOfTail(s, k, live, options, items)));
      if (replay) return { result: replay };
      this.ctx.metrics.count('appendConflicts');
      throw new AppendConflictError(count, hash);
    });
  }

  /** Without an expected hash, a retried append is recognised by reading the list's tail. */
  private async replayOfTail(
    s: string,
    k: string,
    head: Head,
    options: ListAppend,
    items: readonly unknown[],
  ) {
    if (options.expectedHash !== undefined || head.count !== options.expectedCount + items.length)
      return undefined;
    const tail = await this.pageOf(s, k, head, { offset: options.expectedCount });
    if (tail.items.length !== items.length) return undefined;
    return chainHash(tail.baseHash, items) === head.hash
      ? ({ action: 'unchanged', count: head.count, hash: head.hash } satisfies ListWriteResult)
      : undefined;
  }

  async save(s: string, k: string, items: readonly unknown[], options: ListSave): Promise<ListWriteResult> {
    const [read, raw] = await Promise.all([this.sessions.read(s), this.readCurrent(s, k)]);
    const first = mine(raw, read.live?.inc);
    const shown = first.head && !first.head.deleted ? first.head : undefined;
    if (options.ifHash !== undefined && !first.corrupt && options.ifHash !== (shown?.hash ?? EMPTY_HASH))
      throw new ListPreconditionFailedError(shown?.hash ?? EMPTY_HASH);
    // Saving [] over an absent list changes nothing: no session is created for it.
    if (items.length === 0 && !shown && !first.corrupt)
      return { action: 'unchanged', count: 0, hash: EMPTY_HASH };
    const marker = await this.sessions.forWrite(s, read, options.fence, !shown);
    const prefixes = prefixHashes(items);
    const writeId = newWriteId();
    return this.commit(s, k, marker, mine(raw, marker.inc), writeId, async (head, corrupt) => {
      const at = head && !head.deleted ? head : undefined;
      const count = at?.count ?? 0;
      const hash = at?.hash ?? EMPTY_HASH;
      if (corrupt && options.ifHash !== undefined) throw new CorruptValueError(k);
      if (options.ifHash !== undefined && options.ifHash !== hash)
        throw new ListPreconditionFailedError(hash);
      await options.fence.check(head?.token);
      const { token } = options.fence;
      if (!corrupt && count <= items.length && prefixes[count] === hash) {
        if (count === items.length) return { result: { action: 'unchanged', count, hash } };
        return this.planAppend(s, k, marker, head, items.slice(count), token, writeId);
      }
      // Shrunk, or an earlier item changed: a compaction. The previous list is archived first.
      return this.planReplace(s, k, marker, head, corrupt, items, prefixes, token, writeId);
    });
  }

  async remove(s: string, k: string, options: Fenced): Promise<Marker | undefined> {
    const { fence } = options;
    const [read, raw] = await Promise.all([this.sessions.read(s), this.readCurrent(s, k)]);
    if (!read.live) return fence.check().then(() => undefined);
    const first = mine(raw, read.live.inc);
    if (!first.corrupt && (!first.head || first.head.deleted))
      return fence.check(first.head?.token).then(() => undefined);
    const marker = await this.sessions.forWrite(s, read, fence, false);
    const writeId = newWriteId();
    await this.commit(s, k, marker, mine(raw, marker.inc), writeId, async (head, corrupt) => {
      if (!corrupt && (!head || head.deleted))
        return { result: { action: 'unchanged', count: 0, hash: EMPTY_HASH } };
      await fence.check(head?.token);
      return this.planReplace(s, k, marker, head, corrupt, undefined, [EMPTY_HASH], fence.token, writeId);
    });
    return marker;
  }

  async truncate(s: string, k: string, options: ListTruncate): Promise<ListWriteResult> {
    const writeId = options.writeId ?? newWriteId();
    const [read, raw] = await Promise.all([this.sessions.read(s), this.readCurrent(s, k)]);
    const first = mine(raw, read.live?.inc);
    if (first.corrupt) throw new CorruptValueError(k);
    // Decided on what was read, without a write (an absent list, a replay, a failed condition,
    // nothing to remove), before the marker is touched.
    const early = await this.decideTruncate(first.head, options, writeId, read.live?.token ?? null);
    if (early) return early;
    const marker = await this.sessions.forWrite(s, read, options.fence, false);
    return this.commit(s, k, marker, mine(raw, marker.inc), writeId, async (head, corrupt) => {
      if (corrupt) throw new CorruptValueError(k);
      const result = await this.decideTruncate(head, options, writeId, null);
      if (result) return { result };
      return this.planTruncate(s, k, marker, head as Head, options.count, options.fence.token, writeId);
    });
  }

  /**
   * What a truncate answers without writing (a replay of its write id, the unchanged list), or
   * refuses (fenced, another hash, too few items); undefined when it has items to remove.
   */
  private async decideTruncate(
    head: Head | undefined,
    options: ListTruncate,
    writeId: string,
    markerToken: number | null,
  ): Promise<ListWriteResult | undefined> {
    const landed = recorded(head, writeId, options.writeId !== undefined);
    if (landed) return landed;
    await options.fence.check(head?.token, markerToken);
    const live = head && !head.deleted ? head : undefined;
    const count = live?.count ?? 0;
    const hash = live?.hash ?? EMPTY_HASH;
    return checkTruncate(options, count, hash);
  }

  /**
   * The head of generation `gen + 1` holding the first `keep` items: the segments wholly inside
   * them listed as they are (their names keep their generation), the items of the segment the cut
   * falls in (and of the head, if it falls there) before the cut packed into a new segment and the
   * head; the removed items archived from `keep` on. Reads only the segment the cut falls in and
   * those after it (none when it falls in the head).
   */
  private async planTruncate(
    s: string,
    k: string,
    marker: Marker,
    head: Head,
    keep: number,
    token: number | undefined,
    writeId: string,
  ): Promise<Plan> {
    const now = this.ctx.now();
    const refs = head.segments;
    const gen = head.gen + 1;
    let kept: SegmentRef[] = refs;
    let from = head.base;
    let fromHash = head.baseHash;
    let stored: unknown[] = head.items;
    let cut: SegmentRef[] = [];
    if (keep < head.base) {
      const j = refs.findIndex((ref) => ref.first <= keep && keep < ref.first + ref.count);
      const at = refs[j];
      if (!at) throw new CorruptValueError(k);
      kept = refs.slice(0, j);
      cut = refs.slice(j);
      from = at.first;
      fromHash = refs[j - 1]?.hash ?? EMPTY_HASH;
      const segments = await Promise.all(cut.map((ref) => this.readSegment(k, ref)));
      stored = segments.flatMap((segment) => parseItems(segment.data, k));
      this.verify(k, fromHash, stored, head.baseHash);
      stored = stored.concat(head.items);
    }
    const keptItems = stored.slice(0, keep - from);
    const removed = stored.slice(keep - from);
    const prefixes = storedPrefixes(keptItems, fromHash);
    const hash = prefixes[keptItems.length] as string;
    const archived = (await this.resolve(k, { ...emptyPage(), items: removed })).items;
    // The removed items, archived before the head that drops them (with the new segments).
    const archive = () =>
      this.archives.write(
        s,
        k,
        marker.inc,
        head.gen,
        { items: archived, count: archived.length, hash: chainHash(EMPTY_HASH, archived) },
        keep,
      );
    // A cut in the head keeps its items there; a cut in a segment repacks the items before it, the
    // newest (down to the head's low mark) in the head.
    let split = 0;
    if (keep < head.base) {
      const sizes = keptItems.map(itemBytes);
      split = keptItems.length;
      for (
        let bytes = 0;
        split > 0 && bytes + (sizes[split - 1] as number) <= this.headBytes - this.sealBytes;
        split--
      )
        bytes += sizes[split - 1] as number;
      if (split === keptItems.length && split > 0) split--;
    }
    const outs = this.pack(from, prefixes, keptItems.slice(0, split));
    const packed = outs.map((out) => this.refOf(s, k, marker.inc, gen, out, true));
    const objects = removed.filter(isItemRef).map((ref) => ref[ITEM_REF]);
    const result: ListWriteResult = { action: 'truncated', count: keep, hash };
    const next: Head = {
      ...head,
      gen,
      count: keep,
      hash,
      token: maxToken(head.token, token),
      base: from + split,
      baseHash: prefixes[split] as string,
      items: keptItems.slice(split),
      writes: remember(head.writes, [writeId, keep, hash, 'truncated']),
      segments: [...kept, ...packed],
      retired: [
        ...head.retired,
        ...[...cut.map((ref) => ref.name), ...objects].map((name): [string, number] => [name, now]),
      ],
    };
    const due = this.due(next.retired, now);
    const gone = new Set(due);
    return {
      result,
      next: { ...next, retired: next.retired.filter(([name]) => !gone.has(name)) },
      segments: outs.map((out, i) => ({ name: (packed[i] as SegmentRef).name, body: out.body })),
      drop: due,
      before: archive,
    };
  }

  /**
   * Decides and compare-and-swaps the head until one attempt lands. After a failed CAS or an
   * unknown outcome (a lost answer, a 5xx: Ceph RGW answers most losers of a race with 500) the
   * head is read again: this write's id in it means the write landed.
   */
  private async commit(
    s: string,
    k: string,
    marker: Marker,
    first: Current,
    writeId: string,
    decide: (head: Head | undefined, corrupt: boolean) => Promise<Plan>,
  ): Promise<ListWriteResult> {
    let current = first;
    for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
      if (attempt > 0) await backoff(BACKOFF.storeRace, attempt);
      const startedAt = performance.now();
      let plan: Plan;
      try {
        plan = await decide(current.head, current.corrupt === true);
      } catch (error) {
        // A segment the head listed was retired meanwhile: the head has moved on.
        if (!(error instanceof SegmentGoneError)) throw error;
        current = mine(await this.readCurrent(s, k), marker.inc);
        continue;
      }
      if (!plan.next) return plan.result;
      try {
        await Promise.all([
          ...plan.segments.map((segment) => this.createSegment(segment.name, segment.body)),
          plan.before?.(),
        ]);
        if (performance.now() - startedAt > this.ctx.maxCommitMs)
          throw new BackendError('list write took too long between read and commit; retry', true);
        // Retired segments are listed by no head any more: they can go while the head is written,
        // whether or not this write wins.
        await Promise.all([
          this.ctx.driver.put(this.layout.listHash(s, k), JSON.stringify(plan.next), {
            contentType: 'application/json',
            tags: { kind: 'state' },
            ...(current.etag === undefined ? { ifNoneMatch: '*' as const } : { ifMatch: current.etag }),
          }),
          this.dropRetired(plan.drop),
        ]);
      } catch (error) {
        const unknown =
          error instanceof ObjectConditionFailedError ||
          (error instanceof ObjectStoreError && error.retryable);
        if (!unknown) throw error;
        current = mine(await this.readCurrent(s, k), marker.inc);
        const landed = recorded(current.head, writeId);
        if (landed) return landed;
        continue;
      }
      await plan.after?.().catch(() => this.ctx.metrics.count('persistenceFailures'));
      return plan.result;
    }
    throw new ContendedError('the list is too contended; nothing was written; retry');
  }

  private async createSegment(name: string, body: Buffer): Promise<void> {
    try {
      await this.ctx.driver.put(name, body, {
        contentType: 'application/x-ndjson',
        tags: { kind: 'state' },
        ifNoneMatch: '*',
      });
    } catch (error) {
      // Content-addressed: a segment of that name holds these items (a retried seal).
      if (!(error instanceof ObjectConditionFailedError)) throw error;
    }
  }

  /** Deletes retired segments (best effort: one left behind goes at session delete). */
  private async dropRetired(names: readonly string[]): Promise<void> {
    await Promise.all(
      names.map((name) =>
        this.ctx.driver.delete(name).catch(() => this.ctx.metrics.count('persistenceFailures')),
      ),
    );
  }

  /** The head after appending `items`, with the seal or the merge that is due. */
  private async planAppend(
    s: string,
    k: string,
    marker: Marker,
    head: Head | undefined,
    items: readonly unknown[],
    token: number | undefined,
    writeId: string,
  ): Promise<Plan> {
    const at = head && !head.deleted ? head : freshHead(marker.inc, head);
    const count = at.count + items.length;
    const hash = chainHash(at.hash, items);
    const result: ListWriteResult = { action: !head || head.deleted ? 'created' : 'appended', count, hash };
    const own = this.storedForm(s, k, marker.inc, at.gen, at.count, items);
    const grown: Head = {
      ...at,
      deleted: false,
      count,
      hash,
      token: maxToken(at.token, token),
      items: [...at.items, ...own.stored],
      writes: remember(at.writes, [writeId, count, hash, result.action]),
    };
    const work = await this.maintain(s, k, marker.inc, grown);
    // Retired segments go with the head write, within a call's request cap: sealing calls take
    // those due; a plain append takes some only when more than `RETIRED_KEPT` wait.
    const requests = 3 + work.reads + work.segments.length;
    const capacity =
      work.segments.length > 0 || work.next.retired.length > RETIRED_KEPT
        ? Math.max(0, MAX_CALL_REQUESTS - requests)
        : 0;
    const drop = this.due(work.next.retired, this.ctx.now()).slice(0, capacity);
    const gone = new Set(drop);
    const next: Head = { ...work.next, retired: work.next.retired.filter(([name]) => !gone.has(name)) };
    return { result, next, segments: [...own.objects, ...work.segments], drop };
  }

  /**
   * Items as the head and segments hold them: an item over `LIST_ITEM_OBJECT_BYTES` becomes an
   * object of its own (create-only, named by its number and leaf hash; returned to be written
   * before the head) and a reference in its place; an item that looks like a reference is escaped.
   */
  private storedForm(
    s: string,
    k: string,
    inc: string,
    gen: number,
    first: number,
    items: readonly unknown[],
  ) {
    return storedItems(items, (i, tag) => this.layout.listItem(s, k, inc, gen, first + i, tag));
  }

  /**
   * The one seal or merge a write does when due, reading at most two segments: seal the oldest
   * items when the head is over `headBytes` (merged into the newest segment while that one is
   * below the first level); otherwise merge two neighbours that ended up in the same level.
   */
  private async maintain(s: string, k: string, inc: string, head: Head): Promise<Maintenance> {
    const sizes = head.items.map(itemBytes);
    const total = sizes.reduce((a, b) => a + b, 0);
    const refs = head.segments;
    const now = this.ctx.now();
    const level = (ref: SegmentRef) => (ref.packed ? LEVELS : this.levelOf(ref.bytes - ref.data));
    // The head's object, not only its items, stays within `headBytes`: its segment list and its
    // write records (at their most) take their share (a share that changes only with a seal), when
    // the rest stays above the head's low mark (tiny test heads keep their items' cap).
    const other = Buffer.byteLength(JSON.stringify(refs)) + KEPT_WRITES * WRITE_RECORD_BYTES;
    const room = other < this.sealBytes ? this.headBytes - other : this.headBytes;
    if (total > room) {
      // The oldest items go, down to the head's low mark (`headBytes − sealBytes`: a read of the
      // last 50 items of 1 KB stays in the head); the newest stays.
      let taken = 0;
      let n = 0;
      const keep = this.headBytes - this.sealBytes;
      while (n < sizes.length - 1 && total - taken - (sizes[n] as number) >= keep)
        taken += sizes[n++] as number;
      if (taken > this.sealBytes * LEVEL_FACTOR) {
        // A large append: its items are packed into top-level segments as a rewrite packs them.
        const outs = this.pack(
          head.base,
          storedPrefixes(head.items.slice(0, n), head.baseHash),
          head.items.slice(0, n),
        );
        const packed = outs.map((out) => this.refOf(s, k, inc, head.gen, out, true));
        const sealed: Head = {
          ...head,
          base: head.base + n,
          baseHash: (packed.at(-1) as SegmentRef).hash,
          items: head.items.slice(n),
        };
        return {
          next: this.withSegments(sealed, [...refs, ...packed], [], now),
          segments: outs.map((out, i) => ({ name: (packed[i] as SegmentRef).name, body: out.body })),
          reads: 0,
        };
      }
      const chunkItems = head.items.slice(0, n);
      const chunk = this.buildSegment(head.base, head.baseHash, chunkItems);
      const sealed: Head = {
        ...head,
        base: head.base + n,
        baseHash: chunk.header.hash,
        items: head.items.slice(n),
      };
      const last = refs.at(-1);
      const prev = refs.at(-2);
      let inputs: SegmentRef[] = [];
      if (last && level(last) === 0) {
        inputs = [last];
        const merged = last.bytes - last.data + chunk.data.length;
        if (prev && level(prev) < LEVELS && level(prev) === this.levelOf(merged)) inputs = [prev, last];
      }
      const read = await Promise.all(inputs.map((ref) => this.readSegment(k, ref)));
      const out = mergeSegments([...read, chunk], this.indexBytes);
      const ref = this.refOf(s, k, inc, head.gen, out);
      return {
        next: this.withSegments(sealed, refs.slice(0, refs.length - inputs.length).concat(ref), inputs, now),
        segments: [{ name: ref.name, body: out.body }],
        reads: inputs.length,
      };
    }
    // A merge left two neighbours in one level: merge them now (never in the same call as a seal).
    // Never into a top-level segment, and never past one (`top` item bytes): merging a growing
    // segment with each smaller one before it would rewrite the whole list again and again.
    const top = this.sealBytes * LEVEL_FACTOR ** LEVELS;
    for (let i = refs.length - 1; i > 0; i--) {
      const a = refs[i - 1] as SegmentRef;
      const b = refs[i] as SegmentRef;
      const bytes = a.bytes - a.data + (b.bytes - b.data);
      if (level(b) < LEVELS && level(a) <= level(b) && bytes <= top) {
        const out = mergeSegments(
          await Promise.all([this.readSegment(k, a), this.readSegment(k, b)]),
          this.indexBytes,
        );
        const ref = this.refOf(s, k, inc, head.gen, out);
        const list = [...refs.slice(0, i - 1), ref, ...refs.slice(i + 1)];
        return {
          next: this.withSegments(head, list, [a, b], now),
          segments: [{ name: ref.name, body: out.body }],
          reads: 2,
        };
      }
    }
    return { next: head, segments: [], reads: 0 };
  }

  /** Retired segments to delete now: those older than `retireAfterMs`, and all but the newest `RETIRED_KEPT`. */
  private due(retired: Head['retired'], now: number): string[] {
    return retired
      .filter(([, at], i) => now - at > this.ctx.retireAfterMs || i < retired.length - RETIRED_KEPT)
      .map(([name]) => name);
  }

  /** The level of a segment of `bytes` item bytes: 0 below 4 seals, … , `LEVELS` from 64 seals. */
  private levelOf(bytes: number): number {
    let level = 0;
    let cap = this.sealBytes * LEVEL_FACTOR;
    while (level < LEVELS && bytes >= cap) {
      level++;
      cap *= LEVEL_FACTOR;
    }
    return level;
  }

  private withSegments(
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

  private refOf(
    s: string,
    k: string,
    inc: string,
    gen: number,
    out: { header: SegmentHeader; body: Buffer; data: number },
    packed = false,
  ): SegmentRef {
    const { first, count, hash } = out.header;
    return {
      name: this.layout.segment(s, k, inc, gen, first, first + count - 1, hash.slice(-12)),
      first,
      count,
      hash,
      bytes: out.body.length,
      data: out.data,
      ...(packed ? { packed: true as const } : {}),
    };
  }

  /** A new segment of `items`, numbered from `first`, whose chain starts at `baseHash`. */
  private buildSegment(first: number, baseHash: string, items: readonly unknown[]): Segment {
    const index: Array<[number, number, string]> = [[first, 0, baseHash]];
    const lines: string[] = [];
    let hash = baseHash;
    let offset = 0;
    let last = 0;
    items.forEach((item, i) => {
      const line = `${jsonBody(item)}\n`;
      const size = Buffer.byteLength(line);
      if (offset > last && offset - last + size > this.indexBytes) {
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
  private pack(first: number, prefixes: readonly string[], items: readonly unknown[]) {
    const top = this.sealBytes * LEVEL_FACTOR ** LEVELS;
    const sizes = items.map(itemBytes);
    const outs: Array<ReturnType<typeof mergeSegments>> = [];
    for (let start = 0; start < items.length; ) {
      let end = start;
      // At least `top` bytes, so each but the last is in the top level and is never merged again.
      for (let bytes = 0; end < items.length && bytes < top; end++) bytes += sizes[end] as number;
      const segment = this.buildSegment(first + start, prefixes[start] as string, items.slice(start, end));
      outs.push(mergeSegments([segment], this.indexBytes));
      start = end;
    }
    return outs;
  }

  /**
   * Replaces the list (`items`) or deletes it (undefined): archives what it holds, then writes
   * the next generation, its older items sealed into top-level segments, the old segments retired.
   */
  private async planReplace(
    s: string,
    k: string,
    marker: Marker,
    head: Head | undefined,
    corrupt: boolean,
    items: readonly unknown[] | undefined,
    prefixes: readonly string[],
    token: number | undefined,
    writeId: string,
  ): Promise<Plan> {
    const now = this.ctx.now();
    const live = head && !head.deleted ? head : undefined;
    // The items it holds as objects of their own go with its segments.
    let oldObjects: string[] = [];
    if (live && live.count > 0) {
      const whole = await this.pageOf(s, k, live, {});
      oldObjects = whole.items.filter(isItemRef).map((ref) => ref[ITEM_REF]);
      await this.archives.write(s, k, marker.inc, live.gen, await this.resolve(k, whole));
    }
    // A damaged head is replaced without an archive (nothing of it can be read), in a generation
    // above any it can have had.
    const gen = corrupt ? now : head ? head.gen + 1 : 0;
    const original = items ?? [];
    const own = this.storedForm(s, k, marker.inc, gen, 0, original);
    const list = own.stored;
    const sizes = list.map(itemBytes);
    // The head starts at its low mark, so the appends after a rewrite do not seal at once.
    let split = list.length;
    for (
      let bytes = 0;
      split > 0 && bytes + (sizes[split - 1] as number) <= this.headBytes - this.sealBytes;
      split--
    )
      bytes += sizes[split - 1] as number;
    if (split === list.length && list.length > 0) split--;
    const outs = this.pack(0, prefixes, list.slice(0, split));
    const refs = outs.map((out) => this.refOf(s, k, marker.inc, gen, out, true));
    const count = list.length;
    const hash = prefixes[count] as string;
    const result: ListWriteResult = items
      ? { action: 'rewritten', count, hash }
      : { action: 'unchanged', count: 0, hash: EMPTY_HASH };
    const next: Head = {
      v: 2,
      format: 'cas',
      inc: marker.inc,
      gen,
      deleted: items === undefined,
      count,
      hash,
      token: maxToken(head?.token ?? null, token),
      base: split,
      baseHash: prefixes[split] as string,
      items: list.slice(split),
      writes: remember(head?.writes ?? [], [writeId, count, hash, result.action]),
      segments: refs,
      retired: [
        ...(head?.retired ?? []),
        ...[...(head?.segments ?? []).map((ref) => ref.name), ...oldObjects].map((name): [string, number] => [
          name,
          now,
        ]),
      ],
    };
    const due = this.due(next.retired, now);
    const kept = new Set(due);
    return {
      result,
      next: { ...next, retired: next.retired.filter(([name]) => !kept.has(name)) },
      segments: [
        ...own.objects,
        ...outs.map((out, i) => ({ name: (refs[i] as SegmentRef).name, body: out.body })),
      ],
      drop: due,
      after: () => {
        if (items) this.ctx.metrics.count('listRewrites');
        return this.materialize(s, k, marker.inc, next, original);
      },
    };
  }

  /** `.list.json`, the reference's whole array, after a rewrite (removed with the list); only with `listJson: 'reference'`. */
  private async materialize(
    s: string,
    k: string,
    inc: string,
    head: Head,
    items: readonly unknown[],
  ): Promise<void> {
    if (this.ctx.listJson !== 'reference') return;
    if (items.length === 0 || head.deleted) {
      await this.ctx.driver.delete(this.layout.listJson(s, k));
      return;
    }
    await this.ctx.driver.put(this.layout.listJson(s, k), jsonBody(items), {
      contentType: 'application/json',
      metadata: { inc, gen: String(head.gen), count: String(head.count), hash: head.hash },
      tags: { kind: 'state' },
    });
  }

  async itemObject(s: string, k: string, n: number): Promise<string | undefined> {
    const [read, raw] = await Promise.all([this.sessions.read(s), this.readCurrent(s, k)]);
    const head = read.live ? mine(raw, read.live.inc).head : undefined;
    if (!head || head.deleted || !Number.isSafeInteger(n) || n < 0 || n >= head.count) return undefined;
    const [item] = (await this.pageOf(s, k, head, { offset: n, limit: 1 })).items;
    return isItemRef(item) ? item[ITEM_REF] : undefined;
  }
}

// ---- pure helpers ----------------------------------------------------------------------------

function remember(writes: readonly WriteRecord[], record: WriteRecord): WriteRecord[] {
  return [...writes, record].slice(-KEPT_WRITES);
}

/** The original answer of a write the head records. */
function recorded(head: Head | undefined, writeId: string, named = false): ListWriteResult | undefined {
  const records = (head?.writes ?? []).map((w) => [w[0], { action: w[3], count: w[1], hash: w[2] }] as const);
  return recordedAnswer(records, writeId, named);
}

/** The head of an empty list: a first one, or after a deletion (keeping its generation and token). */
function freshHead(inc: string, deleted: Head | undefined): Head {
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

/** What is stored, seen from incarnation `inc`: a head of another one is a leftover (only its etag counts). */
function mine(current: Current, inc: string | undefined): Current {
  if (current.corrupt || !current.head) return current;
  return current.head.inc === inc ? current : { etag: current.etag };
}

async function getRange(
  driver: StoreContext['driver'],
  name: string,
  start: number,
  end: number,
): Promise<Buffer> {
  try {
    return Buffer.from((await driver.get(name, { range: { start, end } })).body);
  } catch (error) {
    if (error instanceof ObjectNotFoundError) throw new SegmentGoneError();
    throw error;
  }
}

/** Concatenates contiguous segments: their lines as they are, their indexes shifted and thinned. */
function mergeSegments(parts: readonly Segment[], indexBytes: number) {
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

function splitSegment(body: Buffer): Segment | undefined {
  const end = body.indexOf(10);
  if (end < 0) return undefined;
  const header = parseHeader(body.subarray(0, end));
  return header ? { header, data: body.subarray(end + 1) } : undefined;
}

function parseHeader(bytes: Uint8Array): SegmentHeader | undefined {
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

function parseItems(data: Uint8Array, k: string): unknown[] {
  const text = Buffer.from(data).toString('utf8');
  if (text === '') return [];
  if (!text.endsWith('\n')) throw new CorruptValueError(k);
  try {
    return text
      .slice(0, -1)
      .split('\n')
      .map((line) => JSON.parse(line) as unknown);
  } catch (error) {
    throw new CorruptValueError(k, { cause: error });
  }
}

/** The head in a body, or undefined when it is not a well-formed CAS head. */
function parseHead(body: Uint8Array): Head | undefined {
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
