/**
 * Lists (DESIGN.md, "Lists"). Only create-only SLOTS are authoritative:
 * - a `start` slot (sequence 0 of a generation) holds the whole content of the generation's start;
 * - an `append` slot holds the items it appends (bytes in proportion to the new items, not the list);
 * - a `seal` slot closes a generation before a rewrite or a rollover, so no append can land in it
 *   afterwards (a create-only write of the same name fails).
 * Exactly one writer creates a given slot on every backend. A rewrite archives the sealed generation
 * (create-only) and starts the next one. `.list.json` (the whole array, stamped with the generation
 * and sequence it reflects) and `.list.hash` (the manifest: count, hash, position) are
 * materializations: readers check them against the slots and repair them when stale or damaged.
 *
 * Slots of past generations are deleted once older than `retireAfterMs`; a writer whose
 * read-to-commit takes longer than `maxCommitMs` (far below it) gives up, so no writer can ever
 * re-create a retired slot from a view that old.
 */
import { ObjectConditionFailedError } from '../../drivers/errors.js';
import type { StoredObject } from '../../drivers/types.js';
import {
  backoff,
  getOrUndefined,
  jsonBody,
  listAll,
  MAX_WRITE_ATTEMPTS,
  parseJsonObject,
  type StoreContext,
} from '../context.js';
import {
  AppendConflictError,
  BackendError,
  ContendedError,
  CorruptValueError,
  ListPreconditionFailedError,
} from '../errors.js';
import { chainHash, EMPTY_HASH, isHash } from '../hash.js';
import { parseSlotName, type UserLayout } from '../ids.js';
import type { Marker, Sessions } from '../sessions.js';
import type {
  AppendOptions,
  ListPage,
  ListSaveOptions,
  ListWriteResult,
  PageOptions,
  WriteOptions,
} from '../types.js';
import { Archives } from './archives.js';
import { checkPage, emptyPage, type ListFormat, pageOfItems } from './format.js';

type SlotType = 'start' | 'append' | 'seal';

interface SlotBody {
  v: 1;
  inc: string;
  gen: number;
  seq: number;
  type: SlotType;
  /** Items before this slot (0 for a start). */
  base: number;
  items: unknown[];
  /** Count and hash of the list after this slot. */
  count: number;
  hash: string;
  token?: number;
}

/** Where a list is: the latest slot's position and the list's count and hash there. */
interface ListState {
  readonly exists: boolean;
  readonly gen: number;
  readonly seq: number;
  readonly type: SlotType | 'none';
  readonly count: number;
  readonly hash: string;
  /** Sequence number `.list.json` reflects in this generation (-1: unknown or none). */
  readonly folded: number;
}

interface Content extends ListState {
  readonly items: unknown[];
}

/** A list that has no slot yet. */
const EMPTY_STATE: ListState = {
  exists: false,
  gen: 0,
  seq: -1,
  type: 'none',
  count: 0,
  hash: EMPTY_HASH,
  folded: -1,
};

