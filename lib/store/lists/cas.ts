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
 *
 * The format's pieces: the head and segment codec (cas-codec.ts) and the reads of heads and
 * segments (cas-read.ts); this class decides and commits the writes.
 */

import {
  AppendConflictError,
  BackendError,
  ContendedError,
  CorruptValueError,
  ListPreconditionFailedError,
} from '../../contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../contract/hash.js';
import { decodeId } from '../../contract/ids.js';
import { checkPage } from '../../contract/turns.js';
import type { ListPage, ListWriteResult, PageOptions } from '../../contract/types.js';
import { ObjectConditionFailedError, ObjectStoreError } from '../../drivers/errors.js';
import type { ListedObject } from '../../drivers/types.js';
import { BACKOFF, backoff } from '../../util/backoff.js';
import { MAX_WRITE_ATTEMPTS, type StoreContext } from '../context.js';
import type { UserLayout } from '../layout.js';
import type { Marker, MarkerRead, Sessions, StateKeeper } from '../sessions.js';
import { Archives } from './archives.js';
import {
  type BuiltSegment,
  buildSegment,
  freshHead,
  type Head,
  INDEX_SEALS,
  LEVEL_FACTOR,
  LEVELS,
  levelOf,
  lowMarkSplit,
  mergeSegments,
  packSegments,
  parseItems,
  recorded,
  remember,
  type SegmentRef,
  type SegmentSizes,
  topLevelBytes,
  WRITE_RECORD_BYTES,
  withoutRetired,
  withSegments,
} from './cas-codec.js';
import { CasReader, type Current, mine, SegmentGoneError } from './cas-read.js';
import {
  checkTruncate,
  createOnce,
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
  NDJSON,
  newWriteId,
  prefixHashes,
  READ_ATTEMPTS,
  replayOf,
} from './format.js';
import { ITEM_REF, isItemRef, storedItems, storedPrefixes } from './items.js';
import { ListJson, type ListJsonStamp, stampedWith } from './list-json.js';

/** Retired segments a head keeps waiting for `retireAfterMs`; older ones go at the next chance. */
const RETIRED_KEPT = 8;

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

