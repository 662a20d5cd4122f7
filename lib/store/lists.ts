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
import { ObjectConditionFailedError } from '../drivers/errors.js';
import type { StoredObject } from '../drivers/types.js';
import {
  backoff,
  getOrUndefined,
  jsonBody,
  listAll,
  MAX_WRITE_ATTEMPTS,
  parseJsonObject,
  type StoreContext,
} from './context.js';
import { decodeBody, encodeBody } from './encoding.js';
import {
  AppendConflictError,
  BackendError,
  ContendedError,
  CorruptValueError,
  ValidationError,
} from './errors.js';
import { chainHash, EMPTY_HASH, isHash } from './hash.js';
import { padNumber, parseSlotName, type UserLayout } from './ids.js';
import { ARCHIVE_ID_PATTERN, HASH_PREFIX } from './limits.js';
import type { Marker } from './sessions.js';
import type { ArchiveInfo, ListPage, ListWriteResult, PageOptions } from './types.js';
import { readRestoring } from './workspaces.js';

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
export interface ListState {
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
export const EMPTY_STATE: ListState = {
  exists: false,
  gen: 0,
  seq: -1,
  type: 'none',
  count: 0,
  hash: EMPTY_HASH,
  folded: -1,
};

/** List operations of one user's session key. */
export class Lists {
  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
  ) {}

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
    await this.archive(s, k, inc, content);
    if (!(await this.start(s, k, inc, content.gen + 1, [...items], startedAt))) return undefined;
    this.ctx.metrics.count('listRewrites');
    await this.retire(s, k, inc, content.gen + 1).catch(() => this.ctx.metrics.count('persistenceFailures'));
    return {
      action: 'rewritten',
      count: items.length,
      hash: chainHash(EMPTY_HASH, items),
    } satisfies ListWriteResult;
  }

  /** Archives a sealed generation; the archive's name carries its count and hash, so listing them reads no bodies. */
  private async archive(s: string, k: string, inc: string, content: Content): Promise<void> {
    const name = `${this.layout.archive(s, k, inc, content.gen)}~${padNumber(content.count)}~${content.hash.slice(HASH_PREFIX.length)}`;
    try {
      const encoding = this.ctx.archiveEncoding;
      const body = encodeBody(Buffer.from(jsonBody(content.items), 'utf8'), encoding);
      await this.ctx.driver.put(name, body, {
        contentType: 'application/json',
        ...(encoding !== 'identity' ? { contentEncoding: encoding } : {}),
        metadata: { inc, count: String(content.count), hash: content.hash },
        tags: { kind: 'archive' },
        ifNoneMatch: '*',
      });
      this.ctx.metrics.count('archivedLists');
    } catch (error) {
      // Already archived by a writer that sealed the same generation: the same content.
      if (!(error instanceof ObjectConditionFailedError)) throw error;
    }
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

  /** The archives of the list in this incarnation, oldest first. */
  async listArchives(s: string, k: string, inc: string): Promise<ArchiveInfo[]> {
    const prefix = this.layout.archives(s, k, inc);
    const out: ArchiveInfo[] = [];
    for (const object of await listAll(this.ctx.driver, prefix)) {
      const match = /^(\d{16})~(\d{16})~([0-9a-f]{64})$/.exec(object.key.slice(prefix.length));
      if (!match) continue;
      out.push({
        archiveId: String(Number(match[1])),
        count: Number(match[2]),
        hash: `${HASH_PREFIX}${match[3]}`,
        archivedAt: object.lastModified,
      });
    }
    return out;
  }

  /** One archived list, or undefined. */
  async getArchive(
    s: string,
    k: string,
    inc: string,
    archiveId: string,
    page: PageOptions,
  ): Promise<ListPage | undefined> {
    // Archive ids are decimal: any other form names no archive.
    if (!ARCHIVE_ID_PATTERN.test(archiveId)) return undefined;
    const prefix = `${this.layout.archive(s, k, inc, Number(archiveId))}~`;
    const [found] = (await this.ctx.driver.list({ prefix, limit: 1 })).objects;
    // An archive in a cold class is restored first (RestoreInProgressError until it is readable).
    const object = found ? await readRestoring(this.ctx, found.key, `archive ${archiveId}`) : undefined;
    if (!object) return undefined;
    let items: unknown;
    try {
      items = JSON.parse(Buffer.from(decodeBody(object.body, object.contentEncoding)).toString('utf8'));
    } catch (error) {
      throw new CorruptValueError(k, { cause: error });
    }
    if (!Array.isArray(items)) throw new CorruptValueError(k);
    return { items: slicePage(items, page), count: items.length, hash: chainHash(EMPTY_HASH, items) };
  }
}

/** True when every sequence number from `from` to `to` is present. */
function isRun(present: ReadonlySet<number>, from: number, to: number): boolean {
  for (let seq = from; seq <= to; seq++) if (!present.has(seq)) return false;
  return true;
}

/** Checks paging options and slices. */
export function slicePage<T>(items: readonly T[], page: PageOptions): T[] {
  const offset = page.offset ?? 0;
  const limit = page.limit ?? items.length;
  if (!Number.isSafeInteger(offset) || offset < 0)
    throw new ValidationError('offset', 'must be a non-negative integer');
  if (!Number.isSafeInteger(limit) || limit < 0)
    throw new ValidationError('limit', 'must be a non-negative integer');
  return items.slice(offset, offset + limit);
}