/** Slot operations of one user's lists. */
class SlotLists {
  private readonly archives: Archives;

  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
  ) {
    this.archives = new Archives(ctx, layout);
  }

  /** The manifest with the incarnation it belongs to, or undefined when it is missing or damaged. */
  async readManifest(s: string, k: string): Promise<(ListState & { inc: string }) | undefined> {
    const object = await getOrUndefined(this.ctx.driver, this.layout.listHash(s, k));
    if (!object) return undefined;
    const m = parseJsonObject(object.body);
    const valid =
      m?.v === 1 &&
      typeof m.inc === 'string' &&
      [m.gen, m.seq, m.count, m.folded].every(Number.isSafeInteger) &&
      isHash(m.hash) &&
      ['start', 'append', 'seal'].includes(m.type as string);
    if (!valid || !m) {
      this.ctx.metrics.count('corruptObjects');
      return undefined;
    }
    return {
      inc: m.inc as string,
      exists: true,
      gen: m.gen as number,
      seq: m.seq as number,
      type: m.type as SlotType,
      count: m.count as number,
      hash: m.hash as string,
      folded: m.folded as number,
    };
  }

  /** Every slot of the list (all incarnations), in name order: (incarnation, generation, sequence). */
  async listSlots(
    s: string,
    k: string,
  ): Promise<Array<{ inc: string; gen: number; seq: number; name: string; lastModified: Date }>> {
    const prefix = this.layout.slots(s, k);
    const slots = [];
    for (const object of await listAll(this.ctx.driver, prefix)) {
      const parsed = parseSlotName(object.key, prefix);
      if (parsed) slots.push({ ...parsed, name: object.key, lastModified: object.lastModified });
    }
    return slots;
  }

  private async readSlot(k: string, name: string, inc: string): Promise<SlotBody> {
    const object = await getOrUndefined(this.ctx.driver, name);
    const body = object ? (parseJsonObject(object.body) as SlotBody | undefined) : undefined;
    if (!body || body.inc !== inc || !Array.isArray(body.items) || !isHash(body.hash)) {
      this.ctx.metrics.count('corruptObjects');
      throw new CorruptValueError(k);
    }
    return body;
  }

  /** The list's position from its latest slot (LIST, then one GET): what a writer uses when the manifest is stale. */
  async stateFromSlots(s: string, k: string, inc: string): Promise<ListState> {
    const mine = (await this.listSlots(s, k)).filter((slot) => slot.inc === inc);
    const latest = mine.at(-1);
    if (!latest) return EMPTY_STATE;
    const body = await this.readSlot(k, latest.name, inc);
    return {
      exists: true,
      gen: body.gen,
      seq: body.seq,
      type: body.type,
      count: body.count,
      hash: body.hash,
      folded: -1,
    };
  }

  /**
   * The whole list: `.list.json` when its stamp is in the latest generation, plus the slots after
   * it; otherwise the generation's start slot and every slot after it (then `.list.json` is repaired).
   */
  async readAll(s: string, k: string, incarnation: string | Promise<string | undefined>): Promise<Content> {
    // The incarnation may still be on its way (the marker read): all three reads share one round trip.
    const [materialized, all, inc] = await Promise.all([
      getOrUndefined(this.ctx.driver, this.layout.listJson(s, k)),
      this.listSlots(s, k),
      incarnation,
    ]);
    if (inc === undefined) return { ...EMPTY_STATE, items: [] };
    const mine = all.filter((slot) => slot.inc === inc);
    const latest = mine.at(-1);
    if (!latest) return { ...EMPTY_STATE, items: [] };
    const generation = mine.filter((slot) => slot.gen === latest.gen);
    const present = new Set(generation.map((slot) => slot.seq));
    const base = this.checkMaterialized(materialized, inc, latest.gen, latest.seq);
    const usable = base !== undefined && isRun(present, base.seq + 1, latest.seq);
    const needed = generation.filter((slot) => !usable || slot.seq > base.seq);
    if (!usable && !present.has(0)) throw new CorruptValueError(k);
    const bodies = await Promise.all(needed.map((slot) => this.readSlot(k, slot.name, inc)));
    let items = usable ? base.items : [];
    let hash = usable ? base.hash : EMPTY_HASH;
    let count = items.length;
    let type: SlotType = usable ? base.type : 'start';
    for (const body of bodies) {
      if (body.type === 'start') {
        items = [...body.items];
        hash = chainHash(EMPTY_HASH, items);
      } else if (body.type === 'append') {
        if (body.base !== items.length) throw new CorruptValueError(k);
        hash = chainHash(hash, body.items);
        items = items.concat(body.items);
      }
      count = items.length;
      type = body.type;
      if (body.count !== count || body.hash !== hash) {
        this.ctx.metrics.count('corruptObjects');
        throw new CorruptValueError(k);
      }
    }
    const content: Content = {
      exists: true,
      gen: latest.gen,
      seq: latest.seq,
      type,
      count,
      hash,
      items,
      folded: usable ? base.seq : -1,
    };
    if (!usable) {
      // `.list.json` was missing, damaged or from an earlier generation: the list is still served.
      this.ctx.metrics.count('manifestRepairs');
      await this.materialize(s, k, inc, content).catch(() => this.ctx.metrics.count('persistenceFailures'));
      return { ...content, folded: content.seq };
    }
    return content;
  }

  /** `.list.json` when it is intact, of this incarnation and generation, and not ahead of the slots. */
  private checkMaterialized(object: StoredObject | undefined, inc: string, gen: number, latestSeq: number) {
    if (!object) return undefined;
    const m = object.metadata;
    const seq = Number(m.seq);
    if (m.inc !== inc || Number(m.gen) !== gen || !Number.isSafeInteger(seq) || seq < 0 || seq > latestSeq)
      return undefined;
    let items: unknown;
    try {
      items = JSON.parse(Buffer.from(object.body).toString('utf8'));
    } catch {
      items = undefined;
    }
    if (
      !Array.isArray(items) ||
      items.length !== Number(m.count) ||
      chainHash(EMPTY_HASH, items) !== m.hash
    ) {
      this.ctx.metrics.count('corruptObjects');
      return undefined;
    }
    return { items, seq, hash: m.hash as string, type: (m.type ?? 'append') as SlotType };
  }

  /** Writes `.list.json` and the manifest for a content (materializations; best effort for callers). */
  async materialize(s: string, k: string, inc: string, c: ListState & { items: unknown[] }): Promise<void> {
    const { driver } = this.ctx;
    const stamp = {
      inc,
      gen: String(c.gen),
      seq: String(c.seq),
      count: String(c.count),
      hash: c.hash,
      type: c.type,
    };
    await driver.put(this.layout.listJson(s, k), jsonBody(c.items), {
      contentType: 'application/json',
      metadata: stamp,
      tags: { kind: 'state' },
    });
    await this.writeManifest(s, k, inc, { ...c, folded: c.seq });
  }

  async writeManifest(s: string, k: string, inc: string, state: ListState): Promise<void> {
    const { gen, seq, type, count, hash, folded } = state;
    await this.ctx.driver.put(
      this.layout.listHash(s, k),
      JSON.stringify({ v: 1, inc, gen, seq, type, count, hash, folded }),
      {
        contentType: 'application/json',
        tags: { kind: 'state' },
      },
    );
  }

  /** Creates a slot; false when it already exists (another writer got there first). */
  private async createSlot(s: string, k: string, body: SlotBody, startedAt: number): Promise<boolean> {
    if (performance.now() - startedAt > this.ctx.maxCommitMs) {
      throw new BackendError('list write took too long between read and commit; retry', true);
    }
    try {
      await this.ctx.driver.put(this.layout.slot(s, k, body.inc, body.gen, body.seq), JSON.stringify(body), {
        contentType: 'application/json',
        metadata: body.token === undefined ? { inc: body.inc } : { inc: body.inc, token: String(body.token) },
        tags: { kind: 'state' },
        ifNoneMatch: '*',
      });
      return true;
    } catch (error) {
      if (error instanceof ObjectConditionFailedError) return false;
      throw error;
    }
  }

  /**
   * Appends `items` at `state` when the list is there; re-reads the slots when the slot is taken.
   * `decide` runs on every fresh state: append, give up because the list moved (undefined), or
   * answer without writing.
   */
  async append(
    s: string,
    k: string,
    marker: Marker,
    first: ListState,
    items: readonly unknown[],
    decide: (state: ListState) => 'append' | 'moved' | ListWriteResult,
    token: number | undefined,
    firstVerified = true,
  ): Promise<ListWriteResult | undefined> {
    let state = first;
    let verified = firstVerified;
    for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
      if (attempt > 0) await backoff(attempt);
      const startedAt = performance.now();
      if (state.type === 'seal') {
        state = await this.recoverSealed(s, k, marker.inc, startedAt);
        continue;
      }
      let verdict: ReturnType<typeof decide>;
      try {
        verdict = decide(state);
      } catch (error) {
        // A manifest can lag behind the slots (its write after a commit may have failed): before
        // refusing, look at the slots themselves, once.
        if (!(error instanceof AppendConflictError) || verified) throw error;
        this.ctx.metrics.count('manifestRepairs');
        state = await this.stateFromSlots(s, k, marker.inc);
        verified = true;
        continue;
      }
      if (verdict === 'moved') return undefined;
      if (verdict !== 'append') return verdict;
      const count = state.count + items.length;
      const hash = chainHash(state.hash, items);
      const next: SlotBody = state.exists
        ? {
            v: 1,
            inc: marker.inc,
            gen: state.gen,
            seq: state.seq + 1,
            type: 'append',
            base: state.count,
            items: [...items],
            count,
            hash,
          }
        : { v: 1, inc: marker.inc, gen: 0, seq: 0, type: 'start', base: 0, items: [...items], count, hash };
      if (token !== undefined) next.token = token;
      if (await this.createSlot(s, k, next, startedAt)) {
        const after: ListState = {
          exists: true,
          gen: next.gen,
          seq: next.seq,
          type: next.type,
          count,
          hash,
          folded: state.folded,
        };
        if (next.type === 'start') {
          // A new list: its materialization costs no more than the slot did.
          await this.materialize(s, k, marker.inc, { ...after, items: [...items] }).catch(() =>
            this.ctx.metrics.count('persistenceFailures'),
          );
        } else await this.afterCommit(s, k, marker.inc, after);
        return { action: state.exists ? 'appended' : 'created', count, hash };
      }
      state = await this.stateFromSlots(s, k, marker.inc);
      verified = true;
    }
    throw new ContendedError('the list is too contended; nothing was written; retry');
  }

  /** After an append: manifest, then folding and rollover when due. None of it is needed for correctness. */
  private async afterCommit(s: string, k: string, inc: string, state: ListState): Promise<void> {
    try {
      await this.writeManifest(s, k, inc, state);
      if (state.seq >= this.ctx.rolloverAt) await this.rollover(s, k, inc);
      else if (state.seq - state.folded >= this.ctx.foldEvery) await this.fold(s, k, inc);
    } catch {
      this.ctx.metrics.count('persistenceFailures');
    }
  }

  /** Brings `.list.json` up to date and retires slots of past generations. */
  private async fold(s: string, k: string, inc: string): Promise<void> {
    const content = await this.readAll(s, k, inc);
    if (content.folded < content.seq) await this.materialize(s, k, inc, content);
    await this.retire(s, k, inc, content.gen);
  }

  /** Restates a long generation in a new one (seal, then start), so slot listings stay short. */
  private async rollover(s: string, k: string, inc: string): Promise<void> {
    const startedAt = performance.now();
    const content = await this.readAll(s, k, inc);
    if (content.type === 'seal' || content.seq < this.ctx.rolloverAt) return;
    const seal = this.slotBody(inc, content, content.seq + 1, 'seal', []);
    if (!(await this.createSlot(s, k, seal, startedAt))) return;
    await this.start(s, k, inc, content.gen + 1, content.items, startedAt);
  }

  private slotBody(inc: string, at: ListState, seq: number, type: SlotType, items: unknown[]): SlotBody {
    return { v: 1, inc, gen: at.gen, seq, type, base: at.count, items, count: at.count, hash: at.hash };
  }

  /** Starts generation `gen` with `items`; materializes it; false when another writer started it. */
  private async start(s: string, k: string, inc: string, gen: number, items: unknown[], startedAt: number) {
    const hash = chainHash(EMPTY_HASH, items);
    const body: SlotBody = {
      v: 1,
      inc,
      gen,
      seq: 0,
      type: 'start',
      base: 0,
      items,
      count: items.length,
      hash,
    };
    if (!(await this.createSlot(s, k, body, startedAt))) return false;
    const state: Content = {
      exists: true,
      gen,
      seq: 0,
      type: 'start',
      count: items.length,
      hash,
      folded: 0,
      items,
    };
    await this.materialize(s, k, inc, state).catch(() => this.ctx.metrics.count('persistenceFailures'));
    return true;
  }

  /** A generation sealed by a writer that did not finish: carry its content into the next one. */
  private async recoverSealed(s: string, k: string, inc: string, startedAt: number): Promise<ListState> {
    const content = await this.readAll(s, k, inc);
    if (content.type === 'seal') await this.start(s, k, inc, content.gen + 1, content.items, startedAt);
    return this.stateFromSlots(s, k, inc);
  }

  /**
   * Replaces the list: seals its generation, archives it (create-only), starts the next generation
   * with `items`. Returns undefined when a concurrent write moved the list first (the caller re-decides).
   */
  async rewrite(s: string, k: string, inc: string, items: readonly unknown[], token: number | undefined) {
    const startedAt = performance.now();
    const content = await this.readAll(s, k, inc);
    if (content.type !== 'seal') {
      const seal = this.slotBody(inc, content, content.seq + 1, 'seal', []);
      if (token !== undefined) seal.token = token;
      if (!(await this.createSlot(s, k, seal, startedAt))) return undefined;
    }
    await this.archives.write(s, k, inc, content.gen, content);
    if (!(await this.start(s, k, inc, content.gen + 1, [...items], startedAt))) return undefined;
    this.ctx.metrics.count('listRewrites');
    await this.retire(s, k, inc, content.gen + 1).catch(() => this.ctx.metrics.count('persistenceFailures'));
    return {
      action: 'rewritten',
      count: items.length,
      hash: chainHash(EMPTY_HASH, items),
    } satisfies ListWriteResult;
  }

  /** Deletes slots of generations before `current` (and of other incarnations) once older than the grace. */
  private async retire(s: string, k: string, inc: string, current: number): Promise<void> {
    const cutoff = this.ctx.now() - this.ctx.retireAfterMs;
    const old = (await this.listSlots(s, k)).filter(
      (slot) => (slot.inc !== inc || slot.gen < current) && slot.lastModified.getTime() < cutoff,
    );
    if (old.length === 0) return;
    const { failed } = await this.ctx.driver.deleteMany(old.map((slot) => slot.name));
    if (failed.length > 0) this.ctx.metrics.count('persistenceFailures', failed.length);
  }

  /** Removes the materializations (after a rewrite to empty, the list reads as absent). */
  async dropMaterializations(s: string, k: string): Promise<void> {
    const { failed } = await this.ctx.driver.deleteMany([
      this.layout.listJson(s, k),
      this.layout.listHash(s, k),
    ]);
    if (failed.length > 0) this.ctx.metrics.count('persistenceFailures', failed.length);
  }
}

