/**
 * The append list format (docs/DESIGN.md, "Append format"), for backends with position append
 * (OSS AppendObject; memory and fs too) and no conditional overwrite.
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
 *
 * The format's pieces: the record codec (append-codec.ts), reading and following a chain
 * (append-chain.ts), appending (append-write.ts), the next generation of a rewrite, delete or
 * truncate (append-rewrite.ts) and the keep-alive (append-keep.ts); this class answers the
 * operations of `ListFormat` with them.
 */

import {
  AppendConflictError,
  ContendedError,
  CorruptValueError,
  ListPreconditionFailedError,
} from '../../contract/errors.js';
import { EMPTY_HASH } from '../../contract/hash.js';
import { checkPage } from '../../contract/turns.js';
import type { ListPage, ListWriteResult, PageOptions } from '../../contract/types.js';
import type { ListedObject } from '../../drivers/types.js';
import { KIB } from '../../util/units.js';
import { MAX_WRITE_ATTEMPTS, type StoreContext } from '../context.js';
import type { UserLayout } from '../layout.js';
import type { Marker, MarkerRead, Sessions, StateKeeper } from '../sessions.js';
import { AppendChain, LogGoneError, mine, type PointerRead, type Tail } from './append-chain.js';
import { DamageError, findWrite, widOf } from './append-codec.js';
import { AppendKeeper } from './append-keep.js';
import { AppendRewriter, type RewriteCache } from './append-rewrite.js';
import { AppendWriter } from './append-write.js';
import { Archives } from './archives.js';
import {
  checkTruncate,
  emptyPage,
  type Fenced,
  type ListAppend,
  type ListFormat,
  type ListPeek,
  type ListSave,
  type ListStat,
  type ListTruncate,
  newWriteId,
  prefixHashes,
  READ_ATTEMPTS,
} from './format.js';
import { ITEM_REF, isItemRef } from './items.js';
import { ListJson } from './list-json.js';

/** The tail `stat` reads: the last trailer, and a seal's body when the log is sealed. */
const STAT_SUFFIX_BYTES = KIB;

export class AppendFormat implements ListFormat, StateKeeper {
  private readonly chain: AppendChain;
  private readonly writer: AppendWriter;
  private readonly rewriter: AppendRewriter;
  private readonly keeper: AppendKeeper;

