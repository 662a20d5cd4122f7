/**
 * The next generation of an append-format list (docs/DESIGN.md, "Append format": *rewrite*,
 * *truncate*): a rewrite, a delete or a truncate archives what it removes, prepares the new
 * generation's objects (segments create-only, its first log at position 0) and commits them by
 * sealing the current log at the position read, naming the new first log; the seal is the commit
 * (whoever appends first wins), and a prepared generation that never got sealed is deleted.
 */

import { randomBytes } from 'node:crypto';
import { BackendError } from '../../contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../contract/hash.js';
import type { ListWriteResult, TruncateOptions } from '../../contract/types.js';
import type { StoreContext } from '../context.js';
import type { UserLayout } from '../layout.js';
import type { Marker } from '../sessions.js';
import { type AppendChain, definite, type Tail, type Whole } from './append-chain.js';
import {
  buildLog,
  DamageError,
  type Entry,
  ITEM_KINDS,
  indexOf,
  type LogInfo,
  type LogRef,
  marksOf,
  newLogInfo,
  parseChunk,
  recordsOf,
  sameRef,
  sealRecord,
  spanOf,
  widOf,
  writeOf,
  writesOf,
} from './append-codec.js';
import type { Archives } from './archives.js';
import { createOnce, itemBytes, KEPT_WRITES, maxToken, NDJSON, type WriteRecord } from './format.js';
import { createItemObjects, type ItemObject, storedItems, storedPrefixes } from './items.js';
import type { ListJson } from './list-json.js';

/** The objects of a rewrite, prepared before the seal that commits them. */
export interface Prepared {
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
export interface RewriteCache {
  prepared?: Prepared;
  content?: Whole;
}

/** Prepares and commits the next generation of one user's append-format lists. */
export class AppendRewriter {
  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
    private readonly chain: AppendChain,
    private readonly archives: Archives,
    private readonly listJson: ListJson,
  ) {}

  /**
   * Keeps the first `options.count` items: archives the removed ones, creates generation `gen + 1`
   * whose index lists the older logs and segments wholly inside the kept prefix as they are (their
   * names keep their generation), the kept items of the object the cut falls in packed after them
   * as a rewrite packs, then seals the current log naming it (the commit, as for a rewrite). Reads
   * only the object the cut falls in, those after it and the current log. Answers `{ tail }` when
   * its seal lost.
   */
  async cut(
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
    const info = await this.chain.infoOf(inc, tail);
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
      Promise.all(
        info.index.slice(at).map((e) => this.chain.readEntry(s, k, inc, e, e.first, e.first + e.count)),
      ),
      tail.chunk.lo === 0 ? tail.chunk : this.chain.rangeAt(tail.name, 0, tail.size - 1),
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
    const removed = await this.chain.resolve({ items: stored.slice(keep - from) });
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
    await this.chain
      .writePointer(s, k, prepared.info)
      .catch(() => this.ctx.metrics.count('persistenceFailures'));
    return { result: prepared.result };
  }

  /**
   * Replaces the list (`items`) or deletes it (undefined): archives what it holds, creates the
   * next generation (segments create-only, its first log at position 0), then seals the current
   * log naming it, at the position read: the seal is the commit (whoever appends first wins). A
   * damaged chain is not sealed: the pointer moves past it. Answers `{ tail }` when it lost.
   */
  async replace(
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
      if (content.count > 0)
        await this.archives.write(s, k, inc, tail.ref.gen, await this.chain.resolve(content));
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
      await createItemObjects(this.ctx.driver, prepared.items);
      await this.createPrepared(prepared, cache);
    }
    if (performance.now() - startedAt > this.ctx.maxCommitMs)
      throw new BackendError('list write took too long between read and commit; retry', true);
    if (tail && !damaged) {
      if (!(await this.seal(s, k, inc, tail, token, writeId, prepared, cache))) return { tail: undefined };
      await this.chain
        .writePointer(s, k, prepared.info)
        .catch(() => this.ctx.metrics.count('persistenceFailures'));
    } else await this.chain.writePointer(s, k, prepared.info);
    cache.prepared = undefined;
    if (items) this.ctx.metrics.count('listRewrites');
    const stamp = { inc, gen: prepared.info.gen, count: prepared.result.count, hash: prepared.result.hash };
    await this.listJson
      .write(s, k, stamp, items ?? [])
      .catch(() => this.ctx.metrics.count('persistenceFailures'));
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
      const after = await this.chain.tailAt(s, k, inc, tail.ref).catch((again: unknown) => {
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
    return this.chain.readWhole(s, k, inc, await this.chain.infoOf(inc, tail));
  }

  /** Creates a prepared generation's segments and first log (create-only), recorded in `cache`. */
  async createPrepared(prepared: Prepared, cache: RewriteCache): Promise<void> {
    cache.prepared = prepared;
    await Promise.all(
      prepared.objects.map((o) =>
        o.appendable
          ? this.chain.createLog(o.name, o.body)
          : createOnce(this.ctx.driver, o.name, o.body, NDJSON),
      ),
    );
  }

  /** Deletes the objects of a rewrite that did not land (nothing names them). */
  async dropPrepared(cache: RewriteCache): Promise<void> {
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
  pack(
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
    for (let b = 0; split > 0 && b + (sizes[split - 1] as number) <= this.chain.logBytes / 2; split--)
      b += sizes[split - 1] as number;
    const objects: Array<{ name: string; body: Buffer; appendable: boolean }> = [];
    const index: Entry[] = [...o.kept];
    let seq = 0;
    for (let i = 0; i < split; seq++) {
      let end = i;
      for (let b = 0; end < split && b < this.chain.logBytes; end++) b += sizes[end] as number;
      const ref: LogRef = { gen, seq, tag };
      const base = { count: from + i, hash: prefixes[i] as string };
      const info = newLogInfo(inc, ref, false, from + i, base.hash, [], []);
      const built = buildLog(info, base, token, recordsOf(list.slice(i, end), from + i, at(i), 'r', ''));
      const chunk = parseChunk(built.body, 0, built.body.length);
      index.push({
        ...ref,
        first: from + i,
        count: end - i,
        hash: prefixes[end] as string,
        bytes: built.body.length,
        data: built.info.data,
        marks: marksOf(chunk, from + i, built.info.data, this.chain.markBytes),
      });
      objects.push({ name: this.chain.name(s, k, inc, ref), body: built.body, appendable: false });
      i = end;
    }
    const ref: LogRef = { gen, seq, tag };
    const info: LogInfo = {
      ...newLogInfo(
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
    objects.push({ name: this.chain.name(s, k, inc, ref), body: built.body, appendable: true });
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
}