/** True when every sequence number from `from` to `to` is present. */
function isRun(present: ReadonlySet<number>, from: number, to: number): boolean {
  for (let seq = from; seq <= to; seq++) if (!present.has(seq)) return false;
  return true;
}

/**
 * The slot format behind the list interface. It stays for OSS until the append format replaces it;
 * `writeId` and `ifHash` are honoured only as far as a check before the write goes (not atomically).
 */
export class SlotFormat implements ListFormat {
  private readonly lists: SlotLists;
  private readonly archives: Archives;

  constructor(
    private readonly ctx: StoreContext,
    layout: UserLayout,
    private readonly sessions: Sessions,
  ) {
    this.lists = new SlotLists(ctx, layout);
    this.archives = new Archives(ctx, layout);
  }

  /** Marker, manifest and (when asked) the slot listing, in one round trip. */
  private async listMeta(sessionId: string, key: string, withSlots: boolean) {
    const [read, manifest, slots] = await Promise.all([
      this.sessions.read(sessionId),
      this.lists.readManifest(sessionId, key),
      withSlots ? this.lists.listSlots(sessionId, key) : undefined,
    ]);
    return { read, manifest, slots };
  }

  private async stateOf(
    sessionId: string,
    key: string,
    marker: Marker,
    manifest: (ListState & { inc: string }) | undefined,
    slots?: Array<{ inc: string; gen: number; seq: number }>,
  ): Promise<ListState> {
    if (manifest && manifest.inc === marker.inc) {
      const latest = slots?.filter((slot) => slot.inc === marker.inc).at(-1);
      // Without a listing the manifest is trusted; a stale one makes the slot write fail and re-read.
      if (!slots || (latest && latest.gen === manifest.gen && latest.seq === manifest.seq)) return manifest;
    }
    if (slots && !slots.some((slot) => slot.inc === marker.inc)) return EMPTY_STATE;
    this.ctx.metrics.count('manifestRepairs');
    return this.lists.stateFromSlots(sessionId, key, marker.inc);
  }