export class CasFormat implements ListFormat, StateKeeper {
  private readonly archives: Archives;
  private readonly reader: CasReader;
  private readonly listJson: ListJson;
  private readonly sealBytes: number;
  private readonly headBytes: number;
  private readonly indexBytes: number;
  /** What segments are built with. */
  private readonly sizes: SegmentSizes;

  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
    private readonly sessions: Sessions,
  ) {
    this.archives = new Archives(ctx, layout);
    this.listJson = new ListJson(ctx, layout);
    this.sealBytes = ctx.listSealBytes;
    this.headBytes = ctx.listHeadBytes;
    this.indexBytes = INDEX_SEALS * ctx.listSealBytes;
    this.sizes = { sealBytes: this.sealBytes, indexBytes: this.indexBytes };
    this.reader = new CasReader(ctx, layout, this.indexBytes);
    sessions.keeper = this;
  }

  /**
   * With the session's keep-alive (at most once per interval): brings `.list.json` up to date for
   * each list whose materialization lags its head. Owns no object (the generic keep-alive refreshes
   * heads and segments).
   */
  async keep(s: string, inc: string, objects: readonly ListedObject[]): Promise<ReadonlySet<string>> {
    if (!this.listJson.wanted) return new Set();
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
    const [current, stamp] = await Promise.all([this.reader.readCurrent(s, k), this.listJson.stamp(s, k)]);
    const head = mine(current, inc).head;
    if (!head || head.deleted || stampedWith(stamp, inc, head)) return;
    const whole = await this.reader.resolve(k, await this.reader.pageOf(k, head, {}));
    await this.listJson.write(s, k, stampOf(head), whole.items);
  }

  /** The head alone (one GET): count, hash and when it was written. */
  async stat(s: string, k: string, inc: string): Promise<ListStat | undefined> {
    const current = mine(await this.reader.readCurrent(s, k), inc);
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
        this.reader.readCurrent(s, k),
      ]);
      if (!read.live) return emptyPage();
      const current = mine(raw, read.live.inc);
      // A damaged head fails this list only.
      if (current.corrupt) throw new CorruptValueError(k);
      const head = current.head;
      if (!head || head.deleted) return emptyPage();
      try {
        return await this.reader.resolve(k, await this.reader.pageOf(k, head, page));
      } catch (error) {
        if (!(error instanceof SegmentGoneError)) throw error;
      }
    }
    this.ctx.metrics.count('corruptObjects');
    throw new CorruptValueError(k);
  }

  // ---- writing -------------------------------------------------------------------------------

  async append(
    s: string,
    k: string,
    items: readonly unknown[],
    options: ListAppend,
  ): Promise<ListWriteResult> {
    const writeId = options.writeId ?? newWriteId();
    const [read, raw] = await Promise.all([this.sessions.read(s), this.reader.readCurrent(s, k)]);
    const seen = mine(raw, read.live?.inc).head;
    // A replay is answered from its record, before the fence (docs/DESIGN.md, "The write path").
    const landed = options.writeId === undefined ? undefined : recorded(seen, writeId, true);
    if (landed) return landed;
    const marker = await this.sessions.forWrite(s, read, options.fence, !seen || seen.deleted);
    return this.appendOn(s, k, items, options, writeId, marker, raw);
  }

  /** The pre-read of a commit (lib/store/commits.ts): the head alone, one GET. */
  async peek(s: string, k: string, marker: Promise<MarkerRead>): Promise<ListPeek> {
    const [read, raw] = await Promise.all([marker, this.reader.readCurrent(s, k)]);
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
    const raw = this.peeked.get(peek) ?? (await this.reader.readCurrent(s, k));
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
        replayOf(options, items, count, hash) ?? (live && (await this.replayOfTail(k, live, options, items)));
      if (replay) return { result: replay };
      this.ctx.metrics.count('appendConflicts');
      throw new AppendConflictError(count, hash);
    });
  }

  /** Without an expected hash, a retried append is recognised by reading the list's tail. */
  private async replayOfTail(k: string, head: Head, options: ListAppend, items: readonly unknown[]) {
    if (options.expectedHash !== undefined || head.count !== options.expectedCount + items.length)
      return undefined;
    const tail = await this.reader.pageOf(k, head, { offset: options.expectedCount });
    if (tail.items.length !== items.length) return undefined;
    return chainHash(tail.baseHash, items) === head.hash
      ? ({ action: 'unchanged', count: head.count, hash: head.hash } satisfies ListWriteResult)
      : undefined;
  }

  async save(s: string, k: string, items: readonly unknown[], options: ListSave): Promise<ListWriteResult> {
    const [read, raw] = await Promise.all([this.sessions.read(s), this.reader.readCurrent(s, k)]);
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
    const [read, raw] = await Promise.all([this.sessions.read(s), this.reader.readCurrent(s, k)]);
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
    const [read, raw] = await Promise.all([this.sessions.read(s), this.reader.readCurrent(s, k)]);
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
      const segments = await Promise.all(cut.map((ref) => this.reader.readSegment(k, ref)));
      stored = segments.flatMap((segment) => parseItems(segment.data, k));
      this.reader.verify(k, fromHash, stored, head.baseHash);
      stored = stored.concat(head.items);
    }
    const keptItems = stored.slice(0, keep - from);
    const removed = stored.slice(keep - from);
    const prefixes = storedPrefixes(keptItems, fromHash);
    const hash = prefixes[keptItems.length] as string;
    const archived = (await this.reader.resolve(k, { ...emptyPage(), items: removed })).items;
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
    const split =
      keep < head.base ? lowMarkSplit(keptItems.map(itemBytes), this.headBytes - this.sealBytes) : 0;
    const outs = packSegments(from, prefixes, keptItems.slice(0, split), this.sizes);
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
    return {
      result,
      next: withoutRetired(next, due),
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
        current = mine(await this.reader.readCurrent(s, k), marker.inc);
        continue;
      }
      if (!plan.next) return plan.result;
      try {
        // Content-addressed: a segment of that name holds these items (a retried seal).
        await Promise.all([
          ...plan.segments.map((segment) => createOnce(this.ctx.driver, segment.name, segment.body, NDJSON)),
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
        current = mine(await this.reader.readCurrent(s, k), marker.inc);
        const landed = recorded(current.head, writeId);
        if (landed) return landed;
        continue;
      }
      await plan.after?.().catch(() => this.ctx.metrics.count('persistenceFailures'));
      return plan.result;
    }
    throw new ContendedError('the list is too contended; nothing was written; retry');
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
    return {
      result,
      next: withoutRetired(work.next, drop),
      segments: [...own.objects, ...work.segments],
      drop,
    };
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
    const level = (ref: SegmentRef) => (ref.packed ? LEVELS : levelOf(ref.bytes - ref.data, this.sealBytes));
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
        const outs = packSegments(
          head.base,
          storedPrefixes(head.items.slice(0, n), head.baseHash),
          head.items.slice(0, n),
          this.sizes,
        );
        const packed = outs.map((out) => this.refOf(s, k, inc, head.gen, out, true));
        const sealed: Head = {
          ...head,
          base: head.base + n,
          baseHash: (packed.at(-1) as SegmentRef).hash,
          items: head.items.slice(n),
        };
        return {
          next: withSegments(sealed, [...refs, ...packed], [], now),
          segments: outs.map((out, i) => ({ name: (packed[i] as SegmentRef).name, body: out.body })),
          reads: 0,
        };
      }
      const chunkItems = head.items.slice(0, n);
      const chunk = buildSegment(head.base, head.baseHash, chunkItems, this.indexBytes);
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
        if (prev && level(prev) < LEVELS && level(prev) === levelOf(merged, this.sealBytes))
          inputs = [prev, last];
      }
      const read = await Promise.all(inputs.map((ref) => this.reader.readSegment(k, ref)));
      const out = mergeSegments([...read, chunk], this.indexBytes);
      const ref = this.refOf(s, k, inc, head.gen, out);
      return {
        next: withSegments(sealed, refs.slice(0, refs.length - inputs.length).concat(ref), inputs, now),
        segments: [{ name: ref.name, body: out.body }],
        reads: inputs.length,
      };
    }
    // A merge left two neighbours in one level: merge them now (never in the same call as a seal).
    // Never into a top-level segment, and never past one (`top` item bytes): merging a growing
    // segment with each smaller one before it would rewrite the whole list again and again.
    const top = topLevelBytes(this.sealBytes);
    for (let i = refs.length - 1; i > 0; i--) {
      const a = refs[i - 1] as SegmentRef;
      const b = refs[i] as SegmentRef;
      const bytes = a.bytes - a.data + (b.bytes - b.data);
      if (level(b) < LEVELS && level(a) <= level(b) && bytes <= top) {
        const out = mergeSegments(
          await Promise.all([this.reader.readSegment(k, a), this.reader.readSegment(k, b)]),
          this.indexBytes,
        );
        const ref = this.refOf(s, k, inc, head.gen, out);
        const list = [...refs.slice(0, i - 1), ref, ...refs.slice(i + 1)];
        return {
          next: withSegments(head, list, [a, b], now),
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

  /** The head's reference to a new segment of generation `gen`, named by its items and end hash. */
  private refOf(
    s: string,
    k: string,
    inc: string,
    gen: number,
    out: BuiltSegment,
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
      const whole = await this.reader.pageOf(k, live, {});
      oldObjects = whole.items.filter(isItemRef).map((ref) => ref[ITEM_REF]);
      await this.archives.write(s, k, marker.inc, live.gen, await this.reader.resolve(k, whole));
    }
    // A damaged head is replaced without an archive (nothing of it can be read), in a generation
    // above any it can have had.
    const gen = corrupt ? now : head ? head.gen + 1 : 0;
    const original = items ?? [];
    const own = this.storedForm(s, k, marker.inc, gen, 0, original);
    const list = own.stored;
    // The head starts at its low mark, so the appends after a rewrite do not seal at once.
    const split = lowMarkSplit(list.map(itemBytes), this.headBytes - this.sealBytes);
    const outs = packSegments(0, prefixes, list.slice(0, split), this.sizes);
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
    return {
      result,
      next: withoutRetired(next, due),
      segments: [
        ...own.objects,
        ...outs.map((out, i) => ({ name: (refs[i] as SegmentRef).name, body: out.body })),
      ],
      drop: due,
      after: () => {
        if (items) this.ctx.metrics.count('listRewrites');
        return this.listJson.write(s, k, stampOf(next), original);
      },
    };
  }

  async itemObject(s: string, k: string, n: number): Promise<string | undefined> {
    const [read, raw] = await Promise.all([this.sessions.read(s), this.reader.readCurrent(s, k)]);
    const head = read.live ? mine(raw, read.live.inc).head : undefined;
    if (!head || head.deleted || !Number.isSafeInteger(n) || n < 0 || n >= head.count) return undefined;
    const [item] = (await this.reader.pageOf(k, head, { offset: n, limit: 1 })).items;
    return isItemRef(item) ? item[ITEM_REF] : undefined;
  }
}

/** The `.list.json` stamp of a head's list. */
function stampOf(head: Head): ListJsonStamp {
  return { inc: head.inc, gen: head.gen, count: head.count, hash: head.hash };
}
