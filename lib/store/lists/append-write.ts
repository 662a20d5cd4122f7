/**
 * Appending to an append-format list (docs/DESIGN.md, "Append format": *append*, *create*,
 * *rollover order*): one record appended at the length read, the position being the
 * compare-and-swap, so the count, hash, token and write id checked on the tail hold atomically with
 * the write. The append whose items fill the log seals it in the same request; the successor is then
 * created and the pointer written. A list's first write creates its first log (or, when it is
 * large, a packed generation committed by the first log's seal).
 */

import { AppendConflictError, ContendedError } from '../../contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../contract/hash.js';
import type { AppendOptions, ListAction, ListWriteResult } from '../../contract/types.js';
import { ObjectConditionFailedError } from '../../drivers/errors.js';
import { BACKOFF, backoff } from '../../util/backoff.js';
import { MAX_WRITE_ATTEMPTS, type StoreContext } from '../context.js';
import type { UserLayout } from '../layout.js';
import type { Marker } from '../sessions.js';
import { type AppendChain, definite, LogGoneError, mine, type Tail } from './append-chain.js';
import {
  buildLog,
  encodeRecord,
  FIRST_TAG,
  findWrite,
  type LogRef,
  newLogInfo,
  parseInfo,
  recordsOf,
  sealRecord,
  spanOf,
  type Trailer,
  widOf,
} from './append-codec.js';
import type { AppendRewriter, RewriteCache } from './append-rewrite.js';
import {
  answersOf,
  itemBytes,
  type ListAppend,
  maxToken,
  NDJSON,
  prefixHashes,
  recordedAnswer,
  replayOf,
} from './format.js';
import { createItemObjects, storedItems } from './items.js';

/** Appends to one user's append-format lists. */
export class AppendWriter {
  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
    private readonly chain: AppendChain,
    private readonly rewriter: AppendRewriter,
  ) {}

  /**
   * Appends one record at the length read, until one attempt lands. A failed position (another
   * writer appended) or an unknown outcome (a lost answer, a 5xx) reads the tail again: this
   * write's id there means it landed; otherwise it decides again on what it read.
   */
  async commitAppend(
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
      await createItemObjects(this.ctx.driver, own.objects);
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
      const seals = after.bytes >= this.chain.logBytes;
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
      return await this.chain.locate(s, k, inc, { ref: tail.ref }, true);
    } catch (error) {
      if (!(error instanceof LogGoneError)) throw error;
      return this.chain.current(s, k, inc, mine(await this.chain.readPointer(s, k), inc), true);
    }
  }

  /** After a sealing append: the successor (create-only at position 0), then the pointer. */
  private async rollOver(s: string, k: string, inc: string, sealed: LogRef, startedAt: number) {
    try {
      const info = await this.chain.createSuccessor(s, k, inc, sealed);
      if (info && performance.now() - startedAt <= this.ctx.maxCommitMs)
        await this.chain.writePointer(s, k, info);
    } catch {
      // The next writer or reader follows the seal (and a writer creates the successor).
      this.ctx.metrics.count('persistenceFailures');
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
    const info = newLogInfo(marker.inc, ref, false, 0, EMPTY_HASH, [], []);
    if (items.reduce((n: number, item) => n + itemBytes(item), 0) > this.chain.logBytes / 2)
      return this.createPacked(s, k, marker, items, token, wid);
    const own = storedItems(items, (i, tag) => this.layout.listItem(s, k, marker.inc, ref.gen, i, tag));
    await createItemObjects(this.ctx.driver, own.objects);
    const prefixes = prefixHashes(items);
    const parts = recordsOf(own.stored, 0, (n) => prefixes[n] as string, 'n', wid);
    const built = buildLog(info, { count: 0, hash: EMPTY_HASH }, token ?? null, parts);
    const name = this.chain.name(s, k, marker.inc, ref);
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
        return { tail: await this.chain.locate(s, k, marker.inc, { ref, repair: true }, true) };
      } catch (again) {
        if (again instanceof LogGoneError) return { tail: undefined };
        throw again;
      }
    }
    // Answered only once readers can find it.
    await this.chain.writePointer(s, k, built.info);
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
    const prepared = this.rewriter.pack(s, k, inc, 1, items, prefixes, recorded, [
      [wid, count, hash, 'created'],
    ]);
    const ref: LogRef = { gen: 0, seq: 0, tag: FIRST_TAG };
    const built = buildLog(
      newLogInfo(inc, ref, false, 0, EMPTY_HASH, [], []),
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
      await createItemObjects(this.ctx.driver, prepared.items);
      await this.rewriter.createPrepared(prepared, cache);
      try {
        await this.ctx.driver.append(this.chain.name(s, k, inc, ref), body, {
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
        const after = await this.chain.tailAt(s, k, inc, ref).catch((again: unknown) => {
          cache.prepared = undefined;
          throw again;
        });
        if (!(after?.last.kind === 's' && after.last.wid === wid)) {
          try {
            return { tail: await this.chain.locate(s, k, inc, { ref, repair: true }, true) };
          } catch (again) {
            if (again instanceof LogGoneError) return { tail: undefined };
            throw again;
          }
        }
      }
      cache.prepared = undefined;
    } finally {
      await this.rewriter.dropPrepared(cache);
    }
    await this.chain.writePointer(s, k, prepared.info);
    return { result: { action: 'created', count, hash } };
  }

  /** A replay whose id is older than the tail: the whole current log and its index record's ids. */
  async deepReplay(tail: Tail, wid: string, named: boolean): Promise<ListWriteResult | undefined> {
    const chunk = await this.chain.wholeAt(tail.name);
    if (!chunk) return undefined;
    const found = findWrite(chunk, wid, named);
    if (found) return found;
    const x = parseInfo((chunk.recs[0]?.body ?? Buffer.alloc(0)).toString('utf8'));
    return recordedAnswer(answersOf(x?.writes ?? []).reverse(), wid, named);
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
      const info = await this.chain.infoOf(inc, tail);
      if (options.expectedCount < info.held) return undefined;
      span = await this.chain.spanOfLog(tail, info, options.expectedCount, count, true);
    }
    return span.items.length === items.length && chainHash(span.baseHash, items) === hash
      ? { action: 'unchanged', count, hash }
      : undefined;
  }
}