  async append(sessionId: string, key: string, items: readonly unknown[], options: AppendOptions) {
    const { expectedCount, expectedHash } = options;
    const { read, manifest } = await this.listMeta(sessionId, key, false);
    const marker = await this.sessions.forWrite(sessionId, read, options.token, true);
    const state = await this.stateOf(sessionId, key, marker, manifest);
    const decide = (s: ListState): 'append' | ListWriteResult => {
      if (s.count === expectedCount && (expectedHash === undefined || expectedHash === s.hash))
        return 'append';
      const replay = expectedHash !== undefined && chainHash(expectedHash, items) === s.hash;
      if (s.count === expectedCount + items.length && replay)
        return { action: 'unchanged', count: s.count, hash: s.hash };
      throw new AppendConflictError(s.count, s.hash);
    };
    try {
      // The state came from the manifest alone (`firstVerified` false): a lagging manifest is
      // checked against the slots before a refusal.
      return (await this.lists.append(
        sessionId,
        key,
        marker,
        state,
        items,
        decide,
        options.token,
        false,
      )) as ListWriteResult;
    } catch (error) {
      if (!(error instanceof AppendConflictError)) throw error;
      // Without an expected hash a replay is recognised by reading the tail back.
      if (expectedHash === undefined && error.count === expectedCount + items.length) {
        const content = await this.lists.readAll(sessionId, key, marker.inc);
        const tail = content.items.slice(expectedCount);
        if (content.count === error.count && chainHash(EMPTY_HASH, tail) === chainHash(EMPTY_HASH, items)) {
          return { action: 'unchanged', count: content.count, hash: content.hash } satisfies ListWriteResult;
        }
      }
      this.ctx.metrics.count('appendConflicts');
      throw error;
    }
  }