  constructor(
    private readonly ctx: StoreContext,
    layout: UserLayout,
    private readonly sessions: Sessions,
  ) {
    this.chain = new AppendChain(ctx, layout);
    this.rewriter = new AppendRewriter(
      ctx,
      layout,
      this.chain,
      new Archives(ctx, layout),
      new ListJson(ctx, layout),
    );
    this.writer = new AppendWriter(ctx, layout, this.chain, this.rewriter);
    this.keeper = new AppendKeeper(ctx, layout, this.chain);
    sessions.keeper = this;
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

  // ---- reading lists -------------------------------------------------------------------------

  async read(s: string, k: string, page: PageOptions, marker?: Promise<MarkerRead>): Promise<ListPage> {
    checkPage(page);
    return this.guard(k, async () => {
      for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
        const [read, raw] = await Promise.all([
          attempt === 0 && marker ? marker : this.sessions.read(s),
          this.chain.readPointer(s, k),
        ]);
        if (!read.live) return emptyPage();
        const pointer = mine(raw, read.live.inc);
        if (!pointer.info && !pointer.corrupt) return emptyPage();
        try {
          return await this.chain.resolve(await this.chain.pageOf(s, k, read.live.inc, pointer, page));
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
      const pointer = mine(await this.chain.readPointer(s, k), inc);
      if (!pointer.info && !pointer.corrupt) return undefined;
      const tail = await this.chain.current(s, k, inc, pointer, false, STAT_SUFFIX_BYTES);
      if (!tail) return undefined;
      const { count, hash } = tail.last;
      if (count === 0 && (await this.chain.infoOf(inc, tail)).deleted) return undefined;
      return { count, hash, lastModified: tail.modified };
    });
  }

  async itemObject(s: string, k: string, n: number): Promise<string | undefined> {
    if (!Number.isSafeInteger(n) || n < 0) return undefined;
    return this.guard(k, async () => {
      for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
        const [read, raw] = await Promise.all([this.sessions.read(s), this.chain.readPointer(s, k)]);
        if (!read.live) return undefined;
        const pointer = mine(raw, read.live.inc);
        if (!pointer.info && !pointer.corrupt) return undefined;
        try {
          const page = await this.chain.pageOf(s, k, read.live.inc, pointer, { offset: n, limit: 1 });
          const [item] = page.offset === n ? page.items : [];
          return isItemRef(item) ? item[ITEM_REF] : undefined;
        } catch (error) {
          if (!(error instanceof LogGoneError)) throw error;
        }
      }
      throw new DamageError('objects the list names stay gone');
    });
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
      const [read, raw] = await Promise.all([this.sessions.read(s), this.chain.readPointer(s, k)]);
      const inc = read.live?.inc;
      const tail = inc ? await this.chain.current(s, k, inc, mine(raw, inc), true) : undefined;
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
          findWrite(tail.chunk, wid, true) ??
          (deep ? await this.writer.deepReplay(tail, wid, true) : undefined);
        if (landed) return landed;
      }
      const marker = await this.sessions.forWrite(s, read, options.fence, !tail || tail.last.count === 0);
      const start = marker.inc === inc ? tail : undefined;
      return this.writer.commitAppend(
        s,
        k,
        marker,
        start,
        items,
        options,
        writeId,
        options.writeId !== undefined,
      );
    });
  }

  /**
   * The pre-read of a commit (lib/store/commits.ts): the pointer and the current log's tail
   * (following seals), as `append` reads them.
   */
  async peek(s: string, k: string, marker: Promise<MarkerRead>): Promise<ListPeek> {
    return this.guard(k, async () => {
      const [read, raw] = await Promise.all([marker, this.chain.readPointer(s, k)]);
      const inc = read.live?.inc;
      const tail = inc ? await this.chain.current(s, k, inc, mine(raw, inc), true) : undefined;
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
            findWrite(tail.chunk, wid, true) ??
            (deep ? await this.writer.deepReplay(tail, wid, true) : undefined)
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
      return this.writer.commitAppend(s, k, marker, start, items, options, options.writeId, true);
    });
  }

  async save(s: string, k: string, items: readonly unknown[], options: ListSave): Promise<ListWriteResult> {
    return this.guard(k, async () => {
      const [read, raw] = await Promise.all([this.sessions.read(s), this.chain.readPointer(s, k)]);
      const inc = read.live?.inc;
      let tail: Tail | undefined;
      let damaged = false;
      try {
        tail = inc ? await this.chain.current(s, k, inc, mine(raw, inc), true) : undefined;
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
              return await this.writer.commitAppend(
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
            const done = await this.rewriter.replace(
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
            tail = await this.chain.current(
              s,
              k,
              marker.inc,
              mine(await this.chain.readPointer(s, k), marker.inc),
              true,
            );
          } catch (error) {
            if (!(error instanceof DamageError)) throw error;
            damaged = true;
          }
        }
        throw new ContendedError('the list is too contended; nothing was written; retry');
      } finally {
        await this.rewriter.dropPrepared(cache);
      }
    });
  }

  async remove(s: string, k: string, options: Fenced): Promise<Marker | undefined> {
    const { fence } = options;
    return this.guard(k, async (): Promise<Marker | undefined> => {
      const [read, raw] = await Promise.all([this.sessions.read(s), this.chain.readPointer(s, k)]);
      const inc = read.live?.inc;
      if (!inc) return fence.check().then(() => undefined);
      let tail: Tail | undefined;
      let damaged = false;
      const look = async (pointer: PointerRead) => {
        damaged = false;
        try {
          tail = await this.chain.current(s, k, inc, pointer, true);
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
          const done = await this.rewriter.replace(
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
          await look(mine(await this.chain.readPointer(s, k), inc));
          const now = tail as Tail | undefined;
          if (!damaged && (!now || now.last.count === 0)) return marker;
        }
        // Never answered as deleted unless it was: under contention, a retryable 409.
        throw new ContendedError('the list is too contended to delete; nothing was deleted; retry');
      } finally {
        await this.rewriter.dropPrepared(cache);
      }
    });
  }

  async truncate(s: string, k: string, options: ListTruncate): Promise<ListWriteResult> {
    return this.guard(k, async () => {
      const writeId = options.writeId ?? newWriteId();
      const [read, raw] = await Promise.all([this.sessions.read(s), this.chain.readPointer(s, k)]);
      const inc = read.live?.inc;
      let tail = inc ? await this.chain.current(s, k, inc, mine(raw, inc), true) : undefined;
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
          const done = await this.rewriter.cut(s, k, marker, tail as Tail, options, writeId, cache);
          if ('result' in done) return done.result;
          // Lost its seal to another writer (a keep-alive record leaves the list as it was).
          tail = await this.chain.current(
            s,
            k,
            marker.inc,
            mine(await this.chain.readPointer(s, k), marker.inc),
            true,
          );
        }
        throw new ContendedError('the list is too contended; nothing was written; retry');
      } finally {
        await this.rewriter.dropPrepared(cache);
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
      const replay = findWrite(tail.chunk, wid, true) ?? (await this.writer.deepReplay(tail, wid, true));
      if (replay) return replay;
    }
    await options.fence.check(tail?.last.token, markerToken);
    return checkTruncate(options, count, hash);
  }

  // ---- keep-alive (sessions.ts calls it with the marker's refresh, at most once per R) ------------

  keep(
    s: string,
    inc: string,
    objects: readonly ListedObject[],
    cutoff: number,
  ): Promise<ReadonlySet<string>> {
    return this.keeper.keep(s, inc, objects, cutoff);
  }
}
