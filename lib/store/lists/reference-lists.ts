/**
 * The lists of sessions adopted from the AgentScope reference (lib/store/reference.ts), over
 * either list format: while a list's `<key>.list.hash` is still the reference's sampled hash, a
 * read answers its `<key>.list.json` whole, and the list's first write converts it first, by
 * saving those items into the format as the list's first write: on CAS backends conditional on
 * the etag of the reference `.list.hash` (the format takes an object that is no head of its for an
 * absent list with an etag), in the append format by creating its first log at position 0 (the
 * create-only anchor: a racing converter finds it and continues on it). Either way a converter
 * that loses finds the list converted, and no item is lost. Only in a session of incarnation
 * `ref` while `adoptReference` is on; each read and write of a list costs one GET more.
 */
import { CorruptValueError, ListPreconditionFailedError } from '../../contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../contract/hash.js';
import type { ListPage, ListWriteResult, PageOptions } from '../../contract/types.js';
import { getOrUndefined, type StoreContext } from '../context.js';
import type { UserLayout } from '../layout.js';
import { isReferenceListHash, REFERENCE_INC } from '../reference.js';
import type { Marker, MarkerRead, Sessions } from '../sessions.js';
import { Fence } from '../write-path.js';
import {
  type Fenced,
  type ListAppend,
  type ListFormat,
  type ListPeek,
  type ListSave,
  type ListStat,
  type ListTruncate,
  pageOfItems,
} from './format.js';

/** A reference list as it is stored: its items and when its hash was written. */
interface ReferenceList {
  readonly items: unknown[];
  readonly lastModified: Date;
}

/** `inner` with the reference's lists of adopted sessions read and converted. */
export class ReferenceLists implements ListFormat {
  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
    private readonly sessions: Sessions,
    private readonly inner: ListFormat,
  ) {}

  /** The reference list under `k`, when the session is adopted and the list not yet converted. */
  private async reference(
    s: string,
    k: string,
    marker?: Promise<MarkerRead>,
  ): Promise<ReferenceList | undefined> {
    const { driver } = this.ctx;
    // A read shares its marker read; a write reads the marker only once the head is the reference's.
    const [shared, head] = await Promise.all([marker, getOrUndefined(driver, this.layout.listHash(s, k))]);
    if (!head || !isReferenceListHash(head.body)) return undefined;
    const read = shared ?? (await this.sessions.read(s));
    if (read.live?.inc !== REFERENCE_INC) return undefined;
    const json = await getOrUndefined(driver, this.layout.listJson(s, k));
    if (!json) return { items: [], lastModified: head.lastModified };
    let items: unknown;
    try {
      items = JSON.parse(Buffer.from(json.body).toString('utf8'));
    } catch (error) {
      this.ctx.metrics.count('corruptObjects');
      throw new CorruptValueError(k, { cause: error });
    }
    if (!Array.isArray(items)) {
      this.ctx.metrics.count('corruptObjects');
      throw new CorruptValueError(k);
    }
    return { items, lastModified: head.lastModified };
  }

  /**
   * Converts a reference list into the format: its items saved as the list's first write (a
   * converter that loses the race finds the list there: its precondition fails, and that is done).
   * Then the reference's `.list.json`, stale and untagged (no lifecycle rule would ever expire it),
   * is deleted, unless the deployment keeps `.list.json`, whose save has just rewritten it stamped.
   * A converter that stops between the two leaves only that stale copy, which nothing reads.
   */
  async convert(s: string, k: string): Promise<boolean> {
    if (!this.ctx.adoptReference) return false;
    const list = await this.reference(s, k);
    if (!list) return false;
    try {
      await this.inner.save(s, k, list.items, {
        ifHash: EMPTY_HASH,
        fence: new Fence(undefined, undefined, this.ctx.metrics),
      });
    } catch (error) {
      if (!(error instanceof ListPreconditionFailedError)) throw error;
    }
    if (this.ctx.listJson !== 'reference') await this.ctx.driver.delete(this.layout.listJson(s, k));
    return true;
  }

  async read(s: string, k: string, page: PageOptions, marker?: Promise<MarkerRead>): Promise<ListPage> {
    if (this.ctx.adoptReference) {
      const shared = marker ?? this.sessions.read(s);
      const list = await this.reference(s, k, shared);
      if (list) return pageOfItems(list.items, page);
      return this.inner.read(s, k, page, shared);
    }
    return this.inner.read(s, k, page, marker);
  }

  async peek(s: string, k: string, marker: Promise<MarkerRead>): Promise<ListPeek> {
    if (await this.convert(s, k)) return this.inner.peek(s, k, this.sessions.read(s));
    return this.inner.peek(s, k, marker);
  }

  appendPeeked(
    s: string,
    k: string,
    items: readonly unknown[],
    options: ListAppend & { readonly writeId: string },
    marker: Marker,
    peek: ListPeek,
  ): Promise<ListWriteResult> {
    return this.inner.appendPeeked(s, k, items, options, marker, peek);
  }

  async append(s: string, k: string, items: readonly unknown[], options: ListAppend) {
    await this.convert(s, k);
    return this.inner.append(s, k, items, options);
  }

  async save(s: string, k: string, items: readonly unknown[], options: ListSave) {
    await this.convert(s, k);
    return this.inner.save(s, k, items, options);
  }

  async remove(s: string, k: string, options: Fenced) {
    await this.convert(s, k);
    return this.inner.remove(s, k, options);
  }

  async truncate(s: string, k: string, options: ListTruncate) {
    await this.convert(s, k);
    return this.inner.truncate(s, k, options);
  }

  async stat(s: string, k: string, inc: string): Promise<ListStat | undefined> {
    const stat = await this.inner.stat(s, k, inc);
    if (stat || inc !== REFERENCE_INC || !this.ctx.adoptReference) return stat;
    const list = await this.reference(s, k, Promise.resolve({ live: { inc } as Marker }));
    if (!list || list.items.length === 0) return undefined;
    return {
      count: list.items.length,
      hash: chainHash(EMPTY_HASH, list.items),
      lastModified: list.lastModified,
    };
  }

  itemObject(s: string, k: string, n: number): Promise<string | undefined> {
    return this.inner.itemObject ? this.inner.itemObject(s, k, n) : Promise.resolve(undefined);
  }
}