  async save(sessionId: string, key: string, items: readonly unknown[], options: ListSaveOptions) {
    const { read, manifest, slots } = await this.listMeta(sessionId, key, true);
    // Saving [] over an absent list changes nothing: no session is created for it.
    const absent = !read.live || !slots?.some((slot) => slot.inc === read.live?.inc);
    if (options.ifHash !== undefined && absent && options.ifHash !== EMPTY_HASH)
      throw new ListPreconditionFailedError(EMPTY_HASH);
    if (items.length === 0 && absent) {
      return { action: 'unchanged', count: 0, hash: EMPTY_HASH } satisfies ListWriteResult;
    }
    const marker = await this.sessions.forWrite(sessionId, read, options.token, true);
    let state = await this.stateOf(sessionId, key, marker, manifest, slots);
    for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
      if (attempt > 0) await backoff(attempt);
      if (state.type === 'seal') state = await this.lists.stateFromSlots(sessionId, key, marker.inc);
      if (options.ifHash !== undefined && options.ifHash !== state.hash)
        throw new ListPreconditionFailedError(state.hash);
      const prefixHash =
        items.length >= state.count ? chainHash(EMPTY_HASH, items.slice(0, state.count)) : undefined;
      if (prefixHash === state.hash) {
        if (items.length === state.count)
          return { action: 'unchanged', count: state.count, hash: state.hash } satisfies ListWriteResult;
        const extra = items.slice(state.count);
        const at = state;
        const decide = (s: ListState) => (s.count === at.count && s.hash === at.hash ? 'append' : 'moved');
        const result = await this.lists.append(sessionId, key, marker, state, extra, decide, options.token);
        if (result) return result;
      } else {
        // Shrunk, or an earlier item changed: a compaction. The previous list is archived first.
        const result = await this.lists.rewrite(sessionId, key, marker.inc, items, options.token);
        if (result) return result;
      }
      state = await this.lists.stateFromSlots(sessionId, key, marker.inc);
    }
    throw new ContendedError('the list is too contended; nothing was written; retry');
  }

  async read(sessionId: string, key: string, page: PageOptions): Promise<ListPage> {
    checkPage(page);
    if (page.limit === 0) {
      // Only the count and hash: the manifest, checked against the slot listing (3 requests, no slot read).
      const { read, manifest, slots } = await this.listMeta(sessionId, key, true);
      if (!read.live) return emptyPage();
      const state = await this.stateOf(sessionId, key, read.live, manifest, slots);
      const offset = Math.min(page.offset ?? 0, state.count);
      if (offset === 0 || offset === state.count) {
        const baseHash = offset === 0 ? EMPTY_HASH : state.hash;
        return { items: [], count: state.count, hash: state.hash, offset, baseHash };
      }
      const content = await this.lists.readAll(sessionId, key, read.live.inc);
      return pageOfItems(content.items, page, content.hash);
    }
    const inc = this.sessions.read(sessionId).then((read) => read.live?.inc);
    const content = await this.lists.readAll(sessionId, key, inc);
    return pageOfItems(content.items, page, content.hash);
  }

  async remove(sessionId: string, key: string, options: WriteOptions) {
    const read = await this.sessions.read(sessionId);
    if (!read.live) return;
    const marker = await this.sessions.forWrite(sessionId, read, options.token, true);
    for (let attempt = 0; ; attempt++) {
      if (attempt >= MAX_WRITE_ATTEMPTS)
        throw new ContendedError('the list is too contended; it was not deleted; retry');
      if (attempt > 0) await backoff(attempt);
      const state = await this.lists.stateFromSlots(sessionId, key, marker.inc);
      if (!state.exists || (state.count === 0 && state.type === 'start')) break;
      if (await this.lists.rewrite(sessionId, key, marker.inc, [], options.token)) break;
    }
    await this.lists.dropMaterializations(sessionId, key);
  }

  async listArchives(sessionId: string, key: string) {
    const read = await this.sessions.read(sessionId);
    return read.live ? this.archives.list(sessionId, key, read.live.inc) : [];
  }

  async getArchive(sessionId: string, key: string, archiveId: string, page: PageOptions) {
    const read = await this.sessions.read(sessionId);
    if (!read.live) return undefined;
    return this.archives.get(sessionId, key, read.live.inc, archiveId, page);
  }
}
